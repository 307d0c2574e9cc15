/*
 * uw_coro.c - coroutines made by makecontext() that allocate, for
 * tests/e2e/unwind_verify.sh: every allocation's stack runs from the
 * coroutine's function to glibc's __start_context, whose first byte is
 * the coroutine's return address (the address - 1 has no FDE), and ends
 * there, as libunwind's does.
 *
 *   uw_coro ROUNDS        4 coroutines, each making 10 allocations a round
 *
 * Prints "allocations N" (4 x 10 x ROUNDS) on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#define NCO 4
#define PER 10

static ucontext_t main_ctx, co_ctx[NCO];
static void *volatile sink;
static unsigned long count;

static __attribute__((noinline)) void work(int k)
{
	for (int i = 0; i < PER; i++) {
		sink = malloc(32 + (size_t)k * 16);
		free(sink);
		count++;
	}
}

static void coroutine(int k)
{
	for (;;) {
		work(k);
		swapcontext(&co_ctx[k], &main_ctx);
	}
}

/* Out of line: getcontext() returns twice, which the caller's loop
 * variables must not see. */
static __attribute__((noinline)) int make_coroutine(int k)
{
	if (getcontext(&co_ctx[k]) != 0)
		return -1;
	co_ctx[k].uc_stack.ss_size = 64 * 1024;
	co_ctx[k].uc_stack.ss_sp = malloc(64 * 1024);
	if (!co_ctx[k].uc_stack.ss_sp)
		return -1;
	co_ctx[k].uc_link = &main_ctx;
	makecontext(&co_ctx[k], (void (*)(void))coroutine, 1, k);
	return 0;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100;
	for (int k = 0; k < NCO; k++)
		if (make_coroutine(k) != 0)
			return 1;
	for (long r = 0; r < rounds; r++)
		for (int k = 0; k < NCO; k++)
			if (swapcontext(&main_ctx, &co_ctx[k]) != 0)
				return 1;
	printf("allocations %lu\n", count);
	return 0;
}
