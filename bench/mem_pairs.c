/*
 * mem_pairs.c - the malloc/free workload of bench/mem.sh: THREADS threads,
 * each making PAIRS malloc/free pairs of random sizes, as fast as it can.
 * It exists to be run untraced and under allocation tracers
 * (libringtrace-malloc.so, heaptrack) and compared: the calls are the
 * whole load, so the ratio of the times is the tracer's cost per call.
 *
 *   mem_pairs THREADS PAIRS          PAIRS per thread
 *
 * Each thread keeps a window of MP_WINDOW live blocks: at each step it
 * picks a slot with its own xorshift64* generator (fixed seed per thread,
 * so every run makes the same calls), frees the block in it if there is
 * one and puts a fresh block of 1..MP_MAX_SIZE bytes there. The window
 * makes the allocator reuse blocks out of order and a tracer see varied
 * addresses, not the same block again and again; it is small enough to
 * stay in the cache, so the allocator and the tracer are what is timed.
 * The slots left at the end are freed: exactly PAIRS mallocs and PAIRS
 * frees per thread (the threads' own start-up allocations aside).
 *
 * Each block gets one byte written when allocated and read back when
 * freed, so the compiler cannot elide a pair, and the bytes read add up to
 * a checksum that depends on the seed only: printed on stdout, the same in
 * every run and under every tracer. Timing, from the moment all threads
 * are released together to the last join (CLOCK_MONOTONIC), goes to
 * stderr: "mem_pairs: threads=T pairs_per_thread=P calls=C elapsed_ns=N
 * ns_per_call=X", where X is elapsed / calls made by one thread: with the
 * threads running in parallel, what a call costs the thread that makes it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MP_WINDOW 64                  /* live blocks per thread, a power of two */
#define MP_MAX_SIZE 4096
#define MP_MAX_THREADS 256

struct mp_thread {
	pthread_t tid;
	unsigned idx;
	uint64_t pairs;
	uint64_t checksum;
	int failed;                   /* a malloc returned NULL */
};

static pthread_barrier_t mp_start;

/* xorshift64*: fast, and good enough to spread slots and sizes. */
static inline uint64_t mp_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static void *mp_worker(void *arg)
{
	struct mp_thread *t = arg;
	unsigned char *slot[MP_WINDOW] = { NULL };
	uint64_t seed = 0x9E3779B97F4A7C15ULL * (t->idx + 1);
	uint64_t sum = 0;

	pthread_barrier_wait(&mp_start);
	for (uint64_t i = 0; i < t->pairs; i++) {
		uint64_t r = mp_rand(&seed);
		unsigned s = r & (MP_WINDOW - 1);
		size_t size = 1 + (size_t)((r >> 32) % MP_MAX_SIZE);

		if (slot[s]) {
			sum += slot[s][0];
			free(slot[s]);
		}
		slot[s] = malloc(size);
		if (!slot[s]) {
			t->failed = 1;
			break;
		}
		slot[s][0] = (unsigned char)(i ^ size);
	}
	for (unsigned s = 0; s < MP_WINDOW; s++) {
		if (slot[s]) {
			sum += slot[s][0];
			free(slot[s]);
		}
	}
	t->checksum = sum;
	return NULL;
}

static int mp_parse(const char *s, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > max)
		return -1;
	*ret = v;
	return 0;
}

int main(int argc, char **argv)
{
	static struct mp_thread th[MP_MAX_THREADS];
	uint64_t nthreads, pairs, sum = 0;
	struct timespec t0, t1;
	int err, failed = 0;

	if (argc != 3 || mp_parse(argv[1], MP_MAX_THREADS, &nthreads) < 0 ||
	    mp_parse(argv[2], UINT64_MAX / 2, &pairs) < 0) {
		fprintf(stderr, "usage: mem_pairs THREADS PAIRS   (1..%d threads, PAIRS malloc/free pairs per thread)\n",
			MP_MAX_THREADS);
		return 2;
	}
	/* The main thread takes part in the barrier, so that the clock starts
	 * when every worker exists and is released. */
	err = pthread_barrier_init(&mp_start, NULL, (unsigned)nthreads + 1);
	if (err) {
		fprintf(stderr, "mem_pairs: pthread_barrier_init: %s\n", strerror(err));
		return 1;
	}
	for (unsigned i = 0; i < nthreads; i++) {
		th[i].idx = i;
		th[i].pairs = pairs;
		err = pthread_create(&th[i].tid, NULL, mp_worker, &th[i]);
		if (err) {
			fprintf(stderr, "mem_pairs: cannot start thread %u: %s\n", i, strerror(err));
			return 1;
		}
	}
	pthread_barrier_wait(&mp_start);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(th[i].tid, NULL);
		sum += th[i].checksum;
		failed |= th[i].failed;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (failed) {
		fprintf(stderr, "mem_pairs: malloc failed\n");
		return 1;
	}

	uint64_t ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
	printf("checksum %llu\n", (unsigned long long)sum);
	fprintf(stderr, "mem_pairs: threads=%llu pairs_per_thread=%llu calls=%llu elapsed_ns=%llu ns_per_call=%.2f\n",
		(unsigned long long)nthreads, (unsigned long long)pairs,
		(unsigned long long)(2 * pairs * nthreads), (unsigned long long)ns, (double)ns / (double)(2 * pairs));
	return 0;
}
