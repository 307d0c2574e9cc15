/*
 * cmd_show.c - `ringtrace show PID|NAME`: a running program's events
 * printed as they come, in the format of `dump` (rd_format_item()), until
 * Ctrl-C or its exit. sess_show() (src/session/show.c) attaches and
 * decodes; this file prints.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/buf.h"
#include "read/format.h"
#include "read/reader.h"
#include "session/session.h"

#define SHOW_PFX "ringtrace show: "

/* One line per event, as `dump` prints it. */
static int show_item(void *arg, const struct rd_item *it)
{
	struct ctf_buf *line = arg;
	ctf_buf_reset(line);
	rd_format_item(line, it);
	ctf_buf_putc(line, '\n');
	if (!line->err && fwrite(line->data, 1, line->len, stdout) != line->len)
		return -EPIPE;
	return 0;
}

static int show_flush(void *arg)
{
	(void)arg;
	return fflush(stdout) != 0 ? -EPIPE : 0;
}

static void show_lost(void *arg, uint32_t cpu, uint64_t n, const char *why)
{
	(void)arg;
	printf("ringtrace: %llu events lost on cpu %u (%s)\n", (unsigned long long)n, cpu, why);
}

int cmd_show(int argc, char **argv)
{
	const char *target = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: ringtrace show PID|NAME\n\n"
			       "  Follows a running program and prints its events as they come, in the\n"
			       "  format of 'ringtrace dump', until Ctrl-C or until the program exits.\n"
			       "  Tracing is switched on if it was off, and off again at the end.\n");
			return 0;
		}
		if (argv[i][0] == '-' || target) {
			fprintf(stderr, SHOW_PFX "unexpected argument '%s' (usage: ringtrace show PID|NAME)\n", argv[i]);
			return 2;
		}
		target = argv[i];
	}
	if (!target) {
		fprintf(stderr, SHOW_PFX "no process given (usage: ringtrace show PID|NAME)\n");
		return 2;
	}
	struct ctf_buf line;
	ctf_buf_init(&line);
	struct sess_show_opts o = {
		.sz = sizeof(o),
		.target = target,
		.stop = &cli_got_term,
		.on_item = show_item,
		.on_round_end = show_flush,
		.on_lost = show_lost,
		.arg = &line,
	};
	cli_session_log();
	cli_catch_term(1, 1);
	signal(SIGPIPE, SIG_IGN);
	int k = sess_show(&o);
	ctf_buf_free(&line);
	return k < 0 ? 1 : 0;
}
