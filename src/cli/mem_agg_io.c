/*
 * mem_agg_io.c - the aggregate mode's block of counters (src/mem/mem_agg.h)
 * seen from the ringtrace command: created by `record --mem --aggregate`,
 * saved into the trace directory when the program ends, loaded by
 * `report`, found in a running program by `top`.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/mem_agg_io.h"
#include "util/outdir.h"
#include "mem/mem_agg.h"

#define MEMFD_NAME "ringtrace-memagg"

int agg_create(int by_stack)
{
	size_t size = memagg_size(AGG_BITS);
	int fd = memfd_create(MEMFD_NAME, MFD_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "ringtrace record: --aggregate: cannot create the counters' memory: %s\n",
			strerror(errno));
		return -1;
	}
	void *m = MAP_FAILED;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    (m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		fprintf(stderr, "ringtrace record: --aggregate: cannot size the counters' memory: %s\n",
			strerror(errno));
		close(fd);
		return -1;
	}
	memagg_init(m, size, AGG_BITS, (uint32_t)!!by_stack);
	munmap(m, size);
	return fd;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int agg_save(int fd, int dfd, const char *dir)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size <= 0) {
		close(fd);
		return -1;
	}
	size_t size = (size_t)st.st_size;
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	uint32_t n;
	int ret = -1;
	struct memagg_header *h = m;
	if (!memagg_check(m, size, &n)) {
		fprintf(stderr, "ringtrace record: the allocation counters are damaged: %s/" AGG_FILE " not saved\n", dir);
		goto out;
	}
	if (!h->pid) {
		fprintf(stderr, "ringtrace record: --aggregate: the program never counted (not dynamically linked, "
				"or libringtrace-malloc.so could not load): no %s/" AGG_FILE "\n", dir);
		ret = 0;
		goto out;
	}
	h->end_ns = mono_ns();
	char why[256];
	int mfd = outdir_open(dfd, AGG_DIR, OUTDIR_CREATE, NULL, why, sizeof(why));
	if (mfd < 0) {
		fprintf(stderr, "ringtrace record: '%s/" AGG_DIR "' %s\n", dir, why);
		goto out;
	}
	struct outdir_tmp t;
	int k = outdir_tmp_open(&t, mfd, strrchr(AGG_FILE, '/') + 1, 0644);
	if (k < 0) {
		fprintf(stderr, "ringtrace record: cannot write '%s/" AGG_FILE "': %s\n", dir, strerror(-k));
		close(mfd);
		goto out;
	}
	int out = t.fd;
	/* The header, the slots in use and the caches, at their places: the
	 * file is the block, sparse where no key was ever claimed. */
	struct memagg_slot *s = (struct memagg_slot *)(h + 1);
	int ok = pwrite(out, h, sizeof(*h), 0) == (ssize_t)sizeof(*h);
	for (uint32_t i = 0; ok && i < n; i++)
		if (s[i].key)
			ok = pwrite(out, &s[i], sizeof(s[i]), (off_t)(sizeof(*h) + (size_t)i * sizeof(s[i]))) ==
			     (ssize_t)sizeof(s[i]);
	/* The threads' caches: sums not yet moved into the slots. */
	size_t coff = (size_t)((char *)memagg_caches(m, h->key_bits) - (char *)m);
	if (ok)
		ok = pwrite(out, (char *)m + coff, h->total_size - coff, (off_t)coff) == (ssize_t)(h->total_size - coff);
	if (ok)
		ok = ftruncate(out, (off_t)h->total_size) == 0;
	k = ok ? outdir_tmp_commit(&t, 1) : (errno ? -errno : -EIO);
	if (!ok)
		outdir_tmp_abort(&t);
	close(mfd);
	if (k < 0) {
		fprintf(stderr, "ringtrace record: cannot write '%s/" AGG_FILE "': %s\n", dir, strerror(-k));
		goto out;
	}
	ret = 0;
out:
	munmap(m, size);
	return ret;
}

void *agg_load(const char *dir, size_t *ret_size, char *err, size_t errlen)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/" AGG_FILE, dir);
	err[0] = 0;
	/* O_NONBLOCK: a FIFO planted in the trace must not hang the reader
	 * in open(); fstat then refuses anything but a regular file. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		if (e != ENOENT)
			snprintf(err, errlen, "cannot open '%s': %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	struct stat st;
	struct memagg_header h;
	void *m = NULL;
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "cannot read '%s': not a regular file", path);
		errno = EINVAL;
		goto out;
	}
	if (st.st_size < (off_t)sizeof(h) || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h.key_bits < MEMAGG_BITS_MIN || h.key_bits > MEMAGG_BITS_MAX || (uint64_t)st.st_size > memagg_size(h.key_bits)) {
		snprintf(err, errlen, "%s is damaged: no counters from it", path);
		errno = EINVAL;
		goto out;
	}
	size_t size = memagg_size(h.key_bits);
	m = calloc(1, size);
	if (!m) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	size_t off = 0;
	while (off < (size_t)st.st_size) {
		ssize_t k = pread(fd, (char *)m + off, (size_t)st.st_size - off, (off_t)off);
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	uint32_t n;
	if (off != (size_t)st.st_size || !memagg_check(m, size, &n)) {
		free(m);
		m = NULL;
		snprintf(err, errlen, "%s is damaged: no counters from it", path);
		errno = EINVAL;
		goto out;
	}
	*ret_size = size;
out:
	close(fd);
	return m;
}

void *agg_attach_pid(int pid, size_t *ret_size, char *err, size_t errlen)
{
	char dpath[64];
	snprintf(dpath, sizeof(dpath), "/proc/%d/fd", pid);
	DIR *d = opendir(dpath);
	if (!d) {
		snprintf(err, errlen, errno == ENOENT ? "no process %d" : "pid %d: cannot list its open files", pid);
		return NULL;
	}
	/* Root may look at anyone's counters, but only at a memfd of the
	 * process's own user: a file another user's program holds (handed
	 * in, say, by root) is not opened on the strength of its name. The
	 * owner of /proc/PID is the process's user (root for a set-user-ID
	 * or undumpable one, whose descriptors root owns anyway). */
	struct stat pst;
	if (stat(dpath, &pst) < 0) {
		snprintf(err, errlen, "pid %d: %s", pid, strerror(errno));
		closedir(d);
		return NULL;
	}
	void *m = NULL;
	struct dirent *e;
	while (!m && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char link[PATH_MAX], fpath[PATH_MAX];
		snprintf(fpath, sizeof(fpath), "%s/%s", dpath, e->d_name);
		ssize_t k = readlink(fpath, link, sizeof(link) - 1);
		if (k <= 0)
			continue;
		link[k] = 0;
		if (strncmp(link, "/memfd:" MEMFD_NAME, strlen("/memfd:" MEMFD_NAME)) != 0)
			continue;
		/* stat follows the magic link to the open file: checked before
		 * the open, and the open's fstat must find the same inode. */
		struct stat st0, st;
		if (stat(fpath, &st0) < 0 || !S_ISREG(st0.st_mode) || st0.st_uid != pst.st_uid)
			continue;
		int fd = open(fpath, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && st.st_dev == st0.st_dev && st.st_ino == st0.st_ino && st.st_size > 0) {
			void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
			uint32_t n;
			if (p != MAP_FAILED && memagg_check(p, (size_t)st.st_size, &n)) {
				m = p;
				*ret_size = (size_t)st.st_size;
			} else if (p != MAP_FAILED) {
				munmap(p, (size_t)st.st_size);
			}
		}
		close(fd);
	}
	closedir(d);
	if (!m)
		snprintf(err, errlen, "pid %d has no allocation counters (run it under 'ringtrace record --mem --aggregate')",
			 pid);
	return m;
}
