/*
 * test_session.c - the tool-side session library (src/session/) and the
 * snapshot watcher's side of the control block (src/ctl/ctl_watch.c),
 * without a traced child: control blocks made in memory, the watcher
 * field, the request counters and their futex.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl/ctl_watch.h"

/* A handle on a block in our own memory: nothing maps a file. */
static void mem_handle(struct ctl_handle *h)
{
	memset(h, 0, sizeof(*h));
	h->b = calloc(1, sizeof(*h->b));
	assert_non_null(h->b);
	h->pid = getpid();
	h->procfd = -1;
}

/* A pid that no process has: a child of ours, reaped. */
static pid_t dead_pid(void)
{
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0)
		_exit(0);
	assert_int_equal(waitpid(p, NULL, 0), p);
	return p;
}

static void test_watch_claim(void **state)
{
	(void)state;
	struct ctl_handle h;
	mem_handle(&h);
	pid_t holder = 0;
	/* Free: ours, and ours again. */
	assert_int_equal(ctl_watch_claim(&h, &holder), 0);
	assert_int_equal(h.b->watcher, (uint32_t)getpid());
	assert_int_equal(ctl_watch_claim(&h, &holder), 0);
	/* A live watcher keeps it (init is always alive). */
	h.b->watcher = 1;
	assert_int_equal(ctl_watch_claim(&h, &holder), -EBUSY);
	assert_int_equal(holder, 1);
	assert_int_equal(h.b->watcher, 1);
	/* Not ours to release. */
	ctl_watch_release(&h);
	assert_int_equal(h.b->watcher, 1);
	/* A dead watcher's field is taken over. */
	h.b->watcher = (uint32_t)dead_pid();
	assert_int_equal(ctl_watch_claim(&h, NULL), 0);
	assert_int_equal(h.b->watcher, (uint32_t)getpid());
	ctl_watch_release(&h);
	assert_int_equal(h.b->watcher, 0);
	/* A handle without a block: nothing to release. */
	struct ctl_handle none = { 0 };
	ctl_watch_release(&none);
	free(h.b);
}

struct waiter {
	uint32_t *word;
	uint32_t val;
	long ret;
	int err;
};

static void *wait_word(void *arg)
{
	struct waiter *w = arg;
	struct timespec d = { 30, 0 };
	w->ret = ctl_futex(w->word, FUTEX_WAIT, w->val, &d);
	w->err = w->ret < 0 ? errno : 0;
	return NULL;
}

/* A program starting under the flight recorder sleeps on the watcher
 * word until it is claimed: the claim wakes it. */
static void test_watch_claim_wakes(void **state)
{
	(void)state;
	struct ctl_handle h;
	mem_handle(&h);
	struct waiter w = { &h.b->watcher, 0, 0, 0 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, wait_word, &w), 0);
	assert_int_equal(ctl_watch_claim(&h, NULL), 0);
	pthread_join(th, NULL);
	/* Woken (0), or the word had changed before it slept (EAGAIN):
	 * never the 30 s timeout. */
	assert_true(w.ret == 0 || w.err == EAGAIN);
	free(h.b);
}

static void test_snap_counts_and_trigger(void **state)
{
	(void)state;
	struct ctl_handle h;
	mem_handle(&h);
	h.b->snap_req = 5;
	h.b->snap_trig = 2;
	h.b->snap_served = 4;
	h.b->snap_count = 9;
	snprintf(h.b->trigger, sizeof(h.b->trigger), "app:request if ms > 100");
	struct ctl_snap_counts c;
	ctl_snap_counts(&h, &c);
	assert_int_equal(c.req, 5);
	assert_int_equal(c.trig, 2);
	assert_int_equal(ctl_snap_served(&h), 4);
	assert_int_equal(ctl_snap_count(&h), 9);
	char buf[300];
	ctl_snap_trigger(&h, buf, sizeof(buf));
	assert_string_equal(buf, "app:request if ms > 100");
	ctl_snap_trigger(&h, buf, 4);
	assert_string_equal(buf, "app");
	/* A text without its NUL (the block is the program's to write):
	 * copied within the field, terminated. */
	memset(h.b->trigger, 'x', sizeof(h.b->trigger));
	memset(buf, 'y', sizeof(buf));
	ctl_snap_trigger(&h, buf, sizeof(buf));
	assert_int_equal(strlen(buf), sizeof(h.b->trigger));
	free(h.b);
}

static void *post_request(void *arg)
{
	struct ctl_handle *h = arg;
	/* As ringtrace_snapshot() does: count, then wake. */
	__atomic_fetch_add(&h->b->snap_req, 1, __ATOMIC_RELEASE);
	ctl_futex(&h->b->snap_req, FUTEX_WAKE, INT_MAX, NULL);
	return NULL;
}

static void test_snap_wait(void **state)
{
	(void)state;
	struct ctl_handle h;
	mem_handle(&h);
	h.b->snap_req = 3;
	/* Moved already: no sleep. */
	assert_int_equal(ctl_snap_wait(&h, 2, 30000), 0);
	/* Nothing comes: the timeout. */
	assert_int_equal(ctl_snap_wait(&h, 3, 1), -ETIMEDOUT);
	/* A request comes: woken, and the counter says so. */
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, post_request, &h), 0);
	while (__atomic_load_n(&h.b->snap_req, __ATOMIC_ACQUIRE) == 3)
		assert_int_equal(ctl_snap_wait(&h, 3, 30000), 0);
	pthread_join(th, NULL);
	struct ctl_snap_counts c;
	ctl_snap_counts(&h, &c);
	assert_int_equal(c.req, 4);
	free(h.b);
}

static void test_swapped_since(void **state)
{
	(void)state;
	struct ctl_handle h;
	mem_handle(&h);
	struct ctl_ring old = { 0 };
	old.gen = 7;
	h.b->ring_gen = 8;
	h.b->snap_state = CTL_SNAP_READY;
	/* Nothing mapped: nothing to write. */
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 0);
	old.rb = (struct ringtrace__rb *)&old; /* only compared with NULL */
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 1);
	/* Held by us: still ours to write. */
	h.b->snap_state = CTL_SNAP_HELD;
	h.b->snap_holder = (uint32_t)getpid();
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 1);
	/* Held by another controller: its snapshot, not ours. */
	h.b->snap_holder = (uint32_t)getpid() + 1;
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 0);
	/* Two swaps since: `old` went live again and holds newer events. */
	h.b->snap_state = CTL_SNAP_READY;
	h.b->ring_gen = 9;
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 0);
	/* No swap. */
	h.b->ring_gen = 7;
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 0);
	free(h.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watch_claim),
		cmocka_unit_test(test_watch_claim_wakes),
		cmocka_unit_test(test_snap_counts_and_trigger),
		cmocka_unit_test(test_snap_wait),
		cmocka_unit_test(test_swapped_since),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
