/*
 * memagg.c - the aggregate mode of the allocation tracer, inside the
 * traced program (part of libringtrace-malloc.so; layout in mem_agg.h).
 *
 * The recorder passes the counters' block as an inherited descriptor
 * (RINGTRACE_MEM_AGG=fd:N); memagg_attach() maps it at start-up. From then
 * on each allocation adds to the counters of its key (its stack, or its
 * call site) and each free subtracts from the counters of the key that
 * allocated the block. For that the library keeps a table of the live
 * blocks in its own memory: pointer -> (key slot, bytes requested, family
 * class, CPU). It is an open-addressed table with at most MEMAGG_PROBES
 * probes per operation, claimed and released with CAS (freed entries
 * become tombstones that later inserts reuse), sized once at start
 * (RINGTRACE_MEM_AGG_BLOCKS, default 2^22 entries, 64 MiB of address space
 * whose pages are touched only as blocks come): memory stays bounded
 * whatever the run time. A block that finds no entry is counted as
 * untracked (its free is then an unknown free), never waited for.
 *
 * The counters move through the thread's caches, its MEMAGG_WAYS ways
 * (mem_agg.h says why and how): a call is a CAS in the live-block table
 * and plain adds to memory only its thread writes, but when its row's way
 * held another row, or every MEMAGG_FLUSH calls of the thread, when the
 * sums go to the slots and the header with atomic adds.
 *
 * Nothing here allocates, locks, blocks or makes a system call after
 * attach. The wrappers call in with in_hook set, so a signal handler that
 * interrupts a call does not re-enter it (its allocations go untraced).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

#include "common/mix.h"
#include "mem/mem_agg.h"
#include "mem/mem_family.h"
#include "mem/memagg.h"
#include "mem/memsample.h"

struct memagg_header *memagg_hdr;
static int agg_fd = -1;              /* the block's descriptor, -1 if none */
static struct memagg_slot *slots;
static uint32_t slot_mask;
static uint64_t slot_seed;

/* Live blocks. key: the block's address, 0 free, LB_TOMB freed. info:
 * bits 0-19 key slot, 20-21 class, 22-31 CPU, 32-63 bytes requested
 * (saturated: a block of 4 GiB or more subtracts its usable size). */
struct live_blk {
	uint64_t key;
	uint64_t info;
};
#define LB_TOMB      UINT64_C(1)
#define LB_SLOT(i)   ((uint32_t)((i) & 0xfffff))
#define LB_CLASS(i)  ((unsigned)(((i) >> 20) & 3))
#define LB_CPU(i)    ((unsigned)(((i) >> 22) & 0x3ff))
#define LB_SIZE(i)   ((uint32_t)((i) >> 32))

static struct live_blk *live;
static uint64_t live_mask;

/*
 * The rows of stack keys, by stack id (the full mode with --stacks): 0
 * not known yet. A stack's row needs a look-up in the row table, a cache
 * miss per call when thousands of stacks take two cache lines each;
 * the ids are small and dense (the stack map's elements), and this array
 * of them stays in the caches. A slot keeps its key for the block's life,
 * so an entry never changes once set: threads that race set the same
 * value. Private memory, mapped at attach (address space reserved, pages
 * touched as ids come); NULL if that failed.
 */
#define ID_MEMO (UINT32_C(1) << 20)
static uint32_t *id_slot;

static struct memagg_cache *caches;
/* This thread's cache: -1 none claimed yet, -2 none left (atomics then). */
static __thread int32_t my_cache __attribute__((tls_model("initial-exec"))) = -1;


static int attach_fd(long fd);

/* A thread's flush when it ends, and its caches given back (fw_exit()). */
static pthread_key_t fw_key;
static int fw_key_ok;
static void fw_exit(void *v);

int memagg_attach(void)
{
	const char *env = getenv("RINGTRACE_MEM_AGG");
	if (!env || strncmp(env, "fd:", 3))
		return 0;
	char *end;
	long fd = strtol(env + 3, &end, 10);
	if (*end || fd < 0 || fd > 1 << 20)
		return -EINVAL;
	return attach_fd(fd);
}

static int attach_fd(long fd)
{
	char *end;
	struct stat st;
	if (fstat((int)fd, &st) < 0 || st.st_size < (off_t)sizeof(struct memagg_header))
		return -EINVAL;
	void *mem = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	if (mem == MAP_FAILED)
		return -errno;
	uint32_t n;
	struct memagg_slot *s = memagg_check(mem, (size_t)st.st_size, &n);
	if (!s) {
		munmap(mem, (size_t)st.st_size);
		return -EINVAL;
	}
	uint64_t blocks = UINT64_C(1) << 22;
	const char *b = getenv("RINGTRACE_MEM_AGG_BLOCKS");
	if (b) {
		unsigned long long v = strtoull(b, &end, 10);
		if (!*end && v >= 1024 && v <= (UINT64_C(1) << 30))
			blocks = v;
	}
	while (blocks & (blocks - 1))
		blocks &= blocks - 1;
	void *t = mmap(NULL, blocks * sizeof(struct live_blk), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t == MAP_FAILED) {
		munmap(mem, (size_t)st.st_size);
		return -ENOMEM;
	}
	live = t;
	live_mask = blocks - 1;
	t = mmap(NULL, ID_MEMO * sizeof(uint32_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	id_slot = t == MAP_FAILED ? NULL : t;
	slots = s;
	slot_mask = n - 1;
	caches = memagg_caches(mem, __builtin_ctz(n));
	slot_seed = rt_mix64((uint64_t)(uintptr_t)&slot_seed ^ (uint64_t)getpid());
	struct memagg_header *h = mem;
	h->live_blocks_max = blocks;
	h->start_ns = ringtrace__clock_monotonic();
	__atomic_store_n(&h->pid, (uint32_t)getpid(), __ATOMIC_RELAXED);
	/* The descriptor stays open: `ringtrace top` finds the block through
	 * /proc/PID/fd. Not inherited by programs this one executes. */
	fcntl((int)fd, F_SETFD, FD_CLOEXEC);
	agg_fd = (int)fd;
	/* Once per process (a forked child inherits the key). */
	if (!fw_key_ok && pthread_key_create(&fw_key, fw_exit) == 0)
		fw_key_ok = fw_key < 32;
	__atomic_store_n(&memagg_hdr, h, __ATOMIC_RELEASE);
	return 0;
}

/* The slot of KEY, claimed if new; the overflow slot 0 when 64 probes
 * find neither. */
static inline uint32_t slot_of(uint64_t key)
{
	uint32_t i = (uint32_t)rt_mix64(key ^ slot_seed) & slot_mask;
	for (int n = 0; n < MEMAGG_PROBES; n++, i = (i + 1) & slot_mask) {
		if (i == 0)
			continue;
		uint64_t k = __atomic_load_n(&slots[i].key, __ATOMIC_RELAXED);
		if (k == key)
			return i;
		if (k == 0) {
			if (__atomic_compare_exchange_n(&slots[i].key, &k, key, 0, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
				return i;
			if (k == key)
				return i;
		}
	}
	__atomic_fetch_add(&memagg_hdr->keys_full, 1, __ATOMIC_RELAXED);
	return 0;
}

/* The slot of KEY, by its stack id's memo when it has one. */
static inline uint32_t slot_memo(uint64_t key)
{
	uint64_t id = key & ~MEMAGG_KEY_STACK;
	if (!(key & MEMAGG_KEY_STACK) || id >= ID_MEMO || !id_slot)
		return slot_of(key);
	/* Relaxed: every thread stores the same value for an id. */
	uint32_t si = __atomic_load_n(&id_slot[id], __ATOMIC_RELAXED);
	if (__builtin_expect(si != 0, 1))
		return si;
	si = slot_of(key);
	/* Not kept for the overflow row: the key may find a row later. */
	if (si)
		__atomic_store_n(&id_slot[id], si, __ATOMIC_RELAXED);
	return si;
}

static inline void add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static inline void raise_to(uint64_t *p, uint64_t v)
{
	uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v > old && !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static inline unsigned cpu_now(void)
{
	int cpu = -1;
#if RINGTRACE__RSEQ
	if (__rseq_size)
		cpu = ringtrace__rseq_cpu();
#endif
	if (cpu < 0)
		cpu = sched_getcpu();
	return cpu < 0 ? 0 : (unsigned)cpu & 0x3ff;
}

/*
 * Where a block's entry starts. Not a scrambling hash: neighbouring blocks
 * get neighbouring entries, so the entries a program's heap uses share
 * cache lines and pages (a random spread over the table's 64 MiB cost a
 * cache and TLB miss per call). Each 64 MiB of address space (glibc's
 * thread arenas are aligned so) is moved by its own multiplier, or the
 * arenas of two threads would fall on the same entries.
 */
static inline uint64_t live_index(uint64_t p)
{
	return ((p >> 4) ^ ((p >> 26) * UINT64_C(0x9e3779b1))) & live_mask;
}

static void live_insert(uint64_t p, uint64_t info)
{
	uint64_t i = live_index(p);
	for (int n = 0; n < MEMAGG_PROBES; n++, i = (i + 1) & live_mask) {
		uint64_t k = __atomic_load_n(&live[i].key, __ATOMIC_RELAXED);
		if ((k == 0 || k == LB_TOMB) &&
		    __atomic_compare_exchange_n(&live[i].key, &k, p, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			/* Read only by the block's free, which the program
			 * orders after this allocation returned. */
			__atomic_store_n(&live[i].info, info, __ATOMIC_RELAXED);
			return;
		}
	}
	add(&memagg_hdr->untracked, 1);
}

/* Remove P from the live blocks: 1 and its info if it was there. */
static int live_take(uint64_t p, uint64_t *ret_info)
{
	uint64_t i = live_index(p);
	for (int n = 0; n < MEMAGG_PROBES; n++, i = (i + 1) & live_mask) {
		uint64_t k = __atomic_load_n(&live[i].key, __ATOMIC_RELAXED);
		if (k == 0)
			return 0;
		if (k == p) {
			*ret_info = __atomic_load_n(&live[i].info, __ATOMIC_RELAXED);
			/* Before the real free (the caller's order): the
			 * address cannot be handed out again before this. A
			 * plain store: only a free of this block writes an
			 * entry holding its address (two racing frees of it,
			 * the program's bug, may both count). */
			__atomic_store_n(&live[i].key, LB_TOMB, __ATOMIC_RELEASE);
			return 1;
		}
	}
	return 0;
}

/* Plain stores of the thread's own sums (relaxed atomics: readers in
 * another process see whole values). */
static inline void c_add(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

static inline void c_max(int64_t *p, uint64_t v)
{
	if ((int64_t)v > __atomic_load_n(p, __ATOMIC_RELAXED))
		__atomic_store_n(p, (int64_t)v, __ATOMIC_RELAXED);
}

/* Move the cache's sums of its row into the row's slot; empty them. */
static void flush_row(struct memagg_cache *c)
{
	uint32_t si = __atomic_load_n(&c->slot, __ATOMIC_RELAXED);
	if (si == MEMAGG_CACHE_NONE || si > slot_mask)
		return;
	struct memagg_slot *s = &slots[si];
	uint64_t fams = c->fams;
	if (fams & ~__atomic_load_n(&s->fams, __ATOMIC_RELAXED))
		__atomic_fetch_or(&s->fams, fams, __ATOMIC_RELAXED);
	uint64_t *from[] = { &c->allocs, &c->failed, &c->frees, &c->req, &c->usable, &c->live_usable, &c->xcpu,
			     &c->mismatched };
	uint64_t *to[] = { &s->allocs, &s->failed, &s->frees, &s->req, &s->usable, &s->live_usable, &s->xcpu,
			   &s->mismatched };
	for (unsigned i = 0; i < sizeof(from) / sizeof(from[0]); i++)
		if (*from[i])
			add(to[i], *from[i]);
	/* The live sums only when there are some: an exact row's way (no
	 * live figures) leaves them alone. */
	if (c->live_req || c->peak > 0) {
		uint64_t before = __atomic_fetch_add(&s->live_req, c->live_req, __ATOMIC_RELAXED);
		if (c->peak > 0)
			raise_to(&s->peak_req, before + (uint64_t)c->peak);
	}
	/* Readers add what is here to the slot: empty it field by field
	 * (one may see a sum in both places for an instant). */
	uint64_t *all[] = { &c->fams, &c->allocs, &c->failed, &c->frees, &c->req, &c->usable, &c->live_req,
			    &c->live_usable, &c->xcpu, &c->mismatched };
	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		__atomic_store_n(all[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->peak, 0, __ATOMIC_RELAXED);
}

/* Move the cache's sums of the whole heap into the header, taking the
 * heap's peak; empty them. Readers fold them only from a cache that
 * holds a row (memagg_fold): the caller's does. */
static void flush_heap(struct memagg_cache *c)
{
	struct memagg_header *h = memagg_hdr;
	if (c->glive_usable)
		add(&h->live_usable, c->glive_usable);
	/* As for a row: only when there is something to move or a peak. */
	if (c->glive_req || c->gpeak > 0) {
		uint64_t before = __atomic_fetch_add(&h->live_req, c->glive_req, __ATOMIC_RELAXED);
		if (c->gpeak > 0 && before + (uint64_t)c->gpeak > __atomic_load_n(&h->peak_req, __ATOMIC_RELAXED)) {
			/* A new peak of the heap, as of this flush (within
			 * MEMAGG_FLUSH calls of this thread of the moment):
			 * its time and the usable bytes with it. */
			raise_to(&h->peak_req, before + (uint64_t)c->gpeak);
			__atomic_store_n(&h->peak_usable, __atomic_load_n(&h->live_usable, __ATOMIC_RELAXED),
					 __ATOMIC_RELAXED);
			__atomic_store_n(&h->peak_ns, ringtrace__clock_monotonic(), __ATOMIC_RELAXED);
		}
	}
	__atomic_store_n(&c->glive_req, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->glive_usable, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->gpeak, 0, __ATOMIC_RELAXED);
}

/* Move all the cache's sums into its slot and the header; empty it. */
static __attribute__((noinline)) void flush(struct memagg_cache *c)
{
	uint32_t si = __atomic_load_n(&c->slot, __ATOMIC_RELAXED);
	if (si == MEMAGG_CACHE_NONE || si > slot_mask)
		return;
	flush_row(c);
	flush_heap(c);
	__atomic_store_n(&c->ops, 0, __ATOMIC_RELAXED);
}

/*
 * Groups of FW_CACHES caches, the unit a thread claims in either mode
 * (the full mode's ways and spare; the sampled mode's ways and one
 * unused), go back to the block when their thread ends (fw_exit(), after
 * its last flush) and are taken again by the next threads: a program that
 * starts and ends threads all its life keeps counting in caches instead
 * of running out of them after MEMAGG_CACHES / FW_CACHES threads and
 * counting every call with atomic adds. The free groups form a stack in
 * the header (free_groups: the first cache's index + 1, and a tag bumped
 * by every push and pop against ABA), linked through the first cache's
 * `next`. The block is shared: every access is atomic, and an index read
 * from it is checked before use.
 */
#define FW_CACHES (MEMAGG_WAYS + 1)

static void group_push(struct memagg_cache *g)
{
	uint64_t *head = &memagg_hdr->free_groups;
	uint32_t idx = (uint32_t)(g - caches);
	uint64_t old = __atomic_load_n(head, __ATOMIC_RELAXED), nv;
	do {
		/* Relaxed: published by the release CAS below. */
		__atomic_store_n(&g->next, (uint32_t)old, __ATOMIC_RELAXED);
		nv = (((old >> 32) + 1) << 32) | (idx + 1);
		/* Release, partner: the acquire CAS of group_pop(): the taker
		 * sees the link and the emptied sums. */
	} while (!__atomic_compare_exchange_n(head, &old, nv, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	__atomic_fetch_add(&memagg_hdr->free_pushed, 1, __ATOMIC_RELAXED);
}

static struct memagg_cache *group_pop(void)
{
	uint64_t *head = &memagg_hdr->free_groups;
	/* Acquire, partner: the release CAS of group_push(). */
	uint64_t old = __atomic_load_n(head, __ATOMIC_ACQUIRE), nv;
	do {
		uint32_t i = (uint32_t)old;
		if (i == 0 || i > MEMAGG_CACHES - FW_CACHES + 1)
			return NULL; /* empty (or damaged: claim from the cursor) */
		/* Relaxed: a link read from a group another thread popped
		 * meanwhile is stale, and then the tag makes the CAS fail. */
		uint32_t next = (uint32_t)__atomic_load_n(&caches[i - 1].next, __ATOMIC_RELAXED);
		nv = (((old >> 32) + 1) << 32) | next;
	} while (!__atomic_compare_exchange_n(head, &old, nv, 1, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE));
	return &caches[(uint32_t)old - 1];
}

/* N caches of the block claimed at once, each naming no row yet, or NULL
 * when the block has fewer left (the cursor may pass MEMAGG_CACHES); a
 * group (FW_CACHES) given back by an ended thread first. */
static struct memagg_cache *caches_claim(uint32_t n)
{
	struct memagg_cache *c = n == FW_CACHES ? group_pop() : NULL;
	if (!c) {
		uint32_t k = __atomic_fetch_add(&memagg_hdr->cache_cursor, n, __ATOMIC_RELAXED);
		if (k > MEMAGG_CACHES - n)
			return NULL;
		c = &caches[k];
	}
	for (uint32_t i = 0; i < n; i++) {
		__atomic_store_n(&c[i].slot, MEMAGG_CACHE_NONE, __ATOMIC_RELAXED);
		__atomic_store_n(&c[i].ops, 0, __ATOMIC_RELAXED);
	}
	return c;
}

/* The thread's cache, pointed at slot SI (its sums for another slot
 * flushed first), or NULL when it has none. */
static inline struct memagg_cache *cache_for(uint32_t si)
{
	int32_t i = my_cache;
	if (__builtin_expect(i < 0, 0)) {
		if (i == -2)
			return NULL;
		struct memagg_cache *c = caches_claim(1);
		if (!c) {
			my_cache = -2;
			return NULL;
		}
		my_cache = i = (int32_t)(c - caches);
	}
	struct memagg_cache *c = &caches[i];
	if (c->slot != si || c->ops >= MEMAGG_FLUSH) {
		flush(c);
		__atomic_store_n(&c->slot, si, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&c->ops, c->ops + 1, __ATOMIC_RELAXED);
	return c;
}

/* Where this call's sums go: the thread's cache, or *tmp, zeroed, when it
 * has none (then flushed by direct()). Zeroed only when used: clearing it
 * on every call cost a fifth of the instructions of a call. */
static inline struct memagg_cache *counters_for(uint32_t si, struct memagg_cache *tmp)
{
	struct memagg_cache *c = cache_for(si);
	if (c)
		return c;
	memset(tmp, 0, sizeof(*tmp));
	return tmp;
}

/* Without a cache: the same sums, straight into the slot and header. */
static void direct(struct memagg_cache *tmp, uint32_t si)
{
	tmp->slot = si;
	flush(tmp);
}

/* ---- the sampled mode's ways ------------------------------------------------
 *
 * MEMAGG_WAYS caches of a group claimed at once (caches_claim(), the
 * group's last cache unused); readers fold them as any cache. Each holds
 * the pending sums of one exact row (memagg_count), the row's way chosen
 * by the hash of its call site. The group goes back when the thread ends
 * (fw_exit()). Threads that find no group left (more than MEMAGG_CACHES /
 * FW_CACHES threads alive at once) count through one cache, or with
 * atomics.
 */
__thread struct memagg_cache *memagg_ways __attribute__((tls_model("initial-exec")));
__thread uint64_t memagg_way_site[MEMAGG_WAYS] __attribute__((tls_model("initial-exec"))) = {
	[0 ... MEMAGG_WAYS - 1] = MEMAGG_WAY_EMPTY
};
/* 1: the block had no group left for this thread, or it has ended. */
static __thread int ways_none __attribute__((tls_model("initial-exec")));
static __thread uint64_t memo_site __attribute__((tls_model("initial-exec")));
static __thread uint32_t memo_slot __attribute__((tls_model("initial-exec")));

static int ways_claim(void)
{
	/* A whole group (the last cache unused), so that an ended thread's
	 * ways go back as any group (caches_claim). */
	struct memagg_cache *c = caches_claim(FW_CACHES);
	if (!c) {
		ways_none = 1;
		return 0;
	}
	memagg_ways = c;
	if (fw_key_ok)
		pthread_setspecific(fw_key, (void *)1);
	return 1;
}

/* ---- the full mode's ways ---------------------------------------------------
 *
 * A thread of the full mode claims FW_CACHES caches at once (the cursor
 * moves by FW_CACHES): MEMAGG_WAYS ways, each holding the pending sums of
 * one row, the row's way chosen by the hash of its slot (a free knows only
 * its block's slot), and a spare. When a row takes a way, the way's cache
 * becomes the spare, its sums still pending, and the spare of before,
 * flushed, becomes the way: the sums of a row put out of its way move to
 * the row's slot only at the next such change, by when the prefetch of
 * the slot's lines issued now has brought them (a flush's LOCKed adds to
 * a slot not in the caches stalled the call for the whole miss: under
 * --stacks, thousands of rows of two lines each). A row's sums move to
 * its slot in the order they were counted (its peak is taken against the
 * slot's live figure): the spare is flushed before the ways at the
 * periodic flush, and a row can come back to its way only by putting
 * another row out, which flushes the spare first (this needs the spare
 * to be one).
 *
 * The thread's sums of the whole heap (glive_*, gpeak) stay in one cache,
 * fw_heap, whatever row it holds: the heap's peak is the highest of the
 * thread's whole live delta, not of a way's share. That cache names the
 * overflow row until a row takes it, as readers fold only a cache that
 * names a row. Every MEMAGG_FLUSH calls of the thread, all its caches
 * are flushed: the peaks are taken then, and a row a way keeps for long
 * does not wait for another to take its way. Threads that find no caches
 * left count through one cache, or with atomics (cache_for).
 */
static __thread struct memagg_cache *fw_way[MEMAGG_WAYS] __attribute__((tls_model("initial-exec")));
static __thread struct memagg_cache *fw_spare __attribute__((tls_model("initial-exec")));
static __thread struct memagg_cache *fw_heap __attribute__((tls_model("initial-exec"))); /* NULL: none yet */
static __thread int fw_none __attribute__((tls_model("initial-exec")));   /* 1: none left */
static __thread uint32_t fw_ops __attribute__((tls_model("initial-exec"))); /* calls since the flush */

/* Forget this thread's ways and memo (a forked child's new block). */
static void ways_reset(void)
{
	memagg_ways = NULL;
	ways_none = 0;
	memo_site = 0;
	memo_slot = 0;
	for (unsigned w = 0; w < MEMAGG_WAYS; w++)
		memagg_way_site[w] = MEMAGG_WAY_EMPTY;
	fw_heap = NULL;
	fw_none = 0;
	fw_ops = 0;
}

static int fw_claim(void)
{
	struct memagg_cache *c = caches_claim(FW_CACHES);
	if (!c) {
		fw_none = 1;
		return 0;
	}
	/* The heap's sums' cache names the overflow row (above). */
	__atomic_store_n(&c[0].slot, 0, __ATOMIC_RELAXED);
	for (unsigned w = 0; w < MEMAGG_WAYS; w++)
		fw_way[w] = &c[w];
	fw_spare = &c[MEMAGG_WAYS];
	fw_heap = &c[0];   /* also the group's first cache: what fw_exit() gives back */
	if (fw_key_ok)
		pthread_setspecific(fw_key, (void *)1);
	return 1;
}

/* The spare first, then the ways (above: in the order counted). */
static __attribute__((noinline)) void fw_flush(struct memagg_cache *heap)
{
	flush_row(fw_spare);
	for (unsigned w = 0; w < MEMAGG_WAYS; w++)
		flush_row(fw_way[w]);
	flush_heap(heap);
	fw_ops = 0;
}

/*
 * A thread that ends flushes its caches (a key's destructor, set when it
 * claims them): its sums would otherwise wait in them for the readers,
 * and the header's live figure, against which the other threads take the
 * heap's peak, would lack its last calls for the rest of the run (a
 * thread that allocated blocks that another frees took the heap below
 * zero). Then it gives its groups back (group_push()): the full mode's
 * and the sampled mode's ways, emptied. Only keys below 32 are used:
 * pthread_setspecific allocates for the others. The main thread's exit
 * ends the process: the readers fold what it left.
 */
static void fw_exit(void *v)
{
	(void)v;
	struct memagg_cache *heap = fw_heap, *ways = memagg_ways;
	/* memagg_hdr NULL: a forked child that does not count (the caches
	 * are its parent's). */
	if ((!heap && !ways) || !__atomic_load_n(&memagg_hdr, __ATOMIC_RELAXED))
		return;
	/* The thread's calls from here on (other libraries' thread-exit
	 * destructors free memory, and so may a signal handler) count with
	 * the atomics: not in the caches being flushed and given back, nor
	 * in a cache of their own that nobody would flush. */
	fw_none = 1;
	fw_heap = NULL;
	my_cache = -2;
	ways_none = 1;
	memagg_ways = NULL;
	for (unsigned w = 0; w < MEMAGG_WAYS; w++)
		memagg_way_site[w] = MEMAGG_WAY_EMPTY;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (heap) {
		fw_flush(heap);
		group_push(heap);   /* the group's first cache (fw_claim) */
	}
	if (ways) {
		for (unsigned w = 0; w < MEMAGG_WAYS; w++)
			flush_row(&ways[w]);
		group_push(ways);
	}
}

/* Row SI takes way K: the way's cache becomes the spare (its slot's lines
 * fetched for the flush to come), the spare, flushed, the way. */
static __attribute__((noinline)) struct memagg_cache *fw_take(unsigned k, uint32_t si)
{
	struct memagg_cache *c = fw_way[k], *v = fw_spare;
	flush_row(v);
	uint32_t old = __atomic_load_n(&c->slot, __ATOMIC_RELAXED);
	if (old <= slot_mask) {
		__builtin_prefetch(&slots[old], 1, 3);
		__builtin_prefetch((char *)&slots[old] + 64, 1, 3);
	}
	fw_spare = c;
	__atomic_store_n(&v->slot, si, __ATOMIC_RELAXED);
	fw_way[k] = v;
	return v;
}

/* The full mode's cache for row SI, or NULL when the thread has no ways. */
static inline struct memagg_cache *way_for(uint32_t si)
{
	if (__builtin_expect(!fw_heap, 0) && (fw_none || !fw_claim()))
		return NULL;
	if (__builtin_expect(++fw_ops > MEMAGG_FLUSH, 0))
		fw_flush(fw_heap);
	unsigned k = memagg_way_of(si);
	struct memagg_cache *c = fw_way[k];
	if (__builtin_expect(__atomic_load_n(&c->slot, __ATOMIC_RELAXED) == si, 1))
		return c;
	return fw_take(k, si);
}

/* Where this call's sums go: *ret_heap for the whole heap's, the return
 * for the row's (one cache, or *tmp zeroed, without ways). */
static inline struct memagg_cache *full_for(uint32_t si, struct memagg_cache *tmp, struct memagg_cache **ret_heap)
{
	struct memagg_cache *c = way_for(si);
	if (__builtin_expect(c != NULL, 1)) {
		*ret_heap = fw_heap;
		return c;
	}
	c = counters_for(si, tmp);
	*ret_heap = c;
	return c;
}

void memagg_alloc(unsigned fam, void *ptr, size_t size, size_t usable, uint64_t key)
{
	uint32_t si = slot_memo(key);
	struct memagg_cache tmp, *g, *c = full_for(si, &tmp, &g);
	if (!(c->fams & (UINT64_C(1) << (fam & 63))))
		c_add(&c->fams, UINT64_C(1) << (fam & 63));
	if (!ptr) {
		c_add(&c->failed, 1);
	} else {
		c_add(&c->allocs, 1);
		c_add(&c->req, size);
		c_add(&c->usable, usable);
		c_add(&c->live_req, size);
		c_add(&c->live_usable, usable);
		c_max(&c->peak, c->live_req);
		c_add(&g->glive_req, size);
		c_add(&g->glive_usable, usable);
		c_max(&g->gpeak, g->glive_req);
	}
	if (c == &tmp)
		direct(&tmp, si);
	if (!ptr)
		return;
	uint64_t info = (uint64_t)(size > UINT32_MAX ? UINT32_MAX : size) << 32 | (uint64_t)cpu_now() << 22 |
			(uint64_t)(mem_alloc_class(fam) & 3) << 20 | si;
	live_insert((uint64_t)(uintptr_t)ptr, info);
}

int memagg_take(void *ptr, struct memagg_blk *b)
{
	uint64_t info;
	if (!live_take((uint64_t)(uintptr_t)ptr, &info))
		return 0;
	b->info = info;
	return 1;
}

void memagg_put_back(void *ptr, const struct memagg_blk *b)
{
	live_insert((uint64_t)(uintptr_t)ptr, b->info);
}

void memagg_release(const struct memagg_blk *b, int free_class, size_t usable)
{
	uint32_t si = LB_SLOT(b->info) & slot_mask;
	uint64_t size = LB_SIZE(b->info) == UINT32_MAX ? usable : LB_SIZE(b->info);
	struct memagg_cache tmp, *g, *c = full_for(si, &tmp, &g);
	c_add(&c->frees, 1);
	c_add(&c->live_req, -size);
	c_add(&c->live_usable, -(uint64_t)usable);
	c_add(&g->glive_req, -size);
	c_add(&g->glive_usable, -(uint64_t)usable);
	if (free_class && (int)LB_CLASS(b->info) != free_class)
		c_add(&c->mismatched, 1);
	if (LB_CPU(b->info) != cpu_now())
		c_add(&c->xcpu, 1);
	if (c == &tmp)
		direct(&tmp, si);
}

void memagg_free(void *ptr, int free_class, size_t usable)
{
	struct memagg_blk b;
	if (memagg_take(ptr, &b))
		memagg_release(&b, free_class, usable);
	else
		add(&memagg_hdr->unknown_frees, 1);
}

/* ---- sampling (memsample.c; the rows are described in mem_agg.h) ---------- */

/*
 * The exact rows (memagg_count in memagg.h; the fast path is there), in
 * the thread's ways (above), the way chosen by the call site. A way keeps
 * its site's sums until another site takes it (its sums then flushed to
 * the row): no periodic flush, an exact row has no live figure or peak to
 * follow. Without ways, one cache or atomics, as in the full mode,
 * remembering the last site's row.
 */
void memagg_count_slow(unsigned fam, void *ptr, size_t size, size_t usable, uint64_t site)
{
	struct memagg_cache tmp, *c;
	uint32_t si;
	if (memagg_ways || (!ways_none && ways_claim())) {
		unsigned w = memagg_way_of(site);
		c = &memagg_ways[w];
		if (memagg_way_site[w] == site) {
			si = __atomic_load_n(&c->slot, __ATOMIC_RELAXED);
		} else {
			si = slot_of(site);
			if (__atomic_load_n(&c->slot, __ATOMIC_RELAXED) != si) {
				flush_row(c);   /* an exact row's way: no heap sums */
				__atomic_store_n(&c->slot, si, __ATOMIC_RELAXED);
			}
			/* Not held for the overflow row: a site that found no
			 * row may find one later (counted in keys_full each
			 * time, as in the full mode). */
			memagg_way_site[w] = si ? site : MEMAGG_WAY_EMPTY;
		}
	} else {
		si = memo_slot;
		if (site != memo_site || !si) {
			si = slot_of(site);
			memo_site = si ? site : 0;
			memo_slot = si;
		}
		c = counters_for(si, &tmp);
	}
	if (!(c->fams & (UINT64_C(1) << (fam & 63))))
		c_add(&c->fams, UINT64_C(1) << (fam & 63));
	if (!ptr) {
		c_add(&c->failed, 1);
	} else {
		c_add(&c->allocs, 1);
		c_add(&c->req, size);
		c_add(&c->usable, usable);
	}
	if (c == &tmp)
		direct(&tmp, si);
}

/* The scaled figures of a sample: bytes requested and usable, weight. */
struct est {
	uint64_t req, usable, w;
};

static struct est est_of(uint64_t size, uint64_t usable)
{
	double w = memsample_weight(size);
	return (struct est){ (uint64_t)((double)size * w + 0.5), (uint64_t)((double)usable * w + 0.5),
			     (uint64_t)(w * MEMAGG_EST_UNIT + 0.5) };
}

/* The live estimate of row S and of the heap move by D (modular); the
 * peaks follow. Samples are rare: atomics straight into the rows. */
static void est_live(struct memagg_slot *s, uint64_t d_req, uint64_t d_usable)
{
	struct memagg_header *h = memagg_hdr;
	uint64_t before = __atomic_fetch_add(&s->live_req, d_req, __ATOMIC_RELAXED);
	if ((int64_t)d_req > 0)
		raise_to(&s->peak_req, before + d_req);
	add(&s->live_usable, d_usable);
	add(&h->live_usable, d_usable);
	before = __atomic_fetch_add(&h->live_req, d_req, __ATOMIC_RELAXED);
	if ((int64_t)d_req > 0 && before + d_req > __atomic_load_n(&h->peak_req, __ATOMIC_RELAXED)) {
		raise_to(&h->peak_req, before + d_req);
		__atomic_store_n(&h->peak_usable, __atomic_load_n(&h->live_usable, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
		__atomic_store_n(&h->peak_ns, ringtrace__clock_monotonic(), __ATOMIC_RELAXED);
	}
}

uint64_t memagg_sample_alloc(unsigned fam, size_t size, size_t usable, uint64_t key, int alive)
{
	uint32_t si = slot_of(key | MEMAGG_KEY_EST);
	struct memagg_slot *s = &slots[si];
	struct est e = est_of(size, usable);
	if (!(__atomic_load_n(&s->fams, __ATOMIC_RELAXED) & (UINT64_C(1) << (fam & 63))))
		__atomic_fetch_or(&s->fams, UINT64_C(1) << (fam & 63), __ATOMIC_RELAXED);
	add(&s->allocs, 1);
	add(&s->req, e.req);
	add(&s->usable, e.usable);
	add(&s->est_allocs, e.w);
	add(&s->sampled_req, size);
	if (alive)
		est_live(s, e.req, e.usable);
	else
		add(&memagg_hdr->untracked, 1);
	return (uint64_t)(size > UINT32_MAX ? UINT32_MAX : size) << 32 | (uint64_t)cpu_now() << 22 |
	       (uint64_t)(mem_alloc_class(fam) & 3) << 20 | si;
}

void memagg_sample_free(uint64_t info, int free_class, size_t usable)
{
	uint32_t si = LB_SLOT(info) & slot_mask;
	struct memagg_slot *s = &slots[si];
	uint64_t size = LB_SIZE(info) == UINT32_MAX ? usable : LB_SIZE(info);
	struct est e = est_of(size, usable);
	add(&s->frees, 1);
	add(&s->est_frees, e.w);
	est_live(s, -e.req, -e.usable);
	if (free_class && (int)LB_CLASS(info) != free_class)
		add(&s->mismatched, 1);
	if (LB_CPU(info) != cpu_now())
		add(&s->xcpu, 1);
}

void memagg_sample_untracked(void)
{
	add(&memagg_hdr->untracked, 1);
}

/* ---- a followed process's own block ---------------------------------------
 *
 * Under --aggregate with --follow-fork/--follow-exec, a followed process
 * (a forked child, an exec'ed program) counts into a block of its own,
 * saved into its trace directory. It makes the block here (a memfd named
 * as the recorder names its own, laid out with the recorder's key bits
 * and key kind), maps it as memagg_attach() does, and waits until the
 * recorder, which looks for it through /proc/PID/fd once it has taken the
 * process's buffers (src/session/follow.c, follow_agg()), has it open:
 * `held` in the header, 1 s at most. Runs in a fork child handler or a
 * constructor, where only this thread runs the program's code.
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>


int memagg_own(uint32_t bits, uint32_t by_stack)
{
	size_t size = memagg_size(bits);
	int fd = (int)syscall(SYS_memfd_create, "ringtrace-memagg", (unsigned)MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	void *m = MAP_FAILED;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    (m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		int e = -errno;
		close(fd);
		return e;
	}
	int k = memagg_init(m, size, bits, by_stack);
	munmap(m, size);
	if (k < 0) {
		close(fd);
		return k;
	}
	/* The inherited table of live blocks and the thread's cache are the
	 * parent's: ours start empty. */
	if (live)
		munmap(live, (live_mask + 1) * sizeof(struct live_blk));
	live = NULL;
	/* The parent's rows of its stacks are not the new block's. */
	if (id_slot)
		munmap(id_slot, ID_MEMO * sizeof(uint32_t));
	id_slot = NULL;
	my_cache = -1;
	ways_reset();
	/* Under sampling, the sampled blocks inherited carry the parent's
	 * rows: their frees here would subtract from ours (the child's
	 * estimate of its heap went below zero). The parent's blocks are
	 * not the child's allocations: forgotten, as its live blocks. */
	memsample_forget_all();
	__atomic_store_n(&memagg_hdr, NULL, __ATOMIC_RELAXED);
	int old = agg_fd;
	k = attach_fd(fd);
	if (k < 0) {
		close(fd);
		return k;
	}
	/* The parent's block is not ours to keep open. */
	if (old >= 0 && old != fd)
		close(old);
	/* Pairs with the recorder's release store of `held` and its
	 * FUTEX_WAKE. */
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!__atomic_load_n(&memagg_hdr->held, __ATOMIC_ACQUIRE)) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t left = 1000000000 - ((int64_t)(now.tv_sec - t0.tv_sec) * 1000000000 + (now.tv_nsec - t0.tv_nsec));
		if (left <= 0)
			break;
		struct timespec ts = { (time_t)(left / 1000000000), (long)(left % 1000000000) };
		syscall(SYS_futex, &memagg_hdr->held, FUTEX_WAIT, 0, &ts, NULL, 0);
	}
	return 0;
}
