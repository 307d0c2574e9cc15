/*
 * bad_int_array_for_u8.c - an int array passed for a u8 array field.
 * run.sh expects this file to fail to compile with -Werror, and to compile
 * with -DGOOD (the corrected code), so that it fails for this reason only.
 */
#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(bad, ev, RINGTRACE_ARRAY(u8, tag, 4));

void bad(const uint8_t *u8s, const int *ints, const char *s);

void bad(const uint8_t *u8s, const int *ints, const char *s)
{
	(void)u8s;
	(void)ints;
	(void)s;
#ifdef GOOD
	ringtrace_tracepoint(bad, ev, u8s);
#else
	ringtrace_tracepoint(bad, ev, ints);
#endif
}
