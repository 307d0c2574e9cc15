/*
 * stress_memagg.c - the aggregate mode's counters (src/mem/memagg.c) under
 * threads that allocate at shared call sites and free each other's
 * blocks, while a reader copies and folds the block as `ringtrace top`
 * does. Built with the sanitizers in CI (TSan: the counters, the caches
 * and the live-block table are lock-free).
 *
 * Phase 1: each of THREADS workers allocates PER blocks (fake addresses,
 * sizes 1..64, 8 call sites shared by all), a quarter of them then
 * realloc'ed in place (take, release, allocate again). Phase 2 (after a
 * barrier): each worker frees the blocks of the next worker, a tenth of
 * them twice, and frees PER/100 addresses never allocated. Then 1100
 * short threads each allocate and free 3 blocks: more threads than caches,
 * so the last ones count with atomics directly. Meanwhile every worker
 * and short thread also counts exact rows (memagg_count, the sampled
 * mode's): ESITES call sites, more than a thread's ways, in runs of three
 * calls, some of them failed allocations; the short threads find no ways
 * left (one cache, or atomics).
 *
 * Checked at the end, on a folded copy: per site and in total,
 * allocations, frees, bytes requested and usable equal what the workers
 * did, and so do the exact rows' allocations, failures and bytes (no free
 * side); nothing alive; frees of unknown blocks = double frees + never
 * allocated; nothing untracked; the peak between the phase-1 total minus
 * one flush per thread and the bytes ever allocated. Exit 0 or 1.
 *
 * Usage: stress_memagg [--per N]
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mem/mem_agg.h"
#include "mem/mem_family.h"
#include "mem/memagg.h"

#define THREADS 4
#define SITES   8
#define SHORT   1100
#define ESITES  20

static long per = 100000;
static uint64_t **blocks;            /* [thread][i]: address, 0 once freed */
static uint32_t **sizes;
static pthread_barrier_t bar;
static atomic_int stop;
static atomic_ullong want_allocs[SITES], want_req[SITES], want_frees[SITES], want_usable[SITES];
static atomic_ullong want_unknown, phase1_bytes, all_bytes;
static atomic_ullong want_eallocs[ESITES], want_efailed[ESITES], want_ereq[ESITES], want_eusable[ESITES];
static void *block_mem;
static size_t block_size;

static uint64_t site_of(long i)
{
	return UINT64_C(0x400000) + (uint64_t)(i % SITES) * 16;
}

static uint64_t esite_of(long e)
{
	return UINT64_C(0x500000) + (uint64_t)e * 16;
}

/* An exact row's count, as the sampled mode makes it, and what it wants. */
static void count_exact(long e, uint64_t p, uint32_t sz)
{
	memagg_count(MEM_A_MALLOC, (void *)(uintptr_t)p, sz, sz + 8, esite_of(e));
	if (p) {
		want_eallocs[e]++;
		want_ereq[e] += sz;
		want_eusable[e] += sz + 8;
	} else {
		want_efailed[e]++;
	}
}

static void *worker(void *arg)
{
	long t = (long)(intptr_t)arg;
	uint64_t *mine = blocks[t];
	for (long i = 0; i < per; i++) {
		uint64_t p = ((uint64_t)(t + 1) << 40) | ((uint64_t)i << 4);
		uint32_t sz = (uint32_t)(i % 64) + 1;
		memagg_alloc(MEM_A_MALLOC, (void *)(uintptr_t)p, sz, sz + 8, site_of(i));
		mine[i] = p;
		sizes[t][i] = sz;
		count_exact((i / 3 + t) % ESITES, i % 13 == 5 ? 0 : p, sz);
		want_allocs[i % SITES]++;
		want_req[i % SITES] += sz;
		want_usable[i % SITES] += sz + 8;
		phase1_bytes += sz;
		all_bytes += sz;
		if (i % 4 == 3) {
			/* realloc in place: take, release, allocate again. */
			struct memagg_blk b;
			if (!memagg_take((void *)(uintptr_t)p, &b))
				abort();
			memagg_release(&b, MEM_C_MALLOC, sz + 8);
			want_frees[i % SITES]++;
			phase1_bytes -= sz;
			uint32_t nsz = sz + 100;
			memagg_alloc(MEM_A_REALLOC, (void *)(uintptr_t)p, nsz, nsz + 8, site_of(i));
			sizes[t][i] = nsz;
			want_allocs[i % SITES]++;
			want_req[i % SITES] += nsz;
			want_usable[i % SITES] += nsz + 8;
			phase1_bytes += nsz;
			all_bytes += nsz;
		}
	}
	pthread_barrier_wait(&bar);
	long o = (t + 1) % THREADS;
	for (long i = 0; i < per; i++) {
		memagg_free((void *)(uintptr_t)blocks[o][i], MEM_C_MALLOC, sizes[o][i] + 8);
		want_frees[i % SITES]++;
		if (i % 10 == 0) {
			memagg_free((void *)(uintptr_t)blocks[o][i], MEM_C_MALLOC, sizes[o][i] + 8);
			want_unknown++;
		}
	}
	for (long i = 0; i < per / 100; i++) {
		memagg_free((void *)(uintptr_t)(UINT64_C(0x7f0000000000) + (uint64_t)t * 0x100000 + (uint64_t)i * 16),
			    MEM_C_MALLOC, 8);
		want_unknown++;
	}
	return NULL;
}

static void *short_thread(void *arg)
{
	long k = (long)(intptr_t)arg;
	for (long i = 0; i < 3; i++) {
		uint64_t p = (UINT64_C(0x100) << 40) | ((uint64_t)k << 8) | ((uint64_t)i << 4);
		memagg_alloc(MEM_A_MALLOC, (void *)(uintptr_t)p, 10, 24, site_of(0));
		memagg_free((void *)(uintptr_t)p, MEM_C_MALLOC, 24);
		count_exact((k + i) % ESITES, i == 2 ? 0 : p, 10);
	}
	return NULL;
}

/* As `ringtrace top`: copy the block, fold the caches in, read it. */
static void *reader(void *arg)
{
	(void)arg;
	void *copy = malloc(block_size);
	uint64_t reads = 0;
	while (copy && !stop) {
		memcpy(copy, block_mem, block_size);
		uint32_t n;
		if (memagg_check(copy, block_size, &n)) {
			memagg_fold(copy);
			reads++;
		}
	}
	free(copy);
	return (void *)(uintptr_t)reads;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--per") && i + 1 < argc) {
			per = atol(argv[++i]);
		} else {
			fprintf(stderr, "usage: stress_memagg [--per N]\n");
			return 2;
		}
	}
	if (per < 100 || per > (1 << 24)) {
		fprintf(stderr, "stress_memagg: --per from 100 to 2^24\n");
		return 2;
	}
	block_size = memagg_size(12);
	int fd = memfd_create("ringtrace-memagg", 0);
	if (fd < 0 || ftruncate(fd, (off_t)block_size) < 0) {
		perror("memfd");
		return 1;
	}
	block_mem = mmap(NULL, block_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (block_mem == MAP_FAILED || memagg_init(block_mem, block_size, 12, 0) < 0) {
		fprintf(stderr, "stress_memagg: cannot lay the block out\n");
		return 1;
	}
	char env[32];
	snprintf(env, sizeof(env), "fd:%d", fd);
	setenv("RINGTRACE_MEM_AGG", env, 1);
	setenv("RINGTRACE_MEM_AGG_BLOCKS", "4194304", 1);
	if (memagg_attach() < 0 || !memagg_hdr) {
		fprintf(stderr, "stress_memagg: memagg_attach failed\n");
		return 1;
	}
	blocks = calloc(THREADS, sizeof(*blocks));
	sizes = calloc(THREADS, sizeof(*sizes));
	for (int t = 0; t < THREADS; t++) {
		blocks[t] = calloc((size_t)per, sizeof(**blocks));
		sizes[t] = calloc((size_t)per, sizeof(**sizes));
		if (!blocks[t] || !sizes[t])
			return 1;
	}
	pthread_barrier_init(&bar, NULL, THREADS);
	pthread_t th[THREADS], rd;
	pthread_create(&rd, NULL, reader, NULL);
	for (long t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	for (long k = 0; k < SHORT; k++) {
		pthread_t s;
		if (pthread_create(&s, NULL, short_thread, (void *)(intptr_t)k) == 0)
			pthread_join(s, NULL);
		want_allocs[0] += 3;
		want_req[0] += 30;
		want_usable[0] += 72;
		want_frees[0] += 3;
		all_bytes += 30;
	}
	stop = 1;
	void *reads;
	pthread_join(rd, &reads);

	void *copy = malloc(block_size);
	memcpy(copy, block_mem, block_size);
	uint32_t n;
	struct memagg_slot *slot = memagg_check(copy, block_size, &n);
	if (!slot) {
		fprintf(stderr, "stress_memagg: the block no longer validates\n");
		return 1;
	}
	memagg_fold(copy);
	const struct memagg_header *h = copy;
	int bad = 0;
	uint64_t got_allocs[SITES] = { 0 }, got_req[SITES] = { 0 }, got_frees[SITES] = { 0 }, got_usable[SITES] = { 0 };
	uint64_t live = 0;
	uint64_t got_eallocs[ESITES] = { 0 }, got_efailed[ESITES] = { 0 }, got_ereq[ESITES] = { 0 },
		 got_eusable[ESITES] = { 0 };
	for (uint32_t i = 0; i < n; i++) {
		if (!slot[i].key || slot[i].key == MEMAGG_KEY_OTHER)
			continue;
		uint64_t e = (slot[i].key - UINT64_C(0x500000)) / 16;
		if (slot[i].key >= UINT64_C(0x500000) && e < ESITES && slot[i].key == esite_of((long)e)) {
			got_eallocs[e] += slot[i].allocs;
			got_efailed[e] += slot[i].failed;
			got_ereq[e] += slot[i].req;
			got_eusable[e] += slot[i].usable;
			if (slot[i].frees || slot[i].live_req || slot[i].live_usable) {
				fprintf(stderr, "stress_memagg: exact site %llu has a free side\n", (unsigned long long)e);
				bad = 1;
			}
			continue;
		}
		uint64_t s = (slot[i].key - UINT64_C(0x400000)) / 16;
		if (s >= SITES || slot[i].key != site_of((long)s)) {
			fprintf(stderr, "stress_memagg: a slot with key 0x%llx\n", (unsigned long long)slot[i].key);
			bad = 1;
			continue;
		}
		got_allocs[s] += slot[i].allocs;
		got_req[s] += slot[i].req;
		got_frees[s] += slot[i].frees;
		got_usable[s] += slot[i].usable;
		live += slot[i].live_req;
	}
	for (int s = 0; s < SITES; s++) {
		if (got_allocs[s] != want_allocs[s] || got_req[s] != want_req[s] || got_frees[s] != want_frees[s] ||
		    got_usable[s] != want_usable[s]) {
			fprintf(stderr,
				"stress_memagg: site %d: allocs %llu/%llu, requested %llu/%llu, frees %llu/%llu, usable %llu/%llu\n",
				s, (unsigned long long)got_allocs[s], (unsigned long long)want_allocs[s],
				(unsigned long long)got_req[s], (unsigned long long)want_req[s],
				(unsigned long long)got_frees[s], (unsigned long long)want_frees[s],
				(unsigned long long)got_usable[s], (unsigned long long)want_usable[s]);
			bad = 1;
		}
	}
	for (int e = 0; e < ESITES; e++) {
		if (got_eallocs[e] != want_eallocs[e] || got_efailed[e] != want_efailed[e] || got_ereq[e] != want_ereq[e] ||
		    got_eusable[e] != want_eusable[e]) {
			fprintf(stderr,
				"stress_memagg: exact site %d: allocs %llu/%llu, failed %llu/%llu, requested %llu/%llu, usable %llu/%llu\n",
				e, (unsigned long long)got_eallocs[e], (unsigned long long)want_eallocs[e],
				(unsigned long long)got_efailed[e], (unsigned long long)want_efailed[e],
				(unsigned long long)got_ereq[e], (unsigned long long)want_ereq[e],
				(unsigned long long)got_eusable[e], (unsigned long long)want_eusable[e]);
			bad = 1;
		}
	}
	uint64_t low = phase1_bytes - (uint64_t)THREADS * MEMAGG_FLUSH * 164;
	if (live || h->live_req || h->live_usable || h->unknown_frees != want_unknown || h->untracked ||
	    h->keys_full || h->peak_req < low || h->peak_req > all_bytes) {
		fprintf(stderr,
			"stress_memagg: live %llu, heap live %llu/%llu, unknown frees %llu/%llu, untracked %llu, "
			"keys full %llu, peak %llu (from %llu to %llu)\n",
			(unsigned long long)live, (unsigned long long)h->live_req, (unsigned long long)h->live_usable,
			(unsigned long long)h->unknown_frees, (unsigned long long)want_unknown,
			(unsigned long long)h->untracked, (unsigned long long)h->keys_full,
			(unsigned long long)h->peak_req, (unsigned long long)low, (unsigned long long)all_bytes);
		bad = 1;
	}
	printf("stress_memagg: %d threads x %ld blocks, %d short threads, caches claimed %u, %llu reads: %s\n",
	       THREADS, per, SHORT, h->cache_cursor, (unsigned long long)(uintptr_t)reads, bad ? "FAILED" : "ok");
	free(copy);
	return bad;
}
