/*
 * forker - fires fork:parent { u32 step = 0 }, forks a child that fires
 * fork:child 1000 times and exits with status 7, waits for it, then fires
 * fork:parent { step = 1 } and fork:parent { step = 2 }.
 *
 * The child shares the recorder's buffers through the mapping but must not
 * write to them (it turns tracing off in itself): the trace holds the three
 * parent events and nothing from the child.
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(fork, parent, RINGTRACE_U32(step));
RINGTRACE_EVENT(fork, child, RINGTRACE_U32(i));

int main(void)
{
	ringtrace_tracepoint(fork, parent, 0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 3;
	if (pid == 0) {
		for (uint32_t i = 0; i < 1000; i++)
			ringtrace_tracepoint(fork, child, i);
		_exit(7);
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		return 4;
	ringtrace_tracepoint(fork, parent, 1);
	ringtrace_tracepoint(fork, parent, 2);
	printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
