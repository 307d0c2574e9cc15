/*
 * preinit_lib.c - libpreinit.so (tests/e2e/mem_preinit.sh), linked with
 * libpreinit_dep.so: its constructor allocates seven blocks (1000 to
 * 1006 bytes, 7021 in all), alive at exit. ld.so runs it after
 * libringtrace's constructor and before the program's.
 */
#include <stdlib.h>

extern void *preinit_dep_blocks[4];
void *preinit_lib_blocks[7];

__attribute__((constructor)) static void preinit_lib_init(void)
{
	for (int i = 0; i < 7; i++)
		preinit_lib_blocks[i] = malloc(1000 + (size_t)i);
}

/* 1 if both constructors ran and every block they keep exists. */
int preinit_lib_check(void)
{
	for (int i = 0; i < 7; i++)
		if (!preinit_lib_blocks[i])
			return 0;
	return preinit_dep_blocks[1] && preinit_dep_blocks[2] && preinit_dep_blocks[3];
}
