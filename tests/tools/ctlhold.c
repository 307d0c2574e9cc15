/*
 * ctlhold - keep a program's control mailbox busy, as a slow controller
 * would, so that a test can order what happens before a request is
 * answered.
 *
 *   ctlhold PID
 *
 * Takes the mailbox of PID's control block (the cmd_lock a controller
 * takes for each request), prints "held" and keeps it until SIGTERM or
 * SIGINT, then gives it back and exits 0. Requests of other controllers
 * wait meanwhile (up to their timeout). Exit 1 with a message if the
 * block cannot be opened or the mailbox is not free within 5 s.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl_client.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: ctlhold PID\n");
		return 2;
	}
	pid_t pid = (pid_t)strtol(argv[1], NULL, 10);
	char err[512];
	struct ctl_handle h;
	if (ctl_open(pid, &h, CTL_OPEN_WRITE, err, sizeof(err)) < 0) {
		fprintf(stderr, "ctlhold: %s\n", err);
		return 1;
	}
	/* Blocked until sigsuspend(): a signal that comes between the check
	 * of `stop` and the wait is not missed. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	struct sigaction sa = { 0 };
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	uint32_t me = (uint32_t)getpid();
	int got = 0;
	for (int i = 0; i < 500 && !got; i++) {
		uint32_t free_ = 0;
		/* Acquire, as ctl_request() takes it. */
		got = __atomic_compare_exchange_n(&h.b->cmd_lock, &free_, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
		if (!got) {
			struct timespec d = { 0, 10000000 };
			nanosleep(&d, NULL);
		}
	}
	if (!got) {
		fprintf(stderr, "ctlhold: the mailbox of process %d stayed busy\n", (int)pid);
		ctl_close(&h);
		return 1;
	}
	printf("held\n");
	fflush(stdout);
	while (!stop)
		sigsuspend(&old);
	/* Release, as ctl_request() gives it back. */
	__atomic_compare_exchange_n(&h.b->cmd_lock, &me, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	ctl_close(&h);
	return 0;
}
