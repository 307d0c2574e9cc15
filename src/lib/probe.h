/*
 * probe.h - the runtime's slow path of a tracepoint (probe.c): what the
 * tracer does around the buffer when the inline fast path cannot reserve.
 * Its entry point is the ABI's ringtrace__reserve_slow(); the rest of the
 * library only needs to tell it about a fork.
 */
#ifndef RINGTRACE_LIB_PROBE_H
#define RINGTRACE_LIB_PROBE_H

#include <ringtrace/ringtrace-abi.h>

/* In a forked child, whose grace-period registrations were all dropped
 * (rcu_after_fork_child()): the thread registers again at its next event.
 * From the child's atfork handler only. */
void probe_forget_thread(void);

/* The slow path's reservation of an event with the stack suffix, its id
 * (and the addresses, depth > 0) known: ringtrace__reserve_stack()'s
 * (stack.c). 1, or 0 when the event is dropped (counted). */
int probe_reserve_suffix(struct ringtrace__wctx *c, const struct ringtrace_event_desc *d, uint32_t payload,
			 uint32_t id, uint32_t depth, const uint64_t *ips);

#endif /* RINGTRACE_LIB_PROBE_H */
