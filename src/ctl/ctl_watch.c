/*
 * ctl_watch.c - the snapshot watcher's accesses to a program's control
 * block (ctl_watch.h). The tool calls these from its watch loop, a few
 * times per snapshot request and once per 100 ms wait: correctness of the
 * orderings matters here, not speed.
 *
 * The partners of every atomic are in src/lib/agent.c (flight_start(),
 * the snapshot swap and ringtrace_snapshot()).
 */
#include "ctl/ctl_watch.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int ctl_watch_claim(struct ctl_handle *h, pid_t *ret_holder)
{
	uint32_t me = (uint32_t)getpid();
	for (;;) {
		uint32_t w = __atomic_load_n(&h->b->watcher, __ATOMIC_ACQUIRE);
		if (w && w != me && (kill((pid_t)w, 0) == 0 || errno != ESRCH)) {
			if (ret_holder)
				*ret_holder = (pid_t)w;
			return -EBUSY;
		}
		/* Release: pairs with the acquire load in flight_start(),
		 * which may start the program now. */
		if (__atomic_compare_exchange_n(&h->b->watcher, &w, me, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			ctl_futex(&h->b->watcher, FUTEX_WAKE, INT_MAX, NULL);
			return 0;
		}
	}
}

void ctl_watch_release(struct ctl_handle *h)
{
	uint32_t me = (uint32_t)getpid();
	/* Release: what we did as the watcher happens before the next one
	 * claims it (its acquire CAS above). */
	if (h->b)
		__atomic_compare_exchange_n(&h->b->watcher, &me, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

void ctl_snap_counts(const struct ctl_handle *h, struct ctl_snap_counts *ret)
{
	/* A trigger counts snap_trig before snap_req (release stores in the
	 * program): read in that order, trig may count a trigger whose
	 * request req does not show yet, never the other way. */
	ret->req = __atomic_load_n(&h->b->snap_req, __ATOMIC_ACQUIRE);
	ret->trig = __atomic_load_n(&h->b->snap_trig, __ATOMIC_ACQUIRE);
}

uint32_t ctl_snap_served(const struct ctl_handle *h)
{
	/* Published before the answer to CTL_OP_SNAPSHOT (release store of
	 * snap_state in the program). */
	return __atomic_load_n(&h->b->snap_served, __ATOMIC_ACQUIRE);
}

uint32_t ctl_snap_count(const struct ctl_handle *h)
{
	return __atomic_load_n(&h->b->snap_count, __ATOMIC_ACQUIRE);
}

uint32_t ctl_snap_state(const struct ctl_handle *h)
{
	/* Pairs with the program's release stores of snap_state. */
	return __atomic_load_n(&h->b->snap_state, __ATOMIC_ACQUIRE);
}

void ctl_snap_trigger(const struct ctl_handle *h, char *buf, size_t size)
{
	if (!size)
		return;
	/* Written by the program before it counts snap_trig (release, pairs
	 * with the acquire load in ctl_snap_counts()); a later rearm may
	 * change it under us, so copy it bounded. */
	size_t n = strnlen(h->b->trigger, sizeof(h->b->trigger));
	if (n >= size)
		n = size - 1;
	memcpy(buf, h->b->trigger, n);
	buf[n] = 0;
}

int ctl_snap_wait(struct ctl_handle *h, uint32_t seen, int timeout_ms)
{
	struct timespec d = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };
	/* Pairs with the FUTEX_WAKE after the program's increment of snap_req
	 * in ringtrace_snapshot(): no wake-up is lost, the kernel compares
	 * the word with `seen` before it sleeps. */
	if (ctl_futex(&h->b->snap_req, FUTEX_WAIT, seen, &d) == 0)
		return 0;
	if (errno == ETIMEDOUT)
		return -ETIMEDOUT;
	if (errno == EINTR)
		return -EINTR;
	return 0; /* EAGAIN: it moved already */
}

int ctl_snap_swapped_since(const struct ctl_handle *h, const struct ctl_ring *old)
{
	/* Pairs with the program's release stores of snap_state and ring_gen. */
	uint32_t state = __atomic_load_n(&h->b->snap_state, __ATOMIC_ACQUIRE);
	if (state == CTL_SNAP_HELD && h->b->snap_holder != (uint32_t)getpid())
		return 0;
	return old->rb && __atomic_load_n(&h->b->ring_gen, __ATOMIC_ACQUIRE) == old->gen + 1;
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

void ctl_watch_adopt(const struct ctl_handle *h, struct ctl_ring *live)
{
	/* Pairs with the program's release store of ring_gen after ring_fd. */
	live->gen = __atomic_load_n(&h->b->ring_gen, __ATOMIC_ACQUIRE);
	live->fdn = h->b->ring_fd;
}

int ctl_watch_follow(struct ctl_handle *h, struct ctl_ring *live, struct ctl_ring *spare)
{
	char err[512];
	int ret = 0, k;
	/* Pairs with the program's release store of spare_gen after it
	 * published spare_fd. */
	uint32_t sgen = __atomic_load_n(&h->b->spare_gen, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&h->b->snap_state, __ATOMIC_ACQUIRE) == CTL_SNAP_READY &&
	    (!spare->rb || spare->gen != sgen)) {
		ctl_ring_close(spare);
		if ((k = ctl_spare_open(h, spare, err, sizeof(err))) < 0) {
			memset(spare, 0, sizeof(*spare));
			ret = k;
		}
	}
	/* Pairs with the program's release store of ring_gen after ring_fd. */
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
			if ((k = ctl_ring_open(h, live, err, sizeof(err))) < 0) {
				memset(live, 0, sizeof(*live));
				ret = k;
			}
		}
	}
	return ret;
}
