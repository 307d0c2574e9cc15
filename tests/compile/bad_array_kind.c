/*
 * bad_array_kind.c - an array whose kind is not one of the integer kinds.
 * run.sh expects this file to fail to compile with -Werror, and to compile
 * with -DGOOD (the corrected code), so that it fails for this reason only.
 */
#include <ringtrace/ringtrace.h>

#ifdef GOOD
RINGTRACE_EVENT(bad, ev, RINGTRACE_ARRAY(u32, tag, 4));
#else
RINGTRACE_EVENT(bad, ev, RINGTRACE_ARRAY(f32, tag, 4));
#endif

void bad(void);

void bad(void)
{
	ringtrace_tracepoint(bad, ev, 0);
}
