/*
 * progress.h - the status line of a recording on a terminal (record,
 * record -p, mem): elapsed time, events per second, events and bytes
 * written, losses by cause and the fullest buffer, redrawn at most four
 * times a second from the figures the session library already keeps
 * (struct sess_stats, passed to its on_round callback), and cleared
 * before any other line is printed.
 */
#ifndef RINGTRACE_CLI_PROGRESS_H
#define RINGTRACE_CLI_PROGRESS_H

#include "session/session.h"

enum progress_mode {
	PROGRESS_AUTO,               /* a line on stderr when it is a terminal */
	PROGRESS_ON,                 /* --progress: on a terminal the line, else one plain line a second */
	PROGRESS_OFF,                /* --quiet */
};

/* Arm the status line for a recording starting now; sets o->on_round. */
void progress_start(struct sess_opts *o, enum progress_mode mode);

/* Erase the line if it is drawn (before another line goes to stderr);
 * the next round draws it again. Safe from any thread. */
void progress_clear(void);

/* Erase it for good (before the summary). */
void progress_stop(void);

/* The line for `st` after `ms` milliseconds, `rate` events per second,
 * cut to `width` columns (0: no limit), into buf. Pure: unit-tested. */
void progress_format(char *buf, size_t size, const struct sess_stats *st, uint64_t ms, double rate,
		     unsigned width);

#endif
