/*
 * test_memsample.c - the sampling arithmetic and set of the allocation
 * tracer (src/mem/memsample.c, compiled in here for its static parts):
 * the logarithm and exponential written without libm against long double
 * series; the weights 1 / (1 - exp(-s/N)); the countdowns' mean and the
 * fraction of allocations of a size that are sampled, against
 * 1 - exp(-s/N); the parsing of RINGTRACE_MEM_SAMPLE and of the seed; the
 * set of sampled blocks against a plain model, full included.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mem/memsample.c"

/* exp(x) for 0 <= x <= 50 by its series, all terms positive. */
static long double exp_ref(long double x)
{
	long double term = 1, sum = 1;
	for (int k = 1; k < 400; k++) {
		term *= x / k;
		sum += term;
		if (term < sum * 1e-30L)
			break;
	}
	return sum;
}

static long double fabsl_(long double x)
{
	return x < 0 ? -x : x;
}

static void test_ln_exp(void **state)
{
	(void)state;
	/* ln: exp_ref(-ln u) * u == 1. */
	for (double u = 0x1.0p-53; u <= 1; u *= 1.37) {
		long double back = exp_ref(-(long double)ln_pos(u)) * u;
		assert_true(fabsl_(back - 1) < 1e-11L);
	}
	assert_true(ln_pos(1.0) == 0.0);
	for (double x = 0; x <= 40; x += 0.0317) {
		long double want = 1 / exp_ref(x);
		assert_true(fabsl_(exp_neg(x) - want) <= want * 1e-11L);
	}
}

static void test_weight(void **state)
{
	(void)state;
	memsample_mean = 262144;
	uint64_t sizes[] = { 1, 16, 24, 1000, 16383, 16384, 100000, 262144, 1000000, 10485760, UINT64_C(1) << 40 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		long double x = (long double)sizes[i] / memsample_mean;
		long double want = x > 45 ? 1 : 1 / (1 - 1 / exp_ref(x));
		assert_true(fabsl_(memsample_weight(sizes[i]) - want) <= want * 1e-9L);
	}
	/* Small blocks stand for about N/s allocations, large ones for one. */
	assert_true(memsample_weight(16) > 16383 && memsample_weight(16) < 16385);
	assert_true(memsample_weight(UINT64_C(1) << 30) == 1);
}

/* The countdowns are exponential of mean N; an allocation of s bytes in a
 * stream of them is sampled with probability 1 - exp(-s/N). */
static void test_draws(void **state)
{
	(void)state;
	memsample_mean = 4096;
	memsample_seed = 7;
	rng_seeded = 0;
	memsample_left = 0;
	double sum = 0;
	int n = 400000;
	rng = 12345;
	for (int i = 0; i < n; i++)
		sum += (double)draw();
	double mean = sum / n;
	assert_true(mean > 4096 * 0.99 && mean < 4096 * 1.01);

	uint64_t sizes[] = { 64, 1024, 4096, 20000 };
	for (size_t k = 0; k < 4; k++) {
		int picked = 0, m = 200000;
		for (int i = 0; i < m; i++)
			picked += memsample_pick(sizes[k]);
		double want = 1 / memsample_weight(sizes[k]);
		double got = (double)picked / m;
		assert_true(got > want * 0.97 && got < want * 1.03 + 0.001);
	}
}

static void test_parse(void **state)
{
	(void)state;
	uint64_t v = 0;
	assert_int_equal(parse_mean("524288", &v), 0);
	assert_int_equal(v, 524288);
	assert_int_equal(parse_mean("512K", &v), 0);
	assert_int_equal(v, 524288);
	assert_int_equal(parse_mean("1m", &v), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(parse_mean("1024G", &v), 0);
	assert_int_equal(v, UINT64_C(1) << 40);
	assert_int_equal(parse_mean("1", &v), 0);
	const char *bad[] = { "0", "0K", "-1", "", "abc", "12Q", "1KB", " 1", "1 ", "+5", "0x10" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse_mean(bad[i], &v), EINVAL);
	const char *big[] = { "1099511627777", "1025G", "99999999999999999999999", "18446744073709551616" };
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++)
		assert_int_equal(parse_mean(big[i], &v), ERANGE);
	assert_int_equal(parse_seed("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_seed("0xFFFFffffFFFFffff", &v), 0);
	assert_int_equal(v, UINT64_MAX);
	assert_int_equal(parse_seed("18446744073709551615", &v), 0);
	assert_int_equal(parse_seed("18446744073709551616", &v), ERANGE);
	assert_int_equal(parse_seed("0x", &v), EINVAL);
	assert_int_equal(parse_seed("", &v), EINVAL);
	assert_int_equal(parse_seed("12a", &v), EINVAL);
}

/* The set against a model: inserts until full, takes, reuse of freed
 * entries, the filter never says "no" for a member. */
static void test_set(void **state)
{
	(void)state;
	static struct sblk table[64];
	memset(table, 0, sizeof(table));
	memset(memsample_filter, 0, sizeof(memsample_filter));
	set = table;
	set_mask = 63;
	uintptr_t in[64];
	int n = 0;
	uint64_t info;
	for (uintptr_t p = 0x10000; n < 64; p += 48) {
		assert_int_equal(memsample_insert(p, p * 3), 0);
		in[n++] = p;
	}
	assert_int_equal(memsample_insert(0x99990, 1), -ENOSPC);
	assert_false(memsample_take(0x99990, &info));
	for (int i = 0; i < n; i++)
		assert_true(memsample_maybe((void *)in[i]));
	/* Take every other one; they are gone, the others stay. */
	for (int i = 0; i < n; i += 2) {
		assert_true(memsample_take(in[i], &info));
		assert_int_equal(info, in[i] * 3);
		assert_false(memsample_take(in[i], &info));
	}
	for (int i = 1; i < n; i += 2) {
		assert_true(memsample_maybe((void *)in[i]));
		assert_true(memsample_take(in[i], &info));
		assert_int_equal(info, in[i] * 3);
	}
	/* Empty again (tombstones): room for 64 new ones, the filter back
	 * to zero. */
	for (unsigned i = 0; i < (1u << MEMSAMPLE_FILTER_BITS); i++)
		assert_int_equal(memsample_filter[i], 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(memsample_insert(0x500000 + (uintptr_t)i * 16, 5), 0);
	assert_int_equal(memsample_insert(0x900000, 5), -ENOSPC);
	set = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ln_exp), cmocka_unit_test(test_weight), cmocka_unit_test(test_draws),
		cmocka_unit_test(test_parse), cmocka_unit_test(test_set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
