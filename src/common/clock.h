/*
 * clock.h - the trace clock, seen from the recorder: which clock the
 * program should use, and the calibration that maps its values to time.
 */
#ifndef RINGTRACE_CLOCK_H
#define RINGTRACE_CLOCK_H

#include <stdint.h>

/* RINGTRACE__CLOCK_TSC when the kernel itself trusts the TSC (clocksource
 * "tsc", constant and nonstop), else RINGTRACE__CLOCK_MONOTONIC; the
 * environment variable RINGTRACE_CLOCK=monotonic forces the latter. */
uint32_t clk_choose(void);

/* A simultaneous reading of the trace clock, CLOCK_MONOTONIC and
 * CLOCK_REALTIME, taken as the tightest of a few tries. */
struct clk_sample {
	uint64_t value;              /* trace clock */
	uint64_t mono_ns;
	uint64_t real_ns;
};
void clk_sample(uint32_t clock, struct clk_sample *ret);

/* Frequency and CTF offset from two samples: ns since the epoch of a value v
 * is offset_s * 1e9 + (offset + v) * 1e9 / freq. */
struct clk_calib {
	uint64_t freq;
	int64_t offset_s;
	uint64_t offset;
};
void clk_calibrate(uint32_t clock, const struct clk_sample *a, const struct clk_sample *b,
		   struct clk_calib *ret);

#endif
