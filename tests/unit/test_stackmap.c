/*
 * test_stackmap.c - the stack map on one thread (and a helper thread for
 * the reset rules): ids and reference counts, the empty, one-frame and
 * 64-frame edges, the hash-of-0 rule, the spread of the hash over regular
 * families of stacks, pool exhaustion and the probe cap,
 * reset (tracing on, concurrent reset, draining an in-flight call through
 * either half of the counters, timeout, resets while threads on every CPU
 * call), the per-CPU (rseq) and atomic counters adding up to the calls,
 * validation of damaged headers, and the exports byte for byte:
 * text, stat, JSON and the FSMB v2 binary, which is read back by a reader
 * written here (in both byte orders) and by the module's reader.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "stackmap/stackmap.h"
#include "stackmap/stackmap_hit.h"

#define SEED UINT64_C(0x0123456789abcdef)

struct fixture {
	void *mem;
	size_t size;
	struct stackmap map;
};

static struct fixture *new_map(uint32_t bits, uint32_t ncpus, uint64_t seed)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->size = stackmap_size(bits, ncpus);
	assert_true(f->size > 0);
	f->mem = aligned_alloc(64, (f->size + 63) & ~(size_t)63);
	assert_non_null(f->mem);
	memset(f->mem, 0, f->size);
	assert_int_equal(stackmap_init(f->mem, f->size, bits, ncpus, seed), 0);
	assert_int_equal(stackmap_open(f->mem, f->size, &f->map), 0);
	return f;
}

static void free_map(struct fixture *f)
{
	free(f->mem);
	free(f);
}

static int setup(void **state)
{
	*state = new_map(10, 2, SEED);
	return 0;
}

static int teardown(void **state)
{
	free_map(*state);
	return 0;
}

/* Stack n of a family of distinct stacks of the given depth. */
static void make_stack(uint64_t *ips, uint32_t depth, uint32_t n)
{
	for (uint32_t i = 0; i < depth; i++)
		ips[i] = 0x400000u + (uint64_t)n * 0x1000 + i * 8;
}

static uint64_t ref_of(struct stackmap *m, uint32_t id)
{
	struct stackmap_stack s;
	assert_int_equal(stackmap_lookup(m, id, &s), 0);
	return s.ref;
}

/* ---- hints -------------------------------------------------------------------- */

/*
 * stackmap_get_id_hint(): an unknown hint is filled by a lookup; a known
 * one answers without it (STACKMAP_FROM_HINT), counted as a hit; a reset
 * (another epoch) or another view of a map (another serial) voids it.
 */
static void test_hint(void **state)
{
	struct fixture *f = *state;
	struct stackmap *m = &f->map;
	uint64_t a[5] = { 0x401000, 0x402000, 0x403000, 0x404000, 0x405000 };
	uint64_t b[5] = { 0x501000, 0x502000, 0x503000, 0x504000, 0x505000 };
	struct stackmap_hint h = { 0, 0, 0 };
	uint32_t id = 0, id2 = 0;

	assert_int_equal(stackmap_get_id_hint(m, a, 5, 0, NULL, 0, &id), -EINVAL);
	/* Unknown: looked up (inserted), the hint filled. */
	assert_int_equal(stackmap_get_id_hint(m, a, 5, 0, &h, 0, &id), 1);
	assert_int_equal(h.id, id);
	assert_int_equal(h.serial, m->serial);
	assert_int_equal(ref_of(m, id), 1);
	/* Known: answered from the hint, and counted. */
	assert_int_equal(stackmap_get_id_hint(m, a, 5, 1, &h, 1, &id2), STACKMAP_FROM_HINT);
	assert_int_equal(id2, id);
	assert_int_equal(ref_of(m, id), 2);
	/* The plain lookup agrees with it. */
	assert_int_equal(stackmap_get_id(m, a, 5, 0, &id2), 0);
	assert_int_equal(id2, id);
	assert_int_equal(ref_of(m, id), 3);

	/* After a reset the hint's epoch is another: a real lookup, here of
	 * another stack first, so that a stale id would be wrong. */
	struct stackmap_hint old = h;
	assert_int_equal(stackmap_reset(m, 0), 0);
	assert_int_equal(stackmap_get_id(m, b, 5, 0, &id2), 1);
	assert_int_equal(id2, 1);
	assert_int_equal(stackmap_get_id_hint(m, a, 5, 0, &h, 1, &id2), 1);
	assert_int_equal(id2, 2);
	assert_int_not_equal(h.epoch, old.epoch);
	assert_int_equal(h.id, 2);
	assert_int_equal(stackmap_get_id_hint(m, a, 5, 0, &h, 1, &id2), STACKMAP_FROM_HINT);
	assert_int_equal(id2, 2);

	/* Another view of the same block: another serial, a real lookup. */
	struct stackmap view;
	assert_int_equal(stackmap_open(f->mem, f->size, &view), 0);
	assert_int_not_equal(view.serial, m->serial);
	struct stackmap_hint hv = h;
	assert_int_equal(stackmap_get_id_hint(&view, a, 5, 0, &hv, 1, &id2), 0);
	assert_int_equal(id2, 2);
	assert_int_equal(hv.serial, view.serial);

	/* A hint whose id is out of range is not trusted. */
	struct stackmap_hint bad = h;
	bad.id = m->max + 1;
	assert_int_equal(stackmap_get_id_hint(m, a, 5, 0, &bad, 1, &id2), 0);
	assert_int_equal(id2, 2);

	/* Without the frames: a hint that answers, counted; one that does
	 * not, -ENODATA, counted as nothing (no hit, no drop); an unknown
	 * one needs them. */
	struct stackmap_stat st0, st1;
	assert_int_equal(stackmap_stat(m, &st0), 0);
	uint32_t r0 = ref_of(m, 2);
	id2 = 0;
	assert_int_equal(stackmap_get_id_hint(m, NULL, 5, 0, &h, 1, &id2), STACKMAP_FROM_HINT);
	assert_int_equal(id2, 2);
	assert_int_equal(ref_of(m, 2), r0 + 1);
	id2 = 77;
	bad = h;
	bad.id = m->max + 1;
	assert_int_equal(stackmap_get_id_hint(m, NULL, 5, 0, &bad, 1, &id2), -ENODATA);
	assert_int_equal(stackmap_get_id_hint(m, NULL, 5, 0, &old, 1, &id2), -ENODATA);
	assert_int_equal(id2, 77);
	assert_int_equal(stackmap_get_id_hint(m, NULL, 5, 0, &h, 0, &id2), -EINVAL);
	assert_int_equal(stackmap_stat(m, &st1), 0);
	assert_int_equal(st1.drops, st0.drops);
	assert_int_equal(st1.successes, st0.successes + 1);
	assert_int_equal(st1.entries, st0.entries);
	assert_int_equal(ref_of(m, 2), r0 + 1);
}

/* ---- basics ------------------------------------------------------------------ */

static void test_basics(void **state)
{
	struct fixture *f = *state;
	struct stackmap *m = &f->map;
	uint64_t a[3] = { 0x401000, 0x402000, 0x403000 };
	uint64_t b[3] = { 0x401000, 0x402000, 0x403008 };
	uint32_t id = 0, id2 = 0;

	/* First call inserts (1), later calls find (0); ids start at 1. */
	assert_int_equal(stackmap_get_id(m, a, 3, 0, &id), 1);
	assert_int_equal(id, 1);
	assert_int_equal(stackmap_get_id(m, a, 3, 1, &id2), 0);
	assert_int_equal(id2, 1);
	/* One frame differs: another stack. */
	assert_int_equal(stackmap_get_id(m, b, 3, 0, &id), 1);
	assert_int_equal(id, 2);
	/* A prefix is another stack too (depth is part of the identity). */
	assert_int_equal(stackmap_get_id(m, a, 2, 0, &id), 1);
	assert_int_equal(id, 3);
	assert_int_equal(stackmap_get_id(m, a, 3, 0, &id), 0);
	assert_int_equal(id, 1);

	/* Edges: depth 0 (no frames, ips may be NULL), 1 and 64. */
	uint64_t deep[STACKMAP_MAX_DEPTH + 1];
	make_stack(deep, STACKMAP_MAX_DEPTH + 1, 7);
	assert_int_equal(stackmap_get_id(m, NULL, 0, 0, &id), 1);
	assert_int_equal(id, 4);
	assert_int_equal(stackmap_get_id(m, a, 0, 0, &id), 0);
	assert_int_equal(id, 4);
	assert_int_equal(stackmap_get_id(m, deep, 1, 0, &id), 1);
	assert_int_equal(id, 5);
	assert_int_equal(stackmap_get_id(m, deep, 64, 0, &id), 1);
	assert_int_equal(id, 6);
	assert_int_equal(stackmap_get_id(m, deep, 64, 0, &id), 0);
	assert_int_equal(id, 6);

	/* Caller errors: refused, *ret_id untouched, not counted. */
	id = 777;
	assert_int_equal(stackmap_get_id(m, deep, 65, 0, &id), -EINVAL);
	assert_int_equal(stackmap_get_id(m, NULL, 1, 0, &id), -EINVAL);
	assert_int_equal(stackmap_get_id(m, a, 1, 0, NULL), -EINVAL);
	assert_int_equal(stackmap_get_id(NULL, a, 1, 0, &id), -EINVAL);
	assert_int_equal(id, 777);

	/* Reference counts: exact, one per successful call. */
	assert_int_equal(ref_of(m, 1), 3);
	assert_int_equal(ref_of(m, 2), 1);
	assert_int_equal(ref_of(m, 3), 1);
	assert_int_equal(ref_of(m, 4), 2);
	assert_int_equal(ref_of(m, 5), 1);
	assert_int_equal(ref_of(m, 6), 2);

	/* The stored frames are the caller's. */
	struct stackmap_stack s;
	assert_int_equal(stackmap_lookup(m, 6, &s), 0);
	assert_int_equal(s.id, 6);
	assert_int_equal(s.depth, 64);
	assert_memory_equal(s.ips, deep, 64 * sizeof(deep[0]));
	assert_int_equal(stackmap_lookup(m, 0, &s), -ENOENT);
	assert_int_equal(stackmap_lookup(m, 7, &s), -ENOENT);

	/* Counters: 10 successes (1 on CPU 1), no drop. A CPU beyond the
	 * map's is folded onto it: CPU 3 of 2 counts on CPU 1. */
	assert_int_equal(stackmap_get_id(m, a, 3, 3, &id), 0);
	uint64_t succ, drops;
	assert_int_equal(stackmap_cpu_stat(m, 0, &succ, &drops), 0);
	assert_int_equal(succ, 9);
	assert_int_equal(drops, 0);
	assert_int_equal(stackmap_cpu_stat(m, 1, &succ, &drops), 0);
	assert_int_equal(succ, 2);
	assert_int_equal(stackmap_cpu_stat(m, 2, &succ, &drops), -EINVAL);
	struct stackmap_stat st;
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.entries, 6);
	assert_int_equal(st.max_entries, 1024);
	assert_int_equal(st.table_size, 2048);
	assert_int_equal(st.successes, 11);
	assert_int_equal(st.drops, 0);
	assert_int_equal(st.success_rate, 100);
}

static void test_sizes(void **state)
{
	(void)state;
	assert_int_equal(stackmap_size(9, 1), 0);
	assert_int_equal(stackmap_size(19, 1), 0);
	assert_int_equal(stackmap_size(10, 0), 0);
	assert_int_equal(stackmap_size(10, STACKMAP_MAX_CPUS + 1), 0);
	assert_int_equal(stackmap_size(0, 1), stackmap_size(STACKMAP_BITS_DEFAULT, 1));
	/* header 192 + 3 lines per CPU, table 2 x 2^bits x 8, pool 2^bits x 576 */
	assert_int_equal(stackmap_size(10, 2), 192 + 2 * 192 + 2048 * 8 + 1024 * 576);
	assert_int_equal(stackmap_size(18, 4096), 192 + 4096 * 192 + (2u << 18) * 8 + (1u << 18) * 576);

	size_t size = stackmap_size(10, 1);
	char *mem = aligned_alloc(64, size + 64);
	assert_non_null(mem);
	memset(mem, 0, size + 64);
	assert_int_equal(stackmap_init(mem, size - 1, 10, 1, 0), -EINVAL);
	assert_int_equal(stackmap_init(mem + 8, size, 10, 1, 0), -EINVAL);
	assert_int_equal(stackmap_init(mem, size, 9, 1, 0), -EINVAL);
	assert_int_equal(stackmap_init(mem, size, 10, 0, 0), -EINVAL);
	assert_int_equal(stackmap_init(NULL, size, 10, 1, 0), -EINVAL);
	assert_int_equal(stackmap_init(mem, size, 10, 1, 0), 0);
	free(mem);
}

/* ---- hash of 0 ------------------------------------------------------------------ */

static void test_hash_zero(void **state)
{
	(void)state;
	/* The documented vector: seed 0, no frames. */
	assert_int_equal(stackmap_hash(0, NULL, 0), 0);
	assert_int_equal(stackmap_key(0, NULL, 0), 1);
	/* A non-zero hash is its own key; the seed changes the hash. */
	uint64_t a[2] = { 0x401000, 0x402000 };
	uint32_t h = stackmap_hash(SEED, a, 2);
	assert_true(h != 0);
	assert_int_equal(stackmap_key(SEED, a, 2), h);
	assert_true(stackmap_hash(SEED + 1, a, 2) != h);

	/* In a map seeded with 0 the empty stack's hash is 0: it must be
	 * stored under key 1 (its home slot is 1), never 0, which would mark
	 * the slot free and lose it. */
	struct fixture *f = new_map(10, 1, 0);
	struct stackmap *m = &f->map;
	uint32_t id;
	assert_int_equal(stackmap_get_id(m, NULL, 0, 0, &id), 1);
	assert_int_equal(id, 1);
	assert_int_equal(m->table[0].key, 0);
	assert_int_equal(m->table[0].elem, 0);
	assert_int_equal(m->table[1].key, 1);
	assert_int_equal(m->table[1].elem, 1);
	for (uint32_t i = 2; i <= m->mask; i++)
		assert_int_equal(m->table[i].key, 0);
	assert_int_equal(stackmap_get_id(m, NULL, 0, 0, &id), 0);
	assert_int_equal(id, 1);
	assert_int_equal(ref_of(m, 1), 2);
	free_map(f);
}

/*
 * The hash spreads realistic and adversarially regular families of stacks:
 * for each family of 4096 distinct 16-frame (or 1..64-frame) stacks, with
 * two seeds, (a) 32-bit keys almost never collide (expected pairs:
 * 4096^2 / 2^33 = 0.002; allowed: 2), (b) the low 10 bits, the table index
 * of a small map, are uniform (chi-square per degree of freedom below 1.5;
 * about 1 expected), (c) linear probing in a table twice the size finds a
 * free slot within 40 probes (about 15 expected, 64 is the cap). The
 * "two values" families (every frame one of two addresses, a few bits
 * apart or 4 GiB apart) made the previous hash collide for most stacks.
 */
#define DIST_N 4096

static uint64_t dist_rng;

static uint64_t dist_rand(void)
{
	dist_rng ^= dist_rng << 13;
	dist_rng ^= dist_rng >> 7;
	dist_rng ^= dist_rng << 17;
	return dist_rng;
}

static void dist_family(int fam, uint64_t delta, uint64_t (*st)[64], uint32_t *dep)
{
	uint64_t base[64];
	for (int i = 0; i < 64; i++)
		base[i] = 0x555555554000ull + (dist_rand() & 0xfffff);
	for (uint32_t n = 0; n < DIST_N; n++) {
		dep[n] = 16;
		memcpy(st[n], base, sizeof(base));
		switch (fam) {
		case 0: /* the leaf call site moves */
			st[n][0] = 0x555555554000ull + n * 16;
			break;
		case 1: /* only the outermost frame differs */
			st[n][15] = 0x555555554000ull + n * 4;
			break;
		case 2: /* two frames on a grid */
			st[n][0] += (n & 63) * 8;
			st[n][1] += (n >> 6) * 8;
			break;
		case 3: /* depths 1..64, prefixes of each other */
			dep[n] = 1 + n % 64;
			st[n][0] += (n / 64) * 16;
			break;
		case 4: /* one frame in mappings 4 GiB apart */
			st[n][3] = 0x7f0000000000ull + (uint64_t)(n & 255) * 0x100000000ull +
				   (n >> 8) * 8;
			break;
		case 5: /* every frame one of two values */
			for (int i = 0; i < 20; i++)
				st[n][i] = 0x401000 + ((n >> (i % 12)) & 1) * delta;
			dep[n] = 20;
			break;
		case 6: /* one frame differs, at every position in turn */
			st[n][n % 16] += 8 * (1 + n / 16);
			break;
		case 7: /* random frames, random depths */
			dep[n] = 1 + (uint32_t)(dist_rand() % 64);
			for (int i = 0; i < 64; i++)
				st[n][i] = 0x555555554000ull + (dist_rand() & 0xffffff);
			break;
		}
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static void test_hash_distribution(void **state)
{
	(void)state;
	static uint64_t st[DIST_N][64];
	static uint32_t dep[DIST_N], keys[DIST_N], sorted[DIST_N], bucket[1024];
	static uint8_t table[2 * DIST_N];
	const uint64_t seeds[2] = { SEED, 0x9d2c5680a1b2c3d4ull };
	const uint64_t deltas[4] = { 0x8, 0x40, 0x100000, 0x100000000ull };
	dist_rng = 88172645463325252ull;
	for (int fam = 0; fam < 8; fam++) {
		for (int dv = 0; dv < (fam == 5 ? 4 : 1); dv++) {
			dist_family(fam, deltas[dv], st, dep);
			for (int sd = 0; sd < 2; sd++) {
				for (uint32_t n = 0; n < DIST_N; n++)
					keys[n] = stackmap_key(seeds[sd], st[n], dep[n]);
				memcpy(sorted, keys, sizeof(keys));
				qsort(sorted, DIST_N, sizeof(sorted[0]), cmp_u32);
				int coll = 0;
				for (uint32_t n = 1; n < DIST_N; n++)
					coll += sorted[n] == sorted[n - 1];
				memset(bucket, 0, sizeof(bucket));
				for (uint32_t n = 0; n < DIST_N; n++)
					bucket[keys[n] & 1023]++;
				double chi = 0, e = DIST_N / 1024.0;
				for (int b = 0; b < 1024; b++)
					chi += (bucket[b] - e) * (bucket[b] - e) / e;
				memset(table, 0, sizeof(table));
				uint32_t maxp = 0;
				for (uint32_t n = 0; n < DIST_N; n++) {
					uint32_t i = keys[n] & (2 * DIST_N - 1), p = 0;
					while (table[i]) {
						i = (i + 1) & (2 * DIST_N - 1);
						p++;
					}
					table[i] = 1;
					maxp = p > maxp ? p : maxp;
				}
				if (coll > 2 || chi / 1023 > 1.5 || maxp > 40)
					fail_msg("family %d delta %llx seed %d: %d collisions, chi2/df %.2f, "
						 "longest probe %u",
						 fam, (unsigned long long)deltas[dv], sd, coll, chi / 1023,
						 maxp);
			}
		}
	}
}

/* ---- exhaustion and the probe cap ------------------------------------------------ */

static void test_exhaustion(void **state)
{
	struct fixture *f = *state;
	struct stackmap *m = &f->map;
	enum { N = 5000 };
	static uint32_t ids[N];
	uint64_t ips[8];
	uint32_t inserted = 0, nospc = 0;

	for (uint32_t n = 0; n < N; n++) {
		make_stack(ips, 8, n);
		uint32_t id = 0;
		int r = stackmap_get_id(m, ips, 8, n & 1, &id);
		if (r == 1) {
			inserted++;
			ids[n] = id;
		} else {
			assert_int_equal(r, -ENOSPC);
			assert_int_equal(id, 0);
			nospc++;
		}
	}
	assert_int_equal(inserted, 1024);
	assert_int_equal(nospc, N - 1024);

	struct stackmap_stat st;
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.entries, 1024);
	assert_int_equal(st.successes, 1024);
	assert_int_equal(st.drops, N - 1024);
	assert_int_equal(st.successes + st.drops, N);
	assert_int_equal(st.success_rate, 1024 * 100 / N);

	/* On one thread no slot is left claimed but empty: a call checks the
	 * pool cursor before it claims (only a call racing for the last
	 * element can lose, tests/stress/stress_stackmap.c). */
	uint32_t used = 0;
	for (uint32_t i = 0; i <= m->mask; i++) {
		assert_true(m->table[i].key == 0 || m->table[i].elem != 0);
		used += m->table[i].key != 0;
	}
	assert_int_equal(used, 1024);

	/* Every stored stack is still found, with its id and its frames. */
	for (uint32_t n = 0; n < N; n++) {
		make_stack(ips, 8, n);
		uint32_t id = 0;
		int r = stackmap_get_id(m, ips, 8, 0, &id);
		if (ids[n]) {
			assert_int_equal(r, 0);
			assert_int_equal(id, ids[n]);
			struct stackmap_stack s;
			assert_int_equal(stackmap_lookup(m, id, &s), 0);
			assert_memory_equal(s.ips, ips, sizeof(ips));
			assert_int_equal(s.ref, 2);
		} else {
			assert_int_equal(r, -ENOSPC);
		}
	}
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.successes, 2048);
	assert_int_equal(st.drops, 2 * (N - 1024));
}

static void test_probe_cap(void **state)
{
	struct fixture *f = *state;
	struct stackmap *m = &f->map;
	uint64_t ips[4] = { 1, 2, 3, 4 };
	uint32_t key = stackmap_key(m->seed, ips, 4);
	uint32_t id = 0;

	/* 64 slots from the stack's home taken by other keys, never filled:
	 * 64 probes, no free slot, drop. */
	for (uint32_t i = 0; i < STACKMAP_MAX_PROBES; i++)
		m->table[(key + i) & m->mask].key = key + 1000 + i;
	assert_int_equal(stackmap_get_id(m, ips, 4, 0, &id), -ENOSPC);
	assert_int_equal(id, 0);
	uint64_t s, d;
	assert_int_equal(stackmap_cpu_stat(m, 0, &s, &d), 0);
	assert_int_equal(s, 0);
	assert_int_equal(d, 1);

	/* Free the last one: the 64th probe claims it. */
	m->table[(key + 63) & m->mask].key = 0;
	assert_int_equal(stackmap_get_id(m, ips, 4, 0, &id), 1);
	assert_int_equal(id, 1);
	assert_int_equal(m->table[(key + 63) & m->mask].key, key);
	assert_int_equal(stackmap_get_id(m, ips, 4, 0, &id), 0);

	/* A slot with our key whose element holds another stack (a key
	 * collision) is passed over after the full compare. */
	m->table[(key + 63) & m->mask].key = 0;
	m->table[(key + 63) & m->mask].elem = 0;
	m->table[key & m->mask].key = key;
	m->table[key & m->mask].elem = STACKMAP_SLOT_ELEM(1, 4); /* {1,2,3,4}... */
	m->pool[0].ips[3] = 5;                                   /* ...now {1,2,3,5} */
	assert_int_equal(stackmap_get_id(m, ips, 4, 0, &id), 1);
	assert_int_equal(id, 2);
	assert_int_equal(ref_of(m, 1), 2); /* untouched by the mismatch */

	/* A slot with our key and another depth is passed over without a look
	 * at the element (which does hold our frames). */
	uint64_t ips3[3] = { 7, 8, 9 };
	uint32_t key3 = stackmap_key(m->seed, ips3, 3);
	assert_int_equal(stackmap_get_id(m, ips3, 3, 0, &id), 1);
	assert_int_equal(id, 3);
	struct stackmap_slot *s3 = NULL;
	for (uint32_t i = 0; i < STACKMAP_MAX_PROBES && !s3; i++)
		if (m->table[(key3 + i) & m->mask].key == key3)
			s3 = &m->table[(key3 + i) & m->mask];
	assert_non_null(s3);
	assert_int_equal(s3->elem, STACKMAP_SLOT_ELEM(3, 3));
	s3->elem = STACKMAP_SLOT_ELEM(3, 2);
	assert_int_equal(stackmap_get_id(m, ips3, 3, 0, &id), 1);
	assert_int_equal(id, 4);
	assert_int_equal(ref_of(m, 3), 1);
}

/* ---- reset ---------------------------------------------------------------------- */

struct reset_arg {
	struct stackmap *map;
	int ret;
	int done;
};

static void *reset_thread(void *p)
{
	struct reset_arg *a = p;
	a->ret = stackmap_reset(a->map, 0);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static int count_stack(void *arg, const struct stackmap_stack *s)
{
	(void)s;
	(*(int *)arg)++;
	return 0;
}

static void test_reset(void **state)
{
	struct fixture *f = *state;
	struct stackmap *m = &f->map;
	uint64_t ips[8];
	uint32_t id;
	for (uint32_t n = 0; n < 10; n++) {
		make_stack(ips, 8, n);
		assert_int_equal(stackmap_get_id(m, ips, 8, 0, &id), 1);
	}

	/* Tracing on: refused, nothing changed. */
	assert_int_equal(stackmap_reset(m, 1), -EBUSY);
	assert_int_equal(stackmap_get_id(m, ips, 8, 0, &id), 0);
	assert_int_equal(id, 10);

	/* A call in flight on CPU 1 (entered, not left): a reset in a thread
	 * must wait for it. */
	__atomic_fetch_add(&m->cpu[1].entries, 1, __ATOMIC_SEQ_CST);
	struct reset_arg ra = { m, 1, 0 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, reset_thread, &ra), 0);
	while (!__atomic_load_n(&m->hdr->resetting, __ATOMIC_ACQUIRE))
		sleep_ms(1);

	/* Meanwhile: a second reset is refused, new calls fail fast (and
	 * count a drop), the readers refuse. */
	assert_int_equal(stackmap_reset(m, 0), -EBUSY);
	id = 555;
	assert_int_equal(stackmap_get_id(m, ips, 8, 0, &id), -EAGAIN);
	assert_int_equal(id, 555);
	int n = 0;
	assert_int_equal(stackmap_for_each(m, count_stack, &n), -EBUSY);
	sleep_ms(30);
	assert_int_equal(__atomic_load_n(&ra.done, __ATOMIC_ACQUIRE), 0);
	/* The simulated call leaves. */
	__atomic_fetch_add(&m->cpu[1].exits, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(ra.ret, 0);

	/* Empty, counters cleared, and usable: ids start at 1 again. */
	struct stackmap_stat st;
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.successes, 0);
	assert_int_equal(st.drops, 0);
	assert_int_equal(m->hdr->resetting, 0);
	for (uint32_t i = 0; i <= m->mask; i++)
		assert_true(m->table[i].key == 0 && m->table[i].elem == 0);
	n = 0;
	assert_int_equal(stackmap_for_each(m, count_stack, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(stackmap_lookup(m, 1, &(struct stackmap_stack){ 0 }), -ENOENT);
	assert_int_equal(stackmap_get_id(m, ips, 8, 0, &id), 1);
	assert_int_equal(id, 1);
	assert_int_equal(stackmap_get_id(m, ips, 8, 1, &id), 0);
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.successes, 2);
	assert_int_equal(st.drops, 0);

	/* A call that never leaves (a stopped thread): the reset gives up,
	 * leaves the map as it was and open. */
	__atomic_fetch_add(&m->cpu[0].entries, 1, __ATOMIC_SEQ_CST);
	assert_int_equal(stackmap_reset_timeout(m, 0, 50), -ETIMEDOUT);
	__atomic_fetch_add(&m->cpu[0].exits, 1, __ATOMIC_RELEASE);
	assert_int_equal(m->hdr->resetting, 0);
	assert_int_equal(stackmap_get_id(m, ips, 8, 0, &id), 0);
	assert_int_equal(id, 1);
	assert_int_equal(ref_of(m, 1), 3);

	/* A plain reset with nothing in flight. */
	assert_int_equal(stackmap_reset(m, 0), 0);
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.entries + st.successes + st.drops, 0);
}

/*
 * The drain counts the per-CPU (rseq) halves too, and a call may enter
 * through one half and leave through the other (its thread migrated in
 * between): simulated here by adding to the counters as such a call would.
 */
static void drain_case(struct stackmap *m, uint64_t *enter, uint64_t *leave)
{
	__atomic_fetch_add(enter, 1, __ATOMIC_SEQ_CST);
	struct reset_arg ra = { m, 1, 0 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, reset_thread, &ra), 0);
	while (!__atomic_load_n(&m->hdr->resetting, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	sleep_ms(20);
	assert_int_equal(__atomic_load_n(&ra.done, __ATOMIC_ACQUIRE), 0);
	__atomic_fetch_add(leave, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(ra.ret, 0);
}

static void test_reset_percpu_halves(void **state)
{
	struct fixture *f = *state;
	struct stackmap *m = &f->map;
	uint64_t ips[4] = { 1, 2, 3, 4 };
	uint32_t id;
	assert_int_equal(stackmap_get_id(m, ips, 4, 1, &id), 1);

	drain_case(m, &m->cpu[1].l_entries, &m->cpu[1].l_exits);
	drain_case(m, &m->cpu[1].l_entries, &m->cpu[1].exits);
	drain_case(m, &m->cpu[0].entries, &m->cpu[0].l_exits);

	/* Empty and zeroed whatever half each count went through. */
	struct stackmap_stat st;
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.entries + st.successes + st.drops, 0);
	assert_int_equal(stackmap_get_id(m, ips, 4, 1, &id), 1);
	assert_int_equal(id, 1);
	uint64_t succ, drops;
	assert_int_equal(stackmap_cpu_stat(m, 1, &succ, &drops), 0);
	assert_int_equal(succ, 1);
	assert_int_equal(drops, 0);
}

/* ---- per-CPU counting ----------------------------------------------------------- */

static int pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Pin the thread to the first CPU it may run on, which is returned; its
 * affinity before in *old. */
static uint32_t pin_to_first(cpu_set_t *old)
{
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(*old), old), 0);
	uint32_t here = 0;
	while (!CPU_ISSET(here, old))
		here++;
	assert_int_equal(pin_to((int)here), 0);
	return here;
}

static int online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/*
 * Hint hits on the CPU a thread runs on go to that CPU's hits (struct
 * stackmap_hit), and the readers' ref adds them: exact with no call in
 * flight. An entry belongs to the first id that takes it; another id of
 * the same entry counts in its element. A reset empties the entries.
 */
static void test_percpu_hint_hits(void **state)
{
	(void)state;
	cpu_set_t old;
	uint32_t here = pin_to_first(&old);
	struct fixture *f = new_map(10, here + 1, SEED);
	struct stackmap *m = &f->map;
	enum { N = 1000, IDS = STACKMAP_HITS + 1 };
	uint64_t ips[IDS][6];
	struct stackmap_hint h[IDS];
	uint32_t id[IDS], got;
	/* Ids 1 .. 9: 1 and 9 share an entry. */
	for (uint32_t k = 0; k < IDS; k++) {
		make_stack(ips[k], 6, k);
		memset(&h[k], 0, sizeof(h[k]));
		assert_int_equal(stackmap_get_id_hint(m, ips[k], 6, here, &h[k], 0, &id[k]), 1);
		assert_int_equal(id[k], k + 1);
	}
	for (uint32_t n = 0; n < N; n++)
		for (uint32_t k = 0; k < IDS; k++) {
			assert_int_equal(stackmap_get_id_hint(m, ips[k], 6, here, &h[k], 1, &got), STACKMAP_FROM_HINT);
			assert_int_equal(got, id[k]);
		}
	for (uint32_t k = 0; k < IDS; k++)
		assert_int_equal(ref_of(m, id[k]), N + 1);
	/* Every call a success, those counted in the entries too (they
	 * pass neither entry nor exit). */
	struct stackmap_stat st;
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.successes, IDS * (N + 1));
	assert_int_equal(st.drops, 0);
	struct stackmap_cpu *c = &m->cpu[here];
	uint32_t epoch = (uint32_t)m->hdr->epoch;
	if (m->percpu) {
		/* Nearly every hit in the entries (a preemption inside a
		 * section sends one to the element: allow a few), tagged
		 * with the epoch. */
		const struct stackmap_hit *e = &c->hit[1];
		assert_int_equal(e->id, 1);
		assert_int_equal(e->epoch, epoch);
		assert_true(e->n >= N - 5 && e->n <= N);
		assert_true(m->pool[0].ref <= 1 + 5);
		/* Id 9 found the entry taken: its element counted. */
		assert_true(m->pool[8].ref >= N + 1 - 5);
	}
	/* A reset empties the entries: the counts start again. */
	struct stackmap_hint old_hint = h[0];
	assert_int_equal(stackmap_reset(m, 0), 0);
	for (uint32_t e = 0; e < STACKMAP_HITS; e++)
		assert_true(c->hit[e].id == 0 && c->hit[e].n == 0);
	/* A hint of the old epoch is not taken. */
	assert_int_equal(stackmap_get_id_hint(m, ips[0], 6, here, &old_hint, 1, &got), 1);
	assert_int_equal(got, 1);
	assert_int_equal(ref_of(m, got), 1);
	/* An add of the old epoch landing after the reset (a section that
	 * checked its tag before) counts nowhere. */
	c->hit[2].id = 2;
	c->hit[2].epoch = epoch;
	c->hit[2].n = 7;
	memset(&h[0], 0, sizeof(h[0]));
	assert_int_equal(stackmap_get_id_hint(m, ips[1], 6, here, &h[0], 0, &got), 1);
	assert_int_equal(got, 2);
	assert_int_equal(ref_of(m, 2), 1);
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.successes, 2);
	/* ... and the entry is taken afresh by the new epoch's first hit. */
	assert_int_equal(stackmap_get_id_hint(m, ips[1], 6, here, &h[0], 1, &got), STACKMAP_FROM_HINT);
	assert_int_equal(ref_of(m, 2), 2);
	if (m->percpu && c->hit[2].epoch != epoch)
		assert_true(c->hit[2].n <= 1);
	memset(&h[0], 0, sizeof(h[0]));
	assert_int_equal(stackmap_get_id_hint(m, ips[0], 6, here, &h[0], 0, &got), 0);
	assert_int_equal(stackmap_get_id_hint(m, ips[0], 6, here, &h[0], 1, &got), STACKMAP_FROM_HINT);
	assert_int_equal(ref_of(m, got), 3);
	/* The atomic path alone, as without rseq: the element counts. */
	m->percpu = 0;
	assert_int_equal(stackmap_get_id_hint(m, ips[0], 6, here, &h[0], 1, &got), STACKMAP_FROM_HINT);
	assert_int_equal(ref_of(m, got), 4);
	assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof(old), &old), 0);
	free_map(f);
}

/*
 * The capture path's inline hint hit (stackmap_hit.h): with per-CPU
 * counting, a hint of this map and epoch is answered and counted in the
 * CPU's entries (the map's successes and the stack's count see it);
 * anything else (no per-CPU counting, a CPU out of range, another view's
 * hint, an old epoch, an id out of range) is -ENODATA and counts nothing.
 */
static void test_inline_hint_hit(void **state)
{
	(void)state;
	cpu_set_t old;
	uint32_t here = pin_to_first(&old);
	struct fixture *f = new_map(10, here + 1, SEED);
	struct stackmap *m = &f->map;
	uint64_t ips[6];
	make_stack(ips, 6, 3);
	struct stackmap_hint h = { 0, 0, 0 };
	uint32_t id = 0, got = 0;
	assert_int_equal(stackmap_get_id_hint(m, ips, 6, here, &h, 0, &id), 1);
	struct stackmap_stat st;
	if (m->percpu) {
		for (int k = 0; k < 100; k++) {
			got = 0;
			assert_int_equal(stackmap_hint_hit(m, here, &h, &got), STACKMAP_FROM_HINT);
			assert_int_equal(got, id);
		}
		assert_int_equal(stackmap_stat(m, &st), 0);
		assert_int_equal(st.successes, 101);
		assert_int_equal(ref_of(m, id), 101);
	}
	uint64_t before = stackmap_stat(m, &st) == 0 ? st.successes : 0;
	assert_int_equal(stackmap_hint_hit(m, m->ncpus, &h, &got), -ENODATA);
	struct stackmap_hint bad = h;
	bad.serial++;
	assert_int_equal(stackmap_hint_hit(m, here, &bad, &got), -ENODATA);
	bad = h;
	bad.id = m->max + 1;
	assert_int_equal(stackmap_hint_hit(m, here, &bad, &got), -ENODATA);
	uint32_t percpu = m->percpu;
	m->percpu = 0;
	assert_int_equal(stackmap_hint_hit(m, here, &h, &got), -ENODATA);
	m->percpu = percpu;
	assert_int_equal(stackmap_reset(m, 0), 0);
	assert_int_equal(stackmap_hint_hit(m, here, &h, &got), -ENODATA);
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.successes, 0);
	assert_true(before >= 1);
	assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof(old), &old), 0);
	free_map(f);
}

/*
 * A view for readers and resets (stackmap_open_view()): it leaves the
 * map's percpu flag alone and counts through the atomic halves; it reads
 * what a caller's view recorded, hint hits included, and resets it.
 */
static void test_open_view(void **state)
{
	(void)state;
	size_t size = stackmap_size(10, 2);
	void *mem = aligned_alloc(64, (size + 63) & ~(size_t)63);
	assert_non_null(mem);
	memset(mem, 0, size);
	assert_int_equal(stackmap_init(mem, size, 10, 2, SEED), 0);
	struct stackmap view, caller;
	assert_int_equal(stackmap_open_view(mem, size, &view), 0);
	assert_int_equal(view.percpu, 0);
	assert_int_equal(view.hdr->percpu, 0);
	assert_int_equal(stackmap_open_view(NULL, size, &view), -EINVAL);
	assert_int_equal(stackmap_open(mem, size, &caller), 0);
	assert_int_equal(view.hdr->percpu, (uint32_t)caller.percpu);
	uint64_t ips[6];
	make_stack(ips, 6, 3);
	struct stackmap_hint h;
	memset(&h, 0, sizeof(h));
	uint32_t id, got;
	assert_int_equal(stackmap_get_id_hint(&caller, ips, 6, 0, &h, 0, &id), 1);
	for (int i = 0; i < 10; i++)
		assert_int_equal(stackmap_get_id_hint(&caller, ips, 6, 0, &h, 1, &got), STACKMAP_FROM_HINT);
	assert_int_equal(ref_of(&view, id), 11);
	struct stackmap_stat st;
	assert_int_equal(stackmap_stat(&view, &st), 0);
	assert_int_equal(st.successes, 11);
	assert_int_equal(stackmap_reset(&view, 0), 0);
	assert_int_equal(stackmap_stat(&view, &st), 0);
	assert_int_equal(st.successes + st.entries, 0);
	assert_int_equal(stackmap_get_id(&view, ips, 6, 1, &got), 1);
	free(mem);
}

/*
 * Calls that name the CPU they run on count through the per-CPU halves
 * (when this build and this process have rseq), the others through the
 * atomic ones; either way successes and drops of each CPU add up to its
 * calls, and a view with percpu cleared uses the atomic halves only.
 */
static void test_percpu_counters(void **state)
{
	(void)state;
	cpu_set_t old;
	uint32_t here = pin_to_first(&old);
	/* Blocks for this CPU and the next one, which no thread here runs on. */
	struct fixture *f = new_map(10, here + 2, SEED);
	struct stackmap *m = &f->map;
	enum { N = 1000 };
	uint64_t ips[8];
	uint32_t id;
	for (uint32_t n = 0; n < N; n++) {
		make_stack(ips, 8, n % 50);
		assert_true(stackmap_get_id(m, ips, 8, here, &id) >= 0);
		assert_true(stackmap_get_id(m, ips, 8, here + 1, &id) >= 0);
	}
	/* Drops: a reset pretends to run. */
	m->hdr->resetting = 1;
	for (uint32_t n = 0; n < 10; n++) {
		assert_int_equal(stackmap_get_id(m, ips, 8, here, &id), -EAGAIN);
		assert_int_equal(stackmap_get_id(m, ips, 8, here + 1, &id), -EAGAIN);
	}
	m->hdr->resetting = 0;

	const struct stackmap_cpu *c0 = &m->cpu[here], *c1 = &m->cpu[here + 1];
	if (m->percpu) {
		/* Every call on CPU 0 went through its per-CPU half (no
		 * preemption inside a three-instruction section in 2000 calls,
		 * or a few: allow them), none through CPU 1's. */
		assert_true(c0->l_entries >= N + 10 - 5);
		assert_int_equal(c0->l_entries + c0->entries, N + 10);
		assert_int_equal(c0->l_exits + c0->exits, N + 10);
		assert_int_equal(c1->l_entries + c1->l_exits, 0);
	} else {
		assert_int_equal(c0->l_entries + c0->l_exits + c1->l_entries + c1->l_exits, 0);
	}
	assert_int_equal(c1->entries, N + 10);
	assert_int_equal(c1->exits, N + 10);
	uint64_t succ, drops;
	for (uint32_t cpu = here; cpu < here + 2; cpu++) {
		assert_int_equal(stackmap_cpu_stat(m, cpu, &succ, &drops), 0);
		assert_int_equal(succ, N);
		assert_int_equal(drops, 10);
	}
	struct stackmap_stat st;
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.successes, 2 * N);
	assert_int_equal(st.drops, 20);
	assert_int_equal(st.entries, 50);

	/* The atomic fallback alone, as without rseq. */
	uint64_t l0 = c0->l_entries;
	m->percpu = 0;
	for (uint32_t n = 0; n < 100; n++) {
		make_stack(ips, 8, n % 50);
		assert_int_equal(stackmap_get_id(m, ips, 8, here, &id), 0);
	}
	assert_int_equal(c0->l_entries, l0);
	assert_int_equal(stackmap_cpu_stat(m, here, &succ, &drops), 0);
	assert_int_equal(succ, N + 100);

	/* After a reset both halves start from zero again. */
	assert_int_equal(stackmap_reset(m, 0), 0);
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.successes + st.drops + st.entries, 0);
	free_map(f);
	assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof(old), &old), 0);
}

/*
 * Threads on every CPU call get_id naming the CPU they run on (the per-CPU
 * path) while this thread resets the map again and again: every reset
 * succeeds, no call fails other than with -EAGAIN or -ENOSPC, and once they
 * stop, the reference counts add up to the successes and every stored
 * element holds a stack of the set, once per stack and thread at most.
 */
#define DRAIN_THREADS 2
#define DRAIN_STACKS 300

struct drainer {
	struct stackmap *map;
	int cpu;
	int *stop;
	uint64_t calls, ok, again, other;
};

static void *drainer_main(void *p)
{
	struct drainer *d = p;
	pin_to(d->cpu);
	uint64_t ips[16];
	for (uint32_t n = 0; !__atomic_load_n(d->stop, __ATOMIC_ACQUIRE); n++) {
		uint32_t id;
		make_stack(ips, 16, n % DRAIN_STACKS);
		int r = stackmap_get_id(d->map, ips, 16, (uint32_t)d->cpu, &id);
		d->calls++;
		if (r >= 0)
			d->ok++;
		else if (r == -EAGAIN)
			d->again++;
		else if (r != -ENOSPC)
			d->other++;
	}
	return NULL;
}

struct check_walk {
	uint64_t ref_sum;
	uint32_t n, bad;
	uint32_t copies[DRAIN_STACKS];
};

static int check_one(void *arg, const struct stackmap_stack *s)
{
	struct check_walk *w = arg;
	uint64_t ips[16];
	uint32_t k = (uint32_t)((s->ips[0] - 0x400000u) / 0x1000);
	w->n++;
	w->ref_sum += s->ref;
	if (s->depth != 16 || k >= DRAIN_STACKS) {
		w->bad++;
		return 0;
	}
	make_stack(ips, 16, k);
	if (memcmp(ips, s->ips, sizeof(ips)) != 0)
		w->bad++;
	else
		w->copies[k]++;
	return 0;
}

static void test_reset_under_load(void **state)
{
	(void)state;
	int ncpu = online_cpus();
	struct fixture *f = new_map(10, (uint32_t)(ncpu > DRAIN_THREADS ? ncpu : DRAIN_THREADS), SEED);
	struct stackmap *m = &f->map;
	int stop = 0;
	struct drainer d[DRAIN_THREADS];
	pthread_t th[DRAIN_THREADS];
	for (int t = 0; t < DRAIN_THREADS; t++) {
		d[t] = (struct drainer){ m, t % ncpu, &stop, 0, 0, 0, 0 };
		assert_int_equal(pthread_create(&th[t], NULL, drainer_main, &d[t]), 0);
	}
	int fails = 0;
	for (int i = 0; i < 200; i++) {
		fails += stackmap_reset(m, 0) != 0;
		sleep_ms(1);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	uint64_t calls = 0, again = 0, other = 0;
	for (int t = 0; t < DRAIN_THREADS; t++) {
		assert_int_equal(pthread_join(th[t], NULL), 0);
		calls += d[t].calls;
		again += d[t].again;
		other += d[t].other;
	}
	assert_int_equal(fails, 0);
	assert_int_equal(other, 0);
	assert_true(calls > again);

	struct check_walk w;
	memset(&w, 0, sizeof(w));
	assert_int_equal(stackmap_for_each(m, check_one, &w), 0);
	assert_int_equal(w.bad, 0);
	for (uint32_t k = 0; k < DRAIN_STACKS; k++)
		assert_true(w.copies[k] <= DRAIN_THREADS);
	struct stackmap_stat st;
	assert_int_equal(stackmap_stat(m, &st), 0);
	assert_int_equal(st.successes, w.ref_sum);
	assert_int_equal(st.entries, w.n);
	/* Nothing in flight: every CPU's entries equal its exits. */
	for (uint32_t cpu = 0; cpu < m->ncpus; cpu++) {
		const struct stackmap_cpu *c = &m->cpu[cpu];
		assert_int_equal(c->l_entries + c->entries, c->l_exits + c->exits);
	}
	free_map(f);
}

/* ---- validation -------------------------------------------------------------------- */

static void test_open_damaged(void **state)
{
	struct fixture *f = *state;
	struct stackmap_header *h = f->mem;
	struct stackmap_header good = *h;
	struct stackmap v;

	/* Each field damaged in turn: refused, *ret_map untouched. */
#define DAMAGE(field, value, err)                                            \
	do {                                                                 \
		*h = good;                                                   \
		h->field = (value);                                          \
		memset(&v, 0xa5, sizeof(v));                                 \
		assert_int_equal(stackmap_open(f->mem, f->size, &v), (err)); \
		assert_int_equal(((unsigned char *)&v)[0], 0xa5);            \
	} while (0)
	DAMAGE(magic, good.magic ^ 1, -EBADMSG);
	DAMAGE(magic, 0, -EBADMSG);
	DAMAGE(version, 1, -EPROTO); /* the layout before per-CPU counting */
	DAMAGE(version, 3, -EPROTO);
	DAMAGE(header_size, 128, -EPROTO);
	DAMAGE(total_size, good.total_size + 64, -EBADMSG);
	DAMAGE(total_size, good.total_size - 64, -EBADMSG);
	DAMAGE(bits, 9, -EBADMSG);
	DAMAGE(bits, 19, -EBADMSG);
	DAMAGE(bits, 11, -EBADMSG); /* in range, but the sizes do not match */
	DAMAGE(ncpus, 0, -EBADMSG);
	DAMAGE(ncpus, STACKMAP_MAX_CPUS + 1, -EBADMSG);
	DAMAGE(ncpus, 3, -EBADMSG);
	DAMAGE(max_depth, 128, -EBADMSG);
	DAMAGE(elem_size, 512, -EBADMSG);
	DAMAGE(cpu_off, 0, -EBADMSG);
	DAMAGE(table_off, good.table_off + 64, -EBADMSG);
	DAMAGE(table_off, UINT64_MAX, -EBADMSG);
	DAMAGE(pool_off, good.pool_off - 64, -EBADMSG);
	DAMAGE(resetting, 2, -EBADMSG);
	DAMAGE(percpu, 2, -EBADMSG);
	DAMAGE(cursor, 2049, -EBADMSG);
#undef DAMAGE
	*h = good;
	/* Live values in range are accepted. */
	h->resetting = 1;
	h->cursor = 2048;
	assert_int_equal(stackmap_open(f->mem, f->size, &v), 0);
	*h = good;
	/* The block smaller than the map, too small for a header, misaligned. */
	assert_int_equal(stackmap_open(f->mem, f->size - 1, &v), -EBADMSG);
	assert_int_equal(stackmap_open(f->mem, 100, &v), -EBADMSG);
	assert_int_equal(stackmap_open((char *)f->mem + 8, f->size - 8, &v), -EINVAL);
	assert_int_equal(stackmap_open(NULL, f->size, &v), -EINVAL);
	assert_int_equal(stackmap_open(f->mem, f->size, &v), 0);
	assert_int_equal(v.max, 1024);
	assert_int_equal(v.mask, 2047);
	assert_int_equal(v.ncpus, 2);
	assert_int_equal(v.seed, SEED);
}

/* ---- exports ------------------------------------------------------------------------ */

struct membuf {
	char *data;
	size_t len;
	FILE *f;
};

static void mb_open(struct membuf *b)
{
	b->data = NULL;
	b->len = 0;
	b->f = open_memstream(&b->data, &b->len);
	assert_non_null(b->f);
}

static void mb_close(struct membuf *b)
{
	assert_int_equal(fclose(b->f), 0);
}

/* Three stacks: A twice, B, the empty stack; one drop. */
static void fill_golden(struct stackmap *m)
{
	uint64_t a[2] = { 0x401000, 0x402abc };
	uint64_t b[1] = { 0x7f0000001234 };
	uint32_t id;
	assert_int_equal(stackmap_get_id(m, a, 2, 0, &id), 1);
	assert_int_equal(stackmap_get_id(m, b, 1, 1, &id), 1);
	assert_int_equal(stackmap_get_id(m, a, 2, 1, &id), 0);
	assert_int_equal(stackmap_get_id(m, NULL, 0, 0, &id), 1);
	/* One drop: the map pretends a reset runs. */
	m->hdr->resetting = 1;
	assert_int_equal(stackmap_get_id(m, b, 1, 0, &id), -EAGAIN);
	m->hdr->resetting = 0;
}

static int sym_main(void *arg, uint64_t addr, char *buf, size_t size)
{
	(*(int *)arg)++;
	if (addr >= 0x401000 && addr < 0x401040) {
		snprintf(buf, size, "main+0x%llx/0x40", (unsigned long long)(addr - 0x401000));
		return 1;
	}
	if (addr == 0x7f0000001234) {
		snprintf(buf, size, "odd\"name\\\n+0x4/0x10");
		return 1;
	}
	return 0;
}

static void test_export_text(void **state)
{
	struct fixture *f = *state;
	fill_golden(&f->map);
	struct membuf b;
	mb_open(&b);
	assert_int_equal(stackmap_write_text(&f->map, b.f, NULL, NULL), 0);
	mb_close(&b);
	assert_string_equal(b.data, "stack_id 1 [ref 2, depth 2]\n"
				    "  [0] 0x401000\n"
				    "  [1] 0x402abc\n"
				    "\n"
				    "stack_id 2 [ref 1, depth 1]\n"
				    "  [0] 0x7f0000001234\n"
				    "\n"
				    "stack_id 3 [ref 1, depth 0]\n"
				    "\n");
	free(b.data);

	/* With a symboliser that knows main only. */
	int calls = 0;
	struct stackmap_stack *s;
	size_t n;
	assert_int_equal(stackmap_collect(&f->map, &s, &n), 0);
	assert_int_equal(n, 3);
	mb_open(&b);
	assert_int_equal(stackmap_print_text(b.f, s, 1, sym_main, &calls), 0);
	mb_close(&b);
	assert_string_equal(b.data, "stack_id 1 [ref 2, depth 2]\n"
				    "  [0] main+0x0/0x40\n"
				    "  [1] 0x402abc\n"
				    "\n");
	assert_int_equal(calls, 2);
	free(b.data);
	free(s);
}

static void test_export_stat(void **state)
{
	struct fixture *f = *state;
	fill_golden(&f->map);
	struct membuf b;
	mb_open(&b);
	assert_int_equal(stackmap_write_stat(&f->map, b.f), 0);
	mb_close(&b);
	assert_string_equal(b.data, "entries: 3 / 1024\n"
				    "table_size: 2048\n"
				    "successes: 4\n"
				    "drops: 1\n"
				    "success_rate: 80%\n");
	free(b.data);

	/* No call yet: rate 0, not a division by zero. */
	struct stackmap_stat st = { 0, 16384, 32768, 0, 0, 0 };
	mb_open(&b);
	assert_int_equal(stackmap_print_stat(b.f, &st), 0);
	mb_close(&b);
	assert_string_equal(b.data, "entries: 0 / 16384\n"
				    "table_size: 32768\n"
				    "successes: 0\n"
				    "drops: 0\n"
				    "success_rate: 0%\n");
	free(b.data);
}

/* The golden binary of fill_golden(), built field by field. */
static size_t golden_bin(unsigned char *out)
{
	size_t o = 0;
#define P32(v)                                   \
	do {                                     \
		uint32_t x_ = (v);               \
		memcpy(out + o, &x_, 4);         \
		o += 4;                          \
	} while (0)
#define P64(v)                                   \
	do {                                     \
		uint64_t x_ = (v);               \
		memcpy(out + o, &x_, 8);         \
		o += 8;                          \
	} while (0)
	P32(0x464D5342);
	P32(2);
	P32(3);
	P32(0);
	P32(1); P32(2); P32(2); P32(0); P64(0x401000); P64(0x402abc);
	P32(2); P32(1); P32(1); P32(0); P64(0x7f0000001234);
	P32(3); P32(0); P32(1); P32(0);
#undef P32
#undef P64
	return o;
}

/*
 * A reader written from the format's description alone, independent of the
 * module: it detects the byte order from the magic and decodes into
 * (id, nr, ref, ips) records. Returns the number of stacks or -1.
 */
struct rec {
	uint32_t id, nr, ref;
	uint64_t ips[64];
};

static uint32_t rd32(const unsigned char *p, int be)
{
	return be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
		  : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint64_t rd64(const unsigned char *p, int be)
{
	return be ? (uint64_t)rd32(p, 1) << 32 | rd32(p + 4, 1)
		  : (uint64_t)rd32(p + 4, 0) << 32 | rd32(p, 0);
}

static int indep_read(const unsigned char *p, size_t size, struct rec *out, int max, int *ret_be)
{
	if (size < 16)
		return -1;
	int be;
	if (p[0] == 0x42 && p[1] == 0x53 && p[2] == 0x4D && p[3] == 0x46)
		be = 0;
	else if (p[0] == 0x46 && p[1] == 0x4D && p[2] == 0x53 && p[3] == 0x42)
		be = 1;
	else
		return -1;
	if (rd32(p + 4, be) != 2 || rd32(p + 12, be) != 0)
		return -1;
	uint32_t n = rd32(p + 8, be);
	size_t off = 16;
	for (uint32_t i = 0; i < n; i++) {
		if ((int)i >= max || off + 16 > size)
			return -1;
		out[i].id = rd32(p + off, be);
		out[i].nr = rd32(p + off + 4, be);
		out[i].ref = rd32(p + off + 8, be);
		if (out[i].nr > 64 || rd32(p + off + 12, be) != 0 || off + 16 + out[i].nr * 8 > size)
			return -1;
		off += 16;
		for (uint32_t k = 0; k < out[i].nr; k++, off += 8)
			out[i].ips[k] = rd64(p + off, be);
	}
	if (off != size)
		return -1;
	*ret_be = be;
	return (int)n;
}

/* The whole file in the other byte order, field by field. */
static void swap_file(unsigned char *p, size_t size)
{
	uint32_t n;
	memcpy(&n, p + 8, 4);
	for (int k = 0; k < 4; k++) {
		uint32_t v;
		memcpy(&v, p + 4 * k, 4);
		v = __builtin_bswap32(v);
		memcpy(p + 4 * k, &v, 4);
	}
	size_t off = 16;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t nr;
		memcpy(&nr, p + off + 4, 4);
		for (int k = 0; k < 4; k++, off += 4) {
			uint32_t v;
			memcpy(&v, p + off, 4);
			v = __builtin_bswap32(v);
			memcpy(p + off, &v, 4);
		}
		for (uint32_t k = 0; k < nr; k++, off += 8) {
			uint64_t v;
			memcpy(&v, p + off, 8);
			v = __builtin_bswap64(v);
			memcpy(p + off, &v, 8);
		}
	}
	assert_int_equal(off, size);
}

static void check_golden_recs(const struct rec *r, int n)
{
	assert_int_equal(n, 3);
	assert_int_equal(r[0].id, 1);
	assert_int_equal(r[0].nr, 2);
	assert_int_equal(r[0].ref, 2);
	assert_int_equal(r[0].ips[0], 0x401000);
	assert_int_equal(r[0].ips[1], 0x402abc);
	assert_int_equal(r[1].id, 2);
	assert_int_equal(r[1].nr, 1);
	assert_int_equal(r[1].ref, 1);
	assert_int_equal(r[1].ips[0], 0x7f0000001234);
	assert_int_equal(r[2].id, 3);
	assert_int_equal(r[2].nr, 0);
	assert_int_equal(r[2].ref, 1);
}

static void check_golden_stacks(const struct stackmap_stack *s, size_t n)
{
	assert_int_equal(n, 3);
	assert_int_equal(s[0].id, 1);
	assert_int_equal(s[0].depth, 2);
	assert_int_equal(s[0].ref, 2);
	assert_int_equal(s[0].ips[0], 0x401000);
	assert_int_equal(s[0].ips[1], 0x402abc);
	assert_int_equal(s[1].id, 2);
	assert_int_equal(s[1].depth, 1);
	assert_int_equal(s[1].ref, 1);
	assert_int_equal(s[1].ips[0], 0x7f0000001234);
	assert_int_equal(s[2].id, 3);
	assert_int_equal(s[2].depth, 0);
	assert_int_equal(s[2].ref, 1);
}

static void test_export_bin(void **state)
{
	struct fixture *f = *state;
	fill_golden(&f->map);
	struct membuf b;
	mb_open(&b);
	assert_int_equal(stackmap_write_bin(&f->map, b.f), 0);
	mb_close(&b);

	unsigned char want[256];
	size_t wlen = golden_bin(want);
	assert_int_equal(b.len, wlen);
	assert_int_equal(wlen, 16 + 16 + 16 + 16 + 8 + 16);
	assert_memory_equal(b.data, want, wlen);

	/* Independent reader, native order (little-endian here). */
	struct rec recs[8];
	int be = -1;
	check_golden_recs(recs, indep_read((unsigned char *)b.data, b.len, recs, 8, &be));
	assert_int_equal(be, __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);

	/* The module's reader, native order. */
	struct stackmap_stack *s;
	size_t n;
	struct stackmap_bin_info info;
	assert_int_equal(stackmap_load_bin(b.data, b.len, &s, &n, &info), 0);
	assert_int_equal(info.version, 2);
	assert_int_equal(info.nstacks, 3);
	assert_int_equal(info.swapped, 0);
	check_golden_stacks(s, n);
	free(s);

	/* The same file as a machine of the other byte order writes it. */
	unsigned char *sw = malloc(b.len);
	assert_non_null(sw);
	memcpy(sw, b.data, b.len);
	swap_file(sw, b.len);
	assert_memory_not_equal(sw, b.data, 16);
	be = -1;
	check_golden_recs(recs, indep_read(sw, b.len, recs, 8, &be));
	assert_int_equal(be, __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__);
	assert_int_equal(stackmap_load_bin(sw, b.len, &s, &n, &info), 0);
	assert_int_equal(info.swapped, 1);
	assert_int_equal(info.nstacks, 3);
	check_golden_stacks(s, n);

	/* print_bin of what was read gives the native file back. */
	struct membuf b2;
	mb_open(&b2);
	assert_int_equal(stackmap_print_bin(b2.f, s, n), 0);
	mb_close(&b2);
	assert_int_equal(b2.len, wlen);
	assert_memory_equal(b2.data, want, wlen);
	free(b2.data);
	free(s);
	free(sw);
	free(b.data);
}

static int count_cb(void *arg, const struct stackmap_stack *s)
{
	(void)s;
	(*(int *)arg)++;
	return 0;
}

static int stop_cb(void *arg, const struct stackmap_stack *s)
{
	(void)arg;
	return s->id == 2 ? 42 : 0;
}

static void test_bin_hostile(void **state)
{
	(void)state;
	unsigned char g[256], t[256];
	size_t len = golden_bin(g);
	int calls = 0;

	/* Every truncation is refused and no stack is handed out. */
	for (size_t l = 0; l < len; l++)
		assert_int_equal(stackmap_read_bin(g, l, count_cb, &calls, NULL), -EBADMSG);
	assert_int_equal(calls, 0);
	/* Trailing bytes. */
	memcpy(t, g, len);
	t[len] = 0;
	assert_int_equal(stackmap_read_bin(t, len + 1, count_cb, &calls, NULL), -EBADMSG);

#define PATCH32(off, v)                                                                   \
	do {                                                                              \
		uint32_t v_ = (v);                                                        \
		memcpy(t, g, len);                                                        \
		memcpy(t + (off), &v_, 4);                                                \
	} while (0)
	PATCH32(0, 0x464D5343);                      /* magic */
	assert_int_equal(stackmap_read_bin(t, len, count_cb, &calls, NULL), -EBADMSG);
	PATCH32(4, 3);                               /* version */
	assert_int_equal(stackmap_read_bin(t, len, count_cb, &calls, NULL), -EPROTO);
	PATCH32(8, 4);                               /* one stack too many */
	assert_int_equal(stackmap_read_bin(t, len, count_cb, &calls, NULL), -EBADMSG);
	PATCH32(8, 2);                               /* one too few: trailing data */
	assert_int_equal(stackmap_read_bin(t, len, count_cb, &calls, NULL), -EBADMSG);
	PATCH32(8, UINT32_MAX);                      /* absurd count */
	assert_int_equal(stackmap_read_bin(t, len, count_cb, &calls, NULL), -EBADMSG);
	PATCH32(16, 0);                              /* id 0 */
	assert_int_equal(stackmap_read_bin(t, len, count_cb, &calls, NULL), -EBADMSG);
	PATCH32(20, 65);                             /* nr > 64 */
	assert_int_equal(stackmap_read_bin(t, len, count_cb, &calls, NULL), -EBADMSG);
	PATCH32(20, UINT32_MAX);                     /* nr * 8 overflowing 32 bits */
	assert_int_equal(stackmap_read_bin(t, len, count_cb, &calls, NULL), -EBADMSG);
	PATCH32(20, 4);                              /* the next header lands on an address */
	assert_int_equal(stackmap_read_bin(t, len, count_cb, &calls, NULL), -EBADMSG);
	assert_int_equal(calls, 0);
	/* Reserved words are the writer's business: accepted. */
	PATCH32(12, 7);
	assert_int_equal(stackmap_read_bin(t, len, count_cb, &calls, NULL), 0);
	assert_int_equal(calls, 3);
#undef PATCH32

	/* No stacks at all: valid. */
	calls = 0;
	assert_int_equal(stackmap_read_bin(g, 16, NULL, NULL, NULL), -EBADMSG);
	memcpy(t, g, 16);
	memset(t + 8, 0, 4);
	struct stackmap_bin_info info = { 9, 9, 9 };
	assert_int_equal(stackmap_read_bin(t, 16, count_cb, &calls, &info), 0);
	assert_int_equal(calls, 0);
	assert_int_equal(info.nstacks, 0);
	/* The callback's value stops the walk and comes back. */
	assert_int_equal(stackmap_read_bin(g, len, stop_cb, NULL, NULL), 42);
	assert_int_equal(stackmap_read_bin(NULL, 0, NULL, NULL, NULL), -EBADMSG);
	assert_int_equal(stackmap_read_bin(NULL, 16, NULL, NULL, NULL), -EINVAL);
}

static void test_sort_json(void **state)
{
	struct fixture *f = *state;
	fill_golden(&f->map);
	uint64_t c[1] = { 0x401010 };
	uint32_t id;
	for (int i = 0; i < 3; i++)
		assert_true(stackmap_get_id(&f->map, c, 1, 0, &id) >= 0);
	assert_int_equal(id, 4);

	struct stackmap_stack *s;
	size_t n;
	assert_int_equal(stackmap_collect(&f->map, &s, &n), 0);
	assert_int_equal(n, 4);
	/* refs: 1:2 2:1 3:1 4:3 -> 4, 1, 2, 3 (ties by id). */
	stackmap_sort_by_ref(s, n);
	assert_int_equal(s[0].id, 4);
	assert_int_equal(s[1].id, 1);
	assert_int_equal(s[2].id, 2);
	assert_int_equal(s[3].id, 3);

	int calls = 0;
	struct membuf b;
	mb_open(&b);
	assert_int_equal(stackmap_print_json(b.f, s, n, sym_main, &calls), 0);
	mb_close(&b);
	assert_string_equal(b.data,
			    "{\"stacks\":[\n"
			    "{\"stack_id\":4,\"ref\":3,\"depth\":1,\"frames\":[{\"addr\":\"0x401010\",\"sym\":\"main+0x10/0x40\"}]},\n"
			    "{\"stack_id\":1,\"ref\":2,\"depth\":2,\"frames\":[{\"addr\":\"0x401000\",\"sym\":\"main+0x0/0x40\"},{\"addr\":\"0x402abc\"}]},\n"
			    "{\"stack_id\":2,\"ref\":1,\"depth\":1,\"frames\":[{\"addr\":\"0x7f0000001234\",\"sym\":\"odd\\\"name\\\\\\u000a+0x4/0x10\"}]},\n"
			    "{\"stack_id\":3,\"ref\":1,\"depth\":0,\"frames\":[]}\n"
			    "]}\n");
	free(b.data);

	/* Top 1, no symboliser; and an empty list. */
	mb_open(&b);
	assert_int_equal(stackmap_print_json(b.f, s, 1, NULL, NULL), 0);
	assert_int_equal(stackmap_print_json(b.f, NULL, 0, NULL, NULL), 0);
	mb_close(&b);
	assert_string_equal(b.data, "{\"stacks\":[\n"
				    "{\"stack_id\":4,\"ref\":3,\"depth\":1,\"frames\":[{\"addr\":\"0x401010\"}]}\n"
				    "]}\n"
				    "{\"stacks\":[]}\n");
	free(b.data);
	free(s);
}

static void test_iterate(void **state)
{
	struct fixture *f = *state;
	fill_golden(&f->map);
	int n = 0;
	assert_int_equal(stackmap_for_each(&f->map, count_stack, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(stackmap_for_each(&f->map, stop_cb, NULL), 42);
	/* A damaged depth (another process scribbled) is skipped, not
	 * followed out of the element. */
	f->map.pool[1].depth = 65;
	n = 0;
	assert_int_equal(stackmap_for_each(&f->map, count_stack, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(stackmap_lookup(&f->map, 2, &(struct stackmap_stack){ 0 }), -ENOENT);
	/* A damaged element index in a slot is ignored by get_id. */
	for (uint32_t i = 0; i <= f->map.mask; i++)
		if (STACKMAP_SLOT_ID(f->map.table[i].elem) == 1)
			f->map.table[i].elem = STACKMAP_SLOT_ELEM(5000, 2);
	uint64_t a[2] = { 0x401000, 0x402abc };
	uint32_t id;
	assert_int_equal(stackmap_get_id(&f->map, a, 2, 0, &id), 1);
	assert_int_equal(id, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_basics, setup, teardown),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test_setup_teardown(test_hint, setup, teardown),
		cmocka_unit_test(test_hash_zero),
		cmocka_unit_test(test_hash_distribution),
		cmocka_unit_test_setup_teardown(test_exhaustion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_probe_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset_percpu_halves, setup, teardown),
		cmocka_unit_test(test_percpu_counters),
		cmocka_unit_test(test_percpu_hint_hits),
		cmocka_unit_test(test_inline_hint_hit),
		cmocka_unit_test(test_open_view),
		cmocka_unit_test(test_reset_under_load),
		cmocka_unit_test_setup_teardown(test_open_damaged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_export_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_export_stat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_export_bin, setup, teardown),
		cmocka_unit_test(test_bin_hostile),
		cmocka_unit_test_setup_teardown(test_sort_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_iterate, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
