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
void memagg_count(unsigned fam, void *ptr, size_t size, size_t usable, uint64_t site);
uint64_t memagg_sample_alloc(unsigned fam, size_t size, size_t usable, uint64_t key, int alive);
void memagg_sample_free(uint64_t info, int free_class, size_t usable);
void memagg_sample_untracked(void);

#endif /* RINGTRACE_MEM_MEMAGG_H */
