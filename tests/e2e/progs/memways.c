/*
 * memways - allocations and frees at known call sites from two threads,
 * for tests/e2e/mem_agg.sh: the aggregate mode keeps each thread's sums
 * in a few caches of its own, one row each (src/mem/memagg.c), and every
 * row must still come out exact, whether a thread's calls go round more
 * rows than it has caches or stay among a few.
 *
 *   memways ROUNDS [hold]
 *
 * Two threads, each ROUNDS times: one block from each of the 12 sites
 * ways_m0..ways_m11 (16 (i + 1) bytes), freed in reverse order; then 6
 * blocks from ways_f0, ways_f1, ways_f2 in turn (1000 (j + 1) bytes),
 * each freed at once. Then each leaks 5 blocks of 100 bytes
 * (ways_leak100) and ends. After both ended, the main thread takes 240
 * blocks of 1024 bytes (ways_keep1024) and keeps them, making and freeing
 * a block of each ways_m* site in turn between them (20 each), prints
 * "holding PID" and, with "hold", waits for SIGUSR2; then frees the 240
 * blocks and prints "done".
 *
 * Totals (R = ROUNDS): ways_mI 2R + 20 blocks of 16 (I + 1) bytes, all
 * freed; ways_fJ 4R blocks of 1000 (J + 1) bytes, all freed;
 * ways_leak100 10 blocks, none freed; ways_keep1024 240 blocks, all
 * freed, 245760 bytes alive at once (its peak); the heap's peak is the
 * keep phase's: 245760 bytes above what stays alive at exit. (The sites'
 * sizes differ: identical functions would be folded into one.)
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

#define MANY 12
#define KEEP 240

static long rounds;
static volatile unsigned long sink;

/* A site per function: the report's rows by function. */
#define SITE(name, size)                           \
	static NOINLINE void *name(void)           \
	{                                          \
		void *p = malloc(size);            \
		sink += (unsigned long)p;          \
		return p;                          \
	}
SITE(ways_m0, 16)
SITE(ways_m1, 32)
SITE(ways_m2, 48)
SITE(ways_m3, 64)
SITE(ways_m4, 80)
SITE(ways_m5, 96)
SITE(ways_m6, 112)
SITE(ways_m7, 128)
SITE(ways_m8, 144)
SITE(ways_m9, 160)
SITE(ways_m10, 176)
SITE(ways_m11, 192)
SITE(ways_f0, 1000)
SITE(ways_f1, 2000)
SITE(ways_f2, 3000)
SITE(ways_leak100, 100)
SITE(ways_keep1024, 1024)

static void *(*const many[MANY])(void) = { ways_m0, ways_m1, ways_m2, ways_m3, ways_m4,  ways_m5,
					   ways_m6, ways_m7, ways_m8, ways_m9, ways_m10, ways_m11 };
static void *(*const few[3])(void) = { ways_f0, ways_f1, ways_f2 };

static void *worker(void *arg)
{
	(void)arg;
	void *p[MANY];
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < MANY; i++)
			p[i] = many[i]();
		for (int i = MANY - 1; i >= 0; i--)
			free(p[i]);
		for (int j = 0; j < 6; j++)
			free(few[j % 3]());
	}
	for (int i = 0; i < 5; i++)
		ways_leak100();
	return NULL;
}

static volatile sig_atomic_t release_now;

static void on_usr2(int sig)
{
	(void)sig;
	release_now = 1;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || (rounds = atol(argv[1])) <= 0 || (argc == 3 && strcmp(argv[2], "hold"))) {
		fprintf(stderr, "usage: memways ROUNDS [hold]\n");
		return 2;
	}
	int hold = argc == 3;
	/* stdout's buffer first, alive from here to exit. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	sigprocmask(SIG_BLOCK, &block, &old);
	signal(SIGUSR2, on_usr2);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, NULL)) {
			fprintf(stderr, "memways: cannot create a thread\n");
			return 1;
		}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	static void *kept[KEEP];
	for (int k = 0; k < KEEP; k++) {
		kept[k] = ways_keep1024();
		free(many[k % MANY]());
	}
	printf("holding %d\n", (int)getpid());
	while (hold && !release_now)
		sigsuspend(&old);
	for (int k = 0; k < KEEP; k++)
		free(kept[k]);
	printf("done\n");
	return 0;
}
