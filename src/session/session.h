/*
 * session.h - the recording engine of the ringtrace command, as a library
 * (libringtrace-core.a): run a program with tracing on, or attach to a
 * running one, and write its events as a CTF 1.8 trace; follow its forked
 * and executed children; serve its snapshots (flight recorder); recover
 * what a dead program's buffers hold; follow a live program's events.
 *
 * Callers: the subcommands in src/cli/ (record, mem, snapshot, recover,
 * show), which parse arguments into the option structs below, call one
 * function and print. The library never prints: every failure is a
 * negative errno, and what the user needs to read (the context of an
 * error, the summary of a recording) goes through the log callback set
 * with sess_set_log(), one line per call, without a newline.
 *
 * The engine runs on the caller's thread (plus one thread per followed
 * process); it sleeps between rounds and never makes the traced program
 * wait.
 */
#ifndef RINGTRACE_SESSION_H
#define RINGTRACE_SESSION_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "ringtrace/ringtrace-abi.h"

/* ---- messages ------------------------------------------------------------ */

/* Which part of the engine speaks: the command whose name the CLI puts
 * before the line ("ringtrace record: ..."), or the traced program itself
 * (a line of its own registry, printed as it is). */
enum sess_src {
	SESS_SRC_RECORD,
	SESS_SRC_SNAPSHOT,
	SESS_SRC_RECOVER,
	SESS_SRC_SHOW,
	SESS_SRC_PROGRAM,
};
typedef void (*sess_log_fn)(enum sess_src src, const char *msg);
/* One callback for the whole process (NULL: silent). Returns the old one.
 * It may be called from several threads at once (followed processes). */
sess_log_fn sess_set_log(sess_log_fn fn);

/* ---- statistics ------------------------------------------------------------ */

/* A recording so far, for a caller that polls it each round. */
struct sess_stats {
	uint64_t events;             /* taken from the buffers (written or not) */
	uint64_t bytes;              /* written to the stream files */
	/* Lost, by cause: the buffer was full, overwritten (overwrite mode),
	 * too big for a sub-buffer, a thread without rseq, committed but cut
	 * off by a crash, taken but not written (the disk full, say). */
	uint64_t lost_full, lost_overwrite, lost_too_big, lost_nocpu, lost_crash, lost_unwritten;
	/* Writers that waited for room (blocking mode): events that waited,
	 * nanoseconds waited in all, and events dropped after the timeout
	 * (in lost_full too). */
	uint64_t block_waits, block_ns, block_timeouts;
	/* The fullest per-CPU buffer: committed bytes not yet taken, in
	 * percent of its size (100 in overwrite mode once it wrapped). */
	unsigned fullest_pct;
	uint32_t fullest_cpu;
	/* Snapshot mode (the flight recorder, record -p --snapshot): the
	 * program's buffers are not consumed; events counts what it
	 * committed, bytes stays 0, and these count the snapshots written. */
	int snapshot_mode;
	uint64_t snapshots;
};

/* ---- record, record -p, mem ---------------------------------------------- */

struct sess_opts {
	size_t sz;                   /* sizeof(struct sess_opts): the struct may grow */
	const char *outdir;          /* -o DIR, or NULL: ringtrace-PROGRAM-DATE-TIME */
	unsigned outdir_flags;       /* OUTDIR_ALLOW_SHARED (--allow-shared-dir), util/outdir.h */
	uint64_t buf_size;           /* --buffer-size: per CPU */
	int buf_size_set;
	uint32_t nsb;                /* --subbuffers */
	uint32_t mode;               /* --mode: RINGTRACE__MODE_DISCARD or _OVERWRITE */
	/* -e patterns, each NUL-terminated, an empty one ends */
	char patterns[sizeof(((struct ringtrace__shm_header *)0)->patterns)];
	size_t patterns_len;
	char *const *argv;           /* the program and its arguments, or NULL */
	const char *attach;          /* -p PID|NAME */
	int stacks;                  /* --stacks */
	int flight;                  /* --flight-recorder */
	int snapshot;                /* --snapshot (with -p: on a running program) */
	int memtrace;                /* --mem */
	int aggregate;               /* --aggregate (implies memtrace) */
	const char *memlib;          /* with memtrace: libringtrace-malloc.so's path */
	const char *snap_on;         /* --snapshot-on (checked by the caller) */
	const char *min_interval;    /* --min-interval MS */
	uint32_t stack_bits;         /* --stack-bits, 0: the default */
	int follow_fork, follow_exec;
	/* --blocking-timeout US (--drop: 0): how long a writer waits for room
	 * in a full buffer; -1: the default, SESS_BLOCK_MEM_US with --mem
	 * (an allocation trace loses nothing), else 0 (tracepoints drop). */
	int64_t block_us;
	/* --sample BYTES: with memtrace, a Poisson sample of one allocation
	 * per BYTES on average (0: every call); --sample-seed (sample_seed_set). */
	uint64_t sample;
	uint64_t sample_seed;
	int sample_seed_set;

	/* The caller's side. */
	volatile sig_atomic_t *stop;      /* set (by a signal handler): stop, detach */
	volatile sig_atomic_t *child_pid; /* the program's pid is stored here while
					   * it runs (for a handler that passes
					   * signals on), or NULL */
	/* --aggregate: the counters' block (a memfd the program inherits)
	 * and saving it into DIR (-1 / negative after a message of their own). */
	int (*agg_create)(int by_stack);
	int (*agg_save)(int fd, int dfd, const char *dir);
	/* Called after each round of a recording (about 10 per second at
	 * least), with the recording's figures so far. */
	void (*on_round)(void *arg, const struct sess_stats *st);
	void *arg;
};

/* With --mem, how long a writer waits for room by default: 1 s, far above
 * any pause of a recorder that keeps up, short enough for a program whose
 * recorder stopped to run on (each CPU waits once per stall). */
#define SESS_BLOCK_MEM_US 1000000

/* The defaults: 2 MiB per CPU in 8 sub-buffers, discard mode. */
void sess_opts_init(struct sess_opts *o);
/* Add an -e pattern. 0, or -EINVAL with the reason in err (it names the
 * pattern). */
int sess_opts_add_pattern(struct sess_opts *o, const char *pat, char *err, size_t errlen);
/*
 * Check the options together and settle what follows from them (snapshot
 * mode on a program we start is the flight recorder, in overwrite mode;
 * --mem quadruples the default buffers). 0, or -EINVAL with one line in
 * err naming the option. The session takes the struct read-only.
 */
int sess_opts_finish(struct sess_opts *o, char *err, size_t errlen);

/*
 * Record as the options say: run o->argv (or attach to o->attach) until it
 * exits (or *o->stop), write the trace, log a summary. *ret_status is the
 * command's exit status: the program's (128 + signal if killed; 127 or
 * 126 if it could not be run), or 2 (1 with -p) on failure. 0 when
 * something was recorded, else a negative errno.
 */
int sess_record(const struct sess_opts *o, int *ret_status);

/* ---- snapshot ------------------------------------------------------------ */

struct sess_snap_opts {
	size_t sz;
	const char *target;          /* PID|NAME */
	const char *outdir;          /* -o DIR (NULL: the default name; count/watch need it) */
	unsigned outdir_flags;
	long count;                  /* --count N: N snapshots into DIR/snapshot-1..N */
	long interval_ms;            /* --interval */
	int watch;                   /* --watch */
	volatile sig_atomic_t *stop;
};
/* 0, or a negative errno after a message. */
int sess_snapshot(const struct sess_snap_opts *o);

/* ---- recover ------------------------------------------------------------- */

/* What FILE (a copy of a program's buffers) or PID|NAME (a running
 * program's live buffers) holds, written as a trace into outdir (NULL:
 * ringtrace-recovered-NAME-DATE-TIME). 0, or a negative errno after a
 * message. */
int sess_recover(const char *what, const char *outdir, unsigned outdir_flags);

/* ---- show ---------------------------------------------------------------- */

struct rd_item;
struct sess_show_opts {
	size_t sz;
	const char *target;          /* PID|NAME */
	volatile sig_atomic_t *stop;
	/* Each new event, in time order within a round; a negative return
	 * (-EPIPE: nobody reads the output) ends the session. */
	int (*on_item)(void *arg, const struct rd_item *it);
	/* After a round's events; negative ends the session. */
	int (*on_round_end)(void *arg);
	/* Events the program lost since the last round, on one CPU, and why. */
	void (*on_lost)(void *arg, uint32_t cpu, uint64_t n, const char *why);
	void *arg;
};
/* Attach to a running program and pass its events to the callbacks until
 * it exits, *stop, or a callback says stop; tracing is switched on if it
 * was off, and off again at the end. 0, or a negative errno after a
 * message. */
int sess_show(const struct sess_show_opts *o);

#endif /* RINGTRACE_SESSION_H */
