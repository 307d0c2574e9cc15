/*
 * status - prints a few lines, fires a few events, then ends as told:
 *
 *   status exit N     exit(N)
 *   status segv       store to an unmapped address (SIGSEGV: 139 in a shell;
 *                     not a null pointer, which UBSan would report first)
 *   status signal N   raise(N)
 *
 * The test runs it traced and untraced and compares stdout and the status.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(e2e, step, RINGTRACE_U32(i), RINGTRACE_STRING(what));

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "exit";
	int n = argc > 2 ? atoi(argv[2]) : 0;

	for (uint32_t i = 0; i < 5; i++) {
		ringtrace_tracepoint(e2e, step, i, how);
		printf("line %u %s\n", i, how);
	}
	fflush(stdout);
	if (!strcmp(how, "segv")) {
		volatile uintptr_t addr = 16;
		*(volatile int *)addr = 1;
	} else if (!strcmp(how, "signal")) {
		signal(n, SIG_DFL);
		raise(n);
	}
	return n;
}
