/*
 * cmd_record.c - the commands over the session library (src/session/):
 * `ringtrace record` (run a program, -p attach, --flight-recorder,
 * --follow-fork/exec), `snapshot`, `recover` and `show`. Each parses its
 * arguments into the library's options, sets the signals up, calls one
 * function of the library and prints what it says: the library logs
 * through print_line(), and `show`'s events are printed here in the
 * format of `dump` (rd_format_item()).
 *
 * `ringtrace mem` (cmd_report.c) records through record_with_opts().
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/mem_agg_io.h"
#include "common/outdir.h"
#include "ctf/buf.h"
#include "lib/trigger.h"
#include "read/format.h"
#include "read/reader.h"
#include "ringbuf/rb.h"
#include "session/session.h"
#include "stackmap/stackmap.h"

#define PFX "ringtrace record: "

static volatile sig_atomic_t got_term;
static volatile sig_atomic_t child_pid_for_signal;
/* --mem: the allocation tracer's path (find_memlib()). */
static char memlib[PATH_MAX];

static void on_term(int sig)
{
	got_term = sig;
	if (child_pid_for_signal > 0)
		kill((pid_t)child_pid_for_signal, sig);
}

static void on_chld(int sig)
{
	(void)sig;
}

/* The session library's lines, each after the name of the command that
 * speaks (the program's own lines as they are). */
static void print_line(enum sess_src src, const char *msg)
{
	static const char *const who[] = {
		[SESS_SRC_RECORD] = "ringtrace record: ",
		[SESS_SRC_SNAPSHOT] = "ringtrace snapshot: ",
		[SESS_SRC_RECOVER] = "ringtrace recover: ",
		[SESS_SRC_SHOW] = "ringtrace show: ",
		[SESS_SRC_PROGRAM] = "",
	};
	fprintf(stderr, "%s%s\n", (unsigned)src < sizeof(who) / sizeof(who[0]) ? who[src] : "", msg);
}

/* SIGTERM and SIGHUP (and Ctrl-C with -p: it detaches) set got_term. */
static void catch_signals(int with_int)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (with_int)
		sigaction(SIGINT, &sa, NULL);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace record [-o DIR] [--buffer-size SIZE] [--subbuffers N]\n"
		"                        [--mode discard|overwrite] [-e PATTERN]... [--stacks]\n"
		"                        [--stack-bits N] -- PROGRAM [ARGS...]\n"
		"       ringtrace record -p PID|NAME [-o DIR]\n"
		"       ringtrace record -p PID|NAME --snapshot [--snapshot-on EV] [--min-interval MS] [-o DIR]\n"
		"\n"
		"  -p PID|NAME        attach to a running program, record until Ctrl-C or until\n"
		"                     it exits, then detach (it runs on unaffected)\n"
		"  -o DIR             output directory (default: ringtrace-PROGRAM-DATE-TIME)\n"
		"  --allow-shared-dir write into DIR even if another user owns it or may write\n"
		"                     into it (refused by default: see docs/security.md)\n"
		"  --buffer-size SIZE ring buffer per CPU, a power of two (default 2M, 8M with --mem;\n"
		"                     K, M, G suffixes)\n"
		"  --subbuffers N     sub-buffers per CPU, a power of two from 2 to 1024 (default 8)\n"
		"  --mode MODE        discard: drop new events when full (default);\n"
		"                     overwrite: overwrite the oldest sub-buffers\n"
		"  -e PATTERN         record only events whose provider:name matches the glob\n"
		"                     (repeatable; default: all events)\n"
		"  --stacks           every event carries the stack that fired it (a 4-byte id\n"
		"                     in the stack map saved under DIR/stacks)\n"
		"  --stack-bits N     the stack map holds 2^N stacks, N from 10 to 18 (default 14)\n"
		"  --follow-fork      record each child the program forks (and their children)\n"
		"                     with the same options, into DIR/children/PID-NAME\n"
		"  --follow-exec      record each program it (or a followed child) executes, into\n"
		"                     DIR/children/PID-NAME; with --mem the tracer stays preloaded\n"
		"  --mem              trace every allocation and free (malloc, C++ new/delete,\n"
		"                     anonymous mmap) with the preloaded libringtrace-malloc.so;\n"
		"                     no rebuild: 'ringtrace report DIR' reads the trace\n"
		"  --aggregate        with --mem: count per stack (with --stacks) or per call site\n"
		"                     in shared memory instead of logging every call; 'ringtrace\n"
		"                     top PID' shows them live, DIR/mem/aggregate.bin keeps them\n"
		"  --flight-recorder  trace into the program's own buffers in overwrite mode and\n"
		"                     write nothing until a snapshot (ringtrace_snapshot() in the\n"
		"                     program, or ringtrace snapshot PID): DIR/snapshot-N; if the\n"
		"                     program is killed, what its buffers hold: DIR/recovered\n"
		"  --snapshot         snapshot mode: the same as --flight-recorder; with -p, on\n"
		"                     a running program: its snapshots are enabled (and tracing\n"
		"                     switched on, in overwrite mode, if it was off) until Ctrl-C\n"
		"                     or its exit, each one written to DIR/snapshot-N; then the\n"
		"                     program is left as it was found\n"
		"  --snapshot-on 'PROVIDER:EVENT [if FIELD OP VALUE]'\n"
		"                     with --flight-recorder or --snapshot: a snapshot when that event is\n"
		"                     fired (and the condition on its integer field holds;\n"
		"                     OP: == != < <= > >=)\n"
		"  --min-interval MS  at least MS between two triggered snapshots (default 0)\n");
}

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/*
 * The allocation tracer: $RINGTRACE_MALLOC_LIB, or ../lib/ beside this
 * command (build/bin -> build/lib, PREFIX/bin -> PREFIX/lib). Prints why
 * not found.
 */
static int find_memlib(char *out, size_t size)
{
	const char *env = getenv("RINGTRACE_MALLOC_LIB");
	char exe[PATH_MAX];
	ssize_t n;
	if (env && *env) {
		snprintf(out, size, "%s", env);
	} else if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = 0;
		static const char rel[] = "/../lib/libringtrace-malloc.so";
		size_t n1 = strlen(exe);
		if (n1 + sizeof(rel) <= size) {
			memcpy(out, exe, n1);
			memcpy(out + n1, rel, sizeof(rel));
		} else {
			out[0] = 0;
		}
	} else {
		out[0] = 0;
	}
	if (!out[0] || access(out, R_OK) < 0) {
		fprintf(stderr, PFX "--mem: cannot find libringtrace-malloc.so (%s; set RINGTRACE_MALLOC_LIB)\n",
			out[0] ? out : "no path");
		return -1;
	}
	return 0;
}

static int parse_args(struct sess_opts *r, int argc, char **argv)
{
	sess_opts_init(r);
	int i = 1;
	for (; i < argc; i += 2) { /* an option and its value */
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--")) {
			i += 1;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		}
		if (a[0] != '-')
			break;
		if (!strcmp(a, OUTDIR_ALLOW_OPT)) {
			r->outdir_flags |= OUTDIR_ALLOW_SHARED;
			i--;         /* no value */
			continue;
		}
		if (!strcmp(a, "--follow-fork") || !strcmp(a, "--follow-exec")) {
			if (a[9] == 'f')
				r->follow_fork = 1;
			else
				r->follow_exec = 1;
			i--;         /* no value */
			continue;
		}
		if (!strcmp(a, "--stacks") || !strcmp(a, "--flight-recorder") || !strcmp(a, "--snapshot") ||
		    !strcmp(a, "--mem") || !strcmp(a, "--aggregate")) {
			if (!strcmp(a, "--stacks"))
				r->stacks = 1;
			else if (!strcmp(a, "--mem"))
				r->memtrace = 1;
			else if (!strcmp(a, "--aggregate"))
				r->aggregate = r->memtrace = 1;
			else if (!strcmp(a, "--snapshot"))
				r->snapshot = 1;
			else
				r->flight = 1;
			i--;         /* no value */
			continue;
		}
		if (!v) {
			fprintf(stderr, PFX "option '%s' needs a value\n", a);
			return -1;
		}
		if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			r->outdir = v;
		} else if (!strcmp(a, "-p") || !strcmp(a, "--pid")) {
			r->attach = v;
		} else if (!strcmp(a, "--buffer-size")) {
			r->buf_size_set = 1;
			if (cli_parse_size(v, &r->buf_size) < 0) {
				fprintf(stderr, PFX "bad --buffer-size '%s' (a size such as 2M)\n", v);
				return -1;
			}
		} else if (!strcmp(a, "--subbuffers")) {
			char *end;
			unsigned long n = strtoul(v, &end, 10);
			if (*end || !is_pow2(n) || n < 2 || n > 1024) {
				fprintf(stderr, PFX "bad --subbuffers '%s' (a power of two from 2 to 1024)\n", v);
				return -1;
			}
			r->nsb = (uint32_t)n;
		} else if (!strcmp(a, "--mode")) {
			if (!strcmp(v, "discard"))
				r->mode = RINGTRACE__MODE_DISCARD;
			else if (!strcmp(v, "overwrite"))
				r->mode = RINGTRACE__MODE_OVERWRITE;
			else {
				fprintf(stderr, PFX "bad --mode '%s' (discard or overwrite)\n", v);
				return -1;
			}
		} else if (!strcmp(a, "--stack-bits")) {
			char *end;
			unsigned long n = strtoul(v, &end, 10);
			if (*end || end == v || n < STACKMAP_BITS_MIN || n > STACKMAP_BITS_MAX) {
				fprintf(stderr, PFX "bad --stack-bits '%s' (a number from %d to %d)\n", v,
					STACKMAP_BITS_MIN, STACKMAP_BITS_MAX);
				return -1;
			}
			r->stack_bits = (uint32_t)n;
		} else if (!strcmp(a, "--snapshot-on")) {
			char err[256];
			if (trigger_check(v, err, sizeof(err)) < 0) {
				fprintf(stderr, PFX "%s\n", err);
				return -1;
			}
			r->snap_on = v;
		} else if (!strcmp(a, "--min-interval")) {
			char *end;
			unsigned long long ms = strtoull(v, &end, 10);
			if (*end || end == v || v[0] == '-' || ms > 86400000ull) {
				fprintf(stderr, PFX "bad --min-interval '%s' (milliseconds)\n", v);
				return -1;
			}
			r->min_interval = v;
		} else if (!strcmp(a, "-e") || !strcmp(a, "--event")) {
			char err[256];
			if (sess_opts_add_pattern(r, v, err, sizeof(err)) < 0) {
				fprintf(stderr, PFX "%s\n", err);
				return -1;
			}
		} else {
			fprintf(stderr, PFX "unknown option '%s' (try --help)\n", a);
			return -1;
		}
	}
	if (i < argc)
		r->argv = argv + i;
	char err[512];
	if (sess_opts_finish(r, err, sizeof(err)) < 0) {
		fprintf(stderr, PFX "%s\n", err);
		return -1;
	}
	return 0;
}

int record_with_opts(struct sess_opts *o)
{
	sess_set_log(print_line);
	o->stop = &got_term;
	o->child_pid = &child_pid_for_signal;
	o->agg_create = agg_create;
	o->agg_save = agg_save;
	if (o->memtrace && !o->attach && !o->memlib) {
		if (find_memlib(memlib, sizeof(memlib)) < 0)
			return 2;
		o->memlib = memlib;
	}
	if (o->attach) {
		/* Ctrl-C detaches. */
		catch_signals(1);
		signal(SIGPIPE, SIG_IGN);
	} else {
		catch_signals(0);
		struct sigaction sa = { 0 };
		sa.sa_handler = on_chld; /* no SA_RESTART: it interrupts the futex wait */
		sigaction(SIGCHLD, &sa, NULL);
		/* Ctrl-C reaches the program too (same process group); the
		 * recorder stays to save what the program wrote until it
		 * exits. */
		signal(SIGINT, SIG_IGN);
	}
	int status = 2;
	sess_record(o, &status);
	return status;
}

int cmd_record(int argc, char **argv)
{
	struct sess_opts o;
	if (parse_args(&o, argc, argv) < 0)
		return 2;
	return record_with_opts(&o);
}

/* ---- snapshot ------------------------------------------------------------ */

#define SPFX "ringtrace snapshot: "

int cmd_snapshot(int argc, char **argv)
{
	const char *usage = "usage: ringtrace snapshot PID|NAME [-o DIR] [--allow-shared-dir] [--count N [--interval MS] | --watch]";
	struct sess_snap_opts o = { .sz = sizeof(o), .interval_ms = 1000, .stop = &got_term };
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
	sess_set_log(print_line);
	if (o.count || o.watch) {
		/* Ctrl-C ends the series (or the watch); one snapshot is
		 * not interrupted. */
		struct sigaction sa = { 0 };
		sa.sa_handler = on_term;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
	}
	return sess_snapshot(&o) < 0 ? 1 : 0;
}

/* ---- recover ------------------------------------------------------------- */

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
	sess_set_log(print_line);
	return sess_recover(what, outdir, flags) < 0 ? 1 : 0;
}

/* ---- show ---------------------------------------------------------------- */

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
		.stop = &got_term,
		.on_item = show_item,
		.on_round_end = show_flush,
		.on_lost = show_lost,
		.arg = &line,
	};
	sess_set_log(print_line);
	catch_signals(1);
	signal(SIGPIPE, SIG_IGN);
	int k = sess_show(&o);
	ctf_buf_free(&line);
	return k < 0 ? 1 : 0;
}
