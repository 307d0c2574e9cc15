/*
 * outdir.c - output directories and files no other user can redirect
 * (outdir.h says the rules and who calls what).
 *
 * Called by the command only, a few times per file it writes: nothing here
 * is on a hot path. The checks are made on the descriptor (fstat), never
 * on a name that could change between the check and the use.
 */
#include "util/outdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(int e, char *err, size_t errlen, const char *why)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", why);
	return -e;
}

/* The reason of a failed system call, worded to follow the directory's
 * name as the other reasons are ("'x' cannot be created: No such file or
 * directory"). */
static int fail_sys(int e, char *err, size_t errlen, const char *what)
{
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", what, strerror(e));
	return -e;
}

/* 1 when dfd holds nothing but . and .., 0 when it holds more, -errno. */
static int dir_empty(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = -errno;
		close(fd);
		return e;
	}
	struct dirent *e;
	int empty = 1;
	while (empty && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty;
}

/*
 * Root (or anyone) writing into a directory another user controls can be
 * made to write through a name that user plants there after our checks.
 * Root's own directories are trusted: root can change anything anyway.
 * The sticky bit is what makes /tmp fine: a name there can be replaced
 * only by its owner (and fs.protected_symlinks keeps us off their links).
 */
static int check_dir(int dfd, unsigned flags, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(dfd, &st) < 0)
		return fail_sys(errno, err, errlen, "cannot be examined");
	if (flags & OUTDIR_ALLOW_SHARED)
		return 0;
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		if (err && errlen)
			snprintf(err, errlen, "is owned by uid %u, not by us: another user could plant names in it (" OUTDIR_ALLOW_OPT " writes there anyway)",
				 (unsigned)st.st_uid);
		return -EPERM;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		return fail(EPERM, err, errlen,
			    "may be written by group or others and is not sticky: another user could plant names in it (" OUTDIR_ALLOW_OPT " writes there anyway)");
	return 0;
}

/*
 * A symlink given as the directory (`-o ~/traces/latest`) is followed only
 * when we or root made it and it sits in a directory no other user may
 * change (check_dir's rule without the allowance), so that nobody can
 * swap it between this check and the open: the rule fs.protected_symlinks
 * applies to sticky directories, for every directory. Where it points is
 * then checked as any output directory is.
 */
static int link_trusted(int at, const char *path, const struct stat *lst)
{
	if (lst->st_uid != geteuid() && lst->st_uid != 0)
		return 0;
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == path)
		snprintf(parent, sizeof(parent), "/");
	else if ((size_t)(slash - path) < sizeof(parent))
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	else
		return 0;
	int pfd = openat(at, parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return 0;
	int ok = check_dir(pfd, 0, NULL, 0) == 0;
	close(pfd);
	return ok;
}

int outdir_open(int at, const char *path, unsigned flags, int *ret_created, char *err, size_t errlen)
{
	int created = 0;
	if (!path || !*path)
		return fail(EINVAL, err, errlen, "empty name");
	if ((flags & OUTDIR_CREATE) && mkdirat(at, path, 0755) == 0)
		created = 1;
	else if ((flags & OUTDIR_CREATE) && (errno != EEXIST || (flags & OUTDIR_NEW)))
		return fail_sys(errno, err, errlen, "cannot be created");
	int dfd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;
		struct stat st;
		if ((e == ELOOP || e == ENOTDIR) && fstatat(at, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode)) {
			if (!link_trusted(at, path, &st))
				return fail(ELOOP, err, errlen,
					    "is a symbolic link another user made or could replace (give the directory itself)");
			dfd = openat(at, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			e = errno;
		}
		if (dfd < 0)
			return fail_sys(e, err, errlen, "cannot be opened");
	}
	int k = check_dir(dfd, flags, err, errlen);
	if (k == 0 && !created && (flags & OUTDIR_EMPTY)) {
		k = dir_empty(dfd);
		if (k == 0)
			k = fail(ENOTEMPTY, err, errlen, "exists and is not empty");
		else if (k < 0)
			k = fail_sys(-k, err, errlen, "cannot be read");
		else
			k = 0;
	}
	if (k < 0) {
		close(dfd);
		/* Ours, just made, still empty: gone again. */
		if (created)
			unlinkat(at, path, AT_REMOVEDIR);
		return k;
	}
	if (ret_created)
		*ret_created = created;
	return dfd;
}

int outdir_create(int dfd, const char *name, mode_t mode)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	return fd < 0 ? -errno : fd;
}

int outdir_tmp_open(struct outdir_tmp *t, int dfd, const char *name, mode_t mode)
{
	memset(t, 0, sizeof(*t));
	t->dfd = dfd;
	t->fd = -1;
	size_t n = strlen(name);
	if (n == 0 || n > NAME_MAX - 24 || strchr(name, '/'))
		return -ENAMETOOLONG;
	memcpy(t->name, name, n + 1);
	/* 64 random bits: a name no one can plant ahead of us; O_EXCL makes
	 * even a lucky guess fail rather than be followed. */
	int k = -EEXIST;
	for (int tries = 0; tries < 8 && k == -EEXIST; tries++) {
		unsigned long long r;
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
			k = errno ? -errno : -EIO;
			break;
		}
		snprintf(t->tmp, sizeof(t->tmp), ".%s.%016llx.tmp", name, r);
		k = outdir_create(dfd, t->tmp, mode);
	}
	if (k >= 0) {
		t->fd = k;
		return 0;
	}
	/* Nothing of ours under that name: abort must not remove it. */
	t->tmp[0] = 0;
	return k;
}

FILE *outdir_tmp_fdopen(struct outdir_tmp *t, const char *mode)
{
	t->f = fdopen(t->fd, mode);
	return t->f;
}

void outdir_tmp_abort(struct outdir_tmp *t)
{
	if (t->f)
		fclose(t->f);
	else if (t->fd >= 0)
		close(t->fd);
	if (t->tmp[0])
		unlinkat(t->dfd, t->tmp, 0);
	t->f = NULL;
	t->fd = -1;
	t->tmp[0] = 0;
}

int outdir_tmp_commit(struct outdir_tmp *t, int sync)
{
	int r = 0;
	if (t->f && (fflush(t->f) != 0 || ferror(t->f)))
		r = errno ? -errno : -EIO;
	/* On disk before the name points at it, when asked: after a crash the
	 * name holds the old file or the whole new one. */
	if (r == 0 && sync && fsync(t->fd) < 0)
		r = -errno;
	/* The name must still be the file we created (a library may have
	 * written it by name): same inode, not a link put in its place. */
	struct stat a, b;
	if (r == 0 && (fstat(t->fd, &a) < 0 || fstatat(t->dfd, t->tmp, &b, AT_SYMLINK_NOFOLLOW) < 0))
		r = -errno;
	if (r == 0 && (a.st_dev != b.st_dev || a.st_ino != b.st_ino))
		r = -EXDEV;
	int c = t->f ? fclose(t->f) : close(t->fd);
	t->f = NULL;
	t->fd = -1;
	if (c != 0 && r == 0)
		r = errno ? -errno : -EIO;
	if (r == 0 && renameat(t->dfd, t->tmp, t->dfd, t->name) < 0)
		r = -errno;
	if (r < 0)
		outdir_tmp_abort(t);
	t->tmp[0] = 0;
	return r;
}

int outfile_open(struct outfile *o, const char *path, unsigned flags, mode_t mode, char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	o->dfd = -1;
	o->t.fd = -1;
	size_t n = path ? strlen(path) : 0;
	if (n == 0 || path[n - 1] == '/')
		return fail(EISDIR, err, errlen, strerror(EISDIR));
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!strcmp(base, ".") || !strcmp(base, ".."))
		return fail(EISDIR, err, errlen, strerror(EISDIR));
	char dir[PATH_MAX];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - path) >= sizeof(dir))
		return fail(ENAMETOOLONG, err, errlen, strerror(ENAMETOOLONG));
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	char why[256];
	int dfd = outdir_open(AT_FDCWD, dir, flags & OUTDIR_ALLOW_SHARED, NULL, why, sizeof(why));
	if (dfd < 0) {
		if (err && errlen)
			snprintf(err, errlen, "its directory '%s' %s", dir, why);
		return dfd;
	}
	/* A directory in F's place: the rename would fail at the very end. */
	struct stat st;
	int there = fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (there && S_ISDIR(st.st_mode)) {
		close(dfd);
		return fail(EISDIR, err, errlen, strerror(EISDIR));
	}
	/* A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written in
	 * place, never replaced; through a symlink only if we or root made
	 * it, since another user's link could name any device. */
	int trusted = there && (!S_ISLNK(st.st_mode) || st.st_uid == geteuid() || st.st_uid == 0);
	struct stat dst;
	if (trusted && fstatat(dfd, base, &dst, 0) == 0 && (S_ISCHR(dst.st_mode) || S_ISFIFO(dst.st_mode))) {
		int fd = openat(dfd, base, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		struct stat fst;
		if (fd >= 0 && (fstat(fd, &fst) < 0 || !(S_ISCHR(fst.st_mode) || S_ISFIFO(fst.st_mode)))) {
			close(fd);
			fd = -1;
			errno = EEXIST;
		}
		if (fd < 0) {
			int e = errno;
			close(dfd);
			return fail(e, err, errlen, strerror(e));
		}
		o->dfd = dfd;
		o->direct = 1;
		o->t.dfd = dfd;
		o->t.fd = fd;
		snprintf(o->libpath, sizeof(o->libpath), "%s", path);
		return 0;
	}
	int k = outdir_tmp_open(&o->t, dfd, base, mode);
	if (k < 0) {
		close(dfd);
		return fail(-k, err, errlen, strerror(-k));
	}
	o->dfd = dfd;
	/* For a library that opens by name: the directory's path as the
	 * kernel resolved it (no symlink in it, so a library told not to
	 * follow one can check the whole name), else through /proc. */
	char real[PATH_MAX], fdp[64];
	snprintf(fdp, sizeof(fdp), "/proc/self/fd/%d", dfd);
	ssize_t rl = readlink(fdp, real, sizeof(real) - 1);
	int w = -1;
	if (rl > 0 && real[0] == '/') {
		real[rl] = 0;
		w = snprintf(o->libpath, sizeof(o->libpath), "%s%s%s", real, rl > 1 ? "/" : "", o->t.tmp);
	}
	if (w < 0 || (size_t)w >= sizeof(o->libpath))
		snprintf(o->libpath, sizeof(o->libpath), "%s/%s", fdp, o->t.tmp);
	return 0;
}

FILE *outfile_fopen(struct outfile *o, const char *path, unsigned flags, char *err, size_t errlen)
{
	if (outfile_open(o, path, flags, 0666, err, errlen) < 0)
		return NULL;
	FILE *f = outdir_tmp_fdopen(&o->t, "w");
	if (!f) {
		fail(errno, err, errlen, strerror(errno));
		outfile_abort(o);
	}
	return f;
}

int outfile_commit(struct outfile *o, int sync)
{
	int r = 0;
	if (o->direct) {
		if (o->t.f && (fflush(o->t.f) != 0 || ferror(o->t.f)))
			r = errno ? -errno : -EIO;
		if ((o->t.f ? fclose(o->t.f) : close(o->t.fd)) != 0 && r == 0)
			r = errno ? -errno : -EIO;
		o->t.f = NULL;
		o->t.fd = -1;
	} else {
		r = outdir_tmp_commit(&o->t, sync);
	}
	if (o->dfd >= 0)
		close(o->dfd);
	o->dfd = -1;
	return r;
}

void outfile_abort(struct outfile *o)
{
	if (o->dfd >= 0) {
		outdir_tmp_abort(&o->t);
		close(o->dfd);
	}
	o->dfd = -1;
}
