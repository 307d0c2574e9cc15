/*
 * test_clock.c - choosing the trace clock and turning its values into
 * wall-clock time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

/* The clock a program making its own buffers takes (src/lib/agent.c
 * region_alloc): this machine's inputs, no cross-CPU check. */
static uint32_t clk_choose(void)
{
	struct clk_inputs in;
	struct clk_choice c;
	clk_inputs_read(&in);
	clk_decide(&in, &c);
	return c.clock;
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

/* The whole decision table: the TSC exactly when the CPU says it is
 * invariant, RINGTRACE_CLOCK does not ask for monotonic and the cross-CPU
 * check did not fail; the kernel's clocksource never decides; a bad
 * override decides as none. */
static void test_decide_table(void **state)
{
	(void)state;
	static const char *const sources[] = { "tsc", "kvm-clock", "hpet", "xen", "" };
	static const int checks[] = { CLK_CHECK_NOT_RUN, CLK_CHECK_PASSED, CLK_CHECK_FAILED };
	static const int overrides[] = { CLK_OVERRIDE_NONE, CLK_OVERRIDE_MONOTONIC, CLK_OVERRIDE_TSC,
					 CLK_OVERRIDE_BAD };
	unsigned cases = 0;
	for (int inv = 0; inv < 2; inv++)
		for (size_t s = 0; s < sizeof(sources) / sizeof(sources[0]); s++)
			for (size_t c = 0; c < 3; c++)
				for (size_t o = 0; o < 4; o++) {
					struct clk_inputs in = { 0 };
					struct clk_choice got;
					in.tsc_invariant = inv;
					strcpy(in.clocksource, sources[s]);
					in.check = checks[c];
					in.override = overrides[o];
					clk_decide(&in, &got);
					int tsc = inv && overrides[o] != CLK_OVERRIDE_MONOTONIC &&
						  checks[c] != CLK_CHECK_FAILED;
					assert_int_equal(got.clock, tsc ? RINGTRACE__CLOCK_TSC : RINGTRACE__CLOCK_MONOTONIC);
					/* The reason starts with the clock and says why. */
					assert_true(!strncmp(got.why, tsc ? "tsc: " : "monotonic: ", tsc ? 5 : 11));
					if (overrides[o] == CLK_OVERRIDE_MONOTONIC)
						assert_string_equal(got.why, "monotonic: RINGTRACE_CLOCK=monotonic");
					else if (!inv)
						assert_non_null(strstr(got.why, "no invariant TSC"));
					else if (checks[c] == CLK_CHECK_FAILED)
						assert_non_null(strstr(got.why, "check failed"));
					else
						assert_non_null(strstr(got.why, checks[c] == CLK_CHECK_PASSED
											 ? "check passed"
											 : "not checked"));
					if (!inv && overrides[o] == CLK_OVERRIDE_TSC)
						assert_non_null(strstr(got.why, "RINGTRACE_CLOCK=tsc refused"));
					/* A clocksource other than tsc is named. */
					if (overrides[o] != CLK_OVERRIDE_MONOTONIC && sources[s][0] &&
					    strcmp(sources[s], "tsc"))
						assert_non_null(strstr(got.why, sources[s]));
					/* A bad override decides exactly as none. */
					if (overrides[o] == CLK_OVERRIDE_BAD) {
						struct clk_choice none;
						in.override = CLK_OVERRIDE_NONE;
						clk_decide(&in, &none);
						assert_int_equal(none.clock, got.clock);
						assert_string_equal(none.why, got.why);
					}
					cases++;
				}
	assert_int_equal(cases, 2 * 5 * 3 * 4);
}

static void test_override_parse(void **state)
{
	(void)state;
	assert_int_equal(clk_override_parse(NULL), CLK_OVERRIDE_NONE);
	assert_int_equal(clk_override_parse(""), CLK_OVERRIDE_NONE);
	assert_int_equal(clk_override_parse("monotonic"), CLK_OVERRIDE_MONOTONIC);
	assert_int_equal(clk_override_parse("tsc"), CLK_OVERRIDE_TSC);
	static const char *const bad[] = { "TSC", " tsc", "tsc ", "monotonic\n", "mono", "1", "tscx",
					   "\x1b[31mtsc", "realtime" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(clk_override_parse(bad[i]), CLK_OVERRIDE_BAD);
	char big[4096];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(clk_override_parse(big), CLK_OVERRIDE_BAD);
}

/* The test hooks stand for the CPU and the kernel, so that every branch
 * can be taken on any machine. */
static void test_inputs_hooks(void **state)
{
	(void)state;
	setenv("RINGTRACE_CLOCKSOURCE", "kvm-clock", 1);
	setenv("RINGTRACE_CLOCK_CPU_INVARIANT", "0", 1);
	struct clk_inputs in;
	clk_inputs_read(&in);
	assert_string_equal(in.clocksource, "kvm-clock");
	assert_int_equal(in.tsc_invariant, 0);
	assert_int_equal(in.check, CLK_CHECK_NOT_RUN);
	assert_int_equal(clk_choose(), RINGTRACE__CLOCK_MONOTONIC);
#if defined(__x86_64__)
	/* kvm-clock with an invariant TSC: the TSC. */
	setenv("RINGTRACE_CLOCK_CPU_INVARIANT", "1", 1);
	assert_int_equal(clk_choose(), RINGTRACE__CLOCK_TSC);
	setenv("RINGTRACE_CLOCK", "garbage", 1);
	assert_int_equal(clk_choose(), RINGTRACE__CLOCK_TSC);
	setenv("RINGTRACE_CLOCK", "monotonic", 1);
	assert_int_equal(clk_choose(), RINGTRACE__CLOCK_MONOTONIC);
#endif
	unsetenv("RINGTRACE_CLOCK");
	unsetenv("RINGTRACE_CLOCKSOURCE");
	unsetenv("RINGTRACE_CLOCK_CPU_INVARIANT");
}

static void test_check_forced_fail(void **state)
{
	(void)state;
	struct clk_check c;
	setenv("RINGTRACE_CLOCK_CHECK", "fail", 1);
	assert_int_equal(clk_check_tsc(20, &c), 0);
	assert_false(c.passed);
	assert_true(c.forced);
	unsetenv("RINGTRACE_CLOCK_CHECK");
#if defined(__x86_64__)
	/* A real run ends, and at least this thread's CPU takes part. */
	assert_int_equal(clk_check_tsc(20, &c), 0);
	assert_true(c.ncpus >= 1);
	assert_false(c.forced);
#endif
}

/* Samples every second over 10 s of a 2 GHz TSC; mono_ns and value move
 * together unless the test bends them. */
static void make_samples(struct clk_sample *s, size_t n, double slew_ppm, size_t jump_at, int64_t jump_ns)
{
	for (size_t i = 0; i < n; i++) {
		s[i].value = 5000000000000ull + (uint64_t)i * 2000000000ull;
		s[i].mono_ns = 100000000000ull + (uint64_t)((double)i * 1e9 * (1.0 + slew_ppm * 1e-6));
		if (jump_at && i >= jump_at)
			s[i].mono_ns = (uint64_t)((int64_t)s[i].mono_ns + jump_ns);
		s[i].real_ns = s[i].mono_ns + 1700000000000000000ull;
	}
}

static void test_drift_and_jump(void **state)
{
	(void)state;
	struct clk_sample s[11];
	struct clk_drift d;
	/* Steady: no jump, no drift. */
	make_samples(s, 11, 0, 0, 0);
	clk_drift(s, 11, &d);
	assert_int_equal(d.jump_ns, 0);
	assert_true(d.drift_ppm > -0.01 && d.drift_ppm < 0.01);
	/* CLOCK_MONOTONIC slewed by NTP (400 ppm): no jump. */
	make_samples(s, 11, 400, 0, 0);
	clk_drift(s, 11, &d);
	assert_int_equal(d.jump_ns, 0);
	/* A 5 ms step between samples 6 and 7 (a VM moved): seen, about its size. */
	make_samples(s, 11, 0, 7, 5000000);
	clk_drift(s, 11, &d);
	assert_true(d.jump_ns > 4990000 && d.jump_ns < 5010000);
	/* And backwards. */
	make_samples(s, 11, 0, 3, -2000000);
	clk_drift(s, 11, &d);
	assert_true(d.jump_ns > 1990000 && d.jump_ns < 2010000);
	/* The TSC's rate changes by 10% from sample 5 (a host without TSC
	 * scaling): a jump, and a drift of about -10%. */
	make_samples(s, 11, 0, 0, 0);
	for (size_t i = 6; i < 11; i++)
		s[i].value = s[5].value + (uint64_t)(i - 5) * 1800000000ull;
	clk_drift(s, 11, &d);
	assert_true(d.jump_ns > 0);
	assert_true(d.drift_ppm < -99000 && d.drift_ppm > -101000);
	/* Two samples: nothing to compare. */
	make_samples(s, 2, 0, 0, 0);
	clk_drift(s, 2, &d);
	assert_int_equal(d.jump_ns, 0);
	assert_true(d.drift_ppm == 0);
	/* Nonsense (time going back) is no crash and no verdict. */
	s[1].mono_ns = s[0].mono_ns - 1;
	clk_drift(s, 2, &d);
	assert_int_equal(d.jump_ns, 0);
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
		cmocka_unit_test(test_decide_table),
		cmocka_unit_test(test_override_parse),
		cmocka_unit_test(test_inputs_hooks),
		cmocka_unit_test(test_check_forced_fail),
		cmocka_unit_test(test_drift_and_jump),
		cmocka_unit_test(test_real_clock_agrees),
		cmocka_unit_test(test_monotonic_fallback_reads),
	};
	return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
