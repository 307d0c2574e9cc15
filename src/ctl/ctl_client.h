/*
 * ctl_client.h - the controller's side of the control block (ctl.h): find
 * a program, validate its block, send it a request, map its buffers.
 *
 * Everything read from a block or a region is validated; every failure is
 * a negative errno plus a one-line message in `err`. Nothing here prints.
 */
#ifndef RINGTRACE_CTL_CLIENT_H
#define RINGTRACE_CTL_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl/ctl.h"
#include "ringbuf/rb.h"

struct ctl_handle {
	pid_t pid;
	struct ctl_block *b;         /* mapped read-only, or read-write for CTL_OPEN_WRITE */
	char path[64];
	uid_t uid;                   /* the process's real uid, from /proc (never the block's word) */
	int writable;                /* CTL_OPEN_WRITE: requests, buffers mapped read-write */
	int procfd;                  /* /proc/PID, pinning the process that was checked */
};

/* How a command uses a program: CTL_OPEN_READ only looks (ps, list, stat;
 * the block and the buffers are opened O_RDONLY and mapped PROT_READ, and
 * ctl_request() refuses); CTL_OPEN_WRITE sends requests and consumes the
 * buffers. */
enum { CTL_OPEN_READ = 0, CTL_OPEN_WRITE = 1 };

/*
 * Map and validate the block of `pid`. Besides its layout, the block is
 * trusted only if its file is a regular file with one link, writable by
 * its owner alone, and owned by the process's real uid, which also owns
 * /proc/PID; a non-root caller must be that uid. Nothing is opened
 * writable before these checks passed. -ESRCH: no such process, no block,
 * or a stale one; -EPERM: refused (the message says why); -EBADMSG or
 * -EPROTO: damaged or from another version.
 */
int ctl_open(pid_t pid, struct ctl_handle *h, int mode, char *err, size_t errlen);
void ctl_close(struct ctl_handle *h);

/* A process by pid ("1234") or by name (comm or executable's base name,
 * when exactly one live traceable process of ours matches). */
int ctl_resolve(const char *spec, pid_t *ret, char *err, size_t errlen);

/* Whether the block belongs to a process that is gone (dead, pid reused,
 * or exec'ed into another program). */
int ctl_is_stale(const struct ctl_block *b);

/* Remove the block of `pid` if it is stale and its program died without
 * removing it; 1 if removed, 0 if there is none, it is live, or a process
 * still runs with that pid (one that exec'ed: its new image may be
 * replacing the block). */
int ctl_remove_if_stale(pid_t pid);

/* Every block in CTL_DIR: fn(pid, path, stale?, arg) for each file name
 * that looks like one. */
void ctl_scan(void (*fn)(pid_t pid, const char *path, void *arg), void *arg);

/*
 * Send one request and wait for the answer (at most timeout_ms; a process
 * that exits meanwhile ends the wait with -ESRCH). -EBADF if the handle
 * was opened CTL_OPEN_READ. Returns the program's
 * result (>= 0, or its -errno with its message in `msg`), or a negative
 * errno of our own with a message in `msg`.
 */
int ctl_request(struct ctl_handle *h, uint32_t op, uint64_t arg0, uint64_t arg1, const char *text,
		size_t textlen, int timeout_ms, char *msg, size_t msglen);

/* The program's buffers, mapped through /proc/PID/fd/N (read-write only if
 * the handle is) and validated (ring_gen tells whether they are still
 * current). The descriptor must be ringtrace buffers by its name (a
 * memfd, or a region `ringtrace record` created) and a regular file owned
 * by the process's uid; that is checked before it is opened, and again on
 * what was opened. -EPERM when refused so. */
struct ctl_ring {
	void *mem;
	uint64_t size;
	struct ringtrace__rb *rb;
	uint32_t gen;
	int32_t fdn;                 /* the program's descriptor number */
	uint64_t ino;                /* the memfd's inode: fd numbers are reused */
};
int ctl_ring_open(struct ctl_handle *h, struct ctl_ring *ring, char *err, size_t errlen);
void ctl_ring_close(struct ctl_ring *ring);

/* The same for the buffers a snapshot swapped out (CTL_OP_SNAPSHOT), which
 * the program holds until CTL_OP_SNAP_RELEASE: -ENOENT if none is held. */
int ctl_snap_open(struct ctl_handle *h, struct ctl_ring *ring, char *err, size_t errlen);

/* The same for the spare buffers (snapshots enabled, none held): a
 * watcher maps them before a snapshot makes them live. ring->gen is the
 * spare generation. -ENOENT if there are none. */
int ctl_spare_open(struct ctl_handle *h, struct ctl_ring *ring, char *err, size_t errlen);
/* Become the one consumer of a region (a consumer that died loses its
 * place); -EBUSY with a message if another one is alive. */
int ctl_ring_claim_reader(struct ringtrace__rb *rb, char *err, size_t errlen);
void ctl_ring_release_reader(struct ringtrace__rb *rb);

/* Per-CPU and total counters of a region, for `ringtrace stat` and `ps`. */
struct ctl_cpu_stat {
	uint64_t written;            /* events committed */
	uint64_t in_buffer;          /* committed and not yet read nor overwritten */
	uint64_t lost_full, lost_overwrite, lost_too_big, lost_nocpu;
	uint64_t bytes;              /* bytes reserved (position) */
	uint64_t read_subbufs, read_events;
	/* Blocking mode (docs/design.md): events that waited for room, ns
	 * waited in all, waits that timed out (their events in lost_full). */
	uint64_t block_waits, block_ns, block_timeouts;
};
void ctl_ring_cpu_stat(const struct ringtrace__rb *rb, uint32_t cpu, struct ctl_cpu_stat *ret);
/* tot += s, field by field (the totals over CPUs of stat and the mount). */
void ctl_cpu_stat_add(struct ctl_cpu_stat *tot, const struct ctl_cpu_stat *s);

/* One entry of a registry log (a block's or a region's, docs/design.md
 * section 4): kind 1 EVENT (provider, name, signature, origin), kind 2
 * MESSAGE (one line). */
struct ctl_log_entry {
	uint32_t kind, id;
	const char *s[4];
	int n;                       /* strings present */
};
/* The entry at *pos of a log whose first `used` bytes are complete:
 * 1 (and *pos moves past it), 0 at the end, -EBADMSG if damaged. */
int ctl_log_next(const char *log, uint64_t used, uint64_t *pos, struct ctl_log_entry *e);

#endif
