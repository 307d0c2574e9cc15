/*
 * test_outdir.c - output directories and files (util/outdir.h): a
 * symlink given as the directory is refused, and so are one that others
 * may write without the sticky bit and (as root) one another uid owns,
 * unless OUTDIR_ALLOW_SHARED; OUTDIR_EMPTY and OUTDIR_NEW; a file is never
 * created through an existing name, dangling symlink included; a
 * temporary replaces a symlink at its name instead of following it, and
 * is refused when its own name was swapped; a single output file over a
 * symlink leaves the link's target alone, over /dev/null writes in place,
 * and leaves nothing when aborted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/outdir.h"

struct fixture {
	char dir[64];
	char victim[96];
};

static int rm_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char sub[512];
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			rm_tree(sub);
		}
		if (d)
			closedir(d);
		return rmdir(path);
	}
	return unlink(path);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "%s", "/tmp/test_outdir.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->victim, sizeof(f->victim), "%s/victim", f->dir);
	FILE *v = fopen(f->victim, "w");
	if (!v)
		return -1;
	fputs("root only\n", v);
	fclose(v);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	rm_tree(f->dir);
	free(f);
	return 0;
}

static void path(char *buf, size_t len, const struct fixture *f, const char *name)
{
	snprintf(buf, len, "%s/%s", f->dir, name);
}

static void assert_victim_intact(const struct fixture *f)
{
	char buf[64] = "";
	FILE *v = fopen(f->victim, "r");
	assert_non_null(v);
	assert_non_null(fgets(buf, sizeof(buf), v));
	fclose(v);
	assert_string_equal(buf, "root only\n");
}

static void test_dir_checks(void **state)
{
	struct fixture *f = *state;
	char p[128], err[256];
	int created = -1;

	/* Made when missing, then taken again. */
	path(p, sizeof(p), f, "out");
	int fd = outdir_open(AT_FDCWD, p, OUTDIR_CREATE, &created, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(created, 1);
	close(fd);
	fd = outdir_open(AT_FDCWD, p, OUTDIR_CREATE, &created, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(created, 0);
	close(fd);
	assert_int_equal(outdir_open(AT_FDCWD, p, OUTDIR_CREATE | OUTDIR_NEW, NULL, err, sizeof(err)), -EEXIST);

	/* Not empty. */
	char q[160];
	snprintf(q, sizeof(q), "%s/x", p);
	close(open(q, O_WRONLY | O_CREAT, 0600));
	assert_int_equal(outdir_open(AT_FDCWD, p, OUTDIR_CREATE | OUTDIR_EMPTY, NULL, err, sizeof(err)), -ENOTEMPTY);
	assert_non_null(strstr(err, "not empty"));

	/* Our own symlink in a directory only we may change: followed, to
	 * the directory it names. */
	char l[128];
	struct stat a, b;
	path(l, sizeof(l), f, "link");
	assert_int_equal(symlink(p, l), 0);
	fd = outdir_open(AT_FDCWD, l, OUTDIR_CREATE, NULL, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(p, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	close(fd);

	/* The same link in a directory others may change (it could be
	 * swapped between the check and the open): refused, even with
	 * OUTDIR_ALLOW_SHARED. */
	char sd[128], sl[160];
	path(sd, sizeof(sd), f, "shared");
	assert_int_equal(mkdir(sd, 0700), 0);
	assert_int_equal(chmod(sd, 0777), 0);
	snprintf(sl, sizeof(sl), "%s/link", sd);
	assert_int_equal(symlink(p, sl), 0);
	assert_int_equal(outdir_open(AT_FDCWD, sl, OUTDIR_CREATE | OUTDIR_ALLOW_SHARED, NULL, err, sizeof(err)),
			 -ELOOP);
	assert_non_null(strstr(err, "symbolic link"));

	/* Others may write: refused unless sticky or allowed. */
	path(p, sizeof(p), f, "ww");
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(outdir_open(AT_FDCWD, p, 0, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "not sticky"));
	fd = outdir_open(AT_FDCWD, p, OUTDIR_ALLOW_SHARED, NULL, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(p, 01777), 0);
	fd = outdir_open(AT_FDCWD, p, 0, NULL, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(p, 0770), 0);
	assert_int_equal(outdir_open(AT_FDCWD, p, 0, NULL, err, sizeof(err)), -EPERM);

	/* Another uid's directory (root can make one). */
	if (geteuid() == 0) {
		path(p, sizeof(p), f, "theirs");
		assert_int_equal(mkdir(p, 0755), 0);
		assert_int_equal(chown(p, 12345, 12345), 0);
		assert_int_equal(outdir_open(AT_FDCWD, p, 0, NULL, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "owned by uid 12345"));
		fd = outdir_open(AT_FDCWD, p, OUTDIR_ALLOW_SHARED, NULL, err, sizeof(err));
		assert_true(fd >= 0);
		close(fd);
	}
}

static void test_create_never_follows(void **state)
{
	struct fixture *f = *state;
	char err[256];
	int dfd = outdir_open(AT_FDCWD, f->dir, 0, NULL, err, sizeof(err));
	assert_true(dfd >= 0);
	assert_int_equal(symlinkat(f->victim, dfd, "stream_0"), 0);
	assert_int_equal(symlinkat("/nonexistent/target", dfd, "stream_1"), 0);
	assert_int_equal(outdir_create(dfd, "stream_0", 0644), -EEXIST);
	assert_int_equal(outdir_create(dfd, "stream_1", 0644), -EEXIST);
	struct stat st;
	assert_int_equal(stat("/nonexistent/target", &st), -1);
	int fd = outdir_create(dfd, "stream_2", 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_victim_intact(f);
	close(dfd);
}

static void test_tmp_replaces_link(void **state)
{
	struct fixture *f = *state;
	char err[256];
	int dfd = outdir_open(AT_FDCWD, f->dir, 0, NULL, err, sizeof(err));
	assert_true(dfd >= 0);
	assert_int_equal(symlinkat(f->victim, dfd, "metadata"), 0);
	assert_int_equal(symlinkat(f->victim, dfd, ".metadata.tmp"), 0);
	struct outdir_tmp t;
	assert_int_equal(outdir_tmp_open(&t, dfd, "metadata", 0644), 0);
	assert_string_not_equal(t.tmp, ".metadata.tmp");
	FILE *o = outdir_tmp_fdopen(&t, "w");
	assert_non_null(o);
	fputs("new\n", o);
	assert_int_equal(outdir_tmp_commit(&t, 1), 0);
	struct stat st;
	assert_int_equal(fstatat(dfd, "metadata", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 4);
	assert_victim_intact(f);

	/* The temporary's name swapped for a symlink: refused, the link
	 * removed (never followed), the old file kept. */
	assert_int_equal(outdir_tmp_open(&t, dfd, "metadata", 0644), 0);
	assert_int_equal(write(t.fd, "newer\n", 6), 6);
	assert_int_equal(unlinkat(dfd, t.tmp, 0), 0);
	assert_int_equal(symlinkat(f->victim, dfd, t.tmp), 0);
	char tmp[sizeof(t.tmp)];
	memcpy(tmp, t.tmp, sizeof(tmp));
	assert_int_equal(outdir_tmp_commit(&t, 0), -EXDEV);
	assert_int_equal(fstatat(dfd, tmp, &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(fstatat(dfd, "metadata", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_size, 4);
	assert_victim_intact(f);

	/* Aborted: nothing left. */
	assert_int_equal(outdir_tmp_open(&t, dfd, "x", 0644), 0);
	memcpy(tmp, t.tmp, sizeof(tmp));
	outdir_tmp_abort(&t);
	outdir_tmp_abort(&t);
	assert_int_equal(fstatat(dfd, tmp, &st, AT_SYMLINK_NOFOLLOW), -1);
	close(dfd);
}

static void test_outfile(void **state)
{
	struct fixture *f = *state;
	char p[128], err[256];
	path(p, sizeof(p), f, "out.db");
	char l[128];
	path(l, sizeof(l), f, "out.db.tmp");
	assert_int_equal(symlink(f->victim, l), 0);
	assert_int_equal(symlink(f->victim, p), 0);
	struct outfile o;
	assert_int_equal(outfile_open(&o, p, 0, 0644, err, sizeof(err)), 0);
	assert_int_equal(o.direct, 0);
	assert_int_equal(write(o.t.fd, "db\n", 3), 3);
	assert_int_equal(outfile_commit(&o, 0), 0);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 3);
	assert_victim_intact(f);

	/* Aborted: F as it was, no temporary. */
	assert_int_equal(outfile_open(&o, p, 0, 0644, err, sizeof(err)), 0);
	assert_int_equal(write(o.t.fd, "longer\n", 7), 7);
	outfile_abort(&o);
	outfile_abort(&o);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_size, 3);
	DIR *d = opendir(f->dir);
	struct dirent *e;
	int tmps = 0;
	while ((e = readdir(d)))
		tmps += strstr(e->d_name, ".out.db.") == e->d_name;
	closedir(d);
	assert_int_equal(tmps, 0);

	/* A device is written in place; a directory is refused. */
	assert_int_equal(outfile_open(&o, "/dev/null", 0, 0644, err, sizeof(err)), 0);
	assert_int_equal(o.direct, 1);
	assert_int_equal(write(o.t.fd, "x", 1), 1);
	assert_int_equal(outfile_commit(&o, 0), 0);
	assert_int_equal(outfile_open(&o, f->dir, 0, 0644, err, sizeof(err)), -EISDIR);
	assert_int_equal(outfile_open(&o, "", 0, 0644, err, sizeof(err)), -EISDIR);

	/* The parent must pass the directory checks. */
	path(p, sizeof(p), f, "ww");
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chmod(p, 0777), 0);
	char q[160];
	snprintf(q, sizeof(q), "%s/out", p);
	assert_int_equal(outfile_open(&o, q, 0, 0644, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "not sticky"));
	assert_int_equal(outfile_open(&o, q, OUTDIR_ALLOW_SHARED, 0644, err, sizeof(err)), 0);
	assert_int_equal(outfile_commit(&o, 0), 0);
	assert_int_equal(lstat(q, &st), 0);
	assert_true(S_ISREG(st.st_mode));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dir_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_never_follows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tmp_replaces_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outfile, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
