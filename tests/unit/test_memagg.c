/*
 * test_memagg.c - the full aggregate mode's counting (src/mem/memagg.c,
 * compiled in here with memsample.c, as libringtrace-malloc.so has them)
 * on a block of its own, with stack keys and fake block addresses (never
 * dereferenced): threads whose calls go round more rows than a thread has
 * caches, and fewer, count every row exactly once their caches are folded
 * in, as `ringtrace report` folds them; a thread that ends leaves its sums
 * in the rows and the header, not in its caches; the heap's peak is that
 * of a thread's whole live bytes, not of one cache's share; the caches
 * of ended threads go to the next ones.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "mem/memagg.c"
#include "mem/memsample.c"

#define BITS 12

static void *block;
static size_t block_size;

/* The block, attached once for the whole program: 0 or -1. */
static int setup_block(void)
{
	block_size = memagg_size(BITS);
	int fd = memfd_create("ringtrace-memagg", 0);
	if (fd < 0 || ftruncate(fd, (off_t)block_size) < 0)
		return -1;
	block = mmap(NULL, block_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (block == MAP_FAILED || memagg_init(block, block_size, BITS, 1) < 0)
		return -1;
	char env[32];
	snprintf(env, sizeof(env), "fd:%d", fd);
	setenv("RINGTRACE_MEM_AGG", env, 1);
	setenv("RINGTRACE_MEM_AGG_BLOCKS", "65536", 1);
	return memagg_attach() < 0 || !memagg_hdr ? -1 : 0;
}

/* A folded copy of the block, as readers make it. */
static struct memagg_header *folded(void)
{
	void *c = malloc(block_size);
	assert_non_null(c);
	memcpy(c, block, block_size);
	uint32_t n;
	assert_non_null(memagg_check(c, block_size, &n));
	memagg_fold(c);
	return c;
}

/* The row of KEY in block M, or NULL. */
static const struct memagg_slot *row(const void *m, uint64_t key)
{
	const struct memagg_header *h = m;
	const struct memagg_slot *s = (const struct memagg_slot *)(h + 1);
	for (uint32_t i = 1; i < 1u << h->key_bits; i++)
		if (s[i].key == key)
			return &s[i];
	return NULL;
}

static uint64_t stack_key(uint32_t id)
{
	return MEMAGG_KEY_STACK | id;
}

/* A fake block address of thread T, row K (< 256), number I (< 4096):
 * apart enough that the live-block table's probes stay short. */
static void *addr(unsigned t, unsigned k, unsigned i)
{
	return (void *)(uintptr_t)(UINT64_C(0x100000000) * (t + 1) + ((((uint64_t)k << 12) + i) << 6));
}

/* FN(ARG) in a thread of its own, run to its end (its caches flushed and
 * given back by then). */
static void run_thread(void *(*fn)(void *), void *arg)
{
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, fn, arg), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
}

/*
 * Many and few rows. Thread T (0, 1), ROUNDS times: a block at each of
 * MANY rows (ids 100..119, 8 (k + 1) bytes), freed in reverse order, then
 * 6 blocks at 3 rows (ids 200..202), each freed at once. Then it keeps
 * KEEP blocks of 100 bytes at its own row (id 300 + T) and ends.
 */
#define MANY   20
#define ROUNDS 300
#define KEEP   7

static void *many_few(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	for (unsigned r = 0; r < ROUNDS; r++) {
		for (unsigned k = 0; k < MANY; k++)
			memagg_alloc(MEM_A_MALLOC, addr(t, k, r), 8 * (k + 1), 8 * (k + 1) + 8, stack_key(100 + k));
		for (unsigned k = MANY; k-- > 0;)
			memagg_free(addr(t, k, r), 0, 8 * (k + 1) + 8);
		for (unsigned j = 0; j < 6; j++) {
			void *p = addr(t, 64 + j % 3, r * 6 + j);
			memagg_alloc(MEM_A_MALLOC, p, 1000, 1008, stack_key(200 + j % 3));
			memagg_free(p, 0, 1008);
		}
	}
	for (unsigned i = 0; i < KEEP; i++)
		memagg_alloc(MEM_A_MALLOC, addr(t, 100, i), 100, 104, stack_key(300 + t));
	return NULL;
}

static void test_rows_exact(void **state)
{
	(void)state;
	uint64_t live0 = __atomic_load_n(&memagg_hdr->live_req, __ATOMIC_RELAXED);
	pthread_t th[2];
	for (uintptr_t t = 0; t < 2; t++)
		assert_int_equal(pthread_create(&th[t], NULL, many_few, (void *)t), 0);
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	struct memagg_header *f = folded();
	for (unsigned k = 0; k < MANY; k++) {
		const struct memagg_slot *s = row(f, stack_key(100 + k));
		assert_non_null(s);
		assert_int_equal(s->allocs, 2 * ROUNDS);
		assert_int_equal(s->frees, 2 * ROUNDS);
		assert_int_equal(s->req, 2 * ROUNDS * 8 * (k + 1));
		assert_int_equal(s->usable, 2 * ROUNDS * (8 * (k + 1) + 8));
		assert_int_equal(s->live_req, 0);
		assert_int_equal(s->live_usable, 0);
	}
	for (unsigned j = 0; j < 3; j++) {
		const struct memagg_slot *s = row(f, stack_key(200 + j));
		assert_non_null(s);
		assert_int_equal(s->allocs, 4 * ROUNDS);
		assert_int_equal(s->frees, 4 * ROUNDS);
		assert_int_equal(s->req, 4 * ROUNDS * 1000);
		assert_int_equal(s->live_req, 0);
		/* One block alive at a time, whichever thread. */
		assert_true(s->peak_req >= 1000 && s->peak_req <= 2000);
	}
	for (unsigned t = 0; t < 2; t++) {
		const struct memagg_slot *s = row(f, stack_key(300 + t));
		assert_non_null(s);
		assert_int_equal(s->allocs, KEEP);
		assert_int_equal(s->frees, 0);
		assert_int_equal(s->live_req, KEEP * 100);
		assert_int_equal(s->peak_req, KEEP * 100);
	}
	assert_int_equal(f->live_req - live0, 2 * KEEP * 100);
	assert_int_equal(f->unknown_frees, 0);
	assert_int_equal(f->untracked, 0);
	free(f);
}

/*
 * A thread that ends: its sums are in its row and in the header, without
 * folding. Before, they waited in its cache until a reader folded it, and
 * the header's live bytes, against which the other threads take the
 * heap's peak, lacked them.
 */
static void *keep_and_end(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < 50; i++)
		memagg_alloc(MEM_A_MALLOC, addr(3, 0, i), 40, 48, stack_key(400));
	return NULL;
}

static void *free_and_end(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < 50; i++)
		memagg_free(addr(3, 0, i), 0, 48);
	return NULL;
}

static void test_thread_end(void **state)
{
	(void)state;
	uint64_t live0 = __atomic_load_n(&memagg_hdr->live_req, __ATOMIC_RELAXED);
	run_thread(keep_and_end, NULL);
	/* The block as the program leaves it, not folded. */
	const struct memagg_slot *s = row(block, stack_key(400));
	assert_non_null(s);
	assert_int_equal(__atomic_load_n(&s->allocs, __ATOMIC_RELAXED), 50);
	assert_int_equal(__atomic_load_n(&s->live_req, __ATOMIC_RELAXED), 50 * 40);
	assert_int_equal(__atomic_load_n(&memagg_hdr->live_req, __ATOMIC_RELAXED) - live0, 50 * 40);
	/* Another thread frees them and ends: the header is back where it
	 * was, no thread holding a part of it (the next test's peak is
	 * taken against it). */
	run_thread(free_and_end, NULL);
	assert_int_equal(__atomic_load_n(&memagg_hdr->live_req, __ATOMIC_RELAXED), live0);
	struct memagg_header *f = folded();
	assert_int_equal(f->live_req, live0);
	assert_int_equal(row(f, stack_key(400))->frees, 50);
	free(f);
}

/*
 * A thread's calls after its caches were flushed at its end (other
 * thread-exit destructors free memory; this key's runs after the
 * library's, created later) reach the rows and the header at once, not a
 * cache nobody flushes any more.
 */
static pthread_key_t late_key;

static void late_frees(void *v)
{
	(void)v;
	for (unsigned i = 0; i < 20; i++)
		memagg_free(addr(5, 0, i), 0, 48);
}

static void *alloc_then_free_late(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < 20; i++)
		memagg_alloc(MEM_A_MALLOC, addr(5, 0, i), 40, 48, stack_key(600));
	pthread_setspecific(late_key, (void *)1);
	return NULL;
}

static void test_after_thread_end(void **state)
{
	(void)state;
	uint64_t live0 = __atomic_load_n(&memagg_hdr->live_req, __ATOMIC_RELAXED);
	assert_int_equal(pthread_key_create(&late_key, late_frees), 0);
	run_thread(alloc_then_free_late, NULL);
	/* The block as the program leaves it, not folded. */
	const struct memagg_slot *s = row(block, stack_key(600));
	assert_non_null(s);
	assert_int_equal(__atomic_load_n(&s->allocs, __ATOMIC_RELAXED), 20);
	assert_int_equal(__atomic_load_n(&s->frees, __ATOMIC_RELAXED), 20);
	assert_int_equal(__atomic_load_n(&memagg_hdr->live_req, __ATOMIC_RELAXED), live0);
	pthread_key_delete(late_key);
}

/*
 * The heap's peak is that of the thread's whole live bytes: 10 rows of 10
 * blocks of 1000 bytes, all alive at once, then all freed (rows spread
 * over the thread's caches, none of which sees more than its share).
 */
static void *spread(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < 10; i++)
		for (unsigned k = 0; k < 10; k++)
			memagg_alloc(MEM_A_MALLOC, addr(4, k, i), 1000, 1008, stack_key(500 + k));
	for (unsigned i = 0; i < 10; i++)
		for (unsigned k = 0; k < 10; k++)
			memagg_free(addr(4, k, i), 0, 1008);
	return NULL;
}

static void test_heap_peak(void **state)
{
	(void)state;
	struct memagg_header *f = folded();
	uint64_t live0 = f->live_req;
	free(f);
	run_thread(spread, NULL);
	f = folded();
	assert_int_equal(f->live_req, live0);
	assert_int_equal(f->peak_req, live0 + 100000);
	for (unsigned k = 0; k < 10; k++)
		assert_int_equal(row(f, stack_key(500 + k))->peak_req, 10000);
	free(f);
}

/*
 * Threads that end give their caches back: THREADS threads one after the
 * other, each counting in both modes (the full mode's rows and the
 * sampled mode's exact site rows), take the groups the ended ones left
 * instead of moving the cursor past the block's caches (where later
 * threads would count with atomics), and every count stays exact.
 */
#define THREADS 400
#define SITE    UINT64_C(0x7f0000401234)

static void *short_lived(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	for (unsigned i = 0; i < 5; i++) {
		void *p = addr(8, 200, t * 5 + i);
		memagg_alloc(MEM_A_MALLOC, p, 64, 72, stack_key(700));
		memagg_free(p, 0, 72);
		memagg_count(MEM_A_MALLOC, p, 32, 40, SITE);
	}
	return NULL;
}

static void test_groups_recycled(void **state)
{
	(void)state;
	uint32_t cursor0 = __atomic_load_n(&memagg_hdr->cache_cursor, __ATOMIC_RELAXED);
	uint64_t pushed0 = __atomic_load_n(&memagg_hdr->free_pushed, __ATOMIC_RELAXED);
	for (uintptr_t t = 0; t < THREADS; t++)
		run_thread(short_lived, (void *)t);
	/* Two groups a thread (one per mode), given back at its end: a
	 * few groups in all, where 2 x THREADS would pass MEMAGG_CACHES. */
	uint32_t cursor = __atomic_load_n(&memagg_hdr->cache_cursor, __ATOMIC_RELAXED);
	assert_true(cursor - cursor0 <= 4 * FW_CACHES);
	assert_true(2 * THREADS * FW_CACHES > MEMAGG_CACHES);
	assert_int_equal(__atomic_load_n(&memagg_hdr->free_pushed, __ATOMIC_RELAXED) - pushed0, 2 * THREADS);
	struct memagg_header *f = folded();
	const struct memagg_slot *full = row(f, stack_key(700)), *site = row(f, SITE);
	assert_non_null(full);
	assert_non_null(site);
	assert_int_equal(full->allocs, 5 * THREADS);
	assert_int_equal(full->frees, 5 * THREADS);
	assert_int_equal(full->req, 64 * 5 * THREADS);
	assert_int_equal(site->allocs, 5 * THREADS);
	assert_int_equal(site->req, 32 * 5 * THREADS);
	assert_int_equal(site->usable, 40 * 5 * THREADS);
	free(f);
	/* The sums are in the rows, not in the caches given back. */
	const struct memagg_slot *raw = row(block, SITE);
	assert_non_null(raw);
	assert_int_equal(__atomic_load_n(&raw->allocs, __ATOMIC_RELAXED), 5 * THREADS);
}

int main(void)
{
	if (setup_block() < 0) {
		fprintf(stderr, "test_memagg: cannot make or attach a block\n");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_exact),
		cmocka_unit_test(test_thread_end),
		cmocka_unit_test(test_after_thread_end),
		cmocka_unit_test(test_heap_peak),
		cmocka_unit_test(test_groups_recycled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
