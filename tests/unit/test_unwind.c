/*
 * test_unwind.c - stack capture (src/unwind): both methods against a
 * known chain of 22 frames whose return addresses the chain records
 * itself (__builtin_return_address at every level, so the expected stack
 * is exact, not a guess), depth limits and skip, argument checks, a
 * capture from a signal handler that interrupted a known function (the
 * walk must cross the signal frame back into the chain), a SIGPROF storm
 * at threads that malloc, dlopen/dlclose and dl_iterate_phdr in a loop
 * (under a watchdog: a deadlock fails the test instead of hanging it),
 * libunwind finishing while another thread holds the loader's lock (the
 * registered unwind tables at work), the per-thread rule for libunwind's
 * dynamic TLS, and forged frame-pointer chains that must stop cleanly.
 *
 * Built with -fno-omit-frame-pointer -fno-optimize-sibling-calls
 * (mk/stack.mk): the chain keeps its frames for the FP walk.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/unwind.h"
#include "unwind/unwind_int.h"

#define NCHAIN 20                    /* chain_0 .. chain_19, then the leaf */
#define STORM_SECS 3
#define WATCHDOG_SECS 90

/* ---- the chain ------------------------------------------------------------ */

struct chain;
typedef int (*chain_fn)(struct chain *);

struct chain {
	int method;
	/* ra[i]: return address into the caller of level i (level NCHAIN is
	 * the leaf); ra[0] points into the function that started the chain. */
	uintptr_t ra[NCHAIN + 1];
	chain_fn leaf;
	/* Filled by the capturing leaf. */
	uintptr_t full[RT_UNWIND_MAX_DEPTH];
	int nfull;
	uintptr_t part[RT_UNWIND_MAX_DEPTH];
	int npart;
	int max, skip;
	/* The spinning leaf, for the signal test. */
	volatile int spinning;
	volatile int done;
};

#define CHAIN_DECL(i) static int chain_##i(struct chain *c);
#define CHAIN_LIST(X)                                                                            \
	X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)     \
	X(16) X(17) X(18) X(19)
CHAIN_LIST(CHAIN_DECL)
static int chain_next(struct chain *c, int level);

/* Each level records where it returns to and calls the next one through
 * a table (no inlining), then does work after the call (no tail call). */
#define CHAIN_DEF(i)                                                                              \
	__attribute__((noinline)) static int chain_##i(struct chain *c)                          \
	{                                                                                         \
		c->ra[i] = (uintptr_t)__builtin_return_address(0);                               \
		int r = chain_next(c, i + 1);                                                     \
		__asm__ volatile("" ::: "memory");                                                \
		return r + 1;                                                                     \
	}
CHAIN_LIST(CHAIN_DEF)

#define CHAIN_PTR(i) chain_##i,
static chain_fn const chain_fns[NCHAIN] = { CHAIN_LIST(CHAIN_PTR) };

static int chain_next(struct chain *c, int level)
{
	return level < NCHAIN ? chain_fns[level](c) : c->leaf(c);
}

/* The leaf: a full capture and one with c->max / c->skip. */
__attribute__((noinline)) static int leaf_capture(struct chain *c)
{
	c->ra[NCHAIN] = (uintptr_t)__builtin_return_address(0);
	c->nfull = rt_unwind(c->full, RT_UNWIND_MAX_DEPTH, 0, c->method);
	c->npart = rt_unwind(c->part, c->max, c->skip, c->method);
	__asm__ volatile("" ::: "memory");
	return c->nfull;
}

/* Starts the chain; noinline so that ra[0] is in a function we know. */
__attribute__((noinline)) static int run_chain(struct chain *c)
{
	int r = chain_0(c);
	__asm__ volatile("" ::: "memory");
	return r;
}

/* BUF: the fixture NAME built beside this test (build/tests/sym/). */
static void fixture_path(char *buf, size_t size, const char *name)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(len > 0);
	self[len] = '\0';
	char *slash = strrchr(self, '/');
	assert_non_null(slash);
	*slash = '\0';
	if ((size_t)snprintf(buf, size, "%s/sym/%s", self, name) >= size)
		fail_msg("path too long");
}

static int setup(void **state)
{
	(void)state;
	/* Every capture the tables answer is checked against libunwind
	 * (counted in rt_unwind_get_stats(); the tests require 0 mismatches). */
	setenv("RINGTRACE_UNWIND_VERIFY", "1", 1);
	int r = rt_unwind_init();
	/* The library needs libunwind.so.8 (libunwind8, a dependency of
	 * libunwind-dev) for half of these tests. */
	if (r != 0)
		fprintf(stderr, "rt_unwind_init: %s\n", strerror(-r));
	return r == 0 ? 0 : -1;
}

/* ips[1..] must be the chain's return addresses, innermost first. */
static void check_chain_frames(const struct chain *c, const uintptr_t *ips, int n)
{
	/* ips[0]: inside leaf_capture, the return address of rt_unwind. */
	assert_true(n >= NCHAIN + 2);
	assert_true(ips[0] > (uintptr_t)leaf_capture);
	assert_true(ips[0] < (uintptr_t)leaf_capture + 4096);
	for (int k = 1; k <= NCHAIN + 1; k++) {
		if (ips[k] != c->ra[NCHAIN + 1 - k])
			fail_msg("frame %d: 0x%lx, expected 0x%lx (level %d)", k, (unsigned long)ips[k],
				 (unsigned long)c->ra[NCHAIN + 1 - k], NCHAIN + 1 - k);
	}
	/* The outermost recorded level returns into run_chain. */
	assert_true(c->ra[0] > (uintptr_t)run_chain && c->ra[0] < (uintptr_t)run_chain + 4096);
}

static void chain_method(int method)
{
	struct chain c = { .method = method, .leaf = leaf_capture, .max = 5, .skip = 0 };
	run_chain(&c);
	check_chain_frames(&c, c.full, c.nfull);
	/* Every level is distinct: 22 different return addresses. */
	for (int i = 0; i <= NCHAIN; i++)
		for (int j = i + 1; j <= NCHAIN; j++)
			assert_true(c.ra[i] != c.ra[j]);
	assert_int_equal(c.npart, 5);
}

static void test_chain_fp(void **state)
{
	(void)state;
	chain_method(RT_UNWIND_FP);
}

static void test_chain_libunwind(void **state)
{
	(void)state;
	chain_method(RT_UNWIND_LIBUNWIND);
}

static void test_chain_tables(void **state)
{
	(void)state;
	chain_method(RT_UNWIND_TABLES);
	struct rt_unwind_stats st;
	assert_int_equal(rt_unwind_get_stats(&st), 0);
	/* Answered by the tables, not by their libunwind fallback. */
	assert_true(st.fast >= 2);
	assert_true(st.objects > 0 && st.rows > 0);
}

static void depth_and_skip(int method)
{
	static const int maxes[] = { 1, 2, 5, 16, 22, 64 };
	static const int skips[] = { 1, 2, 3, 7, 21, 64 };
	for (size_t i = 0; i < sizeof(maxes) / sizeof(maxes[0]); i++) {
		struct chain c = { .method = method, .leaf = leaf_capture, .max = maxes[i] };
		run_chain(&c);
		int want = maxes[i] < c.nfull ? maxes[i] : c.nfull;
		assert_int_equal(c.npart, want);
		/* ips[0] differs (two call sites in the leaf), the rest not. */
		for (int k = 1; k < c.npart; k++)
			assert_true(c.part[k] == c.full[k]);
	}
	for (size_t i = 0; i < sizeof(skips) / sizeof(skips[0]); i++) {
		struct chain c = { .method = method, .leaf = leaf_capture, .max = 64, .skip = skips[i] };
		run_chain(&c);
		int want = c.nfull - skips[i];
		if (want < 0)
			want = 0;
		assert_int_equal(c.npart, want);
		for (int k = 0; k < c.npart; k++)
			assert_true(c.part[k] == c.full[k + skips[i]]);
	}
	/* skip + max beyond the stack: what is left. */
	struct chain c = { .method = method, .leaf = leaf_capture, .max = 4, .skip = NCHAIN };
	run_chain(&c);
	assert_int_equal(c.npart, 4);
	assert_true(c.part[1] == c.ra[0]);
}

static void test_depth_skip_fp(void **state)
{
	(void)state;
	depth_and_skip(RT_UNWIND_FP);
}

static void test_depth_skip_libunwind(void **state)
{
	(void)state;
	depth_and_skip(RT_UNWIND_LIBUNWIND);
}

static void test_depth_skip_tables(void **state)
{
	(void)state;
	depth_and_skip(RT_UNWIND_TABLES);
}

static void test_args(void **state)
{
	(void)state;
	uintptr_t ips[RT_UNWIND_MAX_DEPTH + 1];
	int methods[] = { RT_UNWIND_FP, RT_UNWIND_LIBUNWIND, RT_UNWIND_TABLES };
	for (size_t i = 0; i < 3; i++) {
		int m = methods[i];
		assert_int_equal(rt_unwind(ips, RT_UNWIND_MAX_DEPTH + 1, 0, m), -EINVAL);
		assert_int_equal(rt_unwind(ips, -1, 0, m), -EINVAL);
		assert_int_equal(rt_unwind(ips, 4, -1, m), -EINVAL);
		assert_int_equal(rt_unwind(ips, 4, RT_UNWIND_MAX_SKIP + 1, m), -EINVAL);
		assert_int_equal(rt_unwind(NULL, 1, 0, m), -EINVAL);
		assert_int_equal(rt_unwind(NULL, 0, 0, m), 0);
		assert_int_equal(rt_unwind(ips, 0, 0, m), 0);
	}
	assert_int_equal(rt_unwind(ips, 4, 0, 0), -EINVAL);
	assert_int_equal(rt_unwind(ips, 4, 0, 4), -EINVAL);
	assert_int_equal(RT_UNWIND_DEFAULT, RT_UNWIND_TABLES);
	/* errno is preserved. */
	errno = 1234;
	assert_true(rt_unwind(ips, 8, 0, RT_UNWIND_FP) > 0);
	assert_true(rt_unwind(ips, 8, 0, RT_UNWIND_LIBUNWIND) > 0);
	assert_int_equal(errno, 1234);
	struct rt_unwind_info info;
	assert_int_equal(rt_unwind_get_info(NULL), -EINVAL);
	assert_int_equal(rt_unwind_get_info(&info), 0);
	assert_int_equal(info.libunwind, 1);
	/* The program, libc and the rest were registered (see unwind.c). */
	assert_true(info.tables >= 3);
	assert_int_equal(rt_unwind_init(), 0);      /* idempotent */
}

/* ---- a capture from a signal handler --------------------------------------- */

static struct chain *sig_chain;
static uintptr_t sig_ips[RT_UNWIND_MAX_DEPTH];
static volatile int sig_n;

static void sig_capture(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	struct chain *c = sig_chain;
	if (!c || c->done)
		return;
	sig_n = rt_unwind(sig_ips, RT_UNWIND_MAX_DEPTH, 0, c->method);
	c->done = 1;
}

/* The leaf for the signal test: spins until the handler has run. */
__attribute__((noinline)) static int leaf_spin(struct chain *c)
{
	c->ra[NCHAIN] = (uintptr_t)__builtin_return_address(0);
	c->spinning = 1;
	while (!c->done)
		__asm__ volatile("pause" ::: "memory");
	return 1;
}

struct kicker {
	pid_t tid;
	struct chain *c;
};

static void *kick(void *arg)
{
	struct kicker *k = arg;
	while (!k->c->spinning)
		sched_yield();
	/* Keep kicking: a signal that lands before the loop proper (or in a
	 * page fault's return path) just finds done == 0 again. */
	for (int i = 0; i < 20000 && !k->c->done; i++) {
		syscall(SYS_tgkill, getpid(), k->tid, SIGPROF);
		usleep(100);
	}
	return NULL;
}

static void signal_method(int method)
{
	struct sigaction sa = { .sa_sigaction = sig_capture, .sa_flags = SA_SIGINFO | SA_RESTART }, old;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGPROF, &sa, &old), 0);
	struct chain c = { .method = method, .leaf = leaf_spin };
	struct kicker k = { .tid = (pid_t)syscall(SYS_gettid), .c = &c };
	sig_n = 0;
	sig_chain = &c;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, kick, &k), 0);
	run_chain(&c);
	pthread_join(t, NULL);
	sig_chain = NULL;
	sigaction(SIGPROF, &old, NULL);
	assert_true(c.done);
	int n = sig_n;
	assert_true(n > NCHAIN);
	/* Somewhere past the handler's frames: the interrupted instruction in
	 * leaf_spin, then leaf_spin's return address and the whole chain. */
	int j = -1;
	for (int i = 0; i < n; i++)
		if (sig_ips[i] == c.ra[NCHAIN]) {
			j = i;
			break;
		}
	if (j < 1)
		fail_msg("leaf_spin's return address not in the %d frames captured in the handler", n);
	assert_true(sig_ips[j - 1] >= (uintptr_t)leaf_spin && sig_ips[j - 1] < (uintptr_t)leaf_spin + 4096);
	assert_true(n - j >= NCHAIN + 1);
	for (int k2 = 0; k2 <= NCHAIN; k2++)
		assert_true(sig_ips[j + k2] == c.ra[NCHAIN - k2]);
	/* The frame before the interrupted one is the sigreturn trampoline. */
	if (method != RT_UNWIND_LIBUNWIND) {
		struct rt_unwind_info info;
		rt_unwind_get_info(&info);
		assert_true(info.sigreturn != 0);
		assert_true(j >= 2 && sig_ips[j - 2] == info.sigreturn);
	}
}

static void test_signal_fp(void **state)
{
	(void)state;
	signal_method(RT_UNWIND_FP);
}

static void test_signal_libunwind(void **state)
{
	(void)state;
	signal_method(RT_UNWIND_LIBUNWIND);
}

static void test_signal_tables(void **state)
{
	(void)state;
	struct rt_unwind_stats a, b;
	rt_unwind_get_stats(&a);
	signal_method(RT_UNWIND_TABLES);
	rt_unwind_get_stats(&b);
	/* The tables crossed the signal frame themselves. */
	assert_true(b.fast > a.fast);
	assert_int_equal(b.mismatches, 0);
}

/*
 * The range of a stack that is not the thread's (a coroutine's, on a
 * mapping of its own): asked of the kernel (PROCMAP_QUERY) where it
 * answers, read from /proc/self/maps' text otherwise, the same either
 * way: the readable mapping only, none for a page without read
 * permission or once unmapped.
 */
static void test_stack_region_ways(void **state)
{
	(void)state;
	for (int text = 0; text < 2; text++) {
		rt_maps_text_only(text);
		/* A page without access at each end: the kernel cannot merge
		 * the readable middle with a neighbouring mapping. */
		char *m = mmap(NULL, 18 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(m != MAP_FAILED);
		assert_int_equal(mprotect(m, 4096, PROT_NONE), 0);
		assert_int_equal(mprotect(m + 17 * 4096, 4096, PROT_NONE), 0);
		struct rt_region r = { 0, 0 };
		assert_int_equal(rt_stack_region((uintptr_t)m + 5000, 0, &r), 0);
		assert_int_equal(r.lo, (uintptr_t)m + 4096);
		assert_int_equal(r.hi, (uintptr_t)m + 17 * 4096);
		assert_int_equal(rt_stack_region((uintptr_t)m + 17 * 4096 + 8, 0, &r), -1);
		assert_int_equal(munmap(m, 18 * 4096), 0);
		assert_int_equal(rt_stack_region((uintptr_t)m + 5000, 0, &r), -1);
	}
	rt_maps_text_only(0);
}

/* The table of an object dlopen'ed after init is built by a refresh and
 * unmapped by the refresh after its dlclose. */
static void test_refresh(void **state)
{
	(void)state;
	char plugin[PATH_MAX + 32];
	fixture_path(plugin, sizeof(plugin), "libfx_plugin.so");
	struct rt_unwind_stats a, b, c;
	assert_int_equal(rt_unwind_refresh(), 0);
	rt_unwind_get_stats(&a);
	void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	assert_int_equal(rt_unwind_refresh(), 0);
	rt_unwind_get_stats(&b);
	assert_int_equal(b.objects, a.objects + 1);
	dlclose(h);
	assert_int_equal(rt_unwind_refresh(), 0);
	rt_unwind_get_stats(&c);
	assert_int_equal(c.objects, a.objects);
	assert_true(c.refreshes > a.refreshes);
}

/* ---- the storm ---------------------------------------------------------------- */

#define STORM_TARGETS 8

static struct {
	volatile int stop;
	pid_t tids[STORM_TARGETS];       /* 0: free slot */
	unsigned long calls, ok_fp, ok_lu, ok_tb, eagain, ebusy, other, frames_fp, frames_lu, frames_tb;
	char plugin[PATH_MAX];
} storm;

static void storm_handler(int sig)
{
	(void)sig;
	uintptr_t ips[RT_UNWIND_MAX_DEPTH];
	unsigned long k = __atomic_fetch_add(&storm.calls, 1, __ATOMIC_RELAXED);
	static const int methods[3] = { RT_UNWIND_FP, RT_UNWIND_LIBUNWIND, RT_UNWIND_TABLES };
	int method = methods[k % 3];
	int n = rt_unwind(ips, RT_UNWIND_MAX_DEPTH, 0, method);
	if (n > 0 && method == RT_UNWIND_FP) {
		__atomic_fetch_add(&storm.ok_fp, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&storm.frames_fp, (unsigned long)n, __ATOMIC_RELAXED);
	} else if (n > 0 && method == RT_UNWIND_TABLES) {
		__atomic_fetch_add(&storm.ok_tb, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&storm.frames_tb, (unsigned long)n, __ATOMIC_RELAXED);
	} else if (n > 0) {
		__atomic_fetch_add(&storm.ok_lu, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&storm.frames_lu, (unsigned long)n, __ATOMIC_RELAXED);
	} else if (n == -EAGAIN) {
		__atomic_fetch_add(&storm.eagain, 1, __ATOMIC_RELAXED);
	} else if (n == -EBUSY) {
		__atomic_fetch_add(&storm.ebusy, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(&storm.other, 1, __ATOMIC_RELAXED);
	}
}

static void watchdog(int sig)
{
	(void)sig;
	static const char msg[] = "test_unwind: watchdog: the signal storm hung (deadlock)\n";
	ssize_t r = write(2, msg, sizeof(msg) - 1);
	(void)r;
	_exit(99);
}

static int storm_slot(pid_t tid)
{
	for (int i = 0; i < STORM_TARGETS; i++) {
		pid_t none = 0;
		if (__atomic_compare_exchange_n(&storm.tids[i], &none, tid, 0, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			return i;
	}
	return -1;
}

static void storm_unslot(int i)
{
	if (i >= 0)
		__atomic_store_n(&storm.tids[i], 0, __ATOMIC_SEQ_CST);
}

static void *signaller(void *arg)
{
	(void)arg;
	pid_t pid = getpid();
	while (!storm.stop) {
		for (int i = 0; i < STORM_TARGETS; i++) {
			pid_t t = __atomic_load_n(&storm.tids[i], __ATOMIC_SEQ_CST);
			/* Two signals, so that one handler can interrupt the
			 * other on the same thread (the -EBUSY rule). */
			if (t)
				syscall(SYS_tgkill, pid, t, (i & 1) ? SIGUSR1 : SIGPROF);
		}
		struct timespec ts = { 0, 20000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	++*(int *)arg;
	return 0;
}

/* malloc/free of varied sizes, dlopen/dlclose, dl_iterate_phdr. */
static void churn(int with_dl)
{
	void *keep[32] = { 0 };
	unsigned x = 12345;
	for (int i = 0; i < 2000 && !storm.stop; i++) {
		x = x * 1103515245u + 12345u;
		int s = (int)(x >> 16) % 32;
		free(keep[s]);
		keep[s] = malloc(((x >> 8) & 4095) + 1);
		if (with_dl && i % 100 == 0) {
			void *h = dlopen(storm.plugin, RTLD_NOW | RTLD_LOCAL);
			if (h) {
				int (*fn)(int) = (int (*)(int))dlsym(h, "fx_plugin_value");
				if (fn)
					x += (unsigned)fn(3);
				dlclose(h);
			}
			int cnt = 0;
			dl_iterate_phdr(count_cb, &cnt);
		}
	}
	for (int s = 0; s < 32; s++)
		free(keep[s]);
}

static void *worker(void *arg)
{
	int prepared = (int)(intptr_t)arg;
	if (prepared)
		rt_unwind_thread_init();
	int slot = storm_slot((pid_t)syscall(SYS_gettid));
	while (!storm.stop)
		churn(0);
	storm_unslot(slot);
	return NULL;
}

/* Short-lived threads: each one's first capture happens in a handler. */
static void *brief(void *arg)
{
	(void)arg;
	int slot = storm_slot((pid_t)syscall(SYS_gettid));
	churn(0);
	storm_unslot(slot);
	return NULL;
}

static void *spawner(void *arg)
{
	(void)arg;
	while (!storm.stop) {
		pthread_t t;
		if (pthread_create(&t, NULL, brief, NULL) == 0)
			pthread_join(t, NULL);
	}
	return NULL;
}

static void test_storm(void **state)
{
	(void)state;
	fixture_path(storm.plugin, sizeof(storm.plugin), "libfx_plugin.so");
	void *probe = dlopen(storm.plugin, RTLD_NOW | RTLD_LOCAL);
	if (!probe)
		fail_msg("cannot load the fixture %s: %s", storm.plugin, dlerror());
	dlclose(probe);

	struct sigaction sa = { .sa_handler = storm_handler, .sa_flags = SA_RESTART }, old, old1,
			 wd = { .sa_handler = watchdog }, oldwd;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&wd.sa_mask);
	assert_int_equal(sigaction(SIGPROF, &sa, &old), 0);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old1), 0);
	assert_int_equal(sigaction(SIGALRM, &wd, &oldwd), 0);
	alarm(WATCHDOG_SECS);

	storm.stop = 0;
	int main_slot = storm_slot((pid_t)syscall(SYS_gettid));
	pthread_t sig, w1, w2, sp;
	assert_int_equal(pthread_create(&w1, NULL, worker, (void *)(intptr_t)1), 0);
	assert_int_equal(pthread_create(&w2, NULL, worker, (void *)(intptr_t)0), 0);
	assert_int_equal(pthread_create(&sp, NULL, spawner, NULL), 0);
	assert_int_equal(pthread_create(&sig, NULL, signaller, NULL), 0);
	time_t end = time(NULL) + STORM_SECS;
	unsigned long rounds = 0;
	while (time(NULL) < end) {
		churn(1);
		rounds++;
	}
	storm.stop = 1;
	pthread_join(sig, NULL);
	pthread_join(w1, NULL);
	pthread_join(w2, NULL);
	pthread_join(sp, NULL);
	storm_unslot(main_slot);
	alarm(0);
	sigaction(SIGALRM, &oldwd, NULL);
	sigaction(SIGPROF, &old, NULL);
	sigaction(SIGUSR1, &old1, NULL);

	struct rt_unwind_info info;
	rt_unwind_get_info(&info);
	struct rt_unwind_stats st;
	rt_unwind_get_stats(&st);
	fprintf(stderr,
		"storm: %lu rounds, %lu captures: fp ok %lu (%.1f frames), libunwind ok %lu "
		"(%.1f frames), tables ok %lu (%.1f frames), -EAGAIN %lu, -EBUSY %lu, other %lu "
		"(libunwind TLS %s)\n",
		rounds, storm.calls, storm.ok_fp, storm.ok_fp ? (double)storm.frames_fp / storm.ok_fp : 0,
		storm.ok_lu, storm.ok_lu ? (double)storm.frames_lu / storm.ok_lu : 0, storm.ok_tb,
		storm.ok_tb ? (double)storm.frames_tb / storm.ok_tb : 0, storm.eagain, storm.ebusy,
		storm.other, info.static_tls ? "static" : "dynamic");
	fprintf(stderr,
		"storm: tables %llu walks, %llu answered, %llu verified, %llu mismatches, %llu skipped; "
		"fallbacks: bad cfi %llu, no fde %llu, no object %llu, stack %llu, no slot %llu\n",
		(unsigned long long)st.captures, (unsigned long long)st.fast,
		(unsigned long long)st.verified, (unsigned long long)st.mismatches,
		(unsigned long long)st.verify_skipped, (unsigned long long)st.fb_bad_cfi,
		(unsigned long long)st.fb_no_fde, (unsigned long long)st.fb_no_object,
		(unsigned long long)st.fb_stack, (unsigned long long)st.fb_no_slot);
	assert_true(rounds > 0);
	assert_true(storm.ok_fp > 100);
	assert_true(storm.ok_lu > 100);
	assert_true(storm.ok_tb > 100);
	assert_true(st.verified > 100);
	assert_int_equal(st.mismatches, 0);
	assert_int_equal(storm.other, 0);
	/* Unprepared threads with dynamic TLS are the only -EAGAIN. */
	if (info.static_tls)
		assert_int_equal(storm.eagain, 0);
}

/* ---- libunwind while another thread holds the loader's lock ------------------- */

static sem_t lock_held, lock_release, go;
static volatile int cold_done;

/* Functions unwound nowhere else in this process, so that no cache of
 * libunwind (per thread or global) can know their addresses. */
struct cold {
	uintptr_t ra[3];
	uintptr_t ips[RT_UNWIND_MAX_DEPTH];
	int n;
};
static struct cold cold;

__attribute__((noinline)) static int cold_leaf(struct cold *c)
{
	c->ra[2] = (uintptr_t)__builtin_return_address(0);
	c->n = rt_unwind(c->ips, RT_UNWIND_MAX_DEPTH, 0, RT_UNWIND_LIBUNWIND);
	__asm__ volatile("" ::: "memory");
	return c->n;
}

__attribute__((noinline)) static int cold_mid(struct cold *c)
{
	c->ra[1] = (uintptr_t)__builtin_return_address(0);
	int r = cold_leaf(c);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

__attribute__((noinline)) static int cold_top(struct cold *c)
{
	c->ra[0] = (uintptr_t)__builtin_return_address(0);
	int r = cold_mid(c);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static int hold_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(void)arg;
	sem_post(&lock_held);
	while (sem_wait(&lock_release) != 0)
		;
	return 1;
}

static void *holder(void *arg)
{
	(void)arg;
	dl_iterate_phdr(hold_cb, NULL);
	return NULL;
}

static void *cold_thread(void *arg)
{
	(void)arg;
	rt_unwind_thread_init();
	while (sem_wait(&go) != 0)
		;
	/* Addresses no cache knows: each is looked up in the unwind tables. */
	cold_top(&cold);
	cold_done = 1;
	return NULL;
}

static void test_loader_lock(void **state)
{
	(void)state;
	sem_init(&lock_held, 0, 0);
	sem_init(&lock_release, 0, 0);
	sem_init(&go, 0, 0);
	memset(&cold, 0, sizeof(cold));
	cold_done = 0;
	pthread_t a, b;
	assert_int_equal(pthread_create(&a, NULL, cold_thread, NULL), 0);
	assert_int_equal(pthread_create(&b, NULL, holder, NULL), 0);
	while (sem_wait(&lock_held) != 0)
		;
	sem_post(&go);
	for (int i = 0; i < 500 && !cold_done; i++)
		usleep(10000);
	int finished = cold_done;
	sem_post(&lock_release);
	pthread_join(b, NULL);
	pthread_join(a, NULL);
	if (!finished)
		fail_msg("libunwind waited for the loader's lock (dl_iterate_phdr)");
	assert_true(cold.n >= 4);
	assert_true(cold.ips[1] == cold.ra[2] && cold.ips[2] == cold.ra[1] && cold.ips[3] == cold.ra[0]);
}

/* ---- libunwind's TLS rule ----------------------------------------------------- */

static void *unprepared(void *arg)
{
	int *res = arg;
	uintptr_t ips[8];
	res[0] = rt_unwind(ips, 8, 0, RT_UNWIND_LIBUNWIND);
	res[1] = rt_unwind_thread_init();
	res[2] = rt_unwind(ips, 8, 0, RT_UNWIND_LIBUNWIND);
	res[3] = rt_unwind(ips, 8, 0, RT_UNWIND_FP);
	return NULL;
}

static void test_thread_init(void **state)
{
	(void)state;
	struct rt_unwind_info info;
	rt_unwind_get_info(&info);
	int res[4] = { 0 };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, unprepared, res), 0);
	pthread_join(t, NULL);
	if (info.static_tls)
		assert_true(res[0] > 0);
	else
		assert_int_equal(res[0], -EAGAIN);
	assert_int_equal(res[1], 0);
	assert_true(res[2] > 0);
	assert_true(res[3] > 0);
}

/* ---- forged frame-pointer chains ------------------------------------------------ */

#define SELF ((uintptr_t)1)

/* Replace this frame's saved frame pointer by `bad` during an FP walk. */
__attribute__((noinline)) static int forged(uintptr_t bad, uintptr_t *ips, uintptr_t *ret_ra)
{
	volatile uintptr_t *slot = (volatile uintptr_t *)__builtin_frame_address(0);
	uintptr_t saved = *slot;
	*ret_ra = (uintptr_t)__builtin_return_address(0);
	*slot = bad == SELF ? (uintptr_t)slot : bad;
	__asm__ volatile("" ::: "memory");
	int n = rt_unwind(ips, RT_UNWIND_MAX_DEPTH, 0, RT_UNWIND_FP);
	__asm__ volatile("" ::: "memory");
	*slot = saved;
	return n;
}

static void test_forged_chain(void **state)
{
	(void)state;
	uintptr_t ips[RT_UNWIND_MAX_DEPTH], ra;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	void *heap = malloc(64);
	uintptr_t bads[] = {
		0,                                       /* end of chain */
		here + 4,                                /* misaligned */
		here - 4096,                             /* below: not monotonic */
		SELF,                                    /* a loop */
		(uintptr_t)heap,                         /* outside the stack */
		(uintptr_t)0x7ffffffff000ull,               /* above any stack, unmapped */
		UINTPTR_MAX & ~(uintptr_t)15,            /* kernel half, wraps */
		(uintptr_t)0x10,                         /* first page */
	};
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		int n = forged(bads[i], ips, &ra);
		if (n != 2)
			fail_msg("case %zu (0x%lx): %d frames, expected 2", i, (unsigned long)bads[i], n);
		assert_true(ips[1] == ra);
	}
	free(heap);

	/* Frames forged above the walk: followed while they look valid, then
	 * a frame pointing back down ends the walk. */
	uintptr_t fake[6];
	fake[0] = (uintptr_t)&fake[2];
	fake[1] = 0x1234567;
	fake[2] = (uintptr_t)&fake[4];
	fake[3] = 0x2345678;
	fake[4] = (uintptr_t)&fake[0];
	fake[5] = 0x3456789;
	int n = forged((uintptr_t)&fake[0], ips, &ra);
	assert_int_equal(n, 5);
	assert_true(ips[1] == ra);
	assert_true(ips[2] == 0x1234567 && ips[3] == 0x2345678 && ips[4] == 0x3456789);
	/* A return address of 0 ends it too. */
	fake[3] = 0;
	n = forged((uintptr_t)&fake[0], ips, &ra);
	assert_int_equal(n, 3);
}

/* ---- rt_unwind_own(): own frames by frame pointers, notes ---------------- */

/* One capture both ways from the same frame: skipping this function's
 * frame by the tables (rt_unwind) and by its frame pointer (own 1). */
__attribute__((noinline)) static int own_pair(uintptr_t *a, int *na, uintptr_t *b, struct rt_unwind_note *note)
{
	*na = rt_unwind(a, RT_UNWIND_MAX_DEPTH, 1, RT_UNWIND_TABLES);
	int nb = rt_unwind_own(b, RT_UNWIND_MAX_DEPTH, 1, 1, RT_UNWIND_TABLES, note);
	__asm__ volatile("" ::: "memory");
	return nb;
}

/* Captures from two places: the same frames again and again, or others. */
__attribute__((noinline)) static int note_site_a(uintptr_t *ips, struct rt_unwind_note *note)
{
	int n = rt_unwind_own(ips, RT_UNWIND_MAX_DEPTH, 0, 0, RT_UNWIND_TABLES, note);
	__asm__ volatile("" ::: "memory");
	return n;
}

__attribute__((noinline)) static int note_site_b(uintptr_t *ips, struct rt_unwind_note *note)
{
	int n = note_site_a(ips, note);
	__asm__ volatile("" ::: "memory");
	return n + 0;
}

#define NOTE_TIMES 6

/* TIMES captures from one place: got[i] is -1 (no note), 0 (a note, its
 * words not ours) or 1 (the words written here before); the first note
 * without words gets them. Returns whether they were written. */
__attribute__((noinline)) static int note_loop(uintptr_t (*ips)[RT_UNWIND_MAX_DEPTH], int *ns, int *got, int times)
{
	const uint32_t v[RT_UNWIND_NOTE_WORDS] = { 11, 22, 33 };
	int written = 0;
	for (int i = 0; i < times; i++) {
		struct rt_unwind_note nt;
		uint64_t w[RT_UNWIND_NOTE_WORDS];
		ns[i] = note_site_a(ips[i], &nt);
		got[i] = -1;
		if (nt.cell)
			got[i] = rt_unwind_note_get(&nt, w) && w[0] == 11 && w[1] == 22 && w[2] == 33;
		if (got[i] == 0 && !written) {
			rt_unwind_note_set(&nt, v);
			written = 1;
		}
	}
	__asm__ volatile("" ::: "memory");
	return written;
}

static void test_own_and_note(void **state)
{
	(void)state;
	uintptr_t a[RT_UNWIND_MAX_DEPTH], b[RT_UNWIND_MAX_DEPTH];
	struct rt_unwind_note note;
	int na = 0;
	/* The frame passed by its frame pointer gives the same stack. */
	for (int i = 0; i < 3; i++) {
		int nb = own_pair(a, &na, b, &note);
		assert_true(na > 2);
		assert_int_equal(nb, na);
		assert_memory_equal(a, b, (size_t)na * sizeof(a[0]));
	}
	/* own > skip, and a negative own, are refused. */
	assert_int_equal(rt_unwind_own(a, 4, 1, 2, RT_UNWIND_TABLES, &note), -EINVAL);
	assert_int_equal(rt_unwind_own(a, 4, 1, -1, RT_UNWIND_TABLES, &note), -EINVAL);

	/* A note goes with the frames it was written for: captures repeated
	 * from one place get one (by the second), whose words, void at
	 * first, read back in the next captures; after captures elsewhere
	 * replaced the memo, never words written for other frames. */
	uintptr_t rips[2][NOTE_TIMES][RT_UNWIND_MAX_DEPTH];
	int ns[2][NOTE_TIMES], got[2][NOTE_TIMES];
	struct rt_unwind_note nb;
	for (int round = 0; round < 2; round++) {
		assert_int_equal(note_loop(rips[round], ns[round], got[round], NOTE_TIMES), 1);
		if (round == 0) {
			for (int i = 0; i < 3; i++)
				assert_true(note_site_b(b, &nb) > 0);
		}
	}
	for (int round = 0; round < 2; round++) {
		int first_valid = -1, written = -1;
		for (int i = 0; i < NOTE_TIMES; i++) {
			/* (The rounds may be two call sites: unrolled.) */
			assert_int_equal(ns[round][i], ns[round][0]);
			assert_memory_equal(rips[round][i], rips[round][0], (size_t)ns[round][0] * sizeof(uintptr_t));
			if (got[round][i] == 0 && written < 0)
				written = i;
			if (got[round][i] == 1 && first_valid < 0)
				first_valid = i;
		}
		/* Written at `written`, read back right after. */
		assert_true(written >= 0 && written <= 2);
		assert_int_equal(first_valid, written + 1);
		for (int i = first_valid; i < NOTE_TIMES; i++)
			assert_int_equal(got[round][i], 1);
	}

	/* Other methods hand out no note. */
	assert_true(rt_unwind_own(a, 8, 0, 0, RT_UNWIND_FP, &nb) > 0);
	assert_null(nb.cell);
	struct rt_unwind_stats st;
	assert_int_equal(rt_unwind_get_stats(&st), 0);
	assert_int_equal(st.mismatches, 0);
}

/* ---- the walk inlined into its caller (rt_unwind_tables_here) --------- */

#if defined(__x86_64__)
/* Both ways from one function: rt_unwind_own() skipping this function's
 * frame, the inlined walk starting from it. */
__attribute__((noinline)) static int here_pair(uintptr_t *a, int *na, uintptr_t *b, int *nb)
{
	struct rt_unwind_note na_note, nb_note;
	*na = rt_unwind_own(a, RT_UNWIND_MAX_DEPTH, 1, 1, RT_UNWIND_TABLES, &na_note);
	*nb = rt_unwind_tables_here(b, RT_UNWIND_MAX_DEPTH, 0, 0, 0, &nb_note);
	__asm__ volatile("" ::: "memory");
	return nb_note.frames == NULL;
}

static void test_tables_here(void **state)
{
	(void)state;
	uintptr_t a[RT_UNWIND_MAX_DEPTH], b[RT_UNWIND_MAX_DEPTH];
	struct rt_unwind_stats s0, s1;
	assert_int_equal(rt_unwind_get_stats(&s0), 0);
	for (int i = 0; i < 3; i++) {
		int na = 0, nb = 0;
		/* Not lazy: the frames are in b. */
		assert_true(here_pair(a, &na, b, &nb));
		assert_true(na > 2);
		assert_int_equal(nb, na);
		assert_memory_equal(a, b, (size_t)na * sizeof(a[0]));
	}
	/* Checked against libunwind, as every capture here (verification
	 * mode): from the right frame. */
	assert_int_equal(rt_unwind_get_stats(&s1), 0);
	assert_true(s1.verified - s0.verified >= 6);
	assert_int_equal(s1.mismatches, 0);
}
#endif

/* ---- lazy frames: left in the memo, copied out later ------------------ */

/* `times` captures from one place (a loop the compiler cannot unroll:
 * its count is an argument), the last one's frames and note kept. */
__attribute__((noinline)) static int lazy_site(uintptr_t *ips, int method, struct rt_unwind_note *note)
{
	int n = rt_unwind_own(ips, RT_UNWIND_MAX_DEPTH, 0, 0, method, note);
	__asm__ volatile("" ::: "memory");
	return n;
}

__attribute__((noinline)) static int lazy_loop(int times, uintptr_t *ips, int method, struct rt_unwind_note *note)
{
	int n = 0;
	for (int i = 0; i < times; i++)
		n = lazy_site(ips, method, note);
	__asm__ volatile("" ::: "memory");
	return n;
}

/* A capture `depth` calls down: the stack differs from the others' for
 * long enough that the walk is remembered (it replaces a memo). */
__attribute__((noinline)) static int lazy_deep(int depth, uintptr_t *ips)
{
	struct rt_unwind_note note;
	int n = depth > 0 ? lazy_deep(depth - 1, ips) : lazy_site(ips, RT_UNWIND_TABLES, &note);
	__asm__ volatile("" ::: "memory");
	return n;
}

/* The frames of two captures made from different lines of one caller:
 * the same but for the return address into that caller (frame 2). */
static void assert_same_but_caller(const uintptr_t *a, const uintptr_t *b, int n)
{
	for (int i = 0; i < n; i++)
		if (i != 2)
			assert_int_equal(a[i], b[i]);
}

static void test_lazy_frames(void **state)
{
	(void)state;
	uintptr_t ref[RT_UNWIND_MAX_DEPTH], a[RT_UNWIND_MAX_DEPTH], b[RT_UNWIND_MAX_DEPTH];
	struct rt_unwind_note nr, na, nb;
	/* Without the flag the frames are in ips, always. */
	int n0 = lazy_loop(3, ref, RT_UNWIND_TABLES, &nr);
	assert_true(n0 > 3);
	assert_null(nr.frames);
	/* With it, a repeated capture leaves them in the memo, with its
	 * note (in verification mode, as here, ips get them as well);
	 * copied out they are the frames. */
	int n1 = lazy_loop(3, a, RT_UNWIND_TABLES | RT_UNWIND_LAZY, &na);
	assert_int_equal(n1, n0);
	assert_non_null(na.frames);
	assert_non_null(na.cell);
	memset(a, 0, sizeof(a));
	assert_int_equal(rt_unwind_note_frames(&na, a, n1), 1);
	assert_same_but_caller(a, ref, n0);
	/* A first capture (no memo of it yet) fills ips. */
	int n2 = lazy_loop(1, b, RT_UNWIND_TABLES | RT_UNWIND_LAZY, &nb);
	assert_int_equal(n2, n0);
	assert_null(nb.frames);
	assert_same_but_caller(b, ref, n0);
	/* Captures that record the memo twice in between (as signal
	 * handlers' captures could): the frames are refused, not torn. */
	n1 = lazy_loop(3, a, RT_UNWIND_TABLES | RT_UNWIND_LAZY, &na);
	assert_non_null(na.frames);
	assert_true(lazy_deep(8, b) > 8);
	assert_int_equal(rt_unwind_note_frames(&na, a, n1), 1); /* once: the other memo */
	assert_true(lazy_deep(9, b) > 9);
	assert_int_equal(rt_unwind_note_frames(&na, a, n1), 0);
	/* Other methods ignore the flag: their frames are in ips. */
	assert_true(lazy_loop(2, b, RT_UNWIND_FP | RT_UNWIND_LAZY, &nb) > 0);
	assert_null(nb.frames);
	struct rt_unwind_stats st;
	assert_int_equal(rt_unwind_get_stats(&st), 0);
	assert_int_equal(st.mismatches, 0);
}

#if defined(__x86_64__)
/* ---- the last repeat again (rt_unwind_again) ---------------------------- */

/* A capture site as src/lib/stack.c makes one: rt_unwind_again() from
 * the function's frame when asked, else the inlined walk (lazy). */
__attribute__((noinline)) static int again_site(int again, uintptr_t *ips, uint64_t *w, struct rt_unwind_note *note)
{
	int n;
	if (again) {
		uintptr_t sp;
		__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
		int passed = -1;
		const uintptr_t f = (uintptr_t)__builtin_frame_address(0);
		int maybe = rt_unwind_again_maybe(f, sp);
		n = rt_unwind_again(f, sp, 0, 0, RT_UNWIND_MAX_DEPTH, w, &passed, note);
		if (n > 0) {
			/* The inline filter lets every such capture through. */
			assert_true(maybe);
			assert_int_equal(passed, 0);
		}
	} else {
		n = rt_unwind_tables_here(ips, RT_UNWIND_MAX_DEPTH, 0, 0, 1, note);
	}
	__asm__ volatile("" ::: "memory");
	return n;
}

static uintptr_t again_first[RT_UNWIND_MAX_DEPTH];   /* the frames of again_loop()'s first walk */

/* `walks` walks, their last note's words set to v (as stack.c sets the
 * map's id), then `agains` tries: the successes counted. */
__attribute__((noinline)) static int again_loop(int walks, int agains, uintptr_t *ips, int *n_walk, uint64_t *w,
						 struct rt_unwind_note *note)
{
	int ok = 0;
	for (int i = 0; i < walks + agains; i++) {
		/* One call site: the return address at the site's frame is
		 * one of the words checked. */
		int n = again_site(i >= walks, ips, w, note);
		if (i < walks) {
			*n_walk = n;
			if (i == 0 && n > 0 && note->frames)
				assert_int_equal(rt_unwind_note_frames(note, ips, n), 1);
			if (i == 0 && n > 0)
				memcpy(again_first, ips, (size_t)n * sizeof(ips[0]));
			if (note->cell) {
				uint32_t v[RT_UNWIND_NOTE_WORDS] = { 7, 8, 9 };
				rt_unwind_note_set(note, v);
			}
		} else {
			ok += n == *n_walk;
		}
	}
	__asm__ volatile("" ::: "memory");
	return ok;
}

/* The same from one call deeper: our frames the same, the stack below
 * them not (the memo's words differ). */
__attribute__((noinline)) static int again_deeper(int agains, uintptr_t *ips, int *n_walk, uint64_t *w,
						   struct rt_unwind_note *note)
{
	int ok = again_loop(0, agains, ips, n_walk, w, note);
	__asm__ volatile("" ::: "memory");
	return ok;
}

static void test_again(void **state)
{
	(void)state;
	uintptr_t ips[RT_UNWIND_MAX_DEPTH], ref[RT_UNWIND_MAX_DEPTH];
	uint64_t w[RT_UNWIND_NOTE_WORDS] = { 0 };
	struct rt_unwind_note note;
	int nw = 0;
	struct rt_unwind_stats s0, s1;
	assert_int_equal(rt_unwind_get_stats(&s0), 0);
	/* A first walk and a repeat (which records what the next needs),
	 * then the same capture again, three times: the walk's frames and
	 * the words set in its note. */
	assert_int_equal(again_loop(3, 3, ips, &nw, w, &note), 3);
	assert_true(nw > 2);
	assert_int_equal(w[0], 7);
	assert_int_equal(w[2], 9);
	/* Its frames (left in the memo) are the first walk's. */
	memset(ref, 0, sizeof(ref));
	assert_non_null(note.frames);
	assert_int_equal(rt_unwind_note_frames(&note, ref, nw), 1);
	assert_memory_equal(ref, again_first, (size_t)nw * sizeof(ref[0]));
	/* From another caller (the return address at the frame differs):
	 * not again. */
	assert_int_equal(again_site(1, ips, w, &note), -1);
	/* Recorded again, and again from where it was: yes. */
	assert_int_equal(again_loop(2, 2, ips, &nw, w, &note), 2);
	/* The same frame and words of ours, called from another line: a
	 * return address the memo read differs, not again. */
	assert_int_equal(again_loop(0, 1, ips, &nw, w, &note), 0);
	/* One call deeper: another frame, not again. */
	assert_int_equal(again_loop(2, 1, ips, &nw, w, &note), 1);
	assert_int_equal(again_deeper(2, ips, &nw, w, &note), 0);
	/* A walk that records another memo in between voids it. */
	assert_int_equal(again_loop(2, 1, ips, &nw, w, &note), 1);
	assert_true(lazy_deep(8, ips) > 8);
	assert_true(lazy_deep(9, ips) > 9);
	assert_int_equal(again_loop(0, 1, ips, &nw, w, &note), 0);
	assert_int_equal(rt_unwind_get_stats(&s1), 0);
	assert_int_equal(s1.again - s0.again, 7);
	assert_int_equal(s1.mismatches, 0);
}
#endif

/* ---- the memo met again past a frame that differs ------------------- */

/* resync_mid calls one of two functions of the same frame size through a
 * pointer, from one call site; each calls resync_leaf, which captures.
 * Two captures, one through each: the same frames but the return address
 * into resync_a or resync_b, at the same stack addresses. */
__attribute__((noinline)) static int resync_leaf(uintptr_t *ips)
{
	int n = rt_unwind(ips, RT_UNWIND_MAX_DEPTH, 0, RT_UNWIND_TABLES);
	__asm__ volatile("" ::: "memory");
	return n;
}

__attribute__((noinline)) static int resync_a(uintptr_t *ips)
{
	int n = resync_leaf(ips);
	__asm__ volatile("" ::: "memory");
	return n;
}

__attribute__((noinline)) static int resync_b(uintptr_t *ips)
{
	int n = resync_leaf(ips);
	__asm__ volatile("" ::: "memory");
	return n;
}

__attribute__((noinline)) static int resync_mid(int (*fn)(uintptr_t *), uintptr_t *ips)
{
	int n = fn(ips);
	__asm__ volatile("" ::: "memory");
	return n;
}

static void test_memo_resync(void **state)
{
	(void)state;
	uintptr_t ips[2][RT_UNWIND_MAX_DEPTH], *a = ips[0], *b = ips[1];
	int (*fns[2])(uintptr_t *) = { resync_a, resync_b };
	struct rt_unwind_stats st[2];
	int ns[2];
	/* From one call site (the loop's count in a volatile: not
	 * unrolled into two). */
	volatile int two = 2;
	for (int i = 0; i < two; i++) {
		ns[i] = resync_mid(fns[i], ips[i]);
		assert_int_equal(rt_unwind_get_stats(&st[i]), 0);
	}
	int na = ns[0], nb = ns[1];
	struct rt_unwind_stats s0 = st[0], s1 = st[1];
	/* The stacks: the same length, the same frames but frame 1. */
	assert_true(na > 4);
	assert_int_equal(nb, na);
	assert_int_equal(a[0], b[0]);
	assert_int_not_equal(a[1], b[1]);
	for (int i = 2; i < na; i++)
		assert_int_equal(a[i], b[i]);
	/* The second walk stepped out of resync_b itself, then met the
	 * first walk's state in resync_mid and took every frame after it
	 * from the memo; libunwind agrees (verification mode). */
	assert_true(s1.memo_frames - s0.memo_frames >= (uint64_t)(nb - 3));
	assert_int_equal(s1.mismatches, 0);
}

/* ---- rbp kept as a plain register ----------------------------------------------- */

#if defined(__x86_64__)
/*
 * rbp_set(v, fn) sets rbp to v and calls rbp_mid(v, fn), which saves it
 * (push, with its CFI) and calls fn: the saved word holds v, and no frame
 * above takes its CFA from rbp before rbp_set restores its caller's. As
 * code built without frame pointers keeps any value in rbp.
 */
/* A function that saves rbp and calls fn (its second argument), under
 * the name given: two copies make two functions of the same frame. */
#define RBP_MID(name)                                    \
	".type " name ", @function\n" name ":\n"         \
	".cfi_startproc\n"                               \
	"pushq %rbp\n"                                   \
	".cfi_def_cfa_offset 16\n"                       \
	".cfi_offset %rbp, -16\n"                        \
	"call *%rsi\n"                                   \
	"popq %rbp\n"                                    \
	".cfi_def_cfa_offset 8\n"                        \
	"ret\n"                                          \
	".cfi_endproc\n"                                 \
	".size " name ", .-" name "\n"
__asm__(".text\n"
	RBP_MID("rt_test_rbp_mid")
	".type rt_test_rbp_set, @function\n"
	"rt_test_rbp_set:\n"
	".cfi_startproc\n"
	"pushq %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"movq %rdi, %rbp\n"
	"call rt_test_rbp_mid\n"
	"popq %rbp\n"
	".cfi_def_cfa_offset 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size rt_test_rbp_set, .-rt_test_rbp_set\n");
void rt_test_rbp_set(uintptr_t v, void (*fn)(void));

/* Both ways from the frames the asm functions below set up: the tables
 * into two_ips[0], libunwind into two_ips[1] (frame 0 differs: two call
 * sites). */
static uintptr_t two_ips[2][RT_UNWIND_MAX_DEPTH];
static int two_n[2];

__attribute__((noinline)) static void capture_two_ways(void)
{
	two_n[0] = rt_unwind(two_ips[0], RT_UNWIND_MAX_DEPTH, 0, RT_UNWIND_TABLES);
	two_n[1] = rt_unwind(two_ips[1], RT_UNWIND_MAX_DEPTH, 0, RT_UNWIND_LIBUNWIND);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static int rbp_round(uintptr_t v, uintptr_t *ips)
{
	rt_test_rbp_set(v, capture_two_ways);
	__asm__ volatile("" ::: "memory");
	memcpy(ips, two_ips[0], sizeof(two_ips[0]));
	return two_n[0];
}

/* A saved rbp that decides no frame changes from capture to capture:
 * the stack is the same, libunwind's, and found again from the memo
 * without a step (a repeat), as if the word had not changed. */
#define RBP_ROUNDS 17

static void test_rbp_plain_register(void **state)
{
	(void)state;
	static uintptr_t ips[RBP_ROUNDS][RT_UNWIND_MAX_DEPTH], ref[RBP_ROUNDS][RT_UNWIND_MAX_DEPTH];
	int n[RBP_ROUNDS], nref[RBP_ROUNDS];
	struct rt_unwind_stats a, b;
	assert_int_equal(rt_unwind_get_stats(&a), 0);
	/* One call site for every round (no branch for the compiler to peel
	 * the first round off with). */
	for (int i = 0; i < RBP_ROUNDS; i++) {
		n[i] = rbp_round(0x1111 + (uintptr_t)i * 0x10001, ips[i]);
		nref[i] = two_n[1];
		memcpy(ref[i], two_ips[1], sizeof(ref[i]));
	}
	assert_int_equal(rt_unwind_get_stats(&b), 0);
	assert_true(n[0] > 3);
	for (int i = 0; i < RBP_ROUNDS; i++) {
		assert_int_equal(n[i], n[0]);
		assert_memory_equal(ips[i], ips[0], (size_t)n[0] * sizeof(uintptr_t));
		/* (Frame 0: two call sites.) */
		assert_int_equal(nref[i], n[0]);
		assert_memory_equal(ref[i] + 1, ips[0] + 1, (size_t)(n[0] - 1) * sizeof(uintptr_t));
	}
	/* The same capture each round, between libunwind's: repeats, but for
	 * the first two rounds (the first follows other frames). */
	assert_true(b.repeats - a.repeats >= RBP_ROUNDS - 2);
	assert_int_equal(b.mismatches, 0);
}

/*
 * A stack that ends on a return address of 0, as libunwind ends it: the
 * walk's last step reads the 0 (the memo keeps what it read as the
 * position after its last). rt_test_zero_ra(fn, ra) pushes ra (0) where a
 * return address would be and jumps to rt_test_zero_fn, whose CFI says it
 * was called from there; it calls fn, then jumps back (rbx) instead of
 * returning. No frame above it is walked. With ra inside rt_test_end_fn,
 * whose CFI leaves the return address undefined (as _start's), the stack
 * ends one frame later instead.
 */
__asm__(".text\n"
	".type rt_test_zero_fn, @function\n"
	"rt_test_zero_fn:\n"
	".cfi_startproc\n"
	"subq $8, %rsp\n"
	".cfi_def_cfa_offset 16\n"
	"call *%rdi\n"
	"addq $8, %rsp\n"
	".cfi_def_cfa_offset 8\n"
	"addq $8, %rsp\n"
	"jmp *%rbx\n"
	".cfi_endproc\n"
	".size rt_test_zero_fn, .-rt_test_zero_fn\n"
	".type rt_test_zero_ra, @function\n"
	"rt_test_zero_ra:\n"
	"pushq %rbx\n"
	"leaq 1f(%rip), %rbx\n"
	"pushq %rsi\n"
	"jmp rt_test_zero_fn\n"
	"1:\n"
	"popq %rbx\n"
	"ret\n"
	".size rt_test_zero_ra, .-rt_test_zero_ra\n"
	".type rt_test_end_fn, @function\n"
	"rt_test_end_fn:\n"
	".cfi_startproc\n"
	".cfi_undefined rip\n"
	"nop\n"
	"nop\n"
	"ret\n"
	".cfi_endproc\n"
	".size rt_test_end_fn, .-rt_test_end_fn\n");
void rt_test_zero_ra(void (*fn)(void), uintptr_t ra);
void rt_test_end_fn(void);

/* The same capture one frame deeper: a walk that meets the last one's
 * memo at rt_test_zero_fn's frame and takes its end from it. */
__attribute__((noinline)) static void zero_capture_deeper(void)
{
	capture_two_ways();
	__asm__ volatile("" ::: "memory");
}

static void test_zero_return_address(void **state)
{
	(void)state;
	struct rt_unwind_stats a, b;
	assert_int_equal(rt_unwind_get_stats(&a), 0);
	const uintptr_t end = (uintptr_t)rt_test_end_fn + 1;
	void (*fns[])(void) = { capture_two_ways, capture_two_ways, zero_capture_deeper, zero_capture_deeper,
				zero_capture_deeper, capture_two_ways, capture_two_ways, zero_capture_deeper };
	uintptr_t ra[] = { 0, 0, 0, 0, 0, 0, end, end };
	int depth[] = { 2, 2, 3, 3, 3, 2, 3, 4 };
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		rt_test_zero_ra(fns[i], ra[i]);
		/* capture_two_ways (and zero_capture_deeper), rt_test_zero_fn:
		 * the 0 ends the stack, both ways; or rt_test_end_fn does,
		 * the last frame. */
		assert_int_equal(two_n[0], depth[i]);
		assert_int_equal(two_n[1], depth[i]);
		/* (Frame 0: two call sites.) */
		assert_memory_equal(two_ips[0] + 1, two_ips[1] + 1, (size_t)(depth[i] - 1) * sizeof(uintptr_t));
		if (ra[i])
			assert_true(two_ips[0][depth[i] - 1] == end);
	}
	assert_int_equal(rt_unwind_get_stats(&b), 0);
	/* The second capture repeats the first (its check reads the 0). The
	 * deeper ones meet that memo at rt_test_zero_fn's frame, whose end
	 * they take from it (nothing after it but the 0); the second of
	 * them becomes the memo (the first keeps the one it met), with the
	 * end copied from the first memo, and the third repeats it. Then
	 * the word read at the end changes: the same first state, another
	 * stack (a memo that did not check that word would end it early).
	 * All verified against libunwind (this program sets
	 * RINGTRACE_UNWIND_VERIFY). */
	assert_true(b.repeats - a.repeats >= 2);
	assert_true(b.verified - a.verified >= 8);
	assert_int_equal(b.mismatches, 0);
	assert_int_equal(b.fb_no_fde + b.fb_bad_cfi + b.fb_stack, a.fb_no_fde + a.fb_bad_cfi + a.fb_stack);
}

/*
 * A saved rbp that decides the frames above it: rt_test_fp_outer(frame,
 * fn, mid) keeps rbp pointing at `frame` (its CFI: CFA = rbp + 16, the
 * caller's return address at frame[1]) and calls mid (from one call site,
 * through a register): rt_test_rbp_mid (above) or its copy
 * rt_test_rbp_mid2, which save that rbp and call fn. Two captures from the
 * same place through the same mid differ only in the saved word: the
 * return addresses on the stack are the same, the frame after
 * rt_test_fp_outer is frame[1].
 */
__asm__(".text\n"
	".type rt_test_fp_outer, @function\n"
	"rt_test_fp_outer:\n"
	".cfi_startproc\n"
	"pushq %rbp\n"
	".cfi_def_cfa_offset 16\n"
	"movq %rdi, %rbp\n"
	".cfi_def_cfa %rbp, 16\n"
	".cfi_offset %rbp, -16\n"
	"call *%rdx\n"
	".cfi_def_cfa %rsp, 16\n"
	"popq %rbp\n"
	".cfi_def_cfa_offset 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size rt_test_fp_outer, .-rt_test_fp_outer\n"
	RBP_MID("rt_test_rbp_mid2"));
void rt_test_fp_outer(uintptr_t *frame, void (*fn)(void), void (*mid)(void));
void rt_test_rbp_mid(void);
void rt_test_rbp_mid2(void);

#define FP_ROUNDS 12

/* One call site for every round, round i through mids[i] (NULL: always
 * rt_test_rbp_mid); the frames lie in this function's frame, above the
 * walk's (a frame outside the stack would fall back). */
__attribute__((noinline)) static void fp_rounds(const int *which, void (*const *mids)(void), int rounds, int *n,
						uintptr_t (*ips)[RT_UNWIND_MAX_DEPTH])
{
	uintptr_t frames[2][2] = { { 0, (uintptr_t)rt_test_end_fn + 1 }, { 0, (uintptr_t)rt_test_end_fn + 2 } };
	for (int i = 0; i < rounds; i++) {
		rt_test_fp_outer(frames[which[i]], capture_two_ways, mids ? mids[i] : rt_test_rbp_mid);
		__asm__ volatile("" ::: "memory");
		/* (Frame 0: two call sites.) */
		assert_int_equal(two_n[0], two_n[1]);
		assert_memory_equal(two_ips[0] + 1, two_ips[1] + 1, (size_t)(two_n[0] - 1) * sizeof(uintptr_t));
		n[i] = two_n[0];
		memcpy(ips[i], two_ips[0], sizeof(two_ips[0]));
	}
	__asm__ volatile("" ::: "memory");
}

static void test_rbp_decides(void **state)
{
	(void)state;
	static uintptr_t ips[FP_ROUNDS][RT_UNWIND_MAX_DEPTH];
	int n[FP_ROUNDS];
	/* Each frame twice: the second a repeat, the first a memo whose
	 * return addresses all hold and whose saved rbp does not. */
	const int which[FP_ROUNDS] = { 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1 };
	struct rt_unwind_stats a, b;
	assert_int_equal(rt_unwind_get_stats(&a), 0);
	fp_rounds(which, NULL, FP_ROUNDS, n, ips);
	assert_int_equal(rt_unwind_get_stats(&b), 0);
	const uintptr_t end[2] = { (uintptr_t)rt_test_end_fn + 1, (uintptr_t)rt_test_end_fn + 2 };
	for (int i = 0; i < FP_ROUNDS; i++) {
		/* capture_two_ways, rt_test_rbp_mid, rt_test_fp_outer, the
		 * frame's return address (two places in rt_test_end_fn, whose
		 * CFI ends the stack). */
		assert_int_equal(n[i], 4);
		assert_true(ips[i][3] == end[which[i]]);
		assert_memory_equal(ips[i], ips[0], 3 * sizeof(uintptr_t));
	}
	assert_true(b.repeats - a.repeats >= FP_ROUNDS / 2 - 1);
	assert_true(b.verified - a.verified >= FP_ROUNDS);
	assert_int_equal(b.mismatches, 0);
	assert_int_equal(b.fb_no_fde + b.fb_bad_cfi + b.fb_stack, a.fb_no_fde + a.fb_bad_cfi + a.fb_stack);
}

/*
 * A memo whose rest depends on rbp, met again after frames that differ
 * (memo_tail(): its flags taken over, the frames before it passed
 * backwards alone). Through rt_test_fp_outer (above) with two mids of one
 * size, two stacks differ in one frame and meet again at
 * rt_test_fp_outer, whose frame depends on the rbp the mid saved. Three
 * captures: through mid 1 with frame 0, through mid 2 with frame 0 (the
 * walk meets the first memo past mid 2 and takes the rest), through mid 2
 * with frame 1: the saved rbp now differs, which the memo of the second
 * capture must check although it took its rest from the first.
 */
static void test_memo_tail_rbp(void **state)
{
	(void)state;
	static uintptr_t ips[3][RT_UNWIND_MAX_DEPTH];
	int n[3];
	void (*const mids[3])(void) = { rt_test_rbp_mid, rt_test_rbp_mid2, rt_test_rbp_mid2 };
	const int which[3] = { 0, 0, 1 };
	struct rt_unwind_stats a, b;
	assert_int_equal(rt_unwind_get_stats(&a), 0);
	fp_rounds(which, mids, 3, n, ips);
	assert_int_equal(rt_unwind_get_stats(&b), 0);
	const uintptr_t end[3] = { (uintptr_t)rt_test_end_fn + 1, (uintptr_t)rt_test_end_fn + 1,
				   (uintptr_t)rt_test_end_fn + 2 };
	for (int i = 0; i < 3; i++) {
		/* capture_two_ways, the mid, rt_test_fp_outer, the frame's
		 * return address. */
		assert_int_equal(n[i], 4);
		assert_true(ips[i][3] == end[i]);
		assert_true(ips[i][2] == ips[0][2]);
	}
	assert_true(ips[1][1] != ips[0][1]);
	assert_true(ips[2][1] == ips[1][1]);
	/* The second took its last frames from the memo. */
	assert_true(b.memo_frames - a.memo_frames >= 2);
	assert_int_equal(b.mismatches, 0);
}

/* ---- a new generation voids the caches -------------------------------------- */

struct frame_cap {
	uintptr_t ips[RT_UNWIND_MAX_DEPTH];
	int n;
	uintptr_t ra;                    /* the return address into fx_frame_call */
};

__attribute__((noinline)) static int frame_cb(void *arg)
{
	struct frame_cap *fc = arg;
	fc->ra = (uintptr_t)__builtin_return_address(0);
	fc->n = rt_unwind(fc->ips, RT_UNWIND_MAX_DEPTH, 0, RT_UNWIND_TABLES);
	__asm__ volatile("" ::: "memory");
	return 0;
}

typedef int (*fx_frame_fn)(int (*)(void *), void *);

/* One call site for every capture: the frame after fx_frame_call's. */
__attribute__((noinline)) static void frame_call_once(fx_frame_fn call, struct frame_cap *fc)
{
	memset(fc, 0, sizeof(*fc));
	call(frame_cb, fc);
	__asm__ volatile("" ::: "memory");
}

/*
 * libfx_frame_a.so and libfx_frame_b.so (tests/sym/fx_frame.c): the same
 * code, frames of 0x150 and 0x290 bytes. Loaded in turn, each unloaded
 * just before the other is loaded: the loader maps the second where the
 * first was, so a capture through it meets the same return address at
 * the same stack address, whose rows this thread's caches hold for the
 * first object. Those entries belong to the generation before the
 * dlclose: a capture that used them would step out of fx_frame_call
 * with the other frame size (a wrong frame, an early end or a fallback).
 * Checked: the step out of fx_frame_call lands in frame_call_once, and
 * every capture has as many frames as the first, through the first
 * object loaded (no entry of its addresses yet). Not against libunwind:
 * its per-thread trace cache (1.6, unw_backtrace) is keyed by address
 * alone and never emptied, so it answers with the first object's rows
 * (docs/stack-capture.md).
 */
static void test_cache_generation(void **state)
{
	(void)state;
	char lib[2][PATH_MAX + 32];
	fixture_path(lib[0], sizeof(lib[0]), "libfx_frame_a.so");
	fixture_path(lib[1], sizeof(lib[1]), "libfx_frame_b.so");
	struct rt_unwind_stats a, b;
	assert_int_equal(rt_unwind_get_stats(&a), 0);
	static struct frame_cap ref, fc;
	int same_place = 0;
	uintptr_t last_ra = 0;
	void *h = dlopen(lib[0], RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	for (int i = 0; i < 6; i++) {
		/* The last object went and this one came before the refresh
		 * (nothing mapped in between), which sees an object unloaded:
		 * a new generation. */
		assert_int_equal(rt_unwind_refresh(), 0);
		fx_frame_fn call = (fx_frame_fn)dlsym(h, "fx_frame_call");
		assert_non_null(call);
		/* Twice: the second through the caches and the memo. */
		for (int k = 0; k < 2; k++) {
			frame_call_once(call, &fc);
			if (i == 0 && k == 0)
				ref = fc;
			/* ips[0] in frame_cb, ips[1] in fx_frame_call, ips[2]
			 * in frame_call_once, then this function, cmocka's. */
			assert_true(fc.n > 3);
			assert_true(fc.ips[1] == fc.ra);
			if (fc.ips[2] <= (uintptr_t)frame_call_once || fc.ips[2] >= (uintptr_t)frame_call_once + 256)
				fail_msg("object %d, capture %d: frame 2 at 0x%lx, not in frame_call_once (0x%lx)", i & 1,
					 k, (unsigned long)fc.ips[2], (unsigned long)(uintptr_t)frame_call_once);
			assert_int_equal(fc.n, ref.n);
		}
		same_place += fc.ra == last_ra;
		last_ra = fc.ra;
		dlclose(h);
		h = dlopen(lib[(i + 1) & 1], RTLD_NOW | RTLD_LOCAL);
		assert_non_null(h);
	}
	dlclose(h);
	assert_int_equal(rt_unwind_refresh(), 0);
	assert_int_equal(rt_unwind_get_stats(&b), 0);
	/* All answered by the tables, none handed to libunwind. */
	assert_int_equal(b.fb_stack + b.fb_no_fde + b.fb_bad_cfi + b.fb_no_object + b.fb_not_ready,
			 a.fb_stack + a.fb_no_fde + a.fb_bad_cfi + a.fb_no_object + a.fb_not_ready);
	assert_true(b.fast - a.fast >= 12);
	if (same_place == 0)
		skip();  /* the loader never reused the place: nothing was at stake */
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_chain_fp),
		cmocka_unit_test(test_chain_libunwind),
		cmocka_unit_test(test_chain_tables),
		cmocka_unit_test(test_own_and_note),
#if defined(__x86_64__)
		cmocka_unit_test(test_tables_here),
#endif
		cmocka_unit_test(test_lazy_frames),
#if defined(__x86_64__)
		cmocka_unit_test(test_again),
#endif
		cmocka_unit_test(test_memo_resync),
		cmocka_unit_test(test_depth_skip_fp),
		cmocka_unit_test(test_depth_skip_libunwind),
		cmocka_unit_test(test_depth_skip_tables),
		cmocka_unit_test(test_forged_chain),
		cmocka_unit_test(test_thread_init),
		cmocka_unit_test(test_signal_fp),
		cmocka_unit_test(test_signal_libunwind),
		cmocka_unit_test(test_signal_tables),
		cmocka_unit_test(test_refresh),
		cmocka_unit_test(test_loader_lock),
		cmocka_unit_test(test_storm),
		cmocka_unit_test(test_stack_region_ways),
#if defined(__x86_64__)
		cmocka_unit_test(test_rbp_plain_register),
		cmocka_unit_test(test_zero_return_address),
		cmocka_unit_test(test_rbp_decides),
		cmocka_unit_test(test_memo_tail_rbp),
		cmocka_unit_test(test_cache_generation),
#endif
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
