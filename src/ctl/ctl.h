/*
 * ctl.h - the control block: how a running program that uses libringtrace
 * is found and driven by `ringtrace ps/list/enable/.../record -p/show`.
 *
 * Every such program publishes, at start-up, a small file
 * /dev/shm/ringtrace.ctl.PID (mode 0600, its user's): who it is, which
 * events it has (the same registry log as the ring region), which are
 * enabled, whether tracing is on and where its ring buffers are, and a
 * one-command mailbox. The ring buffers themselves are allocated only when
 * tracing is switched on (a memfd of the program, reached by the
 * controller as /proc/PID/fd/N), so an untraced program pays two touched
 * pages and a sleeping thread.
 *
 * Who writes what:
 *   - the program (its control thread, or its registry under the registry
 *     lock) writes everything but the mailbox's request;
 *   - a controller takes the mailbox (CAS on cmd_lock with its pid), fills
 *     op/arg/text, sets cmd_state PENDING, increments cmd_seq (release)
 *     and wakes the futex; the control thread takes the request (cmd_state
 *     TAKEN), answers in result/msg and stores done_seq = cmd_seq
 *     (release), then wakes done_seq. A controller that times out cancels
 *     a request not yet taken (cmd_state CANCELLED).
 * The program never waits for a controller, and treats the request as
 * hostile (every field is validated, strings are bounded). Controllers
 * validate every field they read (ctl_client.c): a foreign or damaged
 * block is rejected.
 */
#ifndef RINGTRACE_CTL_H
#define RINGTRACE_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CTL_MAGIC        0x4c544354474e4952ull /* "RINGTCTL" */
#define CTL_VERSION      4
#define CTL_DIR          "/dev/shm"
#define CTL_PREFIX       "ringtrace.ctl."
#define CTL_REG_SIZE     (256u * 1024)   /* registry log (sparse) */
#define CTL_MAX_IDS      65536u          /* enabled[] entries */
#define CTL_TEXT         4096
#define CTL_MSG          512

enum ctl_op {
	CTL_OP_NONE = 0,
	CTL_OP_ENABLE,       /* text: patterns; result: events matched */
	CTL_OP_DISABLE,
	CTL_OP_ON,           /* allocates buffers if there are none */
	CTL_OP_OFF,          /* arg0 = 1: also free the program's own buffers */
	CTL_OP_RESET,        /* empty the buffers (tracing may be on) */
	CTL_OP_BUFFER_SIZE,  /* arg0 = bytes per CPU, arg1 = sub-buffers (0: keep)
			      * | mode << 32 (0 keep, 1 discard, 2 overwrite) */
	CTL_OP_FLUSH,        /* close the open sub-buffers (tracing pauses for a
			      * grace period); arg0 = 1: stay off afterwards */
	CTL_OP_SNAP_ENABLE,  /* allocate the spare buffers for snapshots */
	CTL_OP_SNAP_DISABLE, /* free them (refused while a snapshot is held) */
	CTL_OP_SNAPSHOT,     /* swap live and spare; arg0 = the controller's pid,
			      * which then holds the old buffers (snap_fd) until
			      * SNAP_RELEASE; result: the snapshot's number */
	CTL_OP_SNAP_RELEASE, /* the held buffers were written: reuse them */
	CTL_OP_SNAP_TRIGGER, /* text: "provider:event [if FIELD OP VALUE]" ("" disarms);
			      * arg0: minimum interval between triggered snapshots, ms */
	CTL_OP_MAX
};

enum ctl_session {
	CTL_SESSION_NONE = 0,
	CTL_SESSION_RECORDER,        /* buffers of `ringtrace record` (inherited) */
	CTL_SESSION_OWN,             /* buffers the program allocated */
};

/*
 * The request's owner: a controller that gives up on a stopped program
 * cancels it (CAS PENDING -> CANCELLED) so that it never takes effect
 * later; the control thread takes it (CAS PENDING -> TAKEN) before copying
 * it, and a controller never writes a request while one is TAKEN.
 */
enum ctl_snap_state {
	CTL_SNAP_OFF = 0,            /* no spare buffers */
	CTL_SNAP_READY,              /* spare buffers allocated */
	CTL_SNAP_HELD,               /* the spare holds a snapshot being written */
};

enum ctl_cmd_state { CTL_CMD_IDLE = 0, CTL_CMD_PENDING, CTL_CMD_TAKEN, CTL_CMD_CANCELLED };

/* Values of enabled[id]. */
enum { CTL_EV_NONE = 0, CTL_EV_DISABLED = 1, CTL_EV_ENABLED = 2 };

struct ctl_block {
	/* identity: written once before the file is renamed into place */
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;        /* sizeof(struct ctl_block) */
	uint64_t total_size;         /* of the file */
	uint32_t pid;
	uint32_t uid;
	uint64_t start_time;         /* /proc/PID/stat field 22: tells pid reuse */
	char comm[16];
	char exe[256];
	char version_str[16];        /* library version */
	uint64_t reg_off;            /* registry log, as in the ring region */
	uint64_t reg_size;
	uint64_t en_off;             /* uint8_t enabled[en_count], by event id */
	uint32_t en_count;
	uint32_t pad0;

	/* state: written by the program */
	uint64_t reg_used;           /* release-stored after an entry is complete */
	uint32_t reg_dropped;
	uint32_t nevents;            /* user events registered */
	uint32_t tracing;            /* probes write events */
	uint32_t session;            /* enum ctl_session */
	int32_t ring_fd;             /* program's fd of its own buffers, or -1 */
	uint32_t ring_gen;           /* increments when the buffers change */
	uint64_t ring_size;          /* bytes mapped for the buffers, 0 if none */
	uint64_t cfg_sb_size;        /* what the next allocation uses */
	uint32_t cfg_nsb;
	uint32_t cfg_mode;
	uint32_t retired;            /* regions kept mapped: a grace period failed */
	/* snapshots (docs/design.md section 8) */
	uint32_t snap_state;         /* enum ctl_snap_state */
	int32_t snap_fd;             /* program's fd of the held buffers, or -1 */
	uint32_t snap_holder;        /* pid of the controller writing them */
	uint64_t snap_size;          /* bytes of the held buffers */
	/* The spare buffers (READY), so that a watcher can map them before
	 * they go live; spare_gen increments when they change. */
	int32_t spare_fd;            /* program's fd, or -1 */
	uint32_t spare_gen;
	uint64_t spare_size;
	uint32_t snap_count;         /* snapshots taken */
	/* Futex: ringtrace_snapshot() increments it and wakes the waiters
	 * (`snapshot --watch`, the flight recorder), which serve it. */
	uint32_t snap_req;
	/* Of those, the ones a trigger posted (--snapshot-on), and the
	 * trigger's text (NUL-terminated, empty when none is armed). */
	uint32_t snap_trig;
	/* snap_req as the last snapshot's swap found it: the requests made
	 * before the swap, whose events it holds, are served by it. */
	uint32_t snap_served;
	/* Futex: the flight recorder's pid once it watches the block; the
	 * program's start waits for it (1 s at most) so that no request
	 * comes before anybody serves it. */
	uint32_t watcher;
	char trigger[256];
	/* The last snapshot, for benchmarks: ns to attach the spare to the
	 * registry (its event descriptions), to publish it (the swap proper:
	 * writers use it from then on), and the grace period after it. */
	uint64_t snap_attach_ns, snap_swap_ns, snap_grace_ns;

	/* mailbox */
	uint32_t cmd_lock;           /* controller pid, 0 = free */
	uint32_t cmd_seq;            /* futex, controller -> program */
	uint32_t done_seq;           /* futex, program -> controller */
	int32_t result;              /* >= 0 or -errno */
	uint32_t op;
	uint32_t cmd_state;          /* enum ctl_cmd_state: who owns the request */
	uint64_t arg0, arg1;
	char msg[CTL_MSG];           /* answer text (NUL-terminated) */
	char text[CTL_TEXT];         /* request: NUL-separated patterns, empty one ends */
};

/* Layout of the file: the block, the registry log, the enabled bytes. */
#define CTL_REG_OFF   (4096u * ((sizeof(struct ctl_block) + 4095) / 4096))
#define CTL_EN_OFF    (CTL_REG_OFF + CTL_REG_SIZE)
#define CTL_TOTAL     (CTL_EN_OFF + CTL_MAX_IDS)

/* A pattern as `enable` and `disable` accept it: provider:name globs
 * (or "*"), printable, no spaces, balanced brackets. 0 or -EINVAL. */
int ctl_pattern_valid(const char *pat);

/* Field 22 of /proc/PID/stat (start time in clock ticks), 0 if unknown:
 * with the pid, it names one process for its whole life. */
uint64_t ctl_proc_start_time(pid_t pid);
/* Its state letter (field 3: 'R', 'S', 'Z' for a zombie, ...), 0 if none. */
int ctl_proc_state(pid_t pid);
/* Its parent (field 4: 0 for a process whose parent is outside our pid
 * namespace), -1 if it is gone. */
pid_t ctl_proc_ppid(pid_t pid);

struct timespec;
/* futex(2) on a word of the block (shared, not FUTEX_PRIVATE): both sides
 * sleep on and wake each other through cmd_seq and done_seq. */
long ctl_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *timeout);

#endif
