/*
 * rcu.c - grace periods for regions the library unmaps (see rcu.h).
 *
 * Runs in the traced program. Registration is lock-free and uses no
 * allocator (mmap for more slots), so a thread's first event may happen in
 * a signal handler. Unregistration at thread exit takes `exit_lock`, which
 * the waiting side holds while it reads other threads' counters: a thread's
 * TLS block cannot be freed under the reader.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace-abi.h>

#include "lib/rcu.h"

#define CHUNK_SLOTS 254

struct rcu_chunk {
	struct rcu_chunk *next;      /* release-published, never removed */
	void *pad;
	struct ringtrace__tls *slot[CHUNK_SLOTS];  /* NULL = free */
};

static struct rcu_chunk first;
static pthread_key_t exit_key;
static int exit_key_ok;
static pthread_mutex_t exit_lock = PTHREAD_MUTEX_INITIALIZER;
static int mb_cmd = -1;              /* the membarrier command that works */

static long sys_membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

static void thread_exit(void *v)
{
	struct ringtrace__tls **slot = v;
	pthread_mutex_lock(&exit_lock);
	/* Pairs with the acquire load in rcu_synchronize(). */
	__atomic_store_n(slot, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&exit_lock);
}

void rcu_init(void)
{
	if (pthread_key_create(&exit_key, thread_exit) == 0)
		exit_key_ok = 1;
	long q = sys_membarrier(MEMBARRIER_CMD_QUERY);
	if (q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
		mb_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
	else if (q > 0 && (q & MEMBARRIER_CMD_GLOBAL))
		mb_cmd = MEMBARRIER_CMD_GLOBAL;
}

int rcu_register_thread(void)
{
	struct ringtrace__tls *me = &ringtrace__tls;
	for (struct rcu_chunk *c = &first;;) {
		for (unsigned i = 0; i < CHUNK_SLOTS; i++) {
			struct ringtrace__tls *none = NULL;
			if (__atomic_load_n(&c->slot[i], __ATOMIC_RELAXED) == NULL &&
			    __atomic_compare_exchange_n(&c->slot[i], &none, me, 0, __ATOMIC_SEQ_CST,
							__ATOMIC_RELAXED)) {
				/* Without the key a thread that exits keeps its
				 * slot: its counter reads 0 while the memory
				 * stays (static TLS is part of the thread's
				 * cached stack), and the slot is never reused. */
				if (exit_key_ok)
					pthread_setspecific(exit_key, &c->slot[i]);
				return 0;
			}
		}
		struct rcu_chunk *next = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);
		if (!next) {
			void *m = mmap(NULL, sizeof(struct rcu_chunk), PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED)
				return -ENOMEM;
			struct rcu_chunk *expect = NULL;
			if (__atomic_compare_exchange_n(&c->next, &expect, (struct rcu_chunk *)m, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				next = m;
			} else {
				munmap(m, sizeof(struct rcu_chunk));
				next = expect;
			}
		}
		c = next;
	}
}

struct pending {
	struct ringtrace__tls **slot;
	struct ringtrace__tls *t;
};

/* Threads inside a probe now (after the membarrier): each must be seen
 * out of it once. A thread that leaves and enters again loads the new
 * value of ringtrace__rb_current, so it need not be waited for again:
 * waiting for all counters to be zero at the same moment would starve
 * behind busy threads. */
static int collect(struct pending **ret, size_t *ret_n)
{
	const struct ringtrace__tls *me = &ringtrace__tls;
	struct pending *v = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	pthread_mutex_lock(&exit_lock);
	for (struct rcu_chunk *c = &first; c; c = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE))
		for (unsigned i = 0; i < CHUNK_SLOTS; i++) {
			struct ringtrace__tls *t = __atomic_load_n(&c->slot[i], __ATOMIC_ACQUIRE);
			if (!t || t == me || __atomic_load_n(&t->nest, __ATOMIC_ACQUIRE) == 0)
				continue;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 16;
				struct pending *nv = realloc(v, nc * sizeof(*nv));
				if (!nv) {
					r = -ENOMEM;
					goto out;
				}
				v = nv;
				cap = nc;
			}
			v[n].slot = &c->slot[i];
			v[n].t = t;
			n++;
		}
out:
	pthread_mutex_unlock(&exit_lock);
	*ret = v;
	*ret_n = n;
	return r;
}

/* Drop the threads seen out of their probe (or gone); how many remain. */
static size_t recheck(struct pending *v, size_t n)
{
	size_t k = 0;
	pthread_mutex_lock(&exit_lock);
	for (size_t i = 0; i < n; i++) {
		struct ringtrace__tls *t = __atomic_load_n(v[i].slot, __ATOMIC_ACQUIRE);
		if (t == v[i].t && __atomic_load_n(&t->nest, __ATOMIC_ACQUIRE) != 0)
			v[k++] = v[i];
	}
	pthread_mutex_unlock(&exit_lock);
	return k;
}

int rcu_synchronize(int timeout_ms)
{
	if (mb_cmd < 0)
		return -ENOSYS;
	/* Every thread passes a full barrier: its `nest` store is visible, or
	 * its next load of ringtrace__rb_current sees what we stored before. */
	if (sys_membarrier(mb_cmd) != 0)
		return -ENOSYS;
	struct pending *v;
	size_t n;
	if (collect(&v, &n) < 0) {
		free(v);
		return -ENOMEM;
	}
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int ret = 0;
	for (unsigned round = 0; n > 0; round++) {
		n = recheck(v, n);
		if (n == 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms >= timeout_ms) {
			ret = -ETIMEDOUT;
			break;
		}
		/* A probe lasts nanoseconds unless its thread was preempted:
		 * look again at once a few times, then let it run. */
		if (round < 64) {
			sched_yield();
		} else {
			struct timespec d = { 0, 100000 };
			nanosleep(&d, NULL);
		}
	}
	free(v);
	return ret;
}

void rcu_after_fork_child(void)
{
	pthread_mutex_init(&exit_lock, NULL);
	for (struct rcu_chunk *c = &first; c; c = c->next)
		for (unsigned i = 0; i < CHUNK_SLOTS; i++)
			c->slot[i] = NULL;
	/* Registration of a private-expedited membarrier is per process. */
	if (mb_cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED &&
	    sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
		mb_cmd = -1;
}
