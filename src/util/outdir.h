/*
 * outdir.h - files the command creates, created so that no one else can
 * steer them.
 *
 * The command often runs as root and writes into directories a user named:
 * a trace directory, a database, an HTML page. A name that another user can
 * plant (a symlink called stream_0 or out.db.tmp) must never make root
 * write through it. So every output goes through one directory descriptor,
 * opened once without following a symlink and refused when another user
 * owns it or may write into it (unless the user said --allow-shared-dir);
 * every file is created new with O_CREAT|O_EXCL|O_NOFOLLOW relative to that
 * descriptor; and a file that replaces another is written under an
 * unpredictable temporary name and renamed into place (a rename replaces a
 * symlink, it never follows one).
 *
 * Callers: record, snapshot, recover and mem (trace directories, children,
 * snapshots, the aggregate file, the stack files), convert, report --html
 * and stackmap --bin (single files). Nothing here prints: errors are a
 * negative errno, and a refusal is explained in the caller's `err`.
 */
#ifndef RINGTRACE_OUTDIR_H
#define RINGTRACE_OUTDIR_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

#define OUTDIR_CREATE       0x1u /* mkdir the directory when it is missing */
#define OUTDIR_EMPTY        0x2u /* refuse a directory that holds anything */
#define OUTDIR_ALLOW_SHARED 0x4u /* accept another user's directory, or one others may write */
#define OUTDIR_NEW          0x8u /* with OUTDIR_CREATE: an existing one is -EEXIST */

/* The option that sets OUTDIR_ALLOW_SHARED, the same in every command. */
#define OUTDIR_ALLOW_OPT "--allow-shared-dir"

/*
 * Open `path` (relative to `at`, or AT_FDCWD) as an output directory:
 * O_DIRECTORY|O_NOFOLLOW (a symlink only if we or root made it, in a
 * directory no one else may change; else refused), created 0755 first with
 * OUTDIR_CREATE when missing (*ret_created, if given, says whether it was).
 * Refused unless OUTDIR_ALLOW_SHARED: a directory owned by neither us nor
 * root, or one that group or others may write without the sticky bit.
 * Returns the descriptor (close-on-exec), or a negative errno with the
 * reason in err ("is a symbolic link", "is owned by uid 1001 ...").
 */
int outdir_open(int at, const char *path, unsigned flags, int *ret_created, char *err, size_t errlen);

/* A new file in dfd: O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC|O_WRONLY. An
 * existing name, symlink or not, is -EEXIST. Returns the fd or -errno. */
int outdir_create(int dfd, const char *name, mode_t mode);

/*
 * A file that replaces dfd/name when committed, written meanwhile under a
 * random name in the same directory (created as outdir_create() does).
 * Write to fd, or to the FILE from outdir_tmp_fdopen().
 */
struct outdir_tmp {
	int dfd;             /* not owned */
	int fd;              /* -1 once closed */
	FILE *f;             /* from outdir_tmp_fdopen(), owns fd */
	char name[NAME_MAX + 1];
	char tmp[NAME_MAX + 1];
};

/* 0 or -errno (nothing left behind). */
int outdir_tmp_open(struct outdir_tmp *t, int dfd, const char *name, mode_t mode);
/* A stdio stream on the file (it owns the fd from now on); NULL, errno. */
FILE *outdir_tmp_fdopen(struct outdir_tmp *t, const char *mode);
/* Flush (fsync too when `sync`), close and rename over the name. 0, or
 * -errno with the temporary removed. */
int outdir_tmp_commit(struct outdir_tmp *t, int sync);
/* Close and remove the temporary. Idempotent. */
void outdir_tmp_abort(struct outdir_tmp *t);

/*
 * One output file given by path (`convert -o F`, `report --html -o F`):
 * F's parent directory opened and checked as outdir_open() does (never
 * created), the content written to a temporary there and renamed over F by
 * outfile_commit(). A library that opens files by name gets `libpath`,
 * the temporary's name under the directory's resolved path (no symlink
 * in it); outfile_commit() checks that it still names our file. F that is
 * a character device or a FIFO (/dev/null, /dev/stdout) is opened and
 * written in place instead.
 */
struct outfile {
	int dfd;
	int direct;          /* F is a device or a pipe: written in place */
	struct outdir_tmp t;
	char libpath[PATH_MAX];
};

/* 0, or -errno with the reason in err; nothing to clean up then. */
int outfile_open(struct outfile *o, const char *path, unsigned flags, mode_t mode, char *err, size_t errlen);
/* outfile_open() with a stdio stream on the file, mode 0666 (less the
 * umask); the stream belongs to o. NULL with the reason in err (nothing to
 * clean up then). */
FILE *outfile_fopen(struct outfile *o, const char *path, unsigned flags, char *err, size_t errlen);
/* See outdir_tmp_commit(); closes the directory too. */
int outfile_commit(struct outfile *o, int sync);
/* Nothing replaced, nothing left. Idempotent. */
void outfile_abort(struct outfile *o);

#endif
