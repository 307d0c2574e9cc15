/*
 * lttng_tp.h - the LTTng-UST tracepoint provider `rtlt` of
 * tests/e2e/lttng.sh: one event class per kind of field LTTng-UST writes
 * (integers of every size and sign, hexadecimal and network byte order,
 * floats, strings, text arrays and sequences, integer arrays and
 * sequences, an enum, no field at all), so that a real LTTng trace
 * exercises every decoding path of `ringtrace dump`.
 *
 * Built with LTTng's headers (liblttng-ust-dev) only, not with ringtrace's.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER rtlt

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "lttng_tp.h"

#if !defined(RTLT_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RTLT_TP_H

#include <stdint.h>

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_ENUM(rtlt, state,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("idle", 0)
		lttng_ust_field_enum_range("busy", 1, 5)
		lttng_ust_field_enum_value("done", 9)
	)
)

LTTNG_UST_TRACEPOINT_EVENT(rtlt, ints,
	LTTNG_UST_TP_ARGS(int64_t, i),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(int8_t, s8, (int8_t)(i * 37))
		lttng_ust_field_integer(int16_t, s16, (int16_t)(i * -1001))
		lttng_ust_field_integer(int32_t, s32, (int32_t)(i * -100003))
		lttng_ust_field_integer(int64_t, s64, i * -1000000007LL)
		lttng_ust_field_integer(uint8_t, u8, (uint8_t)(i * 7))
		lttng_ust_field_integer(uint16_t, u16, (uint16_t)(i * 4099))
		lttng_ust_field_integer(uint32_t, u32, (uint32_t)i * 3000000019u)
		lttng_ust_field_integer(uint64_t, u64, (uint64_t)i * 0x9e3779b97f4a7c15ull)
		lttng_ust_field_integer_hex(uint64_t, hx, (uint64_t)i << 40 | 0xbeef)
		lttng_ust_field_integer_network(uint32_t, net, (uint32_t)i * 65537u)
		lttng_ust_field_integer_network_hex(uint16_t, nethx, (uint16_t)(i * 771))
	)
)

LTTNG_UST_TRACEPOINT_EVENT(rtlt, floats,
	LTTNG_UST_TP_ARGS(int64_t, i),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_float(float, f, (float)i / 8)
		lttng_ust_field_float(double, d, (double)i * -1.25e10)
	)
)

LTTNG_UST_TRACEPOINT_EVENT(rtlt, text,
	LTTNG_UST_TP_ARGS(const char *, s, unsigned, n),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_string(str, s)
		lttng_ust_field_array_text(char, atxt, s, 4)
		lttng_ust_field_sequence_text(char, stxt, s, unsigned, n)
	)
)

LTTNG_UST_TRACEPOINT_EVENT(rtlt, arrays,
	LTTNG_UST_TP_ARGS(const int32_t *, a, const uint16_t *, q, unsigned, n),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_array(int32_t, arr, a, 3)
		lttng_ust_field_array_hex(int32_t, arrhx, a, 3)
		lttng_ust_field_sequence(uint16_t, seq, q, unsigned, n)
		lttng_ust_field_sequence_hex(uint16_t, seqhx, q, unsigned, n)
	)
)

LTTNG_UST_TRACEPOINT_EVENT(rtlt, state,
	LTTNG_UST_TP_ARGS(int, v),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_enum(rtlt, state, int, st, v)
		lttng_ust_field_integer(int, raw, v)
	)
)

LTTNG_UST_TRACEPOINT_EVENT(rtlt, empty,
	LTTNG_UST_TP_ARGS(),
	LTTNG_UST_TP_FIELDS()
)

#endif /* RTLT_TP_H */

#include <lttng/tracepoint-event.h>
