/*
 * test_utf8.c - UTF-8 validity and boundaries (src/analyze/utf8.c): every
 * valid length, the limits of each form, and what is not UTF-8
 * (continuation and invalid lead bytes, cut sequences, overlong forms,
 * surrogates, code points above U+10FFFF).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/utf8.h"

static size_t len_of(const char *s)
{
	return utf8_len((const unsigned char *)s, strlen(s));
}

static void test_valid(void **state)
{
	(void)state;
	assert_int_equal(len_of("a"), 1);
	assert_int_equal(len_of("\x7f"), 1);
	assert_int_equal(len_of("\xc2\x80"), 2);             /* U+0080 */
	assert_int_equal(len_of("\xc3\xa9t\xc3\xa9"), 2);     /* é, the rest not counted */
	assert_int_equal(len_of("\xdf\xbf"), 2);             /* U+07FF */
	assert_int_equal(len_of("\xe0\xa0\x80"), 3);         /* U+0800 */
	assert_int_equal(len_of("\xed\x9f\xbf"), 3);         /* U+D7FF */
	assert_int_equal(len_of("\xee\x80\x80"), 3);         /* U+E000 */
	assert_int_equal(len_of("\xef\xbf\xbd"), 3);         /* U+FFFD */
	assert_int_equal(len_of("\xf0\x90\x80\x80"), 4);     /* U+10000 */
	assert_int_equal(len_of("\xf4\x8f\xbf\xbf"), 4);     /* U+10FFFF */
}

static void test_invalid(void **state)
{
	(void)state;
	assert_int_equal(len_of("\x80"), 0);                 /* continuation */
	assert_int_equal(len_of("\xbf\x80"), 0);
	assert_int_equal(len_of("\xc0\x80"), 0);             /* overlong NUL */
	assert_int_equal(len_of("\xc1\xbf"), 0);
	assert_int_equal(len_of("\xe0\x9f\xbf"), 0);         /* overlong U+07FF */
	assert_int_equal(len_of("\xf0\x8f\xbf\xbf"), 0);     /* overlong U+FFFF */
	assert_int_equal(len_of("\xed\xa0\x80"), 0);         /* U+D800 */
	assert_int_equal(len_of("\xed\xbf\xbf"), 0);         /* U+DFFF */
	assert_int_equal(len_of("\xf4\x90\x80\x80"), 0);     /* U+110000 */
	assert_int_equal(len_of("\xf5\x80\x80\x80"), 0);
	assert_int_equal(len_of("\xff"), 0);
	assert_int_equal(len_of("\xc3("), 0);                /* not a continuation */
	assert_int_equal(len_of("\xe2\x82("), 0);
	/* Cut by the length given, whatever follows. */
	const unsigned char euro[] = { 0xe2, 0x82, 0xac };
	assert_int_equal(utf8_len(euro, 3), 3);
	assert_int_equal(utf8_len(euro, 2), 0);
	assert_int_equal(utf8_len(euro, 1), 0);
}

static void test_boundary(void **state)
{
	(void)state;
	const char *s = "a\xe2\x82\xac" "b\xf0\x9f\x98\x80";  /* a € b 😀 */
	assert_int_equal(utf8_boundary(s, 0), 0);
	assert_int_equal(utf8_boundary(s, 1), 1);             /* before € */
	assert_int_equal(utf8_boundary(s, 2), 1);             /* inside €: back to it */
	assert_int_equal(utf8_boundary(s, 3), 1);
	assert_int_equal(utf8_boundary(s, 4), 4);             /* b */
	assert_int_equal(utf8_boundary(s, 5), 5);             /* 😀 */
	assert_int_equal(utf8_boundary(s, 7), 5);
	assert_int_equal(utf8_boundary(s, 9), 9);             /* the end */
	/* Only continuation bytes: back to the start. */
	assert_int_equal(utf8_boundary("\x80\x80\x80", 2), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_boundary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
