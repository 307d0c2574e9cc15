/*
 * clock.c - choosing and calibrating the trace clock (recorder side).
 *
 * The traced program only reads the clock (rdtsc, or CLOCK_MONOTONIC); the
 * recorder measures the TSC against CLOCK_MONOTONIC over the whole recording,
 * which gives a frequency good to well under a part per million without
 * costing the program anything at start-up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ringtrace/ringtrace-abi.h>

#include "common/clock.h"

static int first_line_is(const char *path, const char *word)
{
	FILE *f = fopen(path, "re");
	char line[256];
	int yes = 0;
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		yes = strcmp(line, word) == 0;
	}
	fclose(f);
	return yes;
}

/* Is every flag a whole word of the first "flags" line of /proc/cpuinfo?
 * (One read for all of them.) */
static int cpu_has_flags(const char *const *flags, size_t n)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[8192];
	int all = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		all = 1;
		for (size_t i = 0; i < n && all; i++) {
			size_t len = strlen(flags[i]);
			int found = 0;
			for (char *p = strstr(line, flags[i]); p && !found; p = strstr(p + 1, flags[i]))
				found = p > line && p[-1] == ' ' && (p[len] == ' ' || p[len] == '\n' || p[len] == 0);
			all = found;
		}
		break;
	}
	fclose(f);
	return all;
}

uint32_t clk_choose(void)
{
	const char *force = getenv("RINGTRACE_CLOCK");
	if (force && !strcmp(force, "monotonic"))
		return RINGTRACE__CLOCK_MONOTONIC;
#if defined(__x86_64__)
	static const char *const tsc_flags[] = { "constant_tsc", "nonstop_tsc" };
	if (first_line_is("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc") &&
	    cpu_has_flags(tsc_flags, 2))
		return RINGTRACE__CLOCK_TSC;
#endif
	return RINGTRACE__CLOCK_MONOTONIC;
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
