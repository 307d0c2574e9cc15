/*
 * run.c - `ringtrace record -- PROGRAM`: create the shared-memory region,
 * start the program with RINGTRACE_SHM naming it, and write its events as
 * a CTF 1.8 trace while it runs (writer.c). Also the dispatch of
 * sess_record() to the other modes: -p (attach.c), -p --snapshot and
 * --flight-recorder (snapshot.c), --follow-fork/--follow-exec (follow.c).
 *
 * The recorder sleeps until a writer closes a sub-buffer or 100 ms pass.
 * When the program has exited (normally, by a signal or a crash) no writer
 * is left: the recorder takes the open sub-buffers too, cut at the first
 * record that was reserved but never written, so everything committed
 * reaches the disk. Called by the CLI (record, mem) on its main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session/session_int.h"
#include "stackmap/stackmap.h"

/* The process that attached to the region, if it is still running (it can be
 * a grandchild when the program is run through a shell or a wrapper). */
static int sess_attached_alive(const struct sess *r)
{
	pid_t pid = (pid_t)__atomic_load_n(&r->rb->hdr->attached_pid, __ATOMIC_ACQUIRE);
	if (pid <= 0 || pid == r->child)
		return 0;
	return kill(pid, 0) == 0 || errno == EPERM;
}


int sess_start_child(struct sess *r)
{
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		sess_log(SESS_SRC_RECORD, "cannot run '%s': pipe: %s\n", r->o->argv[0], strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		sess_log(SESS_SRC_RECORD, "cannot run '%s': fork: %s\n", r->o->argv[0], strerror(errno));
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
		snprintf(env, sizeof(env), "fd:%d", r->run.shm_fd);
		/* The one descriptor the program inherits on purpose. */
		fcntl(r->run.shm_fd, F_SETFD, 0);
		setenv("RINGTRACE_SHM", env, 1);
		/* The buffers are the program's to swap (flight_start() in
		 * src/lib/agent.c). */
		if (r->o->flight) {
			setenv("RINGTRACE_FLIGHT", "1", 1);
			if (r->o->snap_on)
				setenv("RINGTRACE_SNAPSHOT_ON", r->o->snap_on, 1);
			if (r->o->min_interval)
				setenv("RINGTRACE_SNAPSHOT_INTERVAL", r->o->min_interval, 1);
		}
		if (r->o->memtrace) {
			/* First, so that its definitions come before the
			 * allocator's (which RTLD_NEXT then finds). */
			const char *old = getenv("LD_PRELOAD");
			char pre[PATH_MAX + 4096];
			snprintf(pre, sizeof(pre), "%s%s%s", r->o->memlib, old && *old ? ":" : "", old ? old : "");
			setenv("LD_PRELOAD", pre, 1);
			setenv("RINGTRACE_MEM", "1", 1);
			if (r->o->sample) { /* docs/mem.md, "Sampling" */
				char v[32];
				snprintf(v, sizeof(v), "%llu", (unsigned long long)r->o->sample);
				setenv("RINGTRACE_MEM_SAMPLE", v, 1);
				snprintf(v, sizeof(v), "%llu", (unsigned long long)r->o->sample_seed);
				if (r->o->sample_seed_set)
					setenv("RINGTRACE_MEM_SAMPLE_SEED", v, 1);
			}
		}
		if (r->follow)
			sess_follow_env(r);
		if (r->o->aggregate && r->run.agg_fd >= 0) {
			char agg[32];
			snprintf(agg, sizeof(agg), "fd:%d", r->run.agg_fd);
			fcntl(r->run.agg_fd, F_SETFD, 0);
			setenv("RINGTRACE_MEM_AGG", agg, 1);
		}
		execvp(r->o->argv[0], (char **)r->o->argv);
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
		sess_log(SESS_SRC_RECORD, "cannot run '%s': %s\n", r->o->argv[0], strerror(e));
		waitpid(pid, NULL, 0);
		/* As shells do: 127 not found, 126 found but not runnable. */
		return e == ENOENT || e == ENOTDIR ? -127 : -126;
	}
	r->child = pid;
	if (r->o->child_pid)
		*r->o->child_pid = pid;
	return 0;
}

/* Everything of a recording from the region on; *ret_status is set only
 * when the program ran (or could not be run). */
static int record_run(struct sess *r, int *ret_status)
{
	const struct sess_opts *o = r->o;
	struct rb_params p = { 0 };
	p.ncpus = rb_possible_cpus();
	p.sb_size = o->buf_size / r->nsb;
	p.nsb = r->nsb;
	p.mode = r->mode;
	sess_choose_clock(r);
	p.clock = r->clock;
	p.reg_size = RB_DEFAULT_REG;
	/* Always a stack area (sparse until used): events declared with a
	 * stack need it even without --stacks. */
	p.stack_bits = o->stack_bits ? o->stack_bits : STACKMAP_BITS_DEFAULT;
	p.stacks = (uint32_t)o->stacks;
	p.block_us = o->block_us > 0 ? (uint32_t)o->block_us : 0;
	if (getrandom(r->uuid, sizeof(r->uuid), 0) != sizeof(r->uuid)) {
		uint64_t x = sess_mono_ms() ^ ((uint64_t)getpid() << 32);
		for (int i = 0; i < 16; i++)
			r->uuid[i] = (uint8_t)(x >> (i % 8 * 8)) ^ (uint8_t)i;
	}
	r->uuid[6] = (uint8_t)((r->uuid[6] & 0x0f) | 0x40); /* version 4 */
	r->uuid[8] = (uint8_t)((r->uuid[8] & 0x3f) | 0x80);
	memcpy(p.uuid, r->uuid, 16);
	memcpy(p.patterns, o->patterns, sizeof(p.patterns));

	int k = sess_make_outdir(r);
	if (k < 0)
		return k;
	if (o->aggregate && (!o->agg_create || (r->run.agg_fd = o->agg_create(o->stacks)) < 0))
		return -EIO;
	k = rb_shm_create(rb_shm_dir(), &p, &r->run.shm_path, &r->run.shm_fd, &r->mem, &r->mem_size);
	if (k < 0) {
		sess_log(SESS_SRC_RECORD, "cannot create the shared-memory buffers in %s: %s\n", rb_shm_dir(),
			strerror(-k));
		return k;
	}
	/* The program gets the region as an inherited descriptor: the name is
	 * not needed, and nothing stays behind whatever happens to us. */
	unlink(r->run.shm_path);
	free(r->run.shm_path);
	r->run.shm_path = NULL;
	if ((k = rb_view_open(r->mem, r->mem_size, &r->rb)) < 0 || (k = rb_reader_new(r->rb, &r->reader)) < 0) {
		sess_log(SESS_SRC_RECORD, "cannot use the shared-memory buffers made in %s: %s\n", rb_shm_dir(), strerror(-k));
		return k;
	}
	if ((k = sess_alloc_stream_fds(r)) < 0)
		return k;

	clk_sample(r->clock, &r->c0);
	if (o->flight)
		return sess_flight(r, ret_status);
	/* Always its own execs (same pid: a wrapper's exec of the real
	 * program), but not with --aggregate: the counters' block is the
	 * first image's. */
	if ((o->follow_fork || o->follow_exec || !o->aggregate) && (k = sess_follow_begin(r)) < 0)
		return k;
	if ((k = sess_start_child(r)) < 0) {
		if (k < -1)
			*ret_status = -k;
		sess_follow_end(r, 0);
		return -ENOEXEC;
	}
	sess_say_clock(r);
	sess_log(SESS_SRC_RECORD, "recording '%s' (pid %d) to %s\n", o->argv[0], (int)r->child, r->outdir);

	int wstatus = 0, exited = 0;
	for (;;) {
		unsigned got = sess_round(r);
		if (o->on_round) {
			struct sess_stats st;
			sess_stats_get(r, &st);
			o->on_round(o->arg, &st);
		}
		siginfo_t si = { 0 };
		if (r->follow)
			sess_follow_reap(exited ? 0 : r->child);
		/* WNOWAIT: a zombie's /proc entry still names its main thread. */
		if (!exited && waitid(P_PID, (id_t)r->child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == r->child) {
			sess_scan_threads(r);
			waitpid(r->child, &wstatus, 0);
			exited = 1;
		}
		/* Done when no writer can be left: the program, and the process
		 * that attached if that is another one. */
		if (exited && !sess_attached_alive(r))
			break;
		if (got == 0 || exited)
			rb_reader_wait(r->reader, exited ? 20 : 100);
	}
	if (o->child_pid)
		*o->child_pid = 0;
	/* A program killed by a signal leaves its control block behind. */
	ctl_remove_if_stale(r->child);
	if (r->rb->hdr->attached_pid && (pid_t)r->rb->hdr->attached_pid != r->child)
		ctl_remove_if_stale((pid_t)r->rb->hdr->attached_pid);

	sess_finish(r, 1);
	/* Then every followed process, until the last one has exited. */
	sess_follow_end(r, o->follow_fork || o->follow_exec ? 200 : 0);

	if (WIFEXITED(wstatus))
		*ret_status = WEXITSTATUS(wstatus);
	else if (WIFSIGNALED(wstatus))
		*ret_status = 128 + WTERMSIG(wstatus);
	else
		*ret_status = 0;
	return 0;

}

int sess_record(const struct sess_opts *o, int *ret_status)
{
	struct sess rr, *r = &rr;
	sess_init(r, o);
	r->progname = o->attach ? NULL : (o->argv ? o->argv[0] : NULL);
	if (o->attach)
		return o->snapshot ? sess_attach_snapshot(r, ret_status) : sess_attach(r, ret_status);
	*ret_status = 2;
	if (!o->argv || !o->argv[0] || (o->memtrace && !o->memlib)) {
		sess_log(SESS_SRC_RECORD, "%s", !o->argv || !o->argv[0] ? "no program to run" : "--mem: no allocation tracer library given");
		return -EINVAL;
	}
	int k = record_run(r, ret_status);
	/* A flight recorder that took no snapshot leaves no directory. */
	if ((k < 0 || o->flight) && r->outdir && r->outdir_created && sess_dir_is_empty(r->outdir))
		rmdir(r->outdir);
	sess_cleanup(r);
	return k;
}
