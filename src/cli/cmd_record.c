/*
 * cmd_record.c - `ringtrace record`: run a program with tracing on and
 * write its events as a CTF 1.8 trace while it runs.
 *
 * The recorder creates the shared-memory region, starts the program with
 * RINGTRACE_SHM naming it, and then, on its own CPU time, appends every
 * closed sub-buffer to the stream file of its CPU as a finished CTF packet.
 * It sleeps until a writer closes a sub-buffer or 100 ms pass. When the
 * program has exited (normally, by a signal or a crash) no writer is left:
 * the recorder takes the open sub-buffers too, cut at the first record that
 * was reserved but never written, so everything committed reaches the disk.
 * It exits with the program's status.
 *
 * Everything read from the region is validated (registry entries,
 * packets); the program is never made to wait.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/disk_room.h"
#include "cli/mem_agg_io.h"
#include "common/clock.h"
#include "common/packet_layout.h"
#include "common/sig.h"
#include "ctf/metadata.h"
#include "ctl/ctl_client.h"
#include "common/trigger_parse.h"
#include "read/reader.h"
#include "stackmap/maplog.h"
#include "stackmap/stack_files.h"
#include "util/outdir.h"
#include "stackmap/stackmap.h"
#include "util/buf.h"
#include "ringbuf/rb.h"

#define PFX "ringtrace record: "

struct rec_event {
	uint32_t id;
	char *provider, *name, *signature;
	struct sig_field *fields;
	size_t nfields;
};

struct rec_thread {
	uint32_t tid;
	char comm[17];
};

struct rec {
	/* options */
	const char *outdir_opt;
	uint64_t buf_size;
	int buf_size_set;            /* --buffer-size given */
	uint32_t nsb;
	uint32_t mode;
	char patterns[sizeof(((struct ringtrace__shm_header *)0)->patterns)];
	size_t patterns_len;
	char **argv;
	const char *attach_spec;     /* -p PID|NAME */
	int stacks;                  /* --stacks: every event carries a stack */
	int flight;                  /* --flight-recorder (or --snapshot) */
	int snapshot;                /* -p PID --snapshot: snapshot mode on a running program */
	int memtrace;                /* --mem: the allocation tracer is preloaded */
	int aggregate;               /* --aggregate: counters instead of events (src/mem/mem_agg.h) */
	int agg_fd;                  /* their block (a memfd the program inherits), -1 if none */
	char memlib[PATH_MAX];       /* its path */
	const char *snap_on;         /* --snapshot-on */
	const char *min_interval;    /* --min-interval MS */
	uint32_t snap_no;            /* snapshot: its number in the program, 0 if not one */
	const char *snap_trigger;    /* what took it */
	char snap_time[40];          /* when, ISO 8601 */
	uint32_t stack_bits;         /* --stack-bits: the map's pool is 2^bits */
	const char *progname;        /* for the directory name and procname */
	int follow_fork;             /* --follow-fork: forked children get traces of their own */
	int follow_exec;             /* --follow-exec: so do programs executed */
	struct follow *follow;       /* the program's recording: the followers */
	const char *follow_kind;     /* a followed process's recording: "fork" or "exec" */
	pid_t follow_ppid;           /* ... and its parent */
	int follow_empty;            /* ... which recorded nothing: no trace kept */

	char *outdir;                /* as printed; set once odfd is open */
	int odfd;                    /* the output directory, valid while outdir is set */
	int outdir_at;               /* outdir_opt is relative to this ... */
	int outdir_at_set;           /* ... when set (else the current directory) */
	int outdir_created;          /* we made it: remove it if we fail early */
	char *shm_path;
	int shm_fd;                  /* passed to the program, unlinked at once */
	void *mem;
	uint64_t mem_size;
	struct ringtrace__rb *rb;
	struct rb_reader *reader;
	int *fds;
	int write_failed;
	uint64_t bytes;
	/* Stream data that could not be written (the disk full, say): events
	 * per CPU and in all, and the first error. */
	uint64_t *unwritten;
	uint64_t unwritten_total;
	/* Per CPU: the events_discarded of the last packet written (a loss
	 * counted after it shows in no packet of the trace), and whether one
	 * was written. */
	uint64_t *disc_written;
	unsigned char *wrote;
	int write_errno;
	/* Room for the final metadata (disk_room.h), held from the first
	 * packet on; meta_bytes: the size of the last metadata written. */
	struct disk_room room;
	int room_tried;
	uint64_t meta_bytes;

	struct rec_event *events;
	size_t nevents, cap_events;
	uint64_t reg_pos;
	int reg_changed;

	struct rec_thread *threads;
	size_t nthreads, cap_threads;

	pid_t child;                 /* the program (-p: the process attached to) */
	struct ctl_handle ctl;       /* -p */
	int turned_on;               /* -p: we switched tracing on */
	int reader_claimed;
	uint64_t lost0[4];           /* -p: loss counters when we attached */
	FILE *meta_mem;              /* show: write the metadata here */
	char comm[17];               /* -p: the program's name */
	uint64_t last_scan, last_meta;  /* record_round(): ms of the last thread scan, metadata */
	uint64_t lost_full, lost_overwrite, lost_too_big, lost_nocpu, lost_crash;
	uint32_t clock;
	struct clk_sample c0;
	uint8_t uuid[16];
	/* The clock: why (record's line and the env), the cross-CPU check,
	 * and samples of the TSC against CLOCK_MONOTONIC (clk_watch)
	 * during the recording, for the drift and jump checks at the end. */
	char clock_why[256];
	char clock_bad[128];
	struct clk_check check;
	struct clk_watch watch;
	struct clk_drift drift;
	char drift_str[32];
};

static volatile sig_atomic_t got_term;
/* OUTDIR_ALLOW_SHARED when --allow-shared-dir was given (one per command). */
static unsigned out_flags;
static volatile sig_atomic_t child_pid_for_signal;

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

static int add_pattern(struct rec *r, const char *pat)
{
	size_t n = strlen(pat);
	if (n == 0) {
		fprintf(stderr, PFX "empty event pattern\n");
		return -1;
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
		fprintf(stderr, PFX "malformed event pattern '%s': unclosed '['\n", pat);
		return -1;
	}
	if (r->patterns_len + n + 2 > sizeof(r->patterns)) {
		fprintf(stderr, PFX "too many event patterns (%zu bytes at most)\n", sizeof(r->patterns) - 2);
		return -1;
	}
	memcpy(r->patterns + r->patterns_len, pat, n + 1);
	r->patterns_len += n + 1;
	return 0;
}

/*
 * The allocation tracer: $RINGTRACE_MALLOC_LIB, or ../lib/ beside this
 * command (build/bin -> build/lib, PREFIX/bin -> PREFIX/lib). Prints why
 * not found.
 */
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

static int parse_args(struct rec *r, int argc, char **argv)
{
	r->buf_size = (uint64_t)RB_DEFAULT_SB * RB_DEFAULT_NSB;
	r->nsb = RB_DEFAULT_NSB;
	r->mode = RINGTRACE__MODE_DISCARD;
	r->stack_bits = 0;           /* 0: not given (STACKMAP_BITS_DEFAULT) */
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
			out_flags |= OUTDIR_ALLOW_SHARED;
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
			r->outdir_opt = v;
		} else if (!strcmp(a, "-p") || !strcmp(a, "--pid")) {
			r->attach_spec = v;
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
			if (add_pattern(r, v) < 0)
				return -1;
		} else {
			fprintf(stderr, PFX "unknown option '%s' (try --help)\n", a);
			return -1;
		}
	}
	if ((r->follow_fork || r->follow_exec) && (r->attach_spec || r->flight || r->snapshot)) {
		fprintf(stderr, PFX "--follow-fork and --follow-exec go with a program to run, without -p or snapshots\n");
		return -1;
	}
	if (r->attach_spec) {
		if (i < argc) {
			fprintf(stderr, PFX "-p attaches to a running program: no PROGRAM may follow\n");
			return -1;
		}
		if (r->patterns_len || r->mode != RINGTRACE__MODE_DISCARD || r->stacks || r->stack_bits || r->flight ||
		    r->memtrace || r->aggregate ||
		    r->buf_size != (uint64_t)RB_DEFAULT_SB * RB_DEFAULT_NSB || r->nsb != RB_DEFAULT_NSB) {
			fprintf(stderr, PFX "with -p, the program's own settings apply: use 'ringtrace enable/disable' and 'ringtrace buffer-size'\n");
			return -1;
		}
		if ((r->snap_on || r->min_interval) && !r->snapshot) {
			fprintf(stderr, PFX "--snapshot-on and --min-interval go with --snapshot (or --flight-recorder)\n");
			return -1;
		}
		return 0;
	}
	/* Snapshot mode on a program we start is the flight recorder. */
	if (r->snapshot && r->flight) {
		fprintf(stderr, PFX "--snapshot and --flight-recorder are the same: give one\n");
		return -1;
	}
	if (r->snapshot) {
		r->flight = 1;
		r->snapshot = 0;
	}
	if (i >= argc) {
		fprintf(stderr, PFX "no program to run (usage: ringtrace record [OPTIONS] -- PROGRAM [ARGS...])\n");
		return -1;
	}
	/* An allocation-heavy program makes events faster than most: four
	 * times the room unless told (an event lost is a free missed). */
	if (r->memtrace && !r->aggregate && !r->buf_size_set)
		r->buf_size *= 4;
	uint64_t sb = r->buf_size / r->nsb;
	if (!is_pow2(r->buf_size) || sb < (1u << RB_SB_MIN_SHIFT) || sb > (1u << RB_SB_MAX_SHIFT)) {
		fprintf(stderr, PFX "--buffer-size %llu with %u sub-buffers: the size must be a power of two and each sub-buffer between 4K and 4M\n",
			(unsigned long long)r->buf_size, r->nsb);
		return -1;
	}
	if (r->flight && r->mode != RINGTRACE__MODE_DISCARD) {
		fprintf(stderr, PFX "--flight-recorder is in overwrite mode already: no --mode\n");
		return -1;
	}
	if (r->flight)
		r->mode = RINGTRACE__MODE_OVERWRITE;
	if ((r->snap_on || r->min_interval) && !r->flight) {
		fprintf(stderr, PFX "--snapshot-on and --min-interval go with --flight-recorder (or --snapshot)\n");
		return -1;
	}
	r->argv = argv + i;
	r->progname = r->argv[0];
	if (r->memtrace && find_memlib(r->memlib, sizeof(r->memlib)) < 0)
		return -1;
	if (r->aggregate && r->flight) {
		fprintf(stderr, PFX "--aggregate keeps counters, not events: no snapshots of them (drop --flight-recorder)\n");
		return -1;
	}
	if (r->aggregate && (r->follow_fork || r->follow_exec)) {
		fprintf(stderr, PFX "--aggregate does not follow children yet: drop --follow-fork/--follow-exec\n");
		return -1;
	}
	return 0;
}

/* ---- output ---------------------------------------------------------- */

static int dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *e;
	int empty = 1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty;
}

/*
 * Create (or take, if empty) the output directory and open it once: every
 * file of the trace is created relative to r->odfd (common/outdir.h).
 */
static int make_outdir(struct rec *r)
{
	char why[256];
	if (r->outdir_opt) {
		int at = r->outdir_at_set ? r->outdir_at : AT_FDCWD;
		const char *name = r->outdir_opt, *slash = strrchr(name, '/');
		if (at != AT_FDCWD && slash)
			name = slash + 1;
		int fd = outdir_open(at, name, OUTDIR_CREATE | OUTDIR_EMPTY | out_flags, &r->outdir_created,
				     why, sizeof(why));
		if (fd < 0) {
			fprintf(stderr, PFX "output directory '%s' %s\n", r->outdir_opt, why);
			return -1;
		}
		r->outdir = strdup(r->outdir_opt);
		if (!r->outdir) {
			close(fd);
			return -1;
		}
		r->odfd = fd;
		return 0;
	}
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	const char *base = strrchr(r->progname, '/');
	base = base ? base + 1 : r->progname;
	for (int n = 1; n < 1000; n++) {
		char *path;
		int k = n == 1 ? asprintf(&path, "ringtrace-%s-%s", base, stamp)
			       : asprintf(&path, "ringtrace-%s-%s-%d", base, stamp, n);
		if (k < 0)
			return -1;
		int fd = outdir_open(AT_FDCWD, path, OUTDIR_CREATE | OUTDIR_NEW | out_flags, NULL, why, sizeof(why));
		if (fd >= 0) {
			r->outdir = path;
			r->odfd = fd;
			r->outdir_created = 1;
			return 0;
		}
		free(path);
		if (fd != -EEXIST) {
			fprintf(stderr, PFX "cannot create an output directory: %s\n", why);
			return -1;
		}
	}
	fprintf(stderr, PFX "cannot find a free output directory name\n");
	return -1;
}

/* Hold room for the final metadata: twice the last one (it grows with
 * the events and threads seen), 64 KiB at least. A failure is not fatal:
 * the disk may be full already. */
static void keep_room(struct rec *r)
{
	uint64_t want = 2 * r->meta_bytes;
	if (want < 65536)
		want = 65536;
	r->room_tried = 1;
	disk_room_hold(&r->room, r->odfd, want);
}

/* A packet that is not in the trace: its events are counted per stream
 * (finish() puts them in the summary and the metadata). */
static void count_unwritten(struct rec *r, const struct rb_packet *pkt, int err)
{
	r->unwritten[pkt->cpu] += pkt->events;
	r->unwritten_total += pkt->events;
	if (!r->write_errno)
		r->write_errno = err;
	r->write_failed = 1;
}

/* Append one whole packet; on a short write, cut the file back so that it
 * only ever holds whole packets (a truncated packet makes the trace
 * unreadable). After a failure nothing more is written: the trace ends
 * where its files end, and what follows is counted. */
static void write_packet(struct rec *r, const struct rb_packet *pkt)
{
	if (r->write_errno) {
		count_unwritten(r, pkt, r->write_errno);
		return;
	}
	if (!r->room_tried)
		keep_room(r);
	int *fd = &r->fds[pkt->cpu];
	if (*fd < 0) {
		char name[32];
		snprintf(name, sizeof(name), "stream_%u", pkt->cpu);
		*fd = outdir_create(r->odfd, name, 0644);
		if (*fd < 0) {
			fprintf(stderr, PFX "cannot create '%s/%s': %s; events from now on are not saved\n", r->outdir,
				name, strerror(-*fd));
			int err = -*fd;
			*fd = -1;
			count_unwritten(r, pkt, err);
			return;
		}
	}
	off_t start = lseek(*fd, 0, SEEK_END);
	size_t done = 0;
	while (done < pkt->len) {
		ssize_t k = write(*fd, pkt->data + done, pkt->len - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int err = k < 0 ? errno : ENOSPC; /* a write of 0 bytes: no room */
			fprintf(stderr, PFX "cannot write '%s/stream_%u': %s; events from now on are not saved\n",
				r->outdir, pkt->cpu, strerror(err));
			if (start >= 0 && ftruncate(*fd, start) < 0) {
				/* nothing more to do: the message above stands */
			}
			count_unwritten(r, pkt, err);
			return;
		}
		done += (size_t)k;
	}
	r->bytes += pkt->len;
	memcpy(&r->disc_written[pkt->cpu], pkt->data + PKT_OFF(events_discarded), 8);
	r->wrote[pkt->cpu] = 1;
}

/* Take at most `max` sub-buffers per CPU (0: all), so that a writer faster
 * than the disk cannot keep the main loop from its other duties. Returns
 * how many were taken. */
static unsigned consume(struct rec *r, unsigned max)
{
	struct rb_packet pkt;
	unsigned n = 0;
	for (uint32_t c = 0; c < r->rb->ncpus; c++) {
		for (unsigned k = 0; (max == 0 || k < max) && rb_reader_get(r->reader, c, &pkt) > 0; k++) {
			write_packet(r, &pkt);
			rb_reader_put(r->reader, c);
			n++;
		}
	}
	return n;
}

/* The process that attached to the region, if it is still running (it can be
 * a grandchild when the program is run through a shell or a wrapper). */
static int attached_alive(const struct rec *r)
{
	pid_t pid = (pid_t)__atomic_load_n(&r->rb->hdr->attached_pid, __ATOMIC_ACQUIRE);
	if (pid <= 0 || pid == r->child)
		return 0;
	return kill(pid, 0) == 0 || errno == EPERM;
}

/* ---- registry ---------------------------------------------------------- */

static struct rec_event *event_by_id(struct rec *r, uint32_t id)
{
	for (size_t i = 0; i < r->nevents; i++)
		if (r->events[i].id == id)
			return &r->events[i];
	return NULL;
}

static void add_event(struct rec *r, uint32_t id, const char *provider, const char *name,
		      const char *signature)
{
	struct sig_field fields[SIG_FIELDS_MAX];
	size_t n;
	if (id == 0 || event_by_id(r, id))
		return;
	if (sig_parse(signature, fields, SIG_FIELDS_MAX, &n) < 0) {
		fprintf(stderr, PFX "event %s:%s has fields ringtrace cannot describe (\"%s\"); its records are dropped from the trace\n",
			provider, name, signature);
		return;
	}
	if (r->nevents == r->cap_events) {
		size_t cap = r->cap_events ? r->cap_events * 2 : 32;
		struct rec_event *ne = realloc(r->events, cap * sizeof(*ne));
		if (!ne)
			return;
		r->events = ne;
		r->cap_events = cap;
	}
	struct rec_event *e = &r->events[r->nevents];
	e->id = id;
	e->provider = strdup(provider);
	e->name = strdup(name);
	e->signature = strdup(signature);
	e->fields = malloc((n ? n : 1) * sizeof(*fields));
	if (!e->provider || !e->name || !e->signature || !e->fields) {
		free(e->provider);
		free(e->name);
		free(e->signature);
		free(e->fields);
		return;
	}
	memcpy(e->fields, fields, n * sizeof(*fields));
	e->nfields = n;
	r->nevents++;
	r->reg_changed = 1;
}

/* Read the entries the program appended since last time. */
static void read_registry(struct rec *r)
{
	struct ringtrace__shm_header *h = r->rb->hdr;
	uint64_t used = __atomic_load_n(&h->reg_used, __ATOMIC_ACQUIRE);
	/* Only the offsets validated at open (the program could change the
	 * header's copies). */
	if (used > r->rb->reg_size)
		used = r->rb->reg_size;
	const char *base = (const char *)h + r->rb->reg_off;
	struct ctl_log_entry e;
	int k;
	while ((k = ctl_log_next(base, used, &r->reg_pos, &e)) > 0) {
		if (e.kind == 1 && e.n == 4)
			add_event(r, e.id, e.s[0], e.s[1], e.s[2]);
		else if (e.kind == 2 && e.n >= 1)
			fprintf(stderr, "%s\n", e.s[0]);
	}
	if (k < 0) {
		fprintf(stderr, PFX "the program's event registry is damaged; later events are not described\n");
		r->reg_pos = used;
	}
}

static int payload_size(void *arg, uint32_t id, const char *payload, size_t avail, size_t *ret)
{
	struct rec_event *e = event_by_id(arg, id);
	if (!e)
		return -EBADMSG;
	return sig_record_size(e->fields, e->nfields, payload, avail, ret);
}

/* ---- threads ----------------------------------------------------------- */

static void scan_threads(struct rec *r)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)r->child);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		unsigned long tid = strtoul(e->d_name, &end, 10);
		if (*end || tid == 0 || tid > UINT32_MAX)
			continue;
		char cpath[96], comm[64] = "";
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%lu/comm", (int)r->child, tid);
		FILE *f = fopen(cpath, "re");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		if (!comm[0])
			continue;
		struct rec_thread *t = NULL;
		for (size_t i = 0; i < r->nthreads; i++)
			if (r->threads[i].tid == tid)
				t = &r->threads[i];
		if (!t) {
			if (r->nthreads == r->cap_threads) {
				size_t cap = r->cap_threads ? r->cap_threads * 2 : 16;
				struct rec_thread *nt = realloc(r->threads, cap * sizeof(*nt));
				if (!nt)
					break;
				r->threads = nt;
				r->cap_threads = cap;
			}
			t = &r->threads[r->nthreads++];
			t->tid = (uint32_t)tid;
		}
		snprintf(t->comm, sizeof(t->comm), "%s", comm);
	}
	closedir(d);
}

/* The env's thread names: one key each (thread_name_<tid>). */
static struct ctf_thread_name *thread_names(const struct rec *r)
{
	struct ctf_thread_name *v = calloc(r->nthreads ? r->nthreads : 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nthreads; i++) {
		v[i].tid = r->threads[i].tid;
		v[i].comm = r->threads[i].comm;
	}
	return v;
}

/* ---- the clock ----------------------------------------------------------- */

static uint64_t mono_ms(void);

/* The value of an environment variable, fit to print on one line. */
static void printable(const char *s, char *buf, size_t size)
{
	size_t i = 0;
	for (; s[i] && i + 4 < size; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (s[i])
		buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
	buf[i] = 0;
}

/* Choose the clock and check the TSC before trusting it: the one line
 * that says which clock and why. */
static void choose_clock(struct rec *r)
{
	struct clk_inputs in;
	struct clk_choice c;
	clk_inputs_read(&in);
	if (in.override == CLK_OVERRIDE_BAD) {
		char v[48];
		printable(getenv("RINGTRACE_CLOCK"), v, sizeof(v));
		snprintf(r->clock_bad, sizeof(r->clock_bad),
			 "RINGTRACE_CLOCK='%s' is not a clock (tsc or monotonic): choosing as if unset", v);
	}
	clk_decide(&in, &c);
	int k = 0;
	if (c.clock == RINGTRACE__CLOCK_TSC) {
		k = clk_check_tsc(20, &r->check);
		in.check = k == 0 && r->check.passed ? CLK_CHECK_PASSED : CLK_CHECK_FAILED;
		clk_decide(&in, &c);
	}
	r->clock = c.clock;
	if (in.check == CLK_CHECK_PASSED && r->check.ncpus < 2)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (one CPU)", c.why);
	else if (in.check == CLK_CHECK_PASSED)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s, skew <= %llu ns", c.why,
			 (unsigned long long)r->check.skew_ns);
	else if (in.check == CLK_CHECK_FAILED && r->check.forced)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (RINGTRACE_CLOCK_CHECK=fail)", c.why);
	else if (in.check == CLK_CHECK_FAILED && k < 0)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (%s)", c.why, strerror(-k));
	else if (in.check == CLK_CHECK_FAILED)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (a reading went back %llu ns from CPU %d on CPU %d)",
			 c.why, (unsigned long long)r->check.back_ns, r->check.back_from, r->check.back_to);
	else
		snprintf(r->clock_why, sizeof(r->clock_why), "%s", c.why);
	r->watch.every_ms = 1000;
	r->watch.last_ms = mono_ms();
	/* Tests only: CLOCK_MONOTONIC steps by this much against the TSC
	 * from the second periodic sample on, as a migrated VM's would. */
	const char *tj = getenv("RINGTRACE_CLOCK_TEST_JUMP_NS");
	if (tj)
		r->watch.test_jump_ns = strtoll(tj, NULL, 10);
}

/* Once the recording runs (bad input stays one line): the clock and why. */
static void say_clock(const struct rec *r)
{
	if (r->clock_bad[0])
		fprintf(stderr, PFX "%s\n", r->clock_bad);
	fprintf(stderr, PFX "clock %s\n", r->clock_why);
}

/* The end of the recording, c1 its last sample: did the TSC keep to
 * CLOCK_MONOTONIC? (Drift in ppm, and the size of any jump.) */
static void clock_drift_end(struct rec *r, const struct clk_sample *c1)
{
	if (r->clock != RINGTRACE__CLOCK_TSC)
		return;
	size_t n = clk_watch_end(&r->watch, &r->c0, c1, &r->drift);
	/* A drift needs two intervals: "" for a recording under 2 s. */
	if (n >= 3)
		snprintf(r->drift_str, sizeof(r->drift_str), "%.3f", r->drift.drift_ppm);
}

/* ---- metadata ---------------------------------------------------------- */

static int write_metadata(struct rec *r, int final)
{
	struct clk_sample c1;
	struct clk_calib cal;
	if (final) {
		/* Calibrate over at least 50 ms. */
		clk_sample(r->clock, &c1);
		if (c1.mono_ns - r->c0.mono_ns < 50000000u) {
			uint64_t rest = 50000000u - (c1.mono_ns - r->c0.mono_ns);
			struct timespec ts = { 0, (long)rest };
			nanosleep(&ts, NULL);
			clk_sample(r->clock, &c1);
		}
		clock_drift_end(r, &c1);
	} else {
		clk_sample(r->clock, &c1);
	}
	clk_calibrate(r->clock, &r->c0, &c1, &cal);

	struct ctf_event_class *ev = calloc(r->nevents ? r->nevents : 1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	for (size_t i = 0; i < r->nevents; i++) {
		ev[i].id = r->events[i].id;
		ev[i].provider = r->events[i].provider;
		ev[i].name = r->events[i].name;
		ev[i].signature = r->events[i].signature;
	}
	char host[256] = "localhost";
	gethostname(host, sizeof(host) - 1);
	const char *procname = strrchr(r->progname, '/');
	procname = procname ? procname + 1 : r->progname;
	struct ctf_thread_name *threads = thread_names(r);
	struct ctf_env_kv env[] = {
		{ "ringtrace_mode", r->mode == RINGTRACE__MODE_OVERWRITE ? "overwrite" : "discard", 0 },
		{ "ringtrace_clock", r->clock == RINGTRACE__CLOCK_TSC ? "tsc" : "monotonic", 0 },
		/* Why that clock, what the checks measured ("" and 0 when not
		 * measured: -p, or the recording has not ended). */
		{ "ringtrace_clock_reason", r->clock_why, 0 },
		{ "ringtrace_clock_skew_ns", NULL, (int64_t)r->check.skew_ns },
		{ "ringtrace_clock_drift_ppm", r->drift_str, 0 },
		{ "ringtrace_clock_jump_ns", NULL, (int64_t)r->drift.jump_ns },
		{ "ringtrace_rseq", NULL, r->rb->hdr->use_rseq },
		{ "ringtrace_subbuf_size", NULL, (int64_t)(r->rb->sb_mask + 1) },
		{ "ringtrace_subbuf_count", NULL, (int64_t)r->nsb },
		/* Only final once the recording has ended. */
		{ "ringtrace_lost_full", NULL, (int64_t)r->lost_full },
		{ "ringtrace_lost_overwrite", NULL, (int64_t)r->lost_overwrite },
		{ "ringtrace_lost_too_big", NULL, (int64_t)r->lost_too_big },
		{ "ringtrace_lost_no_rseq", NULL, (int64_t)r->lost_nocpu },
		{ "ringtrace_lost_crash", NULL, (int64_t)r->lost_crash },
		/* Events the recorder took but could not write (disk full):
		 * the trace is cut; why, in a few words. */
		{ "ringtrace_lost_unwritten", NULL, (int64_t)r->unwritten_total },
		{ "ringtrace_write_error", r->write_errno ? strerror(r->write_errno) : "", 0 },
		/* Attached to a running program: packet numbers and discarded
		 * counts do not start at 0, and that is no loss. */
		{ "ringtrace_attached", NULL, r->attach_spec ? 1 : 0 },
		/* Snapshots only (0 and "" otherwise). */
		{ "ringtrace_snapshot", NULL, (int64_t)r->snap_no },
		{ "ringtrace_snapshot_trigger", r->snap_trigger ? r->snap_trigger : "", 0 },
		{ "ringtrace_snapshot_time", r->snap_time, 0 },
		/* A followed process only (the last two): how it came, from whom. */
		{ "ringtrace_follow", r->follow_kind ? r->follow_kind : "", 0 },
		{ "ringtrace_parent_vpid", NULL, (int64_t)r->follow_ppid },
	};
	struct ctf_trace_desc t = { 0 };
	memcpy(t.uuid, r->uuid, 16);
	t.clock.freq = cal.freq;
	t.clock.offset_s = cal.offset_s;
	t.clock.offset = cal.offset;
	memcpy(t.clock.uuid, r->uuid, 16);
	t.clock.description = r->clock == RINGTRACE__CLOCK_TSC
				      ? "TSC calibrated against CLOCK_MONOTONIC, offset to the epoch"
				      : "CLOCK_MONOTONIC, offset to the epoch";
	t.hostname = host;
	t.procname = procname;
	t.tracer_version = RINGTRACE_VERSION;
	t.threads = threads;
	t.n_threads = threads ? r->nthreads : 0;
	t.vpid = r->child;
	size_t n_env = sizeof(env) / sizeof(env[0]) - (r->follow_kind ? 0 : 2);
	struct ctf_env_kv *all = NULL;
	char (*keys)[48] = NULL;
	if (final && !r->meta_mem) {
		/* Per stream, what the trace must account for: the events its
		 * program tried to write, and those the recorder lost after
		 * the buffer (not written; unreadable after a crash). A
		 * checker then proves, from the trace alone, events +
		 * events_discarded + these == written. Attached to a running
		 * program, the ring's counts began before the recording: no
		 * written count then. */
		uint32_t ncpus = r->rb->ncpus;
		all = calloc(n_env + 4 * (size_t)ncpus, sizeof(*all));
		keys = calloc(4 * (size_t)ncpus, sizeof(*keys));
		if (!all || !keys) {
			free(all);
			free(keys);
			free(threads);
			free(ev);
			return -ENOMEM;
		}
		memcpy(all, env, n_env * sizeof(*all));
		size_t k = 0;
		for (uint32_t c = 0; c < ncpus; c++) {
			uint64_t written = rb_cpu_written(&r->rb->cpu[c], r->nsb);
			uint64_t crash = rb_reader_cpu_lost(r->reader, c);
			uint64_t unwritten = r->unwritten ? r->unwritten[c] : 0;
			/* Losses the ring counted after the last packet written
			 * (in packets not written, or after the last one): no
			 * packet of the trace shows them. Attached, the counter
			 * did not start at 0: only after a packet. */
			uint64_t after = 0;
			if (r->disc_written && (r->wrote[c] || !r->attach_spec)) {
				uint64_t d = rb_cpu_discarded(r->rb->cpu[c].ctl);
				if (d > r->disc_written[c])
					after = d - r->disc_written[c];
			}
			if ((written == 0 || r->attach_spec) && unwritten == 0 && crash == 0 && after == 0)
				continue;
			if (!r->attach_spec) {
				snprintf(keys[k], sizeof(keys[k]), "ringtrace_stream_%u_written", c);
				all[n_env++] = (struct ctf_env_kv){ keys[k++], NULL, (int64_t)written };
			}
			if (unwritten) {
				snprintf(keys[k], sizeof(keys[k]), "ringtrace_stream_%u_lost_unwritten", c);
				all[n_env++] = (struct ctf_env_kv){ keys[k++], NULL, (int64_t)unwritten };
			}
			if (after) {
				snprintf(keys[k], sizeof(keys[k]), "ringtrace_stream_%u_discarded_after", c);
				all[n_env++] = (struct ctf_env_kv){ keys[k++], NULL, (int64_t)after };
			}
			if (crash) {
				snprintf(keys[k], sizeof(keys[k]), "ringtrace_stream_%u_lost_crash", c);
				all[n_env++] = (struct ctf_env_kv){ keys[k++], NULL, (int64_t)crash };
			}
		}
	}
	t.env = all ? all : env;
	t.n_env = n_env;
	t.events = ev;
	t.n_events = r->nevents;

	if (r->meta_mem) {
		/* `show`: the text, in memory. */
		int ret = ctf_metadata_write(r->meta_mem, &t);
		free(all);
		free(keys);
		free(threads);
		free(ev);
		r->reg_changed = 0;
		return ret;
	}
	/* Rewritten as the registry grows: a new file under a random name,
	 * renamed over the old one, so a reader never sees half of it. */
	struct outdir_tmp tf;
	FILE *f = NULL;
	int ret = outdir_tmp_open(&tf, r->odfd, "metadata", 0644);
	if (ret == 0 && !(f = outdir_tmp_fdopen(&tf, "w")))
		ret = -errno;
	if (f)
		ret = ctf_metadata_write(f, &t);
	/* Its size, for the room kept for the last one (disk_room.h). */
	long bytes = f && ret == 0 ? ftell(f) : -1;
	if (ret == 0)
		ret = outdir_tmp_commit(&tf, 0);
	else if (tf.fd >= 0 || tf.f)
		outdir_tmp_abort(&tf);
	if (ret == 0 && bytes > 0)
		r->meta_bytes = (uint64_t)bytes;
	if (ret < 0)
		fprintf(stderr, PFX "cannot write '%s/metadata': %s\n", r->outdir, strerror(-ret));
	else if (!final && r->room_tried)
		keep_room(r); /* the metadata may have grown */
	free(all);
	free(keys);
	free(threads);
	free(ev);
	r->reg_changed = 0;
	return ret;
}

/* One descriptor per CPU stream, none open yet. 0, or -1 (no memory). */
static int alloc_stream_fds(struct rec *r)
{
	r->fds = malloc(r->rb->ncpus * sizeof(int));
	r->unwritten = calloc(r->rb->ncpus, sizeof(*r->unwritten));
	r->disc_written = calloc(r->rb->ncpus, sizeof(*r->disc_written));
	r->wrote = calloc(r->rb->ncpus, 1);
	if (!r->fds || !r->unwritten || !r->disc_written || !r->wrote) {
		free(r->fds);
		r->fds = NULL;
		return -1;
	}
	for (uint32_t c = 0; c < r->rb->ncpus; c++)
		r->fds[c] = -1;
	return 0;
}

/* Read a region written before we came (a live program's, a held
 * snapshot, a recovered one): the reader from its oldest untaken
 * sub-buffer, and the trace's parameters from its header. */
static int reader_from_region(struct rec *r)
{
	int k = rb_reader_new(r->rb, &r->reader);
	if (k < 0)
		return k;
	rb_reader_seek_oldest(r->reader);
	r->mode = r->rb->mode;
	r->nsb = 1u << r->rb->nsb_shift;
	r->clock = r->rb->hdr->clock;
	memcpy(r->uuid, r->rb->hdr->uuid, sizeof(r->uuid));
	clk_sample(r->clock, &r->c0);
	/* The program chose (on the CPU's word, unchecked); the recorder
	 * still watches the TSC against CLOCK_MONOTONIC from now on. */
	if (!r->clock_why[0])
		snprintf(r->clock_why, sizeof(r->clock_why), "%s: as the program chose",
			 r->clock == RINGTRACE__CLOCK_TSC ? "tsc" : "monotonic");
	r->watch.every_ms = 1000;
	r->watch.last_ms = mono_ms();
	return 0;
}

/* ---- the run ------------------------------------------------------------ */

static void follow_env(const struct rec *r);

static int start_child(struct rec *r)
{
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		fprintf(stderr, PFX "pipe: %s\n", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, PFX "fork: %s\n", strerror(errno));
		close(errpipe[0]);
		close(errpipe[1]);
		return -1;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		char env[32];
		snprintf(env, sizeof(env), "fd:%d", r->shm_fd);
		/* The one descriptor the program inherits on purpose. */
		fcntl(r->shm_fd, F_SETFD, 0);
		setenv("RINGTRACE_SHM", env, 1);
		/* The buffers are the program's to swap (flight_start() in
		 * src/lib/agent.c). */
		if (r->flight) {
			setenv("RINGTRACE_FLIGHT", "1", 1);
			if (r->snap_on)
				setenv("RINGTRACE_SNAPSHOT_ON", r->snap_on, 1);
			if (r->min_interval)
				setenv("RINGTRACE_SNAPSHOT_INTERVAL", r->min_interval, 1);
		}
		if (r->memtrace) {
			/* First, so that its definitions come before the
			 * allocator's (which RTLD_NEXT then finds). */
			const char *old = getenv("LD_PRELOAD");
			char pre[PATH_MAX + 4096];
			snprintf(pre, sizeof(pre), "%s%s%s", r->memlib, old && *old ? ":" : "", old ? old : "");
			setenv("LD_PRELOAD", pre, 1);
			setenv("RINGTRACE_MEM", "1", 1);
		}
		if (r->follow)
			follow_env(r);
		if (r->aggregate && r->agg_fd >= 0) {
			char agg[32];
			snprintf(agg, sizeof(agg), "fd:%d", r->agg_fd);
			fcntl(r->agg_fd, F_SETFD, 0);
			setenv("RINGTRACE_MEM_AGG", agg, 1);
		}
		execvp(r->argv[0], r->argv);
		int e = errno;
		if (write(errpipe[1], &e, sizeof(e)) < 0) {
			/* the parent sees EOF and a 127 status */
		}
		_exit(127);
	}
	close(errpipe[1]);
	int e = 0;
	ssize_t k;
	do
		k = read(errpipe[0], &e, sizeof(e));
	while (k < 0 && errno == EINTR);
	close(errpipe[0]);
	if (k == (ssize_t)sizeof(e)) {
		fprintf(stderr, PFX "cannot run '%s': %s\n", r->argv[0], strerror(e));
		waitpid(pid, NULL, 0);
		/* As shells do: 127 not found, 126 found but not runnable. */
		return e == ENOENT || e == ENOTDIR ? -127 : -126;
	}
	r->child = pid;
	child_pid_for_signal = pid;
	return 0;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void cleanup(struct rec *r)
{
	if (r->fds) {
		for (uint32_t c = 0; r->rb && c < r->rb->ncpus; c++)
			if (r->fds[c] >= 0)
				close(r->fds[c]);
		free(r->fds);
	}
	clk_watch_free(&r->watch);
	free(r->unwritten);
	free(r->disc_written);
	free(r->wrote);
	if (r->outdir)
		disk_room_release(&r->room, r->odfd);
	rb_reader_free(r->reader);
	if (r->rb)
		rb_view_free(r->rb);
	if (r->mem)
		munmap(r->mem, r->mem_size);
	if (r->shm_path) {
		unlink(r->shm_path);
		free(r->shm_path);
	}
	if (r->shm_fd >= 0)
		close(r->shm_fd);
	for (size_t i = 0; i < r->nevents; i++) {
		free(r->events[i].provider);
		free(r->events[i].name);
		free(r->events[i].signature);
		free(r->events[i].fields);
	}
	free(r->events);
	free(r->threads);
	if (r->outdir)
		close(r->odfd);
	free(r->outdir);
	ctl_close(&r->ctl);
}

/* Loss counters of every CPU, summed: full, overwritten, too big, no rseq. */
static void lost_counts(const struct ringtrace__rb *rb, uint64_t v[4])
{
	v[0] = v[1] = v[2] = v[3] = 0;
	for (uint32_t c = 0; c < rb->ncpus; c++) {
		const struct ringtrace__rb_cpu *cc = rb->cpu[c].ctl;
		v[0] += __atomic_load_n(&cc->lost_full, __ATOMIC_RELAXED);
		v[1] += __atomic_load_n(&cc->lost_overwrite, __ATOMIC_RELAXED);
		v[2] += __atomic_load_n(&cc->lost_too_big, __ATOMIC_RELAXED);
		v[3] += __atomic_load_n(&cc->lost_nocpu, __ATOMIC_RELAXED);
	}
}

/* One round of the recorder: new registry entries, the closed sub-buffers
 * (at most nsb per CPU), thread names every 50 ms, metadata at most every
 * second when events were added. Returns the sub-buffers taken. */
static unsigned record_round(struct rec *r)
{
	read_registry(r);
	unsigned got = consume(r, r->nsb);
	uint64_t now = mono_ms();
	if (r->clock == RINGTRACE__CLOCK_TSC)
		clk_watch_tick(&r->watch, r->clock, &r->c0, now);
	if (now - r->last_scan >= 50) {
		scan_threads(r);
		r->last_scan = now;
	}
	if (r->reg_changed && now - r->last_meta >= 1000) {
		write_metadata(r, 0);
		r->last_meta = now;
	}
	return got;
}

/* Write what is left, the metadata and the summary line. `salvage`: no
 * writer can run any more (the program exited, or tracing is off for good):
 * take the open sub-buffers too. */
/*
 * Save the region's stack map and object log under DIR/stacks, so that
 * every stack id of the trace resolves (stack_files.h). Nothing is saved
 * when no stack was captured. Returns 0, or -1 after a message.
 */
static int save_stacks(struct rec *r)
{
	void *log, *mem;
	size_t log_size, size;
	if (rb_stack_area(r->rb, &log, &log_size, &mem, &size) < 0)
		return 0;
	/* Opened as a reader: nothing of ours inserts. */
	struct stackmap map;
	struct stackmap_stat st;
	int k = stackmap_open(mem, size, &map);
	if (k == 0)
		k = stackmap_stat(&map, &st);
	if (k < 0) {
		fprintf(stderr, PFX "the program's stack map is damaged (%s): stacks not saved\n", strerror(-k));
		return -1;
	}
	/* An allocation trace keeps the objects even without stacks: its
	 * call sites are symbolised with them. */
	if (st.entries == 0 && st.drops == 0 && !r->memtrace)
		return 0;
	struct rt_map *maps = NULL;
	size_t nmaps = 0;
	if (maplog_copy(log, log_size, &maps, &nmaps) < 0)
		fprintf(stderr, PFX "the program's list of loaded objects is damaged: stacks will print as addresses\n");
	k = stack_files_write_at(r->odfd, &map, maps, nmaps);
	free(maps);
	if (k < 0) {
		fprintf(stderr, PFX "cannot write the stacks into '%s/stacks': %s\n", r->outdir, strerror(-k));
		return -1;
	}
	if (st.drops)
		fprintf(stderr, PFX "the stack map was full: %llu stacks were recorded in full in their events (--stack-bits)\n",
			(unsigned long long)st.drops);
	return 0;
}

static void finish(struct rec *r, int salvage)
{
	read_registry(r);
	consume(r, 0);
	uint64_t end_ts = ringtrace__now(r->rb);
	struct rb_packet pkt;
	for (uint32_t c = 0; salvage && c < r->rb->ncpus; c++)
		while (rb_reader_salvage(r->reader, c, payload_size, r, end_ts, &pkt) > 0)
			write_packet(r, &pkt);

	if (!r->rb->hdr->attached_pid)
		fprintf(stderr, PFX "'%s' did not load libringtrace: nothing was traced\n", r->progname);
	uint64_t lost[4];
	lost_counts(r->rb, lost);
	/* Attached to a live program: only what was lost while we recorded. */
	r->lost_full = lost[0] - r->lost0[0];
	r->lost_overwrite = lost[1] - r->lost0[1];
	r->lost_too_big = lost[2] - r->lost0[2];
	r->lost_nocpu = lost[3] - r->lost0[3];
	struct rb_reader_stats st;
	rb_reader_stats(r->reader, &st);
	/* Committed but unreadable: cut off after a record its writer never
	 * finished, or in a sub-buffer whose header never got written. */
	r->lost_crash = st.crash_lost + st.corrupt_events;
	/* A followed process that did nothing (a child that exec'ed at
	 * once): no trace, the caller says so. */
	if (r->follow_kind && st.events == 0 && r->lost_full + r->lost_overwrite + r->lost_too_big +
	    r->lost_nocpu + r->lost_crash == 0) {
		r->follow_empty = 1;
		return;
	}
	/* The room held for this (disk_room.h), given back just in time. */
	disk_room_release(&r->room, r->odfd);
	int meta_ok = write_metadata(r, 1) == 0;
	if (save_stacks(r) < 0)
		r->write_failed = 1;
	if (r->aggregate && r->agg_fd >= 0 && agg_save(r->agg_fd, r->odfd, r->outdir) < 0)
		r->write_failed = 1;

	char extra[256] = "";
	if (r->lost_nocpu)
		snprintf(extra, sizeof(extra), ", %llu from threads without rseq",
			 (unsigned long long)r->lost_nocpu);
	if (r->lost_crash)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
			 ", %llu committed but cut off by the crash", (unsigned long long)r->lost_crash);
	if (r->unwritten_total)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), ", %llu not written: %s",
			 (unsigned long long)r->unwritten_total,
			 r->write_errno == ENOSPC ? "disk full" : strerror(r->write_errno));
	/* Recorded: in the trace. Taken from the buffers but not written
	 * counts as lost. */
	fprintf(stderr,
		PFX "%llu events recorded, %llu lost (%llu buffer full, %llu overwritten, %llu too big%s), %llu bytes written to %s%s\n",
		(unsigned long long)(st.events - r->unwritten_total),
		(unsigned long long)(r->lost_full + r->lost_overwrite + r->lost_too_big + r->lost_nocpu + r->lost_crash +
				     r->unwritten_total),
		(unsigned long long)r->lost_full, (unsigned long long)r->lost_overwrite,
		(unsigned long long)r->lost_too_big, extra, (unsigned long long)r->bytes, r->outdir,
		(meta_ok && !r->write_failed) ? "" : " (INCOMPLETE)");
	if (r->rb->hdr->reg_dropped)
		fprintf(stderr, PFX "%u event descriptions did not fit in the registry\n", r->rb->hdr->reg_dropped);
	if (r->drift.jump_ns)
		fprintf(stderr, PFX "the TSC jumped %llu ns against CLOCK_MONOTONIC during the recording (a migrated VM?): event times are off by up to that (ringtrace_clock_jump_ns)\n",
			(unsigned long long)r->drift.jump_ns);

}

static int record_attach(struct rec *r);
static int follow_begin(struct rec *r);
static void follow_end(struct rec *r, unsigned linger_ms);
static void follow_reap(pid_t keep);
static int record_flight(struct rec *r);

static int record_attach_snapshot(struct rec *r);

int cmd_record(int argc, char **argv)
{
	struct rec r = { 0 };
	int status = 2;
	r.shm_fd = -1;
	r.agg_fd = -1;

	if (parse_args(&r, argc, argv) < 0)
		return 2;
	if (r.attach_spec)
		return r.snapshot ? record_attach_snapshot(&r) : record_attach(&r);

	struct rb_params p = { 0 };
	p.ncpus = rb_possible_cpus();
	p.sb_size = r.buf_size / r.nsb;
	p.nsb = r.nsb;
	p.mode = r.mode;
	choose_clock(&r);
	p.clock = r.clock;
	p.reg_size = RB_DEFAULT_REG;
	/* Always a stack area (sparse until used): events declared with a
	 * stack need it even without --stacks. */
	p.stack_bits = r.stack_bits ? r.stack_bits : STACKMAP_BITS_DEFAULT;
	p.stacks = (uint32_t)r.stacks;
	if (getrandom(r.uuid, sizeof(r.uuid), 0) != sizeof(r.uuid)) {
		uint64_t x = mono_ms() ^ ((uint64_t)getpid() << 32);
		for (int i = 0; i < 16; i++)
			r.uuid[i] = (uint8_t)(x >> (i % 8 * 8)) ^ (uint8_t)i;
	}
	r.uuid[6] = (uint8_t)((r.uuid[6] & 0x0f) | 0x40); /* version 4 */
	r.uuid[8] = (uint8_t)((r.uuid[8] & 0x3f) | 0x80);
	memcpy(p.uuid, r.uuid, 16);
	memcpy(p.patterns, r.patterns, sizeof(p.patterns));

	if (make_outdir(&r) < 0)
		return 2;
	r.shm_fd = -1;
	if (r.aggregate && (r.agg_fd = agg_create(r.stacks)) < 0)
		return 2;
	int k = rb_shm_create(rb_shm_dir(), &p, &r.shm_path, &r.shm_fd, &r.mem, &r.mem_size);
	if (k < 0) {
		fprintf(stderr, PFX "cannot create the shared-memory buffers in %s: %s\n", rb_shm_dir(),
			strerror(-k));
		goto fail_dir;
	}
	/* The program gets the region as an inherited descriptor: the name is
	 * not needed, and nothing stays behind whatever happens to us. */
	unlink(r.shm_path);
	free(r.shm_path);
	r.shm_path = NULL;
	if ((k = rb_view_open(r.mem, r.mem_size, &r.rb)) < 0 || (k = rb_reader_new(r.rb, &r.reader)) < 0) {
		fprintf(stderr, PFX "cannot use the shared-memory buffers: %s\n", strerror(-k));
		goto fail_dir;
	}
	if (alloc_stream_fds(&r) < 0)
		goto fail_dir;

	struct sigaction sa = { 0 };
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_chld; /* no SA_RESTART: it interrupts the futex wait */
	sigaction(SIGCHLD, &sa, NULL);
	/* Ctrl-C reaches the program too (same process group); the recorder
	 * stays to save what the program wrote until it exits. */
	signal(SIGINT, SIG_IGN);

	clk_sample(r.clock, &r.c0);
	if (r.flight)
		return record_flight(&r);
	if ((r.follow_fork || r.follow_exec) && follow_begin(&r) < 0)
		goto fail_dir;
	if ((k = start_child(&r)) < 0) {
		status = k < -1 ? -k : 2;
		follow_end(&r, 0);
		goto fail_dir;
	}
	say_clock(&r);
	fprintf(stderr, PFX "recording '%s' (pid %d) to %s\n", r.argv[0], (int)r.child, r.outdir);

	int wstatus = 0, exited = 0;
	for (;;) {
		unsigned got = record_round(&r);
		siginfo_t si = { 0 };
		if (r.follow)
			follow_reap(exited ? 0 : r.child);
		/* WNOWAIT: a zombie's /proc entry still names its main thread. */
		if (!exited && waitid(P_PID, (id_t)r.child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == r.child) {
			scan_threads(&r);
			waitpid(r.child, &wstatus, 0);
			exited = 1;
		}
		/* Done when no writer can be left: the program, and the process
		 * that attached if that is another one. */
		if (exited && !attached_alive(&r))
			break;
		if (got == 0 || exited)
			rb_reader_wait(r.reader, exited ? 20 : 100);
	}
	child_pid_for_signal = 0;
	/* A program killed by a signal leaves its control block behind. */
	ctl_remove_if_stale(r.child);
	if (r.rb->hdr->attached_pid && (pid_t)r.rb->hdr->attached_pid != r.child)
		ctl_remove_if_stale((pid_t)r.rb->hdr->attached_pid);

	finish(&r, 1);
	/* Then every followed process, until the last one has exited. */
	follow_end(&r, 200);

	if (WIFEXITED(wstatus))
		status = WEXITSTATUS(wstatus);
	else if (WIFSIGNALED(wstatus))
		status = 128 + WTERMSIG(wstatus);
	cleanup(&r);
	return status;

fail_dir:
	if (r.outdir && r.outdir_created && dir_is_empty(r.outdir))
		rmdir(r.outdir);
	cleanup(&r);
	return status;
}

/* ---- record -p: attach to a running program ------------------------------- */

static int attached_process_alive(const struct rec *r)
{
	if (kill(r->child, 0) < 0 && errno == ESRCH)
		return 0;
	return !ctl_is_stale(r->ctl.b);
}

static void release_reader(struct rec *r)
{
	if (!r->reader_claimed)
		return;
	ctl_ring_release_reader(r->rb);
	r->reader_claimed = 0;
}

/* Open the program named by r->attach_spec, switch tracing on if it is
 * off, map its buffers and become their reader. Prints its errors. */
/* Open the control block of the program named by r->attach_spec; Ctrl-C,
 * SIGTERM and SIGHUP set got_term from now on. Prints its errors. */
static int live_open(struct rec *r, const char *pfx)
{
	char err[512];
	pid_t pid;
	if (ctl_resolve(r->attach_spec, &pid, err, sizeof(err)) < 0 || ctl_open(pid, &r->ctl, CTL_OPEN_WRITE, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s%s\n", pfx, err);
		return -1;
	}
	r->child = pid;
	memcpy(r->comm, r->ctl.b->comm, sizeof(r->ctl.b->comm));
	r->comm[sizeof(r->ctl.b->comm)] = 0;
	r->progname = r->comm;

	struct sigaction sa = { 0 };
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int live_attach(struct rec *r, const char *pfx)
{
	char err[512], msg[CTL_MSG];
	if (live_open(r, pfx) < 0)
		return -1;
	pid_t pid = r->child;
	if (!__atomic_load_n(&r->ctl.b->tracing, __ATOMIC_ACQUIRE)) {
		int k = ctl_request(&r->ctl, CTL_OP_ON, 0, 0, NULL, 0, 5000, msg, sizeof(msg));
		if (k < 0) {
			fprintf(stderr, "%scannot switch tracing on in process %d: %s\n", pfx, (int)pid,
				*msg ? msg : strerror(-k));
			return -1;
		}
		r->turned_on = 1;
	}
	struct ctl_ring ring;
	if (ctl_ring_open(&r->ctl, &ring, err, sizeof(err)) < 0) {
		fprintf(stderr, "%sprocess %d: %s\n", pfx, (int)pid, err);
		return -1;
	}
	r->mem = ring.mem;
	r->mem_size = ring.size;
	r->rb = ring.rb;
	if (ctl_ring_claim_reader(r->rb, err, sizeof(err)) < 0) {
		fprintf(stderr, "%sprocess %d: %s\n", pfx, (int)pid, err);
		return -1;
	}
	r->reader_claimed = 1;
	int k = reader_from_region(r);
	if (k < 0) {
		fprintf(stderr, "%s%s\n", pfx, strerror(-k));
		return -1;
	}
	lost_counts(r->rb, r->lost0);
	return 0;
}

/* Give the reader's place back; if we switched tracing on, switch it off
 * and free the buffers: the program is left as we found it. */
static void live_detach(struct rec *r, const char *pfx)
{
	char msg[CTL_MSG];
	release_reader(r);
	if (r->turned_on && r->ctl.b && attached_process_alive(r)) {
		int k = ctl_request(&r->ctl, CTL_OP_OFF, 1, 0, NULL, 0, 5000, msg, sizeof(msg));
		if (k < 0 && attached_process_alive(r))
			fprintf(stderr, "%scannot switch tracing off in process %d: %s\n", pfx, (int)r->child, msg);
	}
}

static int record_attach(struct rec *r)
{
	char msg[CTL_MSG];
	int status = 1;
	if (live_attach(r, PFX) < 0)
		goto out;
	pid_t pid = r->child;
	if (alloc_stream_fds(r) < 0 || make_outdir(r) < 0)
		goto out;
	fprintf(stderr, PFX "attached to '%s' (pid %d), recording to %s; Ctrl-C detaches\n", r->comm, (int)pid,
		r->outdir);

	int exited = 0;
	while (!got_term) {
		unsigned got = record_round(r);
		if (!attached_process_alive(r)) {
			exited = 1;
			break;
		}
		if (got == 0)
			rb_reader_wait(r->reader, 100);
	}
	if (!exited) {
		/* Close the open sub-buffers so that we take them whole: tracing
		 * pauses for a grace period (and stays off if we turned it on). */
		int k = ctl_request(&r->ctl, CTL_OP_FLUSH, r->turned_on, 0, NULL, 0, 5000, msg, sizeof(msg));
		if (k < 0 && attached_process_alive(r))
			fprintf(stderr, PFX "cannot flush the buffers of process %d: %s\n", (int)pid, msg);
		if (!attached_process_alive(r))
			exited = 1;
	}
	finish(r, exited);
	status = 0;
	if (exited)
		fprintf(stderr, PFX "process %d exited\n", (int)pid);
out:
	live_detach(r, PFX);
	if (status != 0 && r->outdir && r->outdir_created && dir_is_empty(r->outdir))
		rmdir(r->outdir);
	cleanup(r);
	return status;
}

/* ---- --follow-fork, --follow-exec ------------------------------------------ */

/*
 * A followed process (a child the program forks, with --follow-fork; a
 * program it or a followed child executes, with --follow-exec) traces
 * into buffers of its own, allocated with our parameters before it goes
 * on (src/lib/agent.c, follow_start()), and tells us so: a connection
 * to a SOCK_SEQPACKET socket of ours whose abstract name RINGTRACE_FOLLOW
 * gives it, one message on it. One thread accepts them; each followed
 * process then gets a thread that reads the message and does what
 * `record -p` does (control block, buffers mapped through
 * /proc/PID/fd/N, reader claimed), wakes it (it waits for us 1 s at
 * most), and records it into DIR/children/PID-NAME until it exits or
 * execs (the new program is a trace of its own). Its summary line is
 * printed when it ends.
 *
 * Who may ask. The name is visible to everyone (/proc/net/unix) and
 * root may trace any uid, so the name proves nothing: the kernel tells
 * us who connected (SO_PEERCRED), and only a process descended from
 * us (the program, or one of its descendants) is followed. We check
 * that by walking the parent links in /proc/PID/stat up to our own pid.
 * A process whose parent exits is reparented to the nearest "child
 * subreaper" above it, else to init, which would cut the chain: so we
 * make ourselves a subreaper (PR_SET_CHILD_SUBREAPER) and the orphans of
 * the traced tree become our children, still on a chain that ends at us
 * (we reap them, follow_reap()). The uid check stays too: without root,
 * only our user's processes. A notice from anyone else is dropped
 * without a word and counted; the count is reported once, at the end.
 * We do not hand the channel down as an inherited descriptor: programs
 * that close every descriptor (daemons, Python's subprocess) would then
 * lose following, where a pid lineage survives them.
 *
 * The pid a notice names may have been reused by the time we look: the
 * lineage check notes the process's start time, and the session refuses
 * a control block whose process started at another time.
 *
 * Connections, not datagrams: a datagram queue holds
 * net.unix.max_dgram_qlen notices (often 10), and a burst of forks
 * outran it while we were busy starting sessions; connections wait in
 * the listen backlog (net.core.somaxconn, 4096 by default) without us.
 * When even that is full, the child waits for room, within its usual
 * 1 s. A process that asked and could not be followed (it exited before
 * we got to it, say) is counted and named in the summary.
 *
 * The recording ends when the program has exited, no followed process is
 * left, and no process started or ended being followed for a short while
 * (a child forked just before its parent exited may still be on its
 * way). Only genuine followed processes count there: notices that are
 * refused or lead nowhere never keep a recording alive.
 */
struct follow_sess {
	struct follow_sess *next;
	pthread_t th;
	struct follow *f;
	int conn;                    /* its connection, until its notice is read */
	pid_t pid, ppid;
	uint64_t start;              /* its start time when its lineage was checked */
	char kind[8];
};

#define FOLLOW_MAX_DEPTH 4096        /* parent links walked, at most */
#define FOLLOW_NAMED 64              /* processes named in the summary, at most */

struct follow {
	const struct rec *top;       /* the program's recording: options, DIR */
	int fd;                      /* our listening socket */
	char name[64];               /* its abstract name, without the NUL */
	pthread_t th;
	pthread_mutex_t lock;        /* the fields below */
	struct follow_sess *sessions;
	unsigned running;            /* sessions still recording */
	uint64_t last_ms;            /* when the last one started or ended */
	unsigned nlost;              /* descendants that asked but could not be followed */
	pid_t lost[FOLLOW_NAMED];    /* ... the first ones */
	unsigned long long malformed; /* notices from inside that made no sense */
	int stop;
	/* The accepting thread's own (read by follow_end() after the join). */
	unsigned long long refused;  /* notices from outside the traced program */
};

/* In the program's child, before exec: what followed processes record
 * with, and where they say so. */
static void follow_env(const struct rec *r)
{
	char v[256];
	snprintf(v, sizeof(v), "fork=%d exec=%d sb=%llu nsb=%u mode=%u stacks=%d bits=%u sock=%s", r->follow_fork,
		 r->follow_exec, (unsigned long long)(r->buf_size / r->nsb), r->nsb, r->mode, r->stacks,
		 r->stack_bits, r->follow->name);
	setenv("RINGTRACE_FOLLOW", v, 1);
	/* -e patterns, one a line (for exec'ed programs: a forked child
	 * inherits its parent's selection). */
	char ev[sizeof(r->patterns)];
	size_t n = 0;
	for (const char *p = r->patterns; *p && n + strlen(p) + 1 < sizeof(ev); p += strlen(p) + 1)
		n += (size_t)snprintf(ev + n, sizeof(ev) - n, "%s%s", n ? "\n" : "", p);
	ev[n] = 0;
	if (n)
		setenv("RINGTRACE_FOLLOW_EVENTS", ev, 1);
	/* The allocation tracer stays in LD_PRELOAD of executed programs. */
	if (r->memtrace && r->follow_exec)
		setenv("RINGTRACE_MEM_FOLLOW", "1", 1);
}

/* DIR/children/PID-NAME (NAME with characters other than [A-Za-z0-9._-]
 * replaced; -2, -3... when taken: a program that executes one with the
 * same name). 0, or -1 after a message. */
static int follow_outdir(struct rec *r, const struct rec *top)
{
	char name[32], sub[64], path[PATH_MAX], why[256];
	size_t i;
	for (i = 0; r->comm[i] && i < sizeof(name) - 1; i++) {
		unsigned char c = (unsigned char)r->comm[i];
		name[i] = isalnum(c) || c == '.' || c == '_' || c == '-' ? (char)c : '_';
	}
	name[i] = 0;
	/* Inside the top directory, through its descriptor: made by us, so
	 * the ownership checks pass unless someone else got there first. */
	snprintf(path, sizeof(path), "%s/children", top->outdir);
	int cfd = outdir_open(top->odfd, "children", OUTDIR_CREATE, NULL, why, sizeof(why));
	if (cfd < 0) {
		fprintf(stderr, PFX "'%s' %s\n", path, why);
		return -1;
	}
	int fd = -EEXIST;
	for (int n = 1; n < 1000 && fd == -EEXIST; n++) {
		if (n == 1)
			snprintf(sub, sizeof(sub), "%d-%s", (int)r->child, name);
		else
			snprintf(sub, sizeof(sub), "%d-%s-%d", (int)r->child, name, n);
		fd = outdir_open(cfd, sub, OUTDIR_CREATE | OUTDIR_NEW, NULL, why, sizeof(why));
	}
	close(cfd);
	snprintf(path, sizeof(path), "%s/children/%s", top->outdir, sub);
	if (fd < 0) {
		fprintf(stderr, PFX "cannot create '%s': %s\n", path, why);
		return -1;
	}
	r->outdir = strdup(path);
	if (!r->outdir) {
		close(fd);
		return -1;
	}
	r->odfd = fd;
	r->outdir_created = 1;
	return 0;
}

/* A descendant's notice, "RTFOLLOW1 fork|exec PPID", read from its
 * connection (sent right after connecting: 1 s is plenty). 0 or -1. */
static int follow_read_notice(struct follow_sess *s)
{
	char buf[128], kind[8];
	int ppid;
	struct timeval tv = { 1, 0 };
	setsockopt(s->conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ssize_t n = recv(s->conn, buf, sizeof(buf) - 1, 0);
	close(s->conn);
	s->conn = -1;
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "RTFOLLOW1 %7s %d", kind, &ppid) != 2 || (strcmp(kind, "fork") && strcmp(kind, "exec")))
		return -1;
	s->ppid = ppid;
	snprintf(s->kind, sizeof(s->kind), "%s", kind);
	return 0;
}

static void *follow_session(void *arg)
{
	struct follow_sess *s = arg;
	struct follow *f = s->f;
	struct rec rr = { 0 }, *r = &rr;
	char err[512];
	r->shm_fd = -1;
	r->agg_fd = -1;
	int followed = 0, malformed = 0;
	if (follow_read_notice(s) < 0) {
		malformed = 1;
		goto out;
	}
	r->memtrace = f->top->memtrace;
	r->stacks = f->top->stacks;
	r->follow_kind = s->kind;
	r->follow_ppid = s->ppid;
	r->child = s->pid;
	struct ctl_ring ring;
	int k = ctl_open(s->pid, &r->ctl, CTL_OPEN_WRITE, err, sizeof(err));
	if (k < 0) {
		/* Gone already (its wait for us timed out: counted and named
		 * at the end), or untraceable. */
		if (k != -ESRCH)
			fprintf(stderr, PFX "cannot follow process %d: %s\n", (int)s->pid, err);
		goto out;
	}
	if (r->ctl.b->start_time != s->start) {
		/* Not the process whose lineage we checked: its pid was reused. */
		goto out;
	}
	if (ctl_ring_open(&r->ctl, &ring, err, sizeof(err)) < 0) {
		if (kill(s->pid, 0) == 0)
			fprintf(stderr, PFX "cannot follow process %d: %s\n", (int)s->pid, err);
		goto out;
	}
	memcpy(r->comm, r->ctl.b->comm, sizeof(r->ctl.b->comm));
	r->comm[sizeof(r->ctl.b->comm)] = 0;
	r->progname = r->comm;
	r->mem = ring.mem;
	r->mem_size = ring.size;
	r->rb = ring.rb;
	if (ctl_ring_claim_reader(r->rb, err, sizeof(err)) < 0) {
		fprintf(stderr, PFX "cannot follow process %d: %s\n", (int)s->pid, err);
		goto out;
	}
	r->reader_claimed = 1;
	/* Pairs with the acquire load in follow_start(): it goes on now. */
	ctl_futex(&r->rb->hdr->reader_pid, FUTEX_WAKE, INT_MAX, NULL);
	k = reader_from_region(r);
	if (k < 0) {
		fprintf(stderr, PFX "cannot follow process %d: %s\n", (int)s->pid, strerror(-k));
		goto out;
	}
	if (alloc_stream_fds(r) < 0 || follow_outdir(r, f->top) < 0)
		goto out;
	followed = 1;
	pthread_mutex_lock(&f->lock);
	f->last_ms = mono_ms();
	pthread_mutex_unlock(&f->lock);
	/* Its buffers are its own, fresh: every loss counted in them is a
	 * loss of this recording. */
	for (;;) {
		unsigned got = record_round(r);
		if (!attached_process_alive(r))
			break;
		if (got == 0)
			rb_reader_wait(r->reader, 100);
	}
	finish(r, 1);
	if (r->follow_empty) {
		unlinkat(r->odfd, "metadata", 0);
		if (rmdir(r->outdir) == 0)
			fprintf(stderr, PFX "process %d (%s) had no event before it exec'ed or exited: no trace kept\n",
				(int)s->pid, r->comm);
	}
	ctl_remove_if_stale(s->pid);
out:
	release_reader(r);
	cleanup(r);
	pthread_mutex_lock(&f->lock);
	f->running--;
	if (followed)
		f->last_ms = mono_ms();
	else if (malformed)
		f->malformed++;
	else if (f->nlost++ < FOLLOW_NAMED)
		f->lost[f->nlost - 1] = s->pid;
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/*
 * Is pid ours to follow: does its chain of parents reach us? We are a
 * child subreaper (follow_begin()), so a process of the traced tree whose
 * parent exits is reparented to us, not to init, and stays on a chain that
 * ends here. A chain cut under our feet (a process on it exited and was
 * reaped while we read) is read again. 1 if it does (*ret_start is then
 * its start time, read before and after the walk: the pid named the same
 * process all along), 0 if not, -1 if the process is gone (reaped before
 * we looked: nobody can say).
 */
static int follow_descends(pid_t pid, uint64_t *ret_start)
{
	pid_t me = getpid();
	for (int attempt = 0; attempt < 3; attempt++) {
		uint64_t st = ctl_proc_start_time(pid);
		if (st == 0)
			return -1;
		pid_t p = pid;
		int depth = 0;
		while (p != me && p > 1 && depth++ < FOLLOW_MAX_DEPTH)
			p = ctl_proc_ppid(p);
		if (p == me) {
			if (ctl_proc_start_time(pid) != st)
				return 0;
			*ret_start = st;
			return 1;
		}
		if (p != -1)
			return 0; /* init, another namespace's root, or too deep */
	}
	return 0;
}

/* One connection: refused at once unless it comes from the traced
 * program's tree (the kernel names the pid that connected); else a
 * session that reads its notice and follows it. 0, or -1 when none is
 * waiting. */
static int follow_accept(struct follow *f)
{
	int c = accept4(f->fd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return errno == EINTR || errno == ECONNABORTED ? 0 : -1;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	uint64_t start = 0;
	int ours = 0;
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && len == sizeof(cr) && cr.pid > 0 &&
	    (cr.uid == geteuid() || geteuid() == 0))
		ours = follow_descends(cr.pid, &start);
	if (ours < 0) {
		/* Gone before we got to it: a child of a burst that gave up
		 * waiting for us and exited, most likely. Named, not
		 * followed. */
		pthread_mutex_lock(&f->lock);
		if (f->nlost++ < FOLLOW_NAMED)
			f->lost[f->nlost - 1] = cr.pid;
		pthread_mutex_unlock(&f->lock);
		/* Its block, published before it connected, would stay in
		 * /dev/shm if it left with _exit(). */
		ctl_remove_if_stale(cr.pid);
	}
	if (ours <= 0) {
		/* No word per refusal: anyone may connect to the name, as
		 * often as they like. */
		f->refused += ours == 0;
		close(c);
		return 0;
	}
	struct follow_sess *s = calloc(1, sizeof(*s));
	if (!s) {
		close(c);
		return 0;
	}
	s->f = f;
	s->conn = c;
	s->pid = cr.pid;
	s->start = start;
	pthread_mutex_lock(&f->lock);
	/* `running` keeps the recording going until the session knows
	 * whether the process is really followed; only then does it move
	 * last_ms. */
	if (pthread_create(&s->th, NULL, follow_session, s) == 0) {
		s->next = f->sessions;
		f->sessions = s;
		f->running++;
	} else {
		fprintf(stderr, PFX "cannot follow process %d: no thread\n", (int)s->pid);
		if (f->nlost++ < FOLLOW_NAMED)
			f->lost[f->nlost - 1] = s->pid;
		close(c);
		free(s);
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

/* The accepting thread: until told to stop, and then until no
 * connection waits, or after a bounded number (someone who keeps
 * connecting cannot keep us here). All signals blocked (inherited by it
 * and by the sessions: the main thread gets them). */
static void *follow_main(void *arg)
{
	struct follow *f = arg;
	unsigned after_stop = 0;
	for (;;) {
		/* Pairs with the release store in follow_end(). */
		int stop = __atomic_load_n(&f->stop, __ATOMIC_ACQUIRE);
		if (stop && after_stop++ >= 256)
			break;
		struct pollfd pfd = { .fd = f->fd, .events = POLLIN };
		int k = poll(&pfd, 1, stop ? 0 : 50);
		if (k > 0)
			follow_accept(f);
		else if (stop)
			break;
	}
	return NULL;
}

/* The socket and its thread, before the program starts. 0 or -1 after a
 * message. */
static int follow_begin(struct rec *r)
{
	struct follow *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->top = r;
	pthread_mutex_init(&f->lock, NULL);
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)mono_ms();
	snprintf(f->name, sizeof(f->name), "ringtrace-follow-%d-%08x", (int)getpid(), rnd);
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	size_t n = strlen(f->name);
	memcpy(a.sun_path + 1, f->name, n);
	/* Non-blocking: accept4() after poll() must not wait for a
	 * connection someone withdrew. The backlog is capped by
	 * net.core.somaxconn. */
	f->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0 ||
	    listen(f->fd, 4096) < 0) {
		fprintf(stderr, PFX "cannot create the socket followed processes report to: %s\n", strerror(errno));
		goto fail;
	}
	/* Orphans of the traced tree become ours: their lineage stays
	 * checkable (follow_descends()). Without it (it never fails on a
	 * kernel we run on), such an orphan would only be refused. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int k = pthread_create(&f->th, NULL, follow_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (k != 0) {
		fprintf(stderr, PFX "cannot start the thread that follows processes: %s\n", strerror(k));
		goto fail;
	}
	r->follow = f;
	return 0;
fail:
	if (f->fd >= 0)
		close(f->fd);
	pthread_mutex_destroy(&f->lock);
	free(f);
	return -1;
}

/* Reap the orphans of the traced tree, ours since we are their subreaper
 * (follow_begin()), but never `keep` (the program, while the main loop
 * has not reaped it: it reads the zombie's /proc entry first). */
static void follow_reap(pid_t keep)
{
	for (int i = 0; i < 1024; i++) {
		siginfo_t si = { 0 };
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid <= 0 || si.si_pid == keep)
			return;
		waitpid(si.si_pid, NULL, WNOHANG);
	}
}

/* What the summary says about following: once, after every trace. */
static void follow_summary(const struct follow *f)
{
	if (f->refused)
		fprintf(stderr, PFX "refused %llu follow notice%s from processes outside the traced program\n",
			f->refused, f->refused == 1 ? "" : "s");
	if (f->malformed)
		fprintf(stderr, PFX "ignored %llu malformed follow notice%s\n", f->malformed,
			f->malformed == 1 ? "" : "s");
	if (f->nlost) {
		char list[FOLLOW_NAMED * 12 + 64];
		size_t n = 0;
		unsigned named = f->nlost < FOLLOW_NAMED ? f->nlost : FOLLOW_NAMED;
		for (unsigned i = 0; i < named; i++)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", i ? " " : "", (int)f->lost[i]);
		if (f->nlost > named)
			snprintf(list + n, sizeof(list) - n, " and %u more", f->nlost - named);
		fprintf(stderr, PFX "could not follow %u process%s that asked to be: %s\n", f->nlost,
			f->nlost == 1 ? "" : "es", list);
	}
}

/* Wait until no followed process is left and none started or ended for
 * linger_ms (after the program's end too), then stop and free. */
static void follow_end(struct rec *r, unsigned linger_ms)
{
	struct follow *f = r->follow;
	if (!f)
		return;
	uint64_t t0 = mono_ms();
	for (;;) {
		follow_reap(0);
		pthread_mutex_lock(&f->lock);
		uint64_t now = mono_ms();
		int idle = f->running == 0 && now - f->last_ms >= linger_ms && now - t0 >= linger_ms;
		if (idle)
			__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&f->lock);
		if (idle)
			break;
		struct timespec d = { 0, 10 * 1000000L };
		nanosleep(&d, NULL);
	}
	pthread_join(f->th, NULL);
	/* The list is final once the receiver has stopped. */
	while (f->sessions) {
		struct follow_sess *s = f->sessions;
		f->sessions = s->next;
		pthread_join(s->th, NULL);
		/* A session that ended at an exec left the block to the new
		 * image (ctl_remove_if_stale() keeps a running process's);
		 * if that image did not use libringtrace and has exited
		 * since, the block goes now. */
		ctl_remove_if_stale(s->pid);
		free(s);
	}
	follow_reap(0);
	follow_summary(f);
	close(f->fd);
	pthread_mutex_destroy(&f->lock);
	free(f);
	r->follow = NULL;
}

/* ---- snapshot: the buffers of a live program, tracing going on ------------- */

#define SPFX "ringtrace snapshot: "

/*
 * `ringtrace snapshot PID [-o DIR]`: the program swaps its live buffers
 * with its spare ones (CTL_OP_SNAPSHOT; writers go on at once in the
 * spare); we map the old ones, which no probe writes any more, write them
 * out as a trace like `record` does (everything they hold, the open
 * sub-buffers included), then give them back (CTL_OP_SNAP_RELEASE).
 */
/* Where a snapshot goes: path as printed; when `at` is a directory
 * descriptor, the last component of path is made inside it. */
struct snap_dir {
	int at;
	const char *path;
};

/*
 * Write a region of the program open in *h that no probe writes any more
 * (a held snapshot, or the live buffers of a program that died) as a
 * trace in outdir (NULL: the default name). Takes the mapping in *ring.
 * 0, or 1 after a message.
 */
static int write_region(pid_t pid, const char *comm, struct ctl_ring *ring, const struct snap_dir *outdir,
			uint32_t no, const char *trigger, int scan)
{
	struct rec rr = { 0 }, *r = &rr;
	r->shm_fd = -1;
	r->outdir_opt = outdir ? outdir->path : NULL;
	r->outdir_at = outdir ? outdir->at : AT_FDCWD;
	r->outdir_at_set = 1;
	r->child = pid;
	snprintf(r->comm, sizeof(r->comm), "%s", comm);
	r->progname = r->comm;
	r->snap_no = no;
	r->snap_trigger = trigger;
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(r->snap_time, sizeof(r->snap_time), "%Y-%m-%dT%H:%M:%S%z", &tm);
	r->mem = ring->mem;
	r->mem_size = ring->size;
	r->rb = ring->rb;
	memset(ring, 0, sizeof(*ring));
	int status = 1, k;
	if ((k = reader_from_region(r)) < 0) {
		fprintf(stderr, SPFX "%s\n", strerror(-k));
		goto out;
	}
	char name[192];
	if (!outdir) {
		/* make_outdir() adds the date: ringtrace-snapshot-NAME-PID-N-DATE. */
		snprintf(name, sizeof(name), "snapshot-%.16s-%d-%u", r->comm, (int)pid, no);
		r->progname = name;
	}
	if (alloc_stream_fds(r) < 0 || make_outdir(r) < 0)
		goto out;
	r->progname = r->comm;
	if (scan)
		scan_threads(r);
	while (record_round(r) > 0)
		;
	finish(r, 1);
	status = r->write_failed ? 1 : 0;
out:
	if (status != 0 && r->outdir && r->outdir_created && dir_is_empty(r->outdir))
		rmdir(r->outdir);
	cleanup(r);
	return status;
}

/* Is descriptor fdn of process pid the file with this inode? (Descriptor
 * numbers are reused: compare files, not numbers.) */
static int same_file(pid_t pid, int32_t fdn, uint64_t ino)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, (int)fdn);
	return fdn >= 0 && stat(path, &st) == 0 && (uint64_t)st.st_ino == ino;
}

/* Are the program's descriptors out of reach (it is gone, or a zombie)? */
static int proc_fds_gone(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/0", (int)pid);
	struct stat st;
	if (stat(path, &st) == 0)
		return 0;
	return (kill(pid, 0) < 0 && errno == ESRCH) || ctl_proc_state(pid) == 'Z';
}

/*
 * A watcher keeps the program's live buffers mapped (and the spare ones
 * that a snapshot makes live), so that whenever it dies, we hold what it
 * was writing. Both change at every snapshot: follow them. The program's
 * descriptors are reached through /proc while it lives, so this is done
 * as soon as a swap is answered, not after the snapshot is written: a
 * program that asks for a snapshot and exits at once is gone by then.
 */
static void follow_rings(struct ctl_handle *h, struct ctl_ring *live, struct ctl_ring *spare)
{
	char err[512];
	uint32_t sgen = __atomic_load_n(&h->b->spare_gen, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&h->b->snap_state, __ATOMIC_ACQUIRE) == CTL_SNAP_READY &&
	    (!spare->rb || spare->gen != sgen)) {
		ctl_ring_close(spare);
		if (ctl_spare_open(h, spare, err, sizeof(err)) < 0)
			memset(spare, 0, sizeof(*spare));
	}
	uint32_t gen = __atomic_load_n(&h->b->ring_gen, __ATOMIC_ACQUIRE);
	if (!live->rb || live->gen != gen) {
		/* A program that is gone cannot be asked through /proc: its
		 * block names the descriptor of its live buffers, and the
		 * spare is the one that went live if it is that descriptor. */
		if (spare->rb && (same_file(h->pid, h->b->ring_fd, spare->ino) ||
				  (proc_fds_gone(h->pid) && h->b->ring_fd == spare->fdn))) {
			ctl_ring_close(live);
			*live = *spare; /* the spare went live */
			memset(spare, 0, sizeof(*spare));
			live->gen = gen;
		} else {
			ctl_ring_close(live);
			if (ctl_ring_open(h, live, err, sizeof(err)) < 0)
				memset(live, 0, sizeof(*live));
		}
	}
}

/*
 * Did the program swap its buffers once since the watcher mapped `old` as
 * its live ones, for us (no other controller holds the swapped-out ones)?
 * Then `old` maps what the snapshot holds, even if the program is gone.
 */
static int swapped_since(struct ctl_handle *h, const struct ctl_ring *old)
{
	/* Pairs with the program's release stores of snap_state and ring_gen. */
	uint32_t state = __atomic_load_n(&h->b->snap_state, __ATOMIC_ACQUIRE);
	if (state == CTL_SNAP_HELD && h->b->snap_holder != (uint32_t)getpid())
		return 0;
	return old->rb && __atomic_load_n(&h->b->ring_gen, __ATOMIC_ACQUIRE) == old->gen + 1;
}

/* What a watcher learns from snapshot_one(). */
struct snap_watch_out {
	int swapped;     /* the program swapped (if not, what it committed is
			  * still in its live buffers) */
	uint32_t served; /* requests made before the swap: their events are
			  * in this snapshot */
};

/*
 * One snapshot of the program open in *h, written to outdir (NULL: the
 * default name). 0, or 1 after a message. A watcher passes its live and
 * spare mappings (follow_rings()) and `w`, others NULL.
 */

static int snapshot_one(struct ctl_handle *h, const struct snap_dir *outdir, const char *trigger, struct ctl_ring *live,
			struct ctl_ring *spare, struct snap_watch_out *w)
{
	char err[512], msg[CTL_MSG];
	pid_t pid = h->pid;
	int k = ctl_request(h, CTL_OP_SNAPSHOT, (uint64_t)getpid(), 0, NULL, 0, 5000, msg, sizeof(msg));
	/* A program that exits may have swapped and been gone before it
	 * answered: the buffers it swapped out are the snapshot. */
	int late = k < 0 && live && swapped_since(h, live);
	if (k < 0 && !late) {
		fprintf(stderr, SPFX "process %d: %s\n", (int)pid, *msg ? msg : strerror(-k));
		return 1;
	}
	if (k >= 0 && *msg)
		fprintf(stderr, SPFX "%s\n", msg);
	if (w) {
		w->swapped = 1;
		/* Published before the answer (release store of snap_state in
		 * the program): the count of this swap, not of a later one,
		 * since the buffers are ours until we give them back. */
		if (k >= 0)
			w->served = __atomic_load_n(&h->b->snap_served, __ATOMIC_ACQUIRE);
	}
	/* A watcher's mapping of the buffers just swapped out (the held ones,
	 * if no other swap came between), kept until they are written: if
	 * the program exits before we open them through /proc, these are
	 * the snapshot. The live ones are followed at once. */
	struct ctl_ring old = { 0 };
	if (live) {
		old = *live;
		memset(live, 0, sizeof(*live));
		follow_rings(h, live, spare);
	}
	uint32_t no = k >= 0 ? (uint32_t)k : __atomic_load_n(&h->b->snap_count, __ATOMIC_ACQUIRE);
	struct ctl_ring ring;
	int status = 1;
	if (k >= 0 && ctl_snap_open(h, &ring, err, sizeof(err)) == 0)
		status = write_region(pid, h->b->comm, &ring, outdir, no, trigger, kill(pid, 0) == 0);
	else if (swapped_since(h, &old))
		status = write_region(pid, h->b->comm, &old, outdir, no, trigger, 0);
	else
		fprintf(stderr, SPFX "%s\n", k >= 0 ? err : "the buffers it swapped out are out of reach");
	ctl_ring_close(&old);
	/* The program alive or not: a dead one needs nothing back. */
	if (kill(pid, 0) == 0 && !ctl_is_stale(h->b)) {
		k = ctl_request(h, CTL_OP_SNAP_RELEASE, 0, 0, NULL, 0, 5000, msg, sizeof(msg));
		if (k < 0 && kill(pid, 0) == 0)
			fprintf(stderr, SPFX "cannot give the buffers back to process %d: %s\n", (int)pid,
				*msg ? msg : strerror(-k));
	}
	return status;
}

/*
 * Has the program exited (our child: without reaping it)? A process whose
 * main thread has exited while its other threads are still going (its
 * control thread, for one) is not reapable yet: when its main thread is
 * a zombie, wait for the rest of it, a second at most.
 */
static int gone(pid_t pid, pid_t child)
{
	for (int i = 0; i < 100; i++) {
		if (child) {
			siginfo_t si = { 0 };
			if (waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == child)
				return 1;
		} else if (kill(pid, 0) < 0 && errno == ESRCH) {
			return 1;
		}
		if (ctl_proc_state(pid) != 'Z')
			return 0;
		struct timespec d = { 0, 10000000 };
		nanosleep(&d, NULL);
	}
	return 0;
}

/*
 * One watcher serves a program's snapshot requests: two would both take a
 * snapshot at each. Claim the block's watcher field (a dead watcher's pid
 * is taken over). Returns 0, or the live watcher's pid.
 */
static pid_t watch_claim(struct ctl_handle *h)
{
	uint32_t me = (uint32_t)getpid();
	for (;;) {
		uint32_t w = __atomic_load_n(&h->b->watcher, __ATOMIC_ACQUIRE);
		if (w && w != me && (kill((pid_t)w, 0) == 0 || errno != ESRCH))
			return (pid_t)w;
		/* Release: pairs with the acquire load in flight_start(),
		 * which may start the program now. */
		if (__atomic_compare_exchange_n(&h->b->watcher, &w, me, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			ctl_futex(&h->b->watcher, FUTEX_WAKE, INT_MAX, NULL);
			return 0;
		}
	}
}

static void watch_release(struct ctl_handle *h)
{
	uint32_t me = (uint32_t)getpid();
	if (h->b)
		__atomic_compare_exchange_n(&h->b->watcher, &me, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/*
 * Serve the snapshot requests of the program open in *h (ringtrace_snapshot()
 * calls) into outdir/snapshot-N until it exits or *stop is set. Keeps the
 * program's live buffers mapped: if it dies from a signal, what they hold
 * is written to outdir/recovered (post-mortem; committed events are
 * kept). `child`: our child (reaped here, its status in *wstatus), or 0.
 * Returns the number of snapshots that failed.
 */
static int snapshot_watch(struct ctl_handle *h, int odfd, const char *outdir, pid_t child, int *wstatus,
			  volatile sig_atomic_t *stop, struct ctl_ring *initial)
{
	/* The live buffers, and the spare ones mapped before a snapshot makes
	 * them live: whenever the program dies, we hold its current buffers. */
	struct ctl_ring live = { 0 }, spare = { 0 };
	if (initial) {
		live = *initial;
		live.gen = __atomic_load_n(&h->b->ring_gen, __ATOMIC_ACQUIRE);
		live.fdn = h->b->ring_fd;
		memset(initial, 0, sizeof(*initial));
	}
	/* Our child's requests are all ours, those made before we looked
	 * included; another program's earlier requests are not. */
	uint32_t seen = child ? 0 : __atomic_load_n(&h->b->snap_req, __ATOMIC_ACQUIRE);
	uint32_t seen_trig = child ? 0 : __atomic_load_n(&h->b->snap_trig, __ATOMIC_ACQUIRE);
	int failed = 0, signaled = 0, reaped = 0;
	long n = 0;
	for (;;) {
		follow_rings(h, &live, &spare);
		int dead;
		if (child) {
			siginfo_t si = { 0 };
			/* Reaped once: it stays dead. */
			dead = reaped || (waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG) == 0 && si.si_pid == child);
			if (dead && !reaped) {
				reaped = 1;
				*wstatus = si.si_code == CLD_EXITED ? si.si_status << 8 : si.si_status & 0x7f;
				signaled = si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED;
			}
		} else {
			dead = kill(h->pid, 0) < 0 && errno == ESRCH;
			/* A program that exits removes its block; one killed
			 * leaves it. */
			signaled = dead && access(h->path, F_OK) == 0;
		}
		uint32_t req = __atomic_load_n(&h->b->snap_req, __ATOMIC_ACQUIRE);
		if (req != seen) {
			/* Requests that came meanwhile are served by this one. */
			uint32_t nreq = req - seen;
			seen = req;
			/*
			 * Label it with the trigger if one fired since the last.
			 * A trigger counts snap_trig before snap_req (release,
			 * pairs with our acquire load of snap_req), so trig may
			 * already count a trigger whose request we have not
			 * seen yet: take at most as many triggers as requests,
			 * and leave the rest to label the next snapshot.
			 */
			uint32_t trig = __atomic_load_n(&h->b->snap_trig, __ATOMIC_ACQUIRE);
			uint32_t ntrig = trig - seen_trig;
			char label[300];
			if (ntrig)
				snprintf(label, sizeof(label), "%.*s", (int)sizeof(h->b->trigger),
					 h->b->trigger[0] ? h->b->trigger : "trigger");
			else
				snprintf(label, sizeof(label), "ringtrace_snapshot()");
			seen_trig += ntrig < nreq ? ntrig : nreq;
			char dir[PATH_MAX];
			snprintf(dir, sizeof(dir), "%s/snapshot-%ld", outdir, ++n);
			struct snap_dir sd = { odfd, dir };
			struct snap_watch_out w = { 0, seen };
			int k = dead ? 1 : snapshot_one(h, &sd, label, &live, &spare, &w);
			/* Requests made while we were getting to the swap are
			 * served by it (their events are in this snapshot), and
			 * so are their triggers, as many as there are. */
			if ((int32_t)(w.served - seen) > 0) {
				uint32_t extra = w.served - seen;
				seen = w.served;
				uint32_t more = __atomic_load_n(&h->b->snap_trig, __ATOMIC_ACQUIRE) - seen_trig;
				seen_trig += more < extra ? more : extra;
			}
			if (k != 0 && !w.swapped && (dead || gone(h->pid, child))) {
				/* It asked and then exited (or died) before the
				 * swap: what its live buffers hold is the snapshot. */
				snprintf(label + strlen(label), sizeof(label) - strlen(label), ", at exit");
				if (live.rb)
					k = write_region(h->pid, h->b->comm, &live, &sd, 0, label, 0);
				else
					fprintf(stderr, SPFX "process %d exited before its buffers could be mapped: "
						"its last snapshot request is not served\n", (int)h->pid);
			}
			failed += k != 0;
			continue;
		}
		if (dead)
			break;
		/* Told to stop: a child got the signal too (on_term), wait for
		 * it to go, so that its end is recorded; another program runs
		 * on without us. */
		if (*stop && !child)
			break;
		struct timespec d = { 0, 100 * 1000000L };
		ctl_futex(&h->b->snap_req, FUTEX_WAIT, seen, &d);
	}
	if (signaled && live.rb) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s/recovered", outdir);
		struct snap_dir sd = { odfd, dir };
		fprintf(stderr, SPFX "process %d %s: writing what its buffers hold to %s\n", (int)h->pid,
			child ? "was killed" : "is gone", dir);
		failed += write_region(h->pid, h->b->comm, &live, &sd, 0, "recover", 0) != 0;
	}
	ctl_ring_close(&live);
	ctl_ring_close(&spare);
	ctl_remove_if_stale(h->pid);
	return failed;
}

int cmd_snapshot(int argc, char **argv)
{
	const char *usage = "usage: ringtrace snapshot PID|NAME [-o DIR] [--allow-shared-dir] [--count N [--interval MS] | --watch]";
	const char *spec = NULL, *outdir = NULL;
	long count = 0, interval = 1000;
	int watch = 0;
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
			out_flags |= OUTDIR_ALLOW_SHARED;
		} else if (!strcmp(a, "--watch")) {
			watch = 1;
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--count") || !strcmp(a, "--interval")) && i + 1 < argc) {
			const char *v = argv[++i];
			if (!strcmp(a, "-o")) {
				outdir = v;
				continue;
			}
			char *end;
			long n = strtol(v, &end, 10);
			if (*end || end == v || n < (a[2] == 'c' ? 1 : 0) || n > 100000000) {
				fprintf(stderr, SPFX "bad %s '%s' (a number)\n", a, v);
				return 2;
			}
			if (a[2] == 'c')
				count = n;
			else
				interval = n;
		} else if (a[0] == '-' || spec) {
			fprintf(stderr, SPFX "unexpected argument '%s' (%s)\n", a, usage);
			return 2;
		} else {
			spec = a;
		}
	}
	if (!spec) {
		fprintf(stderr, SPFX "%s\n", usage);
		return 2;
	}
	if ((count || watch) && !outdir) {
		fprintf(stderr, SPFX "%s needs -o DIR (the snapshots go into DIR/snapshot-N)\n",
			watch ? "--watch" : "--count");
		return 2;
	}
	if (count && watch) {
		fprintf(stderr, SPFX "--count and --watch exclude each other\n");
		return 2;
	}
	char err[512];
	pid_t pid;
	struct ctl_handle h;
	if (ctl_resolve(spec, &pid, err, sizeof(err)) < 0 || ctl_open(pid, &h, CTL_OPEN_WRITE, err, sizeof(err)) < 0) {
		fprintf(stderr, SPFX "%s\n", err);
		return 1;
	}
	int status = 0, odfd = -1, created = 0;
	char why[256];
	struct snap_dir one = { AT_FDCWD, outdir };
	if (!count && !watch) {
		status = snapshot_one(&h, outdir ? &one : NULL, "command", NULL, NULL, NULL);
	} else if ((odfd = outdir_open(AT_FDCWD, outdir, OUTDIR_CREATE | OUTDIR_EMPTY | out_flags, &created, why,
				       sizeof(why))) < 0) {
		fprintf(stderr, SPFX "output directory '%s' %s\n", outdir, why);
		status = 1;
	} else {
		struct sigaction sa = { 0 };
		sa.sa_handler = on_term;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		pid_t w = watch ? watch_claim(&h) : 0;
		if (w) {
			fprintf(stderr, SPFX "process %d: pid %d serves its snapshots already\n", (int)pid, (int)w);
			status = 1;
			if (created)
				rmdir(outdir); /* made above, empty */
		} else if (watch) {
			if (h.b->snap_state == CTL_SNAP_OFF)
				fprintf(stderr, SPFX "process %d: snapshots are not enabled, its requests fail until 'ringtrace snapshot-enable %d'\n",
					(int)pid, (int)pid);
			int ws = 0;
			status = snapshot_watch(&h, odfd, outdir, 0, &ws, &got_term, NULL) ? 1 : 0;
			watch_release(&h);
		}
		uint64_t t0 = mono_ms();
		for (long n = 1; n <= count && !got_term; n++) {
			char dir[PATH_MAX];
			snprintf(dir, sizeof(dir), "%s/snapshot-%ld", outdir, n);
			struct snap_dir sd = { odfd, dir };
			if ((status = snapshot_one(&h, &sd, "command", NULL, NULL, NULL)) != 0)
				break;
			uint64_t next = t0 + (uint64_t)(n * interval), now = mono_ms();
			if (n < count && next > now) {
				struct timespec d = { (time_t)((next - now) / 1000), (long)((next - now) % 1000) * 1000000L };
				nanosleep(&d, NULL);
			}
		}
	}
	if (odfd >= 0)
		close(odfd);
	ctl_close(&h);
	return status;
}

/* One request for record_attach_snapshot(); prints its error. */
static int snap_request(struct rec *r, uint32_t op, uint64_t a0, uint64_t a1, const char *text, const char *what)
{
	char msg[CTL_MSG];
	int k = ctl_request(&r->ctl, op, a0, a1, text, text ? strlen(text) : 0, 5000, msg, sizeof(msg));
	if (k < 0 && (kill(r->child, 0) == 0 || errno != ESRCH))
		fprintf(stderr, PFX "process %d: cannot %s: %s\n", (int)r->child, what, *msg ? msg : strerror(-k));
	return k;
}

/*
 * `ringtrace record -p PID --snapshot`: snapshot mode on a running program,
 * the flight recorder without a restart. Its snapshots are enabled (and,
 * if tracing was off, its buffers set to overwrite mode and tracing
 * switched on), and each snapshot it asks for (ringtrace_snapshot(), the
 * --snapshot-on trigger, `ringtrace snapshot PID`) is written to
 * DIR/snapshot-N until Ctrl-C or its exit. Then what we changed is
 * changed back.
 */
static int record_attach_snapshot(struct rec *r)
{
	int status = 1, mode_set = 0, enabled = 0, armed = 0, claimed = 0;
	if (live_open(r, PFX) < 0)
		goto out;
	struct ctl_block *b = r->ctl.b;
	pid_t w = watch_claim(&r->ctl);
	if (w) {
		fprintf(stderr, PFX "process %d: pid %d serves its snapshots already\n", (int)r->child, (int)w);
		goto out;
	}
	claimed = 1;
	if (r->snap_on && b->trigger[0]) {
		fprintf(stderr, PFX "process %d already has a snapshot trigger ('%.255s'): no --snapshot-on\n",
			(int)r->child, b->trigger);
		goto out;
	}
	if (!__atomic_load_n(&b->tracing, __ATOMIC_ACQUIRE)) {
		/* Its next buffers keep the newest events, not the oldest. */
		if (b->cfg_mode != RINGTRACE__MODE_OVERWRITE) {
			if (snap_request(r, CTL_OP_BUFFER_SIZE, b->cfg_sb_size * b->cfg_nsb, b->cfg_nsb | 2ull << 32,
					 NULL, "set overwrite mode") < 0)
				goto out;
			mode_set = 1;
		}
		if (snap_request(r, CTL_OP_ON, 0, 0, NULL, "switch tracing on") < 0)
			goto out;
		r->turned_on = 1;
	}
	if (__atomic_load_n(&b->snap_state, __ATOMIC_ACQUIRE) == CTL_SNAP_OFF) {
		if (snap_request(r, CTL_OP_SNAP_ENABLE, 0, 0, NULL, "enable snapshots") < 0)
			goto out;
		enabled = 1;
	}
	if (r->snap_on) {
		uint64_t iv = r->min_interval ? strtoull(r->min_interval, NULL, 10) : 0;
		if (snap_request(r, CTL_OP_SNAP_TRIGGER, iv, 0, r->snap_on, "arm the trigger") < 0)
			goto out;
		armed = 1;
	}
	if (make_outdir(r) < 0)
		goto out;
	fprintf(stderr, PFX "snapshots of '%s' (pid %d) go to %s; Ctrl-C detaches\n", r->comm, (int)r->child,
		r->outdir);
	int ws = 0;
	status = snapshot_watch(&r->ctl, r->odfd, r->outdir, 0, &ws, &got_term, NULL) ? 1 : 0;
	if (status == 0 && dir_is_empty(r->outdir) && rmdir(r->outdir) == 0)
		fprintf(stderr, PFX "no snapshot was taken: %s not kept\n", r->outdir);
out:
	if (r->ctl.b && !gone(r->child, 0)) {
		if (armed)
			snap_request(r, CTL_OP_SNAP_TRIGGER, 0, 0, "", "disarm the trigger");
		if (enabled)
			snap_request(r, CTL_OP_SNAP_DISABLE, 0, 0, NULL, "disable snapshots");
		if (r->turned_on)
			snap_request(r, CTL_OP_OFF, 1, 0, NULL, "switch tracing off");
		if (mode_set)
			snap_request(r, CTL_OP_BUFFER_SIZE, r->ctl.b->cfg_sb_size * r->ctl.b->cfg_nsb,
				     r->ctl.b->cfg_nsb | 1ull << 32, NULL, "set discard mode back");
	}
	if (claimed)
		watch_release(&r->ctl);
	if (status != 0 && r->outdir && r->outdir_created && dir_is_empty(r->outdir))
		rmdir(r->outdir);
	cleanup(r);
	return status;
}

/*
 * `ringtrace record --flight-recorder -- PROGRAM`: the program traces into
 * its own buffers in overwrite mode (memory bounded however long it runs)
 * and nothing is written until it asks for a snapshot (ringtrace_snapshot())
 * or someone takes one (`ringtrace snapshot PID`): snapshots go to
 * DIR/snapshot-N. If the program is killed, what its buffers hold goes to
 * DIR/recovered. Our status is the program's.
 */
static int record_flight(struct rec *r)
{
	int status = 2;
	signal(SIGINT, SIG_IGN); /* Ctrl-C is the program's to handle */
	int k = start_child(r);
	if (k < 0) {
		status = k < -1 ? -k : 2;
		goto out;
	}
	say_clock(r);
	fprintf(stderr, PFX "flight recorder on '%s' (pid %d): snapshots go to %s\n", r->argv[0], (int)r->child,
		r->outdir);
	/* The region is the program's now (it may free its copy at its first
	 * snapshot); ours stays mapped for a post-mortem. */
	struct ctl_ring initial = { .mem = r->mem, .size = r->mem_size, .rb = r->rb };
	rb_reader_free(r->reader);
	r->reader = NULL;
	r->mem = NULL;
	r->rb = NULL;
	/* Its control block appears when its constructor has run. */
	char err[512];
	int opened = 0, ws = 0;
	for (;;) {
		if (ctl_open(r->child, &r->ctl, CTL_OPEN_WRITE, err, sizeof(err)) == 0) {
			opened = 1;
			/* Pairs with the acquire load in flight_start(): it
			 * may start now. */
			watch_claim(&r->ctl); /* a fresh block: ours */
			break;
		}
		siginfo_t si = { 0 };
		if (waitid(P_PID, (id_t)r->child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == r->child)
			break;
		struct timespec d = { 0, 2000000 };
		nanosleep(&d, NULL);
	}
	if (opened) {
		snapshot_watch(&r->ctl, r->odfd, r->outdir, r->child, &ws, &got_term, &initial);
	} else {
		/* It died before its constructor published the block (or it
		 * does not use libringtrace): recover what the buffers hold. */
		if (waitpid(r->child, &ws, 0) > 0 && WIFSIGNALED(ws) && initial.rb &&
		    initial.rb->hdr->attached_pid) {
			char dir[PATH_MAX];
			snprintf(dir, sizeof(dir), "%s/recovered", r->outdir);
			struct snap_dir sd = { r->odfd, dir };
			const char *base = strrchr(r->progname, '/');
			fprintf(stderr, PFX "process %d was killed: writing what its buffers hold to %s\n",
				(int)r->child, dir);
			write_region(r->child, base ? base + 1 : r->progname, &initial, &sd, 0, "recover", 0);
			ctl_remove_if_stale(r->child);
		} else if (!initial.rb || !initial.rb->hdr->attached_pid) {
			fprintf(stderr, PFX "'%s' did not load libringtrace: nothing was traced\n", r->progname);
		}
	}
	if (initial.rb)
		rb_view_free(initial.rb);
	if (initial.mem)
		munmap(initial.mem, initial.size);
	child_pid_for_signal = 0;
	if (WIFEXITED(ws))
		status = WEXITSTATUS(ws);
	else if (WIFSIGNALED(ws))
		status = 128 + WTERMSIG(ws);
out:
	if (r->outdir && r->outdir_created && dir_is_empty(r->outdir))
		rmdir(r->outdir);
	cleanup(r);
	return status;
}

/* ---- recover: buffers of a program that cannot write them itself ---------- */

#define RPFX "ringtrace recover: "

/*
 * `ringtrace recover FILE|PID [-o DIR]`: write what a set of buffers holds
 * as a trace, everything, the open sub-buffers included (a record cut in
 * the middle is left out). FILE is a copy of a program's buffers (`cp
 * /proc/PID/fd/N FILE`, or a region file left by a recorder that was
 * killed), mapped privately: it is never changed. PID is a running
 * program, typically one that hangs: its live buffers, as they are.
 * `record --flight-recorder` does this by itself when its program is
 * killed (DIR/recovered).
 */
int cmd_recover(int argc, char **argv)
{
	const char *usage = "usage: ringtrace recover FILE|PID|NAME [-o DIR] [--allow-shared-dir]";
	const char *what = NULL, *outdir = NULL;
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
			out_flags |= OUTDIR_ALLOW_SHARED;
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
	struct stat st;
	struct ctl_ring ring = { 0 };
	char err[512], comm[64];
	pid_t pid = 0;
	struct ctl_handle h = { 0 };
	if (stat(what, &st) == 0) {
		int fd = open(what, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size < sizeof(struct ringtrace__shm_header)) {
			fprintf(stderr, RPFX "'%s' is not a copy of ringtrace buffers%s%s\n", what,
				fd < 0 ? ": " : "", fd < 0 ? strerror(errno) : "");
			if (fd >= 0)
				close(fd);
			return 1;
		}
		/* Private: the reader's bookkeeping never reaches the file. */
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		close(fd);
		if (m == MAP_FAILED) {
			fprintf(stderr, RPFX "cannot map '%s': %s\n", what, strerror(errno));
			return 1;
		}
		ring.mem = m;
		ring.size = (uint64_t)st.st_size;
		if (rb_view_open(m, ring.size, &ring.rb) < 0) {
			fprintf(stderr, RPFX "'%s' is not a copy of ringtrace buffers, or it is damaged\n", what);
			munmap(m, ring.size);
			return 1;
		}
		pid = (pid_t)ring.rb->hdr->attached_pid;
		const char *base = strrchr(what, '/');
		snprintf(comm, sizeof(comm), "%s", base ? base + 1 : what);
	} else {
		if (ctl_resolve(what, &pid, err, sizeof(err)) < 0 || ctl_open(pid, &h, CTL_OPEN_WRITE, err, sizeof(err)) < 0 ||
		    ctl_ring_open(&h, &ring, err, sizeof(err)) < 0) {
			fprintf(stderr, RPFX "%s\n", err);
			ctl_close(&h);
			return 1;
		}
		snprintf(comm, sizeof(comm), "%.16s", h.b->comm);
		/* Work on a copy: the reader's bookkeeping (discard mode gives
		 * sub-buffers back zeroed) must not touch the program's
		 * buffers, which it may still be writing. */
		void *copy = mmap(NULL, ring.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ringtrace__rb *view = NULL;
		if (copy == MAP_FAILED || (memcpy(copy, ring.mem, ring.size), rb_view_open(copy, ring.size, &view) < 0)) {
			fprintf(stderr, RPFX "cannot copy the buffers of process %d\n", (int)pid);
			if (copy != MAP_FAILED)
				munmap(copy, ring.size);
			ctl_ring_close(&ring);
			ctl_close(&h);
			return 1;
		}
		uint64_t size = ring.size;
		ctl_ring_close(&ring);
		ring.mem = copy;
		ring.size = size;
		ring.rb = view;
	}
	char name[128];
	char *made = NULL;
	if (!outdir) {
		snprintf(name, sizeof(name), "recovered-%s", comm);
		/* write_region's default name is for snapshots: name it here. */
		struct rec tmp = { 0 };
		tmp.progname = name;
		if (make_outdir(&tmp) < 0) {
			ctl_ring_close(&ring);
			ctl_close(&h);
			return 1;
		}
		close(tmp.odfd);
		outdir = made = tmp.outdir;
		rmdir(outdir); /* write_region makes it again, empty */
	}
	struct snap_dir sd = { AT_FDCWD, outdir };
	/* Thread names from /proc only for a program we checked is the one
	 * (a FILE's pid may be anybody's by now). */
	int status = write_region(pid, comm, &ring, &sd, 0, "recover", h.b != NULL);
	ctl_ring_close(&ring);
	ctl_close(&h);
	free(made);
	return status;
}

/* ---- show: follow a live program ------------------------------------------ */

/*
 * `ringtrace show PID` is `record -p` printing instead of writing: each
 * round it takes the closed sub-buffers and peeks at the open ones
 * (rb_reader_peek), decodes them against metadata generated in memory,
 * and prints the events it has not printed yet, in `dump`'s format,
 * sorted by time within the round. Losses are printed from the program's
 * counters as they grow.
 */
struct show_pkt {
	char *data;
	size_t len;
	uint32_t cpu;
	uint64_t seq;
	uint64_t skip;               /* event items already printed */
	int peek;
	uint64_t seen;               /* event items in it */
};

struct show_cpu {
	uint64_t seq;                /* packet partly printed (peeked), or ~0 */
	uint64_t printed;
};

#define SHOW_PFX "ringtrace show: "

static int show_add(struct show_pkt **v, size_t *n, size_t *cap, const struct rb_packet *pkt, int peek,
		    struct show_cpu *sc)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct show_pkt *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	struct show_pkt *p = &(*v)[*n];
	p->data = malloc(pkt->len);
	if (!p->data)
		return -ENOMEM;
	memcpy(p->data, pkt->data, pkt->len);
	p->len = pkt->len;
	p->cpu = pkt->cpu;
	uint64_t seq;
	memcpy(&seq, pkt->data + PKT_OFF(packet_seq_num), 8);
	p->seq = seq;
	p->skip = sc->seq == seq ? sc->printed : 0;
	p->peek = peek;
	p->seen = 0;
	(*n)++;
	return 0;
}

static void show_lost(struct rec *r, uint64_t *prev)
{
	for (uint32_t c = 0; c < r->rb->ncpus; c++) {
		struct ringtrace__rb_cpu *cc = r->rb->cpu[c].ctl;
		uint64_t v[3] = { cc->lost_full, cc->lost_overwrite, cc->lost_too_big + cc->lost_nocpu };
		static const char *const why[3] = { "buffer full", "overwritten", "too big or no rseq" };
		for (int k = 0; k < 3; k++) {
			if (v[k] > prev[c * 3 + k])
				printf("ringtrace: %llu events lost on cpu %u (%s)\n",
				       (unsigned long long)(v[k] - prev[c * 3 + k]), c, why[k]);
			prev[c * 3 + k] = v[k];
		}
	}
}

static int show_round(struct rec *r, struct show_cpu *sc, struct ctf_buf *line)
{
	struct show_pkt *v = NULL;
	size_t n = 0, cap = 0;
	struct rb_packet pkt;
	uint64_t end_ts = ringtrace__now(r->rb);
	int ret = 0;
	for (uint32_t c = 0; c < r->rb->ncpus && ret == 0; c++) {
		while (ret == 0 && rb_reader_get(r->reader, c, &pkt) > 0) {
			ret = show_add(&v, &n, &cap, &pkt, 0, &sc[c]);
			rb_reader_put(r->reader, c);
		}
		if (ret == 0 && rb_reader_peek(r->reader, c, payload_size, r, end_ts, &pkt) > 0)
			ret = show_add(&v, &n, &cap, &pkt, 1, &sc[c]);
	}
	if (n == 0 || ret < 0)
		goto out;
	char *meta = NULL;
	size_t mlen = 0;
	r->meta_mem = open_memstream(&meta, &mlen);
	if (!r->meta_mem) {
		ret = -ENOMEM;
		goto out;
	}
	write_metadata(r, 0);
	fclose(r->meta_mem);
	r->meta_mem = NULL;
	struct rd_mem_stream *ms = calloc(n, sizeof(*ms));
	char (*names)[32] = calloc(n, sizeof(*names));
	struct rd_trace *t = NULL;
	char err[512];
	if (!ms || !names) {
		ret = -ENOMEM;
	} else {
		for (size_t i = 0; i < n; i++) {
			snprintf(names[i], sizeof(names[i]), "stream_%u.%zu", v[i].cpu, i);
			ms[i].name = names[i];
			ms[i].data = v[i].data;
			ms[i].size = v[i].len;
		}
		if (rd_trace_open_mem(meta, mlen, ms, n, &t, err, sizeof(err)) < 0) {
			fprintf(stderr, SHOW_PFX "cannot decode the program's events: %s\n", err);
			ret = -EBADMSG;
		}
	}
	struct rd_item it;
	while (t && rd_trace_next(t, &it) > 0) {
		if (it.kind != RD_ITEM_EVENT)
			continue; /* losses come from the program's counters */
		struct show_pkt *p = &v[it.stream];
		if (p->seen++ < p->skip)
			continue;
		if (!strcmp(it.ec->name, "ringtrace:thread") || !strcmp(it.ec->name, "ringtrace:thread_name"))
			continue;
		ctf_buf_reset(line);
		dump_format_item(line, &it);
		ctf_buf_putc(line, '\n');
		if (!line->err && fwrite(line->data, 1, line->len, stdout) != line->len) {
			ret = -EPIPE;
			break;
		}
	}
	if (t)
		rd_trace_close(t);
	free(ms);
	free(names);
	free(meta);
	for (size_t i = 0; i < n; i++) {
		struct show_cpu *c = &sc[v[i].cpu];
		if (v[i].peek) {
			c->seq = v[i].seq;
			c->printed = v[i].seen > v[i].skip ? v[i].seen : v[i].skip;
		} else if (c->seq == v[i].seq) {
			c->seq = ~UINT64_C(0);
			c->printed = 0;
		}
	}
	if (fflush(stdout) != 0)
		ret = -EPIPE;
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].data);
	free(v);
	return ret;
}

int cmd_show(int argc, char **argv)
{
	struct rec r = { 0 };
	r.shm_fd = -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: ringtrace show PID|NAME\n\n"
			       "  Follows a running program and prints its events as they come, in the\n"
			       "  format of 'ringtrace dump', until Ctrl-C or until the program exits.\n"
			       "  Tracing is switched on if it was off, and off again at the end.\n");
			return 0;
		}
		if (argv[i][0] == '-' || r.attach_spec) {
			fprintf(stderr, SHOW_PFX "unexpected argument '%s' (usage: ringtrace show PID|NAME)\n", argv[i]);
			return 2;
		}
		r.attach_spec = argv[i];
	}
	if (!r.attach_spec) {
		fprintf(stderr, SHOW_PFX "no process given (usage: ringtrace show PID|NAME)\n");
		return 2;
	}
	int status = 1;
	struct show_cpu *sc = NULL;
	uint64_t *lost = NULL;
	struct ctf_buf line;
	ctf_buf_init(&line);
	if (live_attach(&r, SHOW_PFX) < 0)
		goto out;
	sc = calloc(r.rb->ncpus, sizeof(*sc));
	lost = calloc(r.rb->ncpus * 3, sizeof(*lost));
	if (!sc || !lost)
		goto out;
	for (uint32_t c = 0; c < r.rb->ncpus; c++) {
		sc[c].seq = ~UINT64_C(0);
		struct ringtrace__rb_cpu *cc = r.rb->cpu[c].ctl;
		lost[c * 3] = cc->lost_full;
		lost[c * 3 + 1] = cc->lost_overwrite;
		lost[c * 3 + 2] = cc->lost_too_big + cc->lost_nocpu;
	}
	fprintf(stderr, SHOW_PFX "following '%s' (pid %d); Ctrl-C stops\n", r.comm, (int)r.child);
	uint64_t last_scan = 0;
	int exited = 0;
	while (!got_term) {
		read_registry(&r);
		uint64_t now = mono_ms();
		if (now - last_scan >= 200) {
			scan_threads(&r);
			last_scan = now;
		}
		if (show_round(&r, sc, &line) == -EPIPE)
			break; /* the reader of our output went away */
		show_lost(&r, lost);
		if (!attached_process_alive(&r)) {
			exited = 1;
			break;
		}
		rb_reader_wait(r.reader, 100);
	}
	if (exited) {
		/* No writer is left: what the last round did not see. */
		show_round(&r, sc, &line);
		fprintf(stderr, SHOW_PFX "process %d exited\n", (int)r.child);
	}
	status = 0;
out:
	live_detach(&r, SHOW_PFX);
	ctf_buf_free(&line);
	free(sc);
	free(lost);
	cleanup(&r);
	return status;
}
