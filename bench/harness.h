/*
 * harness.h - the measurement loops shared by bench_tp.c (ringtrace) and
 * lttng/bench_lttng.c (LTTng-UST), so that both tracers are timed by the
 * very same code and differ only in the tracepoint they fire.
 *
 * The including file defines, before including this header:
 *   BENCH_TRACER        "ringtrace" or "lttng-ust", printed in the output
 *   BENCH_TWO_INTS(a,b) fire the two-u32 event
 *   BENCH_STR16(s)      fire the one-string event
 * and, anywhere in the file:
 *   bench_tracing_on()  1 if the tracer says tracing is on in this process,
 *                       0 if not, -1 if it cannot tell
 *   bench_info()        print `info ...` lines about the tracer's set-up
 *
 * What it measures: ns per iteration of a loop of N iterations, timed with
 * CLOCK_MONOTONIC around the whole loop, repeated R times after one warm-up
 * run of N/10; the median is the figure, min and max show the spread. Every
 * loop runs in a noinline function on a thread pinned to one CPU. The loop
 * variable goes through an empty asm statement each iteration so that the
 * compiler can neither delete nor collapse the loop, and does the same in
 * the empty loop, so "disabled - empty" is the cost of the tracepoint's
 * check alone.
 *
 * Output: one line per figure, `result LABEL VALUE key=value...`, read by
 * bench/run.sh; notes go to stderr. Nothing is asserted.
 *
 * Load: single-threaded except `enabled2` and `rdtsc2`, which run one thread
 * pinned to CPU 0 and one pinned to CPU 1, started together by a barrier
 * each run; the figure is the mean of the two threads' ns per iteration (the
 * cost of one event on one thread while the other CPU also traces), and each
 * thread's median is printed too.
 */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

static int bench_tracing_on(void);
static void bench_info(void);

/* Make `v` opaque to the optimiser (it must be in a register now). */
#define BENCH_OPAQUE(v) __asm__ __volatile__("" : "+r"(v))
/* Make the optimiser believe `v` is used. */
#define BENCH_USE(v)    __asm__ __volatile__("" : : "r"(v))

/* 15 characters + NUL: a 16-byte string field. */
static const char bench_str16[] = "0123456789abcde";

struct bench_opts {
	uint64_t iters;
	int runs;
	int warmup;
	int cpu;          /* CPU of the (first) thread */
	const char *label;
};

static uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bench_pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	int r = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (r != 0)
		fprintf(stderr, "bench: cannot pin thread to CPU %d: %s\n", cpu, strerror(r));
	return r;
}

/* ---- the loops ----------------------------------------------------------- */

typedef void (*bench_loop_fn)(uint64_t n);

__attribute__((noinline)) static void loop_empty(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		BENCH_OPAQUE(i);
}

__attribute__((noinline)) static void loop_two_ints(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		BENCH_TWO_INTS((uint32_t)i, (uint32_t)~i);
		BENCH_OPAQUE(i);
	}
}

__attribute__((noinline)) static void loop_str16(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		/* A pointer the compiler cannot see through, so strlen()
		 * runs as it would on a string that is not a literal. */
		const char *s = bench_str16;
		BENCH_OPAQUE(s);
		BENCH_STR16(s);
		BENCH_OPAQUE(i);
	}
}

__attribute__((noinline)) static void loop_rdtsc(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t = __rdtsc();
		BENCH_USE(t);
		BENCH_OPAQUE(i);
	}
}

__attribute__((noinline)) static void loop_clock_gettime(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		BENCH_USE(ts.tv_nsec);
		BENCH_OPAQUE(i);
	}
}

/* ---- timing -------------------------------------------------------------- */

static double bench_time_loop(bench_loop_fn fn, uint64_t n)
{
	uint64_t t0 = bench_now_ns();
	fn(n);
	uint64_t t1 = bench_now_ns();
	return (double)(t1 - t0) / (double)n;
}

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void bench_print(const struct bench_opts *o, double *v, const char *extra)
{
	int n = o->runs;
	double med = bench_median(v, n);
	printf("result %s %.3f min=%.3f max=%.3f runs=%d iters=%llu tracer=%s%s%s\n", o->label,
	       med, v[0], v[n - 1], n, (unsigned long long)o->iters, BENCH_TRACER,
	       extra ? " " : "", extra ? extra : "");
	fflush(stdout);
}

/*
 * Several single-thread loops, interleaved: run r of every loop before run
 * r+1 of any, so that a drift of the machine's speed during the process
 * touches all of them alike and their ratios hold.
 */
struct bench_loop {
	const char *mode;
	bench_loop_fn fn;
};

static const struct bench_loop bench_loops[] = {
	{ "empty", loop_empty },
	{ "disabled", loop_two_ints },
	{ "enabled", loop_two_ints },
	{ "str16", loop_str16 },
	{ "rdtsc", loop_rdtsc },
	{ "clock_gettime", loop_clock_gettime },
};

#define BENCH_MAX_LOOPS 8

static int bench_interleaved(const struct bench_opts *o, bench_loop_fn *fns, const char **labels,
			     int n)
{
	double v[BENCH_MAX_LOOPS][64];
	bench_pin(o->cpu);
	if (o->warmup)
		for (int i = 0; i < n; i++)
			fns[i](o->iters / 10 + 1);
	for (int r = 0; r < o->runs; r++)
		for (int i = 0; i < n; i++)
			v[i][r] = bench_time_loop(fns[i], o->iters);
	for (int i = 0; i < n; i++) {
		struct bench_opts oi = *o;
		oi.label = labels[i];
		bench_print(&oi, v[i], n > 1 ? "interleaved=1" : NULL);
	}
	return 0;
}

/* ---- two threads, one per CPU ------------------------------------------- */

struct bench_thr {
	const struct bench_opts *o;
	bench_loop_fn fn;
	pthread_barrier_t *bar;
	int cpu;
	double ns[64];
};

static void *bench_thr_main(void *arg)
{
	struct bench_thr *t = arg;
	bench_pin(t->cpu);
	if (t->o->warmup)
		t->fn(t->o->iters / 10 + 1);
	for (int r = 0; r < t->o->runs; r++) {
		pthread_barrier_wait(t->bar);
		t->ns[r] = bench_time_loop(t->fn, t->o->iters);
	}
	return NULL;
}

static int bench_two_threads(const struct bench_opts *o, bench_loop_fn fn)
{
	pthread_barrier_t bar;
	struct bench_thr t[2];
	pthread_t th[2];
	double mean[64], m0[64], m1[64];
	char extra[96];

	pthread_barrier_init(&bar, NULL, 2);
	for (int i = 0; i < 2; i++) {
		t[i].o = o;
		t[i].fn = fn;
		t[i].bar = &bar;
		t[i].cpu = o->cpu + i;
		int r = pthread_create(&th[i], NULL, bench_thr_main, &t[i]);
		if (r != 0) {
			fprintf(stderr, "bench: pthread_create: %s\n", strerror(r));
			return 1;
		}
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int r = 0; r < o->runs; r++) {
		mean[r] = (t[0].ns[r] + t[1].ns[r]) / 2;
		m0[r] = t[0].ns[r];
		m1[r] = t[1].ns[r];
	}
	snprintf(extra, sizeof(extra), "cpu%d=%.3f cpu%d=%.3f", o->cpu, bench_median(m0, o->runs),
		 o->cpu + 1, bench_median(m1, o->runs));
	bench_print(o, mean, extra);
	pthread_barrier_destroy(&bar);
	return 0;
}

/* ---- fire for a while (record rate) ---------------------------------------- */

/* As fast as possible, or at `rate` events per second (0: no limit): then
 * in chunks of 4096 events, each waiting (spinning on the clock) until the
 * schedule allows it, so that a recorder that keeps up loses nothing. */
static int bench_burst(const struct bench_opts *o, double seconds, double rate)
{
	const uint64_t chunk = rate > 0 ? 4096 : 1 << 16;
	uint64_t n = 0;
	bench_pin(o->cpu);
	uint64_t t0 = bench_now_ns(), t1;
	uint64_t end = t0 + (uint64_t)(seconds * 1e9);
	do {
		if (rate > 0)
			while (bench_now_ns() - t0 < (uint64_t)((double)n * 1e9 / rate))
				;
		loop_two_ints(chunk);
		n += chunk;
		t1 = bench_now_ns();
	} while (t1 < end);
	double s = (double)(t1 - t0) / 1e9;
	printf("result burst_events %llu\n", (unsigned long long)n);
	printf("result burst_seconds %.6f\n", s);
	printf("result burst_fired_per_s %.0f\n", (double)n / s);
	fflush(stdout);
	return 0;
}

/* ---- command line ---------------------------------------------------------- */

static int bench_usage(const char *argv0);

/* MODE is one loop or a comma-separated list of loops to interleave; --label
 * is then a comma-separated list of as many labels (default: the modes). */
static int bench_list(const struct bench_opts *o, const char *modes, const char *argv0)
{
	static char mbuf[256], lbuf[256];
	bench_loop_fn fns[BENCH_MAX_LOOPS];
	const char *labels[BENCH_MAX_LOOPS];
	int n = 0, nl = 0;
	char *save = NULL;

	snprintf(mbuf, sizeof(mbuf), "%s", modes);
	for (char *m = strtok_r(mbuf, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
		size_t k;
		for (k = 0; k < sizeof(bench_loops) / sizeof(bench_loops[0]); k++)
			if (!strcmp(m, bench_loops[k].mode))
				break;
		if (k == sizeof(bench_loops) / sizeof(bench_loops[0]) || n == BENCH_MAX_LOOPS)
			return bench_usage(argv0);
		fns[n] = bench_loops[k].fn;
		labels[n++] = m;
	}
	if (n == 0)
		return bench_usage(argv0);
	if (o->label) {
		snprintf(lbuf, sizeof(lbuf), "%s", o->label);
		save = NULL;
		for (char *l = strtok_r(lbuf, ",", &save); l && nl < n; l = strtok_r(NULL, ",", &save))
			labels[nl++] = l;
		if (nl != n)
			return bench_usage(argv0);
	}
	return bench_interleaved(o, fns, labels, n);
}

static int bench_usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s MODE [--iters N] [--runs R] [--cpu C] [--label L] [--no-warmup]\n"
		"  MODE: LOOP[,LOOP...] | enabled2 | rdtsc2 | count N | burst SECONDS [--rate R]\n"
		"  LOOP: empty | disabled | enabled | str16 | rdtsc | clock_gettime\n"
		"        (disabled and enabled are the same two-u32 loop, named for the\n"
		"        state the run expects); several loops are interleaved run by run,\n"
		"        and --label then takes as many labels, comma-separated.\n"
		"  enabled2, rdtsc2: the two-u32 or the rdtsc loop on two threads, on CPU C\n"
		"  and C+1 (rdtsc2 shows what the machine itself loses when both run).\n"
		"  count N: fire N two-u32 events, untimed. burst SECONDS: fire for that\n"
		"  long and print the count (--rate R: at most R events per second).\n", argv0);
	return 2;
}

static int bench_main(int argc, char **argv)
{
	struct bench_opts o = { 10000000, 5, 1, 0, NULL };
	const char *mode;
	double arg = 0, rate = 0;
	int i = 2;

	if (argc < 2)
		return bench_usage(argv[0]);
	mode = argv[1];
	if (!strcmp(mode, "count") || !strcmp(mode, "burst")) {
		if (argc < 3)
			return bench_usage(argv[0]);
		arg = strtod(argv[2], NULL);
		i = 3;
	}
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			o.iters = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			o.runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
			o.cpu = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--label") && i + 1 < argc)
			o.label = argv[++i];
		else if (!strcmp(argv[i], "--no-warmup"))
			o.warmup = 0;
		else if (!strcmp(argv[i], "--rate") && i + 1 < argc && !strcmp(mode, "burst"))
			rate = strtod(argv[++i], NULL);
		else
			return bench_usage(argv[0]);
	}
	if (o.runs < 1 || o.runs > 64 || o.iters < 1)
		return bench_usage(argv[0]);

	bench_info();
	int want = -1; /* whether the mode expects tracing on */
	int on = bench_tracing_on();
	if (strstr(mode, "disabled"))
		want = 0;
	else if (strstr(mode, "enabled") || strstr(mode, "str16") || !strcmp(mode, "burst"))
		want = 1;
	if (want == 0 && on == 1)
		fprintf(stderr, "bench: warning: mode %s but %s tracing is on\n", mode, BENCH_TRACER);
	if (want == 1 && on == 0)
		fprintf(stderr, "bench: warning: mode %s but %s tracing is off in this process\n",
			mode, BENCH_TRACER);

	if (!strcmp(mode, "count")) {
		bench_pin(o.cpu);
		loop_two_ints((uint64_t)arg);
		return 0;
	}
	if (!strcmp(mode, "burst"))
		return bench_burst(&o, arg > 0 ? arg : 2, rate > 0 ? rate : 0);
	if (!strcmp(mode, "enabled2") || !strcmp(mode, "rdtsc2")) {
		if (!o.label)
			o.label = mode;
		return bench_two_threads(&o, !strcmp(mode, "enabled2") ? loop_two_ints : loop_rdtsc);
	}
	return bench_list(&o, mode, argv[0]);
}

#endif /* BENCH_HARNESS_H */
