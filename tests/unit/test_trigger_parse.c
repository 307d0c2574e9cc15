/*
 * test_trigger_parse.c - the trigger's syntax (common/trigger_parse.h),
 * which the command checks before a trigger goes into a control block and
 * the runtime parses again before arming it.
 *
 * Checks: an event pattern alone and each comparison parse to the right
 * pattern, field, operator and value (decimal, hex, negative); malformed
 * triggers are refused with -EINVAL and a message naming the trigger (no
 * provider, unknown operator, a value that is not an integer, a missing
 * or extra word, "if" misspelt, too long).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/trigger_parse.h"

static void test_pattern_only(void **state)
{
	(void)state;
	struct trigger_spec t;
	char err[256] = "";
	assert_int_equal(trigger_parse("app:req*", &t, err, sizeof(err)), 0);
	assert_string_equal(t.pattern, "app:req*");
	assert_string_equal(t.text, "app:req*");
	assert_int_equal(t.op, TRIG_OP_NONE);
	assert_int_equal(trigger_check("app:req*", err, sizeof(err)), 0);
}

static void test_conditions(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		enum trigger_op op;
		int64_t value;
	} ok[] = {
		{ "fl:req if status == 503", TRIG_OP_EQ, 503 },  { "fl:req if status != 0x1f", TRIG_OP_NE, 31 },
		{ "fl:req if status < -2", TRIG_OP_LT, -2 },     { "fl:req if status <= 7", TRIG_OP_LE, 7 },
		{ "fl:req if status > 010", TRIG_OP_GT, 8 },     { "fl:req if status >= 500", TRIG_OP_GE, 500 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct trigger_spec t;
		char err[256] = "";
		assert_int_equal(trigger_parse(ok[i].text, &t, err, sizeof(err)), 0);
		assert_string_equal(t.pattern, "fl:req");
		assert_string_equal(t.field, "status");
		assert_int_equal(t.op, ok[i].op);
		assert_true(t.value == ok[i].value);
	}
}

static void test_bad(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"",                             /* nothing */
		"noprovider",                   /* no ':' */
		":",                            /* too short */
		"fl:req if status ~ 3",         /* unknown operator */
		"fl:req if status == 5x",       /* not an integer */
		"fl:req if status == ",         /* no value */
		"fl:req if status",             /* no operator */
		"fl:req when status == 3",      /* not "if" */
		"fl:req if status == 3 more",   /* extra word */
		"fl:req if status == 99999999999999999999", /* out of range */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct trigger_spec t;
		char err[256] = "";
		assert_int_equal(trigger_parse(bad[i], &t, err, sizeof(err)), -EINVAL);
		assert_true(err[0] != 0);
		assert_int_equal(trigger_check(bad[i], err, sizeof(err)), -EINVAL);
	}
	char big[TRIGGER_TEXT + 8];
	memset(big, 'a', sizeof(big) - 1);
	big[1] = ':';
	big[sizeof(big) - 1] = 0;
	char err[256] = "";
	assert_int_equal(trigger_check(big, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "trigger too long");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pattern_only),
		cmocka_unit_test(test_conditions),
		cmocka_unit_test(test_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
