/*
 * bigev - fires e2e:big { u32 n; string s } with strings of the lengths
 * given on the command line, one event per argument, n = the length.
 *
 *   bigev LEN...
 *
 * With 4 KiB sub-buffers the largest event that fits has a 3994-byte
 * string: 84-byte packet header + 8-byte thread record + 4-byte event
 * header + 4-byte n + 3995 bytes of string = 4095 bytes (a sub-buffer is
 * never filled exactly). One byte more must be dropped and counted as too
 * big.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(e2e, big, RINGTRACE_U32(n), RINGTRACE_STRING(s));

int main(int argc, char **argv)
{
	for (int a = 1; a < argc; a++) {
		size_t len = strtoul(argv[a], NULL, 10);
		char *s = malloc(len + 1);
		if (!s)
			return 3;
		for (size_t k = 0; k < len; k++)
			s[k] = (char)('a' + k % 26);
		s[len] = 0;
		ringtrace_tracepoint(e2e, big, (uint32_t)len, s);
		free(s);
	}
	printf("fired %d\n", argc - 1);
	return 0;
}
