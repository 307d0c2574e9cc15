/*
 * longer-thread-name-prog - NTHREADS threads (default 300), each named
 * "longer-thr-<i>" (i from 0), fire one ltn:hello event carrying i, then
 * stay alive until every thread has fired and the recorder has had time to
 * read their names from /proc (it looks every 50 ms): so that the trace
 * names them all. The names of 300 threads took more than the 4 KiB that
 * ringtrace's readers once allowed one metadata string literal.
 *
 *   longer-thread-name-prog [NTHREADS]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(ltn, hello, RINGTRACE_U32(i));

static pthread_barrier_t fired, done;

static void *run(void *arg)
{
	uint32_t i = (uint32_t)(uintptr_t)arg;
	char name[16];
	snprintf(name, sizeof(name), "longer-thr-%u", i);
	pthread_setname_np(pthread_self(), name);
	ringtrace_tracepoint(ltn, hello, i);
	pthread_barrier_wait(&fired);
	pthread_barrier_wait(&done);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 300;
	if (n < 1 || n > 4000)
		return 2;
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	pthread_attr_t attr;
	if (!th || pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, 64 * 1024))
		return 1;
	pthread_barrier_init(&fired, NULL, (unsigned)n + 1);
	pthread_barrier_init(&done, NULL, (unsigned)n + 1);
	for (int t = 0; t < n; t++)
		if (pthread_create(&th[t], &attr, run, (void *)(uintptr_t)t) != 0) {
			perror("pthread_create");
			return 1;
		}
	pthread_barrier_wait(&fired);
	/* Several of the recorder's looks at /proc (every 50 ms) while all
	 * threads live; a name it missed would still come from the thread's
	 * own record, so no count depends on this pause. */
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	pthread_barrier_wait(&done);
	for (int t = 0; t < n; t++)
		pthread_join(th[t], NULL);
	free(th);
	return 0;
}
