/*
 * mem_churn.c - short-lived threads that allocate: N threads over the
 * program's life, two at a time, each making 20000 malloc/free pairs of
 * 64..319 bytes. A program that keeps starting and ending threads (a
 * thread per task) in aggregate mode, where each thread takes caches of
 * the counters' block (docs/mem.md, "aggregate"): run untraced and under
 * `ringtrace record --mem --aggregate` (with RINGTRACE_MEM_SAMPLE=512K in
 * front for the sampled mode) and compare the ns per call it prints.
 *
 *   gcc -O2 -o mem_churn bench/mem_churn.c -lpthread
 *   ./mem_churn [N]                  (default 1000)
 *
 * Prints "threads N, X ns per call" (wall time of all the threads' calls,
 * CLOCK_MONOTONIC, over 40000 calls per thread).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHURN_PAIRS 20000

static void *work(void *arg)
{
	(void)arg;
	for (int i = 0; i < CHURN_PAIRS; i++) {
		void *volatile p = malloc(64 + (size_t)(i & 255));
		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	if (n < 2) {
		fprintf(stderr, "usage: mem_churn [N]   (N >= 2 threads in all)\n");
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int k = 0; k + 1 < n; k += 2) {
		pthread_t a, b;
		if (pthread_create(&a, NULL, work, NULL) != 0 || pthread_create(&b, NULL, work, NULL) != 0) {
			fprintf(stderr, "mem_churn: cannot start a thread\n");
			return 1;
		}
		pthread_join(a, NULL);
		pthread_join(b, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("threads %d, %.1f ns per call\n", n / 2 * 2, ns / ((double)(n / 2 * 2) * 2 * CHURN_PAIRS));
	return 0;
}
