/*
 * kinds - one event per field kind with edge values, and one event with
 * all 16 fields, for checking the whole path from the macros to both
 * readers:
 *
 *   kinds:ints    s8..s64 at their minimum, u8..u64 at their maximum
 *   kinds:hex     x8..x64 and a pointer
 *   kinds:floats  f32/f64: -0, 1e-310 (subnormal), inf, -inf, NaN, pi
 *   kinds:strs    "", "(null)" from NULL, quotes/backslash/tab/newline,
 *                 non-UTF-8 bytes
 *   kinds:arrs    a u8[4] from NULL (zeros), an s16[3], a u16[] of 0, a
 *                 NULL u64[] (count 0), an x32[] of 3
 *   kinds:sixteen 16 u32 fields 1..16
 *
 * Prints "kinds 6".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(kinds, ints, RINGTRACE_S8(a), RINGTRACE_S16(b), RINGTRACE_S32(c),
		RINGTRACE_S64(d), RINGTRACE_U8(e), RINGTRACE_U16(f), RINGTRACE_U32(g),
		RINGTRACE_U64(h));
RINGTRACE_EVENT(kinds, hex, RINGTRACE_X8(a), RINGTRACE_X16(b), RINGTRACE_X32(c),
		RINGTRACE_X64(d), RINGTRACE_PTR(p));
RINGTRACE_EVENT(kinds, floats, RINGTRACE_F32(nz), RINGTRACE_F64(sub), RINGTRACE_F64(pinf),
		RINGTRACE_F32(ninf), RINGTRACE_F64(nan), RINGTRACE_F64(pi));
RINGTRACE_EVENT(kinds, strs, RINGTRACE_STRING(empty), RINGTRACE_STRING(null),
		RINGTRACE_STRING(esc), RINGTRACE_STRING(raw));
RINGTRACE_EVENT(kinds, arrs, RINGTRACE_ARRAY(u8, tag, 4), RINGTRACE_ARRAY(s16, sv, 3),
		RINGTRACE_SEQ(u16, none), RINGTRACE_SEQ(u64, nul), RINGTRACE_SEQ(x32, three));
RINGTRACE_EVENT(kinds, sixteen, RINGTRACE_U32(f1), RINGTRACE_U32(f2), RINGTRACE_U32(f3),
		RINGTRACE_U32(f4), RINGTRACE_U32(f5), RINGTRACE_U32(f6), RINGTRACE_U32(f7),
		RINGTRACE_U32(f8), RINGTRACE_U32(f9), RINGTRACE_U32(f10), RINGTRACE_U32(f11),
		RINGTRACE_U32(f12), RINGTRACE_U32(f13), RINGTRACE_U32(f14), RINGTRACE_U32(f15),
		RINGTRACE_U32(f16));

int main(void)
{
	ringtrace_tracepoint(kinds, ints, INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN, UINT8_MAX,
			     UINT16_MAX, UINT32_MAX, UINT64_MAX);
	ringtrace_tracepoint(kinds, hex, 0xab, 0xbeef, 0xdeadbeef, 0x0123456789abcdefull,
			     (const void *)(uintptr_t)0x7f0000001000ull);
	ringtrace_tracepoint(kinds, floats, -0.0f, 1e-310, INFINITY, -INFINITY, NAN,
			     3.141592653589793);
	ringtrace_tracepoint(kinds, strs, "", NULL, "q\"b\\t\tn\n", "caf\xc3\xa9 \xff\xfe");
	static const int16_t sv[3] = { -1, 0, 32767 };
	static const uint16_t none[1] = { 9 };
	static const uint32_t three[3] = { 0x1, 0xabcdef, 0xffffffff };
	ringtrace_tracepoint(kinds, arrs, NULL, sv, none, 0, NULL, 5, three, 3);
	ringtrace_tracepoint(kinds, sixteen, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
	printf("kinds 6\n");
	return 0;
}
