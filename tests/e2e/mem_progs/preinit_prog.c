/*
 * preinit_prog.c - linked with libpreinit.so (tests/e2e/mem_preinit.sh):
 * its own constructor allocates three blocks (2000 to 2002 bytes) before
 * main, alive at exit; main allocates 77 bytes and frees them. Prints
 * "preinit ok" when every constructor's blocks exist.
 */
#include <stdio.h>
#include <stdlib.h>

int preinit_lib_check(void);

static void *prog_blocks[3];
/* Volatile: a compiler may drop a malloc/free pair it sees whole. */
static void *volatile main_block;

__attribute__((constructor)) static void preinit_prog_init(void)
{
	for (int i = 0; i < 3; i++)
		prog_blocks[i] = malloc(2000 + (size_t)i);
}

int main(void)
{
	main_block = malloc(77);
	if (!main_block || !prog_blocks[2] || !preinit_lib_check())
		return 1;
	free(main_block);
	puts("preinit ok");
	return 0;
}
