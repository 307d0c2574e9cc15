/*
 * early_lib.c - a library whose constructor allocates and keeps 4242
 * bytes (tests/e2e/mem_exec.sh): ld.so runs it before the allocation
 * tracer's constructors, when its events are not registered yet.
 */
#include <stdlib.h>

void *early_block;

__attribute__((constructor)) static void early_lib_init(void)
{
	early_block = malloc(4242);
}
