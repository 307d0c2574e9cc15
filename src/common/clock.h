/*
 * clock.h - the trace clock: which clock to use and why (a pure decision
 * over what the CPU, the kernel, a check and the environment say), the
 * calibration that maps its values to time, and the checks the recorder
 * makes of the TSC before and after trusting it (src/util/clock_check.c:
 * declared here beside the types they share, linked only into the command).
 */
#ifndef RINGTRACE_CLOCK_H
#define RINGTRACE_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* RINGTRACE_CLOCK, as given. */
enum clk_override {
	CLK_OVERRIDE_NONE,           /* unset or empty: choose */
	CLK_OVERRIDE_MONOTONIC,      /* "monotonic" */
	CLK_OVERRIDE_TSC,            /* "tsc": the TSC if the CPU vouches for it */
	CLK_OVERRIDE_BAD,            /* anything else: choose, and say so */
};

/* The cross-CPU check of the TSC (clk_check_tsc()). */
enum clk_check_state {
	CLK_CHECK_NOT_RUN,           /* the program's own buffers: not checked */
	CLK_CHECK_PASSED,
	CLK_CHECK_FAILED,
};

struct clk_inputs {
	int tsc_invariant;           /* CPUID 0x80000007 EDX bit 8 (x86-64 only) */
	char clocksource[32];        /* the kernel's current clocksource, "" if unknown */
	int check;                   /* enum clk_check_state */
	int override;                /* enum clk_override */
};

struct clk_choice {
	uint32_t clock;              /* RINGTRACE__CLOCK_* */
	char why[160];               /* "tsc: invariant TSC (CPUID), ..." */
};

int clk_override_parse(const char *s);

/* The decision, from its inputs alone: the TSC when the CPU reports an
 * invariant TSC (whatever the kernel's clocksource), unless
 * RINGTRACE_CLOCK=monotonic or the cross-CPU check failed; else
 * CLOCK_MONOTONIC. A bad override decides as no override. */
void clk_decide(const struct clk_inputs *in, struct clk_choice *ret);

/* The inputs on this machine, check not run. Test hooks, for tests only:
 * RINGTRACE_CLOCK_CPU_INVARIANT=0|1 stands for the CPUID bit (1 is
 * ignored where there is no TSC), RINGTRACE_CLOCKSOURCE=NAME for the
 * kernel's clocksource. */
void clk_inputs_read(struct clk_inputs *ret);

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

/* ---- src/util/clock_check.c (the command only) ---------------------------- */

/* Cross-CPU consistency of the TSC: one thread pinned to each usable CPU,
 * taking turns reading rdtscp under a shared counter; a reading older
 * than the one taken just before on another CPU fails the check. The
 * skew bound is the largest, over the ordered pairs of CPUs seen, of the
 * smallest hand-over gap (a CPU's offset to the one before it is less
 * than that). RINGTRACE_CLOCK_CHECK=fail (tests only) fails it. */
struct clk_check {
	int passed;
	int ncpus;                   /* CPUs that took part */
	uint64_t handovers;          /* readings that followed one on another CPU */
	uint64_t back_ns;            /* failed: the largest step back */
	int back_from, back_to;      /* failed: between these CPUs */
	uint64_t skew_ns;            /* passed: the bound on the skew */
	int forced;                  /* failed by the test hook */
};
int clk_check_tsc(unsigned budget_ms, struct clk_check *ret);

/* Over samples s[0..n-1] taken during a recording (n >= 2): the largest
 * departure, in ns, of CLOCK_MONOTONIC from what the TSC predicts between
 * consecutive samples at the median interval's rate, beyond what a
 * 500 ppm slew of CLOCK_MONOTONIC explains (0: no jump), and the drift of
 * the last interval's rate against the first's in ppm (0 when n < 3). */
struct clk_drift {
	uint64_t jump_ns;
	double drift_ppm;
};
void clk_drift(const struct clk_sample *s, size_t n, struct clk_drift *ret);

/* The TSC watched against CLOCK_MONOTONIC during a recording: a sample
 * every `every_ms` (1 s at first, doubled whenever the CLK_WATCH_MAX
 * samples are full, keeping every other one), so that clk_drift() sees
 * the whole recording in bounded memory. Zero it, then set every_ms and
 * last_ms to start; every_ms 0 watches nothing. */
#define CLK_WATCH_MAX 1024
struct clk_watch {
	struct clk_sample *s;        /* CLK_WATCH_MAX + 1 (room for the last) */
	size_t n;
	uint64_t every_ms, last_ms;
	int64_t test_jump_ns;        /* RINGTRACE_CLOCK_TEST_JUMP_NS (tests only) */
};
/* A sample when one is due; c0 is the recording's first. */
void clk_watch_tick(struct clk_watch *w, uint32_t clock, const struct clk_sample *c0, uint64_t now_ms);
/* With c1 the last sample: drift and jumps over the recording, and how
 * many samples they rest on (0: nothing watched, *ret untouched). */
size_t clk_watch_end(struct clk_watch *w, const struct clk_sample *c0, const struct clk_sample *c1,
		     struct clk_drift *ret);
void clk_watch_free(struct clk_watch *w);

#endif
