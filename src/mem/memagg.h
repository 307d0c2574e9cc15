/*
 * memagg.h - the aggregate mode inside libringtrace-malloc.so (memagg.c),
 * called by the wrappers of memtrace.c instead of firing events.
 *
 * memagg_attach() runs once, from the library's constructor; the others
 * only once memagg_hdr is set, from any thread or signal handler, never
 * allocating, locking or blocking.
 */
#ifndef RINGTRACE_MEM_MEMAGG_H
#define RINGTRACE_MEM_MEMAGG_H

#include <stddef.h>
#include <stdint.h>

#include "mem/mem_agg.h"

/* The counters' block, or NULL when the mode is off. */
extern struct memagg_header *memagg_hdr;

/* Map the block named by RINGTRACE_MEM_AGG (fd:N): 0 (also when unset),
 * or a negative errno (the mode then stays off). */
int memagg_attach(void);

/* A block of our own (a followed process under --aggregate): made, mapped
 * in place of the inherited one, and held until the recorder has it open
 * (1 s at most). 0 or a negative errno (counting then stays off). */
int memagg_own(uint32_t bits, uint32_t by_stack);

/* An allocation of SIZE bytes (USABLE by the allocator) at PTR, NULL if it
 * failed, counted under KEY (a call site, or MEMAGG_KEY_STACK | stack id). */
void memagg_alloc(unsigned fam, void *ptr, size_t size, size_t usable, uint64_t key);

/* A block about to be freed by a deallocation of FREE_CLASS (enum
 * mem_class; 0: any), USABLE bytes: its key's counters go down (or an
 * unknown free is counted). Before the real free. */
void memagg_free(void *ptr, int free_class, size_t usable);

/* realloc in two steps: take the old block out of the live ones before
 * the real realloc (1 if it was there), then release it (it moved, or
 * was resized: its old size goes) or put it back (the realloc failed). */
struct memagg_blk {
	uint64_t info;
};
int memagg_take(void *ptr, struct memagg_blk *b);
void memagg_release(const struct memagg_blk *b, int free_class, size_t usable);
void memagg_put_back(void *ptr, const struct memagg_blk *b);

/*
 * Sampling (memsample.c; the two kinds of rows are described in
 * mem_agg.h). memagg_count: every allocation, exactly, under its call
 * site's row. memagg_sample_alloc: a sampled block, scaled, under the
 * estimate row of KEY (the stack or the call site); LIVE 0 when the block
 * could not be remembered (counted untracked, never alive). Returns what
 * to remember with the block for memagg_sample_free, which takes its
 * figures back when it is freed or moved. memagg_sample_untracked: a
 * sampled block alive that could not be remembered again (a failed
 * realloc putting it back).
 */
void memagg_count_slow(unsigned fam, void *ptr, size_t size, size_t usable, uint64_t site);
uint64_t memagg_sample_alloc(unsigned fam, size_t size, size_t usable, uint64_t key, int alive);
void memagg_sample_free(uint64_t info, int free_class, size_t usable);
void memagg_sample_untracked(void);

/*
 * A thread's ways: MEMAGG_WAYS caches of its own (claimed at once from the
 * block's, mem_agg.h), each holding the sums of one row, the row's way
 * chosen by a hash. The full mode (memagg_alloc, memagg_release, in
 * memagg.c) hashes the row's slot. The sampled mode's exact rows, inline
 * below, hash the call site: every allocation of a sampled aggregate
 * comes here. memagg_ways is NULL until the thread has them
 * (memagg_count_slow claims them, and counts with one cache or with
 * atomics when none are left), and memagg_way_site[w] is the site way w
 * counts, or MEMAGG_WAY_EMPTY. A call at a site its way holds is three
 * additions to memory only this thread writes: no hash of the row table,
 * no atomic, no flush.
 */
#define MEMAGG_WAYS_BITS 3
#define MEMAGG_WAYS      (1u << MEMAGG_WAYS_BITS)
#define MEMAGG_WAY_EMPTY UINT64_MAX  /* never a call site (below 2^63) */

extern __thread struct memagg_cache *memagg_ways __attribute__((tls_model("initial-exec")));
extern __thread uint64_t memagg_way_site[MEMAGG_WAYS] __attribute__((tls_model("initial-exec")));

static inline unsigned memagg_way_of(uint64_t site)
{
	return (unsigned)((site * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - MEMAGG_WAYS_BITS));
}

/* A successful allocation of SIZE bytes (USABLE) counted in its site's
 * way: 1, or 0 when the thread's way does not hold SITE (nothing done:
 * memagg_count_slow's case). */
static inline int memagg_count_way(unsigned fam, size_t size, size_t usable, uint64_t site)
{
	unsigned w = memagg_way_of(site);
	if (__builtin_expect(memagg_way_site[w] != site, 0))
		return 0;
	/* Relaxed loads and stores of the thread's own sums (plain moves):
	 * readers in another process see whole values (memagg_fold). */
	struct memagg_cache *c = &memagg_ways[w];
	uint64_t bit = UINT64_C(1) << (fam & 63);
	if (__builtin_expect(!(__atomic_load_n(&c->fams, __ATOMIC_RELAXED) & bit), 0))
		__atomic_store_n(&c->fams, __atomic_load_n(&c->fams, __ATOMIC_RELAXED) | bit, __ATOMIC_RELAXED);
	__atomic_store_n(&c->allocs, __atomic_load_n(&c->allocs, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&c->req, __atomic_load_n(&c->req, __ATOMIC_RELAXED) + size, __ATOMIC_RELAXED);
	__atomic_store_n(&c->usable, __atomic_load_n(&c->usable, __ATOMIC_RELAXED) + usable, __ATOMIC_RELAXED);
	return 1;
}

/* Every allocation of SIZE bytes (USABLE), NULL if it failed, exactly,
 * under its call site's row. */
static inline void memagg_count(unsigned fam, void *ptr, size_t size, size_t usable, uint64_t site)
{
	if (__builtin_expect(!ptr || !memagg_count_way(fam, size, usable, site), 0))
		memagg_count_slow(fam, ptr, size, usable, site);
}

#endif /* RINGTRACE_MEM_MEMAGG_H */
