/*
 * fs.h - `ringtrace mount DIR`: a tracefs-like file system over every
 * traceable program (docs/mount.md), internal interfaces.
 *
 *   cmd_mount.c  the command: options, FUSE checks, mount, daemon, loop
 *   fs_ops.c     the tree (DIR/PID/..., by-name/) and the FUSE operations
 *   fs_pipe.c    trace_pipe and snapshot_pipe: consuming, blocking reads
 *   fs_live.c    a program's packets decoded into `ringtrace show` lines
 *
 * Everything runs in the mount's daemon, on libfuse's worker threads; the
 * programs are reached only through their control blocks (src/ctl).
 */
#ifndef RINGTRACE_FS_H
#define RINGTRACE_FS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/clock.h"
#include "common/sig.h"
#include "ctl/ctl_client.h"
#include "ringbuf/rb.h"

/* ---- fs_live.c ------------------------------------------------------------ */

struct fs_dec_event {
	uint32_t id;
	char *provider, *name, *signature;
	struct sig_field fields[SIG_FIELDS_MAX];
	size_t nfields;
};

/* What decoding one region's packets needs: its registry so far and the
 * clock sample the timestamps are calibrated from. */
struct fs_dec {
	pid_t pid;
	char comm[17];
	struct ringtrace__rb *rb;
	struct fs_dec_event *ev;
	size_t nev, cap;
	uint64_t reg_pos;
	uint32_t clock;
	uint8_t uuid[16];
	struct clk_sample c0;
};

/* A private copy of a packet, and how many of its events were printed
 * already (a peeked open sub-buffer comes again, longer). */
struct fs_pkt {
	char *data;
	size_t len;
	uint32_t cpu;
	uint64_t seq;
	uint64_t skip, seen;
	int peek;
	int borrowed;                /* data points into the region: not ours to free */
};

struct fs_pkts {
	struct fs_pkt *v;
	size_t n, cap;
};

void fs_dec_init(struct fs_dec *d, pid_t pid, const char *comm, struct ringtrace__rb *rb);
void fs_dec_free(struct fs_dec *d);
/* Read the registry entries added since the last call. */
void fs_dec_registry(struct fs_dec *d);
/* rb_payload_size_fn over the events read so far. */
int fs_dec_payload_size(void *arg, uint32_t id, const char *payload, size_t avail, size_t *ret);

int fs_pkts_add(struct fs_pkts *v, const struct rb_packet *pkt, uint64_t skip, int peek);
void fs_pkts_free(struct fs_pkts *v);

/* Print the events of the packets, sorted by time, one `ringtrace dump`
 * line each (thread records and losses left out), skipping the first
 * p->skip events of each packet and counting them all in p->seen. The
 * packets come CPU by CPU, each CPU's in order (what fs_region_copy() and
 * a round of trace_pipe give): one reader per CPU holds one packet at a
 * time, and the CPUs are merged by time above them, so memory stays a
 * packet per CPU however many packets there are. 0, -EPIPE when `out`
 * failed, or -errno. */
int fs_dec_print(struct fs_dec *d, struct fs_pkts *v, FILE *out);

/* Every sub-buffer of a region that no writer is using (tracing stopped
 * and flushed, or a held snapshot), cut at the first record never
 * written; the region is not changed. Closed, complete sub-buffers are
 * read in place when no consumer may take them meanwhile (the region has
 * no reader): memory then holds one copy of an open sub-buffer per CPU
 * at most, whatever the buffers' size. 0 or -ENOMEM. */
int fs_region_copy(struct fs_dec *d, struct fs_pkts *v);

/* ---- fs_pipe.c ------------------------------------------------------------- */

struct fs_pipe;

/* Open a consuming reader of the live buffers (snap = 0) or of the held
 * snapshot (snap = 1) of pid. -ESRCH, -EPERM, -EBUSY (another reader),
 * -ENOENT (snapshot_pipe with no snapshot held). */
int fs_pipe_open(pid_t pid, int snap, struct fs_pipe **ret);
/* Up to size bytes of text. trace_pipe waits until there is some, the
 * reader is interrupted (-EINTR) or the file system goes away (0);
 * snapshot_pipe returns 0 once the snapshot is drained. */
ssize_t fs_pipe_read(struct fs_pipe *p, char *buf, size_t size);
void fs_pipe_close(struct fs_pipe *p);

/* ---- cmd_mount.c ------------------------------------------------------------ */

/* Whether the mount is going away (unmounted, or a signal asked the daemon
 * to stop): blocking reads end then. */
int fs_stopping(void);
/* Whether the calling FUSE request was interrupted (the reader's signal). */
int fs_interrupted(void);

/* ---- fs_ops.c --------------------------------------------------------------- */

struct fuse_operations;
extern const struct fuse_operations fs_operations;

#endif
