/*
 * attach.c - `ringtrace record -p PID|NAME`: attach to a running program
 * through its control block (src/ctl/), switch tracing on if it is off,
 * map its buffers through /proc/PID/fd, become their one reader and write
 * what it traces until Ctrl-C or its exit; then detach, leaving it as it
 * was found. The opening and detaching are shared with `show` (show.c)
 * and `record -p --snapshot` (snapshot.c).
 *
 * Runs on the caller's thread; one round per closed sub-buffer or 100 ms.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "session/session_int.h"

int sess_process_alive(const struct sess *r)
{
	if (kill(r->child, 0) < 0 && errno == ESRCH)
		return 0;
	return !ctl_is_stale(r->live.ctl.b);
}

void sess_release_reader(struct sess *r)
{
	if (!r->live.reader_claimed)
		return;
	ctl_ring_release_reader(r->rb);
	r->live.reader_claimed = 0;
}

/* Open the control block of the program named by -p (r->o->attach).
 * 0, or a negative errno after a message. */
int sess_live_open(struct sess *r, enum sess_src who)
{
	char err[512];
	pid_t pid;
	int k;
	if ((k = ctl_resolve(r->o->attach, &pid, err, sizeof(err))) < 0 ||
	    (k = ctl_open(pid, &r->live.ctl, CTL_OPEN_WRITE, err, sizeof(err))) < 0) {
		sess_log(who, "%s", err);
		return k;
	}
	r->child = pid;
	memcpy(r->comm, r->live.ctl.b->comm, sizeof(r->live.ctl.b->comm));
	r->comm[sizeof(r->live.ctl.b->comm)] = 0;
	r->progname = r->comm;
	return 0;
}

/* Open the program, switch tracing on if it is off, map its buffers and
 * become their reader. 0, or a negative errno after a message. */
int sess_live_attach(struct sess *r, enum sess_src who)
{
	char err[512], msg[CTL_MSG];
	int k = sess_live_open(r, who);
	if (k < 0)
		return k;
	pid_t pid = r->child;
	r->attached = 1;
	if (!__atomic_load_n(&r->live.ctl.b->tracing, __ATOMIC_ACQUIRE)) {
		k = ctl_request(&r->live.ctl, CTL_OP_ON, 0, 0, NULL, 0, 5000, msg, sizeof(msg));
		if (k < 0) {
			sess_log(who, "cannot switch tracing on in process %d: %s", (int)pid, *msg ? msg : strerror(-k));
			return k;
		}
		r->live.turned_on = 1;
	}
	struct ctl_ring ring;
	if ((k = ctl_ring_open(&r->live.ctl, &ring, err, sizeof(err))) < 0) {
		sess_log(who, "process %d: %s", (int)pid, err);
		return k;
	}
	r->mem = ring.mem;
	r->mem_size = ring.size;
	r->rb = ring.rb;
	if ((k = ctl_ring_claim_reader(r->rb, err, sizeof(err))) < 0) {
		sess_log(who, "process %d: %s", (int)pid, err);
		return k;
	}
	r->live.reader_claimed = 1;
	k = sess_reader_from_region(r);
	if (k < 0) {
		sess_log(who, "process %d: %s", (int)pid, strerror(-k));
		return k;
	}
	sess_lost_counts(r->rb, r->live.lost0);
	return 0;
}

/* Give the reader's place back; if we switched tracing on, switch it off
 * and free the buffers: the program is left as we found it. */
void sess_live_detach(struct sess *r, enum sess_src who)
{
	char msg[CTL_MSG];
	sess_release_reader(r);
	if (r->live.turned_on && r->live.ctl.b && sess_process_alive(r)) {
		int k = ctl_request(&r->live.ctl, CTL_OP_OFF, 1, 0, NULL, 0, 5000, msg, sizeof(msg));
		if (k < 0 && sess_process_alive(r))
			sess_log(who, "cannot switch tracing off in process %d: %s", (int)r->child, msg);
	}
}

/* record -p: 0 with *ret_status 0, or a negative errno with *ret_status 1. */
int sess_attach(struct sess *r, int *ret_status)
{
	const struct sess_opts *o = r->o;
	char msg[CTL_MSG];
	int k;
	*ret_status = 1;
	if ((k = sess_live_attach(r, SESS_SRC_RECORD)) < 0)
		goto out;
	pid_t pid = r->child;
	if ((k = sess_alloc_stream_fds(r)) < 0 || (k = sess_make_outdir(r)) < 0)
		goto out;
	sess_log(SESS_SRC_RECORD, "attached to '%s' (pid %d), recording to %s; Ctrl-C detaches", r->comm, (int)pid,
		 r->outdir);

	int exited = 0;
	while (!sess_stopped(r)) {
		unsigned got = sess_round(r);
		if (o->on_round) {
			struct sess_stats st;
			sess_stats_get(r, &st);
			o->on_round(o->arg, &st);
		}
		if (!sess_process_alive(r)) {
			exited = 1;
			break;
		}
		if (got == 0)
			rb_reader_wait(r->reader, 100);
	}
	if (!exited) {
		/* Close the open sub-buffers so that we take them whole: tracing
		 * pauses for a grace period (and stays off if we turned it on). */
		k = ctl_request(&r->live.ctl, CTL_OP_FLUSH, r->live.turned_on, 0, NULL, 0, 5000, msg, sizeof(msg));
		if (k < 0 && sess_process_alive(r))
			sess_log(SESS_SRC_RECORD, "cannot flush the buffers of process %d: %s", (int)pid, msg);
		if (!sess_process_alive(r))
			exited = 1;
	}
	sess_finish(r, exited);
	*ret_status = 0;
	k = 0;
	if (exited)
		sess_log(SESS_SRC_RECORD, "process %d exited", (int)pid);
out:
	sess_live_detach(r, SESS_SRC_RECORD);
	if (k < 0 && r->outdir && r->outdir_created && sess_dir_is_empty(r->outdir))
		rmdir(r->outdir);
	sess_cleanup(r);
	return k;
}
