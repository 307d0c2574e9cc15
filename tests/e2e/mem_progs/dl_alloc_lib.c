/*
 * dl_alloc_lib.c - a shared library that tests/e2e/mem_progs/dl_alloc.c
 * dlopen()s, for tests/e2e/mem_more.sh. Linked with nothing of ringtrace
 * (no tracepoint: the tracer learns of it only as a loaded object).
 *
 * dl_lib_alloc(blk) fills blk[0..DL_LIB_BLOCKS-1] with blocks of
 * DL_LIB_STEP * (i + 1) bytes, all by malloc() called from this one
 * function: 10 blocks, 48 to 480 bytes, 2640 bytes in all. Each block's
 * first byte is its index, its last byte the index's complement, so that
 * the caller can tell the blocks are its own after the library is gone.
 */
#include <stdlib.h>
#include <string.h>

#define DL_LIB_BLOCKS 10
#define DL_LIB_STEP   48

int dl_lib_alloc(void **blk);

/* Not inlined into anything, not cloned: the report names its row after it. */
#ifdef __clang__
__attribute__((noinline))
#else
__attribute__((noinline, noclone))
#endif
int dl_lib_alloc(void **blk)
{
	for (int i = 0; i < DL_LIB_BLOCKS; i++) {
		size_t n = (size_t)DL_LIB_STEP * (size_t)(i + 1);
		unsigned char *p = malloc(n);
		if (!p)
			return -1;
		/* Escapes: no compiler may elide or merge the allocation. */
		__asm__ volatile("" : : "r"(p) : "memory");
		memset(p, 0xa5, n); /* not 0: malloc + memset 0 would become calloc */
		p[0] = (unsigned char)i;
		p[n - 1] = (unsigned char)~i;
		blk[i] = p;
	}
	return DL_LIB_BLOCKS;
}
