/*
 * test_ringbuf.c - the ring buffer on one pinned thread: packet layout,
 * record headers, sub-buffer switches, both modes, loss accounting by
 * cause, remote commits, salvage of unwritten records, blocking mode with
 * a stalled consumer, and validation of damaged region headers.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "ringbuf/rb.h"

#define SB 4096u
#define NSB 4u

struct fixture {
	void *mem;
	uint64_t size;
	struct ringtrace__rb *rb;
	struct rb_reader *rd;
};

static struct ringtrace_event_desc ev_small = { 1, 3, RINGTRACE_ABI_VERSION, 0, "t", "small", "u64 n",
						__FILE__, 0, 0, 0 };
static struct ringtrace_event_desc ev_bigid = { 1, 40, RINGTRACE_ABI_VERSION, 0, "t", "bigid", "u64 n",
						__FILE__, 0, 0, 0 };

static int setup_mode_block(void **state, uint32_t mode, uint32_t block_us)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);

	struct fixture *f = calloc(1, sizeof(*f));
	struct rb_params p = { 0 };
	p.ncpus = rb_possible_cpus();
	p.sb_size = SB;
	p.nsb = NSB;
	p.mode = mode;
	p.clock = RINGTRACE__CLOCK_TSC;
	p.reg_size = 4096;
	p.block_us = block_us;
	memset(p.uuid, 0xab, 16);
	assert_int_equal(rb_region_size(&p, &f->size), 0);
	f->mem = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(f->mem != MAP_FAILED);
	assert_int_equal(rb_region_init(f->mem, f->size, &p), 0);
	assert_int_equal(rb_view_open(f->mem, f->size, &f->rb), 0);
#if RINGTRACE__RSEQ
	rb_set_rseq(f->rb, ringtrace__rseq_cpu() >= 0);
#endif
	assert_int_equal(rb_reader_new(f->rb, &f->rd), 0);
	ringtrace__rb_current = f->rb;
	*state = f;
	return 0;
}

static int setup_mode(void **state, uint32_t mode)
{
	return setup_mode_block(state, mode, 0);
}

/* Blocking mode: a writer waits 20 ms for room. */
static int setup_block(void **state)
{
	return setup_mode_block(state, RINGTRACE__MODE_DISCARD, 20000);
}

static int setup_discard(void **state)
{
	return setup_mode(state, RINGTRACE__MODE_DISCARD);
}

static int setup_overwrite(void **state)
{
	return setup_mode(state, RINGTRACE__MODE_OVERWRITE);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	ringtrace__rb_current = NULL;
	rb_reader_free(f->rd);
	rb_view_free(f->rb);
	munmap(f->mem, f->size);
	free(f);
	return 0;
}

static int fire(struct ringtrace_event_desc *d, uint64_t n)
{
	struct ringtrace__wctx c = { 0 };
	if (!ringtrace__reserve(&c, d, 8))
		return 0;
	memcpy(c.payload, &n, 8);
	ringtrace__commit(&c);
	return 1;
}

static uint64_t g64(const char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t g32(const char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static int size8(void *arg, uint32_t id, const char *p, size_t avail, size_t *ret);

/* Bytes of ringtrace:thread_name records seen by walk(). */
static size_t name_bytes;

/* Decode a packet's records: returns the number of user events and checks
 * their payloads count up from *next. */
static uint64_t walk(const struct rb_packet *pkt, uint64_t *next, int *saw_ext)
{
	size_t off = RINGTRACE__PKT_HDR;
	uint64_t n = 0;
	while (off < pkt->len) {
		uint32_t w = g32(pkt->data + off);
		uint32_t id = w & 31;
		size_t hl = 4;
		if (id == 31) {
			id = g32(pkt->data + off + 1);
			hl = 13;
			if (saw_ext)
				(*saw_ext)++;
		}
		if (id == RINGTRACE__ID_THREAD) {
			off += hl + 4;
			continue;
		}
		if (id == RINGTRACE__ID_THREAD_NAME) {
			/* once per thread, before its first event */
			assert_int_equal(g32(pkt->data + off + hl), ringtrace__tls.tid);
			size_t sz = hl + 4 + strlen(pkt->data + off + hl + 4) + 1;
			name_bytes += sz;
			off += sz;
			continue;
		}
		assert_true(id == 3 || id == 40);
		assert_int_equal(g64(pkt->data + off + hl), *next);
		(*next)++;
		n++;
		off += hl + 8;
	}
	assert_int_equal(off, pkt->len);
	return n;
}

static void test_packet_layout(void **state)
{
	struct fixture *f = *state;
	struct rb_packet pkt;
	assert_int_equal(rb_reader_get(f->rd, 0, &pkt), 0); /* nothing yet */
	uint64_t i = 0;
	/* Fill beyond one sub-buffer so that the first one closes. */
	while (i < 500)
		assert_true(fire(&ev_small, i++));
	assert_int_equal(rb_reader_get(f->rd, 0, &pkt), 1);
	const char *p = pkt.data;
	assert_int_equal(g32(p), 0xC1FC1FC1u);
	for (int k = 0; k < 16; k++)
		assert_int_equal((unsigned char)p[4 + k], 0xab);
	assert_int_equal(g32(p + 20), 0);       /* stream_id */
	assert_int_equal(g64(p + 24), 0);       /* stream_instance_id = cpu */
	assert_true(g64(p + 32) <= g64(p + 40)); /* begin <= end */
	assert_int_equal(g64(p + 48), pkt.len * 8);
	assert_int_equal(g64(p + 56), pkt.len * 8);
	assert_int_equal(g64(p + 64), 0);       /* packet_seq_num */
	assert_int_equal(g64(p + 72), 0);       /* nothing lost */
	assert_int_equal(g32(p + 80), 0);
	/* First record: the thread record with this thread's tid. */
	assert_int_equal(g32(p + 84) & 31, RINGTRACE__ID_THREAD);
	assert_int_equal(g32(p + 88), ringtrace__tls.tid);
	uint64_t next = 0;
	name_bytes = 0;
	assert_int_equal(walk(&pkt, &next, NULL), pkt.events);
	assert_true(pkt.events > 0 && pkt.events < 500);
	/* 12-byte records: header 4 + payload 8, none extended; the thread
	 * announces its name before its first event. */
	assert_true(name_bytes > 8);
	assert_int_equal(pkt.len, RINGTRACE__PKT_HDR + 8 + name_bytes + pkt.events * 12);
	rb_reader_put(f->rd, 0);
	/* The rest is salvaged; everything was read exactly once. */
	while (rb_reader_salvage(f->rd, 0, NULL, NULL, ringtrace__now(f->rb), &pkt) > 0)
		walk(&pkt, &next, NULL);
	assert_int_equal(next, 500);
}

static void test_extended_headers(void **state)
{
	struct fixture *f = *state;
	struct rb_packet pkt;
	uint64_t next = 0;
	int ext = 0;
	assert_true(fire(&ev_small, next++));
	/* Pretend the previous record is far in the past: the delta no
	 * longer fits in 27 bits and the header must be extended. */
	f->rb->cpu[0].ctl->last_ts = 1;
	assert_true(fire(&ev_small, next++));
	assert_true(fire(&ev_small, next++)); /* compact again */
	assert_true(fire(&ev_bigid, next++)); /* id >= 31: always extended */
	uint64_t got = 0;
	while (rb_reader_salvage(f->rd, 0, NULL, NULL, ringtrace__now(f->rb), &pkt) > 0)
		walk(&pkt, &got, &ext);
	assert_int_equal(got, next);
	assert_int_equal(ext, 2);
}

static void test_discard_full(void **state)
{
	struct fixture *f = *state;
	uint64_t ok = 0, failed = 0;
	for (uint64_t i = 0; i < 5000; i++) {
		if (fire(&ev_small, ok))
			ok++;
		else
			failed++;
	}
	struct ringtrace__rb_cpu *ctl = f->rb->cpu[0].ctl;
	assert_true(failed > 0);
	assert_int_equal(ctl->lost_full, failed);
	assert_int_equal(ctl->lost_overwrite, 0);
	/* The oldest events are kept, in order, with no gap. */
	struct rb_packet pkt;
	uint64_t next = 0;
	while (rb_reader_get(f->rd, 0, &pkt) > 0) {
		walk(&pkt, &next, NULL);
		rb_reader_put(f->rd, 0);
	}
	/* Space is back: writing works again and the loss shows in the
	 * next packet's events_discarded. */
	assert_true(next < ok); /* the open sub-buffer is not out yet */
	assert_true(fire(&ev_small, ok));
	uint64_t after = 0;
	while (rb_reader_salvage(f->rd, 0, NULL, NULL, ringtrace__now(f->rb), &pkt) > 0) {
		if (g64(pkt.data + 72) == failed)
			after = 1;
		uint64_t n2 = next;
		walk(&pkt, &n2, NULL);
		next = n2;
	}
	assert_int_equal(after, 1);
	assert_int_equal(next, ok + 1);
}

/*
 * Blocking mode with nobody reading (a stalled recorder): the first event
 * that finds the buffer full waits the whole timeout, then is dropped;
 * the next ones are dropped at once (no wait) until the consumer takes a
 * sub-buffer; after that a full buffer is waited for again.
 */
static void test_block_stall(void **state)
{
	struct fixture *f = *state;
	struct ringtrace__rb_cpu *ctl = f->rb->cpu[0].ctl;
	assert_int_equal(f->rb->block_us, 20000);
	/* The salvage tests leave reservations uncommitted, i.e. this
	 * thread's `nest` raised: a probe nested in another never waits. */
	ringtrace__tls.nest = 0;
	uint64_t ok = 0;
	while (fire(&ev_small, ok))
		ok++;
	assert_true(ok > 0);
	assert_int_equal(ctl->block_waits, 1);
	assert_int_equal(ctl->block_timeouts, 1);
	assert_int_equal(ctl->lost_full, 1);
	/* Each timed-out wait lasted the whole timeout. */
	assert_true(ctl->block_ns >= 20000000u);
	for (int i = 0; i < 100; i++)
		assert_false(fire(&ev_small, 0));
	assert_int_equal(ctl->block_waits, 1);
	assert_int_equal(ctl->lost_full, 101);
	/* The consumer moves: room, and the next full buffer is waited for. */
	struct rb_packet pkt;
	assert_int_equal(rb_reader_get(f->rd, 0, &pkt), 1);
	rb_reader_put(f->rd, 0);
	assert_true(fire(&ev_small, ok));
	while (fire(&ev_small, ok))
		;
	assert_int_equal(ctl->block_waits, 2);
	assert_int_equal(ctl->block_timeouts, 2);
	assert_int_equal(ctl->lost_full, 102);
}

/* A probe that interrupted another of its thread (a signal handler: its
 * `nest` counts both) drops at once: the room it would wait for may be
 * the interrupted reservation's. */
static void test_block_nested(void **state)
{
	struct fixture *f = *state;
	struct ringtrace__rb_cpu *ctl = f->rb->cpu[0].ctl;
	ringtrace__tls.nest = 1; /* the interrupted probe */
	uint64_t ok = 0;
	while (fire(&ev_small, ok))
		ok++;
	assert_true(ok > 0);
	assert_int_equal(ringtrace__tls.nest, 1);
	assert_int_equal(ctl->block_waits, 0);
	assert_int_equal(ctl->lost_full, 1);
	ringtrace__tls.nest = 0;
}

/* Overwrite mode never waits, whatever the creator asked. */
static void test_block_overwrite(void **state)
{
	struct fixture *f = *state;
	for (uint64_t i = 0; i < 5000; i++)
		fire(&ev_small, i);
	assert_int_equal(f->rb->block_us, 0);
	assert_int_equal(f->rb->cpu[0].ctl->block_waits, 0);
	assert_true(f->rb->cpu[0].ctl->lost_overwrite > 0);
}

static int setup_block_overwrite(void **state)
{
	return setup_mode_block(state, RINGTRACE__MODE_OVERWRITE, 20000);
}

static void test_overwrite_counts(void **state)
{
	struct fixture *f = *state;
	uint64_t n = 20000;
	for (uint64_t i = 0; i < n; i++)
		assert_true(fire(&ev_small, i));
	struct ringtrace__rb_cpu *ctl = f->rb->cpu[0].ctl;
	assert_int_equal(ctl->lost_full, 0);
	assert_true(ctl->lost_overwrite > 0);
	/* What is left is the newest events, contiguous up to the last. */
	struct rb_packet pkt;
	uint64_t read = 0, first = UINT64_MAX, next = 0, disc = 0;
	while (rb_reader_salvage(f->rd, 0, NULL, NULL, ringtrace__now(f->rb), &pkt) > 0) {
		uint64_t start = g64(pkt.data + RINGTRACE__PKT_HDR + 8 + 4);
		if (first == UINT64_MAX)
			next = first = start;
		read += walk(&pkt, &next, NULL);
		disc = g64(pkt.data + 72);
	}
	assert_int_equal(next, n);
	assert_int_equal(first, ctl->lost_overwrite);
	assert_int_equal(read + ctl->lost_overwrite, n);
	/* The trace alone says how many were overwritten: the last packet's
	 * events_discarded counts them. */
	assert_int_equal(disc, ctl->lost_overwrite);
	assert_int_equal(rb_cpu_written(&f->rb->cpu[0], NSB), n);
}

/*
 * A writer that closes a packet stores the loss count after its state
 * commit; preempted there, it stores a larger sum than the closer of the
 * next packet did. The reader hands the packets out with a running total
 * that never goes down (else a reader sees a loss of nearly 2^64).
 */
static void test_discarded_never_decreases(void **state)
{
	struct fixture *f = *state;
	uint64_t i = 0;
	/* Two closed packets and an open one. */
	while (((__atomic_load_n(&f->rb->cpu[0].ctl->state, __ATOMIC_ACQUIRE) & RINGTRACE__POS_MASK) / SB) < 2)
		assert_true(fire(&ev_small, i++));
	char *first = f->rb->cpu[0].data;
	assert_int_equal(g64(first + 72), 0);
	assert_int_equal(g64(first + SB + 72), 0);
	uint64_t late = 7;
	memcpy(first + 72, &late, 8);
	struct rb_packet pkt;
	uint64_t prev = 0, n = 0;
	while (rb_reader_salvage(f->rd, 0, NULL, NULL, ringtrace__now(f->rb), &pkt) > 0) {
		uint64_t d = g64(pkt.data + 72);
		assert_true(d >= prev);
		prev = d;
		n++;
	}
	assert_int_equal(n, 3);
	assert_int_equal(prev, late);
}

static void test_too_big(void **state)
{
	struct fixture *f = *state;
	struct ringtrace__wctx c = { 0 };
	assert_int_equal(ringtrace__reserve(&c, &ev_small, SB), 0);
	assert_int_equal(f->rb->cpu[0].ctl->lost_too_big, 1);
	assert_int_equal(ringtrace__reserve(&c, &ev_small, SB - 200), 1);
	memset(c.payload, 0, SB - 200);
	ringtrace__commit(&c);
}

static int size8(void *arg, uint32_t id, const char *p, size_t avail, size_t *ret)
{
	(void)arg;
	if (id == RINGTRACE__ID_THREAD_NAME && avail > 4 && memchr(p + 4, 0, avail - 4)) {
		*ret = 4 + strlen(p + 4) + 1;
		return 0;
	}
	if ((id != 3 && id != 40) || avail < 8)
		return -EBADMSG;
	*ret = 8;
	return 0;
}

static void test_salvage_unwritten(void **state)
{
	struct fixture *f = *state;
	for (uint64_t i = 0; i < 10; i++)
		assert_true(fire(&ev_small, i));
	/* A writer that died between reserve and commit... */
	struct ringtrace__wctx hole;
	assert_int_equal(ringtrace__reserve(&hole, &ev_small, 8), 1);
	/* ...and a record after it, committed. */
	assert_true(fire(&ev_small, 99));
	struct rb_packet pkt;
	assert_int_equal(rb_reader_get(f->rd, 0, &pkt), 0); /* open, incomplete */
	assert_int_equal(rb_reader_salvage(f->rd, 0, size8, NULL, ringtrace__now(f->rb), &pkt), 1);
	assert_int_equal(pkt.salvaged, 1);
	assert_int_equal(pkt.events, 10); /* cut at the record never written */
	uint64_t next = 0;
	assert_int_equal(walk(&pkt, &next, NULL), 10);
	assert_int_equal(g64(pkt.data + 48), pkt.len * 8);
	assert_true(g64(pkt.data + 40) >= g64(pkt.data + 32));
	assert_int_equal(rb_reader_salvage(f->rd, 0, size8, NULL, ringtrace__now(f->rb), &pkt), 0);
}

/*
 * A writer died holding a reservation in packet 0 (a thread killed at
 * exit). Packet 1 closed complete; then the ring filled and dropped. The
 * salvage gives packet 0 the loss count of the end, packet 1 the one of
 * its close: the total handed out must still never go down (dump printed
 * a loss near 2^64 from such a pair).
 */
static void test_salvage_discarded_order(void **state)
{
	struct fixture *f = *state;
	uint64_t i = 0;
	assert_true(fire(&ev_small, i++));
	struct ringtrace__wctx hole;
	assert_int_equal(ringtrace__reserve(&hole, &ev_small, 8), 1);
	/* Fill the ring: packet 0 cannot be taken, so writers stop at its
	 * slot and drop. */
	uint64_t failed = 0;
	for (int k = 0; k < 5000; k++)
		if (!fire(&ev_small, i))
			failed++;
		else
			i++;
	assert_true(failed > 0);
	assert_int_equal(f->rb->cpu[0].ctl->lost_full, failed);
	struct rb_packet pkt;
	uint64_t prev = 0, n = 0;
	while (rb_reader_salvage(f->rd, 0, size8, NULL, ringtrace__now(f->rb), &pkt) > 0) {
		uint64_t d = g64(pkt.data + 72);
		assert_true(d >= prev);
		prev = d;
		n++;
	}
	assert_true(n >= 2);
	assert_int_equal(prev, failed);
}

static void test_remote_commit(void **state)
{
	struct fixture *f = *state;
	struct rb_packet pkt;
	/* The atomic path (a migrated thread) completes sub-buffers too. */
	uint64_t i;
	for (i = 0; i < 700; i++) {
		struct ringtrace__wctx c = { 0 };
		assert_int_equal(ringtrace__reserve(&c, &ev_small, 8), 1);
		memcpy(c.payload, &i, 8);
		ringtrace__put_hdr(c.rec, c.id, c.ts, (int)c.ext);
		ringtrace__commit_slow(c.rb, c.cpu, c.slot, c.len, 1);
	}
	assert_true(f->rb->cpu[0].slots[0].remote_events > 0);
	uint64_t next = 0, n = 0;
	while (rb_reader_get(f->rd, 0, &pkt) > 0) {
		uint64_t k = walk(&pkt, &next, NULL);
		assert_int_equal(k, pkt.events); /* remote event counts add up */
		n += k;
		rb_reader_put(f->rd, 0);
	}
	assert_true(n > 0);
	while (rb_reader_salvage(f->rd, 0, size8, NULL, ringtrace__now(f->rb), &pkt) > 0)
		n += walk(&pkt, &next, NULL);
	assert_int_equal(n, 700);
}

/*
 * More than 2^16 laps of every slot (the owner words' lap tags wrap, byte
 * counts must not): writing and draining in turn, nothing may be lost.
 */
static void test_lap_tags_wrap(void **state)
{
	struct fixture *f = *state;
	struct rb_packet pkt;
	uint64_t next = 0, read = 0, i = 0;
	/* 4K x 4 slots, ~339 records a sub-buffer: 2^16 laps of each slot. */
	uint64_t want_packets = (UINT64_C(1) << 16) * NSB + 3 * NSB, packets = 0;
	while (packets < want_packets) {
		for (int k = 0; k < 300; k++) /* less than a sub-buffer */
			assert_true(fire(&ev_small, i++));
		while (rb_reader_get(f->rd, 0, &pkt) > 0) {
			read += walk(&pkt, &next, NULL);
			packets++;
			rb_reader_put(f->rd, 0);
		}
	}
	while (rb_reader_salvage(f->rd, 0, size8, NULL, ringtrace__now(f->rb), &pkt) > 0)
		read += walk(&pkt, &next, NULL);
	struct rb_reader_stats st;
	rb_reader_stats(f->rd, &st);
	assert_int_equal(f->rb->cpu[0].ctl->lost_full, 0);
	assert_int_equal(st.corrupt, 0);
	assert_int_equal(read, i);
	assert_int_equal(next, i);
}

/*
 * Overwrite mode, a reused sub-buffer: a record reserved and never written
 * (its thread died) followed by a committed one. Salvage must keep what is
 * before the unwritten record, never an older lap's bytes in its place, and
 * count the committed record after it as lost.
 */
static void test_salvage_overwrite_hole(void **state)
{
	struct fixture *f = *state;
	uint64_t i = 0;
	for (; i < 20000; i++) /* lap every slot many times */
		assert_true(fire(&ev_small, i));
	struct ringtrace__wctx hole = { 0 };
	assert_int_equal(ringtrace__reserve(&hole, &ev_small, 8), 1);
	ringtrace__rseq_clear();
	assert_true(fire(&ev_small, 99999)); /* committed, after the hole */
	struct rb_packet pkt;
	uint64_t last = 0, n = 0, first = UINT64_MAX;
	struct rb_reader_stats st;
	while (rb_reader_salvage(f->rd, 0, size8, NULL, ringtrace__now(f->rb), &pkt) > 0) {
		uint64_t start = g64(pkt.data + RINGTRACE__PKT_HDR + 8 + 4);
		if (first == UINT64_MAX)
			last = first = start;
		n += walk(&pkt, &last, NULL);
	}
	rb_reader_stats(f->rd, &st);
	assert_int_equal(last, i);           /* up to the last one before the hole */
	assert_int_equal(n, i - first);      /* contiguous, nothing invented */
	assert_int_equal(st.crash_lost, 1);  /* 99999: committed, cut off */
	assert_int_equal(n + f->rb->cpu[0].ctl->lost_overwrite + st.crash_lost, i + 1);
}

static void test_view_validation(void **state)
{
	(void)state;
	struct rb_params p = { 0 };
	p.ncpus = 2;
	p.sb_size = SB;
	p.nsb = NSB;
	p.reg_size = 4096;
	uint64_t size;
	assert_int_equal(rb_region_size(&p, &size), 0);
	char *mem = calloc(1, size);
	struct ringtrace__shm_header *h = (void *)mem;
	struct ringtrace__rb *rb;
	assert_int_equal(rb_region_init(mem, size, &p), 0);
	assert_int_equal(rb_view_open(mem, size, &rb), 0);
	rb_view_free(rb);

	assert_int_equal(rb_view_open(mem, size - 1, &rb), -EBADMSG); /* truncated */
	assert_int_equal(rb_view_open(mem, 16, &rb), -EBADMSG);
	h->magic ^= 1;
	assert_int_equal(rb_view_open(mem, size, &rb), -EBADMSG);
	h->magic ^= 1;
	h->version = 99;
	assert_int_equal(rb_view_open(mem, size, &rb), -EPROTO);
	h->version = RINGTRACE__SHM_VERSION;
	h->data_rel += 4096; /* an offset that does not match the layout */
	assert_int_equal(rb_view_open(mem, size, &rb), -EBADMSG);
	h->data_rel -= 4096;
	h->ncpus = 100000;
	assert_int_equal(rb_view_open(mem, size, &rb), -EBADMSG);
	h->ncpus = 2;
	h->sb_shift = 40;
	assert_int_equal(rb_view_open(mem, size, &rb), -EBADMSG);
	h->sb_shift = 12;
	h->mode = 7;
	assert_int_equal(rb_view_open(mem, size, &rb), -EBADMSG);
	h->mode = 0;
	assert_int_equal(rb_view_open(mem, size, &rb), 0);
	rb_view_free(rb);
	free(mem);

	p.sb_size = 3000; /* not a power of two */
	assert_int_equal(rb_region_size(&p, &size), -EINVAL);
	p.sb_size = SB;
	p.nsb = 1;
	assert_int_equal(rb_region_size(&p, &size), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_packet_layout, setup_discard, teardown),
		cmocka_unit_test_setup_teardown(test_extended_headers, setup_discard, teardown),
		cmocka_unit_test_setup_teardown(test_discard_full, setup_discard, teardown),
		cmocka_unit_test_setup_teardown(test_overwrite_counts, setup_overwrite, teardown),
		cmocka_unit_test_setup_teardown(test_discarded_never_decreases, setup_discard, teardown),
		cmocka_unit_test_setup_teardown(test_too_big, setup_discard, teardown),
		cmocka_unit_test_setup_teardown(test_salvage_unwritten, setup_discard, teardown),
		cmocka_unit_test_setup_teardown(test_salvage_discarded_order, setup_discard, teardown),
		cmocka_unit_test_setup_teardown(test_remote_commit, setup_discard, teardown),
		cmocka_unit_test_setup_teardown(test_lap_tags_wrap, setup_discard, teardown),
		cmocka_unit_test_setup_teardown(test_salvage_overwrite_hole, setup_overwrite, teardown),
		cmocka_unit_test_setup_teardown(test_block_stall, setup_block, teardown),
		cmocka_unit_test_setup_teardown(test_block_nested, setup_block, teardown),
		cmocka_unit_test_setup_teardown(test_block_overwrite, setup_block_overwrite, teardown),
		cmocka_unit_test(test_view_validation),
	};
	return cmocka_run_group_tests_name("ringbuf", tests, NULL, NULL);
}
