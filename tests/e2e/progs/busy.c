/*
 * busy - one thread, pinned to one CPU, writes COUNT e2e:busy events
 * (i = 0 .. COUNT-1) as fast as it can.
 *
 *   busy COUNT [stop]
 *
 * With "stop" it stops its parent (the recorder) with SIGSTOP for the
 * duration of the burst and continues it afterwards: the reader cannot take
 * anything meanwhile, so a buffer smaller than the burst is certain to fill
 * (discard mode) or be overwritten (overwrite mode), without any timing
 * assumption. Prints "wrote COUNT".
 */
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(e2e, busy, RINGTRACE_U64(i), RINGTRACE_U32(filler));

int main(int argc, char **argv)
{
	uint64_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
	int stop = argc > 2 && !strcmp(argv[2], "stop");

	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		for (int c = 0; c < CPU_SETSIZE; c++) {
			if (CPU_ISSET(c, &set)) {
				CPU_ZERO(&set);
				CPU_SET(c, &set);
				sched_setaffinity(0, sizeof(set), &set);
				break;
			}
		}
	}
	pid_t parent = getppid();
	if (stop)
		kill(parent, SIGSTOP);
	for (uint64_t i = 0; i < count; i++)
		ringtrace_tracepoint(e2e, busy, i, 0xabcdef01u);
	if (stop)
		kill(parent, SIGCONT);
	printf("wrote %llu\n", (unsigned long long)count);
	return 0;
}
