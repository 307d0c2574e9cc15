/*
 * stackmap.c - the lock-free stack map: layout, validation, get_id, reset,
 * counters and iteration (the protocol is in docs/stackmap.md).
 *
 * stackmap_get_id() runs inside the traced program on every event that
 * carries a stack, from any thread and from signal handlers: it never
 * locks, allocates, blocks or calls the kernel, and takes a bounded number
 * of steps. It is tuned for hits (a stack seen before): one hash, a probe
 * or two in a table kept at most half full, one compare, three LOCKed
 * instructions. Everything else (init, open, reset, stat, iteration) runs
 * rarely, in the program or in another process mapping the same memory,
 * and treats the memory as untrusted: indexes and depths read from it are
 * bounds-checked before use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stackmap/stackmap.h"

_Static_assert(sizeof(struct stackmap_header) == 192, "header layout");
_Static_assert(offsetof(struct stackmap_header, resetting) == 72, "header layout");
_Static_assert(offsetof(struct stackmap_header, cursor) == 128, "cursor on its own line");
_Static_assert(sizeof(struct stackmap_cpu) == 64, "one cache line per CPU");
_Static_assert(sizeof(struct stackmap_slot) == 8, "slot layout");
_Static_assert(sizeof(struct stackmap_elem) == 576, "element layout");
_Static_assert(offsetof(struct stackmap_elem, ref) == 520, "element layout");

#define LINE 64u

/* Constants of the hash: the golden ratio and SplitMix64's multipliers
 * (odd, with well spread bits). */
#define K0 UINT64_C(0x9E3779B97F4A7C15)
#define K1 UINT64_C(0xBF58476D1CE4E5B9)
#define K2 UINT64_C(0x94D049BB133111EB)

struct layout {
	uint64_t cpu_off, table_off, pool_off, total;
};

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static int compute_layout(uint32_t bits, uint32_t ncpus, struct layout *l)
{
	if (bits < STACKMAP_BITS_MIN || bits > STACKMAP_BITS_MAX || ncpus == 0 ||
	    ncpus > STACKMAP_MAX_CPUS)
		return -EINVAL;
	uint64_t slots = UINT64_C(2) << bits;
	l->cpu_off = sizeof(struct stackmap_header);
	l->table_off = align_up(l->cpu_off + (uint64_t)ncpus * sizeof(struct stackmap_cpu), LINE);
	l->pool_off = align_up(l->table_off + slots * sizeof(struct stackmap_slot), LINE);
	l->total = l->pool_off + (UINT64_C(1) << bits) * sizeof(struct stackmap_elem);
	return 0;
}

size_t stackmap_size(uint32_t bits, uint32_t ncpus)
{
	struct layout l;
	if (compute_layout(bits ? bits : STACKMAP_BITS_DEFAULT, ncpus, &l) < 0)
		return 0;
	return (size_t)l.total;
}

int stackmap_init(void *mem, size_t size, uint32_t bits, uint32_t ncpus, uint64_t seed)
{
	struct layout l;
	if (!bits)
		bits = STACKMAP_BITS_DEFAULT;
	if (!mem || ((uintptr_t)mem & (LINE - 1)) || compute_layout(bits, ncpus, &l) < 0 ||
	    size < l.total)
		return -EINVAL;
	struct stackmap_header *h = mem;
	memset(h, 0, sizeof(*h));
	h->magic = STACKMAP_MAGIC;
	h->version = STACKMAP_VERSION;
	h->header_size = sizeof(*h);
	h->total_size = l.total;
	h->seed = seed;
	h->bits = bits;
	h->ncpus = ncpus;
	h->max_depth = STACKMAP_MAX_DEPTH;
	h->elem_size = sizeof(struct stackmap_elem);
	h->cpu_off = l.cpu_off;
	h->table_off = l.table_off;
	h->pool_off = l.pool_off;
	return 0;
}

int stackmap_open(void *mem, size_t size, struct stackmap *ret_map)
{
	const struct stackmap_header *h = mem;
	struct layout l;

	if (!mem || !ret_map || ((uintptr_t)mem & (LINE - 1)))
		return -EINVAL;
	if (size < sizeof(*h) || h->magic != STACKMAP_MAGIC)
		return -EBADMSG;
	if (h->version != STACKMAP_VERSION || h->header_size != sizeof(*h))
		return -EPROTO;
	/* Recompute the layout from the two free parameters and require every
	 * stored size and offset to match it: nothing else is trusted. */
	if (compute_layout(h->bits, h->ncpus, &l) < 0)
		return -EBADMSG;
	if (h->total_size != l.total || size < l.total || h->cpu_off != l.cpu_off ||
	    h->table_off != l.table_off || h->pool_off != l.pool_off ||
	    h->max_depth != STACKMAP_MAX_DEPTH || h->elem_size != sizeof(struct stackmap_elem))
		return -EBADMSG;
	/* Live words: a flag is 0 or 1, and the cursor never passes the table
	 * size (one fetch-add per claimed slot per epoch). Relaxed loads,
	 * partners: the CAS and stores of reset, the cursor fetch-add of
	 * insert(); they may change under us, only their range is checked. */
	uint32_t flag = __atomic_load_n(&h->resetting, __ATOMIC_RELAXED);
	uint64_t cursor = __atomic_load_n(&h->cursor, __ATOMIC_RELAXED);
	if (flag > 1 || cursor > (UINT64_C(2) << h->bits))
		return -EBADMSG;

	char *base = mem;
	ret_map->hdr = mem;
	ret_map->cpu = (struct stackmap_cpu *)(base + l.cpu_off);
	ret_map->table = (struct stackmap_slot *)(base + l.table_off);
	ret_map->pool = (struct stackmap_elem *)(base + l.pool_off);
	ret_map->seed = h->seed;
	ret_map->mask = (UINT32_C(2) << h->bits) - 1;
	ret_map->max = UINT32_C(1) << h->bits;
	ret_map->ncpus = h->ncpus;
	ret_map->bits = h->bits;
	return 0;
}

/* ---- hashing --------------------------------------------------------------- */

/*
 * Frames are hashed in pairs: the product of the first frame (mixed with a
 * constant that depends on its position) and the second (mixed with the
 * seed), summed. Products are independent of each other, so the multiplies
 * overlap in the pipeline instead of forming one chain, and two
 * accumulators halve the chain of additions: 16 frames cost about as much
 * as one multiply chain of three. The low bits of a product depend only on
 * the low bits of its factors, so the finish folds the high half of the
 * sum down before the last multiply, whose high half is the hash: every
 * bit of every frame reaches every bit of the key (the table index uses the
 * low bits). A sum of 0 (seed 0, no frames) hashes to 0.
 */
static inline uint32_t hash_inline(uint64_t seed, const uint64_t *ips, uint32_t depth)
{
	uint64_t a0 = seed + depth * K0, a1 = 0;
	uint64_t lane = seed ^ K1;
	uint64_t odd = (seed ^ K2) | 1;
	const uint64_t *p = ips, *end4 = ips + (depth & ~3u), *end = ips + depth;
	for (; p != end4; p += 4, lane += 2 * K0) {
		a0 += (p[0] ^ lane) * (p[1] ^ odd);
		a1 += (p[2] ^ (lane + K0)) * (p[3] ^ odd);
	}
	for (; p != end; p++, lane += K0)
		a0 += (p[0] ^ lane) * odd;
	uint64_t h = a0 + a1;
	h ^= h >> 29;
	return (uint32_t)((h * K2) >> 32);
}

uint32_t stackmap_hash(uint64_t seed, const uint64_t *ips, uint32_t depth)
{
	return hash_inline(seed, ips, depth);
}

uint32_t stackmap_key(uint64_t seed, const uint64_t *ips, uint32_t depth)
{
	uint32_t h = hash_inline(seed, ips, depth);
	return h ? h : 1;
}

/* ---- get_id ----------------------------------------------------------------- */

/*
 * Four frames per step, in two 16-byte vectors (GNU vector extension: SSE2
 * on x86-64, NEON on arm64), without early exit: a hit compares every frame
 * anyway, and a mismatch after a key match is rare.
 */
typedef uint64_t v2u64 __attribute__((vector_size(16)));

static inline v2u64 load2(const uint64_t *p)
{
	v2u64 v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline int same_frames(const uint64_t *a, const uint64_t *b, uint32_t n)
{
	v2u64 d = { 0, 0 }, e = { 0, 0 };
	uint32_t i = 0;
	for (; i + 4 <= n; i += 4) {
		d |= load2(a + i) ^ load2(b + i);
		e |= load2(a + i + 2) ^ load2(b + i + 2);
	}
	d |= e;
	uint64_t diff = d[0] | d[1];
	for (; i < n; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

/* We own slot s (our CAS moved its key from 0): take an element, fill it,
 * publish it. */
static int insert(struct stackmap *map, struct stackmap_slot *s, const uint64_t *ips,
		  uint32_t depth, uint32_t *ret_id)
{
	/* Relaxed: the cursor only hands out distinct indexes; what orders the
	 * element's contents is the release store of s->elem below. */
	uint64_t idx = __atomic_fetch_add(&map->hdr->cursor, 1, __ATOMIC_RELAXED);
	if (idx >= map->max)
		return -ENOSPC; /* the slot stays claimed but empty, for good */
	struct stackmap_elem *e = &map->pool[idx];
	e->depth = depth;
	if (depth)
		memcpy(e->ips, ips, (size_t)depth * sizeof(ips[0]));
	e->ref = 1;
	/* Release, partner: the acquire load of `ready` in read_elem(): a
	 * reader walking the pool sees the frames complete. */
	__atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
	/* Release, partner: the acquire load of s->elem in find_or_insert():
	 * a caller that finds the index sees depth, frames and ref. */
	__atomic_store_n(&s->elem, (uint32_t)idx + 1, __ATOMIC_RELEASE);
	*ret_id = (uint32_t)idx + 1;
	return 1;
}

/*
 * Linear probing from key & mask. Slots are never freed within an epoch,
 * so the first free slot ends the search: a copy of the stack further on
 * would have been inserted by a call that found this slot taken.
 */
static int find_or_insert(struct stackmap *map, uint32_t key, const uint64_t *ips, uint32_t depth,
			  uint32_t *ret_id)
{
	for (uint32_t i = 0; i < STACKMAP_MAX_PROBES; i++) {
		struct stackmap_slot *s = &map->table[(key + i) & map->mask];
		/* Relaxed: a key carries no data; the element behind it is
		 * ordered by s->elem (acquire below). */
		uint32_t k = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
		if (k == 0) {
			/* Pool exhausted: do not claim a slot that could never
			 * be filled (it would lengthen every later probe). A
			 * racing call may still claim one; it stays empty.
			 * Relaxed, partner: the fetch-add in insert(); a stale
			 * value only means that insert() finds out instead. */
			if (__atomic_load_n(&map->hdr->cursor, __ATOMIC_RELAXED) >= map->max)
				return -ENOSPC;
			/* Partner: the CAS of any other call on this slot;
			 * exactly one moves it from 0. On failure k holds the
			 * winner's key, examined below like any taken slot. */
			if (__atomic_compare_exchange_n(&s->key, &k, key, 0, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
				return insert(map, s, ips, depth, ret_id);
		}
		if (k != key)
			continue;
		/* Acquire, partner: the release store of s->elem in insert(). */
		uint32_t id = __atomic_load_n(&s->elem, __ATOMIC_ACQUIRE);
		if (id == 0 || id > map->max)
			continue; /* being filled, never filled, or damaged */
		struct stackmap_elem *e = &map->pool[id - 1];
		if (e->depth != depth || !same_frames(e->ips, ips, depth))
			continue; /* another stack with the same key */
		/* Relaxed: a count, read by nobody on this path. */
		__atomic_fetch_add(&e->ref, 1, __ATOMIC_RELAXED);
		*ret_id = id;
		return 0;
	}
	return -ENOSPC;
}

int stackmap_get_id(struct stackmap *map, const uint64_t *ips, uint32_t depth, uint32_t cpu,
		    uint32_t *ret_id)
{
	if (!map || !ret_id || depth > STACKMAP_MAX_DEPTH || (depth && !ips))
		return -EINVAL;
	if (cpu >= map->ncpus)
		cpu %= map->ncpus;
	struct stackmap_cpu *c = &map->cpu[cpu];
	int r;
	/* Before entering: the key depends only on the caller's frames and the
	 * seed of our view, and the multiplies then overlap with the LOCKed
	 * increment below instead of waiting behind it. */
	uint32_t key = hash_inline(map->seed, ips, depth);
	key = key ? key : 1;

	/* Seq_cst, partner: the seq_cst CAS of `resetting` and the seq_cst
	 * loads of entries/exits in stackmap_reset() (Dekker): either this
	 * call sees the flag, or reset sees this call in flight and waits. */
	__atomic_fetch_add(&c->entries, 1, __ATOMIC_SEQ_CST);
	/* Seq_cst (acquire part), partner: also the release store that clears
	 * the flag: a call that sees 0 sees the table reset left behind. */
	if (__atomic_load_n(&map->hdr->resetting, __ATOMIC_SEQ_CST)) {
		r = -EAGAIN;
		goto drop;
	}
	r = find_or_insert(map, key, ips, depth, ret_id);
	if (r < 0)
		goto drop;
	/* Release, partner: the seq_cst load of exits in stackmap_reset():
	 * once reset sees this exit, our table and pool accesses are done. */
	__atomic_fetch_add(&c->exits, 1, __ATOMIC_RELEASE);
	return r;
drop:
	/* Before the exit, so that a reset that sees no call in flight sees
	 * every drop of the calls that left (its baseline is exact). Relaxed,
	 * partner: the loads of quiet_snapshot() and cpu_counts(), ordered
	 * after it by the release of the exit increment. */
	__atomic_fetch_add(&c->drops, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->exits, 1, __ATOMIC_RELEASE); /* partner: as above */
	return r;
}

/* ---- reset ------------------------------------------------------------------ */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * Read a CPU's counters at a moment when no call was in flight on it: exits
 * at t1 == entries at t3 > t1 means every call that entered before t3 had
 * left by t1, so drops (read at t2) counts exactly the failures among them.
 * 1 on success, 0 if a call was in flight.
 */
static int quiet_snapshot(struct stackmap_cpu *c, uint64_t *ret_exits, uint64_t *ret_drops)
{
	/* Seq_cst loads, partners: the seq_cst entry increment and the release
	 * exit increment of stackmap_get_id(). */
	uint64_t x = __atomic_load_n(&c->exits, __ATOMIC_SEQ_CST);
	uint64_t d = __atomic_load_n(&c->drops, __ATOMIC_RELAXED);
	uint64_t n = __atomic_load_n(&c->entries, __ATOMIC_SEQ_CST);
	if (n != x)
		return 0;
	*ret_exits = x;
	*ret_drops = d;
	return 1;
}

int stackmap_reset_timeout(struct stackmap *map, int tracing_on, unsigned timeout_ms)
{
	if (!map)
		return -EINVAL;
	if (tracing_on)
		return -EBUSY;
	struct stackmap_header *h = map->hdr;
	uint32_t expect = 0;
	/* Seq_cst, partners: another reset's CAS (one wins) and, for the
	 * calls, the Dekker pair described in stackmap_get_id(). */
	if (!__atomic_compare_exchange_n(&h->resetting, &expect, 1, 0, __ATOMIC_SEQ_CST,
					 __ATOMIC_RELAXED))
		return -EBUSY;

	/* Drain: wait until no call that may have missed the flag is in
	 * flight. Calls arriving now fail fast and do not touch the map. */
	uint64_t deadline = now_ms() + timeout_ms;
	for (uint32_t cpu = 0; cpu < map->ncpus; cpu++) {
		uint64_t x, d;
		while (!quiet_snapshot(&map->cpu[cpu], &x, &d)) {
			if (now_ms() >= deadline) {
				/* Release, partner: the calls' flag load; nothing
				 * was changed. */
				__atomic_store_n(&h->resetting, 0, __ATOMIC_RELEASE);
				return -ETIMEDOUT;
			}
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
		}
	}

	/* Nobody reads or writes the table or the pool now (readers of the
	 * exports are told not to run during a reset): plain stores. Only the
	 * elements handed out are cleared, so untouched pool pages stay
	 * unallocated. */
	/* Relaxed: every fetch-add of the cursor happened before the exits the
	 * drain saw (acquire), and no call can move it now. */
	uint64_t used = __atomic_load_n(&h->cursor, __ATOMIC_RELAXED);
	if (used > map->max)
		used = map->max;
	memset(map->table, 0, ((size_t)map->mask + 1) * sizeof(map->table[0]));
	memset(map->pool, 0, (size_t)used * sizeof(map->pool[0]));
	/* Relaxed: published to the next calls by the release that reopens. */
	__atomic_store_n(&h->cursor, 0, __ATOMIC_RELAXED);

	/* New baselines. Only failing calls can run on a CPU since its drain,
	 * and each adds one to both exits and drops, so exits - drops is what
	 * the drain saw; a call stopped inside get_id since then would make the
	 * snapshot wait forever: after a few tries take the counters as they
	 * are (off by that one call at most). */
	for (uint32_t cpu = 0; cpu < map->ncpus; cpu++) {
		struct stackmap_cpu *c = &map->cpu[cpu];
		uint64_t x = 0, d = 0;
		int tries = 0;
		while (!quiet_snapshot(c, &x, &d) && ++tries < 1000)
			;
		if (tries == 1000) {
			/* Relaxed, partner: the increments of the stopped call;
			 * the numbers may be off by it, nothing else. */
			d = __atomic_load_n(&c->drops, __ATOMIC_RELAXED);
			x = __atomic_load_n(&c->exits, __ATOMIC_RELAXED);
		}
		/* Atomic only because stackmap_stat() may read them meanwhile
		 * (partner: its relaxed loads in cpu_counts()). */
		__atomic_store_n(&c->base_succ, x - d, __ATOMIC_RELAXED);
		__atomic_store_n(&c->base_drops, d, __ATOMIC_RELAXED);
	}

	/* Release, partner: the seq_cst (acquire) flag load of every call: a
	 * call that sees the map open sees it empty. */
	__atomic_store_n(&h->resetting, 0, __ATOMIC_RELEASE);
	return 0;
}

int stackmap_reset(struct stackmap *map, int tracing_on)
{
	return stackmap_reset_timeout(map, tracing_on, STACKMAP_RESET_TIMEOUT_MS);
}

/* ---- counters --------------------------------------------------------------- */

/* A difference of counters that may be read mid-update: clamp at 0 instead
 * of wrapping to a huge number. */
static uint64_t diff0(uint64_t a, uint64_t b)
{
	return a >= b ? a - b : 0;
}

static void cpu_counts(const struct stackmap_cpu *c, uint64_t *succ, uint64_t *drops)
{
	/* Acquire, partner: the release exit increment (not needed for the
	 * numbers themselves, but a reader that then walks the pool sees at
	 * least the stacks these calls published). */
	uint64_t x = __atomic_load_n(&c->exits, __ATOMIC_ACQUIRE);
	uint64_t d = __atomic_load_n(&c->drops, __ATOMIC_RELAXED);
	uint64_t bs = __atomic_load_n(&c->base_succ, __ATOMIC_RELAXED);
	uint64_t bd = __atomic_load_n(&c->base_drops, __ATOMIC_RELAXED);
	*succ = diff0(diff0(x, d), bs);
	*drops = diff0(d, bd);
}

int stackmap_cpu_stat(const struct stackmap *map, uint32_t cpu, uint64_t *ret_successes,
		      uint64_t *ret_drops)
{
	if (!map || cpu >= map->ncpus)
		return -EINVAL;
	uint64_t s, d;
	cpu_counts(&map->cpu[cpu], &s, &d);
	if (ret_successes)
		*ret_successes = s;
	if (ret_drops)
		*ret_drops = d;
	return 0;
}

/* Sums of counters read from shared memory saturate: a damaged block must
 * not make the stat wrap to small numbers. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

int stackmap_stat(const struct stackmap *map, struct stackmap_stat *ret)
{
	if (!map || !ret)
		return -EINVAL;
	struct stackmap_stat st = { 0 };
	for (uint32_t cpu = 0; cpu < map->ncpus; cpu++) {
		uint64_t s, d;
		cpu_counts(&map->cpu[cpu], &s, &d);
		st.successes = sat_add(st.successes, s);
		st.drops = sat_add(st.drops, d);
	}
	/* Relaxed, partner: the fetch-add in insert(); a count. */
	uint64_t used = __atomic_load_n(&map->hdr->cursor, __ATOMIC_RELAXED);
	st.max_entries = map->max;
	st.entries = used < map->max ? used : map->max;
	st.table_size = (uint64_t)map->mask + 1;
	uint64_t calls = sat_add(st.successes, st.drops);
	/* Exact below 2^64 / 100 successes (5800 years at a billion calls a
	 * second); beyond (damaged counters), within a percent. */
	if (calls == 0)
		st.success_rate = 0;
	else if (st.successes <= UINT64_MAX / 100)
		st.success_rate = (uint32_t)(st.successes * 100 / calls);
	else
		st.success_rate = (uint32_t)(st.successes / (calls / 100) > 100
						     ? 100
						     : st.successes / (calls / 100));
	*ret = st;
	return 0;
}

/* ---- readers ---------------------------------------------------------------- */

/* Copy element idx if it is published and sane. */
static int read_elem(const struct stackmap *map, uint32_t idx, struct stackmap_stack *ret)
{
	const struct stackmap_elem *e = &map->pool[idx];
	/* Acquire, partner: the release store of `ready` in insert(). */
	if (!__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE))
		return 0;
	/* Read once: another process may scribble over the block, and the
	 * bound checked must be the bound used. */
	uint32_t depth = __atomic_load_n(&e->depth, __ATOMIC_RELAXED);
	if (depth > STACKMAP_MAX_DEPTH)
		return 0;
	ret->id = idx + 1;
	ret->depth = depth;
	/* Relaxed, partner: the fetch-adds of hits; any recent value will do. */
	ret->ref = __atomic_load_n(&e->ref, __ATOMIC_RELAXED);
	if (depth)
		memcpy(ret->ips, e->ips, (size_t)depth * sizeof(e->ips[0]));
	return 1;
}

/* Elements handed out so far. Relaxed, partner: the fetch-add in insert();
 * an element counted here but not filled yet is skipped by its `ready`. */
static uint32_t used_elems(const struct stackmap *map)
{
	uint64_t used = __atomic_load_n(&map->hdr->cursor, __ATOMIC_RELAXED);
	return used < map->max ? (uint32_t)used : map->max;
}

static int resetting(const struct stackmap *map)
{
	/* Acquire, partner: the release store that ends a reset. */
	return __atomic_load_n(&map->hdr->resetting, __ATOMIC_ACQUIRE) != 0;
}

int stackmap_for_each(const struct stackmap *map, stackmap_iter_fn fn, void *arg)
{
	if (!map || !fn)
		return -EINVAL;
	if (resetting(map))
		return -EBUSY;
	uint32_t n = used_elems(map);
	struct stackmap_stack s;
	for (uint32_t i = 0; i < n; i++) {
		if (!read_elem(map, i, &s))
			continue;
		int r = fn(arg, &s);
		if (r)
			return r;
	}
	return 0;
}

int stackmap_lookup(const struct stackmap *map, uint32_t id, struct stackmap_stack *ret)
{
	if (!map || !ret)
		return -EINVAL;
	if (id == 0 || id > used_elems(map) || !read_elem(map, id - 1, ret))
		return -ENOENT;
	return 0;
}

struct collect {
	struct stackmap_stack *v;
	size_t n, cap;
};

static int collect_one(void *arg, const struct stackmap_stack *s)
{
	struct collect *c = arg;
	if (c->n == c->cap)
		return 1; /* published after the array was sized: left out */
	c->v[c->n++] = *s;
	return 0;
}

int stackmap_collect(const struct stackmap *map, struct stackmap_stack **ret, size_t *ret_n)
{
	if (!map || !ret || !ret_n)
		return -EINVAL;
	/* The walk reads the cursor again: it can only have grown, and the
	 * walk stops at the capacity taken here. */
	struct collect c = { NULL, 0, used_elems(map) };
	c.v = malloc((c.cap ? c.cap : 1) * sizeof(*c.v));
	if (!c.v)
		return -ENOMEM;
	int r = stackmap_for_each(map, collect_one, &c);
	if (r < 0) {
		free(c.v);
		return r;
	}
	*ret = c.v;
	*ret_n = c.n;
	return 0;
}
