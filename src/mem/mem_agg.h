/*
 * mem_agg.h - the allocation tracer's aggregate mode (`ringtrace record
 * --mem --aggregate`): instead of an event per call, the preloaded library
 * (src/mem/memagg.c) keeps counters per stack (with --stacks: the id of
 * the stack map of the program's region) or per call site in a block of
 * shared memory that the recorder created. `ringtrace top PID` reads the
 * block while the program runs, the recorder copies it into the trace
 * directory (mem/aggregate.bin) when the program ends, and `ringtrace
 * report` reads that copy.
 *
 * Layout: the header, 2^key_bits slots of 128 bytes, one per key, then
 * MEMAGG_CACHES per-thread caches of 128 bytes. A
 * key is claimed once, by a CAS from 0, and never released, so memory is
 * bounded by the table whatever the program's run time. Slot 0 is the
 * overflow slot (key MEMAGG_KEY_OTHER): calls whose key found no slot in
 * MEMAGG_PROBES probes are counted there.
 *
 * Who writes: every thread of the program. A thread claims a few caches
 * at once (a fetch-add on cache_cursor; memagg.c): MEMAGG_WAYS ways, each
 * holding the pending sums of one row, the row whose slot (or, for the
 * sampled mode's exact rows, whose call site) hashes to that way, and in
 * the full mode a spare, where a row put out of its way waits until the
 * next such change. It adds to them with plain stores, only it writes
 * there, and moves a cache's sums into its slot with atomic adds when
 * another row takes the way; in the full mode also all of them every
 * MEMAGG_FLUSH calls of the thread and when the thread ends. A LOCKed
 * instruction per call costs more than the rest of the accounting
 * (bench/mem.sh), consecutive calls often have different rows (stacks
 * above all), and two threads allocating at the same site would bounce
 * the slot's lines at every call. The thread's sums of the whole heap
 * (glive_*, gpeak) are kept in one of its caches only, whatever row that
 * one holds (it names the overflow row until a row takes it, so that
 * readers fold it), and move to the header with the periodic flush. The
 * pending sums are in shared memory, so readers add them to the slots:
 * nothing is missing when the program stops, whatever thread held them.
 * The peaks are taken when the sums move (the highest pending value is
 * kept with them): exact for one thread, within one flush's calls
 * (MEMAGG_FLUSH of the thread's) for several. Threads that find no ways
 * left count through one cache (claimed alone), flushed on a change of
 * row or after MEMAGG_FLUSH calls, and without one use the atomics
 * directly. Readers see each counter at some moment; a row read while the
 * program runs may be off by the calls in flight (a sum moving counts
 * twice for an instant).
 *
 * Who reads: `ringtrace top` (another process, while the program runs),
 * `ringtrace report` (a copy, after). Readers treat every field as
 * untrusted: the header is validated (memagg_check) and a key is used only
 * once its slot's `key` is nonzero.
 */
#ifndef RINGTRACE_MEM_AGG_H
#define RINGTRACE_MEM_AGG_H

#include <stddef.h>
#include <stdint.h>

#define MEMAGG_MAGIC        UINT64_C(0x3147474147414d45) /* "EMAGAGG1" in LE */
#define MEMAGG_VERSION      1
#define MEMAGG_BITS_MIN     8
#define MEMAGG_BITS_MAX     20
#define MEMAGG_BITS_DEFAULT 14
#define MEMAGG_PROBES       64
#define MEMAGG_CACHES       1024
#define MEMAGG_FLUSH        256
#define MEMAGG_CACHE_NONE   UINT32_MAX

/* Keys: a call site (a user-space address, below 2^63), or a stack id of
 * the region's map with the top bit set. */
#define MEMAGG_KEY_STACK    (UINT64_C(1) << 63)
#define MEMAGG_KEY_OTHER    UINT64_C(1)

/*
 * Sampling (sample_mean != 0; docs/mem.md, "Sampling"). Two kinds of rows:
 *  - exact rows, keyed by call site (never by stack): every allocation
 *    made there, sampled or not: allocs, failed, req, usable, fams are
 *    exact; frees, live_*, peak_req, xcpu and mismatched stay 0 (the free
 *    of a block not sampled is not seen);
 *  - estimate rows, key | MEMAGG_KEY_EST (the key of the mode: the stack
 *    with --stacks, else the call site): the sampled blocks. allocs and
 *    frees count samples; req, usable, live_req, live_usable and peak_req
 *    are bytes already scaled (each sample of s bytes adds round(s w),
 *    w = 1 / (1 - exp(-s / sample_mean)), and its free takes the same
 *    back); est_allocs and est_frees are the sums of w, in 1/65536;
 *    xcpu and mismatched count samples.
 * The header's live_* and peak_* are estimates (the sum of the estimate
 * rows); unknown_frees stays 0 (a free of a block not sampled is not
 * unknown); untracked counts samples that found no room in the set of
 * sampled blocks: counted as allocated and freed at once, never alive.
 */
#define MEMAGG_KEY_EST      (UINT64_C(1) << 62)
#define MEMAGG_EST_UNIT     65536
#define MEMAGG_SAMPLE_FIXED_SEED 1u   /* the seed came from RINGTRACE_MEM_SAMPLE_SEED */

struct memagg_header {
	uint64_t magic;              /* MEMAGG_MAGIC */
	uint32_t version;            /* MEMAGG_VERSION */
	uint32_t header_size;        /* sizeof(struct memagg_header) */
	uint64_t total_size;         /* header + slots */
	uint32_t key_bits;           /* 2^key_bits slots */
	uint32_t slot_size;          /* sizeof(struct memagg_slot) */
	uint32_t by_stack;           /* 1: keys are stack ids where a stack was had */
	uint32_t pid;                /* the program, set when it attaches */
	uint64_t start_ns;           /* CLOCK_MONOTONIC at attach (the trace's clock) */
	uint64_t live_blocks_max;    /* capacity of the program's table of live blocks */
	uint64_t end_ns;             /* CLOCK_MONOTONIC when the recorder copied it */
	/* Written by every thread: own cache lines. With sampling, the live
	 * and peak figures are estimates, from the sampled blocks. */
	uint64_t live_req;           /* bytes requested, alive now */
	uint64_t live_usable;
	uint64_t peak_req;           /* highest live_req seen, and when */
	uint64_t peak_usable;        /* live_usable at that moment */
	uint64_t peak_ns;
	/* Set by the program at attach (RINGTRACE_MEM_SAMPLE): 0, every call
	 * counted; else the mean bytes between samples (below). */
	uint64_t sample_mean;
	uint64_t sample_seed;
	uint32_t sample_status;      /* 0, or EINVAL/ERANGE: the variable was refused, nothing counted */
	uint32_t sample_flags;       /* MEMAGG_SAMPLE_* */
	uint64_t untracked;          /* blocks that found no room in the live-block table */
	uint64_t unknown_frees;      /* frees of a block not known as alive */
	uint64_t keys_full;          /* calls counted in the overflow slot */
	uint32_t cache_cursor;       /* caches claimed (may pass MEMAGG_CACHES) */
	uint32_t held;               /* a followed process's own block: 1 once the
				      * recorder has it open (futex word) */
	/* Groups of caches that ended threads gave back, for the next
	 * threads (memagg.c, group_push): a stack, low 32 bits the first
	 * cache's index + 1 (0: empty), high 32 bits a tag. */
	uint64_t free_groups;
	uint64_t free_pushed;        /* groups given back, in all (a statistic) */
	uint64_t pad2[2];
};
_Static_assert(sizeof(struct memagg_header) == 192, "three cache lines");

struct memagg_slot {
	uint64_t key;                /* 0: free; claimed once by CAS */
	uint64_t fams;               /* bit per allocation family seen */
	uint64_t allocs;             /* successful allocations */
	uint64_t failed;             /* allocations that returned NULL */
	uint64_t frees;              /* blocks of this key freed (by anybody) */
	uint64_t req;                /* bytes requested, all allocations */
	uint64_t usable;             /* bytes usable, all allocations */
	uint64_t live_req;           /* bytes requested, alive now */
	uint64_t live_usable;
	uint64_t peak_req;           /* highest live_req of this key */
	uint64_t xcpu;               /* blocks freed on another CPU than allocated */
	uint64_t mismatched;         /* blocks freed by the wrong family */
	/* Estimate rows only (key & MEMAGG_KEY_EST): the weights of the
	 * samples, in units of 1/MEMAGG_EST_UNIT allocations. */
	uint64_t est_allocs;         /* allocations the samples stand for */
	uint64_t est_frees;          /* of which freed */
	uint64_t sampled_req;        /* bytes requested by the samples, unscaled */
	uint64_t pad;                /* (blocks alive: allocs - frees) */
};
_Static_assert(sizeof(struct memagg_slot) == 128, "two cache lines");

/*
 * A thread's pending sums for one slot and for the header (modular: the
 * live deltas may be "negative"). peak and gpeak: the highest value the
 * live delta reached since the last flush, as a signed number. Of a
 * thread's caches, only one has header sums (glive_*, gpeak); the others
 * keep them 0.
 */
struct memagg_cache {
	uint32_t slot;               /* MEMAGG_CACHE_NONE: nothing pending */
	uint32_t ops;                /* calls since the last flush */
	uint64_t fams;
	uint64_t allocs, failed, frees, req, usable;
	uint64_t live_req, live_usable;
	uint64_t xcpu, mismatched;
	int64_t peak;
	uint64_t glive_req, glive_usable;
	int64_t gpeak;
	uint64_t next;               /* in a free group's first cache: the next group (free_groups) */
};
_Static_assert(sizeof(struct memagg_cache) == 128, "two cache lines");

static inline size_t memagg_size(uint32_t bits)
{
	return sizeof(struct memagg_header) + (sizeof(struct memagg_slot) << bits) +
	       MEMAGG_CACHES * sizeof(struct memagg_cache);
}

static inline struct memagg_cache *memagg_caches(const void *mem, uint32_t bits)
{
	return (struct memagg_cache *)((char *)mem + sizeof(struct memagg_header) +
				       (sizeof(struct memagg_slot) << bits));
}

/* Lay a block out (zero-filled, at least memagg_size(bits) bytes). */
static inline int memagg_init(void *mem, size_t size, uint32_t bits, uint32_t by_stack)
{
	if (bits < MEMAGG_BITS_MIN || bits > MEMAGG_BITS_MAX || size < memagg_size(bits))
		return -22; /* -EINVAL */
	struct memagg_header *h = (struct memagg_header *)mem;
	h->version = MEMAGG_VERSION;
	h->header_size = sizeof(*h);
	h->total_size = memagg_size(bits);
	h->key_bits = bits;
	h->slot_size = sizeof(struct memagg_slot);
	h->by_stack = by_stack;
	((struct memagg_slot *)(h + 1))[0].key = MEMAGG_KEY_OTHER;
	__atomic_store_n(&h->magic, MEMAGG_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* The slots of a block of SIZE bytes from anywhere, or NULL if its header
 * does not describe a block of this version that fits in SIZE. */
static inline struct memagg_slot *memagg_check(const void *mem, size_t size, uint32_t *ret_nslots)
{
	const struct memagg_header *h = (const struct memagg_header *)mem;
	if (!mem || size < sizeof(*h) || __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != MEMAGG_MAGIC ||
	    h->version != MEMAGG_VERSION || h->header_size != sizeof(*h) ||
	    h->slot_size != sizeof(struct memagg_slot) || h->key_bits < MEMAGG_BITS_MIN ||
	    h->key_bits > MEMAGG_BITS_MAX || h->total_size != memagg_size(h->key_bits) ||
	    size < memagg_size(h->key_bits))
		return NULL;
	*ret_nslots = 1u << h->key_bits;
	return (struct memagg_slot *)(h + 1);
}

/*
 * For readers, on their own copy of a block (validated by memagg_check):
 * add the threads' pending sums to the slots and the header, and empty
 * the caches. A peak that was still pending is dated end_ns.
 */
static inline void memagg_fold(void *mem)
{
	struct memagg_header *h = (struct memagg_header *)mem;
	struct memagg_slot *slot = (struct memagg_slot *)(h + 1);
	uint32_t n = 1u << h->key_bits;
	struct memagg_cache *c = memagg_caches(mem, h->key_bits);
	uint32_t nc = h->cache_cursor < MEMAGG_CACHES ? h->cache_cursor : MEMAGG_CACHES;
	for (uint32_t i = 0; i < nc; i++, c++) {
		if (c->slot >= n)
			continue;
		struct memagg_slot *s = &slot[c->slot];
		s->fams |= c->fams;
		s->allocs += c->allocs;
		s->failed += c->failed;
		s->frees += c->frees;
		s->req += c->req;
		s->usable += c->usable;
		s->live_usable += c->live_usable;
		s->xcpu += c->xcpu;
		s->mismatched += c->mismatched;
		if (c->peak > 0 && s->live_req + (uint64_t)c->peak > s->peak_req)
			s->peak_req = s->live_req + (uint64_t)c->peak;
		s->live_req += c->live_req;
		h->live_usable += c->glive_usable;
		if (c->gpeak > 0 && h->live_req + (uint64_t)c->gpeak > h->peak_req) {
			h->peak_req = h->live_req + (uint64_t)c->gpeak;
			h->peak_usable = h->live_usable;
			h->peak_ns = h->end_ns;
		}
		h->live_req += c->glive_req;
		c->slot = MEMAGG_CACHE_NONE;
	}
}

#endif /* RINGTRACE_MEM_AGG_H */
