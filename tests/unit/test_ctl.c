/*
 * test_ctl.c - the controller's side of the control block against hostile
 * input: patterns, registry logs, damaged or foreign blocks, blocks and
 * descriptors whose owner or mode make them untrustworthy, and the
 * read-only opening of the commands that only look.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl/ctl_client.h"

static void test_patterns(void **state)
{
	(void)state;
	const char *good[] = { "app:*", "*:request_*", "*", "db:query", "a[bc]:x", "app:req?" };
	const char *bad[] = { "", "app", "app:x y", "a:b:c", "app:[x", "app:\x01", "app:x\\", "app:\xc3\xa9" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(ctl_pattern_valid(good[i]), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ctl_pattern_valid(bad[i]), -EINVAL);
	char longp[300];
	memset(longp, 'a', sizeof(longp));
	longp[0] = '*';
	longp[sizeof(longp) - 1] = 0;
	assert_int_equal(ctl_pattern_valid(longp), -EINVAL);
}

/* Append an entry the way the library does (docs/design.md section 4). */
static size_t put_entry(char *log, size_t pos, uint32_t kind, uint32_t id, const char *const *s, int n)
{
	size_t len = 16;
	for (int i = 0; i < n; i++)
		len += strlen(s[i]) + 1;
	len = (len + 7) & ~(size_t)7;
	uint32_t w[4] = { (uint32_t)len, kind, id, 0 };
	memset(log + pos, 0, len);
	memcpy(log + pos, w, 16);
	size_t off = 16;
	for (int i = 0; i < n; i++) {
		memcpy(log + pos + off, s[i], strlen(s[i]) + 1);
		off += strlen(s[i]) + 1;
	}
	return pos + len;
}

static void test_log(void **state)
{
	(void)state;
	char log[512];
	const char *ev[4] = { "app", "req", "u32 id", "x.c:1 in prog" };
	const char *msg[1] = { "hello" };
	size_t used = put_entry(log, 0, 1, 3, ev, 4);
	used = put_entry(log, used, 2, 0, msg, 1);
	uint64_t pos = 0;
	struct ctl_log_entry e;
	assert_int_equal(ctl_log_next(log, used, &pos, &e), 1);
	assert_int_equal(e.kind, 1);
	assert_int_equal(e.id, 3);
	assert_int_equal(e.n, 4);
	assert_string_equal(e.s[1], "req");
	assert_int_equal(ctl_log_next(log, used, &pos, &e), 1);
	assert_int_equal(e.kind, 2);
	assert_string_equal(e.s[0], "hello");
	assert_int_equal(ctl_log_next(log, used, &pos, &e), 0);

	/* A size that is not a multiple of 8, too small, or past the end. */
	uint32_t bad[] = { 13, 8, 4096 };
	for (size_t i = 0; i < 3; i++) {
		char l2[512];
		memcpy(l2, log, used);
		memcpy(l2, &bad[i], 4);
		pos = 0;
		assert_int_equal(ctl_log_next(l2, used, &pos, &e), -EBADMSG);
	}
	/* Strings without their NUL: never read past the entry. */
	char l3[32];
	uint32_t w[4] = { 32, 1, 5, 0 };
	memcpy(l3, w, 16);
	memset(l3 + 16, 'A', 16);
	pos = 0;
	assert_int_equal(ctl_log_next(l3, 32, &pos, &e), 1);
	assert_int_equal(e.n, 0);
}

static char path[64];

static void write_block(const void *data, size_t len)
{
	unlink(path);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	if (data)
		assert_int_equal(pwrite(fd, data, len < CTL_TOTAL ? len : CTL_TOTAL, 0), (ssize_t)(len < CTL_TOTAL ? len : CTL_TOTAL));
	close(fd);
}

/* The header of a well-formed block of this version for pid. */
static void valid_header(struct ctl_block *b, pid_t pid)
{
	b->magic = CTL_MAGIC;
	b->version = CTL_VERSION;
	b->header_size = sizeof(*b);
	b->total_size = CTL_TOTAL;
	b->reg_off = CTL_REG_OFF;
	b->reg_size = CTL_REG_SIZE;
	b->en_off = CTL_EN_OFF;
	b->en_count = CTL_MAX_IDS;
	b->pid = (uint32_t)pid;
}

static void test_damaged_blocks(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "%s/%s%d", CTL_DIR, CTL_PREFIX, (int)getpid());
	struct ctl_handle h;
	char err[512];

	/* Wrong size. */
	write_block(NULL, 100);
	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "damaged"));

	/* Right size, garbage. */
	char *junk = malloc(CTL_TOTAL);
	assert_non_null(junk);
	for (size_t i = 0; i < CTL_TOTAL; i++)
		junk[i] = (char)(i * 131 + 7);
	write_block(junk, CTL_TOTAL);
	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), -EBADMSG);

	/* A well-formed block of another version. */
	struct ctl_block *b = (struct ctl_block *)(void *)junk;
	memset(junk, 0, CTL_TOTAL);
	b->magic = CTL_MAGIC;
	b->version = CTL_VERSION + 1;
	b->header_size = sizeof(*b);
	write_block(junk, CTL_TOTAL);
	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), -EPROTO);

	/* Valid layout but offsets moved, or another pid inside. */
	valid_header(b, getpid());
	b->reg_off = CTL_REG_OFF + 8;
	write_block(junk, CTL_TOTAL);
	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), -EBADMSG);
	b->reg_off = CTL_REG_OFF;
	b->pid = (uint32_t)getpid() + 1;
	write_block(junk, CTL_TOTAL);
	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), -EBADMSG);

	/* Well formed, but not published by this process (it does not map
	 * it and its start time differs): stale. */
	b->pid = (uint32_t)getpid();
	b->start_time = 1;
	write_block(junk, CTL_TOTAL);
	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "stale"));
	unlink(path);
	free(junk);

	/* No block at all; a pid that does not exist. */
	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "does not use libringtrace"));
	pid_t none;
	assert_int_equal(ctl_resolve("0", &none, err, sizeof(err)), -EINVAL);
	assert_int_equal(ctl_resolve("12x", &none, err, sizeof(err)), -EINVAL);
	assert_int_equal(ctl_resolve("no-such-program-name", &none, err, sizeof(err)), -ESRCH);
}

/* A stale block with this pid, well formed (start time 1: not ours). */
static void write_stale_block(pid_t pid)
{
	char *m = calloc(1, CTL_TOTAL);
	assert_non_null(m);
	struct ctl_block *b = (struct ctl_block *)(void *)m;
	valid_header(b, pid);
	b->start_time = 1;
	snprintf(path, sizeof(path), "%s/%s%d", CTL_DIR, CTL_PREFIX, (int)pid);
	write_block(m, CTL_TOTAL);
	free(m);
}

/*
 * ctl_remove_if_stale() removes the block of a dead process (a zombie
 * included) and never that of a process that runs: one that exec'ed may
 * be putting its new block at the same path, and a check-then-unlink
 * would take it (a followed exec'ed program once lost its trace so).
 */
static void test_remove_if_stale(void **state)
{
	(void)state;
	struct stat st;
	/* This process runs: its stale block stays. */
	write_stale_block(getpid());
	assert_int_equal(ctl_remove_if_stale(getpid()), 0);
	assert_int_equal(lstat(path, &st), 0);
	unlink(path);

	/* A zombie: removed. */
	pid_t z = fork();
	assert_true(z >= 0);
	if (z == 0)
		_exit(0);
	for (int i = 0; i < 2000 && ctl_proc_state(z) != 'Z'; i++)
		usleep(1000);
	assert_int_equal(ctl_proc_state(z), 'Z');
	write_stale_block(z);
	assert_int_equal(ctl_remove_if_stale(z), 1);
	assert_int_equal(lstat(path, &st), -1);

	/* Reaped: removed. */
	assert_int_equal(waitpid(z, NULL, 0), z);
	write_stale_block(z);
	assert_int_equal(ctl_remove_if_stale(z), 1);
	assert_int_equal(lstat(path, &st), -1);

	/* Nothing there: nothing done. */
	assert_int_equal(ctl_remove_if_stale(z), 0);
}

/*
 * A live, well-formed block of this process (its start time, mapped by us
 * so that it is not stale), file mode `mode`; ring_fd = fdn (-1: none).
 * Returns our mapping, which the caller unmaps.
 */
static struct ctl_block *own_block(mode_t mode, int fdn)
{
	snprintf(path, sizeof(path), "%s/%s%d", CTL_DIR, CTL_PREFIX, (int)getpid());
	unlink(path);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, CTL_TOTAL), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	struct ctl_block *b = mmap(NULL, CTL_TOTAL, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(b != MAP_FAILED);
	valid_header(b, getpid());
	b->start_time = ctl_proc_start_time(getpid());
	b->uid = 0; /* the block's word: never shown as the owner */
	b->ring_fd = fdn;
	b->session = fdn >= 0 ? CTL_SESSION_OWN : CTL_SESSION_NONE;
	return b;
}

/* The permissions column of /proc/self/maps for the mapping at addr. */
static void map_perms(const void *addr, char ret[5])
{
	FILE *f = fopen("/proc/self/maps", "re");
	assert_non_null(f);
	char line[512];
	ret[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && (uintptr_t)addr >= lo && (uintptr_t)addr < hi)
			memcpy(ret, perms, 5);
	}
	fclose(f);
}

/*
 * CTL_OPEN_READ maps the block read-only and refuses requests; the owner
 * is the process's real uid, not the block's uid field; CTL_OPEN_WRITE
 * maps it writable.
 */
static void test_open_modes(void **state)
{
	(void)state;
	struct ctl_block *mine = own_block(0600, -1);
	struct ctl_handle h;
	char err[512], perms[5];
	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), 0);
	assert_int_equal(h.uid, getuid());
	assert_int_equal(h.writable, 0);
	map_perms(h.b, perms);
	assert_string_equal(perms, "r--s");
	char msg[256];
	assert_int_equal(ctl_request(&h, CTL_OP_ON, 0, 0, NULL, 0, 100, msg, sizeof(msg)), -EBADF);
	assert_non_null(strstr(msg, "read-only"));
	assert_int_equal(mine->cmd_lock, 0); /* the mailbox was not taken */
	ctl_close(&h);
	ctl_close(&h); /* twice: harmless */

	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_WRITE, err, sizeof(err)), 0);
	assert_int_equal(h.writable, 1);
	map_perms(h.b, perms);
	assert_string_equal(perms, "rw-s");
	ctl_close(&h);
	munmap(mine, CTL_TOTAL);
	unlink(path);
}

/* A block others may write, or with a second name, is refused (-EPERM),
 * in both modes; one owned by another user than the process's, too. */
static void test_untrusted_block(void **state)
{
	(void)state;
	struct ctl_handle h;
	char err[512];
	struct ctl_block *mine = own_block(0666, -1);
	for (int mode = CTL_OPEN_READ; mode <= CTL_OPEN_WRITE; mode++) {
		assert_int_equal(ctl_open(getpid(), &h, mode, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "writable by other users"));
	}
	munmap(mine, CTL_TOTAL);

	mine = own_block(0620, -1);
	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), -EPERM);
	munmap(mine, CTL_TOTAL);

	mine = own_block(0600, -1);
	char other[80];
	snprintf(other, sizeof(other), "%s.link", path);
	unlink(other);
	if (link(path, other) == 0) {
		assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "linked elsewhere"));
		unlink(other);
	}
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "runs as"));
	}
	munmap(mine, CTL_TOTAL);
	unlink(path);
}

/*
 * The descriptor a block names is refused unless it is ringtrace buffers
 * by its name and owned by the process's user; a memfd of the right name
 * and owner is opened (read-only here) and then found damaged.
 */
static void test_untrusted_ring_fd(void **state)
{
	(void)state;
	struct ctl_handle h;
	struct ctl_ring ring;
	char err[512];

	/* A file of ours with another name. */
	char tmp[] = "/tmp/ringtrace-test-ctl.XXXXXX";
	int tfd = mkstemp(tmp);
	assert_true(tfd >= 0);
	unlink(tmp);
	assert_int_equal(ftruncate(tfd, 1 << 20), 0);
	struct ctl_block *mine = own_block(0600, tfd);
	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), 0);
	assert_int_equal(ctl_ring_open(&h, &ring, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "not ringtrace buffers"));
	ctl_close(&h);
	munmap(mine, CTL_TOTAL);
	close(tfd);

	/* A memfd named like the program's buffers, holding garbage. */
	int mfd = (int)syscall(SYS_memfd_create, "ringtrace-ring", 0u);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, 1 << 20), 0);
	mine = own_block(0600, mfd);
	assert_int_equal(ctl_open(getpid(), &h, CTL_OPEN_READ, err, sizeof(err)), 0);
	assert_int_equal(ctl_ring_open(&h, &ring, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "damaged"));
	/* The same, owned by another user than the process's. */
	if (geteuid() == 0) {
		assert_int_equal(fchown(mfd, 65534, 65534), 0);
		assert_int_equal(ctl_ring_open(&h, &ring, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "belongs to"));
	}
	/* A descriptor the process does not have. */
	mine->ring_fd = 1 << 20;
	assert_int_equal(ctl_ring_open(&h, &ring, err, sizeof(err)), -ENOENT);
	ctl_close(&h);
	munmap(mine, CTL_TOTAL);
	close(mfd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_log),
		cmocka_unit_test(test_damaged_blocks),
		cmocka_unit_test(test_remove_if_stale),
		cmocka_unit_test(test_open_modes),
		cmocka_unit_test(test_untrusted_block),
		cmocka_unit_test(test_untrusted_ring_fd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
