/*
 * test_replay.c - the replay of allocation events (src/analyze/replay.c):
 * each event's effects as the callbacks see them, in order, with the
 * event's time, CPU, thread and stack; the errors (unknown free, double
 * free, mismatched family, realloc of a freed or unknown block); realloc
 * in all its forms; pages; the live totals; growth to many live blocks
 * and the reuse of slots when ended blocks are not kept; a sampled
 * trace's weights; the classes' meaning from their names and fields.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analyze/replay.h"
#include "read/tsdl.h"

/* ---- a log of the callbacks ------------------------------------------------ */

static char logbuf[8192];
static size_t loglen;
static int stop_at_error;            /* the error callback returns -5 */

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(logbuf + loglen, sizeof(logbuf) - loglen, fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(logbuf) - loglen);
	loglen += (size_t)n;
}

/* The event's own figures, as every callback gets them. */
static void log_ev(const struct replay_event *ev)
{
	logf_(" @%lld/%u/%u/%u", (long long)ev->ns, ev->cpu, ev->tid, ev->stack);
}

static int cb_alloc(void *arg, const struct replay_event *ev, struct replay_block *b)
{
	logf_("alloc %#llx %llu/%llu %s site=%llx", (unsigned long long)b->ptr, (unsigned long long)b->size,
	      (unsigned long long)b->usable, mem_alloc_name(b->fam), (unsigned long long)b->site);
	log_ev(ev);
	logf_(";");
	b->user = 42;
	return 0;
}

static int cb_failed(void *arg, const struct replay_event *ev, uint64_t size, unsigned fam)
{
	logf_("failed %llu %s", (unsigned long long)size, mem_alloc_name(fam));
	log_ev(ev);
	logf_(";");
	return 0;
}

static int cb_end(void *arg, const struct replay_event *ev, const struct replay_block *b)
{
	assert_int_equal(b->live, 0);
	assert_int_equal(b->user, 42);
	logf_("end %#llx %s site=%llx (alloc %s site=%llx tid %u)", (unsigned long long)b->ptr,
	      replay_end_name(b->end), (unsigned long long)b->end_site, mem_alloc_name(b->fam),
	      (unsigned long long)b->site, b->tid);
	log_ev(ev);
	logf_(";");
	return 0;
}

static int cb_error(void *arg, const struct replay_event *ev, const struct replay_error *e)
{
	logf_("error %s %#llx by %s", replay_err_name[e->kind], (unsigned long long)e->ptr, replay_end_name(e->call));
	if (e->b)
		logf_(" (alloc %s site=%llx%s%s site=%llx)", mem_alloc_name(e->b->fam), (unsigned long long)e->b->site,
		      e->b->live ? ", alive" : ", ended by ", e->b->live ? "" : replay_end_name(e->b->end),
		      (unsigned long long)e->b->end_site);
	log_ev(ev);
	logf_(";");
	return stop_at_error ? -5 : 0;
}

static const struct replay_ops ops = { cb_alloc, cb_failed, cb_end, cb_error, NULL };

static struct replay rp;

static int setup(void **state)
{
	loglen = 0;
	logbuf[0] = 0;
	stop_at_error = 0;
	return replay_init(&rp, NULL, REPLAY_KEEP_FREED, &ops, NULL);
}

static int teardown(void **state)
{
	replay_free(&rp);
	return 0;
}

/* Events at time t on CPU 1, thread 7, stack 3 unless said. */
static int64_t now = 100;

static int ev(int kind, uint64_t old, uint64_t ptr, uint64_t size, uint64_t usable, unsigned fam, uint64_t site)
{
	struct replay_event e = { .kind = kind, .ptr = ptr, .old_ptr = old, .site = site, .size = size,
				  .usable = usable, .family = fam, .stack = 3, .has_stack = 1, .ns_ok = 1,
				  .ns = now++, .cpu = 1, .tid = 7 };
	return replay_apply(&rp, &e);
}

#define ALLOC(p, n, fam, site) ev(RP_ALLOC, 0, p, n, n, fam, site)
#define FREE(p, fam, site) ev(RP_FREE, 0, p, 0, 0, fam, site)
#define REALLOC(old, p, n, site) ev(RP_REALLOC, old, p, n, n, MEM_A_REALLOC, site)

static void expect_log(const char *want)
{
	assert_string_equal(logbuf, want);
	loglen = 0;
	logbuf[0] = 0;
}

static void expect_live(uint64_t n, uint64_t req, uint64_t usable, uint64_t pages)
{
	assert_int_equal(rp.live_n, n);
	assert_int_equal(rp.live_req, req);
	assert_int_equal(rp.live_usable, usable);
	assert_int_equal(rp.live_pages, pages);
}

/* ---- the tests ----------------------------------------------------------------- */

static void test_alloc_free(void **state)
{
	now = 100;
	assert_int_equal(ev(RP_ALLOC, 0, 0x1000, 24, 32, MEM_A_MALLOC, 0xa1), 0);
	expect_live(1, 24, 32, 0);
	/* usable below the size (an allocator without malloc_usable_size):
	 * counted as the size. */
	assert_int_equal(ev(RP_ALLOC, 0, 0x2000, 100, 0, MEM_A_CALLOC, 0xa2), 0);
	expect_live(2, 124, 132, 0);
	assert_int_equal(FREE(0x1000, MEM_F_FREE, 0xf1), 0);
	assert_int_equal(FREE(0x2000, MEM_F_FREE, 0xf2), 0);
	expect_live(0, 0, 0, 0);
	expect_log("alloc 0x1000 24/32 malloc site=a1 @100/1/7/3;"
		   "alloc 0x2000 100/100 calloc site=a2 @101/1/7/3;"
		   "end 0x1000 free site=f1 (alloc malloc site=a1 tid 7) @102/1/7/3;"
		   "end 0x2000 free site=f2 (alloc calloc site=a2 tid 7) @103/1/7/3;");
	const struct replay_block *b = replay_find(&rp, 0x1000);
	assert_non_null(b);
	assert_int_equal(b->live, 0);
	assert_int_equal(b->end, MEM_F_FREE);
	assert_int_equal(b->ns, 100);
	/* free(NULL): nothing at all. */
	assert_int_equal(FREE(0, MEM_F_FREE, 0xf3), 0);
	expect_log("");
	/* A failed allocation: no block. */
	assert_int_equal(ALLOC(0, 1ull << 40, MEM_A_MALLOC, 0xa3), 0);
	expect_log("failed 1099511627776 malloc @105/1/7/3;");
	assert_null(replay_find(&rp, 0));
}

static void test_reallocs(void **state)
{
	now = 200;
	ALLOC(0x1000, 16, MEM_A_MALLOC, 0xa1);
	/* Moved: the old block ends as a realloc at the realloc's site, then
	 * the new one is allocated there. */
	assert_int_equal(REALLOC(0x1000, 0x3000, 64, 0xb1), 0);
	expect_live(1, 64, 64, 0);
	/* In place: the same two effects on one address. */
	assert_int_equal(REALLOC(0x3000, 0x3000, 80, 0xb2), 0);
	expect_live(1, 80, 80, 0);
	/* Failed (ptr 0, size > 0): the old block stays. */
	assert_int_equal(REALLOC(0x3000, 0, 1ull << 40, 0xb3), 0);
	expect_live(1, 80, 80, 0);
	/* realloc(p, 0) that frees: the end alone. */
	assert_int_equal(REALLOC(0x3000, 0, 0, 0xb4), 0);
	expect_live(0, 0, 0, 0);
	/* realloc(NULL, n): an allocation, no error. */
	assert_int_equal(REALLOC(0, 0x4000, 8, 0xb5), 0);
	expect_live(1, 8, 8, 0);
	expect_log("alloc 0x1000 16/16 malloc site=a1 @200/1/7/3;"
		   "end 0x1000 realloc site=b1 (alloc malloc site=a1 tid 7) @201/1/7/3;"
		   "alloc 0x3000 64/64 realloc site=b1 @201/1/7/3;"
		   "end 0x3000 realloc site=b2 (alloc realloc site=b1 tid 7) @202/1/7/3;"
		   "alloc 0x3000 80/80 realloc site=b2 @202/1/7/3;"
		   "failed 1099511627776 realloc @203/1/7/3;"
		   "end 0x3000 realloc site=b4 (alloc realloc site=b2 tid 7) @204/1/7/3;"
		   "alloc 0x4000 8/8 realloc site=b5 @205/1/7/3;");
}

static void test_errors(void **state)
{
	now = 300;
	/* Unknown free, and realloc of an unknown block (the new block is
	 * still allocated, after the error). */
	FREE(0x9000, MEM_F_FREE, 0xf1);
	REALLOC(0x9100, 0x9200, 10, 0xb1);
	expect_log("error free of an unknown pointer 0x9000 by free @300/1/7/3;"
		   "error realloc of an unknown pointer 0x9100 by realloc @301/1/7/3;"
		   "alloc 0x9200 10/10 realloc site=b1 @301/1/7/3;");
	/* Double free: the error names the allocation and the first free. */
	ALLOC(0x1000, 24, MEM_A_MALLOC, 0xa1);
	FREE(0x1000, MEM_F_FREE, 0xf2);
	FREE(0x1000, MEM_F_FREE, 0xf3);
	expect_live(1, 10, 10, 0);
	expect_log("alloc 0x1000 24/24 malloc site=a1 @302/1/7/3;"
		   "end 0x1000 free site=f2 (alloc malloc site=a1 tid 7) @303/1/7/3;"
		   "error double free 0x1000 by free (alloc malloc site=a1, ended by free site=f2) @304/1/7/3;");
	/* A block ended by a realloc, freed again: the first free is the
	 * realloc. Then a realloc of a freed block. */
	ALLOC(0x2000, 8, MEM_A_MALLOC, 0xa2);
	REALLOC(0x2000, 0x2100, 16, 0xb2);
	FREE(0x2000, MEM_F_FREE, 0xf4);
	REALLOC(0x2000, 0x2200, 32, 0xb3);
	expect_log("alloc 0x2000 8/8 malloc site=a2 @305/1/7/3;"
		   "end 0x2000 realloc site=b2 (alloc malloc site=a2 tid 7) @306/1/7/3;"
		   "alloc 0x2100 16/16 realloc site=b2 @306/1/7/3;"
		   "error double free 0x2000 by free (alloc malloc site=a2, ended by realloc site=b2) @307/1/7/3;"
		   "error realloc of a freed block 0x2000 by realloc (alloc malloc site=a2, ended by realloc site=b2) @308/1/7/3;"
		   "alloc 0x2200 32/32 realloc site=b3 @308/1/7/3;");
}

static void test_families(void **state)
{
	now = 400;
	/* new + free, new[] + delete, malloc + delete: mismatched, reported
	 * before the free, which still ends the block. */
	ALLOC(0x1000, 40, MEM_A_NEW, 0xa1);
	FREE(0x1000, MEM_F_FREE, 0xf1);
	ALLOC(0x2000, 40, MEM_A_NEW_ARRAY, 0xa2);
	FREE(0x2000, MEM_F_DELETE, 0xf2);
	ALLOC(0x3000, 40, MEM_A_MALLOC, 0xa3);
	FREE(0x3000, MEM_F_DELETE_ARRAY, 0xf3);
	expect_live(0, 0, 0, 0);
	expect_log("alloc 0x1000 40/40 new site=a1 @400/1/7/3;"
		   "error mismatched free 0x1000 by free (alloc new site=a1, alive site=0) @401/1/7/3;"
		   "end 0x1000 free site=f1 (alloc new site=a1 tid 7) @401/1/7/3;"
		   "alloc 0x2000 40/40 new[] site=a2 @402/1/7/3;"
		   "error mismatched free 0x2000 by delete (alloc new[] site=a2, alive site=0) @403/1/7/3;"
		   "end 0x2000 delete site=f2 (alloc new[] site=a2 tid 7) @403/1/7/3;"
		   "alloc 0x3000 40/40 malloc site=a3 @404/1/7/3;"
		   "error mismatched free 0x3000 by delete[] (alloc malloc site=a3, alive site=0) @405/1/7/3;"
		   "end 0x3000 delete[] site=f3 (alloc malloc site=a3 tid 7) @405/1/7/3;");
	/* Every malloc-like family goes with free; new with delete, new[]
	 * with delete[]: no error. */
	static const unsigned malloc_like[] = { MEM_A_MALLOC, MEM_A_CALLOC, MEM_A_REALLOC, MEM_A_REALLOCARRAY,
						MEM_A_POSIX_MEMALIGN, MEM_A_ALIGNED_ALLOC, MEM_A_MEMALIGN,
						MEM_A_VALLOC, MEM_A_PVALLOC };
	for (size_t i = 0; i < sizeof(malloc_like) / sizeof(malloc_like[0]); i++) {
		ALLOC(0x5000 + i * 16, 8, malloc_like[i], 0xc0 + i);
		FREE(0x5000 + i * 16, MEM_F_FREE, 0xd0);
	}
	ALLOC(0x6000, 8, MEM_A_NEW, 0xc1);
	FREE(0x6000, MEM_F_DELETE, 0xd1);
	ALLOC(0x6100, 8, MEM_A_NEW_ARRAY, 0xc2);
	FREE(0x6100, MEM_F_DELETE_ARRAY, 0xd2);
	/* A realloc of a new'd block is not checked. */
	ALLOC(0x6200, 8, MEM_A_NEW, 0xc3);
	REALLOC(0x6200, 0x6300, 8, 0xd3);
	assert_null(strstr(logbuf, "error"));
	assert_non_null(strstr(logbuf, "alloc 0x5010 8/8 calloc site=c1"));
	assert_non_null(strstr(logbuf, "alloc 0x5060 8/8 memalign site=c6"));
}

static void test_pages(void **state)
{
	now = 500;
	ev(RP_MMAP, 0, 0x10000, 8192, 0, 0, 0xa1);
	expect_live(1, 8192, 8192, 8192);
	/* Part of the mapping, or a mapping never seen made: not ours. */
	ev(RP_MUNMAP, 0, 0x10000, 4096, 0, 0, 0xf1);
	ev(RP_MUNMAP, 0, 0x70000, 4096, 0, 0, 0xf1);
	ev(RP_MREMAP, 0x70000, 0x80000, 4096, 0, 0, 0xf1);
	expect_live(1, 8192, 8192, 8192);
	/* A malloc'ed block is not a mapping either. */
	ALLOC(0x20000, 64, MEM_A_MALLOC, 0xa2);
	ev(RP_MUNMAP, 0, 0x20000, 64, 0, 0, 0xf2);
	expect_live(2, 8256, 8256, 8192);
	ev(RP_MREMAP, 0x10000, 0x30000, 16384, 0, 0, 0xb1);
	expect_live(2, 16448, 16448, 16384);
	ev(RP_MUNMAP, 0, 0x30000, 16384, 0, 0, 0xf3);
	FREE(0x20000, MEM_F_FREE, 0xf4);
	expect_live(0, 0, 0, 0);
	expect_log("alloc 0x10000 8192/8192 mmap site=a1 @500/1/7/3;"
		   "alloc 0x20000 64/64 malloc site=a2 @504/1/7/3;"
		   "end 0x10000 mremap site=b1 (alloc mmap site=a1 tid 7) @506/1/7/3;"
		   "alloc 0x30000 16384/16384 mremap site=b1 @506/1/7/3;"
		   "end 0x30000 munmap site=f3 (alloc mremap site=b1 tid 7) @507/1/7/3;"
		   "end 0x20000 free site=f4 (alloc malloc site=a2 tid 7) @508/1/7/3;");
}

static void test_reused_and_stop(void **state)
{
	now = 600;
	/* An address handed out again while alive: the old block ends as
	 * reused (not a free), then the new one. */
	ALLOC(0x1000, 16, MEM_A_MALLOC, 0xa1);
	ALLOC(0x1000, 32, MEM_A_NEW, 0xa2);
	expect_live(1, 32, 32, 0);
	expect_log("alloc 0x1000 16/16 malloc site=a1 @600/1/7/3;"
		   "end 0x1000 reused site=0 (alloc malloc site=a1 tid 7) @601/1/7/3;"
		   "alloc 0x1000 32/32 new site=a2 @601/1/7/3;");
	/* A callback's negative return stops the event there: the realloc
	 * of an unknown block allocates nothing. */
	stop_at_error = 1;
	assert_int_equal(REALLOC(0x9000, 0x9100, 8, 0xb1), -5);
	assert_null(strstr(logbuf, "alloc 0x9100"));
	assert_null(replay_find(&rp, 0x9100));
}

static void test_not_kept(void **state)
{
	/* Without REPLAY_KEEP_FREED a freed block is forgotten: a second
	 * free is a free of an unknown pointer, and slots are reused, so
	 * churn over ever new addresses takes the memory of the live blocks. */
	replay_free(&rp);
	assert_int_equal(replay_init(&rp, NULL, 0, &ops, NULL), 0);
	now = 700;
	ALLOC(0x1000, 16, MEM_A_MALLOC, 0xa1);
	FREE(0x1000, MEM_F_FREE, 0xf1);
	FREE(0x1000, MEM_F_FREE, 0xf2);
	expect_log("alloc 0x1000 16/16 malloc site=a1 @700/1/7/3;"
		   "end 0x1000 free site=f1 (alloc malloc site=a1 tid 7) @701/1/7/3;"
		   "error free of an unknown pointer 0x1000 by free @702/1/7/3;");
	assert_null(replay_find(&rp, 0x1000));
	struct replay_ops quiet = { 0 };
	rp.ops = &quiet;
	for (uint64_t i = 0; i < 100000; i++) {
		uint64_t p = 0x100000 + i * 16;
		ALLOC(p, 16, MEM_A_MALLOC, 0xa1);
		if (i >= 10)
			FREE(p - 160, MEM_F_FREE, 0xf1);
	}
	expect_live(10, 160, 160, 0);
	assert_true(rp.capblk <= 1024);
	assert_int_equal(rp.idx.n, 10);
	assert_int_equal(rp.oom, 0);
}

static void test_many_live(void **state)
{
	/* 300 000 blocks alive at once at scattered addresses: each found,
	 * the totals right, then all freed in another order. */
	struct replay_ops quiet = { 0 };
	rp.ops = &quiet;
	const uint64_t n = 300000;
	uint64_t sum = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t p = (i * 0x9e3779b97f4a7c15ull) | 1;
		ALLOC(p, i % 97 + 1, MEM_A_MALLOC, i);
		sum += i % 97 + 1;
	}
	expect_live(n, sum, sum, 0);
	for (uint64_t i = 0; i < n; i += 7) {
		const struct replay_block *b = replay_find(&rp, (i * 0x9e3779b97f4a7c15ull) | 1);
		assert_non_null(b);
		assert_int_equal(b->size, i % 97 + 1);
		assert_int_equal(b->site, i);
		assert_int_equal(b->live, 1);
	}
	for (uint64_t k = 0; k < n; k++) {
		uint64_t i = (k * 7919) % n; /* 7919 is prime, n is not a multiple */
		FREE((i * 0x9e3779b97f4a7c15ull) | 1, MEM_F_FREE, 0);
	}
	expect_live(0, 0, 0, 0);
	assert_int_equal(rp.idx.n, n); /* kept, ended */
	assert_int_equal(rp.oom, 0);
}

/* ---- classes ------------------------------------------------------------------- */

static const struct rd_type u64t = { .kind = RD_INT, .size = 64, .base = 16 };

/* ---- losses and forked children ---------------------------------------------- */

/* Errors and leaks as "kind@ptr:c" (certain), ":p" (possible), ":i"
 * (inherited). */
static int cb_error_flags(void *arg, const struct replay_event *ev, const struct replay_error *e)
{
	logf_("%s@%llx:%s;", replay_err_name[e->kind], (unsigned long long)e->ptr,
	      e->inherited ? "i" : e->possible ? "p" : "c");
	return 0;
}

static int cb_leak(void *arg, const struct replay_block *b, int possible)
{
	logf_("leak@%llx:%s;", (unsigned long long)b->ptr, possible ? "p" : "c");
	return 0;
}

static const struct replay_ops flag_ops = { .error = cb_error_flags, .leak = cb_leak };

/* A loss window [10, 20] (a packet's discarded events, registered when
 * the replay reaches its beginning), between events at known times. */
static void test_losses(void **state)
{
	replay_free(&rp);
	assert_int_equal(replay_init(&rp, NULL, REPLAY_KEEP_FREED, &flag_ops, NULL), 0);
	now = 1;
	ALLOC(0xa0, 8, MEM_A_MALLOC, 1);          /* t1: freed after the window */
	ALLOC(0xb0, 8, MEM_A_MALLOC, 1);          /* t2: never freed */
	FREE(0xe0, MEM_F_FREE, 1);                /* t3: unknown, no loss yet */
	ALLOC(0xc0, 8, MEM_A_MALLOC, 1);          /* t4 */
	FREE(0xc0, MEM_F_FREE, 1);                /* t5: first free before the window */
	ALLOC(0xd0, 8, MEM_A_NEW, 1);             /* t6: new */
	expect_log("free of an unknown pointer@e0:c;");
	replay_loss(&rp, 1, 10, 1, 20);
	now = 25;
	FREE(0xe1, MEM_F_FREE, 1);                /* t25: unknown, after a loss */
	FREE(0xc0, MEM_F_FREE, 1);                /* t26: double free across the window */
	FREE(0xd0, MEM_F_FREE, 1);                /* t27: mismatch across the window */
	ALLOC(0xf0, 8, MEM_A_MALLOC, 1);          /* t28: after the window */
	FREE(0xf0, MEM_F_FREE, 1);                /* t29 */
	FREE(0xf0, MEM_F_FREE, 1);                /* t30: double free after the window */
	ALLOC(0xf8, 8, MEM_A_NEW, 1);             /* t31 */
	FREE(0xf8, MEM_F_FREE, 1);                /* t32: mismatch after the window */
	ALLOC(0x100, 8, MEM_A_MALLOC, 1);         /* t33: never freed, after the window */
	FREE(0xa0, MEM_F_FREE, 1);
	expect_log("free of an unknown pointer@e1:p;double free@c0:p;mismatched free@d0:p;double free@f0:c;"
		   "mismatched free@f8:c;");
	assert_int_equal(replay_finish(&rp), 0);
	expect_log("leak@b0:p;leak@100:c;");
	assert_int_equal(rp.losses, 1);
	assert_int_equal(rp.loss_end, 20);

	/* A block allocated exactly at the window's end may have lost its
	 * free: the bound is inclusive. */
	replay_free(&rp);
	assert_int_equal(replay_init(&rp, NULL, REPLAY_KEEP_FREED, &flag_ops, NULL), 0);
	replay_loss(&rp, 1, 10, 1, 20);
	now = 20;
	ALLOC(0xa0, 8, MEM_A_MALLOC, 1);
	ALLOC(0xb0, 8, MEM_A_MALLOC, 1);
	assert_int_equal(replay_finish(&rp), 0);
	expect_log("leak@a0:p;leak@b0:c;");

	/* A loss without an end (counted after a stream's last packet): every
	 * leak is possible, and every error after it. */
	replay_free(&rp);
	assert_int_equal(replay_init(&rp, NULL, REPLAY_KEEP_FREED, &flag_ops, NULL), 0);
	now = 100;
	ALLOC(0xa0, 8, MEM_A_MALLOC, 1);
	replay_loss(&rp, 0, 0, 0, 0);
	ALLOC(0xb0, 8, MEM_A_MALLOC, 1);
	FREE(0xb0, MEM_F_FREE, 1);
	FREE(0xb0, MEM_F_FREE, 1);
	assert_int_equal(replay_finish(&rp), 0);
	expect_log("double free@b0:p;leak@a0:p;");

	/* No loss: everything certain. */
	replay_free(&rp);
	assert_int_equal(replay_init(&rp, NULL, REPLAY_KEEP_FREED, &flag_ops, NULL), 0);
	ALLOC(0xa0, 8, MEM_A_MALLOC, 1);
	FREE(0xe0, MEM_F_FREE, 1);
	assert_int_equal(replay_finish(&rp), 0);
	expect_log("free of an unknown pointer@e0:c;leak@a0:c;");
}

/* A forked child's trace: a free or realloc of a pointer it never saw is
 * inherited; a double free stays an error. */
static void test_forked(void **state)
{
	replay_free(&rp);
	assert_int_equal(replay_init(&rp, NULL, REPLAY_KEEP_FREED, &flag_ops, NULL), 0);
	rp.forked = 1;
	now = 1;
	FREE(0xa0, MEM_F_FREE, 1);
	REALLOC(0xb0, 0xc0, 16, 1);
	ALLOC(0xd0, 8, MEM_A_MALLOC, 1);
	FREE(0xd0, MEM_F_FREE, 1);
	FREE(0xd0, MEM_F_FREE, 1);
	expect_log("free of an unknown pointer@a0:i;realloc of an unknown pointer@b0:i;double free@d0:c;");
	expect_live(1, 16, 16, 0);
}

/* A sampled trace: the mean from RP_SAMPLING (size), each sample's weight
 * 1 / (1 - exp(-size / mean)) on its block and in the weighted totals,
 * pages and failures of weight one, mem:untracked ending its block (not a
 * free), and a free of an address never allocated counted, not an error. */
static void test_sampled(void **state)
{
	now = 1;
	/* Without sampling every weight is one. */
	ALLOC(0x100, 1000, MEM_A_MALLOC, 1);
	const struct replay_block *b = replay_find(&rp, 0x100);
	assert_int_equal(b->wn, REPLAY_W_ONE);
	assert_int_equal(b->wsize, 1000);
	assert_int_equal(rp.w_live_req, 1000);
	FREE(0x100, MEM_F_FREE, 1);
	expect_log("alloc 0x100 1000/1000 malloc site=1 @1/1/7/3;end 0x100 free site=1 (alloc malloc site=1 tid 7) @2/1/7/3;");
	assert_int_equal(ev(RP_SAMPLING, 0, 0, 262144, 0, 0, 0), 0);
	assert_int_equal(rp.sample_mean, 262144);
	/* 2048 bytes at 256 KiB: w = 1 / (1 - exp(-1/128)) = 128.50065. */
	ALLOC(0x200, 2048, MEM_A_MALLOC, 1);
	b = replay_find(&rp, 0x200);
	assert_int_equal(b->wn, replay_weight(262144, 2048));
	assert_true(b->wn > (uint64_t)(128.500 * REPLAY_W_ONE) && b->wn < (uint64_t)(128.501 * REPLAY_W_ONE));
	assert_int_equal(b->wsize, 263169); /* round(2048 w) */
	/* Blocks far above the mean weigh one. */
	ALLOC(0x300, 1u << 30, MEM_A_MALLOC, 1);
	assert_int_equal(replay_find(&rp, 0x300)->wn, REPLAY_W_ONE);
	/* A mapping: every call is in the trace. */
	ev(RP_MMAP, 0, 0x400000, 4096, 4096, MEM_A_MMAP, 1);
	assert_int_equal(replay_find(&rp, 0x400000)->wn, REPLAY_W_ONE);
	assert_int_equal(rp.w_live_req, 263169 + (1u << 30) + 4096);
	assert_int_equal(rp.live_req, 2048 + (1u << 30) + 4096);
	/* The sample at 0x300 will have no end: out of the heap, not freed. */
	expect_log("alloc 0x200 2048/2048 malloc site=1 @4/1/7/3;alloc 0x300 1073741824/1073741824 malloc site=1 @5/1/7/3;"
		   "alloc 0x400000 4096/4096 mmap site=1 @6/1/7/3;");
	assert_int_equal(ev(RP_UNTRACKED, 0, 0x300, 0, 0, 0, 0), 0);
	expect_log("end 0x300 untracked site=0 (alloc malloc site=1 tid 7) @7/1/7/3;");
	assert_int_equal(rp.untracked, 1);
	assert_int_equal(rp.w_live_req, 263169 + 4096);
	/* A free of a block not sampled: not an error. */
	FREE(0x999, MEM_F_FREE, 1);
	REALLOC(0x998, 0, 0, 1);
	expect_log("");
	assert_int_equal(rp.unmatched, 2);
	FREE(0x200, MEM_F_FREE, 1);
	assert_int_equal(rp.w_live_n, REPLAY_W_ONE);
	assert_int_equal(rp.w_live_req, 4096);
	assert_int_equal(replay_weight(0, 5), REPLAY_W_ONE);
}

static void test_classes(void **state)
{
	static const struct rd_member realloc_m[] = {
		{ "old_ptr", &u64t }, { "ptr", &u64t }, { "site", &u64t }, { "size", &u64t },
		{ "usable", &u64t },  { "family", &u64t }, { "stack_id", &u64t },
	};
	struct rd_type st = { .kind = RD_STRUCT, .members = realloc_m, .n_members = 7 };
	struct replay_class c;
	replay_class_init(&c, "mem:realloc", &st);
	assert_int_equal(c.kind, RP_REALLOC);
	assert_int_equal(c.old_ptr, 0);
	assert_int_equal(c.ptr, 1);
	assert_int_equal(c.family, 5);
	assert_int_equal(c.stack_id, 6);
	replay_class_init(&c, "mem:realloc_large", &st);
	assert_int_equal(c.kind, RP_REALLOC);
	/* Not an allocation event's name. */
	replay_class_init(&c, "mem:reallocx", &st);
	assert_int_equal(c.kind, RP_NONE);
	replay_class_init(&c, "app:realloc", &st);
	assert_int_equal(c.kind, RP_NONE);
	/* A realloc without old_ptr, a free without site: not ours. */
	st.members = realloc_m + 1;
	st.n_members = 6;
	replay_class_init(&c, "mem:realloc", &st);
	assert_int_equal(c.kind, RP_NONE);
	replay_class_init(&c, "mem:free", &st);
	assert_int_equal(c.kind, RP_FREE);
	assert_int_equal(c.stack_id, 5);
	st.members = realloc_m;
	st.n_members = 2;
	replay_class_init(&c, "mem:free", &st);
	assert_int_equal(c.kind, RP_NONE);
	replay_class_init(&c, "mem:alloc", NULL);
	assert_int_equal(c.kind, RP_NONE);
	/* The end kinds' names. */
	assert_string_equal(replay_end_name(MEM_F_DELETE_ARRAY), "delete[]");
	assert_string_equal(replay_end_name(RP_END_REALLOC), "realloc");
	assert_string_equal(replay_end_name(RP_END_MREMAP), "mremap");
	assert_string_equal(replay_end_name(RP_END_MAX), "?");
	/* mem:sampling needs its mean, mem:untracked its pointer. */
	static const struct rd_member sampling_m[] = { { "mean", &u64t }, { "seed", &u64t } };
	struct rd_type sm = { .kind = RD_STRUCT, .members = sampling_m, .n_members = 2 };
	replay_class_init(&c, "mem:sampling", &sm);
	assert_int_equal(c.kind, RP_SAMPLING);
	assert_int_equal(c.mean, 0);
	replay_class_init(&c, "mem:untracked", &sm);
	assert_int_equal(c.kind, RP_NONE);
	st.n_members = 2;
	replay_class_init(&c, "mem:untracked", &st);
	assert_int_equal(c.kind, RP_UNTRACKED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_alloc_free, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reallocs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_families, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reused_and_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_live, setup, teardown),
		cmocka_unit_test_setup_teardown(test_losses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sampled, setup, teardown),
		cmocka_unit_test(test_classes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
