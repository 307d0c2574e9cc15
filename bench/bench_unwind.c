/*
 * bench_unwind.c - ns per stack capture of 16 and 64 frames with each
 * method of src/unwind (the frame-pointer walk and libunwind) and, for
 * reference, glibc's backtrace(); the cost of the first capture in a new
 * thread; and how many of 16 frames each method gets right on a chain
 * compiled without frame pointers (what Debian's libraries and most
 * unmodified programs are).
 *
 * Loops: `iters` captures at the bottom of a chain of noinline calls a
 * few frames deeper than the capture (so every captured frame is a chain
 * frame), timed with CLOCK_MONOTONIC around the loop; `runs` runs after
 * one warm-up, the methods interleaved run by run (so that drift hits
 * them alike); the figure is the median, min and max show the spread. One
 * thread pinned to CPU 0 (--cpu).
 *
 * cold:   the first capture of a 16-frame stack in a fresh thread (the
 *         FP walk then reads /proc/self/maps once; libunwind's per-thread
 *         cache is empty), median over `threads` threads.
 * nofp:   frames 1..16 of a capture compared with the return addresses
 *         that the chain built without frame pointers recorded itself
 *         (__builtin_return_address); the count of leading frames right.
 *
 * Output (bench/unwind.sh, read by bench/run.sh):
 *   result LABEL VALUE [min=.. max=.. runs=.. iters=..]
 * labels unwind_{fp,libunwind,backtrace}_{16,64} (ns),
 * unwind_{fp,libunwind}_16_cold (ns), unwind_{fp,libunwind,backtrace}_nofp_correct_16
 * (frames of 16), ratio_{libunwind_fp,backtrace_fp,backtrace_libunwind}_{16,64}.
 *
 * The same file compiled with -DBENCH_NOFP_CHAIN -fomit-frame-pointer is
 * the chain without frame pointers (bench/unwind.sh builds both).
 *
 *   bench_unwind [--iters N] [--runs N] [--threads N] [--cpu C]
 */
#include <errno.h>
#include <stdint.h>

typedef void (*bench_bottom_fn)(void *arg, uintptr_t ra_bottom);

/* The chain without frame pointers (the other object): depth levels, each
 * recording its return address in ras[level], then fn at the bottom. */
int bench_chain_nofp(int depth, bench_bottom_fn fn, void *arg, uintptr_t *ras);

#ifdef BENCH_NOFP_CHAIN

__attribute__((noinline)) static void nofp_bottom(bench_bottom_fn fn, void *arg)
{
	fn(arg, (uintptr_t)__builtin_return_address(0));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) int bench_chain_nofp(int depth, bench_bottom_fn fn, void *arg, uintptr_t *ras)
{
	ras[depth] = (uintptr_t)__builtin_return_address(0);
	int r = 0;
	if (depth > 0)
		r = bench_chain_nofp(depth - 1, fn, arg, ras);
	else
		nofp_bottom(fn, arg);
	/* Work after the call: no tail call, so every level keeps a frame. */
	__asm__ volatile("" : "+r"(r) : : "memory");
	return r + 1;
}

#else /* the program */

#include <execinfo.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unwind/unwind.h"

#define MAX_RUNS 32
#define CHAIN_EXTRA 6                /* levels beyond the captured frames */

enum { M_FP, M_LU, M_BT, M_TB, NMETHODS };
static const char *const mname[NMETHODS] = { "fp", "libunwind", "backtrace", "tables" };

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[MAX_RUNS];
	memcpy(s, v, (size_t)n * sizeof(*v));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Inlined: frame 0 of every method is in the function that captures. */
static inline __attribute__((always_inline)) int capture(int m, uintptr_t *ips, int depth)
{
	switch (m) {
	case M_FP:
		return rt_unwind(ips, depth, 0, RT_UNWIND_FP);
	case M_LU:
		return rt_unwind(ips, depth, 0, RT_UNWIND_LIBUNWIND);
	case M_TB:
		return rt_unwind(ips, depth, 0, RT_UNWIND_TABLES);
	default:
		return backtrace((void **)ips, depth);
	}
}

/* ---- timed loops ----------------------------------------------------------- */

struct loop {
	int method, depth;
	uint64_t iters;
	double ns;                   /* per capture */
	int got;                     /* frames of the last capture */
};

__attribute__((noinline)) static void loop_bottom(void *arg, uintptr_t ra)
{
	(void)ra;
	struct loop *l = arg;
	uintptr_t ips[RT_UNWIND_MAX_DEPTH];
	int got = 0;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < l->iters; i++) {
		got = capture(l->method, ips, l->depth);
		__asm__ volatile("" : : "r"(got), "r"(ips) : "memory");
	}
	l->ns = (double)(now_ns() - t0) / (double)l->iters;
	l->got = got;
}

/* The chain with frame pointers: this file is built with them. */
__attribute__((noinline)) static int fp_chain(int depth, bench_bottom_fn fn, void *arg)
{
	int r = 0;
	if (depth > 0)
		r = fp_chain(depth - 1, fn, arg);
	else
		fn(arg, (uintptr_t)__builtin_return_address(0));
	__asm__ volatile("" : "+r"(r) : : "memory");
	return r + 1;
}

static void report(const char *label, const double *v, int runs, uint64_t iters)
{
	double lo = v[0], hi = v[0];
	for (int i = 1; i < runs; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	printf("result %s %.2f min=%.2f max=%.2f runs=%d iters=%llu\n", label, median(v, runs), lo, hi,
	       runs, (unsigned long long)iters);
	fflush(stdout);
}

/* ---- cold: the first capture in a new thread ------------------------------- */

struct cold {
	int method;
	double ns;
	int got;
};

__attribute__((noinline)) static void cold_bottom(void *arg, uintptr_t ra)
{
	(void)ra;
	struct cold *c = arg;
	uintptr_t ips[16];
	uint64_t t0 = now_ns();
	c->got = capture(c->method, ips, 16);
	c->ns = (double)(now_ns() - t0);
}

static void *cold_thread(void *arg)
{
	struct cold *c = arg;
	/* libunwind dlopen'ed has dynamic TLS: the thread must be prepared
	 * (src/unwind/unwind.h); that warms nothing of the chain below. */
	rt_unwind_thread_init();
	fp_chain(16 + CHAIN_EXTRA, cold_bottom, c);
	return NULL;
}

/* ---- correctness without frame pointers ------------------------------------ */

struct nofp {
	uintptr_t ras[64];
	int right[NMETHODS];
	int depth;
};

__attribute__((noinline)) static void nofp_check(void *arg, uintptr_t ra_bottom)
{
	struct nofp *c = arg;
	for (int m = 0; m < NMETHODS; m++) {
		uintptr_t ips[RT_UNWIND_MAX_DEPTH];
		/* ips[0] is in this function, ips[1] in nofp_bottom (which
		 * called it), ips[2] the bottom's return address, then the
		 * levels from the innermost (ras[0]) outwards: 16 known frames. */
		int n = capture(m, ips, 18);
		int right = 0;
		for (int k = 2; k < n && k < 18; k++) {
			uintptr_t want = k == 2 ? ra_bottom : c->ras[k - 3];
			if (ips[k] != want)
				break;
			right++;
		}
		c->right[m] = right;
	}
}

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	int r = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (r)
		fprintf(stderr, "bench_unwind: cannot pin to CPU %d: %s\n", cpu, strerror(r));
	return r;
}

int main(int argc, char **argv)
{
	uint64_t iters = 200000;
	int runs = 7, threads = 51, cpu = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--iters"))
			iters = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--cpu"))
			cpu = atoi(argv[i + 1]);
	}
	if (runs < 1 || runs > MAX_RUNS || iters == 0 || threads < 1 || threads > 1000) {
		fprintf(stderr, "usage: bench_unwind [--iters N] [--runs 1..%d] [--threads N] [--cpu C]\n",
			MAX_RUNS);
		return 2;
	}
	pin(cpu);
	int r = rt_unwind_init();
	struct rt_unwind_info info;
	rt_unwind_get_info(&info);
	printf("info unwind libunwind=%s tls=%s tables=%d\n", r == 0 ? "yes" : "no",
	       info.static_tls ? "static" : "dynamic", info.tables);
	/* glibc's backtrace() loads libgcc_s on its first call. */
	void *warm[4];
	backtrace(warm, 4);

	static const int depths[] = { 16, 64 };
	double res[2][NMETHODS][MAX_RUNS];
	double med[2][NMETHODS];
	for (int d = 0; d < 2; d++) {
		for (int run = -1; run < runs; run++) {
			for (int m = 0; m < NMETHODS; m++) {
				if (m == M_LU && r != 0)
					continue;
				/* Slow methods get fewer iterations: same time. */
				uint64_t n = m == M_FP || m == M_TB ? iters : iters / 10;
				struct loop l = { .method = m, .depth = depths[d], .iters = run < 0 ? n / 10 + 1 : n };
				fp_chain(depths[d] + CHAIN_EXTRA, loop_bottom, &l);
				if (l.got != depths[d])
					fprintf(stderr, "bench_unwind: %s got %d frames of %d\n", mname[m], l.got,
						depths[d]);
				if (run >= 0)
					res[d][m][run] = l.ns;
			}
		}
		for (int m = 0; m < NMETHODS; m++) {
			if (m == M_LU && r != 0)
				continue;
			char label[64];
			snprintf(label, sizeof(label), "unwind_%s_%d", mname[m], depths[d]);
			uint64_t n = m == M_FP || m == M_TB ? iters : iters / 10;
			report(label, res[d][m], runs, n);
			med[d][m] = median(res[d][m], runs);
		}
	}

	/* Cold captures. */
	for (int m = 0; m < NMETHODS; m++) {
		if ((m == M_LU && r != 0) || m == M_BT)
			continue;
		double v[1000];
		for (int t = 0; t < threads; t++) {
			struct cold c = { .method = m };
			pthread_t th;
			if (pthread_create(&th, NULL, cold_thread, &c) != 0)
				return 1;
			pthread_join(th, NULL);
			v[t] = c.ns;
		}
		qsort(v, (size_t)threads, sizeof(v[0]), cmp_double);
		printf("result unwind_%s_16_cold %.0f min=%.0f max=%.0f threads=%d\n", mname[m],
		       v[threads / 2], v[0], v[threads - 1], threads);
	}

	/* Frames right without frame pointers. */
	struct nofp c = { .depth = 16 + CHAIN_EXTRA };
	bench_chain_nofp(c.depth, nofp_check, &c, c.ras);
	for (int m = 0; m < NMETHODS; m++)
		if (m != M_LU || r == 0)
			printf("result unwind_%s_nofp_correct_16 %d\n", mname[m], c.right[m]);

	for (int d = 0; d < 2; d++) {
		printf("result ratio_tables_fp_%d %.2f\n", depths[d], med[d][M_TB] / med[d][M_FP]);
		if (r == 0) {
			printf("result ratio_libunwind_tables_%d %.2f\n", depths[d], med[d][M_LU] / med[d][M_TB]);
			printf("result ratio_libunwind_fp_%d %.2f\n", depths[d], med[d][M_LU] / med[d][M_FP]);
			printf("result ratio_backtrace_libunwind_%d %.2f\n", depths[d], med[d][M_BT] / med[d][M_LU]);
		}
		printf("result ratio_backtrace_fp_%d %.2f\n", depths[d], med[d][M_BT] / med[d][M_FP]);
	}
	struct rt_unwind_stats st;
	rt_unwind_get_stats(&st);
	uint64_t looked = st.cache_hits + st.cache_misses;
	printf("result unwind_tables_cache_hit_pct %.2f hits=%llu misses=%llu\n",
	       looked ? 100.0 * (double)st.cache_hits / (double)looked : 0.0,
	       (unsigned long long)st.cache_hits, (unsigned long long)st.cache_misses);
	printf("result unwind_tables_memo_pct %.2f memo_frames=%llu frames=%llu\n",
	       st.frames ? 100.0 * (double)st.memo_frames / (double)st.frames : 0.0,
	       (unsigned long long)st.memo_frames, (unsigned long long)st.frames);
	printf("result unwind_tables_fast_pct %.2f captures=%llu fallbacks: bad_cfi=%llu no_fde=%llu "
	       "no_object=%llu stack=%llu no_slot=%llu\n",
	       st.captures ? 100.0 * (double)st.fast / (double)st.captures : 0.0,
	       (unsigned long long)st.captures, (unsigned long long)st.fb_bad_cfi,
	       (unsigned long long)st.fb_no_fde, (unsigned long long)st.fb_no_object,
	       (unsigned long long)st.fb_stack, (unsigned long long)st.fb_no_slot);
	printf("info unwind_tables objects=%llu rows=%llu bad_rows=%llu\n", (unsigned long long)st.objects,
	       (unsigned long long)st.rows, (unsigned long long)st.bad_rows);
	return 0;
}

#endif
