/*
 * progress.c - the status line of a recording (see progress.h).
 *
 * Drawn from the recorder's main loop through the session library's
 * on_round callback: it reads the figures the loop already gathered
 * (sess_stats) and never touches the buffers, so it cannot slow the
 * recording down beyond one formatted write every 250 ms. On a terminal
 * the line is redrawn in place ("\r" + erase to the end of the line) and
 * cut to the terminal's width, read again at each draw so a resize is
 * followed; to a pipe or file nothing is written unless --progress asks,
 * and then one plain line a second. Lines of the library (print_line in
 * cli_session.c) and of the summary call progress_clear() first, under
 * the same lock, so a message never lands after the status text.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/progress.h"

static struct {
	pthread_mutex_t lock;
	int on, tty, drawn;
	uint64_t t0, last_ms, last_events;
	double rate;
} pg = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* "12.3 M" style: value scaled by 1000 (events) or 1024 (bytes). */
static void human(char *buf, size_t size, double v, int bytes)
{
	static const char *const dec[] = { "", " k", " M", " G", " T" };
	static const char *const bin[] = { " B", " KiB", " MiB", " GiB", " TiB" };
	double k = bytes ? 1024.0 : 1000.0;
	unsigned i = 0;
	while (v >= k && i < 4) {
		v /= k;
		i++;
	}
	if (i == 0)
		snprintf(buf, size, "%.0f%s", v, bytes ? bin[0] : dec[0]);
	else
		snprintf(buf, size, "%.*f%s", v < 10 ? 2 : v < 100 ? 1 : 0, v, bytes ? bin[i] : dec[i]);
}

void progress_format(char *buf, size_t size, const struct sess_stats *st, uint64_t ms, double rate,
		     unsigned width)
{
	char ev[32], by[32], rt[32], lost[160] = "";
	human(ev, sizeof(ev), (double)st->events, 0);
	human(by, sizeof(by), (double)st->bytes, 1);
	human(rt, sizeof(rt), rate, 0);
	const struct {
		const char *name;
		uint64_t n;
	} cause[] = {
		{ "full", st->lost_full },       { "overwritten", st->lost_overwrite },
		{ "too big", st->lost_too_big }, { "no cpu", st->lost_nocpu },
		{ "crash", st->lost_crash },     { "unwritten", st->lost_unwritten },
	};
	size_t at = 0;
	for (size_t i = 0; i < sizeof(cause) / sizeof(cause[0]); i++) {
		if (!cause[i].n || at >= sizeof(lost))
			continue;
		char n[32];
		human(n, sizeof(n), (double)cause[i].n, 0);
		int k = snprintf(lost + at, sizeof(lost) - at, "%s%s %s", at ? ", " : "", cause[i].name, n);
		if (k > 0)
			at += (size_t)k;
	}
	/* Blocking mode: how long the program's threads waited for room so
	 * far (summed over threads), once they have. */
	char waited[48] = "";
	if (st->block_ns)
		snprintf(waited, sizeof(waited), " | waited %.1f s", (double)st->block_ns / 1e9);
	if (st->snapshot_mode)
		snprintf(buf, size, "%" PRIu64 ".%" PRIu64 " s | %s events/s | %s events | %" PRIu64
			 " snapshot%s | lost %s | fullest buffer %u%% (cpu %u)",
			 ms / 1000, ms % 1000 / 100, rt, ev, st->snapshots, st->snapshots == 1 ? "" : "s",
			 at ? lost : "0", st->fullest_pct, (unsigned)st->fullest_cpu);
	else
		snprintf(buf, size, "%" PRIu64 ".%" PRIu64 " s | %s events/s | %s events, %s written | lost %s | fullest buffer %u%% (cpu %u)%s",
			 ms / 1000, ms % 1000 / 100, rt, ev, by, at ? lost : "0", st->fullest_pct, (unsigned)st->fullest_cpu,
			 waited);
	/* Cut to the width: the line must never wrap, or "\r" would redraw
	 * only its last row. Every character is ASCII. */
	if (width > 1 && strlen(buf) >= width)
		buf[width - 1] = 0;
}

static unsigned term_width(void)
{
	struct winsize ws;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

static void on_round(void *arg, const struct sess_stats *st)
{
	(void)arg;
	uint64_t t = now_ms();
	/* Four times a second on a terminal, once a second to a file. */
	if (t - pg.last_ms < (pg.tty ? 250u : 1000u))
		return;
	uint64_t dt = t - pg.last_ms;
	double rate = dt ? (double)(st->events - pg.last_events) * 1000.0 / (double)dt : 0;
	/* Smoothed a little: a round that took a burst should not flicker. */
	pg.rate = pg.last_events || pg.rate ? 0.5 * pg.rate + 0.5 * rate : rate;
	pg.last_ms = t;
	pg.last_events = st->events;
	char line[512];
	/* "ringtrace: " (11 columns) comes before it. */
	unsigned w = pg.tty ? term_width() : 0;
	progress_format(line, sizeof(line), st, t - pg.t0, pg.rate, w > 12 ? w - 11 : w ? 1 : 0);
	pthread_mutex_lock(&pg.lock);
	if (pg.on) {
		if (pg.tty) {
			fprintf(stderr, "\rringtrace: %s\033[K", line);
			pg.drawn = 1;
		} else {
			fprintf(stderr, "ringtrace: %s\n", line);
		}
		fflush(stderr);
	}
	pthread_mutex_unlock(&pg.lock);
}

void progress_start(struct sess_opts *o, enum progress_mode mode)
{
	int tty = isatty(STDERR_FILENO);
	if (mode == PROGRESS_OFF || (mode == PROGRESS_AUTO && !tty))
		return;
	/* TERM=dumb has no "erase to the end of the line". */
	const char *term = getenv("TERM");
	pg.tty = tty && !(term && !strcmp(term, "dumb"));
	pg.t0 = pg.last_ms = now_ms();
	pg.last_events = 0;
	pg.rate = 0;
	pg.on = 1;
	o->on_round = on_round;
	o->arg = NULL;
}

void progress_clear(void)
{
	pthread_mutex_lock(&pg.lock);
	if (pg.drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		pg.drawn = 0;
	}
	pthread_mutex_unlock(&pg.lock);
}

void progress_stop(void)
{
	progress_clear();
	pthread_mutex_lock(&pg.lock);
	pg.on = 0;
	pthread_mutex_unlock(&pg.lock);
}
