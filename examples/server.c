/*
 * server.c - a long-running example for live control: two worker threads
 * serve simulated requests (about 1000 per second each) and fire app:* and
 * db:* tracepoints; the main thread prints a heartbeat line every 200 ms.
 *
 *   server [SECONDS]      run that long (default: until SIGINT/SIGTERM)
 *
 * Start it, then from another terminal:
 *   ringtrace ps; ringtrace list server; ringtrace record -p server
 *
 * Its output depends only on time, never on tracing: heartbeats are
 * numbered, and the exit line is "server: done after N heartbeats".
 */
#include <ringtrace/ringtrace.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

RINGTRACE_EVENT(app, request_begin, RINGTRACE_U32(worker), RINGTRACE_U64(id), RINGTRACE_STRING(path));
RINGTRACE_EVENT(app, request_end, RINGTRACE_U32(worker), RINGTRACE_U64(id), RINGTRACE_S32(status));
RINGTRACE_EVENT(db, query, RINGTRACE_U64(id), RINGTRACE_STRING(sql));
RINGTRACE_EVENT(app, heartbeat, RINGTRACE_U32(n));

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
	uint32_t w = (uint32_t)(uintptr_t)arg;
	static const char *const paths[] = { "/", "/index.html", "/api/items", "/api/users/42" };
	for (uint64_t id = 1; !stop; id++) {
		const char *path = paths[id % 4];
		ringtrace_tracepoint(app, request_begin, w, id, path);
		if (id % 4 == 2)
			ringtrace_tracepoint(db, query, id, "SELECT * FROM items");
		ringtrace_tracepoint(app, request_end, w, id, (int32_t)(id % 10 == 0 ? 404 : 200));
		sleep_us(1000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0;
	struct sigaction sa = { 0 };
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);

	pthread_t t[2];
	for (uintptr_t i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) {
			fprintf(stderr, "server: cannot start a worker\n");
			return 1;
		}
	uint32_t n = 0;
	while (!stop && (seconds <= 0 || n * 0.2 < seconds)) {
		sleep_us(200000);
		n++;
		ringtrace_tracepoint(app, heartbeat, n);
		printf("heartbeat %u\n", n);
	}
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("server: done after %u heartbeats\n", n);
	return 0;
}
