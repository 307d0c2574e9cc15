/*
 * burst - forks N children (argv[1], 200 by default) as fast as it can,
 * before waiting for any: a fork burst. Each child fires burst:child
 * { i = its number } once and leaves with _exit(0) (no exit handler runs:
 * a control block it published stays unless someone removes it). Then
 * the parent fires burst:parent { n = N } and prints "N children".
 *
 * Used by tests/e2e/sec_follow.sh: under `record --follow-fork` every
 * child must have a trace of its own, or be named in the summary.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(burst, child, RINGTRACE_U32(i));
RINGTRACE_EVENT(burst, parent, RINGTRACE_U32(n));

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	if (n <= 0 || n > 100000)
		return 2;
	fflush(stdout);
	int started = 0;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			break;
		if (pid == 0) {
			ringtrace_tracepoint(burst, child, (uint32_t)i);
			_exit(0);
		}
		started++;
	}
	int bad = 0;
	for (int i = 0; i < started; i++) {
		int st;
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
	}
	ringtrace_tracepoint(burst, parent, (uint32_t)started);
	printf("%d children\n", started);
	return started == n && !bad ? 0 : 1;
}
