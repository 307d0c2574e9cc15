/*
 * all_fields.h - event declarations shared by the translation units of the
 * header compile test (all_fields.c, all_fields_tu2.c, all_fields.cpp): every
 * field kind, no fields, the maximum of 16 fields, and a provider that is a
 * predefined macro in GNU modes. Compiled only; run.sh links the objects
 * into one shared object to show that repeated declarations do not clash.
 */
#ifndef ALL_FIELDS_H
#define ALL_FIELDS_H

#include <ringtrace/ringtrace.h>

#define TAG_LEN 4

#ifndef ALL_FIELDS_PEDANTIC /* an empty field list needs C23 or C++20 there */
RINGTRACE_EVENT(cmp, empty);
#endif
RINGTRACE_EVENT(cmp, signed_ints, RINGTRACE_S8(a), RINGTRACE_S16(b), RINGTRACE_S32(c),
		RINGTRACE_S64(d));
RINGTRACE_EVENT(cmp, unsigned_ints, RINGTRACE_U8(a), RINGTRACE_U16(b), RINGTRACE_U32(c),
		RINGTRACE_U64(d));
RINGTRACE_EVENT(cmp, hex_ints, RINGTRACE_X8(a), RINGTRACE_X16(b), RINGTRACE_X32(c),
		RINGTRACE_X64(d));
RINGTRACE_EVENT(cmp, floats, RINGTRACE_F32(f), RINGTRACE_F64(d));
RINGTRACE_EVENT(cmp, pointer, RINGTRACE_PTR(p));
RINGTRACE_EVENT(cmp, strings, RINGTRACE_STRING(first), RINGTRACE_STRING(second));
RINGTRACE_EVENT(cmp, arrays,
		RINGTRACE_ARRAY(s8, as8, 1), RINGTRACE_ARRAY(s16, as16, 2),
		RINGTRACE_ARRAY(s32, as32, 3), RINGTRACE_ARRAY(s64, as64, 4),
		RINGTRACE_ARRAY(u8, au8, TAG_LEN), RINGTRACE_ARRAY(u16, au16, 2),
		RINGTRACE_ARRAY(u32, au32, 2), RINGTRACE_ARRAY(u64, au64, 2),
		RINGTRACE_ARRAY(x8, ax8, 2), RINGTRACE_ARRAY(x16, ax16, 2),
		RINGTRACE_ARRAY(x32, ax32, 2), RINGTRACE_ARRAY(x64, ax64, 2));
RINGTRACE_EVENT(cmp, sequences,
		RINGTRACE_SEQ(s8, qs8), RINGTRACE_SEQ(s16, qs16), RINGTRACE_SEQ(s32, qs32),
		RINGTRACE_SEQ(s64, qs64), RINGTRACE_SEQ(u8, qu8), RINGTRACE_SEQ(u16, qu16),
		RINGTRACE_SEQ(u32, qu32), RINGTRACE_SEQ(u64, qu64));
RINGTRACE_EVENT(cmp, hex_sequences, RINGTRACE_SEQ(x8, q8), RINGTRACE_SEQ(x16, q16),
		RINGTRACE_SEQ(x32, q32), RINGTRACE_SEQ(x64, q64));
/* Events that carry a stack, with and without fields. */
RINGTRACE_EVENT_STACK(cmp, with_stack, RINGTRACE_U64(bytes), RINGTRACE_STRING(what));
RINGTRACE_EVENT_STACK(cmp, one_and_stack, RINGTRACE_PTR(p));
/* The example of docs/design.md, "Event signature string". */
RINGTRACE_EVENT(cmp, doc_example, RINGTRACE_U32(id), RINGTRACE_STRING(path),
		RINGTRACE_ARRAY(u8, tag, 4), RINGTRACE_SEQ(u16, vals), RINGTRACE_PTR(p),
		RINGTRACE_F64(ratio));
RINGTRACE_EVENT(cmp, sixteen,
		RINGTRACE_U8(f1), RINGTRACE_U16(f2), RINGTRACE_U32(f3), RINGTRACE_U64(f4),
		RINGTRACE_S8(f5), RINGTRACE_S16(f6), RINGTRACE_S32(f7), RINGTRACE_S64(f8),
		RINGTRACE_X32(f9), RINGTRACE_F32(f10), RINGTRACE_F64(f11), RINGTRACE_PTR(f12),
		RINGTRACE_STRING(f13), RINGTRACE_ARRAY(u8, f14, 2), RINGTRACE_SEQ(u32, f15),
		RINGTRACE_U8(f16));
/* `linux` is a macro (1) in GNU modes; the event must still be linux:boot. */
RINGTRACE_EVENT(linux, boot, RINGTRACE_U32(stage));

enum all_fields_color { ALL_FIELDS_RED = 1 };

struct all_fields_req {
	uint32_t id;
	const char *path;
	uint8_t tag[TAG_LEN];
	uint16_t vals[3];
};

/* Fires every event, from the places a statement can appear. */
static void all_fields_fire(uint32_t n, const char *s, const struct all_fields_req *r)
{
	static const int8_t as8[1] = { -1 };
	static const int16_t as16[2] = { -1, 2 };
	static const int32_t as32[3] = { -1, 2, -3 };
	static const int64_t as64[4] = { -1, 2, -3, 4 };
	static const uint16_t a16[2] = { 1, 2 };
	static const uint32_t a32[2] = { 1, 2 };
	static const uint64_t a64[2] = { 1, 2 };
	uint8_t a8[TAG_LEN] = { 1, 2, 3, 4 };
	unsigned char bytes[2] = { 5, 6 };
	char text[8] = "text";
	uint32_t i;

#ifndef ALL_FIELDS_PEDANTIC
	ringtrace_tracepoint(cmp, empty);
#endif
	ringtrace_tracepoint(cmp, signed_ints, -1, -2, -3, (int64_t)n - 5);
	ringtrace_tracepoint(cmp, unsigned_ints, 255, 65535, n, UINT64_MAX);
	ringtrace_tracepoint(cmp, hex_ints, 0xff, 0xffff, 0xdeadbeef, 0);
	ringtrace_tracepoint(cmp, floats, 1.5f, 2.5);
	ringtrace_tracepoint(cmp, floats, 3, n);
	ringtrace_tracepoint(cmp, with_stack, n, s);
	ringtrace_tracepoint(cmp, one_and_stack, r);
	ringtrace_tracepoint(cmp, pointer, r);
	ringtrace_tracepoint(cmp, pointer, 0);
	ringtrace_tracepoint(cmp, pointer, &r->vals[1]);
	ringtrace_tracepoint(cmp, strings, s, "literal");
	ringtrace_tracepoint(cmp, strings, text, 0);
	ringtrace_tracepoint(cmp, strings, r->path, n ? s : "none");
	ringtrace_tracepoint(cmp, arrays, as8, as16, as32, as64, a8, a16, a32, a64,
			     bytes, a16, a32, a64);
	ringtrace_tracepoint(cmp, arrays, 0, 0, 0, 0, r->tag, 0, 0, 0, 0, 0, 0, 0);
	ringtrace_tracepoint(cmp, sequences, as8, 1, as16, 2, as32, 3, as64, n % 5,
			     bytes, 2, r->vals, 3, a32, 0, 0, 0);
	ringtrace_tracepoint(cmp, hex_sequences, a8, TAG_LEN, a16, 2, a32, 2, a64, 2);
	ringtrace_tracepoint(cmp, doc_example, r->id, r->path, r->tag, r->vals,
			     (uint32_t)(sizeof(r->vals) / sizeof(r->vals[0])), r, 0.25);
	ringtrace_tracepoint(cmp, sixteen, 1, 2, 3, 4, -5, -6, -7, -8, ALL_FIELDS_RED, 1.0f,
			     1e300, s, s, a8, a32, 2, 'x');
	ringtrace_tracepoint(linux, boot, 1);

	/* As the only statement of a branch, a loop and a case. */
	if (n > 3)
		ringtrace_tracepoint(cmp, pointer, s);
	else
		ringtrace_tracepoint(cmp, pointer, text);
	for (i = 0; i < n; i++)
		ringtrace_tracepoint(cmp, unsigned_ints, (uint8_t)i, (uint16_t)(i * 2), i, i);
	switch (n) {
	case 1:
		ringtrace_tracepoint(linux, boot, n);
		break;
	default:
		break;
	}
	if (ringtrace_tracepoint_enabled(cmp, strings)) {
		char buf[16];
		memcpy(buf, "computed", 9);
		ringtrace_tracepoint(cmp, strings, buf, s);
	}
#ifdef __cplusplus
	ringtrace_tracepoint(cmp, strings, nullptr, s);
	ringtrace_tracepoint(cmp, pointer, nullptr);
	[&]() { ringtrace_tracepoint(cmp, unsigned_ints, 1, 2, n, 4); }();
#endif
}

#endif /* ALL_FIELDS_H */
