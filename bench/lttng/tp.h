/*
 * tp.h - LTTng-UST tracepoint provider for the comparison benchmark: the
 * same two events as bench_tp.c fires through ringtrace (two u32, and one
 * string). Compiled once with TRACEPOINT_CREATE_PROBES in tp.c.
 */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./tp.h"

#if !defined(BENCH_LTTNG_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

TRACEPOINT_EVENT(bench, two_ints,
	TP_ARGS(uint32_t, a, uint32_t, b),
	TP_FIELDS(
		ctf_integer(uint32_t, a, a)
		ctf_integer(uint32_t, b, b)
	)
)

TRACEPOINT_EVENT(bench, str16,
	TP_ARGS(const char *, s),
	TP_FIELDS(
		ctf_string(s, s)
	)
)

#endif /* BENCH_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
