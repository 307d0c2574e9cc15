/*
 * ctl_client.c - controller side of the control block (see ctl_client.h).
 *
 * The program may be hostile or damaged, may exit at any moment, and may
 * belong to another user: every path ends with a message, never a crash
 * or a hang. A block stays mapped after its file is unlinked, so a program
 * that exits during a command only makes the wait end.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl_client.h"
#include "ringbuf/rb_lap.h"

/* Does the process still map this block? (It does not after an exec.) */
static int maps_block(pid_t pid)
{
	char path[64], want[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	snprintf(want, sizeof(want), "%s/%s%d", CTL_DIR, CTL_PREFIX, (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == EACCES ? 1 : 0; /* another user's: trust pid and start time */
	int found = 0;
	while (!found && fgets(line, sizeof(line), f))
		if (strstr(line, want))
			found = 1;
	fclose(f);
	return found;
}

int ctl_is_stale(const struct ctl_block *b)
{
	pid_t pid = (pid_t)b->pid;
	if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
		return 1;
	uint64_t st = ctl_proc_start_time(pid);
	if (st == 0 || st != b->start_time)
		return 1;
	return !maps_block(pid);
}

static int validate(const struct ctl_block *b, uint64_t size, pid_t pid)
{
	if (size < sizeof(*b) || __atomic_load_n(&b->magic, __ATOMIC_ACQUIRE) != CTL_MAGIC)
		return -EBADMSG;
	if (b->version != CTL_VERSION || b->header_size != sizeof(*b))
		return -EPROTO;
	if (b->total_size != size || size != CTL_TOTAL || b->reg_off != CTL_REG_OFF ||
	    b->reg_size != CTL_REG_SIZE || b->en_off != CTL_EN_OFF || b->en_count != CTL_MAX_IDS ||
	    b->pid != (uint32_t)pid)
		return -EBADMSG;
	return 0;
}

/* A user's name for messages ("uid N" when it has none). */
static const char *user_name(uid_t uid, char *buf, size_t size)
{
	struct passwd *pw = getpwuid(uid);
	if (pw)
		snprintf(buf, size, "%s", pw->pw_name);
	else
		snprintf(buf, size, "uid %u", (unsigned)uid);
	return buf;
}

/* The start time (field 22 of stat) of the process behind procfd, 0 if
 * unknown: with it, what we read through procfd is known to be the
 * process that published the block, not one that reused its pid. */
static uint64_t procfd_start_time(int procfd)
{
	char buf[1024];
	int fd = openat(procfd, "stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	p += 2; /* field 3 */
	for (int field = 3; field < 22 && *p; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

/* The real uid of the process behind procfd (the first number of the
 * Uid: line of its status). 0 or -errno. */
static int procfd_real_uid(int procfd, uid_t *ret)
{
	char buf[4096];
	int fd = openat(procfd, "status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	const char *p = strstr(buf, "\nUid:");
	if (!p)
		return -EBADMSG;
	char *end;
	errno = 0;
	unsigned long v = strtoul(p + 5, &end, 10);
	if (end == p + 5 || errno || v > UINT32_MAX)
		return -EBADMSG;
	*ret = (uid_t)v;
	return 0;
}

/*
 * Whom a block may be trusted for. The block's file is written by the
 * program, so its fields are the word of the process's user: the checks
 * below make sure that user is who the files and /proc say, and that no
 * one else could have written the block.
 *
 * Order, and why:
 *  1. lstat the name: a missing block or a non-regular one ends here, and
 *     a non-root caller is refused another user's block with the usual
 *     message before anything is opened.
 *  2. open it O_RDONLY | O_NOFOLLOW | O_NONBLOCK (a symlink planted at the
 *     name fails, a FIFO cannot block us) and fstat what was opened:
 *     regular, the right size. Only then is it mapped, PROT_READ.
 *  3. The header is validated and staleness checked, so that a stale
 *     block (its process gone, the pid reused by another user) stays
 *     -ESRCH for `ps --clean` and ctl_remove_if_stale().
 *  4. /proc/PID is opened as a directory descriptor and its start time
 *     compared with the block's: every later look at the process (its
 *     status, its descriptors) goes through that descriptor, and fails
 *     rather than reach a process that reused the pid.
 *  5. Ownership: the real uid (status) must own /proc/PID (so the program
 *     is neither set-user-ID nor undumpable, where /proc belongs to
 *     root) and the block's file, which must have one link and be
 *     writable by its owner alone; a non-root caller must be that uid.
 *  6. Only for CTL_OPEN_WRITE, and only now, is the same file reopened
 *     read-write (through /proc/self/fd, so it is the inode checked) and
 *     mapped shared writable.
 */
int ctl_open(pid_t pid, struct ctl_handle *h, int mode, char *err, size_t errlen)
{
	memset(h, 0, sizeof(*h));
	h->pid = pid;
	h->procfd = -1;
	snprintf(h->path, sizeof(h->path), "%s/%s%d", CTL_DIR, CTL_PREFIX, (int)pid);
	if (pid <= 0) {
		snprintf(err, errlen, "invalid pid %d", (int)pid);
		return -EINVAL;
	}
	char name[64], name2[64];
	struct stat st, fst;
	if (lstat(h->path, &st) < 0) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			snprintf(err, errlen, "no process %d", (int)pid);
		else
			snprintf(err, errlen, "process %d does not use libringtrace (no control block)", (int)pid);
		return -ESRCH;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a control block", h->path);
		return -EBADMSG;
	}
	if (st.st_uid != geteuid() && geteuid() != 0) {
		snprintf(err, errlen, "process %d belongs to user %s: permission denied (only its user or root may control it)",
			 (int)pid, user_name(st.st_uid, name, sizeof(name)));
		return -EPERM;
	}
	int fd = open(h->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open %s: %s", h->path, strerror(e));
		return -e;
	}
	if (fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode)) {
		close(fd);
		snprintf(err, errlen, "%s is not a control block", h->path);
		return -EBADMSG;
	}
	if ((uint64_t)fst.st_size != CTL_TOTAL) {
		close(fd);
		snprintf(err, errlen, "%s is damaged or from another version of ringtrace (size %lld)", h->path,
			 (long long)fst.st_size);
		return -EBADMSG;
	}
	void *m = mmap(NULL, CTL_TOTAL, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;
		close(fd);
		snprintf(err, errlen, "cannot map %s: %s", h->path, strerror(e));
		return -e;
	}
	h->b = m;
	int r = validate(h->b, CTL_TOTAL, pid);
	if (r < 0) {
		snprintf(err, errlen, "%s is damaged or from another version of ringtrace: %s", h->path,
			 r == -EPROTO ? "unknown version" : "bad header");
		goto fail;
	}
	char proc[32];
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (ctl_is_stale(h->b) || (h->procfd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    procfd_start_time(h->procfd) != h->b->start_time) {
		snprintf(err, errlen, "process %d is gone (stale control block; 'ringtrace ps --clean' removes it)",
			 (int)pid);
		r = -ESRCH;
		goto fail;
	}
	struct stat pst;
	if (procfd_real_uid(h->procfd, &h->uid) < 0 || fstat(h->procfd, &pst) < 0) {
		snprintf(err, errlen, "process %d is gone (cannot read %s/status)", (int)pid, proc);
		r = -ESRCH;
		goto fail;
	}
	r = -EPERM;
	if (pst.st_uid != h->uid) {
		snprintf(err, errlen,
			 "process %d runs as %s but %s belongs to %s (a set-user-ID or undumpable program): refused",
			 (int)pid, user_name(h->uid, name, sizeof(name)), proc, user_name(pst.st_uid, name2, sizeof(name2)));
		goto fail;
	}
	if (fst.st_uid != h->uid) {
		snprintf(err, errlen, "%s belongs to %s but process %d runs as %s: refused", h->path,
			 user_name(fst.st_uid, name, sizeof(name)), (int)pid, user_name(h->uid, name2, sizeof(name2)));
		goto fail;
	}
	if ((fst.st_mode & (S_IWGRP | S_IWOTH)) || fst.st_nlink != 1) {
		snprintf(err, errlen, "%s is %s: refused", h->path,
			 fst.st_nlink != 1 ? "linked elsewhere" : "writable by other users");
		goto fail;
	}
	if (h->uid != geteuid() && geteuid() != 0) {
		snprintf(err, errlen, "process %d belongs to user %s: permission denied (only its user or root may control it)",
			 (int)pid, user_name(h->uid, name, sizeof(name)));
		goto fail;
	}
	if (mode == CTL_OPEN_WRITE) {
		char self[64];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		int wfd = open(self, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		struct stat wst;
		void *w = MAP_FAILED;
		int e = errno;
		if (wfd >= 0) {
			if (fstat(wfd, &wst) < 0)
				e = errno;
			else if (wst.st_dev != fst.st_dev || wst.st_ino != fst.st_ino)
				e = ESTALE; /* cannot be: the same open file */
			else if ((w = mmap(NULL, CTL_TOTAL, PROT_READ | PROT_WRITE, MAP_SHARED, wfd, 0)) == MAP_FAILED)
				e = errno;
			close(wfd);
		}
		if (w == MAP_FAILED) {
			snprintf(err, errlen, "cannot open %s for writing: %s", h->path, strerror(e));
			r = -e;
			goto fail;
		}
		munmap(h->b, CTL_TOTAL);
		h->b = w;
		h->writable = 1;
	}
	close(fd);
	return 0;
fail:
	close(fd);
	ctl_close(h);
	return r;
}

void ctl_close(struct ctl_handle *h)
{
	/* h->b set means ctl_open() succeeded or is failing: procfd is ours
	 * then (a zeroed handle that never opened has b NULL). */
	if (h->b) {
		munmap(h->b, CTL_TOTAL);
		if (h->procfd >= 0)
			close(h->procfd);
	}
	h->b = NULL;
	h->procfd = -1;
}

void ctl_scan(void (*fn)(pid_t pid, const char *path, void *arg), void *arg)
{
	DIR *d = opendir(CTL_DIR);
	if (!d)
		return;
	struct dirent *e;
	size_t plen = strlen(CTL_PREFIX);
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, CTL_PREFIX, plen) != 0)
			continue;
		char *end;
		long pid = strtol(e->d_name + plen, &end, 10);
		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", CTL_DIR, e->d_name);
		fn((pid_t)pid, path, arg);
	}
	closedir(d);
}

struct resolve {
	const char *name;
	pid_t found;
	int count;
};

static void resolve_one(pid_t pid, const char *path, void *arg)
{
	(void)path;
	struct resolve *rs = arg;
	struct ctl_handle h;
	char err[256];
	if (ctl_open(pid, &h, CTL_OPEN_READ, err, sizeof(err)) < 0)
		return;
	const char *base = strrchr(h.b->exe, '/');
	base = base ? base + 1 : h.b->exe;
	char comm[sizeof(h.b->comm) + 1];
	memcpy(comm, h.b->comm, sizeof(h.b->comm));
	comm[sizeof(h.b->comm)] = 0;
	char exe[sizeof(h.b->exe) + 1];
	snprintf(exe, sizeof(exe), "%.*s", (int)sizeof(h.b->exe), base);
	if (!strcmp(comm, rs->name) || !strcmp(exe, rs->name)) {
		rs->found = pid;
		rs->count++;
	}
	ctl_close(&h);
}

int ctl_resolve(const char *spec, pid_t *ret, char *err, size_t errlen)
{
	if (!spec || !*spec) {
		snprintf(err, errlen, "no process given");
		return -EINVAL;
	}
	if (isdigit((unsigned char)spec[0])) {
		char *end;
		errno = 0;
		long v = strtol(spec, &end, 10);
		if (*end || errno || v <= 0 || v > INT_MAX) {
			snprintf(err, errlen, "invalid pid '%s'", spec);
			return -EINVAL;
		}
		*ret = (pid_t)v;
		return 0;
	}
	struct resolve rs = { spec, 0, 0 };
	ctl_scan(resolve_one, &rs);
	if (rs.count == 0) {
		snprintf(err, errlen, "no traceable process named '%s' (see 'ringtrace ps')", spec);
		return -ESRCH;
	}
	if (rs.count > 1) {
		snprintf(err, errlen, "%d traceable processes are named '%s': give a pid (see 'ringtrace ps')",
			 rs.count, spec);
		return -EEXIST;
	}
	*ret = rs.found;
	return 0;
}

static int alive(const struct ctl_handle *h)
{
	return !(kill(h->pid, 0) < 0 && errno == ESRCH) && ctl_proc_start_time(h->pid) == h->b->start_time &&
	       /* A zombie (exited, not reaped yet) will never answer. */
	       ctl_proc_state(h->pid) != 'Z';
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int ctl_request(struct ctl_handle *h, uint32_t op, uint64_t arg0, uint64_t arg1, const char *text,
		size_t textlen, int timeout_ms, char *msg, size_t msglen)
{
	struct ctl_block *b = h->b;
	int ret;
	msg[0] = 0;
	if (!h->writable) {
		snprintf(msg, msglen, "the control block of process %d was opened read-only", (int)h->pid);
		return -EBADF;
	}
	if (textlen > CTL_TEXT - 2) {
		snprintf(msg, msglen, "patterns too long (%zu bytes, at most %d)", textlen, CTL_TEXT - 2);
		return -E2BIG;
	}
	/* Take the mailbox; a holder that died loses it. */
	uint32_t me = (uint32_t)getpid();
	uint64_t t0 = now_ms();
	for (;;) {
		uint32_t holder = 0;
		if (__atomic_compare_exchange_n(&b->cmd_lock, &holder, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
		if (kill((pid_t)holder, 0) < 0 && errno == ESRCH &&
		    __atomic_compare_exchange_n(&b->cmd_lock, &holder, me, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			break;
		if (!alive(h)) {
			snprintf(msg, msglen, "process %d exited", (int)h->pid);
			return -ESRCH;
		}
		if (now_ms() - t0 > (uint64_t)timeout_ms) {
			snprintf(msg, msglen, "process %d is busy with another command (pid %u)", (int)h->pid, holder);
			return -EBUSY;
		}
		struct timespec d = { 0, 2000000 };
		nanosleep(&d, NULL);
	}
	/* A request the program took before it stopped answering (a
	 * controller that gave up on it) must be finished before we write. */
	while (__atomic_load_n(&b->cmd_state, __ATOMIC_ACQUIRE) == CTL_CMD_TAKEN) {
		if (!alive(h)) {
			snprintf(msg, msglen, "process %d exited", (int)h->pid);
			ret = -ESRCH;
			goto unlock;
		}
		if (now_ms() - t0 > (uint64_t)timeout_ms) {
			snprintf(msg, msglen, "process %d is still busy with an earlier command (is it stopped?)",
				 (int)h->pid);
			ret = -ETIMEDOUT;
			goto unlock;
		}
		struct timespec d = { 0, 2000000 };
		nanosleep(&d, NULL);
	}
	b->op = op;
	b->arg0 = arg0;
	b->arg1 = arg1;
	memset(b->text, 0, CTL_TEXT);
	if (text && textlen)
		memcpy(b->text, text, textlen);
	/* Release pairs with the control thread's acquire load of cmd_seq. */
	__atomic_store_n(&b->cmd_state, CTL_CMD_PENDING, __ATOMIC_RELEASE);
	uint32_t seq = __atomic_add_fetch(&b->cmd_seq, 1, __ATOMIC_RELEASE);
	ctl_futex(&b->cmd_seq, FUTEX_WAKE, INT_MAX, NULL);
	for (;;) {
		uint32_t done = __atomic_load_n(&b->done_seq, __ATOMIC_ACQUIRE);
		if (done == seq) {
			ret = b->result;
			char *m = b->msg;
			snprintf(msg, msglen, "%.*s", (int)strnlen(m, CTL_MSG), m);
			break;
		}
		if (!alive(h)) {
			snprintf(msg, msglen, "process %d exited before it answered", (int)h->pid);
			ret = -ESRCH;
			break;
		}
		if (now_ms() - t0 > (uint64_t)timeout_ms) {
			uint32_t pending = CTL_CMD_PENDING;
			if (__atomic_compare_exchange_n(&b->cmd_state, &pending, CTL_CMD_CANCELLED, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				snprintf(msg, msglen,
					 "process %d did not answer within %d ms (is it stopped?); the command was cancelled",
					 (int)h->pid, timeout_ms);
			else
				snprintf(msg, msglen,
					 "process %d did not finish the command within %d ms (is it stopped?); it may still take effect",
					 (int)h->pid, timeout_ms);
			ret = -ETIMEDOUT;
			break;
		}
		struct timespec ts = { 0, 50000000 };
		ctl_futex(&b->done_seq, FUTEX_WAIT, done, &ts);
	}
unlock:;
	uint32_t mine = me;
	__atomic_compare_exchange_n(&b->cmd_lock, &mine, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	return ret;
}

static int map_program_fd(struct ctl_handle *h, int32_t fdn, struct ctl_ring *ring, char *err, size_t errlen);

int ctl_ring_open(struct ctl_handle *h, struct ctl_ring *ring, char *err, size_t errlen)
{
	memset(ring, 0, sizeof(*ring));
	uint32_t gen = __atomic_load_n(&h->b->ring_gen, __ATOMIC_ACQUIRE);
	int32_t fdn = h->b->ring_fd;
	if (h->b->session == CTL_SESSION_NONE || fdn < 0) {
		snprintf(err, errlen, "process %d has no trace buffers (tracing was never on)", (int)h->pid);
		return -ENOENT;
	}
	int r = map_program_fd(h, fdn, ring, err, errlen);
	ring->gen = gen;
	return r;
}

int ctl_snap_open(struct ctl_handle *h, struct ctl_ring *ring, char *err, size_t errlen)
{
	memset(ring, 0, sizeof(*ring));
	/* Pairs with the program's release store of snap_state. */
	uint32_t state = __atomic_load_n(&h->b->snap_state, __ATOMIC_ACQUIRE);
	int32_t fdn = h->b->snap_fd;
	if (state != CTL_SNAP_HELD || fdn < 0) {
		snprintf(err, errlen, "process %d holds no snapshot", (int)h->pid);
		return -ENOENT;
	}
	return map_program_fd(h, fdn, ring, err, errlen);
}

int ctl_spare_open(struct ctl_handle *h, struct ctl_ring *ring, char *err, size_t errlen)
{
	memset(ring, 0, sizeof(*ring));
	uint32_t gen = __atomic_load_n(&h->b->spare_gen, __ATOMIC_ACQUIRE);
	int32_t fdn = h->b->spare_fd;
	if (__atomic_load_n(&h->b->snap_state, __ATOMIC_ACQUIRE) != CTL_SNAP_READY || fdn < 0) {
		snprintf(err, errlen, "process %d has no spare buffers", (int)h->pid);
		return -ENOENT;
	}
	int r = map_program_fd(h, fdn, ring, err, errlen);
	ring->gen = gen;
	return r;
}

/* Whether a descriptor's link names ringtrace buffers: the program's own
 * (a memfd, agent.c) or those of `ringtrace record` (rb_shm_create():
 * DIR/ringtrace-PID-XXXXXXXX, unlinked once the program has them). Only a
 * first filter: ownership is what makes the descriptor trusted. */
static int ring_link_ok(const char *link)
{
	static const char memfd[] = "/memfd:ringtrace-";
	if (!strncmp(link, memfd, sizeof(memfd) - 1))
		return 1;
	const char *base = strrchr(link, '/');
	if (link[0] != '/' || !base || strncmp(base + 1, "ringtrace-", 10) != 0)
		return 0;
	const char *p = base + 11;
	size_t digits = strspn(p, "0123456789");
	if (!digits || p[digits] != '-')
		return 0;
	p += digits + 1;
	if (strspn(p, "0123456789abcdef") != 8)
		return 0;
	p += 8;
	return !*p || !strcmp(p, " (deleted)");
}

/*
 * Map the region behind descriptor fdn of the program, validated. fdn is
 * the block's word, so nothing is opened before the descriptor is known
 * to be the process's user's buffers:
 *  1. readlink fd/N (through the pinned /proc/PID): the name of ringtrace
 *     buffers, not a file the program happens to hold;
 *  2. stat fd/N, which follows the magic link to the open file's inode:
 *     a regular file owned by the process's real uid, of a sane size. A
 *     root-owned file handed to another user's program ends here, before
 *     any open;
 *  3. open fd/N, read-write only for a writable handle, and fstat what
 *     was opened: the same st_dev/st_ino as in 2 (the program may have
 *     replaced its descriptor between 2 and 3), owner and size again.
 */
static int map_program_fd(struct ctl_handle *h, int32_t fdn, struct ctl_ring *ring, char *err, size_t errlen)
{
	char rel[32], link[PATH_MAX], name[64], name2[64];
	snprintf(rel, sizeof(rel), "fd/%d", (int)fdn);
	const uint64_t max_size = UINT64_C(1) << 40;
	if (fdn < 0 || fdn > (1 << 24) || h->procfd < 0) {
		snprintf(err, errlen, "descriptor %d of process %d is not ringtrace buffers", (int)fdn, (int)h->pid);
		return -EBADMSG;
	}
	ssize_t n = readlinkat(h->procfd, rel, link, sizeof(link) - 1);
	if (n < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open the buffers of process %d (/proc/%d/%s): %s", (int)h->pid,
			 (int)h->pid, rel, strerror(e));
		return -e;
	}
	link[n] = 0;
	if (!ring_link_ok(link)) {
		snprintf(err, errlen, "descriptor %d of process %d is not ringtrace buffers (%.200s): refused", (int)fdn,
			 (int)h->pid, link);
		return -EPERM;
	}
	struct stat st0, st;
	if (fstatat(h->procfd, rel, &st0, 0) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open the buffers of process %d (/proc/%d/%s): %s", (int)h->pid,
			 (int)h->pid, rel, strerror(e));
		return -e;
	}
	if (!S_ISREG(st0.st_mode) || (uint64_t)st0.st_size < sizeof(struct ringtrace__shm_header) ||
	    (uint64_t)st0.st_size > max_size) {
		snprintf(err, errlen, "descriptor %d of process %d is not ringtrace buffers", (int)fdn, (int)h->pid);
		return -EBADMSG;
	}
	if (st0.st_uid != h->uid) {
		snprintf(err, errlen, "descriptor %d of process %d belongs to %s, not to the process's user %s: refused",
			 (int)fdn, (int)h->pid, user_name(st0.st_uid, name, sizeof(name)),
			 user_name(h->uid, name2, sizeof(name2)));
		return -EPERM;
	}
	int fd = openat(h->procfd, rel, (h->writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open the buffers of process %d (/proc/%d/%s): %s", (int)h->pid,
			 (int)h->pid, rel, strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || st.st_dev != st0.st_dev || st.st_ino != st0.st_ino || st.st_uid != h->uid ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof(struct ringtrace__shm_header) ||
	    (uint64_t)st.st_size > max_size) {
		close(fd);
		snprintf(err, errlen, "descriptor %d of process %d changed while it was opened: refused", (int)fdn,
			 (int)h->pid);
		return -EPERM;
	}
	int prot = h->writable ? PROT_READ | PROT_WRITE : PROT_READ;
	void *m = mmap(NULL, (size_t)st.st_size, prot, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		int e = errno;
		snprintf(err, errlen, "cannot map the buffers of process %d: %s", (int)h->pid, strerror(e));
		return -e;
	}
	ring->mem = m;
	ring->size = (uint64_t)st.st_size;
	ring->fdn = fdn;
	ring->ino = (uint64_t)st.st_ino;
	int r = rb_view_open(m, ring->size, &ring->rb);
	if (r < 0 || ring->rb->hdr->attached_pid != (uint32_t)h->pid) {
		snprintf(err, errlen, "the buffers of process %d are damaged or not ringtrace's", (int)h->pid);
		ctl_ring_close(ring);
		return -EBADMSG;
	}
	return 0;
}

void ctl_ring_close(struct ctl_ring *ring)
{
	if (ring->rb)
		rb_view_free(ring->rb);
	if (ring->mem)
		munmap(ring->mem, ring->size);
	memset(ring, 0, sizeof(*ring));
}

void ctl_ring_cpu_stat(const struct ringtrace__rb *rb, uint32_t cpu, struct ctl_cpu_stat *s)
{
	memset(s, 0, sizeof(*s));
	const struct ringtrace__rb_percpu *pc = &rb->cpu[cpu];
	uint32_t nsb = 1u << rb->nsb_shift;
	for (uint32_t i = 0; i < nsb; i++) {
		const struct ringtrace__rb_slot *sl = &pc->slots[i];
		uint64_t ev = __atomic_load_n(&sl->local_events, __ATOMIC_RELAXED) +
			      __atomic_load_n(&sl->remote_events, __ATOMIC_RELAXED);
		uint64_t own = __atomic_load_n(&sl->owner, __ATOMIC_ACQUIRE);
		s->written += ev;
		uint64_t base = RINGTRACE__OWN_BASE(own);
		if (!RINGTRACE__OWN_READ(own) && ev >= base)
			s->in_buffer += ev - base;
	}
	/* Internal records (thread, thread_name) are committed with 0 events:
	 * the counts are user events only. */
	s->lost_full = __atomic_load_n(&pc->ctl->lost_full, __ATOMIC_RELAXED);
	s->lost_overwrite = __atomic_load_n(&pc->ctl->lost_overwrite, __ATOMIC_RELAXED);
	s->lost_too_big = __atomic_load_n(&pc->ctl->lost_too_big, __ATOMIC_RELAXED);
	s->lost_nocpu = __atomic_load_n(&pc->ctl->lost_nocpu, __ATOMIC_RELAXED);
	s->bytes = __atomic_load_n(&pc->ctl->state, __ATOMIC_RELAXED) & RINGTRACE__POS_MASK;
	s->read_subbufs = __atomic_load_n(&pc->ctl->read_subbufs, __ATOMIC_RELAXED);
	s->read_events = __atomic_load_n(&pc->ctl->read_events, __ATOMIC_RELAXED);
	/* Relaxed: the writers' atomic adds (src/ringbuf/rb_block.c). */
	s->block_waits = __atomic_load_n(&pc->ctl->block_waits, __ATOMIC_RELAXED);
	s->block_ns = __atomic_load_n(&pc->ctl->block_ns, __ATOMIC_RELAXED);
	s->block_timeouts = __atomic_load_n(&pc->ctl->block_timeouts, __ATOMIC_RELAXED);
}

void ctl_cpu_stat_add(struct ctl_cpu_stat *tot, const struct ctl_cpu_stat *s)
{
	tot->in_buffer += s->in_buffer;
	tot->written += s->written;
	tot->lost_full += s->lost_full;
	tot->lost_overwrite += s->lost_overwrite;
	tot->lost_too_big += s->lost_too_big;
	tot->lost_nocpu += s->lost_nocpu;
	tot->bytes += s->bytes;
	tot->read_subbufs += s->read_subbufs;
	tot->read_events += s->read_events;
	tot->block_waits += s->block_waits;
	tot->block_ns += s->block_ns;
	tot->block_timeouts += s->block_timeouts;
}

int ctl_log_next(const char *log, uint64_t used, uint64_t *pos, struct ctl_log_entry *e)
{
	if (*pos + 16 > used)
		return 0;
	const char *p = log + *pos;
	uint32_t w[4];
	memcpy(w, p, sizeof(w));
	if (w[0] < 16 || (w[0] & 7) || w[0] > used - *pos)
		return -EBADMSG;
	memset(e, 0, sizeof(*e));
	e->kind = w[1];
	e->id = w[2];
	size_t off = 16;
	while (e->n < 4 && off < w[0]) {
		const char *s = p + off;
		size_t len = strnlen(s, w[0] - off);
		if (len == w[0] - off)
			break;
		e->s[e->n++] = s;
		off += len + 1;
	}
	*pos += w[0];
	return 1;
}

/* Claim the one reader's place of a region; a reader that died loses it. */
int ctl_ring_claim_reader(struct ringtrace__rb *rb, char *err, size_t errlen)
{
	uint32_t me = (uint32_t)getpid();
	for (int tries = 0; tries < 4; tries++) {
		uint32_t cur = 0;
		if (__atomic_compare_exchange_n(&rb->hdr->reader_pid, &cur, me, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
		if (kill((pid_t)cur, 0) == 0 || errno == EPERM) {
			snprintf(err, errlen, "its buffers are already being read by pid %u", cur);
			return -EBUSY;
		}
		if (__atomic_compare_exchange_n(&rb->hdr->reader_pid, &cur, me, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
	}
	snprintf(err, errlen, "cannot claim its buffers");
	return -EBUSY;
}

void ctl_ring_release_reader(struct ringtrace__rb *rb)
{
	uint32_t me = (uint32_t)getpid();
	/* Release: our zeroing of sub-buffers is done before another reader
	 * can claim the region. */
	__atomic_compare_exchange_n(&rb->hdr->reader_pid, &me, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

int ctl_remove_if_stale(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "%s/%s%d", CTL_DIR, CTL_PREFIX, (int)pid);
	struct stat st;
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_uid != geteuid() && geteuid() != 0))
		return 0;
	struct ctl_handle h;
	char err[256];
	int r = ctl_open(pid, &h, CTL_OPEN_READ, err, sizeof(err));
	if (r == 0) {
		ctl_close(&h);
		return 0; /* alive: not ours to remove */
	}
	if (r != -ESRCH)
		return 0; /* damaged or foreign: leave it for a human */
	/*
	 * Stale, but a process still runs with this pid (it exec'ed, or the
	 * pid was reused): it may put a block of its own at this path at any
	 * moment (agent.c publish(): unlink, then create), and our unlink
	 * could take that one instead. Only a dead process's block goes (a
	 * zombie runs no code); `ringtrace ps --clean` removes the others.
	 */
	int state = ctl_proc_state(pid);
	if (state && state != 'Z' && state != 'X')
		return 0;
	return unlink(path) == 0 ? 1 : -errno;
}
