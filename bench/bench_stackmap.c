/*
 * bench_stackmap.c - ns per stackmap_get_id(): a hit (the stack is stored)
 * and an insert (a new stack into a fresh map), with 16- and 64-frame
 * stacks.
 *
 * hit:    64 distinct stacks inserted first, then `iters` calls cycling
 *         through them (a working set that stays in L1/L2, as the hot
 *         stacks of a traced program do); map of 2^14 stacks.
 * insert: `inserts` distinct stacks, generated before the clock starts,
 *         into a map of 2^17 stacks emptied by stackmap_reset() before each
 *         run (at the end the table is a quarter full); the map's memory is
 *         touched before the first run so that page faults are not timed.
 *
 * hit_16_atomic: the 16-frame hit with the view's per-CPU counting turned
 *         off (map.percpu = 0): the path of a thread that does not run on
 *         the CPU it names, of a process without rseq, of TSan builds.
 * lock:   one LOCKed add per iteration, for scale: a hit takes one (the
 *         reference count; three on the atomic path, docs/stackmap.md),
 *         and their cost varies from machine to machine more than the
 *         rest.
 *
 * The calls name CPU 0, where the thread runs, so that the per-CPU (rseq)
 * path is the one measured, as in a tracer that passes its current CPU.
 * Each figure is the median of 5 runs (after one warm-up run), on one
 * thread pinned to CPU 0 (--cpu; the calls then name that CPU). Output,
 * one line per figure, read by bench/run.sh:
 *   result LABEL VALUE min=... max=... runs=5 iters=N
 * with labels stackmap_hit_16, stackmap_hit_64, stackmap_insert_16,
 * stackmap_insert_64, stackmap_hit_16_atomic, stackmap_lock_add (ns), and
 * one line "info stackmap_percpu 1|0" (whether the per-CPU path was
 * available). Target (reported, never asserted): hit_16 <= 25 ns.
 *
 *   gcc -O2 -falign-loops=32 -std=gnu11 -D_GNU_SOURCE -Iinclude -Isrc \
 *       -o bench_stackmap bench/bench_stackmap.c src/stackmap/stackmap.c \
 *       src/stackmap/stackmap_export.c -lpthread
 *   bench_stackmap [--iters N] [--inserts N] [--runs N] [--cpu C]
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "stackmap/stackmap.h"

#define MAX_RUNS 32
#define HOT 64

/* The CPU the thread is pinned to, which every call names. */
static uint32_t bench_cpu;

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

static double median(double *v, int n)
{
	double s[MAX_RUNS];
	memcpy(s, v, (size_t)n * sizeof(*v));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void report(const char *label, double *v, int runs, uint64_t iters)
{
	double lo = v[0], hi = v[0];
	for (int i = 1; i < runs; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	printf("result %s %.3f min=%.3f max=%.3f runs=%d iters=%llu\n", label, median(v, runs), lo,
	       hi, runs, (unsigned long long)iters);
	fflush(stdout);
}

/* Return addresses that look like a program's: code of a PIE near
 * 0x55..., distinct per (stack, frame), frame 0 unique per stack. */
static void make_stack(uint64_t *ips, uint32_t depth, uint64_t n)
{
	uint64_t x = n * 0x9E3779B97F4A7C15ull + 1;
	for (uint32_t j = 0; j < depth; j++) {
		x ^= x >> 31;
		x *= 0xBF58476D1CE4E5B9ull;
		ips[j] = 0x555555554000ull + ((x >> 20) & 0xfffff);
	}
	ips[0] = 0x555555554000ull + n * 16;
}

static void *map_mem(size_t size)
{
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	if (m == MAP_FAILED) {
		perror("bench_stackmap: mmap");
		exit(1);
	}
	return m;
}

static void open_map(void *mem, size_t size, uint32_t bits, struct stackmap *map)
{
	if (stackmap_init(mem, size, bits, bench_cpu + 2, 0x1234567890abcdefull) < 0 ||
	    stackmap_open(mem, size, map) < 0) {
		fprintf(stderr, "bench_stackmap: cannot lay out the map\n");
		exit(1);
	}
}

static __attribute__((noinline)) uint64_t hit_loop(struct stackmap *map, const uint64_t *stacks,
						    uint32_t depth, uint64_t iters)
{
	uint64_t sum = 0;
	for (uint64_t i = 0; i < iters; i++) {
		uint32_t id = 0;
		stackmap_get_id(map, stacks + (i % HOT) * depth, depth, bench_cpu, &id);
		sum += id;
	}
	return sum;
}

static __attribute__((noinline)) uint64_t insert_loop(struct stackmap *map, const uint64_t *stacks,
						       uint32_t depth, uint64_t n)
{
	uint64_t fails = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t id;
		fails += stackmap_get_id(map, stacks + i * depth, depth, bench_cpu, &id) != 1;
	}
	return fails;
}

static __attribute__((noinline)) void lock_loop(uint64_t *counter, uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++)
		__atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
}

static void bench_lock(uint64_t iters, int runs)
{
	static uint64_t counter __attribute__((aligned(64)));
	double v[MAX_RUNS];
	lock_loop(&counter, iters / 10);
	for (int r = 0; r < runs; r++) {
		uint64_t t = now_ns();
		lock_loop(&counter, iters);
		v[r] = (double)(now_ns() - t) / (double)iters;
	}
	report("stackmap_lock_add", v, runs, iters);
}

static void bench_hit(uint32_t depth, uint64_t iters, int runs, int atomic)
{
	size_t size = stackmap_size(14, bench_cpu + 2);
	void *mem = map_mem(size);
	struct stackmap map;
	open_map(mem, size, 14, &map);
	if (atomic)
		map.percpu = 0;
	uint64_t *stacks = malloc(HOT * depth * sizeof(*stacks));
	if (!stacks)
		exit(1);
	for (uint64_t i = 0; i < HOT; i++) {
		uint32_t id;
		make_stack(stacks + i * depth, depth, i);
		if (stackmap_get_id(&map, stacks + i * depth, depth, bench_cpu, &id) != 1) {
			fprintf(stderr, "bench_stackmap: insert failed\n");
			exit(1);
		}
	}
	double v[MAX_RUNS];
	hit_loop(&map, stacks, depth, iters / 10);
	for (int r = 0; r < runs; r++) {
		uint64_t t = now_ns();
		uint64_t sum = hit_loop(&map, stacks, depth, iters);
		v[r] = (double)(now_ns() - t) / (double)iters;
		if (sum == 0)
			fprintf(stderr, "bench_stackmap: no hit\n");
	}
	char label[64];
	snprintf(label, sizeof(label), "stackmap_hit_%u%s", depth, atomic ? "_atomic" : "");
	report(label, v, runs, iters);
	free(stacks);
	munmap(mem, size);
}

static void bench_insert(uint32_t depth, uint64_t n, int runs)
{
	size_t size = stackmap_size(17, bench_cpu + 2);
	void *mem = map_mem(size);
	struct stackmap map;
	open_map(mem, size, 17, &map);
	if (n > map.max)
		n = map.max;
	uint64_t *stacks = malloc(n * depth * sizeof(*stacks));
	if (!stacks)
		exit(1);
	for (uint64_t i = 0; i < n; i++)
		make_stack(stacks + i * depth, depth, i + 1000);
	double v[MAX_RUNS];
	for (int r = -1; r < runs; r++) {
		if (stackmap_reset(&map, 0) < 0) {
			fprintf(stderr, "bench_stackmap: reset failed\n");
			exit(1);
		}
		uint64_t t = now_ns();
		uint64_t fails = insert_loop(&map, stacks, depth, n);
		double ns = (double)(now_ns() - t) / (double)n;
		if (fails)
			fprintf(stderr, "bench_stackmap: %llu inserts failed\n", (unsigned long long)fails);
		if (r >= 0)
			v[r] = ns;
	}
	char label[64];
	snprintf(label, sizeof(label), "stackmap_insert_%u", depth);
	report(label, v, runs, n);
	free(stacks);
	munmap(mem, size);
}

int main(int argc, char **argv)
{
	uint64_t iters = 10000000, inserts = 32768;
	int runs = 5, cpu = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--inserts") && i + 1 < argc)
			inserts = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
			cpu = atoi(argv[++i]);
		else {
			fprintf(stderr,
				"usage: bench_stackmap [--iters N] [--inserts N] [--runs N] [--cpu C]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > MAX_RUNS || iters < 10 || inserts < 1 || cpu < 0 ||
	    cpu >= STACKMAP_MAX_CPUS - 2) {
		fprintf(stderr,
			"bench_stackmap: --runs 1..%d, --iters >= 10, --inserts >= 1, --cpu 0..%d\n",
			MAX_RUNS, STACKMAP_MAX_CPUS - 3);
		return 2;
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	int r = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (r != 0)
		fprintf(stderr, "bench_stackmap: cannot pin to CPU %d: %s\n", cpu, strerror(r));
	bench_cpu = (uint32_t)cpu;

	/* Whether this process counts per CPU (rseq): a view says so. */
	size_t size = stackmap_size(STACKMAP_BITS_MIN, bench_cpu + 2);
	void *mem = map_mem(size);
	struct stackmap probe;
	open_map(mem, size, STACKMAP_BITS_MIN, &probe);
	printf("info stackmap_percpu %u\n", probe.percpu);
	munmap(mem, size);

	bench_hit(16, iters, runs, 0);
	bench_hit(64, iters, runs, 0);
	bench_insert(16, inserts, runs);
	bench_insert(64, inserts, runs);
	bench_hit(16, iters, runs, 1);
	bench_lock(iters, runs);
	return 0;
}
