/*
 * demo.c - the example program of the README: three worker threads serve
 * simulated requests and fire the demo:* tracepoints.
 *
 *   demo [ITERATIONS]      requests per worker, default 1000
 *
 * Everything it computes, durations included, follows from the request ids,
 * so its one line of output and the payloads of its events are the same
 * from run to run, traced or not: tests compare them.
 */
#include <ringtrace/ringtrace.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NWORKERS 3
#define BATCH_MAX 8

RINGTRACE_EVENT(demo, request_begin,
		RINGTRACE_U32(worker), RINGTRACE_U64(id), RINGTRACE_STRING(path));
RINGTRACE_EVENT(demo, request_end,
		RINGTRACE_U32(worker), RINGTRACE_U64(id), RINGTRACE_S32(status),
		RINGTRACE_F64(ms));
RINGTRACE_EVENT(demo, batch, RINGTRACE_U32(worker), RINGTRACE_SEQ(u16, samples));
RINGTRACE_EVENT(demo, config, RINGTRACE_ARRAY(u8, tag, 4), RINGTRACE_PTR(p));

struct worker {
	pthread_t thread;
	uint32_t index;
	uint64_t iterations;
	uint64_t requests;
	int64_t status_sum;
};

/* FNV-1a: the simulated work, and where durations and samples come from. */
static uint32_t hash_path(const char *s, uint32_t rounds)
{
	uint32_t h = 2166136261u;

	for (uint32_t r = 0; r < rounds; r++)
		for (const char *c = s; *c; c++)
			h = (h ^ (uint8_t)*c) * 16777619u;
	return h;
}

static int32_t status_of(uint64_t id)
{
	if (id % 101 == 0)
		return 500;
	if (id % 17 == 0)
		return 404;
	return 200;
}

static void *run_worker(void *arg)
{
	struct worker *w = arg;
	uint16_t samples[BATCH_MAX];
	uint32_t nsamples = 0;

	for (uint64_t i = 0; i < w->iterations; i++) {
		uint64_t id = w->index * w->iterations + i + 1;
		char path[32];

		snprintf(path, sizeof(path), "/item/%" PRIu64, id % 100);
		ringtrace_tracepoint(demo, request_begin, w->index, id, path);

		uint32_t h = hash_path(path, 1 + (uint32_t)(id % 16));
		int32_t status = status_of(id);
		double ms = (double)(h % 1000) / 100.0;

		ringtrace_tracepoint(demo, request_end, w->index, id, status, ms);
		w->requests++;
		w->status_sum += status;

		samples[nsamples++] = (uint16_t)h;
		if (nsamples == BATCH_MAX) {
			ringtrace_tracepoint(demo, batch, w->index, samples, nsamples);
			nsamples = 0;
		}
	}
	if (nsamples > 0)
		ringtrace_tracepoint(demo, batch, w->index, samples, nsamples);
	return NULL;
}

int main(int argc, char **argv)
{
	static const uint8_t tag[4] = { 'd', 'e', 'm', 'o' };
	struct worker workers[NWORKERS];
	uint64_t iterations = 1000;
	uint64_t requests = 0;
	int64_t status_sum = 0;

	if (argc > 2) {
		fprintf(stderr, "usage: demo [ITERATIONS]\n");
		return 2;
	}
	if (argc == 2) {
		char *end;

		errno = 0;
		iterations = strtoull(argv[1], &end, 10);
		if (errno || end == argv[1] || *end || argv[1][0] == '-' ||
		    iterations > UINT64_MAX / NWORKERS) {
			fprintf(stderr, "demo: invalid iteration count '%s'\n", argv[1]);
			return 2;
		}
	}

	ringtrace_tracepoint(demo, config, tag, workers);

	memset(workers, 0, sizeof(workers));
	for (uint32_t i = 0; i < NWORKERS; i++) {
		workers[i].index = i;
		workers[i].iterations = iterations;
		int err = pthread_create(&workers[i].thread, NULL, run_worker, &workers[i]);
		if (err) {
			fprintf(stderr, "demo: cannot start worker %u: %s\n", i, strerror(err));
			return 1;
		}
	}
	for (uint32_t i = 0; i < NWORKERS; i++) {
		pthread_join(workers[i].thread, NULL);
		requests += workers[i].requests;
		status_sum += workers[i].status_sum;
	}

	printf("demo: %d workers, %" PRIu64 " requests, status sum %" PRId64 "\n",
	       NWORKERS, requests, status_sum);
	return 0;
}
