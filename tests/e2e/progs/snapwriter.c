/*
 * snapwriter - writers for the snapshot tests.
 *
 *   snapwriter THREADS EVENTS
 *
 * Waits until snap:ev is enabled (tracing switched on from outside), then
 * THREADS threads (thread t pinned to CPU t % ncpus) each fire snap:ev
 * { t, seq } for seq = 0 .. EVENTS-1, timing every call. Prints one line
 * per thread, "thread T events N max_ns M p99_ns P p999_ns Q", then "done", and
 * waits for SIGTERM (so that the buffers can still be read), exiting 0.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(snap, ev, RINGTRACE_U32(t), RINGTRACE_U64(seq));

static uint64_t events;

struct writer {
	pthread_t th;
	uint32_t t;
	uint64_t max_ns;
	uint64_t p99_ns;
	uint64_t p999_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void *writer(void *arg)
{
	struct writer *w = arg;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((int)(w->t % (uint32_t)(ncpu > 0 ? ncpu : 1)), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	uint64_t *lat = malloc(events * sizeof(uint64_t));
	if (!lat)
		return NULL;
	for (uint64_t seq = 0; seq < events; seq++) {
		uint64_t t0 = now_ns();
		ringtrace_tracepoint(snap, ev, w->t, seq);
		uint64_t d = now_ns() - t0;
		lat[seq] = d;
		if (d > w->max_ns)
			w->max_ns = d;
		/* About a microsecond between events. */
		while (now_ns() - t0 < 1000)
			;
	}
	qsort(lat, events, sizeof(uint64_t), cmp_u64);
	w->p99_ns = lat[events * 99 / 100];
	w->p999_ns = lat[events * 999 / 1000];
	free(lat);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	uint32_t n = (uint32_t)strtoul(argv[1], NULL, 10);
	events = strtoull(argv[2], NULL, 10);
	if (n == 0 || n > 64 || events == 0)
		return 2;
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	while (!ringtrace_tracepoint_enabled(snap, ev)) {
		struct timespec d = { 0, 1000000 };
		nanosleep(&d, NULL);
	}
	struct writer w[64];
	memset(w, 0, sizeof(w));
	for (uint32_t t = 0; t < n; t++) {
		w[t].t = t;
		pthread_create(&w[t].th, NULL, writer, &w[t]);
	}
	for (uint32_t t = 0; t < n; t++) {
		pthread_join(w[t].th, NULL);
		printf("thread %u events %llu max_ns %llu p99_ns %llu p999_ns %llu\n", t,
		       (unsigned long long)events, (unsigned long long)w[t].max_ns,
		       (unsigned long long)w[t].p99_ns, (unsigned long long)w[t].p999_ns);
	}
	printf("done\n");
	fflush(stdout);
	int sig;
	sigwait(&term, &sig);
	return 0;
}
