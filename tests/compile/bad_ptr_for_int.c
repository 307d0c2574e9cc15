/*
 * bad_ptr_for_int.c - a pointer passed for an integer field.
 * run.sh expects this file to fail to compile with -Werror, and to compile
 * with -DGOOD (the corrected code), so that it fails for this reason only.
 */
#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(bad, ev, RINGTRACE_U64(id), RINGTRACE_STRING(path));

void bad(const uint8_t *u8s, const int *ints, const char *s);

void bad(const uint8_t *u8s, const int *ints, const char *s)
{
	(void)u8s;
	(void)ints;
	(void)s;
#ifdef GOOD
	ringtrace_tracepoint(bad, ev, 1, s);
#else
	ringtrace_tracepoint(bad, ev, s, s);
#endif
}
