/*
 * bench_lttng.c - the loops of bench/harness.h firing LTTng-UST tracepoints
 * (provider in tp.h), for the LTTng/ringtrace ratios printed by `make bench`.
 * Run by bench/lttng/lttng-bench.sh inside an LTTng session (enabled) or
 * outside any (disabled).
 */
#include "tp.h"

#define BENCH_TRACER "lttng-ust"
#define BENCH_TWO_INTS(a, b) tracepoint(bench, two_ints, (a), (b))
#define BENCH_STR16(s)       tracepoint(bench, str16, (s))

#include "../harness.h"

/* The probe's state word, as the tracepoint() macro itself reads it. */
static int bench_tracing_on(void)
{
	return tracepoint_enabled(bench, two_ints) ? 1 : 0;
}

static void bench_info(void)
{
}

int main(int argc, char **argv)
{
	return bench_main(argc, argv);
}
