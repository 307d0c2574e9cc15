/*
 * memlat.c - the latency of a load that misses the caches, on this
 * machine now, for bench/mem.sh's header: a chain of dependent loads,
 * one per 64-byte line, in a random order over a block of each size
 * (4 KiB pages, as the tracer's tables and the program's heap use).
 *
 *   memlat SIZE_KIB...
 *
 * Prints "SIZE_KIB NS" per size: nanoseconds per load, the best of three
 * passes. Why bench/mem.sh prints them: a capture of a stack that was
 * seen rarely reads a few lines that the program's own work between two
 * allocations has evicted, so what cc1 costs under `--mem --stacks`
 * follows the latency of the last-level cache and of memory. The host
 * under these VMs changes between sessions, and so does that latency:
 * 20.9 ns at 4 MiB and 155.8 ns at 16 MiB in `make bench` on 2026-11-27
 * (AMD EPYC VM, clocksource tsc), whose L3 is said to be 32 MiB.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LINE 64

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* xorshift64: the same order on every run. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int measure(size_t kib, double *ret_ns)
{
	size_t n = kib * 1024 / LINE;
	if (n < 2)
		return -1;
	/* aligned_alloc wants a multiple of the alignment. */
	char *blk = aligned_alloc(4096, (n * LINE + 4095) & ~(size_t)4095);
	size_t *order = malloc(n * sizeof(*order));
	if (!blk || !order) {
		free(blk);
		free(order);
		return -1;
	}
	/* A random cycle through every line (Sattolo's shuffle): the
	 * prefetchers cannot guess the next address. */
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	uint64_t seed = 0x9e3779b97f4a7c15u;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)(next_rand(&seed) % i);
		size_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		*(char **)(blk + order[i] * LINE) = blk + order[(i + 1) % n] * LINE;
	free(order);
	/* The whole chain once a pass, and at least 1 M loads. */
	size_t loads = n > 1000000 ? n : 1000000;
	double best = 0;
	char *p = blk;
	for (int pass = 0; pass < 3; pass++) {
		double t0 = now_ns();
		for (size_t i = 0; i < loads; i++)
			p = *(char **)p;
		double ns = (now_ns() - t0) / (double)loads;
		if (pass == 0 || ns < best)
			best = ns;
	}
	/* The chain's end, so that the loop is not optimised away. */
	if (p == NULL)
		best = -1;
	free(blk);
	*ret_ns = best;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: memlat SIZE_KIB...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		char *end;
		unsigned long long kib = strtoull(argv[i], &end, 10);
		double ns;
		if (*end || kib == 0 || kib > (1ull << 22)) {
			fprintf(stderr, "memlat: bad size: %s\n", argv[i]);
			return 2;
		}
		if (measure((size_t)kib, &ns) < 0) {
			fprintf(stderr, "memlat: cannot allocate %llu KiB\n", kib);
			return 1;
		}
		printf("%llu %.1f\n", kib, ns);
	}
	return 0;
}
