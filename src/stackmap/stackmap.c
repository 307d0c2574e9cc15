/*
 * stackmap.c - the lock-free stack map: layout, validation, get_id, reset,
 * counters and iteration (the protocol is in docs/stackmap.md).
 *
 * stackmap_get_id() runs inside the traced program on every event that
 * carries a stack, from any thread and from signal handlers: it never
 * locks, allocates, blocks or calls the kernel, and takes a bounded number
 * of steps. It is tuned for hits (a stack seen before): one hash, a probe
 * or two in a table kept at most half full, one compare, one LOCKed
 * instruction (the reference count); the calls in flight are counted per
 * CPU with restartable sequences where the kernel and libc provide them.
 * Everything else (init, open, reset, stat, iteration) runs
 * rarely, in the program or in another process mapping the same memory,
 * and treats the memory as untrusted: indexes and depths read from it are
 * bounds-checked before use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stackmap/stackmap.h"
#include "stackmap/stackmap_hit.h"

#if defined(__linux__) && defined(__has_include)
#  if __has_include(<linux/membarrier.h>)
#    include <linux/membarrier.h>
#    include <sys/syscall.h>
#    define STACKMAP_MEMBARRIER 1
#  endif
#endif
#ifndef STACKMAP_MEMBARRIER
#  define STACKMAP_MEMBARRIER 0
#endif

_Static_assert(sizeof(struct stackmap_header) == 192, "header layout");
_Static_assert(offsetof(struct stackmap_header, resetting) == 72, "header layout");
_Static_assert(offsetof(struct stackmap_header, percpu) == 76, "header layout");
_Static_assert(offsetof(struct stackmap_header, cursor) == 128, "cursor on its own line");
_Static_assert(sizeof(struct stackmap_cpu) == 192, "three cache lines per CPU");
_Static_assert(offsetof(struct stackmap_cpu, hit) == 64 && sizeof(struct stackmap_hit) == 16, "hits on their own lines");
_Static_assert(sizeof(struct stackmap_slot) == 8, "slot layout");
_Static_assert(sizeof(struct stackmap_elem) == 576, "element layout");
_Static_assert(offsetof(struct stackmap_elem, ref) == 8, "element layout");
_Static_assert(offsetof(struct stackmap_elem, ips) == 64, "frames on their own lines");
_Static_assert(STACKMAP_SLOT_ID(UINT32_C(2) << STACKMAP_BITS_MAX) == UINT32_C(2) << STACKMAP_BITS_MAX &&
		       STACKMAP_SLOT_DEPTH(STACKMAP_SLOT_ELEM(1, STACKMAP_MAX_DEPTH)) == STACKMAP_MAX_DEPTH,
	       "ids and depths fit in a slot");

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

/* ---- per-CPU counting: rseq and membarrier ------------------------------------ */

#if STACKMAP_RSEQ
/*
 * Whether this process can count with rseq: glibc registered the rseq area
 * (the fields up to `flags`, 20 bytes, are all we use) and the kernel
 * accepted our registration for MEMBARRIER_CMD_GLOBAL_EXPEDITED, which
 * resets need to order our fence-free entries (see stackmap_get_id()). Asked
 * once per process: 1 yes, -1 no, 0 not asked yet; racing first calls both
 * ask, and registering twice is harmless. A forked child inherits the
 * registration with the address space; exec drops both (and the view).
 */
static int percpu_state;

static int percpu_usable(void)
{
	/* Relaxed, partner: the store below; the answer is all it carries. */
	int st = __atomic_load_n(&percpu_state, __ATOMIC_RELAXED);
	if (st == 0) {
		long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
		st = -1;
		/* The kernel's registration orders every later access of every
		 * thread of the process after it (it ends with a full barrier on
		 * each CPU running one of them), so no call can slip between it
		 * and the first membarrier of a reset. */
		if (__rseq_size >= 20 && cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
		    syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0)
			st = 1;
		__atomic_store_n(&percpu_state, st, __ATOMIC_RELAXED);
	}
	return st > 0;
}
#endif

/*
 * The reset side of the entry handshake with per-CPU callers: a full
 * barrier on every CPU that runs a thread of a registered process (the
 * expedited command, microseconds), or failing that on every CPU (the
 * plain command, one RCU grace period: milliseconds). 0 or -errno.
 */
static int fence_percpu_callers(void)
{
#if STACKMAP_MEMBARRIER && defined(__NR_membarrier)
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0 ||
	    syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return 0;
	return errno > 0 ? -errno : -ENOSYS;
#else
	return -ENOSYS;
#endif
}

static uint32_t view_serial;          /* the last view's serial */

static int open_map(void *mem, size_t size, struct stackmap *ret_map, int caller)
{
	struct stackmap_header *h = mem;
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
	/* Live words: flags are 0 or 1, and the cursor never passes the table
	 * size (one fetch-add per claimed slot per epoch). Relaxed loads,
	 * partners: the CAS and stores of reset, the stores below, the cursor
	 * fetch-add of insert(); they may change under us, only their range is
	 * checked. */
	uint32_t flag = __atomic_load_n(&h->resetting, __ATOMIC_RELAXED);
	uint32_t percpu = __atomic_load_n(&h->percpu, __ATOMIC_RELAXED);
	uint64_t cursor = __atomic_load_n(&h->cursor, __ATOMIC_RELAXED);
	if (flag > 1 || percpu > 1 || cursor > (UINT64_C(2) << h->bits))
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
	ret_map->percpu = 0;
	/* Relaxed: a serial only needs to be distinct. */
	ret_map->serial = __atomic_add_fetch(&view_serial, 1, __ATOMIC_RELAXED);
#if STACKMAP_RSEQ
	if (caller && percpu_usable()) {
		/* Seq_cst, partner: the seq_cst load of `percpu` after the flag
		 * CAS in stackmap_reset_timeout(). Either that reset reads 1 and
		 * fences, or this store comes after its CAS and our calls, all
		 * later, see the flag. Stored once: the flag is never cleared
		 * while the map lives, and a shared line is not dirtied by every
		 * open. */
		if (!percpu)
			__atomic_store_n(&h->percpu, 1, __ATOMIC_SEQ_CST);
		ret_map->percpu = 1;
	}
#else
	(void)caller;
#endif
	return 0;
}

int stackmap_open(void *mem, size_t size, struct stackmap *ret_map)
{
	return open_map(mem, size, ret_map, 1);
}

int stackmap_open_view(void *mem, size_t size, struct stackmap *ret_map)
{
	return open_map(mem, size, ret_map, 0);
}

/* ---- hashing --------------------------------------------------------------- */

/*
 * The hash runs on every call, so it is built for few instructions and a
 * short chain to the slot load. Frames are taken in pairs and each pair
 * folded into one word: the first frame mixed with a seeded key, plus the
 * second rotated (return addresses differ mostly in their low bits, which
 * the rotation moves to where the first frame's bits are almost constant).
 * Two such words of consecutive pairs are multiplied, so four frames cost
 * one multiply, and the products, independent of each other, are summed
 * (an NH-style hash: the multiplies overlap in the pipeline instead of
 * forming one chain). The two words of a product are rotated by different
 * amounts (32, 19): with equal amounts, stacks whose frames each take one
 * of two values collide by the hundreds (tests/unit/test_stackmap.c,
 * test_hash_distribution). Keys depend on the seed and on the position
 * (the lane moves on every 8 frames; the words of a block get different
 * offsets), so equal frames at other positions give other products, and
 * which stacks collide depends on the seed.
 *
 * Depths that are not a multiple of 8 hash their last 8 frames once more,
 * as a block of their own with another key (and depths below 8 their
 * first and last 4 or 2): every frame is covered without a branch per
 * leftover frame. The depth is in the sum, so a stack and its prefix that
 * cover the same blocks still differ.
 *
 * The low bits of a product depend only on the low bits of its factors,
 * so the finish folds the high half of the sum down before the last
 * multiply, whose high half is the hash: every bit of every frame reaches
 * every bit of the key (the table index uses the low bits). A sum of 0
 * (seed 0, no frames) hashes to 0.
 */
static inline __attribute__((always_inline)) uint64_t pair_word(const uint64_t *p, uint64_t k,
								 int rot)
{
	return (p[0] ^ k) + (p[1] << rot | p[1] >> (64 - rot));
}

/* Frames p[0..3] as one product. */
static inline __attribute__((always_inline)) uint64_t quad(const uint64_t *p, uint64_t k)
{
	return pair_word(p, k, 32) * pair_word(p + 2, k + 0x6A09E667, 19);
}

static inline __attribute__((always_inline)) uint32_t hash_inline(uint64_t seed,
								  const uint64_t *ips,
								  uint32_t depth)
{
	/* Keys are the lane plus 32-bit immediates: no register holds them. */
	uint64_t a0 = seed + depth, a1 = 0;
	uint64_t lane = seed ^ K1;
	if (__builtin_expect(depth >= 8, 1)) { /* most stacks are 8 deep or more */
		const uint64_t *p = ips, *last = ips + depth - 8;
		for (; p <= last; p += 8, lane += 0x7F4A7C15) {
			a0 += quad(p, lane);
			a1 += quad(p + 4, lane + 0x3C6EF372);
		}
		if (depth & 7) {
			a0 += quad(last, lane + 0x1B873593);
			a1 += quad(last + 4, lane + 0x510E527F);
		}
	} else if (depth >= 4) {
		a0 += quad(ips, lane);
		a1 += quad(ips + depth - 4, lane + 0x510E527F);
	} else if (depth >= 2) {
		a0 += pair_word(ips, lane, 32) * pair_word(ips + depth - 2, lane + 0x6A09E667, 19);
	} else if (depth) {
		a0 += (ips[0] ^ lane) * K0;
	}
	uint64_t h = a0 + a1;
	h ^= h >> 29;
	return (uint32_t)((h * K2) >> 32);
}

uint32_t stackmap_hash(uint64_t seed, const uint64_t *ips, uint32_t depth)
{
	return hash_inline(seed, ips, depth);
}

/* The table key of a stack: its hash, never 0 (a free slot's key). */
static inline __attribute__((always_inline)) uint32_t key_inline(uint64_t seed, const uint64_t *ips,
								 uint32_t depth)
{
	uint32_t h = hash_inline(seed, ips, depth);
	return h ? h : 1;
}

uint32_t stackmap_key(uint64_t seed, const uint64_t *ips, uint32_t depth)
{
	return key_inline(seed, ips, depth);
}

/* ---- get_id ----------------------------------------------------------------- */

/*
 * Eight frames per step, in four 16-byte vectors (GNU vector extension:
 * SSE2 on x86-64, NEON on arm64), without early exit: a hit compares every
 * frame anyway, and a mismatch after a key and depth match is rare. The
 * frames left over are compared by comparing the last 8 (or 4, or 2) once
 * more, overlapping: no branch per leftover frame.
 */
typedef uint64_t v2u64 __attribute__((vector_size(16)));

static inline __attribute__((always_inline)) v2u64 load2(const uint64_t *p)
{
	v2u64 v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* Nonzero lanes where a[0..3] and b[0..3] differ. */
static inline __attribute__((always_inline)) v2u64 diff4(const uint64_t *a, const uint64_t *b)
{
	return (load2(a) ^ load2(b)) | (load2(a + 2) ^ load2(b + 2));
}

static inline __attribute__((always_inline)) int same_frames(const uint64_t *a,
							     const uint64_t *b, uint32_t n)
{
	v2u64 d = { 0, 0 }, e = { 0, 0 };
	if (__builtin_expect(n >= 8, 1)) {
		const uint64_t *alast = a + n - 8, *blast = b + n - 8;
		for (; a <= alast; a += 8, b += 8) {
			d |= diff4(a, b);
			e |= diff4(a + 4, b + 4);
		}
		if (n & 7) {
			d |= diff4(alast, blast);
			e |= diff4(alast + 4, blast + 4);
		}
	} else if (n >= 4) {
		d = diff4(a, b);
		e = diff4(a + n - 4, b + n - 4);
	} else if (n >= 2) {
		d = (load2(a) ^ load2(b)) | (load2(a + n - 2) ^ load2(b + n - 2));
	} else if (n) {
		return a[0] == b[0];
	}
	d |= e;
	return (d[0] | d[1]) == 0;
}

#if STACKMAP_RSEQ
/*
 * Per-CPU counting with restartable sequences. A thread's rseq area (at
 * __rseq_offset from the thread pointer, registered by glibc) holds the CPU
 * it runs on (cpu_id, offset 4) and a pointer to the critical section it is
 * in (rseq_cs, offset 8). The kernel, before the thread runs user code
 * again after a preemption, a migration or a signal, moves it to the
 * section's abort address if it was inside the section. So "we run on CPU
 * c; counter += 1" cannot be split by another thread running on c, and a
 * counter that only such sections write (the l_ counters of CPU c) needs
 * no LOCK prefix, whichever thread or process runs the section.
 *
 * The section is: check cpu_id, add. The add is one instruction and the
 * commit: before it nothing happened, after it the section is over. The
 * descriptor (struct rseq_cs: version, flags, start, length, abort) goes
 * into __rseq_cs; the abort code into __rseq_failure, preceded by the
 * signature the kernel checks (RSEQ_SIG, inside a ud1 so that disassemblers
 * stay in step).
 *
 * Returns 0 after the add, 1 without it (another CPU, no rseq area for this
 * thread: cpu_id is then negative, or aborted). rseq_cs is left pointing at
 * the descriptor: the kernel ignores (and clears) it once the thread is
 * past the section, and rseq_done() clears it before get_id returns, so
 * that no pointer into this object outlives the call (a dlclose'd object
 * would leave the kernel a dangling descriptor).
 */
static inline __attribute__((always_inline)) int rseq_inc(uint64_t *counter, uint32_t cpu)
{
	__asm__ __volatile__ goto(
		".pushsection __rseq_cs, \"aw\"\n\t"
		".balign 32\n"
		"881:\n\t"
		".long 0, 0\n\t"
		".quad 882f, 883f - 882f, 884f\n\t"
		".popsection\n\t"
		"leaq 881b(%%rip), %%rax\n\t"
		"movq %%rax, %%fs:8(%[off])\n"
		"882:\n\t"
		"cmpl %[cpu], %%fs:4(%[off])\n\t"
		"jne %l[other]\n\t"
		"addq $1, %[cnt]\n"
		"883:\n\t"
		".pushsection __rseq_failure, \"ax\"\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n"
		"884:\n\t"
		"jmp %l[other]\n\t"
		".popsection"
		:
		: [off] "r"(__rseq_offset), [cpu] "r"(cpu), [cnt] "m"(*counter), [sig] "i"(RSEQ_SIG)
		: "memory", "cc", "rax"
		: other);
	return 0;
other:
	return 1;
}

#endif

/*
 * Claim the free slot s for key, then take an element, fill it and publish
 * it. Returns 1 (inserted, *ret_id set), -ENOSPC (pool exhausted), or 0
 * when another call claimed the slot first: the caller looks at it again.
 * Out of line: it runs once per distinct stack, and kept apart it leaves
 * the hit path its registers (fewer saves and spills, which the LOCKed add
 * of a hit would have to wait for).
 */
static __attribute__((noinline, cold)) int claim(struct stackmap *map, struct stackmap_slot *s,
						 uint32_t key, const uint64_t *ips, uint32_t depth,
						 uint32_t *ret_id)
{
	/* Pool exhausted: do not claim a slot that could never be filled (it
	 * would lengthen every later probe). A racing call may still claim
	 * one; it stays empty. Relaxed, partner: the fetch-add below; a stale
	 * value only means that the fetch-add finds out instead. */
	if (__atomic_load_n(&map->hdr->cursor, __ATOMIC_RELAXED) >= map->max)
		return -ENOSPC;
	/* Partner: the CAS of any other call on this slot; exactly one moves
	 * it from 0. */
	uint32_t k = 0;
	if (!__atomic_compare_exchange_n(&s->key, &k, key, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return 0;
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
	 * a caller that finds the id sees the frames and ref. */
	__atomic_store_n(&s->elem, STACKMAP_SLOT_ELEM(idx + 1, depth), __ATOMIC_RELEASE);
	*ret_id = (uint32_t)idx + 1;
	return 1;
}

/*
 * Linear probing from key & mask. Slots are never freed within an epoch,
 * so the first free slot ends the search: a copy of the stack further on
 * would have been inserted by a call that found this slot taken.
 */
static inline __attribute__((always_inline)) int
find_or_insert(struct stackmap *map, uint32_t key, const uint64_t *ips, uint32_t depth,
	       uint32_t *ret_id)
{
	for (uint32_t i = 0; i < STACKMAP_MAX_PROBES; i++) {
		struct stackmap_slot *s = &map->table[(key + i) & map->mask];
		/* Relaxed: a key carries no data; the element behind it is
		 * ordered by s->elem (acquire below). */
		uint32_t k = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
		if (__builtin_expect(k == 0, 0)) {
			int r = claim(map, s, key, ips, depth, ret_id);
			if (r)
				return r;
			/* Lost the slot: examine the winner's key like any
			 * taken slot's. Relaxed, partner: the winner's CAS; a
			 * key, once set, stays until the next reset. */
			k = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
		}
		if (k != key)
			continue;
		/* Acquire, partner: the release store of s->elem in claim().
		 * 0 (being filled, or never) reads as depth 0 and id 0, which
		 * the range check refuses. */
		uint32_t v = __atomic_load_n(&s->elem, __ATOMIC_ACQUIRE);
		uint32_t id = STACKMAP_SLOT_ID(v);
		if (STACKMAP_SLOT_DEPTH(v) != depth || id - 1 >= map->max)
			continue; /* another depth, unpublished, or damaged */
		struct stackmap_elem *e = &map->pool[id - 1];
		/*
		 * Count the hit before the compare confirms it, and take the
		 * count back if it does not (a 32-bit key and the depth equal,
		 * the frames not: rare). The LOCKed add waits for the loads
		 * before it and holds back the loads after it; placed here it
		 * overlaps with the compare of this call and the hash of the
		 * next, instead of adding its latency to theirs (about 2 ns a
		 * hit, bench/bench_stackmap.c). Readers may see a count one
		 * too high meanwhile; with no call in flight the counts are
		 * exact. Relaxed: a count, read by nobody on this path. The
		 * empty asm keeps the compiler from moving the compare's loads
		 * above it.
		 */
		__atomic_fetch_add(&e->ref, 1, __ATOMIC_RELAXED);
		__asm__ __volatile__("" ::: "memory");
		if (__builtin_expect(!same_frames(e->ips, ips, depth), 0)) {
			/* Relaxed: as above. */
			__atomic_fetch_sub(&e->ref, 1, __ATOMIC_RELAXED);
			continue; /* another stack with the same key */
		}
		*ret_id = id;
		return 0;
	}
	return -ENOSPC;
}

/* Count the call's exit: per CPU if the thread still runs on `cpu`, else
 * atomically (see stackmap_get_id()). */
static inline __attribute__((always_inline)) void leave(struct stackmap_cpu *c, uint32_t cpu,
							int percpu)
{
#if STACKMAP_RSEQ
	if (percpu) {
		int other = rseq_inc(&c->l_exits, cpu);
		rseq_done();
		if (!other)
			return;
	}
#else
	(void)cpu;
	(void)percpu;
#endif
	/* Release, partner: the seq_cst loads of the exits in reset's
	 * quiet_snapshot(): once reset sees this exit, our table and pool
	 * accesses are done. */
	__atomic_fetch_add(&c->exits, 1, __ATOMIC_RELEASE);
}

/* A call that fails: count the drop, then the exit. Out of line, like
 * claim(). */
static __attribute__((noinline, cold)) int leave_dropped(struct stackmap_cpu *c, uint32_t cpu,
							 int percpu, int r)
{
	/* Before the exit, so that a reset that sees no call in flight sees
	 * every drop of the calls that left (its baseline is exact). Relaxed,
	 * partner: the loads of quiet_snapshot() and cpu_counts(), ordered
	 * after it by the release (or x86 store order) of the exit. */
	__atomic_fetch_add(&c->drops, 1, __ATOMIC_RELAXED);
	leave(c, cpu, percpu);
	return r;
}

/*
 * The entry handshake with reset, in two forms.
 *
 * Atomic (entries, exits): the seq_cst increment of `entries` before the
 * seq_cst load of the flag, against reset's seq_cst flag CAS before its
 * seq_cst loads of the counters (Dekker): either the call sees the flag,
 * or reset sees the call in flight and waits.
 *
 * Per CPU (l_entries, l_exits, rseq): the increment is a plain store, the
 * flag load a plain load, and the CPU may perform the load first (x86
 * lets a load pass an earlier store). Reset makes up for it: between its
 * flag CAS and its first load of the counters it runs membarrier(), which
 * puts a full barrier, at some point in program order, into every thread
 * of a registered process that runs meanwhile (and a thread that is not
 * running has passed one when it was switched out). If that point comes
 * after our increment, the increment is visible to reset's loads; if
 * before, our flag load comes after it and after the CAS, and sees the
 * flag. The compiler keeps the order: the section is a volatile asm with a
 * memory clobber.
 *
 * Either way the exit increment (release: x86 stores are not reordered
 * with earlier loads and stores, and the asm is a compiler barrier) comes
 * after the call's last access to the table and the pool; a reset that
 * counts it knows the call is done with them.
 */
static inline __attribute__((always_inline)) int get_id(struct stackmap *map, const uint64_t *ips, uint32_t depth,
							 uint32_t cpu, struct stackmap_hint *hint, int known,
							 uint32_t *ret_id)
{
	if (!map || !ret_id || depth > STACKMAP_MAX_DEPTH || (depth && !ips && !known))
		return -EINVAL;
	if (cpu >= map->ncpus)
		cpu %= map->ncpus;
	struct stackmap_cpu *c = &map->cpu[cpu];
	/* Whether the hint names a stack of this epoch, before entering.
	 * Relaxed: a reset after this load is seen inside (the handshake)
	 * or only tags a per-CPU hit (below). A hint without the frames that
	 * cannot answer returns here, counted as nothing. */
	uint32_t epoch0 = 0;
	int names = 0;
	if (known) {
		epoch0 = (uint32_t)__atomic_load_n(&map->hdr->epoch, __ATOMIC_RELAXED);
		names = hint_names(map, hint, epoch0);
		if (!ips && !names)
			return -ENODATA;
	}
	/* Before entering: the key depends only on the caller's frames and the
	 * seed of our view. Not needed when a hint will answer. */
	uint32_t key = known ? 0 : key_inline(map->seed, ips, depth);
	uint32_t flag;
	int percpu = 0;
#if STACKMAP_RSEQ
	/* Read once: a caller may clear map->percpu meanwhile, and the exit
	 * must clear rseq_cs whenever the entry may have set it. */
	percpu = map->percpu;
	if (percpu && names) {
		/*
		 * A hint of this map and epoch: the whole call is one section
		 * that counts the hit in this CPU's hits, with no entry or
		 * exit (rseq_hit() says why that is safe). The epoch only
		 * tags the count; a reset after its load makes the hit one of
		 * the old epoch. Else (another CPU, an entry of another id)
		 * the handshake's path below, which counts in the ref.
		 */
		if (hint_hit_counted(c, hint, epoch0, cpu, ret_id) == STACKMAP_FROM_HINT)
			return STACKMAP_FROM_HINT;
	}
	if (percpu && rseq_inc(&c->l_entries, cpu) == 0) {
		/* Acquire, partner: the release store that ends a reset (a
		 * call that sees 0 sees the table reset left behind); against
		 * the CAS that starts one, see above: membarrier. */
		flag = __atomic_load_n(&map->hdr->resetting, __ATOMIC_ACQUIRE);
	} else
#endif
	{
		/* Seq_cst, partners: see above (Dekker). */
		__atomic_fetch_add(&c->entries, 1, __ATOMIC_SEQ_CST);
		flag = __atomic_load_n(&map->hdr->resetting, __ATOMIC_SEQ_CST);
	}
	if (__builtin_expect(flag != 0, 0))
		return leave_dropped(c, cpu, percpu, -EAGAIN);
	if (hint) {
		/* Inside the entry handshake: a reset that bumps the epoch
		 * after this load waits for this call to leave, and one that
		 * bumped it before is seen (the flag load above is acquire or
		 * seq_cst, partner: the release that reopens the map).
		 * Relaxed: ordered by that load. */
		uint32_t epoch = (uint32_t)__atomic_load_n(&map->hdr->epoch, __ATOMIC_RELAXED);
		if (known && hint_names(map, hint, epoch)) {
			/* Its ref counts the hit (the per-CPU way above did
			 * not). Relaxed: a count, as in find_or_insert(). */
			__atomic_fetch_add(&map->pool[hint->id - 1].ref, 1, __ATOMIC_RELAXED);
			*ret_id = hint->id;
			leave(c, cpu, percpu);
			return STACKMAP_FROM_HINT;
		}
		if (known && !ips)  /* a reset since the check above: as one in progress */
			return leave_dropped(c, cpu, percpu, -EAGAIN);
		if (!key)
			key = key_inline(map->seed, ips, depth);
		int r = find_or_insert(map, key, ips, depth, ret_id);
		if (__builtin_expect(r < 0, 0))
			return leave_dropped(c, cpu, percpu, r);
		hint->id = *ret_id;
		hint->serial = map->serial;
		hint->epoch = epoch;
		leave(c, cpu, percpu);
		return r;
	}
	int r = find_or_insert(map, key, ips, depth, ret_id);
	if (__builtin_expect(r < 0, 0))
		return leave_dropped(c, cpu, percpu, r);
	leave(c, cpu, percpu);
	return r;
}

int stackmap_get_id(struct stackmap *map, const uint64_t *ips, uint32_t depth, uint32_t cpu,
		    uint32_t *ret_id)
{
	return get_id(map, ips, depth, cpu, NULL, 0, ret_id);
}

int stackmap_get_id_hint(struct stackmap *map, const uint64_t *ips, uint32_t depth, uint32_t cpu,
			 struct stackmap_hint *hint, int known, uint32_t *ret_id)
{
	if (!hint)
		return -EINVAL;
	return get_id(map, ips, depth, cpu, hint, known, ret_id);
}

/* ---- reset ------------------------------------------------------------------ */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * Read a CPU block's counters at a moment when no call was in flight on it.
 * Every call adds to entries (l_ or not) before drops (if it fails) before
 * exits, the stores become visible in that order (x86 keeps stores in
 * order; a thread that migrates in between passes a full barrier when it is
 * switched out; the atomic ones are seq_cst or release), and the loads
 * below run in the opposite order: exits at t1, drops at t2, entries at
 * t3. So a call whose exit is counted at t1 has its entry counted at t3,
 * and exits == entries means that every call whose entry we counted had
 * left by t1: none was in flight, and drops counts exactly the failures
 * among them (a drop visible at t2 belongs to a call counted at t3). A
 * call whose entry is not visible at t3 is covered by the flag handshake
 * (stackmap_get_id()). The two halves of each counter are read one after
 * the other; each only grows, which the argument needs and no more.
 * 1 on success, 0 if a call was in flight.
 */
static int quiet_snapshot(struct stackmap_cpu *c, uint64_t *ret_exits, uint64_t *ret_drops)
{
	/* Seq_cst loads, partners: the seq_cst entry increment, the release
	 * exit increment and the per-CPU adds of stackmap_get_id(). */
	uint64_t x = __atomic_load_n(&c->l_exits, __ATOMIC_SEQ_CST) +
		     __atomic_load_n(&c->exits, __ATOMIC_SEQ_CST);
	uint64_t d = __atomic_load_n(&c->drops, __ATOMIC_SEQ_CST);
	uint64_t n = __atomic_load_n(&c->l_entries, __ATOMIC_SEQ_CST) +
		     __atomic_load_n(&c->entries, __ATOMIC_SEQ_CST);
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
	/* Per-CPU callers enter without a fence: one full barrier on each of
	 * their CPUs, after the CAS and before the counters are read, stands
	 * in for it (stackmap_get_id()). Seq_cst, partner: the store of
	 * stackmap_open(). */
	if (__atomic_load_n(&h->percpu, __ATOMIC_SEQ_CST)) {
		int r = fence_percpu_callers();
		if (r < 0) {
			/* Release, partner: the calls' flag load; nothing was
			 * changed. */
			__atomic_store_n(&h->resetting, 0, __ATOMIC_RELEASE);
			return r;
		}
	}

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
	for (uint32_t cpu = 0; cpu < map->ncpus; cpu++)
		memset(map->cpu[cpu].hit, 0, sizeof(map->cpu[cpu].hit));
	/* Relaxed: published to the next calls by the release that reopens. */
	__atomic_store_n(&h->cursor, 0, __ATOMIC_RELAXED);
	/* Ids remembered before are void (stackmap_get_id_hint()). Relaxed:
	 * published as the cursor is. */
	__atomic_store_n(&h->epoch, __atomic_load_n(&h->epoch, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);

	/* New baselines. Only failing calls can run on a CPU since its drain,
	 * and each adds one to both exits and drops, so exits - drops is what
	 * the drain saw, if the snapshot is quiet: a failing call preempted
	 * between its drop and its exit would make it one short. So spin a
	 * little, then sleep until such a call has been scheduled again (100
	 * ms at most); a call stopped inside get_id would make the snapshot
	 * wait forever: then take the counters as they are (off by that one
	 * call at most). Without a new membarrier: a call whose entry is not
	 * visible yet has its drop and exit invisible too (stores in order),
	 * so it is simply not counted in this snapshot. */
	for (uint32_t cpu = 0; cpu < map->ncpus; cpu++) {
		struct stackmap_cpu *c = &map->cpu[cpu];
		uint64_t x = 0, d = 0, until = 0;
		for (int tries = 0; !quiet_snapshot(c, &x, &d); tries++) {
			if (tries < 1000)
				continue;
			if (!until) {
				until = now_ms() + 100;
			} else if (now_ms() >= until) {
				/* Relaxed, partner: the increments of the stopped
				 * call; the numbers may be off by it, nothing
				 * else. */
				d = __atomic_load_n(&c->drops, __ATOMIC_RELAXED);
				x = __atomic_load_n(&c->l_exits, __ATOMIC_RELAXED) +
				    __atomic_load_n(&c->exits, __ATOMIC_RELAXED);
				break;
			}
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
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

/* Sums of counters read from shared memory saturate: a damaged block must
 * not make the stat wrap to small numbers. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* The tag of a hit entry, id | epoch << 32, as the section reads it.
 * Relaxed, partner: the section's stores; a count. */
static uint64_t hit_tag(const struct stackmap_hit *h)
{
	return (uint64_t)__atomic_load_n(&h->id, __ATOMIC_RELAXED) |
	       (uint64_t)__atomic_load_n(&h->epoch, __ATOMIC_RELAXED) << 32;
}

/* The hint hits of a CPU in the current epoch (struct stackmap_hit): each
 * one a success that passed neither entry nor exit. */
static uint64_t cpu_hits(const struct stackmap *map, const struct stackmap_cpu *c)
{
	uint32_t epoch = (uint32_t)__atomic_load_n(&map->hdr->epoch, __ATOMIC_RELAXED);
	uint64_t n = 0;
	for (uint32_t i = 0; i < STACKMAP_HITS; i++) {
		const struct stackmap_hit *h = &c->hit[i];
		uint64_t t = hit_tag(h);
		if ((uint32_t)t != 0 && (uint32_t)(t >> 32) == epoch)
			n = sat_add(n, __atomic_load_n(&h->n, __ATOMIC_RELAXED));
	}
	return n;
}

static void cpu_counts(const struct stackmap *map, const struct stackmap_cpu *c, uint64_t *succ, uint64_t *drops)
{
	/* Acquire, partner: the release exit increment and the per-CPU add
	 * (not needed for the numbers themselves, but a reader that then walks
	 * the pool sees at least the stacks these calls published). */
	uint64_t x = __atomic_load_n(&c->l_exits, __ATOMIC_ACQUIRE) +
		     __atomic_load_n(&c->exits, __ATOMIC_ACQUIRE);
	uint64_t d = __atomic_load_n(&c->drops, __ATOMIC_RELAXED);
	uint64_t bs = __atomic_load_n(&c->base_succ, __ATOMIC_RELAXED);
	uint64_t bd = __atomic_load_n(&c->base_drops, __ATOMIC_RELAXED);
	*succ = sat_add(diff0(diff0(x, d), bs), cpu_hits(map, c));
	*drops = diff0(d, bd);
}

int stackmap_cpu_stat(const struct stackmap *map, uint32_t cpu, uint64_t *ret_successes,
		      uint64_t *ret_drops)
{
	if (!map || cpu >= map->ncpus)
		return -EINVAL;
	uint64_t s, d;
	cpu_counts(map, &map->cpu[cpu], &s, &d);
	if (ret_successes)
		*ret_successes = s;
	if (ret_drops)
		*ret_drops = d;
	return 0;
}

int stackmap_stat(const struct stackmap *map, struct stackmap_stat *ret)
{
	if (!map || !ret)
		return -EINVAL;
	struct stackmap_stat st = { 0 };
	for (uint32_t cpu = 0; cpu < map->ncpus; cpu++) {
		uint64_t s, d;
		cpu_counts(map, &map->cpu[cpu], &s, &d);
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
	/* Relaxed, partner: the fetch-adds of hits and the rseq adds of the
	 * CPUs' hits; any recent value will do (with no call in flight, the
	 * exact count). An entry read while its id is being stored counts 0
	 * for it, its count then being 0. */
	uint64_t ref = __atomic_load_n(&e->ref, __ATOMIC_RELAXED);
	uint32_t epoch = (uint32_t)__atomic_load_n(&map->hdr->epoch, __ATOMIC_RELAXED);
	for (uint32_t cpu = 0; cpu < map->ncpus; cpu++) {
		const struct stackmap_hit *h = &map->cpu[cpu].hit[(idx + 1) & (STACKMAP_HITS - 1)];
		if (hit_tag(h) == ((uint64_t)(idx + 1) | (uint64_t)epoch << 32))
			ref += __atomic_load_n(&h->n, __ATOMIC_RELAXED);
	}
	ret->ref = ref;
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
