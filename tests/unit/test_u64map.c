/*
 * test_u64map.c - the command's hash map (src/util/u64map.c) against a
 * plain array model: random puts, gets and deletes over a small key range
 * (so that runs of colliding entries form and break up), key 0, keys that
 * share their home slot, growth, and the walk over the entries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/u64map.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The model: value of key k in model[k], present[k]. */
#define KEYS 4096
static uint64_t model[KEYS];
static char present[KEYS];

static void check_all(const struct u64map *m)
{
	size_t n = 0;
	for (uint64_t k = 0; k < KEYS; k++) {
		const uint64_t *v = u64map_get(m, k);
		if (present[k]) {
			assert_non_null(v);
			assert_int_equal(*v, model[k]);
			n++;
		} else {
			assert_null(v);
		}
	}
	assert_int_equal(m->n, n);
	/* At most half full: lookups of absent keys end. */
	assert_true(m->cap == 0 || (m->n - (size_t)m->has0) * 2 <= m->cap);
}

static void test_against_model(void **state)
{
	(void)state;
	struct u64map m = { 0 };
	memset(present, 0, sizeof(present));
	for (int round = 0; round < 200000; round++) {
		uint64_t k = next() % KEYS, op = next() % 10;
		if (op < 5) {
			int created;
			uint64_t *v = u64map_put(&m, k, &created);
			assert_non_null(v);
			assert_int_equal(created, !present[k]);
			if (created)
				assert_int_equal(*v, 0);
			*v += k + 1;
			model[k] = present[k] ? model[k] + k + 1 : k + 1;
			present[k] = 1;
		} else if (op < 9) {
			assert_int_equal(u64map_del(&m, k), present[k]);
			present[k] = 0;
		} else {
			const uint64_t *v = u64map_get(&m, k);
			assert_int_equal(v != NULL, present[k]);
		}
		if (round % 20000 == 0)
			check_all(&m);
	}
	check_all(&m);
	u64map_free(&m);
	assert_int_equal(m.n, 0);
	assert_null(u64map_get(&m, 1));
}

/* Keys whose home slots coincide in a small table: deleting from the
 * middle of a run must keep every later key reachable, across the wrap
 * from the last slot to the first. */
static void test_collisions_and_wrap(void **state)
{
	(void)state;
	struct u64map m = { 0 };
	assert_non_null(u64map_put(&m, 1, NULL)); /* a table of 64 slots */
	assert_int_equal(m.cap, 64);
	uint64_t same[8], last[8];
	size_t ns = 0, nl = 0;
	for (uint64_t k = 2; ns < 8 || nl < 8; k++) {
		size_t home = rt_mix64(k) & 63;
		if (home == 10 && ns < 8)
			same[ns++] = k;
		else if (home == 63 && nl < 8)
			last[nl++] = k;
	}
	u64map_del(&m, 1);
	for (size_t i = 0; i < 8; i++) {
		*u64map_put(&m, same[i], NULL) = same[i];
		*u64map_put(&m, last[i], NULL) = last[i];
	}
	for (size_t d = 0; d < 8; d += 2) {
		assert_int_equal(u64map_del(&m, same[d]), 1);
		assert_int_equal(u64map_del(&m, last[d]), 1);
		assert_int_equal(u64map_del(&m, last[d]), 0);
	}
	for (size_t i = 0; i < 8; i++) {
		uint64_t *a = u64map_get(&m, same[i]), *b = u64map_get(&m, last[i]);
		if (i % 2) {
			assert_non_null(a);
			assert_int_equal(*a, same[i]);
			assert_non_null(b);
			assert_int_equal(*b, last[i]);
		} else {
			assert_null(a);
			assert_null(b);
		}
	}
	u64map_free(&m);
}

static void test_zero_key_growth_walk(void **state)
{
	(void)state;
	struct u64map m = { 0 };
	*u64map_put(&m, 0, NULL) = 42;
	assert_int_equal(m.n, 1);
	assert_int_equal(m.cap, 0); /* key 0 takes no slot */
	uint64_t key, val;
	size_t pos = 0;
	assert_int_equal(u64map_next(&m, &pos, &key, &val), 1);
	assert_int_equal(key, 0);
	assert_int_equal(val, 42);
	assert_int_equal(u64map_next(&m, &pos, &key, &val), 0);
	uint64_t want[3] = { 0, 42, 1 };
	for (uint64_t k = 1; k <= 50000; k++) {
		*u64map_put(&m, k << 12, NULL) = k; /* page-aligned, like addresses */
		want[0] += k << 12;
		want[1] += k;
		want[2]++;
	}
	assert_int_equal(m.n, 50001);
	assert_int_equal(*u64map_get(&m, 0), 42);
	/* The walk gives every entry once, key 0 last. */
	uint64_t got[3] = { 0 }, last = 1;
	for (pos = 0; u64map_next(&m, &pos, &key, &val);) {
		got[0] += key;
		got[1] += val;
		got[2]++;
		last = key;
	}
	assert_memory_equal(got, want, sizeof(got));
	assert_int_equal(last, 0);
	assert_int_equal(u64map_del(&m, 0), 1);
	assert_null(u64map_get(&m, 0));
	assert_int_equal(m.n, 50000);
	u64map_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_model),
		cmocka_unit_test(test_collisions_and_wrap),
		cmocka_unit_test(test_zero_key_growth_walk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
