/*
 * early_prog.c - linked with early_lib.so (tests/e2e/mem_exec.sh): one
 * allocation of 77 bytes in main, freed, and the library's block of its
 * constructor still alive at exit. Prints "early ok" when that block
 * exists.
 */
#include <stdio.h>
#include <stdlib.h>

extern void *early_block;

int main(void)
{
	void *p = malloc(77);
	if (!p || !early_block)
		return 1;
	free(p);
	puts("early ok");
	return 0;
}
