/*
 * cmd_snapshot.c - `ringtrace snapshot PID|NAME [-o DIR] [--count N
 * [--interval MS] | --watch]`: a running program's buffers written as a
 * trace while it goes on tracing. Parses, then sess_snapshot()
 * (src/session/snapshot.c).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/outdir.h"
#include "session/session.h"

#define SPFX "ringtrace snapshot: "

int cmd_snapshot(int argc, char **argv)
{
	const char *usage = "usage: ringtrace snapshot PID|NAME [-o DIR] [--allow-shared-dir] [--count N [--interval MS] | --watch]";
	struct sess_snap_opts o = { .sz = sizeof(o), .interval_ms = 1000, .stop = &cli_got_term };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("%s\n\n"
			       "  Write what a running program's buffers hold as a trace, without stopping\n"
			       "  tracing (snapshots must be enabled: ringtrace snapshot-enable PID).\n"
			       "  -o DIR         output directory (default: ringtrace-snapshot-NAME-PID-N-DATE-TIME)\n"
			       "  --count N      take N snapshots, DIR/snapshot-1 .. DIR/snapshot-N\n"
			       "  --interval MS  between the starts of two of them (default 1000)\n"
			       "  --watch        take one each time the program calls ringtrace_snapshot(),\n"
			       "                 into DIR/snapshot-N, until it exits or Ctrl-C; if it is\n"
			       "                 killed, what its buffers hold goes to DIR/recovered\n"
			       "  --allow-shared-dir  write into DIR even if another user owns it or may\n"
			       "                 write into it (refused by default: see docs/security.md)\n",
			       usage);
			return 0;
		} else if (!strcmp(a, OUTDIR_ALLOW_OPT)) {
			o.outdir_flags |= OUTDIR_ALLOW_SHARED;
		} else if (!strcmp(a, "--watch")) {
			o.watch = 1;
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--count") || !strcmp(a, "--interval")) && i + 1 < argc) {
			const char *v = argv[++i];
			if (!strcmp(a, "-o")) {
				o.outdir = v;
				continue;
			}
			char *end;
			long n = strtol(v, &end, 10);
			if (*end || end == v || n < (a[2] == 'c' ? 1 : 0) || n > 100000000) {
				fprintf(stderr, SPFX "bad %s '%s' (a number)\n", a, v);
				return 2;
			}
			if (a[2] == 'c')
				o.count = n;
			else
				o.interval_ms = n;
		} else if (a[0] == '-' || o.target) {
			fprintf(stderr, SPFX "unexpected argument '%s' (%s)\n", a, usage);
			return 2;
		} else {
			o.target = a;
		}
	}
	if (!o.target) {
		fprintf(stderr, SPFX "%s\n", usage);
		return 2;
	}
	if ((o.count || o.watch) && !o.outdir) {
		fprintf(stderr, SPFX "%s needs -o DIR (the snapshots go into DIR/snapshot-N)\n",
			o.watch ? "--watch" : "--count");
		return 2;
	}
	if (o.count && o.watch) {
		fprintf(stderr, SPFX "--count and --watch exclude each other\n");
		return 2;
	}
	cli_session_log();
	/* Ctrl-C ends the series (or the watch); one snapshot is not
	 * interrupted. */
	if (o.count || o.watch)
		cli_catch_term(0, 1);
	return sess_snapshot(&o) < 0 ? 1 : 0;
}

