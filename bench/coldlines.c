/*
 * coldlines.c - what reading a few cold cache lines at every malloc costs
 * a program, with no tracer: an LD_PRELOAD library whose malloc reads
 * COLDLINES_N lines (default 4) at random in a block of COLDLINES_MIB MiB
 * (default 64), then calls the real malloc. The loads do not depend on
 * each other, as a capture's loads of its caches and of the stack map
 * often do not: the figure is a floor for what that many misses cost.
 *
 *   cc -O2 -shared -fPIC -o coldlines.so bench/coldlines.c -ldl
 *   time PROGRAM ARGS...
 *   time env LD_PRELOAD=$PWD/coldlines.so COLDLINES_N=4 PROGRAM ARGS...
 *
 * docs/stack-capture.md ("What a cold line costs") has the figures for
 * cc1: a budget for how many lines a capture may miss.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define LINE 64

static void *(*real_malloc)(size_t);
static volatile uint64_t *blk;
static size_t nlines;
static int nread = 4;
static __thread int inside;
static __thread uint64_t seed = 0x9e3779b97f4a7c15u;

__attribute__((constructor)) static void coldlines_init(void)
{
	real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	const char *m = getenv("COLDLINES_MIB"), *n = getenv("COLDLINES_N");
	size_t mib = m ? strtoul(m, NULL, 10) : 64;
	if (n)
		nread = atoi(n);
	if (mib == 0 || mib > 4096 || nread < 0 || nread > 64)
		return;
	nlines = mib * 1024 * 1024 / LINE;
	void *p = mmap(NULL, nlines * LINE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	/* Every page touched: a read then misses the caches, not the page
	 * tables' empty zero page. */
	for (size_t i = 0; i < nlines; i++)
		((uint64_t *)p)[i * (LINE / 8)] = i;
	blk = p;
}

void *malloc(size_t size)
{
	if (!real_malloc)
		real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	if (blk && !inside) {
		inside = 1;
		uint64_t sum = 0;
		for (int i = 0; i < nread; i++) {
			/* xorshift64 */
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			sum += blk[(seed % nlines) * (LINE / 8)];
		}
		/* Used, so that the loads stay. */
		if (sum == 1)
			seed++;
		inside = 0;
	}
	return real_malloc(size);
}
