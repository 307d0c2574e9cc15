/*
 * tcmalloc_sizes.c - a program linked with gperftools' tcmalloc
 * (-ltcmalloc), for tests/e2e/mem_more.sh.
 *
 * It prints the usable size of one block of each of a few requested
 * sizes, as its own allocator reports them. The sizes are chosen so that
 * tcmalloc's size classes differ from glibc's and from jemalloc's (200 ->
 * 208, where glibc gives 200 and jemalloc 224; 1030 -> 1152, not 1032 or
 * 1280; 100000 -> 106496, not 100008 or 114688): when the trace carries
 * the same usable sizes, the tracer called the program's allocator.
 *
 * Then C++ operators new and delete, called by their mangled names (this
 * is C, and the program has no C++ runtime of its own: libtcmalloc.so
 * defines the operators, and comes before libstdc++ in the search order,
 * so they are tcmalloc's, which do not go through malloc). A known number
 * of each, in functions of their own, so that the report by function can
 * count them exactly:
 *
 *   new_plain()   NEW_N  x operator new(NEW_SIZE), freed by operator
 *                 delete (plain and sized, alternately)
 *   new_array()   NEWA_N x operator new[](NEWA_SIZE), freed by delete[]
 *                 (plain and sized, alternately)
 *   churn()       the C API (malloc, calloc, realloc, posix_memalign), all
 *                 freed
 *
 * Output: one "SIZE USABLE" line per size, the usable sizes of a new and
 * a new[] block, then a checksum. Exit status 0.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The operators by their Itanium C++ ABI names. */
void *_Znwm(size_t size);
void *_Znam(size_t size);
void _ZdlPv(void *p);
void _ZdlPvm(void *p, size_t size);
void _ZdaPv(void *p);
void _ZdaPvm(void *p, size_t size);

#define NEW_N     300
#define NEW_SIZE  200
#define NEWA_N    120
#define NEWA_SIZE 1030

static const size_t sizes[] = { 17, 100, 200, 1030, 5000, 100000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* The report names rows by function: no clone with another name. */
#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

/* The block's address escapes: a compiler may not elide an allocation
 * whose block it can prove unused (clang removes malloc/free pairs). */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

static volatile uint64_t sink;

static NOINLINE void new_plain(void)
{
	void *p[NEW_N];
	for (int i = 0; i < NEW_N; i++) {
		p[i] = _Znwm(NEW_SIZE);
		ESCAPE(p[i]);
		memset(p[i], i & 0xff, NEW_SIZE);
	}
	for (int i = 0; i < NEW_N; i++) {
		sink += ((unsigned char *)p[i])[NEW_SIZE - 1];
		if (i % 2)
			_ZdlPvm(p[i], NEW_SIZE);
		else
			_ZdlPv(p[i]);
	}
}

static NOINLINE void new_array(void)
{
	for (int i = 0; i < NEWA_N; i++) {
		unsigned char *a = _Znam(NEWA_SIZE);
		ESCAPE(a);
		memset(a, 0x5a, NEWA_SIZE);
		sink += a[i % NEWA_SIZE];
		if (i % 2)
			_ZdaPvm(a, NEWA_SIZE);
		else
			_ZdaPv(a);
	}
}

static NOINLINE int churn(void)
{
	for (int round = 0; round < 500; round++) {
		size_t n = (size_t)(round % 37) * 40 + 1;
		unsigned char *p = calloc(n, 1);
		unsigned char *q = malloc(n);
		if (!p || !q)
			return -1;
		ESCAPE(p);
		ESCAPE(q);
		memset(q, round & 0xff, n);
		unsigned char *r = realloc(p, n * 2);
		if (!r)
			return -1;
		memcpy(r + n, q, n);
		void *a = NULL;
		if (posix_memalign(&a, 64, n) != 0)
			return -1;
		ESCAPE(r);
		ESCAPE(a);
		sink = sink * 31 + r[n] + r[2 * n - 1] + ((uintptr_t)a % 64);
		free(a);
		free(q);
		free(r);
	}
	return 0;
}

int main(void)
{
	void *blk[NSIZES];
	for (size_t i = 0; i < NSIZES; i++) {
		blk[i] = malloc(sizes[i]);
		if (!blk[i])
			return 1;
		ESCAPE(blk[i]);
		/* Not 0: malloc + memset 0 may become calloc. */
		memset(blk[i], (int)i + 1, sizes[i]);
		printf("%zu %zu\n", sizes[i], malloc_usable_size(blk[i]));
	}
	for (size_t i = 0; i < NSIZES; i++)
		free(blk[i]);

	void *n = _Znwm(NEW_SIZE), *a = _Znam(NEWA_SIZE);
	ESCAPE(n);
	ESCAPE(a);
	printf("new %d %zu\nnew[] %d %zu\n", NEW_SIZE, malloc_usable_size(n), NEWA_SIZE, malloc_usable_size(a));
	_ZdlPv(n);
	_ZdaPv(a);

	new_plain();
	new_array();
	if (churn() < 0)
		return 1;
	printf("checksum %llu\n", (unsigned long long)sink);
	return 0;
}
