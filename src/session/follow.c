/*
 * follow.c - --follow-fork and --follow-exec: every child the traced
 * program forks, and every program it (or a followed child) executes,
 * gets a trace of its own in DIR/children/PID-NAME, recorded by a thread
 * of ours with the program's options.
 *
 * Called by run.c: sess_follow_begin() before the program starts (a
 * socket and the thread that accepts on it), sess_follow_env() in the
 * program's child before exec, sess_follow_reap() each round,
 * sess_follow_end() after the program's trace is written. Built for
 * bursts of forks (connections queue in the listen backlog, not in a
 * datagram queue).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/outdir.h"
#include "mem/mem_agg.h"
#include "session/session_int.h"

/*
 * A followed process (a child the program forks, with --follow-fork; a
 * program it or a followed child executes, with --follow-exec) traces
 * into buffers of its own, allocated with our parameters before it goes
 * on (src/lib/agent.c, follow_start()), and tells us so: a connection
 * to a SOCK_SEQPACKET socket of ours whose abstract name RINGTRACE_FOLLOW
 * gives it, one message on it. One thread accepts them; each followed
 * process then gets a thread that reads the message and does what
 * `record -p` does (control block, buffers mapped through
 * /proc/PID/fd/N, reader claimed), wakes it (it waits for us 1 s at
 * most), and records it into DIR/children/PID-NAME until it exits or
 * execs (the new program is a trace of its own). Its summary line is
 * printed when it ends.
 *
 * Who may ask. The name is visible to everyone (/proc/net/unix) and
 * root may trace any uid, so the name proves nothing: the kernel tells
 * us who connected (SO_PEERCRED), and only a process descended from
 * us (the program, or one of its descendants) is followed. We check
 * that by walking the parent links in /proc/PID/stat up to our own pid.
 * A process whose parent exits is reparented to the nearest "child
 * subreaper" above it, else to init, which would cut the chain: so we
 * make ourselves a subreaper (PR_SET_CHILD_SUBREAPER) and the orphans of
 * the traced tree become our children, still on a chain that ends at us
 * (we reap them, sess_follow_reap()). The uid check stays too: without root,
 * only our user's processes. A notice from anyone else is dropped
 * without a word and counted; the count is reported once, at the end.
 * We do not hand the channel down as an inherited descriptor: programs
 * that close every descriptor (daemons, Python's subprocess) would then
 * lose following, where a pid lineage survives them.
 *
 * The pid a notice names may have been reused by the time we look: the
 * lineage check notes the process's start time, and the session refuses
 * a control block whose process started at another time.
 *
 * Connections, not datagrams: a datagram queue holds
 * net.unix.max_dgram_qlen notices (often 10), and a burst of forks
 * outran it while we were busy starting sessions; connections wait in
 * the listen backlog (net.core.somaxconn, 4096 by default) without us.
 * When even that is full, the child waits for room, within its usual
 * 1 s. A process that asked and could not be followed (it exited before
 * we got to it, say) is counted and named in the summary.
 *
 * The recording ends when the program has exited, no followed process is
 * left, and no process started or ended being followed for a short while
 * (a child forked just before its parent exited may still be on its
 * way). Only genuine followed processes count there: notices that are
 * refused or lead nowhere never keep a recording alive.
 */
struct follow_sess {
	struct follow_sess *next;
	pthread_t th;
	struct follow *f;
	int conn;                    /* its connection, until its notice is read */
	pid_t pid, ppid;
	uint64_t start;              /* its start time when its lineage was checked */
	unsigned seq;                /* order of acceptance */
	char kind[8];
};

#define FOLLOW_MAX_DEPTH 4096        /* parent links walked, at most */
#define FOLLOW_NAMED 64              /* processes named in the summary, at most */
#define FOLLOW_IMAGES 16             /* images of the program named in the summary */

struct follow {
	const struct sess *top;       /* the program's recording: options, DIR */
	int fd;                      /* our listening socket */
	int wake[2];                 /* a byte written at stop wakes the thread's poll (-1: none) */
	char name[64];               /* its abstract name, without the NUL */
	pthread_t th;
	pthread_mutex_t lock;        /* the fields below */
	struct follow_sess *sessions;
	unsigned running;            /* sessions still recording */
	uint64_t last_ms;            /* when the last one started or ended */
	unsigned nlost;              /* descendants that asked but could not be followed */
	pid_t lost[FOLLOW_NAMED];    /* ... the first ones */
	unsigned long long malformed; /* notices from inside that made no sense */
	int stop;
	/* The program's own execs (same pid): its images after the first, in
	 * order, each a trace in DIR/children; the last one is the program
	 * that finally ran. Under the lock. */
	unsigned nimages;
	struct {
		unsigned seq;
		char comm[17];
		char *dir;
	} images[FOLLOW_IMAGES];
	int self_only;               /* only those: no --follow-fork/--follow-exec */
	/* The accepting thread's own (read by sess_follow_end() after the join). */
	unsigned long long refused;  /* notices from outside the traced program */
	unsigned seq;                /* connections accepted */
};

/* In the program's child, before exec: what followed processes record
 * with, and where they say so. */
void sess_follow_env(const struct sess *r)
{
	char v[256], self[32] = "";
	/* Without --follow-exec, the program's own execs are followed (exec=2,
	 * the pid we are now, which it keeps), not those of its children. */
	if (!r->o->follow_exec)
		snprintf(self, sizeof(self), " self=%d", (int)getpid());
	snprintf(v, sizeof(v), "fork=%d exec=%d sb=%llu nsb=%u mode=%u stacks=%d bits=%u sock=%s block=%u%s",
		 r->o->follow_fork, r->o->follow_exec ? 1 : 2, (unsigned long long)(r->o->buf_size / r->nsb), r->nsb,
		 r->mode, r->o->stacks, r->o->stack_bits, r->follow->name,
		 r->o->block_us > 0 ? (unsigned)r->o->block_us : 0u, self);
	setenv("RINGTRACE_FOLLOW", v, 1);
	/* -e patterns, one a line (for exec'ed programs: a forked child
	 * inherits its parent's selection). */
	char ev[sizeof(r->o->patterns)];
	size_t n = 0;
	for (const char *p = r->o->patterns; *p && n + strlen(p) + 1 < sizeof(ev); p += strlen(p) + 1)
		n += (size_t)snprintf(ev + n, sizeof(ev) - n, "%s%s", n ? "\n" : "", p);
	ev[n] = 0;
	if (n)
		setenv("RINGTRACE_FOLLOW_EVENTS", ev, 1);
	/* The allocation tracer stays in LD_PRELOAD of executed programs: of
	 * all of them, or of the program's own (src/mem/memtrace.c). */
	if (r->o->memtrace) {
		char mf[32];
		snprintf(mf, sizeof(mf), "self:%d", (int)getpid());
		setenv("RINGTRACE_MEM_FOLLOW", r->o->follow_exec ? "1" : mf, 1);
	}
	/* --aggregate: each followed process counts into a block of its own
	 * (src/mem/memagg.c, memagg_own(); follow_agg() below). */
	if (r->o->aggregate)
		setenv("RINGTRACE_MEM_AGG_FOLLOW", r->o->follow_fork ? "fork=1" : "fork=0", 1);
}

/* DIR/children/PID-NAME (NAME with characters other than [A-Za-z0-9._-]
 * replaced; -2, -3... when taken: a program that executes one with the
 * same name). 0, or a negative errno after a message. */
static int follow_outdir(struct sess *r, const struct sess *top)
{
	char name[32], sub[64], path[PATH_MAX], why[256];
	size_t i;
	for (i = 0; r->comm[i] && i < sizeof(name) - 1; i++) {
		unsigned char c = (unsigned char)r->comm[i];
		name[i] = isalnum(c) || c == '.' || c == '_' || c == '-' ? (char)c : '_';
	}
	name[i] = 0;
	/* Inside the top directory, through its descriptor: made by us, so
	 * the ownership checks pass unless someone else got there first. */
	snprintf(path, sizeof(path), "%s/children", top->outdir);
	int cfd = outdir_open(top->odfd, "children", OUTDIR_CREATE, NULL, why, sizeof(why));
	if (cfd < 0) {
		sess_log(SESS_SRC_RECORD, "'%s' %s\n", path, why);
		return cfd;
	}
	int fd = -EEXIST;
	for (int n = 1; n < 1000 && fd == -EEXIST; n++) {
		if (n == 1)
			snprintf(sub, sizeof(sub), "%d-%s", (int)r->child, name);
		else
			snprintf(sub, sizeof(sub), "%d-%s-%d", (int)r->child, name, n);
		fd = outdir_open(cfd, sub, OUTDIR_CREATE | OUTDIR_NEW, NULL, why, sizeof(why));
	}
	close(cfd);
	snprintf(path, sizeof(path), "%s/children/%s", top->outdir, sub);
	if (fd < 0) {
		sess_log(SESS_SRC_RECORD, "cannot create '%s': %s\n", path, why);
		return fd;
	}
	r->outdir = strdup(path);
	if (!r->outdir) {
		close(fd);
		return -ENOMEM;
	}
	r->odfd = fd;
	r->outdir_created = 1;
	return 0;
}

/* A descendant's notice, "RTFOLLOW1 fork|exec PPID", read from its
 * connection (sent right after connecting: 1 s is plenty). 0 or -1. */
static int follow_read_notice(struct follow_sess *s)
{
	char buf[128], kind[8];
	int ppid;
	struct timeval tv = { 1, 0 };
	setsockopt(s->conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ssize_t n = recv(s->conn, buf, sizeof(buf) - 1, 0);
	close(s->conn);
	s->conn = -1;
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "RTFOLLOW1 %7s %d", kind, &ppid) != 2 || (strcmp(kind, "fork") && strcmp(kind, "exec")))
		return -1;
	s->ppid = ppid;
	snprintf(s->kind, sizeof(s->kind), "%s", kind);
	return 0;
}

/* An image of the program (its own exec), in order of acceptance; the
 * first FOLLOW_IMAGES - 1 and the last are kept. Under f->lock. */
static void follow_image(struct follow *f, unsigned seq, const char *comm, const char *dir)
{
	unsigned i = f->nimages < FOLLOW_IMAGES ? f->nimages++ : FOLLOW_IMAGES - 1;
	if (f->nimages == FOLLOW_IMAGES && i == FOLLOW_IMAGES - 1 && f->images[i].seq > seq)
		return;
	free(f->images[i].dir);
	f->images[i].seq = seq;
	snprintf(f->images[i].comm, sizeof(f->images[i].comm), "%s", comm);
	f->images[i].dir = strdup(dir);
	/* Sessions may start out of order: keep them sorted. */
	for (; i > 0 && f->images[i - 1].seq > f->images[i].seq; i--) {
		__typeof__(f->images[0]) t = f->images[i];
		f->images[i] = f->images[i - 1];
		f->images[i - 1] = t;
	}
}

/*
 * --aggregate: the followed process's own counters' block, which it makes
 * once we have woken it and holds until we have it open (src/mem/memagg.c,
 * memagg_own()): found through /proc/PID/fd (a memfd named as ours, whose
 * header names the process), opened, marked held, and the process woken.
 * Saved into its trace directory when it ends (sess_finish()). Looked for
 * 1 s at most (the process waits as long).
 */
static void follow_agg(struct sess *r, pid_t pid)
{
	char dir[64], path[64 + 256], link[256];
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	for (int attempt = 0; attempt < 1000 && r->run.agg_fd < 0; attempt++) {
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d)) && r->run.agg_fd < 0) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			ssize_t n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = 0;
			if (strncmp(link, "/memfd:ringtrace-memagg", 23))
				continue;
			int fd = open(path, O_RDWR | O_CLOEXEC);
			struct stat st;
			if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(struct memagg_header)) {
				if (fd >= 0)
					close(fd);
				continue;
			}
			void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			uint32_t nslots;
			struct memagg_header *h = m;
			if (m != MAP_FAILED && memagg_check(m, (size_t)st.st_size, &nslots) &&
			    __atomic_load_n(&h->pid, __ATOMIC_RELAXED) == (uint32_t)pid) {
				r->run.agg_fd = fd;
				/* Pairs with the acquire load in memagg_own(). */
				__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
				ctl_futex(&h->held, FUTEX_WAKE, INT_MAX, NULL);
			} else {
				close(fd);
			}
			if (m != MAP_FAILED)
				munmap(m, (size_t)st.st_size);
		}
		if (d)
			closedir(d);
		if (r->run.agg_fd < 0) {
			if (kill(pid, 0) < 0 && errno == ESRCH)
				break;
			struct timespec ts = { 0, 1000000L };
			nanosleep(&ts, NULL);
		}
	}
}

static void *follow_session(void *arg)
{
	struct follow_sess *s = arg;
	struct follow *f = s->f;
	struct sess rr, *r = &rr;
	char err[512];
	/* The program's options: a followed process records as it does. */
	sess_init(r, f->top->o);
	int followed = 0, malformed = 0;
	if (follow_read_notice(s) < 0) {
		malformed = 1;
		goto out;
	}
	r->followed.kind = s->kind;
	r->followed.ppid = s->ppid;
	r->child = s->pid;
	struct ctl_ring ring;
	int k = ctl_open(s->pid, &r->live.ctl, CTL_OPEN_WRITE, err, sizeof(err));
	if (k < 0) {
		/* Gone already (its wait for us timed out: counted and named
		 * at the end), or untraceable. */
		if (k != -ESRCH)
			sess_log(SESS_SRC_RECORD, "cannot follow process %d: %s\n", (int)s->pid, err);
		goto out;
	}
	if (r->live.ctl.b->start_time != s->start) {
		/* Not the process whose lineage we checked: its pid was reused. */
		goto out;
	}
	if (ctl_ring_open(&r->live.ctl, &ring, err, sizeof(err)) < 0) {
		if (kill(s->pid, 0) == 0)
			sess_log(SESS_SRC_RECORD, "cannot follow process %d: %s\n", (int)s->pid, err);
		goto out;
	}
	memcpy(r->comm, r->live.ctl.b->comm, sizeof(r->live.ctl.b->comm));
	r->comm[sizeof(r->live.ctl.b->comm)] = 0;
	r->progname = r->comm;
	r->mem = ring.mem;
	r->mem_size = ring.size;
	r->rb = ring.rb;
	if (ctl_ring_claim_reader(r->rb, err, sizeof(err)) < 0) {
		sess_log(SESS_SRC_RECORD, "cannot follow process %d: %s\n", (int)s->pid, err);
		goto out;
	}
	r->live.reader_claimed = 1;
	/* Pairs with the acquire load in follow_start(): it goes on now. */
	ctl_futex(&r->rb->hdr->reader_pid, FUTEX_WAKE, INT_MAX, NULL);
	if (r->o->aggregate)
		follow_agg(r, s->pid);
	k = sess_reader_from_region(r);
	if (k < 0) {
		sess_log(SESS_SRC_RECORD, "cannot follow process %d: %s\n", (int)s->pid, strerror(-k));
		goto out;
	}
	if (sess_alloc_stream_fds(r) < 0 || follow_outdir(r, f->top) < 0)
		goto out;
	followed = 1;
	pthread_mutex_lock(&f->lock);
	f->last_ms = sess_mono_ms();
	if (s->pid == f->top->child && !strcmp(s->kind, "exec"))
		follow_image(f, s->seq, r->comm, r->outdir);
	pthread_mutex_unlock(&f->lock);
	/* Its buffers are its own, fresh: every loss counted in them is a
	 * loss of this recording. */
	for (;;) {
		unsigned got = sess_round(r);
		if (!sess_process_alive(r))
			break;
		if (got == 0)
			rb_reader_wait(r->reader, 100);
	}
	sess_finish(r, 1);
	if (r->followed.empty) {
		unlinkat(r->odfd, "metadata", 0);
		if (rmdir(r->outdir) == 0)
			sess_log(SESS_SRC_RECORD, "process %d (%s) had no event before it exec'ed or exited: no trace kept\n",
				(int)s->pid, r->comm);
	}
	ctl_remove_if_stale(s->pid);
out:
	sess_release_reader(r);
	sess_cleanup(r);
	pthread_mutex_lock(&f->lock);
	f->running--;
	if (followed)
		f->last_ms = sess_mono_ms();
	else if (malformed)
		f->malformed++;
	else if (f->nlost++ < FOLLOW_NAMED)
		f->lost[f->nlost - 1] = s->pid;
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/*
 * Is pid ours to follow: does its chain of parents reach us? We are a
 * child subreaper (sess_follow_begin()), so a process of the traced tree whose
 * parent exits is reparented to us, not to init, and stays on a chain that
 * ends here. A chain cut under our feet (a process on it exited and was
 * reaped while we read) is read again. 1 if it does (*ret_start is then
 * its start time, read before and after the walk: the pid named the same
 * process all along), 0 if not, -1 if the process is gone (reaped before
 * we looked: nobody can say).
 */
static int follow_descends(pid_t pid, uint64_t *ret_start)
{
	pid_t me = getpid();
	for (int attempt = 0; attempt < 3; attempt++) {
		uint64_t st = ctl_proc_start_time(pid);
		if (st == 0)
			return -1;
		pid_t p = pid;
		int depth = 0;
		while (p != me && p > 1 && depth++ < FOLLOW_MAX_DEPTH)
			p = ctl_proc_ppid(p);
		if (p == me) {
			if (ctl_proc_start_time(pid) != st)
				return 0;
			*ret_start = st;
			return 1;
		}
		if (p != -1)
			return 0; /* init, another namespace's root, or too deep */
	}
	return 0;
}

/* One connection: refused at once unless it comes from the traced
 * program's tree (the kernel names the pid that connected); else a
 * session that reads its notice and follows it. 0, or -1 when none is
 * waiting. */
static int follow_accept(struct follow *f)
{
	int c = accept4(f->fd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return errno == EINTR || errno == ECONNABORTED ? 0 : -1;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	uint64_t start = 0;
	int ours = 0;
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && len == sizeof(cr) && cr.pid > 0 &&
	    (cr.uid == geteuid() || geteuid() == 0))
		ours = follow_descends(cr.pid, &start);
	if (ours < 0) {
		/* Gone before we got to it: a child of a burst that gave up
		 * waiting for us and exited, most likely. Named, not
		 * followed. */
		pthread_mutex_lock(&f->lock);
		if (f->nlost++ < FOLLOW_NAMED)
			f->lost[f->nlost - 1] = cr.pid;
		pthread_mutex_unlock(&f->lock);
		/* Its block, published before it connected, would stay in
		 * /dev/shm if it left with _exit(). */
		ctl_remove_if_stale(cr.pid);
	}
	if (ours <= 0) {
		/* No word per refusal: anyone may connect to the name, as
		 * often as they like. */
		f->refused += ours == 0;
		close(c);
		return 0;
	}
	struct follow_sess *s = calloc(1, sizeof(*s));
	if (!s) {
		close(c);
		return 0;
	}
	s->f = f;
	s->conn = c;
	s->pid = cr.pid;
	s->start = start;
	s->seq = ++f->seq;
	pthread_mutex_lock(&f->lock);
	/* `running` keeps the recording going until the session knows
	 * whether the process is really followed; only then does it move
	 * last_ms. */
	if (pthread_create(&s->th, NULL, follow_session, s) == 0) {
		s->next = f->sessions;
		f->sessions = s;
		f->running++;
	} else {
		sess_log(SESS_SRC_RECORD, "cannot follow process %d: no thread\n", (int)s->pid);
		if (f->nlost++ < FOLLOW_NAMED)
			f->lost[f->nlost - 1] = s->pid;
		close(c);
		free(s);
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

/* The accepting thread: until told to stop, and then until no
 * connection waits, or after a bounded number (someone who keeps
 * connecting cannot keep us here). All signals blocked (inherited by it
 * and by the sessions: the main thread gets them). */
static void *follow_main(void *arg)
{
	struct follow *f = arg;
	unsigned after_stop = 0;
	for (;;) {
		/* Pairs with the release store in sess_follow_end(). */
		int stop = __atomic_load_n(&f->stop, __ATOMIC_ACQUIRE);
		if (stop && after_stop++ >= 256)
			break;
		/* The wake pipe ends the wait at once when told to stop: the
		 * recorder's end does not wait for the timeout. */
		struct pollfd pfd[2] = { { .fd = f->fd, .events = POLLIN }, { .fd = f->wake[0], .events = POLLIN } };
		int k = poll(pfd, stop ? 1 : 2, stop ? 0 : 50);
		if (k > 0 && (pfd[0].revents & POLLIN))
			follow_accept(f);
		else if (stop)
			break;
	}
	return NULL;
}

/* The socket and its thread, before the program starts. 0, or a negative
 * errno after a message. */
int sess_follow_begin(struct sess *r)
{
	int err = 0;
	struct follow *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->top = r;
	f->fd = -1;
	if (pipe2(f->wake, O_CLOEXEC | O_NONBLOCK) < 0)
		f->wake[0] = f->wake[1] = -1;
	pthread_mutex_init(&f->lock, NULL);
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)sess_mono_ms();
	snprintf(f->name, sizeof(f->name), "ringtrace-follow-%d-%08x", (int)getpid(), rnd);
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	size_t n = strlen(f->name);
	memcpy(a.sun_path + 1, f->name, n);
	/* Non-blocking: accept4() after poll() must not wait for a
	 * connection someone withdrew. The backlog is capped by
	 * net.core.somaxconn. */
	f->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0 ||
	    listen(f->fd, 4096) < 0) {
		err = -errno;
		sess_log(SESS_SRC_RECORD, "cannot create the socket followed processes report to: %s\n", strerror(errno));
		goto fail;
	}
	/* Orphans of the traced tree become ours: their lineage stays
	 * checkable (follow_descends()). Without it (it never fails on a
	 * kernel we run on), such an orphan would only be refused. The
	 * program's own execs need none: it is our child. */
	f->self_only = !r->o->follow_fork && !r->o->follow_exec;
	if (!f->self_only)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int k = pthread_create(&f->th, NULL, follow_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (k != 0) {
		err = -k;
		sess_log(SESS_SRC_RECORD, "cannot start the thread that follows processes: %s\n", strerror(k));
		goto fail;
	}
	r->follow = f;
	return 0;
fail:
	if (f->fd >= 0)
		close(f->fd);
	if (f->wake[0] >= 0) {
		close(f->wake[0]);
		close(f->wake[1]);
	}
	pthread_mutex_destroy(&f->lock);
	free(f);
	return err;
}

/* Reap the orphans of the traced tree, ours since we are their subreaper
 * (sess_follow_begin()), but never `keep` (the program, while the main loop
 * has not reaped it: it reads the zombie's /proc entry first). */
void sess_follow_reap(pid_t keep)
{
	for (int i = 0; i < 1024; i++) {
		siginfo_t si = { 0 };
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid <= 0 || si.si_pid == keep)
			return;
		waitpid(si.si_pid, NULL, WNOHANG);
	}
}

/* What the summary says about following: once, after every trace. */
static void follow_summary(const struct follow *f)
{
	if (f->refused)
		sess_log(SESS_SRC_RECORD, "refused %llu follow notice%s from processes outside the traced program\n",
			f->refused, f->refused == 1 ? "" : "s");
	if (f->malformed)
		sess_log(SESS_SRC_RECORD, "ignored %llu malformed follow notice%s\n", f->malformed,
			f->malformed == 1 ? "" : "s");
	if (f->nlost) {
		char list[FOLLOW_NAMED * 12 + 64];
		size_t n = 0;
		unsigned named = f->nlost < FOLLOW_NAMED ? f->nlost : FOLLOW_NAMED;
		for (unsigned i = 0; i < named; i++)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", i ? " " : "", (int)f->lost[i]);
		if (f->nlost > named)
			snprintf(list + n, sizeof(list) - n, " and %u more", f->nlost - named);
		sess_log(SESS_SRC_RECORD, "could not follow %u process%s that asked to be: %s\n", f->nlost,
			f->nlost == 1 ? "" : "es", list);
	}
}

/*
 * The program's images after the first (its own execs): named in the
 * summary, listed in DIR/execs (one line each: PID, name, its trace's
 * directory relative to DIR, the last line the program that finally
 * ran: what `ringtrace report DIR` and `ringtrace mem` report).
 */
static void follow_images(struct follow *f, struct sess *r)
{
	unsigned n = 0;
	for (unsigned i = 0; i < f->nimages; i++)
		if (f->images[i].dir && access(f->images[i].dir, F_OK) == 0)
			f->images[n++] = f->images[i];
		else
			free(f->images[i].dir);
	f->nimages = n;
	if (!n)
		return;
	char list[FOLLOW_IMAGES * 20];
	size_t k = 0;
	FILE *fp = NULL;
	int fd = outdir_create(r->odfd, "execs", 0644);
	if (fd >= 0 && !(fp = fdopen(fd, "w")))
		close(fd);
	size_t top_len = strlen(r->outdir);
	for (unsigned i = 0; i < n; i++) {
		k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s", i ? ", " : "", f->images[i].comm);
		if (k >= sizeof(list))
			k = sizeof(list) - 1;
		const char *rel = f->images[i].dir;
		if (!strncmp(rel, r->outdir, top_len) && rel[top_len] == '/')
			rel += top_len + 1;
		if (fp)
			fprintf(fp, "%d %s %s\n", (int)r->child, f->images[i].comm, rel);
	}
	if (fp && fclose(fp) != 0)
		sess_log(SESS_SRC_RECORD, "cannot write '%s/execs': %s\n", r->outdir, strerror(errno));
	const char *last = f->images[n - 1].dir;
	sess_log(SESS_SRC_RECORD, "process %d executed %s: the last one's trace is %s\n", (int)r->child, list, last);
	for (unsigned i = 0; i < n; i++)
		free(f->images[i].dir);
}

/* Wait until no followed process is left and none started or ended for
 * linger_ms (after the program's end too), then stop and free. */
void sess_follow_end(struct sess *r, unsigned linger_ms)
{
	struct follow *f = r->follow;
	if (!f)
		return;
	uint64_t t0 = sess_mono_ms();
	for (;;) {
		sess_follow_reap(0);
		pthread_mutex_lock(&f->lock);
		uint64_t now = sess_mono_ms();
		int idle = f->running == 0 && now - f->last_ms >= linger_ms && now - t0 >= linger_ms;
		if (idle)
			__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&f->lock);
		if (idle) {
			/* Pairs with the poll of the wake pipe in follow_main(). */
			if (f->wake[1] >= 0 && write(f->wake[1], "", 1) < 0) {
				/* full or closed: the poll's timeout ends it */
			}
			break;
		}
		struct timespec d = { 0, 10 * 1000000L };
		nanosleep(&d, NULL);
	}
	pthread_join(f->th, NULL);
	/* The list is final once the receiver has stopped. */
	while (f->sessions) {
		struct follow_sess *s = f->sessions;
		f->sessions = s->next;
		pthread_join(s->th, NULL);
		/* A session that ended at an exec left the block to the new
		 * image (ctl_remove_if_stale() keeps a running process's);
		 * if that image did not use libringtrace and has exited
		 * since, the block goes now. */
		ctl_remove_if_stale(s->pid);
		free(s);
	}
	sess_follow_reap(0);
	follow_summary(f);
	follow_images(f, r);
	close(f->fd);
	if (f->wake[0] >= 0) {
		close(f->wake[0]);
		close(f->wake[1]);
	}
	pthread_mutex_destroy(&f->lock);
	free(f);
	r->follow = NULL;
}

