/*
 * threads - NTHREADS threads (and the main thread) each write COUNT
 * mt:ev events carrying their own tid and a per-thread index 0..COUNT-1.
 * Every 64 events a thread moves itself to another CPU, so that CPUs see
 * writers change often and threads migrate between reserve and commit now
 * and then. The test checks that the dump attributes each event to the tid
 * in its field, and that every (tid, i) pair is there exactly once.
 *
 *   threads NTHREADS COUNT
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(mt, ev, RINGTRACE_U32(tid), RINGTRACE_U32(i));

static uint32_t count;
static int cpus[CPU_SETSIZE];
static int ncpus;

static void *run(void *arg)
{
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	uintptr_t k = (uintptr_t)arg;
	for (uint32_t i = 0; i < count; i++) {
		if (i % 64 == 0 && ncpus > 1) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(cpus[(i / 64 + k) % (unsigned)ncpus], &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		ringtrace_tracepoint(mt, ev, tid, i);
		if (i % 16 == 0)
			sched_yield();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	count = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1000;
	if (n < 0 || n > 64)
		return 2;

	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[ncpus++] = c;

	pthread_t th[64];
	for (int t = 0; t < n; t++)
		if (pthread_create(&th[t], NULL, run, (void *)(uintptr_t)(t + 1)) != 0)
			return 3;
	run((void *)(uintptr_t)0);
	for (int t = 0; t < n; t++)
		pthread_join(th[t], NULL);
	printf("threads %d count %u\n", n + 1, count);
	return 0;
}
