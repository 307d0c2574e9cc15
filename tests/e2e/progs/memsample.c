/*
 * memsample.c - a program with known allocation totals per call site, for
 * the sampling test of the allocation tracer (tests/e2e/mem_sample.sh,
 * RINGTRACE_MEM_SAMPLE). Not linked with libringtrace.
 *
 *   memsample one       one thread: churn() allocates CHURN bytes in
 *                       blocks freed at once, keep() KEEP bytes kept
 *                       alive to the end, grow() reallocs a buffer
 *                       through 64 sizes, then frees it
 *   memsample threads   two threads each churn CHURN/2 bytes and keep
 *                       KEEP/2 (the second starts after the first's
 *                       first allocation); main then frees the first half of every
 *                       thread's kept blocks (frees in another thread)
 *   memsample fork      keep(KEEP/2), fork; the child frees the first
 *                       half of the kept blocks, churns CHURN/2 and exits;
 *                       the parent churns CHURN/2 and waits
 *
 * Sizes come from a fixed-seed generator (16..4096 for churn, 64..65536
 * for keep). Prints on stdout the sites (the addresses of churn_alloc,
 * keep_alloc and grow_realloc, each holding the only allocation call of
 * its part) and the true totals, as "name value" lines.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHURN (100u * 1000 * 1000)
#define KEEP  (50u * 1000 * 1000)
#define MAXKEEP 4096

struct part {
	uint64_t seed;
	void *held[MAXKEEP];
	size_t held_size[MAXKEEP];
	unsigned nheld;
	uint64_t churn_bytes, churn_n, keep_bytes, keep_n, freed_bytes, freed_n;
};

static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005u + 1442695040888963407u;
	return *s >> 33;
}

/* The one allocation call of each part (not a tail call: the result is
 * used), so that its call site is inside the function. */
static __attribute__((noinline)) void *churn_alloc(size_t n)
{
	void *p = malloc(n);
	if (!p)
		abort();
	memset(p, 1, n < 64 ? n : 64);
	return p;
}

static __attribute__((noinline)) void *keep_alloc(size_t n)
{
	void *p = malloc(n);
	if (!p)
		abort();
	memset(p, 2, n < 64 ? n : 64);
	return p;
}

static __attribute__((noinline)) void *grow_realloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!q)
		abort();
	((char *)q)[n - 1] = 3;
	return q;
}

static void churn(struct part *pt, uint64_t total)
{
	uint64_t done = 0;
	while (done < total) {
		size_t n = 16 + rnd(&pt->seed) % 4081;
		if (n > total - done)
			n = total - done;
		free(churn_alloc(n));
		done += n;
		pt->churn_n++;
	}
	pt->churn_bytes += done;
}

static void keep(struct part *pt, uint64_t total)
{
	uint64_t done = 0;
	while (done < total && pt->nheld < MAXKEEP) {
		size_t n = 64 + rnd(&pt->seed) % 65473;
		if (n > total - done)
			n = total - done;
		pt->held_size[pt->nheld] = n;
		pt->held[pt->nheld++] = keep_alloc(n);
		done += n;
	}
	pt->keep_bytes += done;
	pt->keep_n = pt->nheld;
}

/* Free the first half of the kept blocks. */
static void free_half(struct part *pt)
{
	for (unsigned i = 0; i < pt->nheld / 2; i++) {
		free(pt->held[i]);
		pt->freed_bytes += pt->held_size[i];
		pt->freed_n++;
	}
}

static void grow(void)
{
	void *p = NULL;
	for (size_t n = 1024; n <= 64 * 1024; n += 1024)
		p = grow_realloc(p, n);
	free(p);
}

static void sites(void)
{
	printf("site_churn %p\nsite_keep %p\nsite_grow %p\n", (void *)churn_alloc, (void *)keep_alloc,
	       (void *)grow_realloc);
}

/* Each thread's first allocation is made before the next thread starts:
 * the threads are seeded in the same order every run (memsample.c ranks
 * them by their first allocation). */
static sem_t started;

static void *thread_main(void *arg)
{
	struct part *pt = arg;
	churn(pt, 16);
	sem_post(&started);
	churn(pt, CHURN / 2 - 16);
	keep(pt, KEEP / 2);
	return NULL;
}

static struct part parts[2];

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "one";
	parts[0].seed = 1;
	parts[1].seed = 2;
	sites();
	if (!strcmp(mode, "one")) {
		churn(&parts[0], CHURN);
		keep(&parts[0], KEEP);
		grow();
		printf("churn_bytes %llu\nchurn_n %llu\nkeep_bytes %llu\nkeep_n %llu\nlive_keep_bytes %llu\n",
		       (unsigned long long)parts[0].churn_bytes, (unsigned long long)parts[0].churn_n,
		       (unsigned long long)parts[0].keep_bytes, (unsigned long long)parts[0].keep_n,
		       (unsigned long long)parts[0].keep_bytes);
	} else if (!strcmp(mode, "threads")) {
		pthread_t t[2];
		sem_init(&started, 0, 0);
		for (int i = 0; i < 2; i++) {
			if (pthread_create(&t[i], NULL, thread_main, &parts[i]))
				return 1;
			while (sem_wait(&started))
				;
		}
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		for (int i = 0; i < 2; i++)
			free_half(&parts[i]);
		uint64_t cb = 0, cn = 0, kb = 0, kn = 0, fb = 0;
		for (int i = 0; i < 2; i++) {
			cb += parts[i].churn_bytes;
			cn += parts[i].churn_n;
			kb += parts[i].keep_bytes;
			kn += parts[i].keep_n;
			fb += parts[i].freed_bytes;
		}
		printf("churn_bytes %llu\nchurn_n %llu\nkeep_bytes %llu\nkeep_n %llu\nlive_keep_bytes %llu\n",
		       (unsigned long long)cb, (unsigned long long)cn, (unsigned long long)kb, (unsigned long long)kn,
		       (unsigned long long)(kb - fb));
	} else if (!strcmp(mode, "fork")) {
		keep(&parts[0], KEEP / 2);
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			free_half(&parts[0]);
			churn(&parts[1], CHURN / 2);
			_exit(0);
		}
		churn(&parts[0], CHURN / 2);
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
		printf("churn_bytes %llu\nkeep_bytes %llu\nkeep_n %llu\nlive_keep_bytes %llu\n",
		       (unsigned long long)parts[0].churn_bytes, (unsigned long long)parts[0].keep_bytes,
		       (unsigned long long)parts[0].keep_n, (unsigned long long)parts[0].keep_bytes);
	} else {
		fprintf(stderr, "usage: memsample one|threads|fork\n");
		return 2;
	}
	return 0;
}
