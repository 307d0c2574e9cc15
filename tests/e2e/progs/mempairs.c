/*
 * mempairs - NTHREADS threads each make PAIRS malloc/free pairs as fast
 * as they can, through a window of 64 live blocks per thread (a slot's
 * block is freed when the slot is reused), then free what the window
 * holds: the program leaks nothing and makes no allocation error. For
 * tests/e2e/mem_losses.sh: under `record --mem` with small buffers the
 * recorder drops events, and whatever leak or error the report shows in
 * worker() is an artefact of the loss.
 *
 *   mempairs NTHREADS PAIRS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define WINDOW 64

static long pairs;

static __attribute__((noinline)) void *worker(void *arg)
{
	void *slot[WINDOW] = { 0 };
	uint64_t x = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1);
	for (long i = 0; i < pairs; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		unsigned k = (unsigned)(x % WINDOW);
		free(slot[k]);
		slot[k] = malloc(1 + (size_t)(x >> 40) % 256);
		if (slot[k])
			*(volatile char *)slot[k] = 1;
	}
	for (unsigned k = 0; k < WINDOW; k++)
		free(slot[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 2;
	pairs = argc > 2 ? atol(argv[2]) : 100000;
	if (n < 1 || n > 64 || pairs < 0)
		return 2;
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) != 0)
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
