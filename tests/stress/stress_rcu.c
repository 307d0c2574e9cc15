/*
 * stress_rcu.c - regions are swapped and unmapped while writers fire
 * events, as `ringtrace reset`, `buffer-size` and `off` do in a live
 * program: every unmap waits for a grace period (src/lib/rcu.c).
 *
 * Writer threads (some yielding between reserve and commit, some created
 * and exiting during the run) write through the real inline fast path.
 * The swapper publishes a fresh region, unpublishes the old one, waits for
 * rcu_synchronize() and then unmaps it and frees its view; or turns
 * tracing off and on (NULL in between). If a probe could still hold an
 * unmapped region, a writer faults (SIGSEGV, or an ASan report on the
 * freed view): the test fails by crashing. It also checks that every
 * writer's nest counter is back to 0 at the end, that every grace period
 * ends (a wait that times out is retried: a loaded machine may deschedule
 * the waiter for seconds), and that a grace period
 * waits for a thread parked inside a probe (rcu_synchronize times out
 * while it is there, succeeds once it leaves).
 *
 * Usage: stress_rcu [--swaps N] [--no-rseq]
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/rcu.h"
#include "ringbuf/rb.h"

static struct ringtrace_event_desc ev = { 1, 3, RINGTRACE_ABI_VERSION, 0, "stress", "rcu", "u64 v",
					  __FILE__, 0, 0, 0 };

static atomic_int stop;
static atomic_ullong written, dropped;
static atomic_int bad_nest;
static int no_rseq;

struct region {
	void *mem;
	uint64_t size;
	struct ringtrace__rb *rb;
};

static int region_new(struct region *r)
{
	struct rb_params p = { 0 };
	p.ncpus = rb_possible_cpus();
	p.sb_size = 4096;
	p.nsb = 2;
	p.mode = RINGTRACE__MODE_OVERWRITE;
	p.clock = RINGTRACE__CLOCK_TSC;
	p.reg_size = 4096;
	memset(p.uuid, 0x3c, sizeof(p.uuid));
	if (rb_region_size(&p, &r->size) < 0)
		return -1;
	r->mem = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->mem == MAP_FAILED || rb_region_init(r->mem, r->size, &p) < 0 || rb_view_open(r->mem, r->size, &r->rb) < 0)
		return -1;
#if RINGTRACE__RSEQ
	rb_set_rseq(r->rb, !no_rseq && ringtrace__rseq_cpu() >= 0);
#else
	rb_set_rseq(r->rb, 0);
#endif
	return 0;
}

static void region_free(struct region *r)
{
	rb_view_free(r->rb);
	munmap(r->mem, r->size);
}

/*
 * One grace period. The library gives up after its timeout and keeps the
 * old region mapped; that is safe, and a waiter descheduled for seconds on
 * a loaded machine can see it happen. Here a timed-out wait is retried
 * (counted, not a failure) for up to a minute: only a counter that never
 * drops back to 0 makes the test fail.
 */
static int grace(int *timeouts)
{
	for (int attempt = 0; attempt < 12; attempt++) {
		int r = rcu_synchronize(5000);
		if (r != -ETIMEDOUT)
			return r;
		(*timeouts)++;
	}
	return -ETIMEDOUT;
}

static struct region stuck;

static void fire(uint64_t i, int yield)
{
	struct ringtrace__wctx c;
	if (!ringtrace__reserve(&c, &ev, 8)) {
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		return;
	}
	if (yield)
		sched_yield();
	memcpy(c.payload, &i, 8);
	/* Counted inside the probe: once a grace period has passed, the
	 * count cannot move. */
	atomic_fetch_add_explicit(&written, 1, memory_order_relaxed);
	ringtrace__commit(&c);
}

static void *writer(void *arg)
{
	int idx = (int)(intptr_t)arg;
	for (uint64_t i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++)
		fire(i, idx % 2 == 1 && i % 64 == 0);
	if (__atomic_load_n(&ringtrace__tls.nest, __ATOMIC_RELAXED) != 0)
		atomic_fetch_add(&bad_nest, 1);
	return NULL;
}

static void *short_writer(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < 2000; i++)
		fire(i, 0);
	if (__atomic_load_n(&ringtrace__tls.nest, __ATOMIC_RELAXED) != 0)
		atomic_fetch_add(&bad_nest, 1);
	return NULL;
}

/* Short-lived threads: registration and exit while grace periods run. */
static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_t t;
		if (pthread_create(&t, NULL, short_writer, NULL) == 0)
			pthread_join(t, NULL);
	}
	return NULL;
}

static atomic_int parked, release_park;

static void *parker(void *arg)
{
	(void)arg;
	struct ringtrace__wctx c;
	if (!ringtrace__reserve(&c, &ev, 8)) {
		atomic_store(&parked, -1);
		return NULL;
	}
	atomic_store(&parked, 1);
	while (!atomic_load(&release_park))
		sched_yield();
	uint64_t v = 42;
	memcpy(c.payload, &v, 8);
	ringtrace__commit(&c);
	return NULL;
}

int main(int argc, char **argv)
{
	int swaps = 500;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--swaps") && i + 1 < argc)
			swaps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-rseq"))
			no_rseq = 1;
		else {
			fprintf(stderr, "usage: stress_rcu [--swaps N] [--no-rseq]\n");
			return 2;
		}
	}
	rcu_init();
	struct region cur;
	if (region_new(&cur) < 0) {
		fprintf(stderr, "stress_rcu: cannot set up a region\n");
		return 2;
	}
	__atomic_store_n(&ringtrace__rb_current, cur.rb, __ATOMIC_RELEASE);

	/* A grace period waits for a thread inside a probe. */
	pthread_t pk;
	pthread_create(&pk, NULL, parker, NULL);
	while (atomic_load(&parked) == 0)
		sched_yield();
	int failures = 0;
	if (atomic_load(&parked) == 1) {
		int r1 = rcu_synchronize(100);
		atomic_store(&release_park, 1);
		pthread_join(pk, NULL);
		int r2 = rcu_synchronize(2000);
		printf("grace period with a thread inside a probe: %d (want %d), after it left: %d (want 0)\n", r1,
		       -ETIMEDOUT, r2);
		if (r1 != -ETIMEDOUT || r2 != 0)
			failures++;
	} else {
		atomic_store(&release_park, 1);
		pthread_join(pk, NULL);
	}

	enum { NW = 4 };
	pthread_t w[NW], ch;
	for (int i = 0; i < NW; i++)
		pthread_create(&w[i], NULL, writer, (void *)(intptr_t)i);
	pthread_create(&ch, NULL, churn, NULL);

	int timeouts = 0, nosys = 0;
	for (int s = 0; s < swaps; s++) {
		struct region next;
		int off = s % 3 == 2;
		if (!off && region_new(&next) < 0) {
			fprintf(stderr, "stress_rcu: cannot set up a region\n");
			return 2;
		}
		__atomic_store_n(&ringtrace__rb_current, off ? NULL : next.rb, __ATOMIC_RELEASE);
		int r = grace(&timeouts);
		if (r == -ENOSYS) {
			nosys = 1;
			if (!off)
				region_free(&next);
			break;
		}
		if (r < 0) {
			/* No progress for a minute: a thread's counter is stuck.
			 * Both regions stay mapped, as the library would leave
			 * them; they are reachable for the leak check. */
			printf("a grace period never ended (swap %d)\n", s);
			if (!off)
				stuck = next;
			failures++;
			break;
		}
		if (off) {
			/* Tracing off: nothing may be written any more. */
			unsigned long long before = atomic_load(&written);
			struct timespec d = { 0, 100000 };
			nanosleep(&d, NULL);
			if (atomic_load(&written) != before) {
				printf("events were written while tracing was off\n");
				failures++;
			}
			__atomic_store_n(&ringtrace__rb_current, cur.rb, __ATOMIC_RELEASE);
			continue;
		}
		region_free(&cur);
		cur = next;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < NW; i++)
		pthread_join(w[i], NULL);
	pthread_join(ch, NULL);
	/* Every writer is gone: nothing can hold a grace period now. */
	if (!nosys && !failures && rcu_synchronize(5000) != 0) {
		printf("a grace period with no thread inside a probe did not end\n");
		failures++;
	}
	printf("%d swaps, %llu events written, %llu dropped, %d waits timed out and were retried%s\n", swaps,
	       (unsigned long long)atomic_load(&written), (unsigned long long)atomic_load(&dropped), timeouts,
	       nosys ? " (no membarrier: nothing tested)" : "");
	if (atomic_load(&bad_nest)) {
		printf("%d writers ended with nest != 0\n", atomic_load(&bad_nest));
		failures++;
	}
	if (atomic_load(&written) == 0)
		failures++;
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
