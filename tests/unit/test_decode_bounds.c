/*
 * test_decode_bounds.c - the decoder's work stays linear in its input
 * (read/decode.h), whatever the metadata declares.
 *
 * Each case is a minimal trace (no packet header or context, no event
 * header: the stream file is one packet of back-to-back events of one
 * class) read to its end through the reader, as `ringtrace dump` does:
 *  - rd_type.min_bits as the parser computes it;
 *  - arrays and sequences of elements that take no bits (empty structs,
 *    arrays of length 0, sequences of length 0, variants on an empty
 *    option), flat and nested, with lengths in the millions: an error that
 *    names the budget, after a bounded number of events, never a hang;
 *  - name lookups that are costly per element: charged too;
 *  - lengths that cannot fit in the bits left, including one whose size in
 *    bits overflows 64 bits (once decoded as an empty array): refused
 *    before anything is allocated;
 *  - legitimate traces with a few empty structs, sequences of sequences
 *    and variants decode to the right values;
 *  - the parser checks a struct of 65536 fields for duplicate names in
 *    well under a second (it once compared every pair: seconds per
 *    struct), and still reports the first duplicate with its line.
 * An alarm turns a hang into a failure.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "read/reader.h"
#include "read/tsdl.h"

#define HDR                                                                    \
	"/* CTF 1.8 */\n"                                                      \
	"trace { major = 1; minor = 8; byte_order = le; };\n"                  \
	"typealias integer { size = 1; align = 1; signed = false; } := u1;\n"  \
	"typealias integer { size = 8; align = 8; signed = false; } := u8;\n"  \
	"typealias integer { size = 16; align = 8; signed = false; } := u16;\n" \
	"typealias integer { size = 32; align = 8; signed = false; } := u32;\n"

/* The seconds a case may take before the alarm kills the test. */
#define CASE_SECONDS 20

struct run {
	int r;                       /* last rd_trace_next(): 0 or a negative errno */
	unsigned events;
	char msg[512];
};

/* Read the one-file trace (metadata `meta`, stream `data`) to its end. */
static void read_all(const char *meta, const uint8_t *data, size_t size, struct run *out)
{
	struct rd_mem_stream ms = { "stream_0", data, size };
	struct rd_trace *t;
	struct rd_item it;
	char err[256];

	memset(out, 0, sizeof(*out));
	if (rd_trace_open_mem(meta, strlen(meta), &ms, 1, &t, err, sizeof(err)) < 0)
		fail_msg("metadata: %s", err);
	alarm(CASE_SECONDS);
	while ((out->r = rd_trace_next(t, &it)) > 0)
		out->events++;
	alarm(0);
	if (out->r < 0)
		snprintf(out->msg, sizeof(out->msg), "%s", rd_trace_errmsg(t));
	rd_trace_close(t);
}

/* The case ends with the budget's error after fewer than `max_events`. */
static void expect_budget(const struct run *g, unsigned max_events)
{
	if (g->r != -EBADMSG || !strstr(g->msg, "steps per bit") || g->events >= max_events)
		fail_msg("got r=%d after %u events: %s", g->r, g->events, g->msg);
}

/* `n` copies of the `len` bytes of `ev`, in a malloc'd buffer. */
static uint8_t *repeat(const void *ev, size_t len, size_t n, size_t *ret_size)
{
	uint8_t *b = malloc(len * n);
	assert_non_null(b);
	for (size_t i = 0; i < n; i++)
		memcpy(b + i * len, ev, len);
	*ret_size = len * n;
	return b;
}

static const struct rd_type *field(const struct rd_meta *m, const char *name)
{
	const struct rd_type *f = m->events[0].fields;
	for (uint32_t i = 0; i < f->n_members; i++)
		if (!strcmp(f->members[i].name, name))
			return f->members[i].type;
	fail_msg("no field %s", name);
	return NULL;
}

static void test_min_bits(void **state)
{
	(void)state;
	static const char meta[] = HDR
		"enum e : u16 { a, b };\n"
		"event { name = x; fields := struct {\n"
		"  u1 bit; u32 word; string s; enum e en;\n"
		"  floating_point { exp_dig = 11; mant_dig = 53; align = 8; } d;\n"
		"  struct { } empty; struct { u8 a; string b; } pair;\n"
		"  variant <en> { u32 a; u8 b; } var; variant <en> { struct { } a; u8 b; } opt;\n"
		"  u16 arr[3][5]; struct { } earr[7]; u8 zero[0]; u8 seq[word]; u32 seqarr[word][2];\n"
		"  u32 huge[0x4000000000000000]; u32 huge2[0x100000000][0x100000000];\n"
		"}; };\n";
	static const struct { const char *name; uint64_t bits; } want[] = {
		{ "bit", 1 }, { "word", 32 }, { "s", 8 }, { "en", 16 }, { "d", 64 },
		{ "empty", 0 }, { "pair", 16 }, { "var", 8 }, { "opt", 0 }, { "arr", 240 },
		{ "earr", 0 }, { "zero", 0 }, { "seq", 0 }, { "seqarr", 0 },
		{ "huge", UINT64_MAX }, { "huge2", UINT64_MAX },
	};
	struct rd_meta *m;
	char err[256];
	if (rd_meta_parse(meta, sizeof(meta) - 1, &m, err, sizeof(err)) < 0)
		fail_msg("metadata: %s", err);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t got = field(m, want[i].name)->min_bits;
		if (got != want[i].bits)
			fail_msg("%s: min_bits %llu, want %llu", want[i].name, (unsigned long long)got,
				 (unsigned long long)want[i].bits);
	}
	assert_int_equal(m->events[0].fields->min_bits, UINT64_MAX);
	assert_int_equal(field(m, "seqarr")->elem->min_bits, 64);
	rd_meta_free(m);
}

/* Elements of no size, millions of them per event: the budget stops it. */
static void test_zero_size_elements(void **state)
{
	(void)state;
	static const struct {
		const char *fields;
		uint8_t ev[8];
		size_t len;
	} cases[] = {
		/* the reported defect: an array of empty structs */
		{ "u8 a; struct { } z[4000000];", { 1 }, 1 },
		/* nested: 2000 x 2000 empty structs (4 million values per event) */
		{ "u8 a; struct { } z[2000][2000];", { 1 }, 1 },
		/* arrays of arrays of length 0 */
		{ "u8 a; u8 z[4000000][0];", { 1 }, 1 },
		{ "u8 a; struct { struct { } in[0]; } z[4000000];", { 1 }, 1 },
		/* a sequence of sequences of length 0 */
		{ "u32 n; u8 m; u8 z[n][m];", { 0x00, 0x09, 0x3d, 0x00, 0x00 }, 5 },
		/* a sequence of empty structs, its length in the data */
		{ "u32 n; struct { } z[n];", { 0x00, 0x09, 0x3d, 0x00 }, 4 },
		/* a sequence of variants on their empty option */
		{ "enum : u8 { none = 0, some = 1 } tag; u32 n;"
		  " variant <tag> { struct { } none; u8 some; } z[n];",
		  { 0, 0x00, 0x09, 0x3d, 0x00 }, 5 },
		/* structs of empty arrays, 1000 per byte */
		{ "u8 a; struct { struct { } e[0]; } s[1000];", { 1 }, 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char meta[1024];
		snprintf(meta, sizeof(meta), HDR "event { name = x; fields := struct { %s }; };\n",
			 cases[i].fields);
		size_t size;
		uint8_t *data = repeat(cases[i].ev, cases[i].len, 2000, &size);
		struct run g;
		read_all(meta, data, size, &g);
		if (g.r != -EBADMSG || !strstr(g.msg, "steps per bit"))
			fail_msg("case %zu (%s): r=%d after %u events: %s", i, cases[i].fields, g.r,
				 g.events, g.msg);
		free(data);
	}
}

/*
 * Moderate use of elements of no size is fine; the same trace with more of
 * them per event stops part way, after a number of events bounded by the
 * packet size.
 */
static void test_budget_is_linear(void **state)
{
	(void)state;
	static const char meta[] = HDR
		"event { name = x; fields := struct { u8 n; struct { } z[n]; }; };\n";
	uint8_t ev[2] = { 20, 0 };          /* 20 empty structs per 8 bits, then 8 more bits */
	size_t size;
	uint8_t *data = repeat(ev, 1, 5000, &size);
	struct run g;
	read_all(meta, data, size, &g);
	assert_int_equal(g.r, 0);
	assert_int_equal(g.events, 5000);
	free(data);

	/* 255 x 255 per event: 65000 steps per 8 bits, about 256 times too many. */
	static const char meta2[] = HDR
		"event { name = x; fields := struct { u8 n; struct { } z[n][n]; }; };\n";
	ev[0] = 255;
	data = repeat(ev, 1, 100000, &size);
	read_all(meta2, data, size, &g);
	expect_budget(&g, 100000 / 200);
	assert_true(g.events > 0);
	free(data);
}

/* Resolving a length among thousands of earlier fields, for each element. */
static void test_lookup_cost(void **state)
{
	(void)state;
	size_t cap = 200000, n = 0;
	char *meta = malloc(cap);
	assert_non_null(meta);
	n += (size_t)snprintf(meta + n, cap - n, "%s", HDR "event { name = x; fields := struct { u8 n; u8 m;");
	for (int i = 0; i < 5000; i++)
		n += (size_t)snprintf(meta + n, cap - n, " u1 b%d;", i);
	snprintf(meta + n, cap - n, " struct { u8 s[n]; } a[m]; }; };\n");

	/* n = 1, m = 255, 625 bytes of bits, 255 one-byte elements. */
	enum { EV = 2 + 625 + 255 };
	static uint8_t ev[EV];
	ev[0] = 1;
	ev[1] = 255;
	size_t size;
	uint8_t *data = repeat(ev, EV, 100, &size);
	struct run g;
	read_all(meta, data, size, &g);
	/* 255 x 5000 names compared per 7056 bits: 180 per bit. */
	expect_budget(&g, 100);
	free(data);

	/* The same fields with m = 1: 5000 per event is well within. */
	ev[1] = 1;
	data = repeat(ev, 2 + 625 + 1, 100, &size);
	read_all(meta, data, size, &g);
	assert_int_equal(g.r, 0);
	assert_int_equal(g.events, 100);
	free(data);
	free(meta);
}

/* Lengths that cannot fit are refused before allocating. */
static void test_length_past_end(void **state)
{
	(void)state;
	static const char *const fields[] = {
		/* 2^61 x 8 bits is 2^64: the size once wrapped to 0, and the event
		 * decoded with an empty array */
		"u8 a; u8 z[0x2000000000000000]; u8 b;",
		"u8 a; u32 z[0x4000000000000000];",
		"u8 a; struct { u8 x; u16 y; } z[100000];",
		"u8 a; u8 z[1000][1000][1000][1000];",
		"u8 a; string z[1000000];",
		"enum : u8 { p = 1 } a; variant <a> { u8 p; u16 q; } z[1000000];",
	};
	static const uint8_t ev[16] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		char meta[1024];
		snprintf(meta, sizeof(meta), HDR "event { name = x; fields := struct { %s }; };\n",
			 fields[i]);
		struct run g;
		read_all(meta, ev, sizeof(ev), &g);
		if (g.r != -EBADMSG || g.events != 0 || !strstr(g.msg, "past the end"))
			fail_msg("case %zu (%s): r=%d after %u events: %s", i, fields[i], g.r, g.events,
				 g.msg);
	}
}

/* Legitimate traces with such fields decode to the right values. */
static void test_legit(void **state)
{
	(void)state;
	static const char meta[] = HDR
		"event { name = x; fields := struct {\n"
		"  u8 a; struct { } z[3]; u8 zero[0][4];\n"
		"  u8 n; struct { u8 len; u8 d[len]; } items[n];\n"
		"  enum : u8 { none = 0, some = 1 } tag;\n"
		"  u8 k; variant <tag> { struct { } none; u16 some; } v[k];\n"
		"  u8 r; u8 c; u8 grid[r][c]; string s;\n"
		"}; };\n";
	static const uint8_t ev[] = {
		7,                        /* a */
		3, 0, 2, 0xa, 0xb, 1, 0xc, /* items: [], [a b], [c] */
		1, 2, 0x34, 0x12, 0x78, 0x56, /* tag = some, k = 2, v = [0x1234, 0x5678] */
		2, 0,                     /* grid: 2 rows of 0 */
		'h', 'i', 0,
	};
	struct rd_mem_stream ms = { "stream_0", ev, sizeof(ev) };
	struct rd_trace *t;
	char err[256];
	if (rd_trace_open_mem(meta, sizeof(meta) - 1, &ms, 1, &t, err, sizeof(err)) < 0)
		fail_msg("metadata: %s", err);
	struct rd_item it;
	alarm(CASE_SECONDS);
	int r = rd_trace_next(t, &it);
	if (r != 1)
		fail_msg("r=%d: %s", r, rd_trace_errmsg(t));
	const struct rd_value *f = it.fields;
	assert_int_equal(rd_value_member(f, "a")->u, 7);
	assert_int_equal(rd_value_member(f, "z")->sub.n, 3);
	assert_int_equal(rd_value_member(f, "zero")->sub.n, 0);
	const struct rd_value *items = rd_value_member(f, "items");
	assert_int_equal(items->sub.n, 3);
	assert_int_equal(rd_value_member(&items->sub.v[0], "d")->sub.n, 0);
	assert_int_equal(rd_value_member(&items->sub.v[1], "d")->sub.n, 2);
	assert_int_equal(rd_value_member(&items->sub.v[1], "d")->sub.v[1].u, 0xb);
	assert_int_equal(rd_value_member(&items->sub.v[2], "d")->sub.v[0].u, 0xc);
	const struct rd_value *v = rd_value_member(f, "v");
	assert_int_equal(v->sub.n, 2);
	assert_int_equal(v->sub.v[1].sub.v[0].u, 0x5678);
	const struct rd_value *grid = rd_value_member(f, "grid");
	assert_int_equal(grid->sub.n, 2);
	assert_int_equal(grid->sub.v[0].sub.n, 0);
	assert_string_equal(rd_value_member(f, "s")->str.s, "hi");
	assert_int_equal(rd_trace_next(t, &it), 0);
	alarm(0);
	rd_trace_close(t);
}

static void test_wide_struct(void **state)
{
	(void)state;
	size_t cap = 4 << 20, n = 0;
	char *meta = malloc(cap);
	assert_non_null(meta);
	n += (size_t)snprintf(meta + n, cap - n, "%s", HDR "event { name = x; fields := struct {");
	for (int i = 0; i < 65536; i++)
		n += (size_t)snprintf(meta + n, cap - n, " u8 field_with_a_long_common_prefix_%d;", i);
	n += (size_t)snprintf(meta + n, cap - n, " }; };\n");
	assert_true(n < cap);
	struct rd_meta *m;
	char err[256];
	alarm(5);
	if (rd_meta_parse(meta, n, &m, err, sizeof(err)) < 0)
		fail_msg("metadata: %s", err);
	alarm(0);
	assert_int_equal(m->events[0].fields->n_members, 65536);
	rd_meta_free(m);
	free(meta);

	/* The first field that repeats a name, in declaration order. */
	static const char dup[] = HDR
		"event { name = x; fields := struct { u8 b; u8 a; u8 c;\n"
		"u8 z;\n u8 a;\n u8 b; u8 c; }; };\n";
	assert_int_equal(rd_meta_parse(dup, sizeof(dup) - 1, &m, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 9: duplicate field 'a'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_min_bits),
		cmocka_unit_test(test_zero_size_elements),
		cmocka_unit_test(test_budget_is_linear),
		cmocka_unit_test(test_lookup_cost),
		cmocka_unit_test(test_length_past_end),
		cmocka_unit_test(test_legit),
		cmocka_unit_test(test_wide_struct),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
