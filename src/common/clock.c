/*
 * clock.c - choosing and calibrating the trace clock (recorder side).
 *
 * The traced program only reads the clock (rdtsc, or CLOCK_MONOTONIC); the
 * recorder measures the TSC against CLOCK_MONOTONIC over the whole recording,
 * which gives a frequency good to well under a part per million without
 * costing the program anything at start-up.
 *
 * Which clock: the TSC whenever the CPU says it is invariant, whatever
 * clocksource the kernel runs on (guests on kvm-clock, Xen or Hyper-V
 * clocks have a sound TSC as often as not). The decision is a pure
 * function of its inputs (clk_decide) so that a test drives every case;
 * the recorder adds its cross-CPU check (clock_check.c) as one input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <ringtrace/ringtrace-abi.h>

#include "common/clock.h"

/* The first line of a small file, without its newline ("" if none). */
static void first_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	buf[0] = 0;
	if (!f)
		return;
	if (!fgets(buf, (int)size, f))
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* The CPU's word that its TSC runs at a constant rate in every P-, C- and
 * T-state (the kernel derives constant_tsc and nonstop_tsc from it). */
static int cpu_tsc_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
		return 0;
	return (d >> 8) & 1;
#else
	return 0;
#endif
}

int clk_override_parse(const char *s)
{
	if (!s || !*s)
		return CLK_OVERRIDE_NONE;
	if (!strcmp(s, "monotonic"))
		return CLK_OVERRIDE_MONOTONIC;
	if (!strcmp(s, "tsc"))
		return CLK_OVERRIDE_TSC;
	return CLK_OVERRIDE_BAD;
}

void clk_decide(const struct clk_inputs *in, struct clk_choice *ret)
{
	char ks[64] = "";
	/* The kernel's clocksource does not decide (a guest on kvm-clock
	 * or Xen has a sound TSC just as often): it is only named. */
	if (in->clocksource[0] && strcmp(in->clocksource, "tsc"))
		snprintf(ks, sizeof(ks), ", kernel clocksource %.32s", in->clocksource);
	ret->clock = RINGTRACE__CLOCK_MONOTONIC;
	if (in->override == CLK_OVERRIDE_MONOTONIC) {
		snprintf(ret->why, sizeof(ret->why), "monotonic: RINGTRACE_CLOCK=monotonic");
	} else if (!in->tsc_invariant) {
		snprintf(ret->why, sizeof(ret->why), "monotonic: %sno invariant TSC (CPUID)%s",
			 in->override == CLK_OVERRIDE_TSC ? "RINGTRACE_CLOCK=tsc refused, " : "", ks);
	} else if (in->check == CLK_CHECK_FAILED) {
		snprintf(ret->why, sizeof(ret->why), "monotonic: invariant TSC (CPUID) but the cross-CPU check failed%s",
			 ks);
	} else {
		ret->clock = RINGTRACE__CLOCK_TSC;
		snprintf(ret->why, sizeof(ret->why), "tsc: invariant TSC (CPUID)%s%s", ks,
			 in->check == CLK_CHECK_PASSED ? ", cross-CPU check passed" : ", not checked");
	}
}

void clk_inputs_read(struct clk_inputs *ret)
{
	memset(ret, 0, sizeof(*ret));
	const char *inv = getenv("RINGTRACE_CLOCK_CPU_INVARIANT");
	if (inv && (!strcmp(inv, "0") || !strcmp(inv, "1"))) {
#if defined(__x86_64__)
		ret->tsc_invariant = inv[0] == '1';
#endif
	} else {
		ret->tsc_invariant = cpu_tsc_invariant();
	}
	const char *cs = getenv("RINGTRACE_CLOCKSOURCE");
	if (cs)
		snprintf(ret->clocksource, sizeof(ret->clocksource), "%s", cs);
	else
		first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", ret->clocksource,
			   sizeof(ret->clocksource));
	ret->check = CLK_CHECK_NOT_RUN;
	ret->override = clk_override_parse(getenv("RINGTRACE_CLOCK"));
}

static uint64_t ns_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t read_clock(uint32_t clock)
{
	if (clock == RINGTRACE__CLOCK_TSC) {
#if defined(__x86_64__)
		uint32_t lo, hi;
		__asm__ __volatile__("lfence; rdtsc" : "=a"(lo), "=d"(hi) :: "memory");
		return ((uint64_t)hi << 32) | lo;
#endif
	}
	return ns_of(CLOCK_MONOTONIC);
}

void clk_sample(uint32_t clock, struct clk_sample *ret)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 16; i++) {
		uint64_t m0 = ns_of(CLOCK_MONOTONIC);
		uint64_t v = read_clock(clock);
		uint64_t m1 = ns_of(CLOCK_MONOTONIC);
		uint64_t r = ns_of(CLOCK_REALTIME);
		uint64_t m2 = ns_of(CLOCK_MONOTONIC);
		if (m1 - m0 < best) {
			best = m1 - m0;
			ret->value = v;
			ret->mono_ns = m0 + (m1 - m0) / 2;
			/* realtime - monotonic, measured around the realtime read. */
			ret->real_ns = r - (m1 + (m2 - m1) / 2) + ret->mono_ns;
		}
	}
}

void clk_calibrate(uint32_t clock, const struct clk_sample *a, const struct clk_sample *b,
		   struct clk_calib *ret)
{
	if (clock == RINGTRACE__CLOCK_TSC && b->mono_ns > a->mono_ns && b->value > a->value) {
		long double f = (long double)(b->value - a->value) * 1e9L / (long double)(b->mono_ns - a->mono_ns);
		ret->freq = (uint64_t)(f + 0.5L);
	} else {
		ret->freq = 1000000000u;
	}
	if (clock != RINGTRACE__CLOCK_TSC)
		ret->freq = 1000000000u;
	/* Value 0 is at real time real_ns - value / freq. */
	long double origin_ns = (long double)a->real_ns -
				(long double)a->value * 1e9L / (long double)ret->freq;
	long double s = origin_ns / 1e9L;
	int64_t sec = (int64_t)s;
	if ((long double)sec > s)
		sec--;
	long double rem_ns = origin_ns - (long double)sec * 1e9L;
	uint64_t cyc = (uint64_t)(rem_ns * (long double)ret->freq / 1e9L + 0.5L);
	if (cyc >= ret->freq) {
		cyc -= ret->freq;
		sec++;
	}
	ret->offset_s = sec;
	ret->offset = cyc;
}
