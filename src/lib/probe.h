/*
 * probe.h - the runtime's slow path of a tracepoint (probe.c): what the
 * tracer does around the buffer when the inline fast path cannot reserve.
 * Its entry point is the ABI's ringtrace__reserve_slow(); the rest of the
 * library only needs to tell it about a fork.
 */
#ifndef RINGTRACE_LIB_PROBE_H
#define RINGTRACE_LIB_PROBE_H

/* In a forked child, whose grace-period registrations were all dropped
 * (rcu_after_fork_child()): the thread registers again at its next event.
 * From the child's atfork handler only. */
void probe_forget_thread(void);

#endif /* RINGTRACE_LIB_PROBE_H */
