/*
 * bench_tp.c - the loops of bench/harness.h firing ringtrace tracepoints:
 * the per-event cost figures of `make bench`. Tracing is on only when the
 * program runs under `ringtrace record`; bench/run.sh runs each mode with or
 * without it as the mode says.
 */
#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(bench, two_ints, RINGTRACE_U32(a), RINGTRACE_U32(b));
RINGTRACE_EVENT(bench, str16, RINGTRACE_STRING(s));

#define BENCH_TRACER "ringtrace"
#define BENCH_TWO_INTS(a, b) ringtrace_tracepoint(bench, two_ints, (a), (b))
#define BENCH_STR16(s)       ringtrace_tracepoint(bench, str16, (s))

#include "harness.h"

static int bench_tracing_on(void)
{
	return ringtrace_tracepoint_enabled(bench, two_ints) ? 1 : 0;
}

/* The session's set-up, read from the library's (internal, ABI-only) view
 * of the region, so that a figure of the rseq path can be told apart from
 * one of the atomic fallback. */
static void bench_info(void)
{
	struct ringtrace__rb *rb = __atomic_load_n(&ringtrace__rb_current, __ATOMIC_ACQUIRE);
	/* The path an event without a stack takes: the inline rseq path with
	 * the TSC read inside its critical section, the inline rseq path with
	 * the clock read before it, or the atomic fallback. */
	const char *path = !rb ? "" : !rb->fast_any ? (rb->use_rseq ? "slow-rseq" : "atomic")
				     : rb->clock_tsc ? "rseq-tsc-in-section" : "rseq-clock-before-section";
	if (rb)
		printf("info ringtrace_session rseq=%d clock=%s mode=%s path=%s\n", rb->use_rseq,
		       rb->clock_tsc ? "tsc" : "monotonic",
		       rb->mode == RINGTRACE__MODE_OVERWRITE ? "overwrite" : "discard", path);
}

int main(int argc, char **argv)
{
	return bench_main(argc, argv);
}
