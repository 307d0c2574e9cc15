/*
 * stress_ringbuf.c - many writers on both CPUs, one deliberately slow
 * reader, in discard and overwrite mode.
 *
 * Writers fire self-describing events {tid, seq, checksum} through the
 * real inline fast path (rseq) or the atomic fallback; some yield between
 * reserve and commit so that they are preempted or migrate with a record in
 * flight. The reader decodes every packet and checks:
 *   - every record's checksum (no corruption), which covers the high bits
 *     of the time the writer was given: the reader rebuilds that time;
 *   - the tid in the payload equals the thread the stream's last
 *     ringtrace:thread record named (attribution is exact);
 *   - per thread and CPU, sequence numbers strictly increase, and no
 *     (thread, seq) is read twice;
 *   - timestamps rebuilt from 27-bit compact headers never go backwards;
 *   - each packet's event count equals the records in it;
 *   - per CPU, each packet's events_discarded (a running total of every
 *     event lost, overwritten ones included) never goes down and never
 *     exceeds the events the writers had tried to write so far;
 * and at the end, exactly:
 *   failed reserves == lost_full + lost_too_big + lost_nocpu
 *   successful reserves == events read + lost_overwrite
 *   per CPU: written (committed + dropped) == read + the last events_discarded.
 *
 * With --block US (discard mode) writers wait for room up to US
 * microseconds (src/ringbuf/rb_block.c) and the slow reader wakes them;
 * then, besides the above: some writer waited, and no event was lost
 * unless a wait timed out (a drop without a whole wait happens only once
 * one did, on a stalled consumer).
 *
 * Usage: stress_ringbuf [--mode discard|overwrite] [--events N] [--threads T]
 *                       [--no-rseq] [--yield] [--clock tsc|monotonic] [--block US]
 * With --clock monotonic the rseq path reads the clock outside its critical
 * sections (ringtrace__rseq_reserve_any()): the timestamp order above is
 * what that path must keep.
 * Runs under TSan in CI (the TSan build always takes the atomic path).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ringbuf/rb.h"

#define EV_ID 3
#define MAX_THREADS 16

static struct ringtrace_event_desc ev = { 1, EV_ID, RINGTRACE_ABI_VERSION, 0, "stress", "ev",
					  "u32 tid;u64 seq;u32 check", __FILE__, 0, 0, 0 };

struct writer {
	pthread_t th;
	int idx;
	uint32_t tid;
	uint64_t ok, failed;
	int pin;
};

static struct ringtrace__rb *rb;
static uint64_t events_per_thread = 200000;
static int nthreads = 4;
static int do_yield;
static atomic_int writers_done;
static int failures;

static uint32_t check_of(uint32_t tid, uint64_t seq)
{
	uint64_t h = (seq + 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull ^ tid;
	h ^= h >> 31;
	return (uint32_t)(h * 0x94d049bb133111ebull >> 32);
}

/* The bits of a timestamp above those of a compact header: the writer
 * folds those of the time it was given into the checksum, so that a
 * record whose time the reader rebuilds wrong (a compact header after a
 * later time reads as a 2^27 wrap, not as a step back) fails it. */
static uint32_t ts_fold(uint64_t ts)
{
	return (uint32_t)(ts >> RINGTRACE__TS_BITS) ^ (uint32_t)(ts >> (RINGTRACE__TS_BITS + 32));
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	if (w->pin >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->pin, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	__atomic_store_n(&w->tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	for (uint64_t seq = 0; seq < events_per_thread; seq++) {
		struct ringtrace__wctx c;
		if (!ringtrace__reserve(&c, &ev, 16)) {
			/* Relaxed: the reader bounds events_discarded with it. */
			__atomic_store_n(&w->failed, w->failed + 1, __ATOMIC_RELAXED);
			continue;
		}
		uint32_t chk = check_of(w->tid, seq) ^ ts_fold(c.ts);
		memcpy(c.payload, &w->tid, 4);
		memcpy(c.payload + 4, &seq, 8);
		if (do_yield && (seq % 997) == 0)
			sched_yield();
		memcpy(c.payload + 12, &chk, 4);
		/* Counted before the commit: a reader that sees the event's
		 * loss (after the commit) sees it counted (both relaxed; the
		 * commit's release orders them). */
		__atomic_store_n(&w->ok, w->ok + 1, __ATOMIC_RELAXED);
		ringtrace__commit(&c);
	}
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

static struct writer writers[MAX_THREADS];
static uint64_t last_seq[MAX_THREADS][64];
static uint8_t *seen[MAX_THREADS];
static uint64_t events_read;
/* Events read with an extended header: one is needed only after a gap of
 * 2^27 clock ticks on a CPU (or when the CPU's last_ts lags), so few. A
 * writer whose clock and critical section disagree (a TSC read inside the
 * section against a buffer on CLOCK_MONOTONIC) overflows on every event
 * and falls back to an extended header through the slow path. */
static uint64_t events_ext;
/* Per CPU: events read, the last events_discarded seen (and whether any). */
static uint64_t cpu_read[RB_MAX_CPUS];
static uint64_t cpu_disc[RB_MAX_CPUS];
static uint8_t cpu_has_disc[RB_MAX_CPUS];

#define FAIL(...)                                        \
	do {                                             \
		if (failures++ < 20)                     \
			fprintf(stderr, __VA_ARGS__);    \
	} while (0)

static int writer_of(uint32_t tid)
{
	for (int i = 0; i < nthreads; i++)
		if (__atomic_load_n(&writers[i].tid, __ATOMIC_ACQUIRE) == tid)
			return i;
	return -1;
}

static int payload_size(void *arg, uint32_t id, const char *p, size_t avail, size_t *ret)
{
	(void)arg;
	if (id == RINGTRACE__ID_THREAD_NAME && avail > 4) {
		const char *nul = memchr(p + 4, 0, avail - 4);
		if (!nul)
			return -EBADMSG;
		*ret = (size_t)(nul - p) + 1;
		return 0;
	}
	if (id != EV_ID || avail < 16)
		return -EBADMSG;
	*ret = 16;
	return 0;
}

/* Events the writers had tried to write (reserved or dropped) so far. */
static uint64_t attempts_so_far(void)
{
	uint64_t n = 0;
	for (int i = 0; i < nthreads; i++)
		n += __atomic_load_n(&writers[i].ok, __ATOMIC_RELAXED) +
		     __atomic_load_n(&writers[i].failed, __ATOMIC_RELAXED);
	return n;
}

/* A loss count of a stream only grows, and cannot count more than was
 * written: a value that went down is what a reader turns into a loss of
 * nearly 2^64 events. */
static void check_discarded(const struct rb_packet *pkt)
{
	uint64_t disc;
	memcpy(&disc, pkt->data + 72, 8);
	uint32_t c = pkt->cpu;
	if (cpu_has_disc[c] && disc < cpu_disc[c])
		FAIL("cpu %u: events_discarded goes down from %llu to %llu\n", c,
		     (unsigned long long)cpu_disc[c], (unsigned long long)disc);
	/* A writer counts a drop in `failed` just after the ring counted it:
	 * at most one such attempt per writer is not in the sum yet. */
	uint64_t bound = attempts_so_far() + (uint64_t)nthreads;
	if (disc > bound)
		FAIL("cpu %u: events_discarded %llu exceeds the %llu events written so far\n", c,
		     (unsigned long long)disc, (unsigned long long)bound);
	cpu_disc[c] = disc;
	cpu_has_disc[c] = 1;
}

static void check_packet(const struct rb_packet *pkt)
{
	const char *p = pkt->data;
	uint64_t ts, ts_begin, ts_end;
	check_discarded(pkt);
	memcpy(&ts_begin, p + 32, 8);
	memcpy(&ts_end, p + 40, 8);
	ts = ts_begin;
	uint32_t cur_tid = 0;
	uint64_t n = 0;
	size_t off = RINGTRACE__PKT_HDR;
	while (off < pkt->len) {
		uint32_t w;
		memcpy(&w, p + off, 4);
		uint32_t id = w & 31;
		uint64_t t;
		size_t hl = 4;
		if (id == 31) {
			memcpy(&id, p + off + 1, 4);
			memcpy(&t, p + off + 5, 8);
			hl = 13;
		} else {
			uint64_t low = w >> 5, mask = (UINT64_C(1) << 27) - 1;
			t = (ts & ~mask) | low;
			if (t < ts)
				t += mask + 1;
		}
		if (t < ts)
			FAIL("cpu %u: time goes back %llu -> %llu\n", pkt->cpu, (unsigned long long)ts,
			     (unsigned long long)t);
		ts = t;
		if (id == RINGTRACE__ID_THREAD) {
			memcpy(&cur_tid, p + off + hl, 4);
			off += hl + 4;
			continue;
		}
		if (id == RINGTRACE__ID_THREAD_NAME) {
			/* Each writer names itself once, before its first event. */
			uint32_t named;
			memcpy(&named, p + off + hl, 4);
			if (named != cur_tid)
				FAIL("cpu %u: thread name of %u in a stream of %u\n", pkt->cpu, named, cur_tid);
			size_t sz;
			if (payload_size(NULL, id, p + off + hl, pkt->len - off - hl, &sz) < 0) {
				FAIL("cpu %u: bad thread name record\n", pkt->cpu);
				return;
			}
			off += hl + sz;
			continue;
		}
		if (id != EV_ID || off + hl + 16 > pkt->len) {
			FAIL("cpu %u: bad record id %u at %zu\n", pkt->cpu, id, off);
			return;
		}
		uint32_t tid, chk;
		uint64_t seq;
		memcpy(&tid, p + off + hl, 4);
		memcpy(&seq, p + off + hl + 4, 8);
		memcpy(&chk, p + off + hl + 12, 4);
		off += hl + 16;
		n++;
		if (hl == 13)
			events_ext++;
		if (chk != (check_of(tid, seq) ^ ts_fold(t))) {
			FAIL("cpu %u: corrupt record tid %u seq %llu, or its time %llu rebuilt wrong (written with high bits %#x)\n",
			     pkt->cpu, tid, (unsigned long long)seq, (unsigned long long)t,
			     chk ^ check_of(tid, seq));
			continue;
		}
		if (tid != cur_tid)
			FAIL("cpu %u: record of tid %u attributed to %u\n", pkt->cpu, tid, cur_tid);
		int wi = writer_of(tid);
		if (wi < 0 || seq >= events_per_thread) {
			FAIL("unknown writer %u\n", tid);
			continue;
		}
		uint64_t *last = &last_seq[wi][pkt->cpu % 64];
		if (*last && seq + 1 <= *last)
			FAIL("tid %u cpu %u: seq %llu after %llu\n", tid, pkt->cpu, (unsigned long long)seq,
			     (unsigned long long)(*last - 1));
		*last = seq + 1;
		if (seen[wi][seq])
			FAIL("tid %u: seq %llu read twice\n", tid, (unsigned long long)seq);
		seen[wi][seq] = 1;
	}
	if (ts > ts_end)
		FAIL("cpu %u: record after timestamp_end\n", pkt->cpu);
	if (n != pkt->events)
		FAIL("cpu %u: packet says %llu events, holds %llu\n", pkt->cpu,
		     (unsigned long long)pkt->events, (unsigned long long)n);
	events_read += n;
	cpu_read[pkt->cpu] += n;
}

static void drain(struct rb_reader *r, int slow)
{
	struct rb_packet pkt;
	for (uint32_t c = 0; c < rb->ncpus; c++) {
		int got = 0;
		while (rb_reader_get(r, c, &pkt) > 0) {
			check_packet(&pkt);
			rb_reader_put(r, c);
			/* Deliberately slow: the writers must fill the ring. */
			if (slow && (++got % 3) == 0)
				usleep(200);
		}
	}
}

static int parse_mode(const char *s)
{
	if (!strcmp(s, "discard"))
		return RINGTRACE__MODE_DISCARD;
	if (!strcmp(s, "overwrite"))
		return RINGTRACE__MODE_OVERWRITE;
	fprintf(stderr, "stress_ringbuf: unknown mode '%s'\n", s);
	exit(2);
}

int main(int argc, char **argv)
{
	int mode = RINGTRACE__MODE_DISCARD, no_rseq = 0;
	uint32_t block_us = 0;
	uint32_t clock = RINGTRACE__CLOCK_TSC;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = parse_mode(argv[++i]);
		else if (!strcmp(argv[i], "--events") && i + 1 < argc)
			events_per_thread = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--clock") && i + 1 < argc && !strcmp(argv[i + 1], "tsc"))
			clock = RINGTRACE__CLOCK_TSC, i++;
		else if (!strcmp(argv[i], "--clock") && i + 1 < argc && !strcmp(argv[i + 1], "monotonic"))
			clock = RINGTRACE__CLOCK_MONOTONIC, i++;
		else if (!strcmp(argv[i], "--no-rseq"))
			no_rseq = 1;
		else if (!strcmp(argv[i], "--yield"))
			do_yield = 1;
		else if (!strcmp(argv[i], "--block") && i + 1 < argc)
			block_us = (uint32_t)strtoul(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "usage: stress_ringbuf [--mode discard|overwrite] [--events N] [--threads T] [--no-rseq] [--yield] [--clock tsc|monotonic] [--block US]\n");
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > MAX_THREADS)
		nthreads = 4;

	struct rb_params p = { 0 };
	p.ncpus = rb_possible_cpus();
	p.sb_size = 4096;
	p.nsb = 4;
	p.mode = (uint32_t)mode;
	p.clock = clock;
	p.reg_size = 4096;
	p.block_us = block_us;
	memset(p.uuid, 0x5a, sizeof(p.uuid));
	uint64_t size;
	if (rb_region_size(&p, &size) < 0)
		return 2;
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED || rb_region_init(mem, size, &p) < 0 || rb_view_open(mem, size, &rb) < 0) {
		fprintf(stderr, "stress_ringbuf: cannot set up the region\n");
		return 2;
	}
#if RINGTRACE__RSEQ
	rb_set_rseq(rb, !no_rseq && ringtrace__rseq_cpu() >= 0);
#else
	(void)no_rseq;
	rb_set_rseq(rb, 0);
#endif
	__atomic_store_n(&ringtrace__rb_current, rb, __ATOMIC_RELEASE);

	for (int i = 0; i < nthreads; i++) {
		seen[i] = calloc(events_per_thread, 1);
		writers[i].idx = i;
		/* Half pinned (one per CPU in turn), half free to migrate. */
		writers[i].pin = (i % 2 == 0) ? (i / 2) % 2 : -1;
		if (pthread_create(&writers[i].th, NULL, writer_main, &writers[i]) != 0)
			return 2;
	}
	struct rb_reader *r;
	if (rb_reader_new(rb, &r) < 0)
		return 2;
	while (atomic_load(&writers_done) < nthreads)
		drain(r, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(writers[i].th, NULL);
	drain(r, 0);
	struct rb_packet pkt;
	for (uint32_t c = 0; c < rb->ncpus; c++)
		while (rb_reader_salvage(r, c, payload_size, NULL, ringtrace__now(rb), &pkt) > 0)
			check_packet(&pkt);

	uint64_t ok = 0, failed = 0, lf = 0, lo = 0, lt = 0, ln = 0, bw = 0, bt = 0;
	for (int i = 0; i < nthreads; i++) {
		ok += writers[i].ok;
		failed += writers[i].failed;
	}
	for (uint32_t c = 0; c < rb->ncpus; c++) {
		lf += rb->cpu[c].ctl->lost_full;
		lo += rb->cpu[c].ctl->lost_overwrite;
		lt += rb->cpu[c].ctl->lost_too_big;
		ln += rb->cpu[c].ctl->lost_nocpu;
		bw += rb->cpu[c].ctl->block_waits;
		bt += rb->cpu[c].ctl->block_timeouts;
	}
	struct rb_reader_stats rs;
	rb_reader_stats(r, &rs);
	printf("mode %s, %s, clock %s, %d threads x %llu: written %llu, read %llu, lost: full %llu overwritten %llu too-big %llu no-cpu %llu; torn copies %llu; extended headers %llu\n",
	       mode ? "overwrite" : "discard", rb->use_rseq ? "rseq" : "atomic",
	       rb->clock_tsc ? "tsc" : "monotonic", nthreads,
	       (unsigned long long)events_per_thread, (unsigned long long)(ok + failed),
	       (unsigned long long)events_read, (unsigned long long)lf, (unsigned long long)lo,
	       (unsigned long long)lt, (unsigned long long)ln, (unsigned long long)rs.torn,
	       (unsigned long long)events_ext);
	if (block_us) {
		printf("blocking %u us: %llu waits, %llu timed out\n", block_us, (unsigned long long)bw,
		       (unsigned long long)bt);
		if (mode == RINGTRACE__MODE_DISCARD && bw == 0)
			FAIL("blocking mode: no writer waited for the slow reader\n");
		if (mode == RINGTRACE__MODE_OVERWRITE && bw != 0)
			FAIL("overwrite mode: %llu writers waited\n", (unsigned long long)bw);
		if (mode == RINGTRACE__MODE_DISCARD && bt == 0 && lf != 0)
			FAIL("blocking mode: %llu events lost to a full buffer, no wait timed out\n",
			     (unsigned long long)lf);
	}
	if (failed != lf + lt + ln)
		FAIL("dropped at reserve %llu != counted %llu\n", (unsigned long long)failed,
		     (unsigned long long)(lf + lt + ln));
	if (ok != events_read + lo)
		FAIL("reserved %llu != read %llu + overwritten %llu\n", (unsigned long long)ok,
		     (unsigned long long)events_read, (unsigned long long)lo);
	/* Per stream: what the writers put in (events committed in its slots,
	 * and those they dropped) is what a trace of it holds, its events and
	 * its last events_discarded. */
	for (uint32_t c = 0; c < rb->ncpus; c++) {
		const struct ringtrace__rb_cpu *cc = rb->cpu[c].ctl;
		uint64_t written = cc->lost_full + cc->lost_too_big + cc->lost_nocpu;
		for (uint32_t k = 0; k < (1u << rb->nsb_shift); k++)
			written += rb->cpu[c].slots[k].local_events + rb->cpu[c].slots[k].remote_events;
		if (written != cpu_read[c] + cpu_disc[c])
			FAIL("cpu %u: written %llu != read %llu + events_discarded %llu\n", c,
			     (unsigned long long)written, (unsigned long long)cpu_read[c],
			     (unsigned long long)cpu_disc[c]);
	}
	if (events_ext * 2 > events_read)
		FAIL("%llu of %llu events read have an extended header: the writers' times overflow\n",
		     (unsigned long long)events_ext, (unsigned long long)events_read);
	if (rs.corrupt)
		FAIL("%llu sub-buffers failed validation\n", (unsigned long long)rs.corrupt);
	if (events_read == 0)
		FAIL("nothing was read\n");
	printf("%s - stress %s%s %s %s: written == read + lost, no corruption, order kept\n",
	       failures ? "not ok" : "ok", mode ? "overwrite" : "discard", block_us ? " blocking" : "",
	       rb->use_rseq ? "rseq" : "atomic",
	       rb->clock_tsc ? "tsc" : "monotonic");
	rb_reader_free(r);
	return failures ? 1 : 0;
}
