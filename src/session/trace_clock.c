/*
 * trace_clock.c - the clock of a recording: which one (the TSC if it
 * passes the cross-CPU check, else CLOCK_MONOTONIC, or as the user or the
 * program chose) and the one line that says why, and at the end whether
 * the TSC kept to CLOCK_MONOTONIC (drift, jumps) while it ran. Called at
 * the start and the end of a recording, and once a second by sess_round()
 * (common/clock_check.c samples).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/session_int.h"

/* The value of an environment variable, fit to print on one line. */
static void sess_printable(const char *s, char *buf, size_t size)
{
	size_t i = 0;
	for (; s[i] && i + 4 < size; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (s[i])
		buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
	buf[i] = 0;
}

/* Choose the clock and check the TSC before trusting it: the one line
 * that says which clock and why. */
void sess_choose_clock(struct sess *r)
{
	struct clk_inputs in;
	struct clk_choice c;
	clk_inputs_read(&in);
	if (in.override == CLK_OVERRIDE_BAD) {
		char v[48];
		sess_printable(getenv("RINGTRACE_CLOCK"), v, sizeof(v));
		snprintf(r->clock_bad, sizeof(r->clock_bad),
			 "RINGTRACE_CLOCK='%s' is not a clock (tsc or monotonic): choosing as if unset", v);
	}
	clk_decide(&in, &c);
	int k = 0;
	if (c.clock == RINGTRACE__CLOCK_TSC) {
		k = clk_check_tsc(20, &r->check);
		in.check = k == 0 && r->check.passed ? CLK_CHECK_PASSED : CLK_CHECK_FAILED;
		clk_decide(&in, &c);
	}
	r->clock = c.clock;
	if (in.check == CLK_CHECK_PASSED && r->check.ncpus < 2)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (one CPU)", c.why);
	else if (in.check == CLK_CHECK_PASSED)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s, skew <= %llu ns", c.why,
			 (unsigned long long)r->check.skew_ns);
	else if (in.check == CLK_CHECK_FAILED && r->check.forced)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (RINGTRACE_CLOCK_CHECK=fail)", c.why);
	else if (in.check == CLK_CHECK_FAILED && k < 0)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (%s)", c.why, strerror(-k));
	else if (in.check == CLK_CHECK_FAILED)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (a reading went back %llu ns from CPU %d on CPU %d)",
			 c.why, (unsigned long long)r->check.back_ns, r->check.back_from, r->check.back_to);
	else
		snprintf(r->clock_why, sizeof(r->clock_why), "%s", c.why);
	r->watch.every_ms = 1000;
	r->watch.last_ms = sess_mono_ms();
	/* Tests only: CLOCK_MONOTONIC steps by this much against the TSC
	 * from the second periodic sample on, as a migrated VM's would. */
	const char *tj = getenv("RINGTRACE_CLOCK_TEST_JUMP_NS");
	if (tj)
		r->watch.test_jump_ns = strtoll(tj, NULL, 10);
}

/* Once the recording runs (bad input stays one line): the clock and why. */
void sess_say_clock(const struct sess *r)
{
	if (r->clock_bad[0])
		sess_log(SESS_SRC_RECORD, "%s\n", r->clock_bad);
	sess_log(SESS_SRC_RECORD, "clock %s\n", r->clock_why);
}

/* The end of the recording, c1 its last sample: did the TSC keep to
 * CLOCK_MONOTONIC? (Drift in ppm, and the size of any jump.) */
void sess_clock_drift_end(struct sess *r, const struct clk_sample *c1)
{
	if (r->clock != RINGTRACE__CLOCK_TSC)
		return;
	size_t n = clk_watch_end(&r->watch, &r->c0, c1, &r->drift);
	/* A drift needs two intervals: "" for a recording under 2 s. */
	if (n >= 3)
		snprintf(r->drift_str, sizeof(r->drift_str), "%.3f", r->drift.drift_ppm);
}

