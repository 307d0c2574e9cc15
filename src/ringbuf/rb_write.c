/*
 * rb_write.c - the writer's slow path of the buffer mechanics, run inside
 * the traced program.
 *
 * The inline fast path (ringtrace-abi.h) handles a reservation that fits in
 * the open sub-buffer of the current CPU, with rseq. The runtime's slow
 * path (src/lib/probe.c: thread identity, stacks, triggers) reserves here
 * what the fast path could not: opening a new sub-buffer (and closing the
 * full one), the atomic fallback for sessions or threads without rseq; and
 * commits from a thread that migrated come here too.
 *
 * The buffer knows records only as the ABI lays them out (a header, and a
 * thread record when another writer wrote last); of the packet header it
 * knows its length and the two hooks that fill it (pkt_open() and
 * pkt_close(), src/common/packet_layout.h). It never calls up into the
 * runtime.
 *
 * Like the fast path this code never allocates or prints, and it blocks
 * only in the one way the region's creator may ask for: a bounded wait for
 * room when the buffer is full (rb_block.c says when and how). Its other
 * system call is a futex wake when the reader sleeps and a sub-buffer was
 * closed. A failure drops the event and counts it by cause. Called from any
 * thread, including signal handlers.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/packet_layout.h"
#include "ringbuf/rb.h"
#include "ringbuf/rb_block.h"
#include "ringbuf/rb_lap.h"

#define THR_REC_LEN    (RINGTRACE__EV_COMPACT + 4)

uint64_t ringtrace__clock_monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rb_cpu_discarded(const struct ringtrace__rb_cpu *ctl)
{
	/* Relaxed, partners of count_lost()'s adds: each counter only grows,
	 * but two closers may store their sums out of order (see
	 * rb_reader_get()). */
	return __atomic_load_n(&ctl->lost_full, __ATOMIC_RELAXED) +
	       __atomic_load_n(&ctl->lost_overwrite, __ATOMIC_RELAXED) +
	       __atomic_load_n(&ctl->lost_too_big, __ATOMIC_RELAXED) +
	       __atomic_load_n(&ctl->lost_nocpu, __ATOMIC_RELAXED);
}

static void count_lost(uint64_t *counter, uint64_t n)
{
	__atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

/* Commit from a thread that is not (or may not be) on the owning CPU. */
void ringtrace__commit_slow(struct ringtrace__rb *rb, uint32_t cpu, uint32_t slot, uint32_t bytes,
			    uint32_t events)
{
	struct ringtrace__rb_slot *s = &rb->cpu[cpu].slots[slot];
	/* events before bytes: a reader that sees the bytes complete (acquire)
	 * sees the count too. */
	if (events)
		__atomic_fetch_add(&s->remote_events, events, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->remote_bytes, bytes, __ATOMIC_RELEASE);
}

void rb_commit(struct ringtrace__wctx *c, uint32_t bytes, uint32_t events)
{
#if RINGTRACE__RSEQ
	if (c->rb->use_rseq) {
		struct ringtrace__rb_slot *s = &c->rb->cpu[c->cpu].slots[c->slot];
		ringtrace__v2di inc = { (long long)bytes, (long long)events };
		while (ringtrace__rseq_cpu() == (int32_t)c->cpu)
			if (ringtrace__rseq_add16(&s->local_bytes, inc, (int32_t)c->cpu) == 0)
				return;
	}
#endif
	ringtrace__commit_slow(c->rb, c->cpu, c->slot, bytes, events);
}

/*
 * Move the state word from `expect` (loaded by the caller before this
 * call) to `newv` if nothing moved it, reading the clock in between; 0 on
 * success, 1 to retry, 2 when the time since `ref` needs an extended
 * header. With rseq, the sections of ringtrace-abi.h: the TSC read inside,
 * any other clock read before (ringtrace__rseq_reserve_any() says why the
 * order holds); without, a CAS.
 */
static int state_commit(struct ringtrace__rb *rb, int32_t cpu, uint64_t expect, uint64_t newv,
			uint64_t ref, uint64_t limit, uint64_t *ts)
{
	struct ringtrace__rb_cpu *ctl = rb->cpu[cpu].ctl;
#if RINGTRACE__RSEQ
	if (rb->use_rseq) {
		if (rb->clock_tsc)
			return ringtrace__rseq_reserve(&ctl->state, expect, newv, ref, limit, ts, cpu);
		return ringtrace__rseq_reserve_any(&ctl->state, expect, newv, ref, limit, ts, cpu);
	}
#endif
	/* The clock is read after the state load (lfence orders rdtsc after
	 * it): a successful CAS then means no record was committed between our
	 * clock read and ours, so timestamps follow buffer order. */
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("lfence" ::: "memory");
#endif
	uint64_t now = ringtrace__now(rb);
	if (now - ref >= limit)
		return 2;
	if (__atomic_compare_exchange_n(&ctl->state, &expect, newv, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED)) {
		*ts = now;
		return 0;
	}
	return 1;
}

void rb_wake_reader(struct ringtrace__rb *rb)
{
	uint32_t *w = &rb->hdr->reader_wait;
	/* Pairs with the reader's store of 1 and full fence before it checks
	 * for data: either it sees our sub-buffer or we see its flag. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(w, __ATOMIC_RELAXED) && __atomic_exchange_n(w, 0, __ATOMIC_ACQ_REL))
		syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/*
 * Make slot(next) available for the lap starting at `next`. 0: go on;
 * -EAGAIN: lost a race, start over; -ENOSPC: drop the event (discard mode and
 * the reader has not taken the slot, or a writer of the old lap has not
 * committed yet).
 */
static int claim_slot(struct ringtrace__rb *rb, struct ringtrace__rb_percpu *pc, uint64_t next)
{
	struct ringtrace__rb_slot *s = &pc->slots[rb_slot_of(rb, next)];
	uint32_t lap = rb_lap_tag(rb, next);
	uint32_t prev = (lap - 1) & rb_lap_mask(rb);
	uint64_t sb = rb->sb_mask + 1;
	uint64_t ow = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);

	if (RINGTRACE__OWN_LAP(ow) == lap)
		/* Opened already (by a racing switch, or lap 0), unless its
		 * opener is still zeroing it. */
		return (ow & RB_OWN_ZEROING) ? -ENOSPC : 0;
	if (RINGTRACE__OWN_LAP(ow) != prev)
		return -ENOSPC;
	/* The previous lap must be fully committed: a writer still holding a
	 * reservation there (preempted, or dead) keeps the slot. */
	if (rb_lap_committed(rb, s, (next - (rb->buf_mask + 1)) & RINGTRACE__POS_MASK) != sb)
		return -ENOSPC;
	uint64_t events = rb_slot_events(s);
	int unread = !RINGTRACE__OWN_READ(ow);
	int overwrite_mode = rb->mode == RINGTRACE__MODE_OVERWRITE;
	if (unread && !overwrite_mode)
		return -ENOSPC;
	/* Pairs with the reader's CAS claiming the old lap: exactly one wins.
	 * In overwrite mode the slot is zeroed before anyone writes in it (the
	 * reader copies and does not zero), so that a record reserved but
	 * never written reads as a zero header as in discard mode (where the
	 * reader zeroes); meanwhile other writers see ZEROING and drop rather
	 * than write into it. */
	uint64_t nw = RINGTRACE__OWN(lap, 0, events) | (overwrite_mode ? RB_OWN_ZEROING : 0);
	if (!__atomic_compare_exchange_n(&s->owner, &ow, nw, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return -EAGAIN;
	if (unread)
		count_lost(&pc->ctl->lost_overwrite, (events - RINGTRACE__OWN_BASE(ow)) & ((UINT64_C(1) << 46) - 1));
	if (overwrite_mode) {
		memset(pc->data + (next & rb->buf_mask), 0, sb);
		/* Release: the zeroes before the slot is open for writing
		 * (pairs with the acquire load above in other writers). */
		__atomic_store_n(&s->owner, RINGTRACE__OWN(lap, 0, events), __ATOMIC_RELEASE);
	}
	return 0;
}

static void close_packet(struct ringtrace__wctx *c, struct ringtrace__rb_percpu *pc, uint64_t start,
			 uint64_t used, uint64_t ts)
{
	struct ringtrace__rb *rb = c->rb;
	pkt_close(pc->data + (start & rb->buf_mask), ts, used, rb_cpu_discarded(pc->ctl));
	struct ringtrace__wctx pad = *c;
	pad.slot = rb_slot_of(rb, start);
	/* The padding completes the lap; the release in the commit publishes
	 * the fields above with it. */
	rb_commit(&pad, (uint32_t)(rb->sb_mask + 1 - used), 0);
}

/* Begin fields of a new packet, written by the thread whose reservation
 * opened it, after the state commit and before its own commit (which
 * counts the header bytes, so the reader never sees it half written). Not
 * the end fields: the opener may be preempted after its state commit
 * while others fill this sub-buffer and close it; they belong to
 * close_packet() alone. */
static void open_packet(struct ringtrace__rb *rb, struct ringtrace__rb_percpu *pc, uint32_t cpu,
			uint64_t next, uint64_t ts)
{
	pkt_open(pc->data + (next & rb->buf_mask), rb->hdr->uuid, cpu, next >> rb->sb_shift, ts);
}

static int32_t current_cpu(const struct ringtrace__rb *rb)
{
#if RINGTRACE__RSEQ
	if (rb->use_rseq)
		return ringtrace__rseq_cpu();
#endif
	return sched_getcpu();
}

static void write_thread_rec(char *p, uint32_t tid, uint64_t ts, int ext)
{
	uint32_t hl = ringtrace__hdr_len(RINGTRACE__ID_THREAD, ext);
	memcpy(p + hl, &tid, 4);
	ringtrace__put_hdr(p, RINGTRACE__ID_THREAD, ts, ext);
}

static int reserve_once(struct ringtrace__wctx *c, uint32_t payload, uint32_t tid, int internal,
			int may_wait, struct rb_block *b);

/*
 * A dropped event leaves no rseq_cs pointer behind (see ringtrace-abi.h):
 * this object could be unloaded before the thread's next preemption.
 */
int rb_reserve(struct ringtrace__wctx *c, uint32_t payload, uint32_t writer, unsigned flags)
{
	struct rb_block b = { 0 };
	int r = reserve_once(c, payload, writer, (flags & RB_RES_INTERNAL) != 0, flags == 0, &b);
	if (RINGTRACE__UNLIKELY(b.start != 0))
		rb_block_done(c->rb, &b);
#if RINGTRACE__RSEQ
	if (!r && c->rb->use_rseq)
		ringtrace__rseq_clear();
#endif
	return r;
}

static int reserve_once(struct ringtrace__wctx *c, uint32_t payload, uint32_t tid, int internal,
			int may_wait, struct rb_block *b)
{
	struct ringtrace__rb *rb = c->rb;
	int ext = 0;

	for (;;) {
		int32_t cpu = current_cpu(rb);
		if (RINGTRACE__UNLIKELY(cpu < 0 || (uint32_t)cpu >= rb->ncpus)) {
			/* A thread without rseq in an rseq session must not
			 * touch a state word: count it on some CPU. */
			int32_t any = sched_getcpu();
			if (!internal)
				count_lost(&rb->cpu[(uint32_t)(any < 0 ? 0 : any) % rb->ncpus].ctl->lost_nocpu, 1);
			return 0;
		}
		struct ringtrace__rb_percpu *pc = &rb->cpu[cpu];
		uint64_t st = __atomic_load_n(&pc->ctl->state, __ATOMIC_ACQUIRE);
		uint64_t pos = st & RINGTRACE__POS_MASK;
		uint64_t in = pos & rb->sb_mask;
		uint64_t sb = rb->sb_mask + 1;
		int thr = (uint32_t)(st >> RINGTRACE__POS_BITS) != tid;
		uint32_t thr_len = thr ? ringtrace__hdr_len(RINGTRACE__ID_THREAD, ext) + 4 : 0;
		uint32_t ev_hdr = ringtrace__hdr_len(c->id, ext && !thr);
		uint64_t need = (uint64_t)thr_len + ev_hdr + payload;
		uint64_t ts = 0;

		/* Never fill a sub-buffer exactly: a position on a sub-buffer
		 * boundary then always means "none open" (only at the start). */
		if (in != 0 && in + need < sb) {
			uint64_t newv = ((pos + need) & RINGTRACE__POS_MASK) | ((uint64_t)tid << RINGTRACE__POS_BITS);
			uint64_t ref = __atomic_load_n(&pc->ctl->last_ts, __ATOMIC_RELAXED);
			uint64_t limit = ext ? ~UINT64_C(0) : (UINT64_C(1) << RINGTRACE__TS_BITS);
			int r = state_commit(rb, cpu, st, newv, ref, limit, &ts);
			if (r == 2)
				ext = 1;
			if (r != 0)
				continue;
			__atomic_store_n(&pc->ctl->last_ts, ts, __ATOMIC_RELAXED);
			char *p = pc->data + (pos & rb->buf_mask);
			if (thr) {
				write_thread_rec(p, tid, ts, ext);
				p += thr_len;
			}
			c->ts = ts;
			c->rec = p;
			c->payload = p + ev_hdr;
			c->ext = ev_hdr == RINGTRACE__EV_EXTENDED;
			c->cpu = (uint32_t)cpu;
			c->slot = rb_slot_of(rb, pos);
			c->len = (uint32_t)need;
			return 1;
		}

		/* Open the next sub-buffer: packet header, a thread record (each
		 * packet says who writes first), then the event; all compact,
		 * since the packet's timestamp_begin is this event's time. */
		ev_hdr = ringtrace__hdr_len(c->id, 0);
		need = RINGTRACE__PKT_HDR + THR_REC_LEN + ev_hdr + (uint64_t)payload;
		if (need >= sb) {
			if (!internal)
				count_lost(&pc->ctl->lost_too_big, 1);
			return 0;
		}
		uint64_t next = in ? ((pos - in + sb) & RINGTRACE__POS_MASK) : pos;
		int r = claim_slot(rb, pc, next);
		if (r == -EAGAIN)
			continue;
		if (r < 0) {
			/* Full: wait for the consumer if the region asks for it
			 * (rb_block.c), then start over from the CPU we are on. */
			if (may_wait && (b->start != 0 || rb_block_may_wait(rb, pc)) &&
			    rb_block_wait(rb, pc, st, next, b) == 0)
				continue;
			if (!internal)
				count_lost(&pc->ctl->lost_full, 1);
			return 0;
		}
		uint64_t newv = ((next + need) & RINGTRACE__POS_MASK) | ((uint64_t)tid << RINGTRACE__POS_BITS);
		/* No limit (the packet header holds the full time), but the
		 * CPU's last time as the floor of a clock read outside a
		 * section. */
		uint64_t last = __atomic_load_n(&pc->ctl->last_ts, __ATOMIC_RELAXED);
		if (state_commit(rb, cpu, st, newv, last, ~UINT64_C(0), &ts) != 0)
			continue;
		__atomic_store_n(&pc->ctl->last_ts, ts, __ATOMIC_RELAXED);
		c->cpu = (uint32_t)cpu;
		if (in)
			close_packet(c, pc, pos - in, in, ts);
		open_packet(rb, pc, (uint32_t)cpu, next, ts);
		char *p = pc->data + (next & rb->buf_mask) + RINGTRACE__PKT_HDR;
		write_thread_rec(p, tid, ts, 0);
		p += THR_REC_LEN;
		c->ts = ts;
		c->rec = p;
		c->payload = p + ev_hdr;
		c->ext = ev_hdr == RINGTRACE__EV_EXTENDED;
		c->slot = rb_slot_of(rb, next);
		c->len = (uint32_t)need;
		if (in)
			rb_wake_reader(rb);
		return 1;
	}
}

/*
 * Close every open sub-buffer, as a writer that found no room would:
 * end fields, padding committed, state moved to the boundary (which a
 * reader then takes as closed). Only while no writer can run: tracing off
 * and a grace period passed (src/lib/agent.c), so plain atomics suffice.
 */
void rb_flush_quiescent(struct ringtrace__rb *rb)
{
	uint64_t sb = rb->sb_mask + 1;
	uint64_t ts = ringtrace__now(rb);
	for (uint32_t cpu = 0; cpu < rb->ncpus; cpu++) {
		struct ringtrace__rb_percpu *pc = &rb->cpu[cpu];
		uint64_t st = __atomic_load_n(&pc->ctl->state, __ATOMIC_ACQUIRE);
		uint64_t pos = st & RINGTRACE__POS_MASK;
		uint64_t in = pos & rb->sb_mask;
		if (in == 0)
			continue;
		uint64_t last = __atomic_load_n(&pc->ctl->last_ts, __ATOMIC_RELAXED);
		struct ringtrace__wctx c = { 0 };
		c.rb = rb;
		c.cpu = cpu;
		close_packet(&c, pc, pos - in, in, ts > last ? ts : last);
		uint64_t next = (pos - in + sb) & RINGTRACE__POS_MASK;
		__atomic_store_n(&pc->ctl->state, next | (st & ~RINGTRACE__POS_MASK), __ATOMIC_RELEASE);
	}
	rb_wake_reader(rb);
}
