/*
 * snapshot.c - snapshots: the buffers of a live program written out while
 * it goes on tracing. `ringtrace snapshot PID` (one, --count N, --watch),
 * `record --flight-recorder -- PROGRAM` (the program traces into its own
 * buffers in overwrite mode; each snapshot it asks for is written) and
 * `record -p PID --snapshot` (the same on a running program). A watcher
 * keeps the program's live and spare buffers mapped, so that if it is
 * killed what they hold goes to DIR/recovered.
 *
 * The control-block side of the protocol is src/ctl/ctl_watch.c; this file
 * decides what to write and where. Called by the CLI's thread; a watcher
 * sleeps on the request word, 100 ms at most.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/outdir.h"
#include "ctl/ctl_watch.h"
#include "session/session_int.h"

/*
 * `ringtrace snapshot PID [-o DIR]`: the program swaps its live buffers
 * with its spare ones (CTL_OP_SNAPSHOT; writers go on at once in the
 * spare); we map the old ones, which no probe writes any more, write them
 * out as a trace like `record` does (everything they hold, the open
 * sub-buffers included), then give them back (CTL_OP_SNAP_RELEASE).
 */
/*
 * Write a region of the program open in *h that no probe writes any more
 * (a held snapshot, or the live buffers of a program that died) as a
 * trace in outdir (NULL: the default name). Takes the mapping in *ring.
 * 0, or a negative errno after a message.
 */
int sess_write_region(pid_t pid, const char *comm, struct ctl_ring *ring, const struct snap_dir *outdir,
		      unsigned out_flags, uint32_t no, const char *trigger, int scan)
{
	struct sess rr, *r = &rr;
	sess_init(r, NULL);
	r->out_flags = out_flags;
	r->outdir_opt = outdir ? outdir->path : NULL;
	r->outdir_at = outdir ? outdir->at : AT_FDCWD;
	r->outdir_at_set = 1;
	r->child = pid;
	snprintf(r->comm, sizeof(r->comm), "%s", comm);
	r->progname = r->comm;
	r->snap.no = no;
	r->snap.trigger = trigger;
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(r->snap.time, sizeof(r->snap.time), "%Y-%m-%dT%H:%M:%S%z", &tm);
	r->mem = ring->mem;
	r->mem_size = ring->size;
	r->rb = ring->rb;
	memset(ring, 0, sizeof(*ring));
	int status;
	if ((status = sess_reader_from_region(r)) < 0) {
		sess_log(SESS_SRC_SNAPSHOT, "process %d: %s\n", (int)pid, strerror(-status));
		goto out;
	}
	char name[192];
	if (!outdir) {
		/* sess_make_outdir() adds the date: ringtrace-snapshot-NAME-PID-N-DATE. */
		snprintf(name, sizeof(name), "snapshot-%.16s-%d-%u", r->comm, (int)pid, no);
		r->progname = name;
	}
	if ((status = sess_alloc_stream_fds(r)) < 0 || (status = sess_make_outdir(r)) < 0)
		goto out;
	r->progname = r->comm;
	if (scan)
		sess_scan_threads(r);
	while (sess_round(r) > 0)
		;
	sess_finish(r, 1);
	status = r->write_failed ? -EIO : 0;
out:
	if (status != 0 && r->outdir && r->outdir_created && sess_dir_is_empty(r->outdir))
		rmdir(r->outdir);
	sess_cleanup(r);
	return status;
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
 * default name). 0, or a negative errno after a message. A watcher passes its live and
 * spare mappings (ctl_watch_follow()) and `w`, others NULL.
 */

static int snapshot_one(struct ctl_handle *h, const struct snap_dir *outdir, unsigned out_flags, const char *trigger,
			struct ctl_ring *live, struct ctl_ring *spare, struct snap_watch_out *w)
{
	char err[512], msg[CTL_MSG];
	pid_t pid = h->pid;
	int k = ctl_request(h, CTL_OP_SNAPSHOT, (uint64_t)getpid(), 0, NULL, 0, 5000, msg, sizeof(msg));
	/* A program that exits may have swapped and been gone before it
	 * answered: the buffers it swapped out are the snapshot. */
	int late = k < 0 && live && ctl_snap_swapped_since(h, live);
	if (k < 0 && !late) {
		sess_log(SESS_SRC_SNAPSHOT, "process %d: %s\n", (int)pid, *msg ? msg : strerror(-k));
		return k;
	}
	if (k >= 0 && *msg)
		sess_log(SESS_SRC_SNAPSHOT, "%s\n", msg);
	if (w) {
		w->swapped = 1;
		/* Published before the answer (release store of snap_state in
		 * the program): the count of this swap, not of a later one,
		 * since the buffers are ours until we give them back. */
		if (k >= 0)
			w->served = ctl_snap_served(h);
	}
	/* A watcher's mapping of the buffers just swapped out (the held ones,
	 * if no other swap came between), kept until they are written: if
	 * the program exits before we open them through /proc, these are
	 * the snapshot. The live ones are followed at once. */
	struct ctl_ring old = { 0 };
	if (live) {
		old = *live;
		memset(live, 0, sizeof(*live));
		ctl_watch_follow(h, live, spare);
	}
	uint32_t no = k >= 0 ? (uint32_t)k : ctl_snap_count(h);
	struct ctl_ring ring;
	int status = -ENOENT;
	if (k >= 0 && ctl_snap_open(h, &ring, err, sizeof(err)) == 0)
		status = sess_write_region(pid, h->b->comm, &ring, outdir, out_flags, no, trigger, kill(pid, 0) == 0);
	else if (ctl_snap_swapped_since(h, &old))
		status = sess_write_region(pid, h->b->comm, &old, outdir, out_flags, no, trigger, 0);
	else if (k >= 0)
		sess_log(SESS_SRC_SNAPSHOT, "%s\n", err);
	else
		sess_log(SESS_SRC_SNAPSHOT, "the buffers process %d swapped out are out of reach\n", (int)pid);
	ctl_ring_close(&old);
	/* The program alive or not: a dead one needs nothing back. */
	if (kill(pid, 0) == 0 && !ctl_is_stale(h->b)) {
		k = ctl_request(h, CTL_OP_SNAP_RELEASE, 0, 0, NULL, 0, 5000, msg, sizeof(msg));
		if (k < 0 && kill(pid, 0) == 0)
			sess_log(SESS_SRC_SNAPSHOT, "cannot give the buffers back to process %d: %s\n", (int)pid,
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
 * Serve the snapshot requests of the program open in *h (ringtrace_snapshot()
 * calls) into outdir/snapshot-N until it exits or *stop is set. Keeps the
 * program's live buffers mapped: if it dies from a signal, what they hold
 * is written to outdir/recovered (post-mortem; committed events are
 * kept). `child`: our child (reaped here, its status in *wstatus), or 0.
 * Returns the number of snapshots that failed.
 */
/* The figures of a snapshot session for the caller's on_round: what the
 * program committed and lost into its live buffers, and how many
 * snapshots are written. */
struct watch_totals {
	const struct ringtrace__rb *rb;  /* the live buffers last looked at */
	struct sess_stats last, base;    /* their figures; those of the buffers before */
};

static void watch_stats(struct watch_totals *wt, const struct ctl_ring *live, long snapshots, struct sess_stats *ret)
{
	/* A snapshot swaps the live buffers for fresh ones, whose counters
	 * start at 0: the figures of the ones before are added in. */
	if (live->rb != wt->rb) {
		wt->base.events += wt->last.events;
		wt->base.lost_full += wt->last.lost_full;
		wt->base.lost_overwrite += wt->last.lost_overwrite;
		wt->base.lost_too_big += wt->last.lost_too_big;
		wt->base.lost_nocpu += wt->last.lost_nocpu;
		memset(&wt->last, 0, sizeof(wt->last));
		wt->rb = live->rb;
	}
	struct sess_stats *st = &wt->last;
	memset(st, 0, sizeof(*st));
	if (live->rb) {
		const struct ringtrace__rb *rb = live->rb;
		uint64_t ring = rb->buf_mask + 1;
		for (uint32_t c = 0; c < rb->ncpus; c++) {
			struct ctl_cpu_stat cs;
			ctl_ring_cpu_stat(rb, c, &cs);
			st->events += cs.written;
			st->lost_full += cs.lost_full;
			st->lost_overwrite += cs.lost_overwrite;
			st->lost_too_big += cs.lost_too_big;
			st->lost_nocpu += cs.lost_nocpu;
			/* Overwrite mode: full once it wrapped. */
			unsigned pct = !ring || cs.bytes >= ring ? 100 : (unsigned)(cs.bytes * 100 / ring);
			if (pct > st->fullest_pct || c == 0) {
				st->fullest_pct = pct;
				st->fullest_cpu = c;
			}
		}
	}
	*ret = *st;
	ret->events += wt->base.events;
	ret->lost_full += wt->base.lost_full;
	ret->lost_overwrite += wt->base.lost_overwrite;
	ret->lost_too_big += wt->base.lost_too_big;
	ret->lost_nocpu += wt->base.lost_nocpu;
	ret->snapshot_mode = 1;
	ret->snapshots = (uint64_t)snapshots;
}

static int snapshot_watch(struct ctl_handle *h, int odfd, const char *outdir, unsigned out_flags, pid_t child,
			  int *wstatus, volatile sig_atomic_t *stop, struct ctl_ring *initial,
			  const struct sess_opts *o)
{
	/* The live buffers, and the spare ones mapped before a snapshot makes
	 * them live: whenever the program dies, we hold its current buffers. */
	struct ctl_ring live = { 0 }, spare = { 0 };
	if (initial) {
		live = *initial;
		ctl_watch_adopt(h, &live);
		memset(initial, 0, sizeof(*initial));
	}
	/* Our child's requests are all ours, those made before we looked
	 * included; another program's earlier requests are not. */
	struct ctl_snap_counts cnt;
	ctl_snap_counts(h, &cnt);
	uint32_t seen = child ? 0 : cnt.req;
	uint32_t seen_trig = child ? 0 : cnt.trig;
	int failed = 0, signaled = 0, reaped = 0;
	long n = 0;
	struct watch_totals wt = { 0 };
	struct sess_stats st;
	for (;;) {
		ctl_watch_follow(h, &live, &spare);
		/* Each round, and so before each swap: the buffers' figures are
		 * added in when they go (watch_stats). A round may serve a
		 * request without waiting: the caller hears of each. */
		if (o && o->on_round) {
			watch_stats(&wt, &live, n, &st);
			o->on_round(o->arg, &st);
		}
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
		ctl_snap_counts(h, &cnt);
		uint32_t req = cnt.req;
		if (req != seen) {
			/* Requests that came meanwhile are served by this one. */
			uint32_t nreq = req - seen;
			seen = req;
			/*
			 * Label it with the trigger if one fired since the last.
			 * A trigger counts snap_trig before snap_req
			 * (ctl_snap_counts()), so trig may
			 * already count a trigger whose request we have not
			 * seen yet: take at most as many triggers as requests,
			 * and leave the rest to label the next snapshot.
			 */
			uint32_t ntrig = cnt.trig - seen_trig;
			char label[300];
			if (ntrig) {
				ctl_snap_trigger(h, label, sizeof(label));
				if (!label[0])
					snprintf(label, sizeof(label), "trigger");
			} else
				snprintf(label, sizeof(label), "ringtrace_snapshot()");
			seen_trig += ntrig < nreq ? ntrig : nreq;
			char dir[PATH_MAX];
			snprintf(dir, sizeof(dir), "%s/snapshot-%ld", outdir, ++n);
			struct snap_dir sd = { odfd, dir };
			struct snap_watch_out w = { 0, seen };
			int k = dead ? -ESRCH : snapshot_one(h, &sd, out_flags, label, &live, &spare, &w);
			/* Requests made while we were getting to the swap are
			 * served by it (their events are in this snapshot), and
			 * so are their triggers, as many as there are. */
			if ((int32_t)(w.served - seen) > 0) {
				uint32_t extra = w.served - seen;
				seen = w.served;
				ctl_snap_counts(h, &cnt);
				uint32_t more = cnt.trig - seen_trig;
				seen_trig += more < extra ? more : extra;
			}
			if (k != 0 && !w.swapped && (dead || gone(h->pid, child))) {
				/* It asked and then exited (or died) before the
				 * swap: what its live buffers hold is the snapshot. */
				snprintf(label + strlen(label), sizeof(label) - strlen(label), ", at exit");
				if (live.rb)
					k = sess_write_region(h->pid, h->b->comm, &live, &sd, out_flags, 0, label, 0);
				else
					sess_log(SESS_SRC_SNAPSHOT, "process %d exited before its buffers could be mapped: "
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
		if (stop && *stop && !child)
			break;
		ctl_snap_wait(h, seen, 100);
	}
	if (signaled && live.rb) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s/recovered", outdir);
		struct snap_dir sd = { odfd, dir };
		sess_log(SESS_SRC_SNAPSHOT, "process %d %s: writing what its buffers hold to %s\n", (int)h->pid,
			child ? "was killed" : "is gone", dir);
		failed += sess_write_region(h->pid, h->b->comm, &live, &sd, out_flags, 0, "recover", 0) != 0;
	}
	ctl_ring_close(&live);
	ctl_ring_close(&spare);
	ctl_remove_if_stale(h->pid);
	return failed;
}

/* `ringtrace snapshot PID`: one snapshot, --count N of them, or --watch. */
int sess_snapshot(const struct sess_snap_opts *o)
{
	const char *outdir = o->outdir;
	long count = o->count, interval = o->interval_ms;
	int watch = o->watch;
	unsigned out_flags = o->outdir_flags;
	if ((count || watch) && !outdir) {
		sess_log(SESS_SRC_SNAPSHOT, "%s needs -o DIR (the snapshots go into DIR/snapshot-N)",
			 watch ? "--watch" : "--count");
		return -EINVAL;
	}
	if (count && watch) {
		sess_log(SESS_SRC_SNAPSHOT, "--count and --watch exclude each other");
		return -EINVAL;
	}
	char err[512];
	pid_t pid;
	struct ctl_handle h;
	int status;
	if ((status = ctl_resolve(o->target, &pid, err, sizeof(err))) < 0 ||
	    (status = ctl_open(pid, &h, CTL_OPEN_WRITE, err, sizeof(err))) < 0) {
		sess_log(SESS_SRC_SNAPSHOT, "%s", err);
		return status;
	}
	int odfd = -1, created = 0;
	status = 0;
	char why[256];
	struct snap_dir one = { AT_FDCWD, outdir };
	if (!count && !watch) {
		status = snapshot_one(&h, outdir ? &one : NULL, out_flags, "command", NULL, NULL, NULL);
	} else if ((odfd = outdir_open(AT_FDCWD, outdir, OUTDIR_CREATE | OUTDIR_EMPTY | out_flags, &created, why,
				       sizeof(why))) < 0) {
		sess_log(SESS_SRC_SNAPSHOT, "output directory '%s' %s\n", outdir, why);
		status = odfd;
	} else {
		pid_t w = 0;
		if (watch)
			ctl_watch_claim(&h, &w);
		if (w) {
			sess_log(SESS_SRC_SNAPSHOT, "process %d: pid %d serves its snapshots already\n", (int)pid, (int)w);
			status = -EBUSY;
			if (created)
				rmdir(outdir); /* made above, empty */
		} else if (watch) {
			if (ctl_snap_state(&h) == CTL_SNAP_OFF)
				sess_log(SESS_SRC_SNAPSHOT, "process %d: snapshots are not enabled, its requests fail until 'ringtrace snapshot-enable %d'\n",
					(int)pid, (int)pid);
			int ws = 0;
			status = snapshot_watch(&h, odfd, outdir, out_flags, 0, &ws, o->stop, NULL, NULL) ? -EIO : 0;
			ctl_watch_release(&h);
		}
		uint64_t t0 = sess_mono_ms();
		for (long n = 1; n <= count && !(o->stop && *o->stop); n++) {
			char dir[PATH_MAX];
			snprintf(dir, sizeof(dir), "%s/snapshot-%ld", outdir, n);
			struct snap_dir sd = { odfd, dir };
			if ((status = snapshot_one(&h, &sd, out_flags, "command", NULL, NULL, NULL)) != 0)
				break;
			uint64_t next = t0 + (uint64_t)(n * interval), now = sess_mono_ms();
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

/* One request for sess_attach_snapshot(); says why it failed. */
static int snap_request(struct sess *r, uint32_t op, uint64_t a0, uint64_t a1, const char *text, const char *what)
{
	char msg[CTL_MSG];
	int k = ctl_request(&r->live.ctl, op, a0, a1, text, text ? strlen(text) : 0, 5000, msg, sizeof(msg));
	if (k < 0 && (kill(r->child, 0) == 0 || errno != ESRCH))
		sess_log(SESS_SRC_RECORD, "process %d: cannot %s: %s\n", (int)r->child, what, *msg ? msg : strerror(-k));
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
int sess_attach_snapshot(struct sess *r, int *ret_status)
{
	int status = -EINVAL, mode_set = 0, enabled = 0, armed = 0, claimed = 0;
	*ret_status = 1;
	if ((status = sess_live_open(r, SESS_SRC_RECORD)) < 0)
		goto out;
	struct ctl_block *b = r->live.ctl.b;
	pid_t w = 0;
	if ((status = ctl_watch_claim(&r->live.ctl, &w)) < 0) {
		sess_log(SESS_SRC_RECORD, "process %d: pid %d serves its snapshots already\n", (int)r->child, (int)w);
		goto out;
	}
	claimed = 1;
	char armed_text[256];
	ctl_snap_trigger(&r->live.ctl, armed_text, sizeof(armed_text));
	if (r->o->snap_on && armed_text[0]) {
		sess_log(SESS_SRC_RECORD, "process %d already has a snapshot trigger ('%s'): no --snapshot-on\n",
			(int)r->child, armed_text);
		status = -EBUSY;
		goto out;
	}
	/* A request that fails says why (snap_request()). */
	status = -EIO;
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
		r->live.turned_on = 1;
	}
	if (ctl_snap_state(&r->live.ctl) == CTL_SNAP_OFF) {
		if (snap_request(r, CTL_OP_SNAP_ENABLE, 0, 0, NULL, "enable snapshots") < 0)
			goto out;
		enabled = 1;
	}
	if (r->o->snap_on) {
		uint64_t iv = r->o->min_interval ? strtoull(r->o->min_interval, NULL, 10) : 0;
		if (snap_request(r, CTL_OP_SNAP_TRIGGER, iv, 0, r->o->snap_on, "arm the trigger") < 0)
			goto out;
		armed = 1;
	}
	if ((status = sess_make_outdir(r)) < 0)
		goto out;
	sess_log(SESS_SRC_RECORD, "snapshots of '%s' (pid %d) go to %s; Ctrl-C detaches\n", r->comm, (int)r->child,
		r->outdir);
	int ws = 0;
	status = snapshot_watch(&r->live.ctl, r->odfd, r->outdir, r->out_flags, 0, &ws, r->o->stop, NULL, r->o) ? -EIO : 0;
	if (status == 0 && sess_dir_is_empty(r->outdir) && rmdir(r->outdir) == 0)
		sess_log(SESS_SRC_RECORD, "no snapshot was taken: %s not kept\n", r->outdir);
out:
	if (r->live.ctl.b && !gone(r->child, 0)) {
		if (armed)
			snap_request(r, CTL_OP_SNAP_TRIGGER, 0, 0, "", "disarm the trigger");
		if (enabled)
			snap_request(r, CTL_OP_SNAP_DISABLE, 0, 0, NULL, "disable snapshots");
		if (r->live.turned_on)
			snap_request(r, CTL_OP_OFF, 1, 0, NULL, "switch tracing off");
		if (mode_set)
			snap_request(r, CTL_OP_BUFFER_SIZE, r->live.ctl.b->cfg_sb_size * r->live.ctl.b->cfg_nsb,
				     r->live.ctl.b->cfg_nsb | 1ull << 32, NULL, "set discard mode back");
	}
	if (claimed)
		ctl_watch_release(&r->live.ctl);
	if (status != 0 && r->outdir && r->outdir_created && sess_dir_is_empty(r->outdir))
		rmdir(r->outdir);
	sess_cleanup(r);
	*ret_status = status == 0 ? 0 : 1;
	return status;
}

/*
 * `ringtrace record --flight-recorder -- PROGRAM`: the program traces into
 * its own buffers in overwrite mode (memory bounded however long it runs)
 * and nothing is written until it asks for a snapshot (ringtrace_snapshot())
 * or someone takes one (`ringtrace snapshot PID`): snapshots go to
 * DIR/snapshot-N. If the program is killed, what its buffers hold goes to
 * DIR/recovered. Our status is the program's.
 * The caller (run.c) cleans up.
 */
int sess_flight(struct sess *r, int *ret_status)
{
	int k = sess_start_child(r);
	if (k < 0) {
		*ret_status = k < -1 ? -k : 2;
		return -ENOEXEC;
	}
	sess_say_clock(r);
	sess_log(SESS_SRC_RECORD, "flight recorder on '%s' (pid %d): snapshots go to %s\n", r->o->argv[0], (int)r->child,
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
		if (ctl_open(r->child, &r->live.ctl, CTL_OPEN_WRITE, err, sizeof(err)) == 0) {
			opened = 1;
			/* Pairs with the acquire load in flight_start(): it
			 * may start now. */
			ctl_watch_claim(&r->live.ctl, NULL); /* a fresh block: ours */
			break;
		}
		siginfo_t si = { 0 };
		if (waitid(P_PID, (id_t)r->child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == r->child)
			break;
		struct timespec d = { 0, 2000000 };
		nanosleep(&d, NULL);
	}
	if (opened) {
		snapshot_watch(&r->live.ctl, r->odfd, r->outdir, r->out_flags, r->child, &ws, r->o->stop, &initial, r->o);
	} else {
		/* It died before its constructor published the block (or it
		 * does not use libringtrace): recover what the buffers hold. */
		if (waitpid(r->child, &ws, 0) > 0 && WIFSIGNALED(ws) && initial.rb &&
		    initial.rb->hdr->attached_pid) {
			char dir[PATH_MAX];
			snprintf(dir, sizeof(dir), "%s/recovered", r->outdir);
			struct snap_dir sd = { r->odfd, dir };
			const char *base = strrchr(r->progname, '/');
			sess_log(SESS_SRC_RECORD, "process %d was killed: writing what its buffers hold to %s\n",
				(int)r->child, dir);
			sess_write_region(r->child, base ? base + 1 : r->progname, &initial, &sd, r->out_flags, 0, "recover", 0);
			ctl_remove_if_stale(r->child);
		} else if (!initial.rb || !initial.rb->hdr->attached_pid) {
			sess_log(SESS_SRC_RECORD, "'%s' did not load libringtrace: nothing was traced\n", r->progname);
		}
	}
	if (initial.rb)
		rb_view_free(initial.rb);
	if (initial.mem)
		munmap(initial.mem, initial.size);
	if (r->o->child_pid)
		*r->o->child_pid = 0;
	if (WIFEXITED(ws))
		*ret_status = WEXITSTATUS(ws);
	else if (WIFSIGNALED(ws))
		*ret_status = 128 + WTERMSIG(ws);
	else
		*ret_status = 0;
	return 0;
}

