/*
 * opts.c - the options of a recording (struct sess_opts, session.h): the
 * defaults, -e patterns, and the checks of options taken together, with
 * one line naming the option for the user when they do not fit. Called
 * once per command by the CLI (record, mem) before sess_record().
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ringbuf/rb.h"
#include "session/session.h"
#include "stackmap/stackmap.h"

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

void sess_opts_init(struct sess_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->buf_size = (uint64_t)RB_DEFAULT_SB * RB_DEFAULT_NSB;
	o->nsb = RB_DEFAULT_NSB;
	o->mode = RINGTRACE__MODE_DISCARD;
	o->stack_bits = 0; /* 0: not given (STACKMAP_BITS_DEFAULT) */
	o->block_us = -1;  /* the default of the session's kind */
}

int sess_opts_add_pattern(struct sess_opts *o, const char *pat, char *err, size_t errlen)
{
	size_t n = strlen(pat);
	if (n == 0) {
		snprintf(err, errlen, "empty event pattern");
		return -EINVAL;
	}
	/* A bracket expression must close, or fnmatch would match it
	 * literally: that is almost always a typo. */
	int depth = 0;
	for (const char *p = pat; *p; p += (*p == '\\' && p[1]) ? 2 : 1) {
		if (*p == '[')
			depth = 1;
		else if (*p == ']')
			depth = 0;
	}
	if (depth) {
		snprintf(err, errlen, "malformed event pattern '%s': unclosed '['", pat);
		return -EINVAL;
	}
	if (o->patterns_len + n + 2 > sizeof(o->patterns)) {
		snprintf(err, errlen, "too many event patterns (%zu bytes at most)", sizeof(o->patterns) - 2);
		return -EINVAL;
	}
	memcpy(o->patterns + o->patterns_len, pat, n + 1);
	o->patterns_len += n + 1;
	return 0;
}

#define FAIL(...)                                       \
	do {                                            \
		snprintf(err, errlen, __VA_ARGS__);     \
		return -EINVAL;                         \
	} while (0)

int sess_opts_finish(struct sess_opts *o, char *err, size_t errlen)
{
	if ((o->follow_fork || o->follow_exec) && (o->attach || o->flight || o->snapshot))
		FAIL("--follow-fork and --follow-exec go with a program to run, without -p or snapshots");
	if (o->attach) {
		if (o->argv && o->argv[0])
			FAIL("-p attaches to a running program: no PROGRAM may follow");
		if (o->sample || o->sample_seed_set)
			FAIL("--sample cannot apply with -p: sampling is chosen when the program starts (run it under 'ringtrace record --mem --sample BYTES')");
		if (o->patterns_len || o->mode != RINGTRACE__MODE_DISCARD || o->stacks || o->stack_bits || o->flight ||
		    o->memtrace || o->aggregate || o->buf_size != (uint64_t)RB_DEFAULT_SB * RB_DEFAULT_NSB ||
		    o->nsb != RB_DEFAULT_NSB || o->block_us >= 0)
			FAIL("with -p, the program's own settings apply: use 'ringtrace enable/disable' and 'ringtrace buffer-size'");
		if ((o->snap_on || o->min_interval) && !o->snapshot)
			FAIL("--snapshot-on and --min-interval go with --snapshot (or --flight-recorder)");
		return 0;
	}
	/* Snapshot mode on a program we start is the flight recorder. */
	if (o->snapshot && o->flight)
		FAIL("--snapshot and --flight-recorder are the same: give one");
	if (o->snapshot) {
		o->flight = 1;
		o->snapshot = 0;
	}
	if (!o->argv || !o->argv[0])
		FAIL("no program to run (usage: ringtrace record [OPTIONS] -- PROGRAM [ARGS...])");
	if (o->aggregate)
		o->memtrace = 1;
	if ((o->sample || o->sample_seed_set) && !o->memtrace)
		FAIL("--sample and --sample-seed sample allocations: they go with --mem");
	if (o->sample_seed_set && !o->sample)
		FAIL("--sample-seed goes with --sample BYTES");
	/* An allocation-heavy program makes events faster than most: four
	 * times the room unless told (an event lost is a free missed). */
	if (o->memtrace && !o->aggregate && !o->buf_size_set)
		o->buf_size *= 4;
	uint64_t sb = o->nsb ? o->buf_size / o->nsb : 0;
	if (!is_pow2(o->buf_size) || !is_pow2(o->nsb) || sb < (1u << RB_SB_MIN_SHIFT) || sb > (1u << RB_SB_MAX_SHIFT))
		FAIL("--buffer-size %llu with %u sub-buffers: the size must be a power of two and each sub-buffer between 4K and 4M",
		     (unsigned long long)o->buf_size, o->nsb);
	if (o->flight && o->mode != RINGTRACE__MODE_DISCARD)
		FAIL("--flight-recorder is in overwrite mode already: no --mode");
	if (o->flight)
		o->mode = RINGTRACE__MODE_OVERWRITE;
	if (o->block_us > 0 && o->mode == RINGTRACE__MODE_OVERWRITE)
		FAIL("--blocking-timeout goes with discard mode: overwrite mode never waits for room (use --drop or no option)");
	if (o->block_us > (int64_t)RB_BLOCK_MAX_US)
		FAIL("--blocking-timeout %lld: at most %u microseconds", (long long)o->block_us, RB_BLOCK_MAX_US);
	if (o->block_us < 0)
		o->block_us = o->memtrace && !o->aggregate && o->mode == RINGTRACE__MODE_DISCARD ? SESS_BLOCK_MEM_US : 0;
	if ((o->snap_on || o->min_interval) && !o->flight)
		FAIL("--snapshot-on and --min-interval go with --flight-recorder (or --snapshot)");
	if (o->aggregate && o->flight)
		FAIL("--aggregate keeps counters, not events: no snapshots of them (drop --flight-recorder)");
	if (o->stack_bits && (o->stack_bits < STACKMAP_BITS_MIN || o->stack_bits > STACKMAP_BITS_MAX))
		FAIL("bad --stack-bits %u (a number from %d to %d)", o->stack_bits, STACKMAP_BITS_MIN, STACKMAP_BITS_MAX);
	return 0;
}
