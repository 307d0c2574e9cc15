/*
 * preinit_tp_plain.c - libpreinit_tp_plain.so (tests/e2e/mem_preinit.sh):
 * an event without a stack, registered by its constructor, which ld.so
 * runs after libpreinit_tp_stack.so's.
 */
#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(pre_plain, ev, RINGTRACE_U32(n));

void preinit_tp_plain(unsigned n);
void preinit_tp_plain(unsigned n)
{
	ringtrace_tracepoint(pre_plain, ev, n);
}
