/*
 * ctlforge - publish a forged control block, as a hostile user's program
 * could, so that a test can check what root's ringtrace does with it
 * (tests/e2e/sec_ctl.sh).
 *
 *   ctlforge [--fd N] [--uid-field U] [--mode OCTAL]
 *
 * Writes /dev/shm/ringtrace.ctl.PID for its own pid: a header that passes
 * every layout check, this process's start time, and maps it, so that it
 * is not stale. What is forged: the block's uid field (--uid-field,
 * default 0: "root"), its buffers (tracing on, ring_fd = --fd N, a
 * descriptor the caller passed in, such as a root-only file opened before
 * the user was switched; default none), and the file's mode (--mode, e.g.
 * 0666: writable by everyone). Nobody answers its mailbox.
 *
 * Prints "ready PID" and waits for SIGTERM or SIGINT, then removes the
 * block and exits 0. Exit 1 with a message if the block cannot be made.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/ctl.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	long fdn = -1, uid_field = 0, mode = 0600;
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc) {
			fprintf(stderr, "usage: ctlforge [--fd N] [--uid-field U] [--mode OCTAL]\n");
			return 2;
		}
		if (!strcmp(argv[i], "--fd"))
			fdn = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--uid-field"))
			uid_field = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--mode"))
			mode = strtol(argv[++i], NULL, 8);
		else {
			fprintf(stderr, "ctlforge: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	/* Blocked until sigsuspend(): a signal between the check of `stop`
	 * and the wait is not missed. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	struct sigaction sa = { 0 };
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	char path[64];
	snprintf(path, sizeof(path), "%s/%s%d", CTL_DIR, CTL_PREFIX, (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, CTL_TOTAL) < 0 || fchmod(fd, (mode_t)mode) < 0) {
		fprintf(stderr, "ctlforge: cannot create %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			unlink(path);
		return 1;
	}
	struct ctl_block *b = mmap(NULL, CTL_TOTAL, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (b == MAP_FAILED) {
		fprintf(stderr, "ctlforge: cannot map %s: %s\n", path, strerror(errno));
		unlink(path);
		return 1;
	}
	b->version = CTL_VERSION;
	b->header_size = sizeof(*b);
	b->total_size = CTL_TOTAL;
	b->pid = (uint32_t)getpid();
	b->uid = (uint32_t)uid_field;
	b->start_time = ctl_proc_start_time(getpid());
	snprintf(b->comm, sizeof(b->comm), "forged");
	snprintf(b->exe, sizeof(b->exe), "/forged");
	snprintf(b->version_str, sizeof(b->version_str), "forged");
	b->reg_off = CTL_REG_OFF;
	b->reg_size = CTL_REG_SIZE;
	b->en_off = CTL_EN_OFF;
	b->en_count = CTL_MAX_IDS;
	b->ring_fd = -1;
	b->snap_fd = -1;
	b->spare_fd = -1;
	if (fdn >= 0) {
		struct stat st;
		if (fstat((int)fdn, &st) < 0) {
			fprintf(stderr, "ctlforge: descriptor %ld: %s\n", fdn, strerror(errno));
			munmap(b, CTL_TOTAL);
			unlink(path);
			return 1;
		}
		b->tracing = 1;
		b->session = CTL_SESSION_OWN;
		b->ring_fd = (int32_t)fdn;
		b->ring_gen = 1;
		b->ring_size = (uint64_t)st.st_size;
	}
	/* Release: pairs with the controller's acquire load of the magic in
	 * ctl_client.c validate(); the rest of the header is written. */
	__atomic_store_n(&b->magic, CTL_MAGIC, __ATOMIC_RELEASE);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (!stop)
		sigsuspend(&old);
	unlink(path);
	munmap(b, CTL_TOTAL);
	return 0;
}
