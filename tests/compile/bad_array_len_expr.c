/*
 * bad_array_len_expr.c - an array length written as an expression: it would be
 * spelled into the signature as "u8 tag[2 * 2]".
 * run.sh expects this file to fail to compile with -Werror, and to compile
 * with -DGOOD (the corrected code), so that it fails for this reason only.
 */
#include <ringtrace/ringtrace.h>

#ifdef GOOD
RINGTRACE_EVENT(bad, ev, RINGTRACE_ARRAY(u8, tag, 4));
#else
RINGTRACE_EVENT(bad, ev, RINGTRACE_ARRAY(u8, tag, 2 * 2));
#endif

void bad(void);

void bad(void)
{
	ringtrace_tracepoint(bad, ev, 0);
}
