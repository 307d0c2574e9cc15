/*
 * ctl_watch.h - the snapshot watcher's side of the control block (ctl.h,
 * docs/design.md section 8): who serves a program's snapshot requests,
 * waiting for those requests, and keeping the program's live and spare
 * buffers mapped across swaps.
 *
 * Called by the tool (src/session/snapshot.c: `snapshot --watch`,
 * `record --flight-recorder`, `record -p PID --snapshot`), once per
 * request or per 100 ms wait. Every word of the block is read with the
 * ordering the program's side (src/lib/agent.c) pairs with; nothing here
 * prints: negative errno returns.
 */
#ifndef RINGTRACE_CTL_WATCH_H
#define RINGTRACE_CTL_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl/ctl_client.h"

/*
 * One watcher serves a program's snapshot requests: two would both take a
 * snapshot at each. Claim the block's watcher field for this process (a
 * dead watcher's pid is taken over) and wake a program waiting for one.
 * 0, or -EBUSY with the live watcher's pid in *ret_holder.
 */
int ctl_watch_claim(struct ctl_handle *h, pid_t *ret_holder);
/* Give the field back if it is still ours (NULL block: nothing). */
void ctl_watch_release(struct ctl_handle *h);

/* The request counters, as the program publishes them. */
struct ctl_snap_counts {
	uint32_t req;                /* snapshot requests made (snap_req) */
	uint32_t trig;               /* ... of which a trigger posted (snap_trig) */
};
void ctl_snap_counts(const struct ctl_handle *h, struct ctl_snap_counts *ret);
/* snap_req as the last swap found it: the requests it served. */
uint32_t ctl_snap_served(const struct ctl_handle *h);
/* The number of the last snapshot taken (snap_count). */
uint32_t ctl_snap_count(const struct ctl_handle *h);
/* enum ctl_snap_state: whether snapshots are enabled, one is held. */
uint32_t ctl_snap_state(const struct ctl_handle *h);
/* The armed trigger's text into buf ("" if none; always terminated). */
void ctl_snap_trigger(const struct ctl_handle *h, char *buf, size_t size);

/*
 * Sleep until the request counter moves away from `seen`, or timeout_ms
 * pass, or a signal comes. 0 when it differs (or may: a wake-up), -ETIMEDOUT,
 * -EINTR.
 */
int ctl_snap_wait(struct ctl_handle *h, uint32_t seen, int timeout_ms);

/*
 * Did the program swap its buffers exactly once since the watcher mapped
 * `old` as its live ones, for us (no other controller holds the
 * swapped-out ones)? Then `old` maps what the snapshot holds, even if the
 * program is gone. 1 or 0.
 */
int ctl_snap_swapped_since(const struct ctl_handle *h, const struct ctl_ring *old);

/*
 * Keep `live` mapping the program's live buffers and `spare` its spare
 * ones (snapshots enabled), both of which change at every snapshot.
 * While the program lives its descriptors are reached through /proc; once
 * it is gone, a spare whose descriptor the block names as live becomes
 * `live`. A mapping that cannot be made is left empty (rb NULL): the
 * program may be gone. Returns 0, or the negative errno of the last
 * mapping that failed.
 */
int ctl_watch_follow(struct ctl_handle *h, struct ctl_ring *live, struct ctl_ring *spare);

/* A mapping made before the block existed (the region a recorder created
 * for the program it starts) becomes the watcher's `live` one: its
 * generation and descriptor number are taken from the block. */
void ctl_watch_adopt(const struct ctl_handle *h, struct ctl_ring *live);

#endif
