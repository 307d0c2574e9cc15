/*
 * jemalloc_sizes.c - a program linked with jemalloc (-ljemalloc), for
 * tests/e2e/mem_real.sh: it prints the usable size of one block of each
 * of a few requested sizes, as its own allocator reports them. jemalloc
 * rounds up to its size classes (17 -> 32, 100 -> 112), glibc to 16-byte
 * chunks less the header (17 -> 24, 100 -> 104): when the trace of this
 * program carries the same usable sizes, the tracer called the program's
 * allocator, not glibc's. Then some churn through the standard API
 * (calloc, realloc, posix_memalign, aligned_alloc, free), all of it freed.
 * Output: one "SIZE USABLE" line per size, then a checksum.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t sizes[] = { 17, 100, 1000, 5000, 40000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

int main(void)
{
	void *blk[NSIZES];
	for (size_t i = 0; i < NSIZES; i++) {
		blk[i] = malloc(sizes[i]);
		if (!blk[i])
			return 1;
		memset(blk[i], (int)i, sizes[i]);
		printf("%zu %zu\n", sizes[i], malloc_usable_size(blk[i]));
	}
	for (size_t i = 0; i < NSIZES; i++)
		free(blk[i]);

	uint64_t sum = 0;
	for (int round = 0; round < 2000; round++) {
		size_t n = (size_t)(round % 61) * 24 + 1;
		unsigned char *p = calloc(n, 1);
		unsigned char *q = malloc(n);
		if (!p || !q)
			return 1;
		memset(q, round & 0xff, n);
		p = realloc(p, n * 3);
		if (!p)
			return 1;
		memcpy(p + n, q, n);
		void *a = NULL;
		if (posix_memalign(&a, 64, n) != 0)
			return 1;
		void *b = aligned_alloc(256, 512);
		if (!b)
			return 1;
		sum = sum * 31 + p[n] + p[n * 2 - 1] + ((uintptr_t)a % 64) + ((uintptr_t)b % 256);
		free(b);
		free(a);
		free(q);
		free(p);
	}
	printf("checksum %llu\n", (unsigned long long)sum);
	return 0;
}
