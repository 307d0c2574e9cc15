/*
 * hot_path.c - compiled to assembly by run.sh, which checks what a disabled
 * tracepoint costs: in hot_path_one, everything before the first return is a
 * load (or compare) of the descriptor and a conditional jump; in
 * hot_path_loop, the descriptor is loaded again on every iteration.
 */
#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(hp, ev, RINGTRACE_U32(x), RINGTRACE_STRING(s));

void hot_path_one(uint32_t x, const char *s);
uint64_t hot_path_loop(const uint32_t *a, uint32_t n);

void hot_path_one(uint32_t x, const char *s)
{
	ringtrace_tracepoint(hp, ev, x, s);
}

uint64_t hot_path_loop(const uint32_t *a, uint32_t n)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		sum += a[i] * 3;
		ringtrace_tracepoint(hp, ev, a[i], "loop");
	}
	return sum;
}
