/*
 * plugin_conflict.so - declares conflict:ev with other fields than the
 * program conflict.c does (u64 x instead of u32 x).
 */
#include <stdint.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(conflict, ev, RINGTRACE_U64(x));

void plugin_conflict_fire(uint64_t x);

void plugin_conflict_fire(uint64_t x)
{
	ringtrace_tracepoint(conflict, ev, x);
}
