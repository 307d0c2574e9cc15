/*
 * plugin_a.so - loaded by dlplug with dlopen. Declares plugin:hello, and
 * shared:ev with the same fields as dlplug's own declaration.
 */
#include <stdint.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(plugin, hello, RINGTRACE_U32(n), RINGTRACE_STRING(who));
RINGTRACE_EVENT(shared, ev, RINGTRACE_U32(x));

void plugin_a_hello(uint32_t n);

void plugin_a_hello(uint32_t n)
{
	ringtrace_tracepoint(plugin, hello, n, "plugin_a");
	ringtrace_tracepoint(shared, ev, 100 + n);
}
