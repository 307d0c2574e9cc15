/*
 * cmd_record.c - `ringtrace record`: run a program with tracing on (or
 * attach to one with -p, or keep a flight recorder, or follow its forked
 * and executed children) and write its events as a CTF 1.8 trace. Parses
 * the options into struct sess_opts, finds the allocation tracer for
 * --mem, sets the signals up and calls sess_record() (src/session/),
 * whose lines are printed by cli_session.c.
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
#include "cli/progress.h"
#include "common/trigger_parse.h"
#include "util/outdir.h"
#include "ringbuf/rb.h"
#include "session/session.h"
#include "stackmap/stackmap.h"

#define PFX "ringtrace record: "

/* --mem: the allocation tracer's path (find_memlib()). */
static char memlib[PATH_MAX];

static void on_chld(int sig)
{
	(void)sig;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace record [-o DIR] [--buffer-size SIZE] [--subbuffers N]\n"
		"                        [--mode discard|overwrite] [--blocking-timeout US|--drop]\n"
		"                        [-e PATTERN]... [--stacks] [--stack-bits N]\n"
		"                        [--mem [--aggregate] [--sample BYTES [--sample-seed N]]]\n"
		"                        -- PROGRAM [ARGS...]\n"
		"       ringtrace record -p PID|NAME [-o DIR]\n"
		"       ringtrace record -p PID|NAME --snapshot [--snapshot-on EV] [--min-interval MS] [-o DIR]\n"
		"\n"
		"  -p PID|NAME        attach to a running program, record until Ctrl-C or until\n"
		"                     it exits, then detach (it runs on unaffected)\n"
		"  -o DIR             output directory (default: ringtrace-PROGRAM-DATE-TIME)\n"
		"  --progress         the status line (elapsed, events/s, written, lost, fullest\n"
		"                     buffer) even when stderr is not a terminal: one line a second\n"
		"  --quiet, -q        no status line (by default: one on a terminal, 4 times a second)\n"
		"  --allow-shared-dir write into DIR even if another user owns it or may write\n"
		"                     into it (refused by default: see docs/security.md)\n"
		"  --buffer-size SIZE ring buffer per CPU, a power of two (default 2M, 8M with --mem;\n"
		"                     K, M, G suffixes)\n"
		"  --subbuffers N     sub-buffers per CPU, a power of two from 2 to 1024 (default 8)\n"
		"  --mode MODE        discard: drop new events when full (default);\n"
		"                     overwrite: overwrite the oldest sub-buffers\n"
		"  --blocking-timeout US  in discard mode, a writer that finds its buffer full\n"
		"                     waits for room up to US microseconds, then drops the event\n"
		"                     (default: 0 = drop at once; 1000000 with --mem, which then\n"
		"                     loses nothing unless the recorder stalls; at most 60 s)\n"
		"  --drop             the same as --blocking-timeout 0 (with --mem: speed first,\n"
		"                     what is lost is counted)\n"
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
		"  --sample BYTES     with --mem: record a Poisson sample of the allocations, one\n"
		"                     per BYTES allocated on average (K, M, G suffixes; 512K is\n"
		"                     tcmalloc's); reports scale the samples into estimates\n"
		"  --sample-seed N    with --sample: the generator's seed (decimal or 0x...), for\n"
		"                     runs that sample the same allocations (default: random)\n"
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
 * The allocation tracer to preload: RINGTRACE_MALLOC_LIB if set, else the
 * one of this command's own tree (bin/../lib: a build directory, or an
 * installed prefix moved as a whole), else the one in the libdir the
 * command was built for (RINGTRACE_LIBDIR, from mk/install.mk; a LIBDIR
 * other than PREFIX/lib). The message names every path it tried.
 */
#ifndef RINGTRACE_LIBDIR
#define RINGTRACE_LIBDIR "/usr/local/lib"
#endif
static int find_memlib(char *out, size_t size)
{
	static const char name[] = "libringtrace-malloc.so";
	const char *env = getenv("RINGTRACE_MALLOC_LIB");
	if (env && *env) {
		snprintf(out, size, "%s", env);
		if (access(out, R_OK) == 0)
			return 0;
		fprintf(stderr, PFX "--mem: cannot read RINGTRACE_MALLOC_LIB '%s': %s\n", out, strerror(errno));
		return -1;
	}
	char exe[PATH_MAX], rel[PATH_MAX + 64] = "";
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = 0;
		snprintf(rel, sizeof(rel), "%s/../lib/%s", exe, name);
		if (access(rel, R_OK) == 0 && (size_t)snprintf(out, size, "%s", rel) < size)
			return 0;
	}
	int len = snprintf(out, size, "%s/%s", RINGTRACE_LIBDIR, name);
	if (len > 0 && (size_t)len < size && access(out, R_OK) == 0)
		return 0;
	fprintf(stderr, PFX "--mem: cannot find %s (tried '%s' and '%s/%s'; set RINGTRACE_MALLOC_LIB)\n", name,
		rel[0] ? rel : "bin/../lib: /proc/self/exe unreadable", RINGTRACE_LIBDIR, name);
	out[0] = 0;
	return -1;
}

static int parse_args(struct sess_opts *r, int *progress, int argc, char **argv)
{
	sess_opts_init(r);
	*progress = PROGRESS_AUTO;
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
		if (!strcmp(a, "--progress") || !strcmp(a, "--quiet") || !strcmp(a, "-q")) {
			*progress = a[2] == 'p' ? PROGRESS_ON : PROGRESS_OFF;
			i--;         /* no value */
			continue;
		}
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
		if (!strcmp(a, "--drop")) {
			r->block_us = 0;
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
		} else if (!strcmp(a, "--blocking-timeout")) {
			char *end;
			unsigned long long us = strtoull(v, &end, 10);
			if (*end || end == v || v[0] == '-' || us > RB_BLOCK_MAX_US) {
				fprintf(stderr, PFX "bad --blocking-timeout '%s' (microseconds, 0 to %u)\n", v,
					RB_BLOCK_MAX_US);
				return -1;
			}
			r->block_us = (int64_t)us;
		} else if (!strcmp(a, "--stack-bits")) {
			char *end;
			unsigned long n = strtoul(v, &end, 10);
			if (*end || end == v || n < STACKMAP_BITS_MIN || n > STACKMAP_BITS_MAX) {
				fprintf(stderr, PFX "bad --stack-bits '%s' (a number from %d to %d)\n", v,
					STACKMAP_BITS_MIN, STACKMAP_BITS_MAX);
				return -1;
			}
			r->stack_bits = (uint32_t)n;
		} else if (!strcmp(a, "--sample")) {
			if (cli_parse_sample("ringtrace record", v, &r->sample) < 0)
				return -1;
		} else if (!strcmp(a, "--sample-seed")) {
			if (cli_parse_seed("ringtrace record", v, &r->sample_seed) < 0)
				return -1;
			r->sample_seed_set = 1;
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

int record_with_opts(struct sess_opts *o, int progress)
{
	cli_session_log();
	o->stop = &cli_got_term;
	o->child_pid = &cli_child_pid;
	o->agg_create = agg_create;
	o->agg_save = agg_save;
	if (o->memtrace && !o->attach && !o->memlib) {
		if (find_memlib(memlib, sizeof(memlib)) < 0)
			return 2;
		o->memlib = memlib;
	}
	if (o->attach) {
		/* Ctrl-C detaches. */
		cli_catch_term(1, 1);
		signal(SIGPIPE, SIG_IGN);
	} else {
		cli_catch_term(1, 0);
		struct sigaction sa = { 0 };
		sa.sa_handler = on_chld; /* no SA_RESTART: it interrupts the futex wait */
		sigaction(SIGCHLD, &sa, NULL);
		/* Ctrl-C reaches the program too (same process group); the
		 * recorder stays to save what the program wrote until it
		 * exits. */
		signal(SIGINT, SIG_IGN);
	}
	int status = 2;
	progress_start(o, (enum progress_mode)progress);
	sess_record(o, &status);
	progress_stop();
	return status;
}

int cmd_record(int argc, char **argv)
{
	struct sess_opts o;
	int progress;
	if (parse_args(&o, &progress, argc, argv) < 0)
		return 2;
	return record_with_opts(&o, progress);
}
