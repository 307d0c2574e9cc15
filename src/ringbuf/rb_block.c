/*
 * rb_block.c - blocking mode: a writer that finds its CPU's buffer full
 * waits for room, a bounded time, instead of dropping the event (LTTng-UST's
 * blocking channels with a timeout). Called by the writer's slow path
 * (rb_write.c, reserve_once()) when it cannot open the next sub-buffer, and
 * by the consumer (rb_read.c, rb_reader_put()) when it hands one back.
 *
 * Load: nothing on the inline fast path, which never sees a full buffer (it
 * cannot open a sub-buffer). The writer's side runs only when the buffer
 * is full, i.e. when the consumer is behind; the consumer's side is one
 * fence and one load per sub-buffer handed back, plus a futex wake when a
 * writer sleeps.
 *
 * The protocol, per CPU (fields of struct ringtrace__rb_cpu):
 *
 *   writer                                consumer (rb_reader_put)
 *   store writer_wait = 1                 store slot owner (READ bit), release
 *   fence (seq_cst)                       fence (seq_cst)
 *   look at the slot again: free? retry   load writer_wait: 1? exchange 0,
 *   FUTEX_WAIT(writer_wait, 1, slice)          FUTEX_WAKE(all)
 *
 * Either the consumer sees the flag, or the writer sees the slot handed
 * back (the two fences pair, as in wake_reader()/rb_reader_wait()). The
 * writer also wakes the consumer if it sleeps (wake_reader()), so that a
 * waiting writer never waits for the consumer's poll period. The futex
 * word is in shared memory: process-shared futex operations.
 *
 * Never waited on, the event dropped and counted as before:
 *   - a region whose creator asked for no wait (block_us 0), and overwrite
 *     mode (the flight recorder), where a full buffer is not a reason;
 *   - the tracer's own records (thread names), and what the caller says
 *     must not wait (RB_RES_NOWAIT): src/lib/probe.c passes it for a probe
 *     nested in another probe of the same thread (a signal handler that
 *     interrupted a reservation), since the room it would wait for may be
 *     held by the very reservation it interrupted;
 *   - the consumer stalled: a wait on this CPU timed out and the consumer
 *     has taken nothing since (block_stall), e.g. a recorder stopped with
 *     SIGSTOP or killed. The program then runs on at full speed, dropping,
 *     and waits again once the consumer moves.
 * A wait holds no lock of the program or of the tracer: stacks are
 * captured before the reservation (src/lib/probe.c), the allocation tracer
 * records outside the allocator's own calls, and the consumer is another
 * process. Its longest wait is block_us per event; a wait that times out
 * costs each CPU one timeout per stall of the consumer. The library's
 * grace period (src/lib/rcu.c) waits for a waiting probe like any other:
 * switching tracing off while the consumer is stalled takes one timeout
 * at most. (The buffer does not look at the runtime's current region: it
 * never calls up into src/lib.)
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ringbuf/rb.h"
#include "ringbuf/rb_block.h"
#include "ringbuf/rb_lap.h"

/* A sleep is cut into slices so that room freed by someone else than the
 * consumer (a preempted writer of the old lap committing) is seen too. */
#define SLICE_NS 2000000u

int rb_block_may_wait(const struct ringtrace__rb *rb, const struct ringtrace__rb_percpu *pc)
{
	if (rb->block_us == 0 || rb->mode == RINGTRACE__MODE_OVERWRITE)
		return 0;
	/* Relaxed, partner of the timed-out writer's store below and of the
	 * consumer's store of read_subbufs: a stale value only means one more
	 * wait, or one more drop, at the moment the consumer moves. */
	uint64_t stall = __atomic_load_n(&pc->ctl->block_stall, __ATOMIC_RELAXED);
	return stall == 0 || stall != __atomic_load_n(&pc->ctl->read_subbufs, __ATOMIC_RELAXED) + 1;
}

/* Whether slot(next) may have room now: opened by another writer, or
 * handed back by the consumer. Read-only; claim_slot() decides. */
static int room_maybe(const struct ringtrace__rb *rb, const struct ringtrace__rb_percpu *pc, uint64_t st,
		      uint64_t next)
{
	/* Acquire, partners of the consumer's release store of the owner and
	 * of a writer's state commit. */
	if (__atomic_load_n(&pc->ctl->state, __ATOMIC_ACQUIRE) != st)
		return 1;
	uint64_t ow = __atomic_load_n(&pc->slots[rb_slot_of(rb, next)].owner, __ATOMIC_ACQUIRE);
	uint32_t lap = rb_lap_tag(rb, next);
	if (RINGTRACE__OWN_LAP(ow) == lap)
		return 1;
	return RINGTRACE__OWN_LAP(ow) == ((lap - 1) & rb_lap_mask(rb)) && RINGTRACE__OWN_READ(ow);
}

int rb_block_wait(struct ringtrace__rb *rb, struct ringtrace__rb_percpu *pc, uint64_t st, uint64_t next,
		  struct rb_block *b)
{
	uint64_t now = ringtrace__clock_monotonic();
	if (b->start == 0) {
		b->start = now ? now : 1;
		b->cpu = pc;
	}
	uint64_t limit = (uint64_t)rb->block_us * 1000u;
	uint64_t spent = now - b->start;
	if (spent >= limit) {
		b->timed_out = 1;
		return -ETIMEDOUT;
	}
	uint32_t *w = &pc->ctl->writer_wait;
	__atomic_store_n(w, 1, __ATOMIC_RELAXED);
	/* Pairs with the consumer's fence in rb_block_wake(): either it sees
	 * our flag, or we see the sub-buffer it handed back. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (room_maybe(rb, pc, st, next))
		return 0;
	rb_wake_reader(rb);
	uint64_t left = limit - spent;
	if (left > SLICE_NS)
		left = SLICE_NS;
	struct timespec ts = { (time_t)(left / 1000000000u), (long)(left % 1000000000u) };
	/* Returns at once if the consumer cleared the word meanwhile; EINTR
	 * (a signal) and the end of the slice just go round again. */
	syscall(SYS_futex, w, FUTEX_WAIT, 1, &ts, NULL, 0);
	return 0;
}

void rb_block_done(struct ringtrace__rb *rb, struct rb_block *b)
{
	if (b->start == 0)
		return;
	struct ringtrace__rb_cpu *ctl = b->cpu->ctl;
	uint64_t ns = ringtrace__clock_monotonic() - b->start;
	/* Relaxed adds, read by the recorder at the end (and by stat), as
	 * the loss counters are. */
	__atomic_fetch_add(&ctl->block_waits, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&ctl->block_ns, ns ? ns : 1, __ATOMIC_RELAXED);
	if (b->timed_out) {
		__atomic_fetch_add(&ctl->block_timeouts, 1, __ATOMIC_RELAXED);
		/* The consumer did not make room in a whole timeout: drop at
		 * once on this CPU until it takes a sub-buffer (partner of the
		 * relaxed loads in rb_block_may_wait()). */
		__atomic_store_n(&ctl->block_stall, __atomic_load_n(&ctl->read_subbufs, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
	}
	(void)rb;
}

void rb_block_wake(struct ringtrace__rb_cpu *ctl)
{
	/* Pairs with the writer's fence in rb_block_wait(); the caller's
	 * release store of the slot's owner comes before it. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ctl->writer_wait, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&ctl->writer_wait, 0, __ATOMIC_ACQ_REL))
		syscall(SYS_futex, &ctl->writer_wait, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
