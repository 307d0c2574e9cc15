/*
 * test_sig.c - event signature parser and payload measuring (common/sig.h).
 *
 * Checks: every type word and array form parses to the right descriptor;
 * malformed signatures are refused (bad type, missing or non-C names,
 * duplicate names, names that clash once written to TSDL, N == 0 or too
 * large, arrays of strings/floats, stray separators, too many fields, too
 * long); sig_record_size() measures strings and sequences, refuses payloads
 * that do not fit, and never reads past `avail` (random payloads in a
 * buffer whose end is a guard checked by ASan).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/sig.h"

static void test_design_example(void **state)
{
	(void)state;
	struct sig_field f[SIG_FIELDS_MAX];
	size_t n = 99;
	assert_int_equal(sig_parse("u32 id;string path;u8 tag[4];u16 vals[];ptr p;f64 ratio", f,
				   SIG_FIELDS_MAX, &n), 0);
	assert_int_equal(n, 6);
	assert_int_equal(f[0].kind, SIG_INT);
	assert_int_equal(f[0].bits, 32);
	assert_int_equal(f[0].is_signed, 0);
	assert_int_equal(f[0].array, SIG_SCALAR);
	assert_string_equal(f[0].name, "id");
	assert_int_equal(f[1].kind, SIG_STRING);
	assert_string_equal(f[1].name, "path");
	assert_int_equal(f[2].kind, SIG_INT);
	assert_int_equal(f[2].bits, 8);
	assert_int_equal(f[2].array, SIG_FIXED);
	assert_int_equal(f[2].len, 4);
	assert_int_equal(f[3].bits, 16);
	assert_int_equal(f[3].array, SIG_SEQ);
	assert_int_equal(f[4].kind, SIG_PTR);
	assert_int_equal(f[4].bits, 64);
	assert_int_equal(f[5].kind, SIG_FLOAT);
	assert_int_equal(f[5].bits, 64);
	assert_string_equal(f[5].name, "ratio");
}

static void test_all_types(void **state)
{
	(void)state;
	static const struct {
		const char *w;
		int kind, bits, sgn;
	} t[] = {
		{ "s8", SIG_INT, 8, 1 },    { "s16", SIG_INT, 16, 1 },  { "s32", SIG_INT, 32, 1 },
		{ "s64", SIG_INT, 64, 1 },  { "u8", SIG_INT, 8, 0 },    { "u16", SIG_INT, 16, 0 },
		{ "u32", SIG_INT, 32, 0 },  { "u64", SIG_INT, 64, 0 },  { "x8", SIG_HEX, 8, 0 },
		{ "x16", SIG_HEX, 16, 0 },  { "x32", SIG_HEX, 32, 0 },  { "x64", SIG_HEX, 64, 0 },
		{ "ptr", SIG_PTR, 64, 0 },  { "f32", SIG_FLOAT, 32, 1 }, { "f64", SIG_FLOAT, 64, 1 },
		{ "string", SIG_STRING, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char s[64];
		struct sig_field f[2];
		size_t n;
		snprintf(s, sizeof(s), "%s v", t[i].w);
		assert_int_equal(sig_parse(s, f, 2, &n), 0);
		assert_int_equal(n, 1);
		assert_int_equal(f[0].kind, t[i].kind);
		assert_int_equal(f[0].bits, t[i].bits);
		assert_int_equal(f[0].is_signed, t[i].sgn);
		assert_int_equal(sig_elem_size(&f[0]), t[i].bits / 8);
	}
}

static void test_good_variations(void **state)
{
	(void)state;
	struct sig_field f[SIG_FIELDS_MAX];
	size_t n;
	assert_int_equal(sig_parse("", f, SIG_FIELDS_MAX, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(sig_parse("  ", f, SIG_FIELDS_MAX, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(sig_parse(" u32\tx ; s64  _y2 [65536] ;x16 z[]", f, SIG_FIELDS_MAX, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(f[1].name, "_y2");
	assert_int_equal(f[1].len, 65536);
	assert_int_equal(f[2].kind, SIG_HEX);
	assert_int_equal(f[2].array, SIG_SEQ);
	assert_int_equal(sig_parse("ptr ips[];ptr p[2]", f, SIG_FIELDS_MAX, &n), 0);
	char name[SIG_NAME_MAX + 8] = "u8 ";
	memset(name + 3, 'a', SIG_NAME_MAX - 1);
	name[3 + SIG_NAME_MAX - 1] = '\0';
	assert_int_equal(sig_parse(name, f, SIG_FIELDS_MAX, &n), 0);
	/* A field `_x_length` is fine as long as no sequence is named x. */
	assert_int_equal(sig_parse("u32 _x_length;u16 y[]", f, SIG_FIELDS_MAX, &n), 0);
}

static void test_bad(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"u32", "u32 ", "u33 x", "U32 x", "int x", "u32 1x", "u32 x-y", "u32 x y",
		"u32 x[0]", "u32 x[65537]", "u32 x[01]", "u32 x[-1]", "u32 x[", "u32 x[4",
		"u32 x]", "u32 x[4]]", "u32 x[4][2]", "u32 x[a]", "u32 x[ 4]", "u32 x[4 ]", "string s[4]", "string s[]",
		"f64 d[]", "f32 d[2]", "u32 a;u32 a", "u32 a;;u32 b", "u32 a;", ";u32 a", ";",
		"u16 v[];u32 _v_length", "u32 _v_length;u16 v[]", "u32 é", "u32 a\x01",
		"u32 x[4294967296]", "u32 x[99999999999999999999]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sig_field f[SIG_FIELDS_MAX];
		size_t n = 12345;
		int r = sig_parse(bad[i], f, SIG_FIELDS_MAX, &n);
		if (r != -EINVAL)
			fail_msg("accepted \"%s\" (r=%d)", bad[i], r);
		assert_int_equal(n, 12345);
	}
	/* Names of 64 bytes do not fit SIG_NAME_MAX. */
	char name[SIG_NAME_MAX + 8] = "u8 ";
	memset(name + 3, 'a', SIG_NAME_MAX);
	name[3 + SIG_NAME_MAX] = '\0';
	struct sig_field f[SIG_FIELDS_MAX + 1];
	size_t n;
	assert_int_equal(sig_parse(name, f, SIG_FIELDS_MAX, &n), -EINVAL);
	/* More fields than `max`, and than SIG_FIELDS_MAX. */
	assert_int_equal(sig_parse("u8 a;u8 b;u8 c", f, 2, &n), -EINVAL);
	char many[SIG_FIELDS_MAX * 12 + 16];
	size_t len = 0;
	for (int i = 0; i <= SIG_FIELDS_MAX; i++)
		len += (size_t)snprintf(many + len, sizeof(many) - len, "%su8 f%d", i ? ";" : "", i);
	assert_int_equal(sig_parse(many, f, SIG_FIELDS_MAX + 1, &n), -EINVAL);
	/* Too long a text. */
	char *big = malloc(SIG_TEXT_MAX + 2);
	memset(big, ' ', SIG_TEXT_MAX + 1);
	big[SIG_TEXT_MAX + 1] = '\0';
	assert_int_equal(sig_parse(big, f, SIG_FIELDS_MAX, &n), -E2BIG);
	free(big);
}

static void test_record_size(void **state)
{
	(void)state;
	struct sig_field f[SIG_FIELDS_MAX];
	size_t n, size = 0;
	assert_int_equal(sig_parse("u32 id;string path;u8 tag[4];u16 vals[];ptr p;f64 ratio", f,
				   SIG_FIELDS_MAX, &n), 0);
	uint8_t buf[64] = { 0 };
	size_t off = 4;
	memcpy(buf + off, "ab", 3);
	off += 3 + 4;
	uint32_t count = 3;
	memcpy(buf + off, &count, 4);
	off += 4 + 3 * 2 + 8 + 8;
	assert_int_equal(sig_record_size(f, n, buf, sizeof(buf), &size), 0);
	assert_int_equal(size, off);
	assert_int_equal(sig_record_size(f, n, buf, off, &size), 0);
	size_t keep = size;
	assert_int_equal(sig_record_size(f, n, buf, off - 1, &size), -EBADMSG);
	assert_int_equal(size, keep);
	/* A string without NUL within avail. */
	assert_int_equal(sig_record_size(f, n, buf, 6, &size), -EBADMSG);
	/* A huge sequence count. */
	count = 0xffffffff;
	memcpy(buf + 4 + 3 + 4, &count, 4);
	assert_int_equal(sig_record_size(f, n, buf, sizeof(buf), &size), -EBADMSG);
	/* No field: size 0, even with nothing available. */
	assert_int_equal(sig_record_size(f, 0, buf, 0, &size), 0);
	assert_int_equal(size, 0);
}

/* Random payloads at the very end of a heap block: ASan catches any overread. */
static void test_record_size_random(void **state)
{
	(void)state;
	struct sig_field f[SIG_FIELDS_MAX];
	size_t n;
	assert_int_equal(sig_parse("string a;u16 s[];x32 h[3];string b;s8 q[];f32 z", f,
				   SIG_FIELDS_MAX, &n), 0);
	srand(1234);
	for (int iter = 0; iter < 20000; iter++) {
		size_t avail = (size_t)(rand() % 64);
		uint8_t *p = malloc(avail ? avail : 1);
		for (size_t i = 0; i < avail; i++)
			p[i] = (uint8_t)(rand() % 4 == 0 ? 0 : rand() % 8);
		size_t size = 0;
		int r = sig_record_size(f, n, p, avail, &size);
		assert_true(r == 0 || r == -EBADMSG);
		if (r == 0)
			assert_true(size <= avail);
		free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_design_example),
		cmocka_unit_test(test_all_types),
		cmocka_unit_test(test_good_variations),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_record_size),
		cmocka_unit_test(test_record_size_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
