/*
 * memsample.c - Poisson byte sampling of allocations, inside the traced
 * program (part of libringtrace-malloc.so), as tcmalloc's heap profiler
 * and Go's runtime do it. Called by the wrappers of memtrace.c; set up
 * once by memsample_init() from the library's constructor when the
 * recorder set RINGTRACE_MEM_SAMPLE=BYTES (docs/mem.md, "Sampling").
 *
 * The bytes a thread allocates are a line on which the samples are the
 * points of a Poisson process of mean spacing N bytes: each thread keeps
 * a countdown, drawn from the exponential distribution of mean N, and
 * the allocation whose bytes cross it is sampled, then a new countdown is
 * drawn from the end of that allocation (the process is memoryless, so
 * restarting there is exact). An allocation of s bytes is thus sampled
 * with probability 1 - exp(-s/N), and stands for 1 / (1 - exp(-s/N))
 * allocations of its size (memsample_weight): the consumer's estimates
 * are unbiased. Each thread has its own generator (splitmix64, seeded
 * from the process's seed and the thread's rank) and draws its first
 * countdown at its first allocation; a forked child draws again.
 *
 * The sampled blocks alive are kept in a fixed-size set, so that their
 * frees (and only theirs) are recorded: open addressing over a table
 * mapped once at start-up (64 probes at most, keys claimed and released
 * by CAS, freed entries become tombstones that inserts reuse), in front
 * of which a filter of 2^13 8-bit counts of the blocks per hash bucket
 * answers "not sampled" for most frees with one load from 8 KiB. A
 * sampled block that finds no room in the table is not remembered: the
 * caller counts it and says so in the trace (mem:untracked, or the
 * aggregate block's `untracked`). Load: one subtraction per allocation,
 * one load per free; the rest once per N bytes.
 *
 * No libm: the logarithm of the exponential draw and the exponential of
 * the weight are computed here (a few multiplications, 1e-9 relative),
 * so nothing can allocate, take a lock or be slow in the program.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/mix.h"
#include "mem/memsample.h"

int memsample_mode;
uint64_t memsample_mean;
uint64_t memsample_seed;
int memsample_status;
int memsample_fixed_seed;
uint64_t memsample_capacity;

__thread int64_t memsample_left __attribute__((tls_model("initial-exec")));
/* The thread's generator; seeded with it at its first allocation. */
static __thread uint64_t rng __attribute__((tls_model("initial-exec")));
static __thread int rng_seeded __attribute__((tls_model("initial-exec")));
/* Threads seeded so far: each thread's rank (deterministic for a given
 * order of first allocations, e.g. one allocating thread). */
static uint64_t threads_seeded;
/* Forks made by this process: a child's generator derives from it. */
static uint64_t forks;

uint8_t memsample_filter[1u << MEMSAMPLE_FILTER_BITS];

struct sblk {
	uint64_t key;                /* the block's address; 0 free; SB_TOMB freed */
	uint64_t info;               /* the caller's, read only by the block's free */
};
#define SB_TOMB   UINT64_C(1)
#define SB_PROBES 64
static struct sblk *set;
static uint64_t set_mask;


static inline uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* ---- arithmetic without libm ---------------------------------------------- */

static inline uint64_t dbits(double d)
{
	uint64_t b;
	memcpy(&b, &d, sizeof(b));
	return b;
}

static inline double bitsd(uint64_t b)
{
	double d;
	memcpy(&d, &b, sizeof(d));
	return d;
}

/* ln(u) for a normal positive u: u = 2^e m with m in [sqrt(1/2), sqrt(2)),
 * ln m = 2 atanh(t), t = (m - 1) / (m + 1), |t| < 0.172: the series to
 * t^13 is within 1e-12. */
static double ln_pos(double u)
{
	uint64_t b = dbits(u);
	int e = (int)((b >> 52) & 0x7ff) - 1023;
	double m = bitsd((b & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52));
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	double t = (m - 1) / (m + 1), t2 = t * t;
	double s = 1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 * (1.0 / 9 + t2 * (1.0 / 11 + t2 / 13)))));
	return e * 0.6931471805599453 + 2 * t * s;
}

/* exp(-x) for x in [0, 700]: 2^-(k + f), k an integer, f in [0, 1);
 * 2^-f by its series to the 12th power (within 1e-12). */
static double exp_neg(double x)
{
	double y = x * 1.4426950408889634;
	int k = (int)y;
	double f = (y - k) * 0.6931471805599453, term = 1, sum = 1;
	for (int i = 1; i <= 12; i++) {
		term *= -f / i;
		sum += term;
	}
	return sum * bitsd((uint64_t)(1023 - k) << 52);
}

double memsample_weight(uint64_t size)
{
	double x = (double)size / (double)memsample_mean;
	if (x > 40)
		return 1; /* 1 - exp(-40) is 1 to the double's precision */
	double q;
	if (x < 0.0625) /* 1 - exp(-x) without the cancellation */
		q = x * (1 - x / 2 * (1 - x / 3 * (1 - x / 4 * (1 - x / 5 * (1 - x / 6)))));
	else
		q = 1 - exp_neg(x);
	return q > 0 ? 1 / q : (double)memsample_mean;
}

/* ---- the countdown ---------------------------------------------------------- */

/* An exponential draw of mean memsample_mean, at least 1: -N ln U with U
 * uniform in (0, 1] (53 bits). */
static int64_t draw(void)
{
	double u = (double)((splitmix(&rng) >> 11) + 1) * 0x1.0p-53;
	double x = -ln_pos(u) * (double)memsample_mean;
	if (x > 0x1.0p62)
		x = 0x1.0p62;
	return (int64_t)x + 1;
}

static void seed_thread(void)
{
	uint64_t rank = __atomic_fetch_add(&threads_seeded, 1, __ATOMIC_RELAXED);
	rng = rt_mix64(memsample_seed ^ rt_mix64(rank + 1));
	rng_seeded = 1;
	memsample_left = draw();
}

int memsample_slow(size_t size)
{
	if (!rng_seeded) {
		/* The thread's first allocation: its own first draw, which
		 * this allocation counts against like any other. */
		seed_thread();
		int64_t left = memsample_left - (int64_t)size;
		if (size < INT64_MAX && left > 0) {
			memsample_left = left;
			return 0;
		}
	}
	memsample_left = draw();
	return 1;
}

/* A forked child (only the forking thread exists): a generator of its
 * own, or parent and child would sample the same allocations. With a
 * fixed seed it depends on the parent's count of forks, not on the pid,
 * so that runs repeat. Its set is the parent's at the fork: blocks the
 * parent sampled and the child frees are recorded in the child. */
static void fork_prepare(void)
{
	__atomic_fetch_add(&forks, 1, __ATOMIC_RELAXED);
}

static void fork_child(void)
{
	uint64_t salt = memsample_fixed_seed ? forks : (uint64_t)getpid() ^ rt_mix64((uint64_t)time(NULL));
	memsample_seed = rt_mix64(memsample_seed ^ rt_mix64(salt ^ UINT64_C(0x666f726b)));
	threads_seeded = 0;
	if (memsample_mode == MEMSAMPLE_ON)
		seed_thread();
}

/* ---- the set ------------------------------------------------------------------ */

/* 8-bit counts: the filter is 8 KiB, half the cache lines a free may
 * miss on (16-bit counts cost cc1's frees a sixth more, perf cpu-clock).
 * A bucket saturates at 255 blocks alive, 16 times the mean load of the
 * largest set at N = 512 KiB; a saturated bucket only answers "maybe"
 * (a probe of the set) for good. */
static void filter_add(uintptr_t p, int d)
{
	uint8_t *f = &memsample_filter[memsample_filter_of(p)];
	uint8_t old = __atomic_load_n(f, __ATOMIC_RELAXED);
	do {
		if (old == UINT8_MAX)
			return; /* saturated: stays "maybe" for good */
	} while (!__atomic_compare_exchange_n(f, &old, (uint8_t)(old + d), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

int memsample_insert(uintptr_t p, uint64_t info)
{
	if (!set)
		return -ENOSPC;
	/* The count first: a free that finds it (after this allocation
	 * returned) then finds the entry too. A count raised for a block
	 * that finds no entry is lowered again: only a false "maybe". */
	filter_add(p, 1);
	uint64_t i = rt_mix64((uint64_t)p) & set_mask;
	for (int n = 0; n < SB_PROBES; n++, i = (i + 1) & set_mask) {
		uint64_t k = __atomic_load_n(&set[i].key, __ATOMIC_RELAXED);
		if ((k == 0 || k == SB_TOMB) &&
		    __atomic_compare_exchange_n(&set[i].key, &k, (uint64_t)p, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			/* Read by the block's free only, which the program
			 * orders after this allocation returned. */
			__atomic_store_n(&set[i].info, info, __ATOMIC_RELAXED);
			return 0;
		}
	}
	filter_add(p, -1);
	return -ENOSPC;
}

int memsample_take(uintptr_t p, uint64_t *ret_info)
{
	if (!set || p <= SB_TOMB)
		return 0;
	uint64_t i = rt_mix64((uint64_t)p) & set_mask;
	for (int n = 0; n < SB_PROBES; n++, i = (i + 1) & set_mask) {
		uint64_t k = __atomic_load_n(&set[i].key, __ATOMIC_RELAXED);
		if (k == 0)
			return 0;
		if (k == p) {
			uint64_t info = __atomic_load_n(&set[i].info, __ATOMIC_RELAXED);
			/* Before the real free (the caller's order), so the
			 * address cannot be handed out and inserted again
			 * first. A CAS: of two racing frees of the block (the
			 * program's bug) one only takes it. */
			if (!__atomic_compare_exchange_n(&set[i].key, &k, SB_TOMB, 0, __ATOMIC_RELAXED,
							 __ATOMIC_RELAXED))
				return 0;
			filter_add(p, -1);
			*ret_info = info;
			return 1;
		}
	}
	return 0;
}

void memsample_forget_all(void)
{
	if (!set)
		return;
	/* Zero pages again (private anonymous memory: MADV_DONTNEED empties
	 * it); a MAP_FIXED mapping over it that failed could have left a
	 * hole. */
	size_t len = (set_mask + 1) * sizeof(struct sblk);
	if (madvise(set, len, MADV_DONTNEED) != 0)
		memset(set, 0, len);
	memset(memsample_filter, 0, sizeof(memsample_filter));
}

/* ---- configuration ---------------------------------------------------------------- */

/* BYTES[k|K|m|M|g|G] (binary multiples), 1 .. 2^40: 0, or EINVAL/ERANGE. */
static int parse_mean(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	const char *c = s;
	if (*c < '0' || *c > '9')
		return EINVAL;
	for (; *c >= '0' && *c <= '9'; c++)
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*c - '0'), &v))
			return ERANGE;
	unsigned shift = 0;
	switch (*c) {
	case 'k': case 'K': shift = 10; c++; break;
	case 'm': case 'M': shift = 20; c++; break;
	case 'g': case 'G': shift = 30; c++; break;
	default: break;
	}
	if (*c)
		return EINVAL;
	if (v == 0)
		return EINVAL;
	if (v > (UINT64_C(1) << 40) >> shift)
		return ERANGE;
	*ret = v << shift;
	return 0;
}

/* A decimal or 0x hexadecimal u64: 0, or EINVAL/ERANGE. */
static int parse_seed(const char *s, uint64_t *ret)
{
	int base = 10;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return EINVAL;
	uint64_t v = 0;
	for (; *s; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return EINVAL;
		if (__builtin_mul_overflow(v, (uint64_t)base, &v) || __builtin_add_overflow(v, (uint64_t)d, &v))
			return ERANGE;
	}
	*ret = v;
	return 0;
}

void memsample_init(void)
{
	const char *env = getenv("RINGTRACE_MEM_SAMPLE");
	if (!env)
		return; /* every call recorded, as without this file */
	uint64_t mean = 0, seed = 0;
	int r = parse_mean(env, &mean);
	const char *senv = getenv("RINGTRACE_MEM_SAMPLE_SEED");
	if (!r && senv) {
		r = parse_seed(senv, &seed);
		memsample_fixed_seed = !r;
	}
	if (r) {
		/* Neither every call (the cost the user meant to avoid) nor a
		 * mean of our choosing: nothing, and the trace says why. */
		memsample_status = r;
		__atomic_store_n(&memsample_mode, MEMSAMPLE_BAD, __ATOMIC_RELAXED);
		return;
	}
	if (!senv) {
		if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed)) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			seed = rt_mix64((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^ (uint64_t)getpid() ^
				   (uint64_t)(uintptr_t)&seed);
		}
	}
	/* Room for the samples of a live heap of 16 GiB at a quarter full:
	 * about heap / N of them (blocks of N bytes and more count one each). */
	uint64_t cap = UINT64_C(1) << 12;
	while (cap < (UINT64_C(1) << 22) && cap / 4 < (UINT64_C(1) << 34) / mean)
		cap <<= 1;
	/* A smaller or larger set when asked (tests fill it); a bad value
	 * is ignored, as RINGTRACE_MEM_AGG_BLOCKS is: it changes no figure. */
	const char *b = getenv("RINGTRACE_MEM_SAMPLE_BLOCKS");
	if (b) {
		uint64_t v;
		if (!parse_seed(b, &v) && v >= 16 && v <= (UINT64_C(1) << 22) && !(v & (v - 1)))
			cap = v;
	}
	void *t = mmap(NULL, cap * sizeof(struct sblk), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t != MAP_FAILED) {
		set = t;
		set_mask = cap - 1;
		memsample_capacity = cap;
	}
	/* Without a table (no memory) every sample is counted untracked. */
	memsample_mean = mean;
	memsample_seed = seed;
	pthread_atfork(fork_prepare, NULL, fork_child);
	__atomic_store_n(&memsample_mode, MEMSAMPLE_ON, __ATOMIC_RELAXED);
}
