/*
 * preinit_tp_stack.c - libpreinit_tp_stack.so (tests/e2e/mem_preinit.sh):
 * declares an event with a stack, so its constructor's registration of
 * the event sets up stack capture (libunwind, the unwind tables) under
 * the registry's lock, while the constructor of libpreinit_tp_plain.so,
 * which registers events too, has not run yet.
 */
#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT_STACK(pre_stk, ev, RINGTRACE_U32(n));

void preinit_tp_stack(unsigned n);
void preinit_tp_stack(unsigned n)
{
	ringtrace_tracepoint(pre_stk, ev, n);
}
