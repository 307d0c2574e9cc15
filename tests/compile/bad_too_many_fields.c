/*
 * bad_too_many_fields.c - an event with 17 fields, one more than the limit.
 * run.sh expects this file to fail to compile with -Werror, and to compile
 * with -DGOOD (the corrected code), so that it fails for this reason only.
 */
#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(bad, ev,
		RINGTRACE_U8(f1), RINGTRACE_U8(f2), RINGTRACE_U8(f3), RINGTRACE_U8(f4),
		RINGTRACE_U8(f5), RINGTRACE_U8(f6), RINGTRACE_U8(f7), RINGTRACE_U8(f8),
		RINGTRACE_U8(f9), RINGTRACE_U8(f10), RINGTRACE_U8(f11), RINGTRACE_U8(f12),
		RINGTRACE_U8(f13), RINGTRACE_U8(f14), RINGTRACE_U8(f15), RINGTRACE_U8(f16)
#ifndef GOOD
		, RINGTRACE_U8(f17)
#endif
		);

void bad(const uint8_t *u8s, const int *ints, const char *s);

void bad(const uint8_t *u8s, const int *ints, const char *s)
{
	(void)u8s;
	(void)ints;
	(void)s;
#ifdef GOOD
	ringtrace_tracepoint(bad, ev, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
#else
	ringtrace_tracepoint(bad, ev, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17);
#endif
}
