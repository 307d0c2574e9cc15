/*
 * crashmid - dies inside a tracepoint, between the reservation and the
 * commit: after COUNT e2e:seq events (n = 0 .. COUNT-1) it fires e2e:crash,
 * whose array argument points into a PROT_NONE page, so the copy into the
 * reserved record faults (SIGSEGV, status 139).
 *
 *   crashmid COUNT [stop]
 *
 * Pinned to one CPU. With "stop" the recorder is stopped (SIGSTOP) while
 * the events are written and continued just before the crash, so in
 * overwrite mode the buffer holds exactly the newest events. The trace must
 * hold committed e2e:seq events only, never the half-written e2e:crash
 * record nor anything that was in its place before (in overwrite mode the
 * reserved bytes still hold records of an older lap).
 */
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(e2e, seq, RINGTRACE_U64(n));
RINGTRACE_EVENT(e2e, crash, RINGTRACE_U64(n), RINGTRACE_ARRAY(u8, blob, 64));

int main(int argc, char **argv)
{
	uint64_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000;
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
	const uint8_t *noaccess = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (noaccess == MAP_FAILED)
		return 3;
	pid_t parent = getppid();
	if (stop)
		kill(parent, SIGSTOP);
	for (uint64_t n = 0; n < count; n++)
		ringtrace_tracepoint(e2e, seq, n);
	printf("wrote %llu\n", (unsigned long long)count);
	fflush(stdout);
	if (stop)
		kill(parent, SIGCONT);
	ringtrace_tracepoint(e2e, crash, count, noaccess);
	printf("not reached\n");
	return 0;
}
