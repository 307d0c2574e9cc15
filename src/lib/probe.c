/*
 * probe.c - the tracer's rules around the ring buffer's slow path, run
 * inside the traced program: ringtrace__reserve_slow(), which the inline
 * fast path (ringtrace-abi.h) calls whenever it cannot reserve by itself.
 *
 * Here a thread gets its identity once (registration for grace periods,
 * its tid, which the buffer keeps as the writer tag of its records, and
 * its name as a record of its own), an event declared with a stack gets
 * its stack suffix, and a trigger event gets the bit that makes its commit
 * evaluate the trigger. The buffer mechanics (room on the CPU, sub-buffers
 * and their packets, commit) are src/ringbuf/rb_write.c, reached only
 * through rb_reserve() and rb_commit(): the buffer never calls up here.
 *
 * Load: every event that misses the fast path (a sub-buffer switch, a
 * thread's first event, every event with a stack but those declared with
 * one whose stack the map names, every event in a session without
 * rseq). Never allocates or prints, and blocks only as the buffer's
 * bounded wait for room (src/ringbuf/rb_block.c), which this file allows
 * or forbids by context; its own system calls are gettid and
 * prctl(PR_GET_NAME), once per thread. Called from any thread, signal
 * handlers included.
 */
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/probe.h"
#include "lib/rcu.h"
#include "lib/stack.h"
#include "ringbuf/rb.h"

/* The region probes write to, published by the registry (registry.c), and
 * each thread's identity and nesting (ringtrace-abi.h): the ABI's state. */
struct ringtrace__rb *ringtrace__rb_current;
__thread struct ringtrace__tls ringtrace__tls __attribute__((tls_model("initial-exec")));

/* Larger than any sub-buffer (ringtrace.h's RINGTRACE__PAYLOAD_MAX). */
#define PAYLOAD_LIMIT 0x7fffffffu

/* Whether this thread's `nest` is registered for grace periods (rcu.h);
 * separate from the tid, which is set only once an event is written. */
static __thread int rcu_registered __attribute__((tls_model("initial-exec")));

void probe_forget_thread(void)
{
	rcu_registered = 0;
}

/*
 * A thread's first event is preceded by its name, read once with prctl, so
 * that a reader can name threads that were gone before the recorder looked
 * at /proc. (A later rename is seen only by the recorder's /proc scans.)
 */
static void emit_thread_name(struct ringtrace__rb *rb, uint32_t tid)
{
	char comm[17] = { 0 };
	if (prctl(PR_GET_NAME, comm, 0, 0, 0) != 0)
		return;
	size_t n = strnlen(comm, 16);
	struct ringtrace__wctx c;
	c.rb = rb;
	c.id = RINGTRACE__ID_THREAD_NAME;
	if (!rb_reserve(&c, (uint32_t)(4 + n + 1), tid, RB_RES_INTERNAL))
		return;
	memcpy(c.payload, &tid, 4);
	memcpy(c.payload + 4, comm, n + 1);
	ringtrace__put_hdr(c.rec, c.id, c.ts, (int)c.ext);
	/* Not a user event: neither counted as one nor, if dropped, lost. */
	rb_commit(&c, c.len, 0);
}

/* Once per thread: 1 when the thread may write to c->rb, 0 to drop. */
static int thread_first_event(struct ringtrace__wctx *c)
{
	/* Make our `nest` visible to grace periods (rcu.h), then look at the
	 * region again. The registration is a full barrier: either the
	 * library's grace period sees this thread, or this load sees the
	 * region already unpublished. */
	if (!rcu_registered) {
		if (rcu_register_thread() < 0)
			return 0;
		/* Once: a second slot would outlive the thread. */
		rcu_registered = 1;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ringtrace__rb_current, __ATOMIC_ACQUIRE) != c->rb)
		return 0;
	/* Pids are below 2^22 (PID_MAX_LIMIT), the width of the writer tag. */
	uint32_t tid = (uint32_t)syscall(SYS_gettid) & ((1u << 22) - 1);
	ringtrace__tls.tid = tid;
	emit_thread_name(c->rb, tid);
	return 1;
}

/* The checks every slow reservation starts with: 1 and the thread's tid
 * in *ret_tid when the event may be written. */
static inline int reserve_start(struct ringtrace__wctx *c, uint32_t *ret_tid)
{
	if (RINGTRACE__UNLIKELY(c->id < RINGTRACE__ID_FIRST_USER))
		return 0; /* not registered (yet): nothing could decode it */
	if (RINGTRACE__UNLIKELY(ringtrace__tls.tid == 0) && !thread_first_event(c))
		return 0;
	*ret_tid = ringtrace__tls.tid;
	return 1;
}

/* A full buffer may make us wait for room (rb_block.c), but not in a
 * probe that interrupted another of this thread (a signal handler): the
 * room may be held by the reservation it interrupted. Our `nest` counts
 * both (ringtrace-abi.h). Any other context may wait: no lock is held
 * here (a stack is captured before the reservation) and the consumer is
 * another process. */
static inline unsigned reserve_wait(void)
{
	return ringtrace__tls.nest > 1 ? RB_RES_NOWAIT : 0;
}

/* The record of an event with the stack suffix (ringtrace-abi.h) after
 * the caller's payload: the map's id (depth 0), or the addresses. */
static int reserve_suffix(struct ringtrace__wctx *c, uint32_t flags, uint32_t payload, uint32_t tid, uint32_t id,
			  uint32_t depth, const uint64_t *ips)
{
	uint32_t extra = 5 + 8 * depth;
	if (payload > PAYLOAD_LIMIT - extra)
		payload = PAYLOAD_LIMIT - extra; /* dropped as too big */
	/* Room in the open sub-buffer, the common case: the probes' own
	 * inline reservation, here with the suffix's bytes; anything else,
	 * rb_reserve. */
	int done = 0;
#if RINGTRACE__RSEQ
	if (c->rb->use_rseq && c->id - 1 < RINGTRACE__EV_ID_EXT - 1)
		done = ringtrace__reserve_rseq(c, c->rb, tid, payload + extra);
#endif
	if (!done && !rb_reserve(c, payload + extra, tid, reserve_wait()))
		return 0;
	char *p = c->payload + payload;
	memcpy(p, &id, 4);
	p[4] = (char)depth;
	if (depth)   /* the map's id alone, nearly always: no call for nothing */
		memcpy(p + 5, ips, 8 * (size_t)depth);
	if (flags & RINGTRACE__EVF_TRIGGER)
		c->ext |= RINGTRACE__CTX_TRIGGER;
	return 1;
}

int ringtrace__reserve_slow(struct ringtrace__wctx *c, const struct ringtrace_event_desc *d,
			    uint32_t payload)
{
	uint32_t tid;
	if (!reserve_start(c, &tid))
		return 0;
	uint32_t flags = __atomic_load_n(&d->flags, __ATOMIC_RELAXED);
	/* The suffix: declared with a stack, or in a region with stacks
	 * unless the event is bare there (registry.c). */
	if (!((flags & RINGTRACE__EVF_STACK) || (c->rb->stacks && (flags & RINGTRACE__EVF_SUFFIX)))) {
		int r = rb_reserve(c, payload, tid, reserve_wait());
		if (r && (flags & RINGTRACE__EVF_TRIGGER))
			c->ext |= RINGTRACE__CTX_TRIGGER;
		return r;
	}
	/* The stack is captured before the reservation, so that the
	 * unwinding does not hold a sub-buffer open. */
	uint64_t ips[RINGTRACE__STACK_DEPTH];
	uint32_t depth = 0;
	uint32_t id = RINGTRACE__STACK_NONE;
	if ((flags & (RINGTRACE__EVF_STACK | RINGTRACE__EVF_NO_STACK)) != RINGTRACE__EVF_NO_STACK)
		id = rb_stack_capture(c->rb, ips, &depth);
	return reserve_suffix(c, flags, payload, tid, id, depth, ips);
}

int probe_reserve_suffix(struct ringtrace__wctx *c, const struct ringtrace_event_desc *d, uint32_t payload,
			 uint32_t id, uint32_t depth, const uint64_t *ips)
{
	uint32_t tid;
	if (!reserve_start(c, &tid))
		return 0;
	return reserve_suffix(c, __atomic_load_n(&d->flags, __ATOMIC_RELAXED), payload, tid, id, depth, ips);
}
