/*
 * test_clock.c - choosing the trace clock and turning its values into
 * wall-clock time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include <ringtrace/ringtrace-abi.h>

#include "common/clock.h"

/* ns since the epoch of value v, as the metadata says (exact integers). */
static long double to_ns(const struct clk_calib *c, uint64_t v)
{
	return (long double)c->offset_s * 1e9L + ((long double)c->offset + (long double)v) * 1e9L / (long double)c->freq;
}

static void test_calibrate_synthetic(void **state)
{
	(void)state;
	/* A 2.5 GHz counter sampled 10 s apart. */
	struct clk_sample a = { 1000000000000ull, 400000000000ull, 1700000000000000000ull };
	struct clk_sample b = { a.value + 25000000000ull, a.mono_ns + 10000000000ull, a.real_ns + 10000000000ull };
	struct clk_calib c;
	clk_calibrate(RINGTRACE__CLOCK_TSC, &a, &b, &c);
	assert_int_equal(c.freq, 2500000000ull);
	assert_true(c.offset < c.freq);
	/* Both samples map back to their real time (within a nanosecond). */
	long double d1 = to_ns(&c, a.value) - (long double)a.real_ns;
	long double d2 = to_ns(&c, b.value) - (long double)b.real_ns;
	assert_true(d1 > -1.0L && d1 < 1.0L);
	assert_true(d2 > -1.0L && d2 < 1.0L);
}

static void test_calibrate_monotonic(void **state)
{
	(void)state;
	struct clk_sample a = { 5000, 5000, 1700000000123456789ull };
	struct clk_calib c;
	clk_calibrate(RINGTRACE__CLOCK_MONOTONIC, &a, &a, &c);
	assert_int_equal(c.freq, 1000000000ull);
	long double d = to_ns(&c, 5000) - (long double)a.real_ns;
	assert_true(d > -1.0L && d < 1.0L);
}

static void test_choose_forced(void **state)
{
	(void)state;
	setenv("RINGTRACE_CLOCK", "monotonic", 1);
	assert_int_equal(clk_choose(), RINGTRACE__CLOCK_MONOTONIC);
	unsetenv("RINGTRACE_CLOCK");
	uint32_t c = clk_choose();
	assert_true(c == RINGTRACE__CLOCK_TSC || c == RINGTRACE__CLOCK_MONOTONIC);
}

static void test_real_clock_agrees(void **state)
{
	(void)state;
	/* The live calibration over 20 ms maps a fresh reading to within a
	 * millisecond of CLOCK_REALTIME (a loose bound: the machine is shared). */
	uint32_t clock = clk_choose();
	struct clk_sample a, b, x;
	clk_sample(clock, &a);
	struct timespec ts = { 0, 20000000 };
	nanosleep(&ts, NULL);
	clk_sample(clock, &b);
	assert_true(b.value > a.value);
	assert_true(b.mono_ns > a.mono_ns);
	struct clk_calib c;
	clk_calibrate(clock, &a, &b, &c);
	clk_sample(clock, &x);
	long double d = to_ns(&c, x.value) - (long double)x.real_ns;
	assert_true(d > -1e6L && d < 1e6L);
}

static void test_monotonic_fallback_reads(void **state)
{
	(void)state;
	uint64_t t0 = ringtrace__clock_monotonic();
	uint64_t t1 = ringtrace__clock_monotonic();
	assert_true(t1 >= t0);
	assert_true(t0 > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calibrate_synthetic),
		cmocka_unit_test(test_calibrate_monotonic),
		cmocka_unit_test(test_choose_forced),
		cmocka_unit_test(test_real_clock_agrees),
		cmocka_unit_test(test_monotonic_fallback_reads),
	};
	return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
