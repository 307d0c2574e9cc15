/*
 * seqkill - writes e2e:seq events numbered 0, 1, 2, ... and, every 100
 * events, prints the last number whose tracepoint has returned (so it is
 * committed) on stdout, flushed. The test kills it with SIGKILL while it runs
 * and checks that the trace holds 0..N with no gap, N >= the last number
 * printed.
 *
 *   seqkill LIMIT
 *
 * After LIMIT events it prints "done" and sleeps until killed. LIMIT is kept
 * small enough that every event fits in the default buffer of one CPU even if
 * the recorder never ran, so a gap can only be a tracer bug.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(e2e, seq, RINGTRACE_U64(n));

int main(int argc, char **argv)
{
	uint64_t limit = argc > 1 ? strtoull(argv[1], NULL, 10) : 50000;
	struct timespec pause_ts = { 0, 1000000 };

	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	for (uint64_t n = 0; n < limit; n++) {
		ringtrace_tracepoint(e2e, seq, n);
		if (n % 100 == 99) {
			printf("committed %llu\n", (unsigned long long)n);
			fflush(stdout);
			nanosleep(&pause_ts, NULL);
		}
	}
	printf("done\n");
	fflush(stdout);
	for (;;)
		pause();
}
