/*
 * bad_too_few_args.c - one argument short of the event's fields.
 * run.sh expects this file to fail to compile with -Werror, and to compile
 * with -DGOOD (the corrected code), so that it fails for this reason only.
 */
#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(bad, ev, RINGTRACE_U32(id), RINGTRACE_STRING(path));

void bad(const uint8_t *u8s, const int *ints, const char *s);

void bad(const uint8_t *u8s, const int *ints, const char *s)
{
	(void)u8s;
	(void)ints;
	(void)s;
#ifdef GOOD
	ringtrace_tracepoint(bad, ev, 1, s);
#else
	ringtrace_tracepoint(bad, ev, 1);
#endif
}
