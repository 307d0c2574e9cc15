/*
 * rb_read.c - the consumer: takes closed, fully committed sub-buffers out
 * of a region that another process (or thread) is writing.
 *
 * Runs in the recorder (or a test's reader thread), never in the traced
 * program's threads. Each sub-buffer is a finished CTF packet; in discard
 * mode it is handed out in place (zero copy) and zeroed before it goes back
 * to the writers; in overwrite mode it is copied and then claimed with a CAS
 * on the slot's owner word, so a copy that a writer overwrote meanwhile is
 * thrown away (the writer counted those events as overwritten).
 *
 * Every value read from the region is checked: a damaged sub-buffer is
 * skipped and counted, never followed.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "common/packet_layout.h"
#include "ringbuf/rb.h"
#include "ringbuf/rb_block.h"
#include "ringbuf/rb_lap.h"

struct rb_rcpu {
	uint64_t rpos;               /* start of the next sub-buffer to take */
	uint64_t disc;               /* events_discarded of the last packet handed out */
	uint64_t lost;               /* committed events we could not hand out */
	int held;                    /* a discard-mode sub-buffer is out */
	int done;                    /* salvage finished */
};

struct rb_reader {
	struct ringtrace__rb *rb;
	char *copy;                  /* sub-buffer sized private buffer */
	struct rb_reader_stats st;
	struct rb_rcpu cpu[];
};

int rb_reader_new(struct ringtrace__rb *rb, struct rb_reader **ret)
{
	struct rb_reader *r = calloc(1, sizeof(*r) + rb->ncpus * sizeof(r->cpu[0]));
	if (!r)
		return -ENOMEM;
	/* Page-aligned: the recorder may hand a copy to an O_DIRECT write
	 * as it is (src/session/writer.c). */
	void *copy = NULL;
	if (posix_memalign(&copy, 4096, rb->sb_mask + 1) != 0) {
		free(r);
		return -ENOMEM;
	}
	r->copy = copy;
	r->rb = rb;
	*ret = r;
	return 0;
}

/*
 * How far back from the start of the open sub-buffer the ring can still
 * hold whole sub-buffers, given the writers' position `pos`: the nsb
 * sub-buffers up to the open one, the open one included. On a boundary (a flush closed the last sub-buffer and
 * nothing was written since) no sub-buffer is open: the slot at `pos`
 * still holds its previous lap, one more whole sub-buffer. Taking it then
 * is safe: a writer that reopens the slot meanwhile makes our claim fail
 * and counts the events as overwritten.
 */
static uint64_t whole_span(const struct ringtrace__rb *rb, uint64_t pos)
{
	uint64_t sb = rb->sb_mask + 1, buf = rb->buf_mask + 1;
	return (pos & rb->sb_mask) ? buf - sb : buf;
}

void rb_reader_seek_oldest(struct rb_reader *r)
{
	struct ringtrace__rb *rb = r->rb;
	uint64_t sb = rb->sb_mask + 1;
	for (uint32_t c = 0; c < rb->ncpus; c++) {
		struct ringtrace__rb_percpu *pc = &rb->cpu[c];
		uint64_t pos = __atomic_load_n(&pc->ctl->state, __ATOMIC_ACQUIRE) & RINGTRACE__POS_MASK;
		uint64_t open = pos & ~rb->sb_mask;
		uint64_t span = whole_span(rb, pos);
		uint64_t start = open >= span ? open - span : 0;
		uint64_t rpos = open;
		for (uint64_t p = start; p < open; p += sb) {
			const struct ringtrace__rb_slot *s = &pc->slots[rb_slot_of(rb, p)];
			uint64_t ow = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
			if (RINGTRACE__OWN_LAP(ow) == rb_lap_tag(rb, p) && !RINGTRACE__OWN_READ(ow)) {
				rpos = p;
				break;
			}
		}
		r->cpu[c].rpos = rpos;
	}
}

void rb_reader_free(struct rb_reader *r)
{
	if (!r)
		return;
	free(r->copy);
	free(r);
}

void rb_reader_stats(const struct rb_reader *r, struct rb_reader_stats *ret)
{
	*ret = r->st;
}

static uint64_t get64(const char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

uint64_t rb_reader_cpu_lost(const struct rb_reader *r, uint32_t cpu)
{
	return cpu < r->rb->ncpus ? r->cpu[cpu].lost : 0;
}

uint64_t rb_cpu_written(const struct ringtrace__rb_percpu *pc, uint32_t nsb)
{
	/* Relaxed: partners of the writers' count_lost() adds; the slot
	 * counts are acquire loads (rb_slot_events). */
	uint64_t n = __atomic_load_n(&pc->ctl->lost_full, __ATOMIC_RELAXED) +
		     __atomic_load_n(&pc->ctl->lost_too_big, __ATOMIC_RELAXED) +
		     __atomic_load_n(&pc->ctl->lost_nocpu, __ATOMIC_RELAXED);
	for (uint32_t k = 0; k < nsb; k++)
		n += rb_slot_events(&pc->slots[k]);
	return n;
}

/*
 * Keep a stream's events_discarded from going down. The writer that
 * closes a packet stores the loss counters' sum at that moment, after its
 * state commit: preempted there, it can store its sum after later packets
 * were closed with smaller ones (more losses were counted meanwhile). And
 * a salvaged packet gets the sum of the end (cut_copy()), while complete
 * packets after it keep the sums of their close. A reader that took the
 * difference would see a loss of nearly 2^64 events. The larger value is
 * as true for the later packet (the losses were counted before it was
 * handed out), so raise it.
 */
static void keep_discarded_monotonic(struct rb_rcpu *rc, char *p)
{
	uint64_t d = get64(p + PKT_OFF(events_discarded));
	if (d < rc->disc)
		memcpy(p + PKT_OFF(events_discarded), &rc->disc, 8);
	else
		rc->disc = d;
}

/* A packet header as written by open_packet/close_packet. */
static int packet_valid(const struct ringtrace__rb *rb, const char *p, uint32_t cpu,
			uint64_t pos, uint64_t *ret_len)
{
	uint32_t magic;
	memcpy(&magic, p + PKT_OFF(magic), 4);
	uint64_t content = get64(p + PKT_OFF(content_size));
	if (magic != CTF_PACKET_MAGIC || get64(p + PKT_OFF(packet_size)) != content || (content & 7) ||
	    content / 8 < PKT_HDR_LEN || content / 8 >= rb->sb_mask + 1 ||
	    get64(p + PKT_OFF(stream_instance_id)) != cpu ||
	    get64(p + PKT_OFF(packet_seq_num)) != pos >> rb->sb_shift ||
	    memcmp(p + PKT_OFF(uuid), rb->hdr->uuid, 16) != 0)
		return 0;
	*ret_len = content / 8;
	return 1;
}

/*
 * Overwrite mode copies while writers may already be reusing the slot; the
 * CAS on the owner word afterwards decides whether the copy is good. The
 * race on the bytes is the protocol (a seqlock). Under TSan the copy is a
 * loop of uninstrumented loads (TSan intercepts memcpy); otherwise memcpy.
 */
#if defined(__SANITIZE_THREAD__)
#  define RB_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define RB_TSAN 1
#  endif
#endif

#ifdef RB_TSAN
__attribute__((no_sanitize("thread"))) static void racy_copy(char *dst, const char *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = ((const volatile char *)src)[i];
}
#else
static void racy_copy(char *dst, const char *src, size_t n)
{
	memcpy(dst, src, n);
}
#endif

int rb_reader_get(struct rb_reader *r, uint32_t cpu, struct rb_packet *pkt)
{
	struct ringtrace__rb *rb = r->rb;
	if (cpu >= rb->ncpus)
		return -EINVAL;
	struct ringtrace__rb_percpu *pc = &rb->cpu[cpu];
	struct rb_rcpu *rc = &r->cpu[cpu];
	uint64_t sb = rb->sb_mask + 1, buf = rb->buf_mask + 1;

	for (;;) {
		uint64_t st = __atomic_load_n(&pc->ctl->state, __ATOMIC_ACQUIRE);
		uint64_t pos = st & RINGTRACE__POS_MASK;
		uint64_t dist = (pos - rc->rpos) & RINGTRACE__POS_MASK;
		/* The sub-buffer at rpos is still open (or nothing was written).
		 * A position exactly on the next boundary means it was closed
		 * by a flush (writers never fill a sub-buffer exactly). */
		if (dist < sb)
			return 0;
		if (dist > buf) {
			/* The writers lapped us (overwrite mode): jump to the
			 * oldest sub-buffer that can still be whole. */
			if (rb->mode != RINGTRACE__MODE_OVERWRITE) {
				r->st.corrupt++;
				return -EBADMSG;
			}
			rc->rpos = ((pos & ~rb->sb_mask) - whole_span(rb, pos)) & RINGTRACE__POS_MASK;
			continue;
		}
		uint64_t rpos = rc->rpos;
		struct ringtrace__rb_slot *s = &pc->slots[rb_slot_of(rb, rpos)];
		uint32_t lap = rb_lap_tag(rb, rpos);
		uint64_t ow = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
		if (RINGTRACE__OWN_LAP(ow) != lap || RINGTRACE__OWN_READ(ow)) {
			/* Reopened by a writer: overwritten, counted there. */
			rc->rpos = (rpos + sb) & RINGTRACE__POS_MASK;
			continue;
		}
		uint64_t done = rb_lap_committed(rb, s, rpos);
		if (done < sb)
			return 0; /* a writer has not committed yet */
		if (done > sb) {
			/* Overwrite mode: a writer reopened the slot after we
			 * read its owner word (it counted the loss). Discard
			 * mode: impossible unless the region is damaged; hand
			 * the slot back anyway, or the writers would stop. */
			if (rb->mode == RINGTRACE__MODE_OVERWRITE) {
				rc->rpos = (rpos + sb) & RINGTRACE__POS_MASK;
			} else {
				r->st.corrupt++;
				rc->held = 1;
				rb_reader_put(r, cpu);
			}
			continue;
		}
		uint64_t events = rb_lap_events(s, ow);
		char *p = pc->data + (rpos & rb->buf_mask);
		uint64_t len;
		if (rb->mode == RINGTRACE__MODE_OVERWRITE) {
			racy_copy(r->copy, p, sb);
			uint64_t claimed = RINGTRACE__OWN(lap, 1, RINGTRACE__OWN_BASE(ow));
			/* Pairs with the writer's CAS in claim_slot(). */
			if (!__atomic_compare_exchange_n(&s->owner, &ow, claimed, 0, __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE)) {
				r->st.torn++;
				rc->rpos = (rpos + sb) & RINGTRACE__POS_MASK;
				continue;
			}
			rc->rpos = (rpos + sb) & RINGTRACE__POS_MASK;
			p = r->copy;
		} else {
			rc->held = 1;
		}
		if (!packet_valid(rb, p, cpu, rpos, &len)) {
			/* e.g. its opener died between its state commit and the
			 * packet header: the events in it cannot be read. */
			r->st.corrupt++;
			r->st.corrupt_events += events;
			rc->lost += events;
			if (rc->held)
				rb_reader_put(r, cpu);
			continue;
		}
		/* Ours alone: a private copy, or a sub-buffer we hold. */
		keep_discarded_monotonic(rc, p);
		pkt->data = p;
		pkt->len = len;
		pkt->events = events;
		pkt->cpu = cpu;
		pkt->salvaged = 0;
		/* Only the one reader writes these (`ringtrace stat` reads them). */
		__atomic_store_n(&pc->ctl->read_subbufs, pc->ctl->read_subbufs + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&pc->ctl->read_events, pc->ctl->read_events + events, __ATOMIC_RELAXED);
		r->st.packets++;
		r->st.events += events;
		r->st.bytes += len;
		return 1;
	}
}

/*
 * Zero a sub-buffer the writers will fill next. With streaming stores on
 * x86-64: a plain memset reads every line for ownership first, out of the
 * cache of the CPU that wrote the packet, and leaves the recorder's cache
 * full of lines the writers take back; streaming stores go to memory and
 * drop the lines from every cache. Under `--mem --stacks` on the 2-thread
 * bench/mem_pairs.c, perf put the recorder's zeroing at 2.9% of all
 * samples with memset, 0.8% with these: CPU time the program's threads
 * get back on a 2-CPU machine. The sfence
 * orders them before the caller's release store of the slot's owner, as
 * the memset's plain stores are. Not under TSan, which sees only plain
 * stores (the memset's): the race checks of the tests keep them.
 */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#  define RB_STREAM_ZERO 1
#  if defined(__has_feature)
#    if __has_feature(thread_sanitizer)
#      undef RB_STREAM_ZERO
#      define RB_STREAM_ZERO 0
#    endif
#  endif
#else
#  define RB_STREAM_ZERO 0
#endif

static void zero_subbuf(char *p, size_t len)
{
#if RB_STREAM_ZERO
	if (((uintptr_t)p & 15) == 0 && (len & 63) == 0) {
		const __m128i z = _mm_setzero_si128();
		__m128i *v = (__m128i *)(void *)p;
		for (size_t i = 0, n = len / 16; i < n; i += 4) {
			_mm_stream_si128(v + i, z);
			_mm_stream_si128(v + i + 1, z);
			_mm_stream_si128(v + i + 2, z);
			_mm_stream_si128(v + i + 3, z);
		}
		_mm_sfence();
		return;
	}
#endif
	memset(p, 0, len);
}

void rb_reader_put(struct rb_reader *r, uint32_t cpu)
{
	struct ringtrace__rb *rb = r->rb;
	struct rb_rcpu *rc = &r->cpu[cpu];
	if (!rc->held)
		return;
	struct ringtrace__rb_percpu *pc = &rb->cpu[cpu];
	uint64_t rpos = rc->rpos;
	struct ringtrace__rb_slot *s = &pc->slots[rb_slot_of(rb, rpos)];
	/* Zeroed, so that a record reserved later but never written reads as
	 * a zero header (design.md "Event write order"). */
	zero_subbuf(pc->data + (rpos & rb->buf_mask), rb->sb_mask + 1);
	uint64_t ow = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
	/* Release: the zeroing happens before a writer can reuse the slot
	 * (pairs with the acquire CAS in claim_slot). */
	__atomic_store_n(&s->owner, ow | (UINT64_C(1) << 46), __ATOMIC_RELEASE);
	/* Writers waiting for room on this CPU (rb_block.c). */
	rb_block_wake(pc->ctl);
	rc->held = 0;
	rc->rpos = (rpos + rb->sb_mask + 1) & RINGTRACE__POS_MASK;
}

/* Also the mount's reader of sub-buffers in place (src/fs/fs_live.c). */
size_t rb_walk_records(const char *p, size_t avail, rb_payload_size_fn fn, void *arg, uint64_t *ret_events)
{
	size_t off = RINGTRACE__PKT_HDR;
	uint64_t events = 0;
	while (off + RINGTRACE__EV_COMPACT <= avail) {
		uint32_t w;
		memcpy(&w, p + off, 4);
		if (w == 0)
			break;
		uint32_t id = w & 31;
		size_t hl = RINGTRACE__EV_COMPACT;
		if (id == RINGTRACE__EV_ID_EXT) {
			if (off + RINGTRACE__EV_EXTENDED > avail)
				break;
			memcpy(&id, p + off + 1, 4);
			hl = RINGTRACE__EV_EXTENDED;
		}
		if (id == 0)
			break;
		size_t psz;
		if (id == RINGTRACE__ID_THREAD)
			psz = 4;
		else if (!fn || fn(arg, id, p + off + hl, avail - off - hl, &psz) < 0)
			break;
		if (psz > avail - off - hl)
			break;
		off += hl + psz;
		if (id >= RINGTRACE__ID_FIRST_USER)
			events++;
	}
	if (ret_events)
		*ret_events = events;
	return off;
}

/* The private copy as a packet cut after `keep` bytes: sizes, end time
 * (if set_end), events discarded so far. */
static void cut_copy(struct rb_reader *r, const struct ringtrace__rb_percpu *pc, uint32_t cpu, size_t keep,
		     uint64_t events, int set_end, uint64_t end_ts, int take, struct rb_packet *pkt)
{
	char *h = r->copy;
	uint64_t v = keep * 8;
	memcpy(h + PKT_OFF(content_size), &v, 8);
	memcpy(h + PKT_OFF(packet_size), &v, 8);
	if (set_end)
		memcpy(h + PKT_OFF(timestamp_end), &end_ts, 8);
	v = rb_cpu_discarded(pc->ctl);
	if (v < r->cpu[cpu].disc)
		v = r->cpu[cpu].disc;
	memcpy(h + PKT_OFF(events_discarded), &v, 8);
	/* A peek takes nothing: the same records come again. */
	if (take)
		r->cpu[cpu].disc = v;
	pkt->data = r->copy;
	pkt->len = keep;
	pkt->events = events;
	pkt->cpu = cpu;
	pkt->salvaged = 1;
}

int rb_reader_salvage(struct rb_reader *r, uint32_t cpu, rb_payload_size_fn fn, void *arg,
		      uint64_t end_ts, struct rb_packet *pkt)
{
	struct ringtrace__rb *rb = r->rb;
	if (cpu >= rb->ncpus)
		return -EINVAL;
	struct ringtrace__rb_percpu *pc = &rb->cpu[cpu];
	struct rb_rcpu *rc = &r->cpu[cpu];
	uint64_t sb = rb->sb_mask + 1;

	rb_reader_put(r, cpu);
	while (!rc->done) {
		int k = rb_reader_get(r, cpu, pkt);
		if (k != 0)
			return k;
		uint64_t st = __atomic_load_n(&pc->ctl->state, __ATOMIC_ACQUIRE);
		uint64_t pos = st & RINGTRACE__POS_MASK;
		uint64_t dist = (pos - rc->rpos) & RINGTRACE__POS_MASK;
		if (dist == 0) {
			rc->done = 1;
			return 0;
		}
		/* rb_reader_get() returned 0: the sub-buffer at rpos is open
		 * (dist < sb) or closed with records never committed. */
		uint64_t rpos = rc->rpos;
		struct ringtrace__rb_slot *s = &pc->slots[rb_slot_of(rb, rpos)];
		uint32_t lap = rb_lap_tag(rb, rpos);
		uint64_t ow = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
		int last = dist < sb;
		rc->rpos = (rpos + sb) & RINGTRACE__POS_MASK;
		if (last)
			rc->done = 1;
		if (RINGTRACE__OWN_LAP(ow) != lap || RINGTRACE__OWN_READ(ow))
			continue;
		const char *src = pc->data + (rpos & rb->buf_mask);
		memcpy(r->copy, src, sb);
		uint64_t used = last ? dist : sb;
		uint64_t keep_events;
		size_t keep;
		uint64_t done = rb_lap_committed(rb, s, rpos);
		uint32_t magic;
		memcpy(&magic, r->copy, 4);
		uint64_t committed_events = rb_lap_events(s, ow);
		if (magic != CTF_PACKET_MAGIC) {
			/* Its opener died before writing the header. */
			r->st.corrupt++;
			r->st.corrupt_events += committed_events;
			rc->lost += committed_events;
			continue;
		}
		if (last && done == used) {
			keep = used;
			keep_events = committed_events;
		} else {
			/* Records reserved but never committed: keep what comes
			 * before the first of them. */
			uint64_t bound = last ? used : (get64(r->copy + PKT_OFF(content_size)) / 8);
			if (bound < RINGTRACE__PKT_HDR || bound > sb)
				bound = used;
			/* Every sub-buffer was zero before its lap began (the
			 * reader zeroes in discard mode, the reusing writer in
			 * overwrite mode), so the first unwritten record reads
			 * as a zero header; what follows it is lost. */
			keep = rb_walk_records(r->copy, bound, fn, arg, &keep_events);
			if (keep_events < committed_events) {
				r->st.crash_lost += committed_events - keep_events;
				rc->lost += committed_events - keep_events;
			}
		}
		cut_copy(r, pc, cpu, keep, keep_events, last || get64(r->copy + PKT_OFF(timestamp_end)) < get64(r->copy + PKT_OFF(timestamp_begin)), end_ts,
			 1, pkt);
		__atomic_store_n(&pc->ctl->read_subbufs, pc->ctl->read_subbufs + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&pc->ctl->read_events, pc->ctl->read_events + pkt->events, __ATOMIC_RELAXED);
		r->st.packets++;
		r->st.events += keep_events;
		r->st.bytes += keep;
		return 1;
	}
	return 0;
}

void rb_reader_wait(struct rb_reader *r, int timeout_ms)
{
	uint32_t *w = &r->rb->hdr->reader_wait;
	__atomic_store_n(w, 1, __ATOMIC_RELAXED);
	/* Pairs with the writer's fence in rb_wake_reader(): after it, either we
	 * see its closed sub-buffer or it sees our flag. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	struct ringtrace__rb *rb = r->rb;
	for (uint32_t c = 0; c < rb->ncpus; c++) {
		uint64_t rpos = r->cpu[c].rpos;
		uint64_t st = __atomic_load_n(&rb->cpu[c].ctl->state, __ATOMIC_ACQUIRE);
		uint64_t dist = ((st & RINGTRACE__POS_MASK) - rpos) & RINGTRACE__POS_MASK;
		/* Ready: a closed sub-buffer that is complete (one still waiting
		 * for a preempted or dead writer's commit is not: sleeping is
		 * right then, spinning would not help). */
		if (dist > rb->sb_mask + 1 &&
		    (dist > rb->buf_mask + 1 ||
		     rb_lap_committed(rb, &rb->cpu[c].slots[rb_slot_of(rb, rpos)], rpos) >= rb->sb_mask + 1)) {
			__atomic_store_n(w, 0, __ATOMIC_RELAXED);
			return;
		}
	}
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };
	syscall(SYS_futex, w, FUTEX_WAIT, 1, &ts, NULL, 0);
	__atomic_store_n(w, 0, __ATOMIC_RELAXED);
}

/* Lowest address first, one 8-byte load at a time: a record's header
 * precedes its payload and is stored after it (x86 keeps stores in order
 * and loads in order), so a header seen non-zero here has its payload
 * copied whole. memcpy makes no such promise about its order. */
static void forward_copy(char *dst, const char *src, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v = __atomic_load_n((const uint64_t *)(const void *)(src + i), __ATOMIC_RELAXED);
		memcpy(dst + i, &v, 8);
	}
	for (; i < n; i++)
		dst[i] = __atomic_load_n(src + i, __ATOMIC_RELAXED);
}

int rb_reader_peek(struct rb_reader *r, uint32_t cpu, rb_payload_size_fn fn, void *arg, uint64_t end_ts,
		   struct rb_packet *pkt)
{
	struct ringtrace__rb *rb = r->rb;
	if (cpu >= rb->ncpus)
		return -EINVAL;
	struct ringtrace__rb_percpu *pc = &rb->cpu[cpu];
	struct rb_rcpu *rc = &r->cpu[cpu];
	uint64_t sb = rb->sb_mask + 1;
	if (rc->held)
		return 0;
	uint64_t pos = __atomic_load_n(&pc->ctl->state, __ATOMIC_ACQUIRE) & RINGTRACE__POS_MASK;
	uint64_t dist = (pos - rc->rpos) & RINGTRACE__POS_MASK;
	if (dist == 0 || dist > rb->buf_mask + 1)
		return 0;
	uint64_t rpos = rc->rpos;
	struct ringtrace__rb_slot *s = &pc->slots[rb_slot_of(rb, rpos)];
	uint64_t ow = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
	if (RINGTRACE__OWN_LAP(ow) != rb_lap_tag(rb, rpos) || RINGTRACE__OWN_READ(ow) || (ow & RB_OWN_ZEROING))
		return 0;
	uint64_t bound = dist < sb ? dist : sb;
	forward_copy(r->copy, pc->data + (rpos & rb->buf_mask), bound);
	uint32_t magic;
	memcpy(&magic, r->copy, 4);
	if (magic != CTF_PACKET_MAGIC || bound < RINGTRACE__PKT_HDR)
		return 0; /* its opener has not written the header yet */
	/* Still the same lap: the copy is of this sub-buffer (overwrite mode
	 * reuses a slot only once it is closed, and we looked at it open). */
	if (__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) != ow)
		return 0;
	uint64_t events;
	size_t keep = rb_walk_records(r->copy, bound, fn, arg, &events);
	cut_copy(r, pc, cpu, keep, events, 1, end_ts, 0, pkt);
	return 1;
}
