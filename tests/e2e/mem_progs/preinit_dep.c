/*
 * preinit_dep.c - libpreinit_dep.so (tests/e2e/mem_preinit.sh): a
 * dependency of libpreinit.so whose constructor allocates four blocks
 * (500 to 503 bytes) and frees the first: 4 allocations, 1 free, 3 blocks
 * (1506 bytes) alive at exit. ld.so runs it after libringtrace's
 * constructor.
 */
#include <stdlib.h>

void *preinit_dep_blocks[4];

__attribute__((constructor)) static void preinit_dep_init(void)
{
	for (int i = 0; i < 4; i++)
		preinit_dep_blocks[i] = malloc(500 + (size_t)i);
	free(preinit_dep_blocks[0]);
	preinit_dep_blocks[0] = NULL;
}
