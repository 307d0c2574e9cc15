/*
 * fx.c - fixture program for tests/unit/test_sym.c: a few functions whose
 * names, addresses and call lines it prints itself, and its own loaded
 * objects as src/sym/maps.c sees them. The test symbolises what this
 * prints and compares; nothing expected is written in the test.
 *
 * Built several ways by mk/stack.mk (-g, no debug information, stripped
 * with a build-id debug file, stripped with a .gnu_debuglink file);
 * FX_VARIANT makes each build a different file (a different build id).
 *
 * Output, one record per line:
 *   map BIAS START END BUILD_ID|- FLAGS PATH
 *   func ADDRESS NAME                 the function's first instruction
 *   call RETURN_ADDRESS LINE NAME     a call made by NAME on source line LINE
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "sym/maps.h"

#ifndef FX_VARIANT
#define FX_VARIANT "plain"
#endif

/* Where fx_mark was called from: filled by fx_mark, printed by main. */
static struct {
	const char *fn;
	uintptr_t ra;
	int line;
} calls[8];
static int ncalls;

__attribute__((noinline)) static void fx_mark(const char *fn, int line)
{
	if (ncalls < 8) {
		calls[ncalls].fn = fn;
		calls[ncalls].ra = (uintptr_t)__builtin_return_address(0);
		calls[ncalls].line = line;
		ncalls++;
	}
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) int fx_alpha(int x);
__attribute__((noinline)) int fx_alpha(int x)
{
	fx_mark(__func__, __LINE__);
	return x + 1;
}

__attribute__((noinline)) static int fx_beta(int x)
{
	int y = x * 3;
	fx_mark(__func__, __LINE__);
	return y + fx_alpha(y);
}

int main(void)
{
	static struct rt_map maps[256];
	size_t n = 0;
	int v = fx_beta(2);
	if (rt_maps_snapshot(maps, 256, &n, NULL) < 0)
		return 1;
	printf("variant %s %d\n", FX_VARIANT, v);
	for (size_t i = 0; i < n; i++)
		printf("map 0x%" PRIxPTR " 0x%" PRIxPTR " 0x%" PRIxPTR " %s %u %s\n", maps[i].bias,
		       maps[i].start, maps[i].end, maps[i].build_id_len ? maps[i].build_id : "-",
		       maps[i].flags, maps[i].path);
	printf("func 0x%" PRIxPTR " fx_alpha\n", (uintptr_t)fx_alpha);
	printf("func 0x%" PRIxPTR " fx_beta\n", (uintptr_t)fx_beta);
	printf("func 0x%" PRIxPTR " fx_mark\n", (uintptr_t)fx_mark);
	printf("func 0x%" PRIxPTR " main\n", (uintptr_t)main);
	for (int i = 0; i < ncalls; i++)
		printf("call 0x%" PRIxPTR " %d %s\n", calls[i].ra, calls[i].line, calls[i].fn);
	return 0;
}
