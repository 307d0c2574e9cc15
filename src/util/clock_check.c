/*
 * clock_check.c - the recorder's checks of the TSC: before a recording, a
 * cross-CPU consistency test (clk_check_tsc); during it, samples of the
 * TSC against CLOCK_MONOTONIC (clk_watch); after it, whether the TSC kept
 * that relation (clk_drift).
 *
 * Called by `ringtrace record` once at start (a few milliseconds, one
 * spinning thread per CPU) and once at the end; never inside the traced
 * program, which trusts the CPU's word alone when it makes its own
 * buffers.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace-abi.h>

#include "common/clock.h"

#define CHECK_HANDOVERS 20000u       /* enough to meet every pair many times */
#define CHECK_MAX_CPUS 256

struct check_shared {
	uint64_t turn;               /* whose turn: turn % n */
	uint64_t last;               /* the reading of the turn before */
	int last_cpu;
	uint64_t limit;              /* turns to take */
	uint64_t deadline_ns;
	int stop;
	int go;                      /* set once every thread exists */
	int n;
};

#if defined(__x86_64__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() do { } while (0)
#endif

struct check_worker {
	pthread_t th;
	int idx, cpu, started;
	struct check_shared *sh;
	uint64_t min_gap;            /* cycles, smallest hand-over from the one before */
	uint64_t handovers;
	uint64_t back;               /* cycles, largest step back */
	int back_from;
};

static uint64_t mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t rdtscp(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi, aux;
	/* rdtscp waits for the loads before it: the reading is taken after
	 * this thread saw its turn. */
	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

static void *check_run(void *arg)
{
	struct check_worker *w = arg;
	struct check_shared *sh = w->sh;
	uint64_t spins = 0;
	/* Acquire: pairs with the release store of go, after n, limit and
	 * the deadline were set. */
	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		cpu_relax();
	for (;;) {
		/* Acquire: pairs with the release store of turn below, made by
		 * the thread before us after it wrote last. */
		uint64_t t = __atomic_load_n(&sh->turn, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&sh->stop, __ATOMIC_RELAXED) || t >= sh->limit)
			break;
		if ((int)(t % (uint64_t)sh->n) != w->idx) {
			if ((++spins & 0xffff) == 0 && mono_now() > sh->deadline_ns)
				__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED); /* seen by every waiter */
			cpu_relax();
			continue;
		}
		uint64_t v = rdtscp();
		if (t > 0 && sh->last_cpu != w->cpu) {
			w->handovers++;
			if (v < sh->last) {
				if (sh->last - v > w->back) {
					w->back = sh->last - v;
					w->back_from = sh->last_cpu;
				}
			} else if (v - sh->last < w->min_gap) {
				w->min_gap = v - sh->last;
			}
		}
		sh->last = v;
		sh->last_cpu = w->cpu;
		if ((t & 0xff) == 0 && mono_now() > sh->deadline_ns)
			__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
		/* Release: last and last_cpu are visible to the next thread
		 * (its acquire load of turn above). */
		__atomic_store_n(&sh->turn, t + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

int clk_check_tsc(unsigned budget_ms, struct clk_check *ret)
{
	memset(ret, 0, sizeof(*ret));
	const char *force = getenv("RINGTRACE_CLOCK_CHECK");
	if (force && !strcmp(force, "fail")) {
		ret->forced = 1;
		return 0;
	}
#if !defined(__x86_64__)
	(void)budget_ms;
	return -ENOTSUP;
#else
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpu < 1)
		ncpu = 1;
	if (ncpu > CHECK_MAX_CPUS)
		ncpu = CHECK_MAX_CPUS;
	struct check_worker *w = calloc((size_t)ncpu, sizeof(*w));
	if (!w)
		return -ENOMEM;
	struct check_shared sh = { 0 };
	sh.limit = CHECK_HANDOVERS;
	struct clk_sample s0, s1;
	clk_sample(RINGTRACE__CLOCK_TSC, &s0);
	int n = 0;
	for (long c = 0; c < ncpu; c++) {
		cpu_set_t set;
		pthread_attr_t attr;
		CPU_ZERO(&set);
		CPU_SET((int)c, &set);
		pthread_attr_init(&attr);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		w[n].idx = n;
		w[n].cpu = (int)c;
		w[n].sh = &sh;
		w[n].min_gap = UINT64_MAX;
		/* An offline CPU, or one outside our cpuset, refuses. */
		if (pthread_create(&w[n].th, &attr, check_run, &w[n]) == 0) {
			w[n].started = 1;
			n++;
		}
		pthread_attr_destroy(&attr);
	}
	sh.n = n ? n : 1;
	sh.deadline_ns = mono_now() + (uint64_t)budget_ms * 1000000u;
	/* Release: n and the deadline before any turn is taken (the
	 * workers' acquire load of go). */
	__atomic_store_n(&sh.go, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);
	clk_sample(RINGTRACE__CLOCK_TSC, &s1);
	long double per_ns = 1.0L;
	if (s1.mono_ns > s0.mono_ns && s1.value > s0.value)
		per_ns = (long double)(s1.value - s0.value) / (long double)(s1.mono_ns - s0.mono_ns);
	ret->passed = 1;
	ret->ncpus = n;
	uint64_t skew = 0;
	for (int i = 0; i < n; i++) {
		ret->handovers += w[i].handovers;
		if (w[i].back) {
			uint64_t ns = (uint64_t)((long double)w[i].back / per_ns + 0.5L);
			if (ret->passed || ns > ret->back_ns) {
				ret->back_ns = ns ? ns : 1;
				ret->back_from = w[i].back_from;
				ret->back_to = w[i].cpu;
			}
			ret->passed = 0;
		}
		if (w[i].min_gap != UINT64_MAX && w[i].min_gap > skew)
			skew = w[i].min_gap;
	}
	ret->skew_ns = (uint64_t)((long double)skew / per_ns + 0.5L);
	free(w);
	return 0;
#endif
}

static int cmp_ld(const void *a, const void *b)
{
	long double x = *(const long double *)a, y = *(const long double *)b;
	return x < y ? -1 : x > y;
}

void clk_drift(const struct clk_sample *s, size_t n, struct clk_drift *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (n < 2 || s[n - 1].mono_ns <= s[0].mono_ns || s[n - 1].value <= s[0].value)
		return;
	/* The reference rate is the median of the intervals' rates: one
	 * step does not bend it, as it would a fit over the whole recording. */
	long double *rates = malloc((n - 1) * sizeof(*rates));
	size_t nr = 0;
	long double rate = (long double)(s[n - 1].value - s[0].value) / (long double)(s[n - 1].mono_ns - s[0].mono_ns);
	for (size_t i = 1; rates && i < n; i++)
		if (s[i].mono_ns > s[i - 1].mono_ns && s[i].value > s[i - 1].value)
			rates[nr++] = (long double)(s[i].value - s[i - 1].value) /
				      (long double)(s[i].mono_ns - s[i - 1].mono_ns);
	if (nr) {
		qsort(rates, nr, sizeof(*rates), cmp_ld);
		rate = rates[(nr - 1) / 2];
	}
	free(rates);
	long double worst = 0;
	for (size_t i = 1; i < n; i++) {
		long double dm = (long double)s[i].mono_ns - (long double)s[i - 1].mono_ns;
		long double dv = (long double)s[i].value - (long double)s[i - 1].value;
		long double off = dm - dv / rate;
		if (off < 0)
			off = -off;
		/* NTP may slew CLOCK_MONOTONIC by 500 ppm; a sample is good to a
		 * few microseconds on a busy machine. */
		long double allowed = dm * 500e-6L + 20000.0L;
		if (dm < 0)
			allowed = 20000.0L;
		if (off > allowed && off > worst)
			worst = off;
	}
	ret->jump_ns = (uint64_t)(worst + 0.5L);
	if (n >= 3) {
		long double d0 = (long double)(s[1].mono_ns - s[0].mono_ns);
		long double d1 = (long double)s[n - 1].mono_ns - (long double)s[n - 2].mono_ns;
		if (d0 > 0 && d1 > 0 && s[1].value > s[0].value) {
			long double r0 = (long double)(s[1].value - s[0].value) / d0;
			long double r1 = ((long double)s[n - 1].value - (long double)s[n - 2].value) / d1;
			ret->drift_ppm = (double)((r1 - r0) / r0 * 1e6L);
		}
	}
}

void clk_watch_tick(struct clk_watch *w, uint32_t clock, const struct clk_sample *c0, uint64_t now_ms)
{
	if (!w->every_ms || now_ms - w->last_ms < w->every_ms)
		return;
	w->last_ms = now_ms;
	if (!w->s) {
		w->s = calloc(CLK_WATCH_MAX + 1, sizeof(*w->s));
		if (!w->s) {
			w->every_ms = 0;
			return;
		}
		w->s[0] = *c0;
		w->n = 1;
	}
	if (w->n == CLK_WATCH_MAX) {
		for (size_t i = 1; i < CLK_WATCH_MAX / 2; i++)
			w->s[i] = w->s[2 * i];
		w->n = CLK_WATCH_MAX / 2;
		w->every_ms *= 2;
	}
	clk_sample(clock, &w->s[w->n]);
	if (w->n >= 2)
		w->s[w->n].mono_ns += (uint64_t)w->test_jump_ns;
	w->n++;
}

size_t clk_watch_end(struct clk_watch *w, const struct clk_sample *c0, const struct clk_sample *c1,
		     struct clk_drift *ret)
{
	if (!w->every_ms)
		return 0;
	if (!w->s) {
		struct clk_sample two[2] = { *c0, *c1 };
		clk_drift(two, 2, ret);
		return 2;
	}
	w->s[w->n] = *c1;
	if (w->n >= 2)
		w->s[w->n].mono_ns += (uint64_t)w->test_jump_ns;
	clk_drift(w->s, w->n + 1, ret);
	return w->n + 1;
}

void clk_watch_free(struct clk_watch *w)
{
	free(w->s);
	w->s = NULL;
	w->n = 0;
}
