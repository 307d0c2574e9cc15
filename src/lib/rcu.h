/*
 * rcu.h - when may the library unmap a region that probes could still hold?
 *
 * A probe announces itself in its thread's ringtrace__tls.nest before it
 * loads ringtrace__rb_current and withdraws after its commit. Threads
 * register the address of their ringtrace__tls once, at their first event
 * (lock-free: that can be in a signal handler). To retire a region the
 * library unpublishes it, calls membarrier() (every thread of the process
 * passes a full barrier: a probe either already shows nest > 0, or loads
 * the new value of ringtrace__rb_current) and waits until every registered
 * thread shows nest == 0. This is the memory-barrier flavour of userspace
 * RCU, reduced to what the library needs.
 */
#ifndef RINGTRACE_LIB_RCU_H
#define RINGTRACE_LIB_RCU_H

/* Once, before any other call (from the library constructor). */
void rcu_init(void);

/* Register the calling thread; async-signal-safe, never blocks.
 * 0 or -ENOMEM (then the thread must not write events). */
int rcu_register_thread(void);

/*
 * Wait until no probe can still use a region unpublished before the call.
 * 0; -ETIMEDOUT after timeout_ms (a thread stopped inside a probe, or one
 * that left a probe by longjmp); -ENOSYS without membarrier(). On error the
 * caller must keep the region mapped.
 */
int rcu_synchronize(int timeout_ms);

/* In a forked child: only the calling thread exists. */
void rcu_after_fork_child(void);

#endif
