/*
 * session_int.h - the session library's inside (session.h is its outside):
 * the state of one recording, shared by the files of src/session/.
 *
 * One struct sess per trace being written: the program's recording, each
 * followed process's (a thread each), each snapshot or recovered region.
 * Its options are read-only (struct sess_opts, or sess_no_opts); the rest
 * is the state of the mode that runs it.
 */
#ifndef RINGTRACE_SESSION_INT_H
#define RINGTRACE_SESSION_INT_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/clock.h"
#include "common/sig.h"
#include "ctl/ctl_client.h"
#include "ringbuf/rb.h"
#include "session/disk_room.h"
#include "session/session.h"

struct sess_event {
	uint32_t id;
	char *provider, *name, *signature;
	struct sig_field *fields;
	size_t nfields;
};

struct sess_thread {
	uint32_t tid;
	char comm[17];
};

struct sess {
	/* What the user asked for (never NULL: sess_no_opts for a session
	 * that only writes a region out). */
	const struct sess_opts *o;
	/* Where the trace goes: as given (NULL: a default name from
	 * progname), relative to outdir_at when outdir_at_set. */
	const char *outdir_opt;
	unsigned out_flags;          /* OUTDIR_ALLOW_SHARED */
	/* The region's parameters: the options', or its own header's
	 * (sess_reader_from_region()). */
	uint32_t nsb;
	uint32_t mode;
	int attached;                /* -p: its counters began before us */
	const char *progname;        /* for the directory name and procname */
	struct follow *follow;       /* the program's recording: the followers */

	/* What each mode adds (zero when it does not run). */
	struct {                     /* a program we run (run.c) */
		char *shm_path;
		int shm_fd;          /* passed to the program, unlinked at once */
		int agg_fd;          /* --aggregate: the counters' block (a memfd the
				      * program inherits), -1 if none */
	} run;
	struct {                     /* a running program (attach.c): -p, show, a
				      * followed process, snapshots on -p */
		struct ctl_handle ctl;
		int turned_on;       /* we switched tracing on */
		int reader_claimed;
		uint64_t lost0[4];   /* loss counters when we attached */
	} live;
	struct {                     /* a snapshot (snapshot.c), in the env */
		uint32_t no;         /* its number in the program, 0 if not one */
		const char *trigger; /* what took it */
		char time[40];       /* when, ISO 8601 */
	} snap;
	struct {                     /* a followed process's recording (follow.c) */
		const char *kind;    /* "fork" or "exec" */
		pid_t ppid;          /* its parent */
		int empty;           /* it recorded nothing: no trace kept */
	} followed;

	/* The trace being written (writer.c): where, from which region,
	 * what was written and lost, the registry, threads and clock. */
	char *outdir;                /* as printed; set once odfd is open */
	int odfd;                    /* the output directory, valid while outdir is set */
	int outdir_at;               /* outdir_opt is relative to this ... */
	int outdir_at_set;           /* ... when set (else the current directory) */
	int outdir_created;          /* we made it: remove it if we fail early */
	void *mem;
	uint64_t mem_size;
	struct ringtrace__rb *rb;
	struct rb_reader *reader;
	int *fds;
	/* Per CPU: its stream file is written with O_DIRECT (writer.c,
	 * "direct"); the bounce buffer of those writes, dio_cap bytes. */
	unsigned char *dio;
	char *dio_buf;
	size_t dio_cap;
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

	struct sess_event *events;
	size_t nevents, cap_events;
	uint64_t reg_pos;
	int reg_changed;

	struct sess_thread *threads;
	size_t nthreads, cap_threads;

	pid_t child;                 /* the program (-p: the process attached to) */
	FILE *meta_mem;              /* show: write the metadata here */
	char comm[17];               /* -p: the program's name */
	uint64_t last_scan, last_meta;  /* sess_round(): ms of the last thread scan, metadata */
	uint64_t lost_full, lost_overwrite, lost_too_big, lost_nocpu, lost_crash;
	uint64_t block[3];           /* waits for room: events, ns, timed out */
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


/* The options of a session that only writes a region out (a snapshot, a
 * recovered region): none given. */
extern const struct sess_opts sess_no_opts;

/* A line for the log callback (session.h); a trailing newline is dropped. */
void sess_log(enum sess_src src, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- session.c ---- */
/* A fresh session (nothing open) with these options. */
void sess_init(struct sess *r, const struct sess_opts *o);
/* Set by the caller (a signal): stop and detach. */
int sess_stopped(const struct sess *r);
uint64_t sess_mono_ms(void);
/* Close and free what the session opened (any mode). */
void sess_cleanup(struct sess *r);

/* ---- describe.c: the program's registry and threads ---- */
/* New registry entries since the last call (event classes, the program's
 * lines for the user). */
void sess_read_registry(struct sess *r);
/* The size of an event's payload, by its class (rb_payload_size_fn). */
int sess_payload_size(void *arg, uint32_t id, const char *payload, size_t avail, size_t *ret);
void sess_scan_threads(struct sess *r);
/* The threads as the metadata's env lists them (free it), or NULL. */
struct ctf_thread_name *sess_thread_names(const struct sess *r);

/* ---- trace_clock.c ---- */
void sess_choose_clock(struct sess *r);
void sess_say_clock(const struct sess *r);
void sess_clock_drift_end(struct sess *r, const struct clk_sample *c1);

/* ---- writer.c: the trace writer ---- */
int sess_dir_is_empty(const char *path);
/* Create (or take, if empty) the output directory: 0, or a negative errno
 * after a message. */
int sess_make_outdir(struct sess *r);
/* One descriptor per CPU stream and the loss counters: 0 or -ENOMEM. */
int sess_alloc_stream_fds(struct sess *r);
/* Append one packet to its stream file; a failure is counted (loss by
 * cause: not written) and said once. */
void sess_write_packet(struct sess *r, const struct rb_packet *pkt);
unsigned sess_consume(struct sess *r, unsigned max);
int sess_write_metadata(struct sess *r, int final);
int sess_reader_from_region(struct sess *r);
void sess_lost_counts(const struct ringtrace__rb *rb, uint64_t v[4]);
/* Waits for room of every CPU, summed: events that waited, ns, timed out. */
void sess_block_counts(const struct ringtrace__rb *rb, uint64_t v[3]);
unsigned sess_round(struct sess *r);
void sess_finish(struct sess *r, int salvage);
void sess_stats_get(const struct sess *r, struct sess_stats *ret);

/* ---- attach.c: a running program ---- */
int sess_live_open(struct sess *r, enum sess_src who);
int sess_live_attach(struct sess *r, enum sess_src who);
void sess_live_detach(struct sess *r, enum sess_src who);
int sess_process_alive(const struct sess *r);
void sess_release_reader(struct sess *r);
int sess_attach(struct sess *r, int *ret_status);

/* ---- run.c ---- */
int sess_start_child(struct sess *r);

/* ---- follow.c: --follow-fork, --follow-exec ---- */
int sess_follow_begin(struct sess *r);
void sess_follow_end(struct sess *r, unsigned linger_ms);
void sess_follow_reap(pid_t keep);
void sess_follow_env(const struct sess *r);

/* ---- snapshot.c ---- */
/* Where a snapshot goes: path as printed; when `at` is a directory
 * descriptor, the last component of path is made inside it. */
struct snap_dir {
	int at;
	const char *path;
};
int sess_write_region(pid_t pid, const char *comm, struct ctl_ring *ring, const struct snap_dir *outdir,
		      unsigned out_flags, uint32_t no, const char *trigger, int scan);
int sess_flight(struct sess *r, int *ret_status);
int sess_attach_snapshot(struct sess *r, int *ret_status);

#endif /* RINGTRACE_SESSION_INT_H */
