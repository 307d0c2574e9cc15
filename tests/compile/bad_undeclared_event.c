/*
 * bad_undeclared_event.c - fires an event that was never declared.
 * run.sh expects this file to fail to compile with -Werror, and to compile
 * with -DGOOD (the corrected code), so that it fails for this reason only.
 */
#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(bad, ev, RINGTRACE_U32(id));

void bad(const uint8_t *u8s, const int *ints, const char *s);

void bad(const uint8_t *u8s, const int *ints, const char *s)
{
	(void)u8s;
	(void)ints;
	(void)s;
#ifdef GOOD
	ringtrace_tracepoint(bad, ev, 1);
#else
	ringtrace_tracepoint(bad, nope, 1);
#endif
}
