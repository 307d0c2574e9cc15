/*
 * cmd_dump.c - `ringtrace dump [--all] DIR`: print a trace, one line per
 * event, sorted by time across CPUs, in the layout of ftrace:
 *
 *   comm-tid [cpu] seconds.nanoseconds: provider:event: field=value ...
 *
 * An event with context fields (a trace from another tracer: LTTng puts
 * vtid, procname and the like in the stream's event.context) has them in
 * braces before its payload, the stream's context first, then the event
 * class's, as babeltrace2 prints them:
 *
 *   ... provider:event: {vtid=1234, procname="prog"} field=value ...
 *
 * Times are nanoseconds since the epoch computed exactly as babeltrace2
 * 2.0.4 computes them (src/read/reader.c), so that `babeltrace2
 * --clock-seconds` prints the same numbers. ringtrace:thread records (which
 * only tell whose events follow) are shown with --all. Lost events and lost
 * packets get a `ringtrace: ...` line at the place in time where the loss
 * is known. Events the recorder lost after the buffers (not written to a
 * full disk, unreadable after a crash; the env's ringtrace_stream_N_lost_*)
 * get one line per stream after the last event.
 *
 * A damaged trace: everything readable is printed, then one line
 * `ringtrace dump: DIR: <what is wrong>` on stderr and exit status 1.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/buf.h"
#include "read/format.h"
#include "read/reader.h"

/* The losses that no packet shows, from the env (docs/trace-format.md,
 * "Loss accounting"), one line per stream and cause. */
static void print_env_losses(const struct rd_meta *m, struct ctf_buf *b)
{
	const struct rd_env *why = rd_meta_env(m, "ringtrace_write_error");
	for (size_t i = 0; i < m->n_env; i++) {
		const struct rd_env *e = &m->env[i];
		unsigned long long cpu;
		int end = 0;
		if (e->str || e->num <= 0 || sscanf(e->key, "ringtrace_stream_%llu_%n", &cpu, &end) != 1 || end == 0)
			continue;
		const char *cause = e->key + end;
		if (!strcmp(cause, "discarded_after"))
			ctf_buf_printf(b, "ringtrace: %lld events lost on cpu %llu after its last packet (discarded)\n",
				       (long long)e->num, cpu);
		else if (!strcmp(cause, "lost_unwritten"))
			ctf_buf_printf(b, "ringtrace: %lld events lost on cpu %llu after its last packet (never written: %s)\n",
				       (long long)e->num, cpu, why && why->str && *why->str ? why->str : "write error");
		else if (!strcmp(cause, "lost_crash"))
			ctf_buf_printf(b, "ringtrace: %lld events lost on cpu %llu (committed, unreadable after a crash)\n",
				       (long long)e->num, cpu);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ringtrace dump [--all] DIR\n"
		   "  --all   also print the ringtrace:thread and ringtrace:thread_name records\n");
}

int cmd_dump(int argc, char **argv)
{
	const char *dir = NULL;
	int all = 0, opts = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (opts && !strcmp(a, "--")) {
			opts = 0;
		} else if (opts && (!strcmp(a, "--all") || !strcmp(a, "-a"))) {
			all = 1;
		} else if (opts && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
			usage(stdout);
			return 0;
		} else if (opts && a[0] == '-' && a[1]) {
			fprintf(stderr, "ringtrace dump: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		} else if (!dir) {
			dir = a;
		} else {
			fprintf(stderr, "ringtrace dump: one trace directory only: '%s' and '%s'\n", dir, a);
			usage(stderr);
			return 2;
		}
	}
	if (!dir) {
		usage(stderr);
		return 2;
	}

	struct rd_trace *t;
	char err[1024];
	if (rd_trace_open(dir, &t, err, sizeof(err)) < 0) {
		fprintf(stderr, "ringtrace dump: %s: %s\n", dir, err);
		return 1;
	}
	/* Not fatal to a dump (the streams that are there still print), but
	 * never silent: `check` counts each as a problem. */
	for (size_t i = 0; i < rd_trace_n_skipped(t); i++)
		fprintf(stderr, "ringtrace dump: warning: %s/%s: skipped\n", dir, rd_trace_skipped(t, i));
	struct ctf_buf line;
	struct rd_item it;
	int r, status = 0;
	ctf_buf_init(&line);
	while ((r = rd_trace_next(t, &it)) > 0) {
		if (it.kind == RD_ITEM_EVENT && !all && (!strcmp(it.ec->name, "ringtrace:thread") ||
							 !strcmp(it.ec->name, "ringtrace:thread_name")))
			continue;
		ctf_buf_reset(&line);
		rd_format_item(&line, &it);
		ctf_buf_putc(&line, '\n');
		if (line.err) {
			fprintf(stderr, "ringtrace dump: %s: out of memory\n", dir);
			status = 1;
			break;
		}
		if (fwrite(line.data, 1, line.len, stdout) != line.len)
			break;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ringtrace dump: %s: cannot write the output\n", dir);
		status = 1;
	} else if (r < 0 && !status) {
		fprintf(stderr, "ringtrace dump: %s: %s\n", dir, rd_trace_errmsg(t));
		status = 1;
	}
	if (!status && r == 0) {
		ctf_buf_reset(&line);
		print_env_losses(rd_trace_meta(t), &line);
		if (line.len && (fwrite(line.data, 1, line.len, stdout) != line.len || fflush(stdout) != 0)) {
			fprintf(stderr, "ringtrace dump: %s: cannot write the output\n", dir);
			status = 1;
		}
	}
	ctf_buf_free(&line);
	rd_trace_close(t);
	return status;
}
