/*
 * cli_session.c - what the commands over the session library (record,
 * mem, snapshot, recover, show) share: the library's lines printed on
 * stderr after the name of the command that speaks, and the signal that
 * tells the library to stop.
 */
#include <signal.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "session/session.h"

volatile sig_atomic_t cli_got_term;
volatile sig_atomic_t cli_child_pid;

/* A program we run gets the signal too: it ends, and the recorder writes
 * what it traced until then. */
static void on_term(int sig)
{
	cli_got_term = sig;
	if (cli_child_pid > 0)
		kill((pid_t)cli_child_pid, sig);
}

void cli_catch_term(int hup, int intr)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	if (hup)
		sigaction(SIGHUP, &sa, NULL);
	if (intr)
		sigaction(SIGINT, &sa, NULL);
}

/* The program's own lines (SESS_SRC_PROGRAM) as they are. */
static void print_line(enum sess_src src, const char *msg)
{
	static const char *const who[] = {
		[SESS_SRC_RECORD] = "ringtrace record: ",
		[SESS_SRC_SNAPSHOT] = "ringtrace snapshot: ",
		[SESS_SRC_RECOVER] = "ringtrace recover: ",
		[SESS_SRC_SHOW] = "ringtrace show: ",
		[SESS_SRC_PROGRAM] = "",
	};
	progress_clear();
	fprintf(stderr, "%s%s\n", (unsigned)src < sizeof(who) / sizeof(who[0]) ? who[src] : "", msg);
}

void cli_session_log(void)
{
	sess_set_log(print_line);
}
