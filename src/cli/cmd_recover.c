/*
 * cmd_recover.c - `ringtrace recover FILE|PID|NAME [-o DIR]`: what a
 * program's buffers (or a copy of them) hold, written as a trace. Parses,
 * then sess_recover() (src/session/recover.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/outdir.h"
#include "session/session.h"

#define RPFX "ringtrace recover: "

int cmd_recover(int argc, char **argv)
{
	const char *usage = "usage: ringtrace recover FILE|PID|NAME [-o DIR] [--allow-shared-dir]";
	const char *what = NULL, *outdir = NULL;
	unsigned flags = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("%s\n\n"
			       "  Write what a program's trace buffers hold as a trace: FILE, a copy of them\n"
			       "  (cp /proc/PID/fd/N FILE; never changed), or PID, a running program (one\n"
			       "  that hangs, say), whose buffers are taken as they are.\n"
			       "  -o DIR  output directory (default: ringtrace-recovered-NAME-DATE-TIME)\n"
			       "  --allow-shared-dir  write into DIR even if another user owns it or may\n"
			       "          write into it (refused by default: see docs/security.md)\n",
			       usage);
			return 0;
		} else if (!strcmp(argv[i], OUTDIR_ALLOW_OPT)) {
			flags |= OUTDIR_ALLOW_SHARED;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			outdir = argv[++i];
		} else if (argv[i][0] == '-' || what) {
			fprintf(stderr, RPFX "unexpected argument '%s' (%s)\n", argv[i], usage);
			return 2;
		} else {
			what = argv[i];
		}
	}
	if (!what) {
		fprintf(stderr, RPFX "%s\n", usage);
		return 2;
	}
	cli_session_log();
	return sess_recover(what, outdir, flags) < 0 ? 1 : 0;
}

