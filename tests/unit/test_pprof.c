/*
 * test_pprof.c - the pprof writer (src/export/pprof.c) read back by a
 * small protobuf decoder written here from profile.proto: what goes in
 * comes out, strings, mappings, functions, locations and samples are
 * kept once, negative and saturated values survive the encoding, the
 * gzip stream inflates to the same bytes, Go's heap-profile layout, and
 * the error returns. pprof itself reads the output in tests/e2e/pprof.sh.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "export/pprof.h"

/* ---- a decoder of what the writer writes ---------------------------------- */

#define MAXN 64

struct rdr {
	const uint8_t *p, *end;
};

static uint64_t varint(struct rdr *r)
{
	uint64_t v = 0;
	for (int shift = 0;; shift += 7) {
		assert_true(r->p < r->end);
		assert_true(shift < 64);
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
}

/* The next field of r: its number, and either its varint value or its
 * bytes (in *sub). 0 at the end. */
static unsigned field(struct rdr *r, uint64_t *val, struct rdr *sub)
{
	if (r->p == r->end)
		return 0;
	uint64_t key = varint(r);
	unsigned wire = key & 7;
	if (wire == 0) {
		*val = varint(r);
	} else {
		assert_int_equal(wire, 2);
		uint64_t len = varint(r);
		assert_true(len <= (uint64_t)(r->end - r->p));
		*sub = (struct rdr){ r->p, r->p + len };
		r->p += len;
	}
	assert_true(key >> 3 > 0);
	return (unsigned)(key >> 3);
}

struct d_sample {
	uint64_t loc[MAXN];
	size_t nloc;
	int64_t val[8];
	size_t nval;
	int64_t lab[8][4];           /* key, str, num, unit */
	size_t nlab;
};

struct d_loc {
	uint64_t id, mapping, addr, function;
	int64_t line;
	int nlines;
};

struct d_fn {
	uint64_t id;
	int64_t name, system_name, file;
};

struct d_map {
	uint64_t id, start, limit, offset, has_fn, has_file, has_line;
	int64_t file, build_id;
};

struct decoded {
	char *str[256];
	size_t nstr;
	int64_t st[8][2];
	size_t nst;
	struct d_sample smp[MAXN];
	size_t nsmp;
	struct d_loc loc[MAXN];
	size_t nloc;
	struct d_fn fn[MAXN];
	size_t nfn;
	struct d_map map[MAXN];
	size_t nmap;
	int64_t time, duration, period, pt[2], def;
	int64_t comment[8];
	size_t ncomment;
};

static void value_type(struct rdr r, int64_t out[2])
{
	uint64_t v;
	struct rdr s;
	unsigned f;
	while ((f = field(&r, &v, &s)))
		if (f == 1 || f == 2)
			out[f - 1] = (int64_t)v;
}

/* A packed repeated varint field. */
static size_t packed(struct rdr s, uint64_t *out, size_t max)
{
	size_t n = 0;
	while (s.p < s.end) {
		assert_true(n < max);
		out[n++] = varint(&s);
	}
	return n;
}

static void decode_sample(struct rdr r, struct d_sample *o)
{
	uint64_t v;
	struct rdr s, l;
	unsigned f;
	while ((f = field(&r, &v, &s))) {
		if (f == 1) {
			o->nloc = packed(s, o->loc, MAXN);
		} else if (f == 2) {
			o->nval = packed(s, (uint64_t *)o->val, 8);
		} else if (f == 3) {
			assert_true(o->nlab < 8);
			int64_t *lab = o->lab[o->nlab++];
			unsigned g;
			while ((g = field(&s, &v, &l)))
				if (g >= 1 && g <= 4)
					lab[g - 1] = (int64_t)v;
		}
	}
}

static void decode_location(struct rdr r, struct d_loc *o)
{
	uint64_t v;
	struct rdr s, t;
	unsigned f, g;
	while ((f = field(&r, &v, &s))) {
		if (f == 1)
			o->id = v;
		else if (f == 2)
			o->mapping = v;
		else if (f == 3)
			o->addr = v;
		else if (f == 4) {
			o->nlines++;
			while ((g = field(&s, &v, &t)))
				if (g == 1)
					o->function = v;
				else if (g == 2)
					o->line = (int64_t)v;
		}
	}
}

static struct decoded *decode(const void *data, size_t len)
{
	struct decoded *d = calloc(1, sizeof(*d));
	assert_non_null(d);
	struct rdr r = { data, (const uint8_t *)data + len }, s;
	uint64_t v;
	unsigned f, g;
	while ((f = field(&r, &v, &s))) {
		switch (f) {
		case 1:
			assert_true(d->nst < 8);
			value_type(s, d->st[d->nst++]);
			break;
		case 2:
			assert_true(d->nsmp < MAXN);
			decode_sample(s, &d->smp[d->nsmp++]);
			break;
		case 3: {
			assert_true(d->nmap < MAXN);
			struct d_map *m = &d->map[d->nmap++];
			uint64_t *u[] = { NULL, &m->id, &m->start, &m->limit, &m->offset, NULL, NULL,
					  &m->has_fn, &m->has_file, &m->has_line };
			struct rdr t;
			while ((g = field(&s, &v, &t))) {
				if (g < 10 && u[g])
					*u[g] = v;
				else if (g == 5)
					m->file = (int64_t)v;
				else if (g == 6)
					m->build_id = (int64_t)v;
			}
			break;
		}
		case 4:
			assert_true(d->nloc < MAXN);
			decode_location(s, &d->loc[d->nloc++]);
			break;
		case 5: {
			assert_true(d->nfn < MAXN);
			struct d_fn *fn = &d->fn[d->nfn++];
			struct rdr t;
			while ((g = field(&s, &v, &t)))
				if (g == 1)
					fn->id = v;
				else if (g == 2)
					fn->name = (int64_t)v;
				else if (g == 3)
					fn->system_name = (int64_t)v;
				else if (g == 4)
					fn->file = (int64_t)v;
			break;
		}
		case 6:
			assert_true(d->nstr < 256);
			d->str[d->nstr] = strndup((const char *)s.p, (size_t)(s.end - s.p));
			assert_non_null(d->str[d->nstr++]);
			break;
		case 9:
			d->time = (int64_t)v;
			break;
		case 10:
			d->duration = (int64_t)v;
			break;
		case 11:
			value_type(s, d->pt);
			break;
		case 12:
			d->period = (int64_t)v;
			break;
		case 13:
			assert_true(d->ncomment < 8);
			d->comment[d->ncomment++] = (int64_t)v;
			break;
		case 14:
			d->def = (int64_t)v;
			break;
		default:
			fail_msg("unexpected field %u", f);
		}
	}
	return d;
}

static void decoded_free(struct decoded *d)
{
	for (size_t i = 0; i < d->nstr; i++)
		free(d->str[i]);
	free(d);
}

static struct decoded *encode_decode(struct pprof *p)
{
	struct ctf_buf b;
	ctf_buf_init(&b);
	assert_int_equal(pprof_encode(p, &b), 0);
	struct decoded *d = decode(b.data, b.len);
	ctf_buf_free(&b);
	return d;
}

static const char *S(const struct decoded *d, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < d->nstr);
	return d->str[i];
}

static const struct d_loc *loc_by_id(const struct decoded *d, uint64_t id)
{
	for (size_t i = 0; i < d->nloc; i++)
		if (d->loc[i].id == id)
			return &d->loc[i];
	fail_msg("no location %llu", (unsigned long long)id);
	return NULL;
}

static const struct d_fn *fn_by_id(const struct decoded *d, uint64_t id)
{
	for (size_t i = 0; i < d->nfn; i++)
		if (d->fn[i].id == id)
			return &d->fn[i];
	fail_msg("no function %llu", (unsigned long long)id);
	return NULL;
}

/* The sample whose stack is addrs[0..n-1] and whose first label (if
 * any) has the string value `label`; NULL. */
static const struct d_sample *find_sample(const struct decoded *d, const uint64_t *addrs, size_t n,
					  const char *label)
{
	for (size_t i = 0; i < d->nsmp; i++) {
		const struct d_sample *s = &d->smp[i];
		if (s->nloc != n || (label ? !s->nlab || strcmp(S(d, s->lab[0][1]), label) : s->nlab != 0))
			continue;
		size_t k = 0;
		while (k < n && loc_by_id(d, s->loc[k])->addr == addrs[k])
			k++;
		if (k == n)
			return s;
	}
	return NULL;
}

/* ---- a symboliser -------------------------------------------------------- */

static int sym_calls;

/* [0x1000, 0x1100): leaf (a.c, line = low byte); [0x1100, 0x1200): main
 * (a.c); [0x5000, 0x6000): libfn (no file); elsewhere nothing. */
static int fake_sym(void *arg, uint64_t addr, struct pprof_frame *ret)
{
	(void)arg;
	sym_calls++;
	if (addr >= 0x1000 && addr < 0x1100)
		*ret = (struct pprof_frame){ .function = "leaf", .file = "a.c", .line = (int64_t)(addr & 0xff) };
	else if (addr >= 0x1100 && addr < 0x1200)
		*ret = (struct pprof_frame){ .function = "main", .system_name = "main", .file = "a.c", .line = 7 };
	else if (addr >= 0x5000 && addr < 0x6000)
		*ret = (struct pprof_frame){ .function = "libfn" };
	else
		return 0;
	return 1;
}

/* ---- tests ----------------------------------------------------------------- */

static void test_dedup(void **state)
{
	(void)state;
	struct pprof *p;
	assert_int_equal(pprof_new(&p), 0);
	assert_int_equal(pprof_add_sample_type(p, "events", "count"), 0);
	assert_int_equal(pprof_add_mapping(p, 0x1000, 0x2000, 0x1000, "/bin/prog", "abcd01"), 1);
	assert_int_equal(pprof_add_mapping(p, 0x5000, 0x6000, 0, "/lib/libx.so", NULL), 2);
	assert_int_equal(pprof_add_mapping(p, 0x1000, 0x2000, 0x1000, "/bin/prog", "abcd01"), 1);
	assert_int_equal(pprof_set_symbolizer(p, fake_sym, NULL), 0);
	sym_calls = 0;

	const uint64_t a[] = { 0x1010, 0x1110 }, b[] = { 0x1020, 0x1110 }, c[] = { 0x5010, 0x1110 },
		       u[] = { 0x9000 };
	const struct pprof_label ea = { .key = "event", .str = "p:a" }, eb = { .key = "event", .str = "p:b" };
	int64_t one = 1, five = 5, seven = 7;
	assert_int_equal(pprof_add_sample(p, a, 2, &one, &ea, 1), 0);
	assert_int_equal(pprof_add_sample(p, a, 2, &one, &ea, 1), 0); /* merged: 2 */
	assert_int_equal(pprof_add_sample(p, a, 2, &five, &eb, 1), 0); /* another label */
	assert_int_equal(pprof_add_sample(p, b, 2, &five, &ea, 1), 0);
	assert_int_equal(pprof_add_sample(p, c, 2, &one, NULL, 0), 0);
	assert_int_equal(pprof_add_sample(p, u, 1, &one, NULL, 0), 0);
	assert_int_equal(pprof_add_sample(p, NULL, 0, &seven, NULL, 0), 0);
	assert_int_equal(pprof_sample_count(p), 6);
	/* Each address is symbolised once. */
	assert_int_equal(sym_calls, 5);

	struct decoded *d = encode_decode(p);
	/* The string table: "" first, no string twice. */
	assert_true(d->nstr > 0);
	assert_string_equal(d->str[0], "");
	for (size_t i = 0; i < d->nstr; i++)
		for (size_t k = i + 1; k < d->nstr; k++)
			assert_string_not_equal(d->str[i], d->str[k]);
	assert_int_equal(d->nst, 1);
	assert_string_equal(S(d, d->st[0][0]), "events");
	assert_string_equal(S(d, d->st[0][1]), "count");

	/* Samples, merged by stack and label. */
	assert_int_equal(d->nsmp, 6);
	const struct d_sample *s = find_sample(d, a, 2, "p:a");
	assert_non_null(s);
	assert_int_equal(s->nval, 1);
	assert_int_equal(s->val[0], 2);
	assert_string_equal(S(d, s->lab[0][0]), "event");
	assert_int_equal(find_sample(d, a, 2, "p:b")->val[0], 5);
	assert_int_equal(find_sample(d, b, 2, "p:a")->val[0], 5);
	assert_int_equal(find_sample(d, c, 2, NULL)->val[0], 1);
	assert_int_equal(find_sample(d, NULL, 0, NULL)->val[0], 7);

	/* Five addresses, five locations; 0x1110 is shared. */
	assert_int_equal(d->nloc, 5);
	for (size_t i = 0; i < d->nloc; i++)
		assert_int_equal(d->loc[i].id, i + 1);
	/* Three functions: 0x1010 and 0x1020 are both in leaf. */
	assert_int_equal(d->nfn, 3);
	const struct d_loc *l1 = loc_by_id(d, s->loc[0]), *l2 = loc_by_id(d, find_sample(d, b, 2, "p:a")->loc[0]);
	assert_int_equal(l1->function, l2->function);
	assert_int_equal(l1->line, 0x10);
	assert_int_equal(l2->line, 0x20);
	assert_int_equal(l1->mapping, 1);
	const struct d_fn *leaf = fn_by_id(d, l1->function);
	assert_string_equal(S(d, leaf->name), "leaf");
	assert_string_equal(S(d, leaf->system_name), "leaf");
	assert_string_equal(S(d, leaf->file), "a.c");
	const struct d_loc *lu = loc_by_id(d, find_sample(d, u, 1, NULL)->loc[0]);
	assert_int_equal(lu->mapping, 0);
	assert_int_equal(lu->nlines, 0);
	const struct d_loc *lc = loc_by_id(d, find_sample(d, c, 2, NULL)->loc[0]);
	assert_int_equal(lc->mapping, 2);
	assert_string_equal(S(d, fn_by_id(d, lc->function)->name), "libfn");
	assert_int_equal(fn_by_id(d, lc->function)->file, 0);

	/* Two mappings, with their files, build ids and what is known. */
	assert_int_equal(d->nmap, 2);
	assert_int_equal(d->map[0].id, 1);
	assert_int_equal(d->map[0].start, 0x1000);
	assert_int_equal(d->map[0].limit, 0x2000);
	assert_int_equal(d->map[0].offset, 0x1000);
	assert_string_equal(S(d, d->map[0].file), "/bin/prog");
	assert_string_equal(S(d, d->map[0].build_id), "abcd01");
	assert_int_equal(d->map[0].has_fn, 1);
	assert_int_equal(d->map[0].has_file, 1);
	assert_int_equal(d->map[0].has_line, 1);
	assert_string_equal(S(d, d->map[1].file), "/lib/libx.so");
	assert_int_equal(d->map[1].build_id, 0);
	assert_int_equal(d->map[1].has_fn, 1);
	assert_int_equal(d->map[1].has_file, 0);
	assert_int_equal(d->map[1].has_line, 0);
	decoded_free(d);
	pprof_free(p);
}

static void test_values_and_header(void **state)
{
	(void)state;
	struct pprof *p;
	assert_int_equal(pprof_new(&p), 0);
	assert_int_equal(pprof_add_sample_type(p, "a", "count"), 0);
	assert_int_equal(pprof_add_sample_type(p, "b", "bytes"), 1);
	assert_int_equal(pprof_set_default_sample_type(p, "a"), 0);
	assert_int_equal(pprof_set_default_sample_type(p, "zz"), -ENOENT);
	assert_int_equal(pprof_set_period(p, "space", "bytes", 524288), 0);
	pprof_set_time(p, 1700000000123456789ll, 42);
	assert_int_equal(pprof_add_comment(p, "first"), 0);
	assert_int_equal(pprof_add_comment(p, "second"), 0);
	const uint64_t x[] = { 0x10 }, y[] = { 0x20 };
	int64_t v1[2] = { -3, INT64_MAX }, v2[2] = { 0, 1 };
	assert_int_equal(pprof_add_sample(p, x, 1, v1, NULL, 0), 0);
	assert_int_equal(pprof_add_sample(p, y, 1, v2, NULL, 0), 0);
	assert_int_equal(pprof_add_sample(p, x, 1, v1, NULL, 0), 0); /* saturates */
	const struct pprof_label num = { .key = "bytes", .num = -12, .num_unit = "bytes" };
	assert_int_equal(pprof_add_sample(p, y, 1, v2, &num, 1), 0);

	struct decoded *d = encode_decode(p);
	assert_int_equal(d->nst, 2);
	assert_string_equal(S(d, d->st[1][0]), "b");
	assert_string_equal(S(d, d->st[1][1]), "bytes");
	assert_string_equal(S(d, d->def), "a");
	assert_string_equal(S(d, d->pt[0]), "space");
	assert_string_equal(S(d, d->pt[1]), "bytes");
	assert_int_equal(d->period, 524288);
	assert_int_equal(d->time, 1700000000123456789ll);
	assert_int_equal(d->duration, 42);
	assert_int_equal(d->ncomment, 2);
	assert_string_equal(S(d, d->comment[0]), "first");
	assert_string_equal(S(d, d->comment[1]), "second");
	assert_int_equal(d->nsmp, 3);
	const struct d_sample *s = find_sample(d, x, 1, NULL);
	assert_int_equal(s->nval, 2);
	assert_int_equal(s->val[0], -6);
	assert_int_equal(s->val[1], INT64_MAX);
	s = find_sample(d, y, 1, NULL);
	assert_int_equal(s->val[0], 0); /* a zero inside a packed field is kept */
	assert_int_equal(s->val[1], 1);
	/* The numeric label. */
	int found = 0;
	for (size_t i = 0; i < d->nsmp; i++)
		if (d->smp[i].nlab == 1) {
			assert_string_equal(S(d, d->smp[i].lab[0][0]), "bytes");
			assert_int_equal(d->smp[i].lab[0][1], 0);
			assert_int_equal(d->smp[i].lab[0][2], -12);
			assert_string_equal(S(d, d->smp[i].lab[0][3]), "bytes");
			found = 1;
		}
	assert_true(found);
	/* Without a symboliser or mappings: addresses only. */
	assert_int_equal(d->nfn, 0);
	assert_int_equal(d->nmap, 0);
	assert_int_equal(d->nloc, 2);
	decoded_free(d);
	pprof_free(p);
}

/* Many stacks: the tables grow and stay deduplicated. */
static void test_many(void **state)
{
	(void)state;
	struct pprof *p;
	assert_int_equal(pprof_new(&p), 0);
	assert_int_equal(pprof_add_sample_type(p, "events", "count"), 0);
	assert_int_equal(pprof_set_symbolizer(p, fake_sym, NULL), 0);
	for (int round = 0; round < 3; round++)
		for (uint64_t i = 0; i < 5000; i++) {
			uint64_t st[3] = { 0x1000 + (i % 200), 0x1100 + (i / 200), 0x1100 };
			int64_t one = 1;
			assert_int_equal(pprof_add_sample(p, st, 3, &one, NULL, 0), 0);
		}
	assert_int_equal(pprof_sample_count(p), 5000);
	struct ctf_buf b;
	ctf_buf_init(&b);
	assert_int_equal(pprof_encode(p, &b), 0);
	/* 200 leaf + 25 main addresses (0x1100 among them), two functions. */
	struct rdr r = { (const uint8_t *)b.data, (const uint8_t *)b.data + b.len }, s;
	uint64_t v;
	unsigned f;
	size_t nsmp = 0, nloc = 0, nfn = 0;
	int64_t total = 0;
	while ((f = field(&r, &v, &s))) {
		nsmp += f == 2;
		nloc += f == 4;
		nfn += f == 5;
		if (f == 2) {
			struct d_sample ds = { 0 };
			decode_sample(s, &ds);
			total += ds.val[0];
		}
	}
	assert_int_equal(nsmp, 5000);
	assert_int_equal(nloc, 225);
	assert_int_equal(nfn, 2);
	assert_int_equal(total, 15000);
	ctf_buf_free(&b);
	pprof_free(p);
}

/* pprof_write's gzip stream inflates to pprof_encode's bytes. */
static void test_gzip(void **state)
{
	(void)state;
	struct pprof *p;
	assert_int_equal(pprof_new(&p), 0);
	assert_int_equal(pprof_add_sample_type(p, "events", "count"), 0);
	for (uint64_t i = 1; i <= 3000; i++) {
		int64_t v = (int64_t)i;
		assert_int_equal(pprof_add_sample(p, &i, 1, &v, NULL, 0), 0);
	}
	struct ctf_buf raw;
	ctf_buf_init(&raw);
	assert_int_equal(pprof_encode(p, &raw), 0);
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_int_equal(pprof_write(p, f), 0);
	long zlen = ftell(f);
	assert_true(zlen > 18);
	rewind(f);
	unsigned char *z = malloc((size_t)zlen), *out = malloc(raw.len + 16);
	assert_non_null(z);
	assert_non_null(out);
	assert_int_equal(fread(z, 1, (size_t)zlen, f), (size_t)zlen);
	assert_int_equal(z[0], 0x1f); /* the gzip magic */
	assert_int_equal(z[1], 0x8b);
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = z;
	zs.avail_in = (unsigned)zlen;
	zs.next_out = out;
	zs.avail_out = (unsigned)raw.len + 16;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	assert_int_equal(zs.total_out, raw.len);
	assert_memory_equal(out, raw.data, raw.len);
	inflateEnd(&zs);
	free(z);
	free(out);
	fclose(f);
	ctf_buf_free(&raw);
	pprof_free(p);
}

/* A profile without samples is still a profile: its types and "". */
static void test_empty(void **state)
{
	(void)state;
	struct pprof *p;
	assert_int_equal(pprof_new(&p), 0);
	assert_int_equal(pprof_heap_profile(p, NULL, 0, 1), 0);
	struct decoded *d = encode_decode(p);
	assert_int_equal(d->nsmp, 0);
	assert_int_equal(d->nst, 4);
	assert_string_equal(d->str[0], "");
	decoded_free(d);
	pprof_free(p);
}

static void test_heap_profile(void **state)
{
	(void)state;
	struct pprof *p;
	assert_int_equal(pprof_new(&p), 0);
	const uint64_t s1[] = { 0x1010, 0x1110 }, s2[] = { 0x1020 };
	const struct pprof_heap_stack v[] = {
		{ s1, 2, 10, 1000, 2, 200 },
		{ s2, 1, 1, 5000, 0, 0 },
	};
	assert_int_equal(pprof_heap_profile(p, v, 2, 524288), 0);
	struct decoded *d = encode_decode(p);
	static const char *const names[4][2] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
		{ "inuse_objects", "count" }, { "inuse_space", "bytes" } };
	assert_int_equal(d->nst, 4);
	for (int i = 0; i < 4; i++) {
		assert_string_equal(S(d, d->st[i][0]), names[i][0]);
		assert_string_equal(S(d, d->st[i][1]), names[i][1]);
	}
	assert_string_equal(S(d, d->pt[0]), "space");
	assert_string_equal(S(d, d->pt[1]), "bytes");
	assert_int_equal(d->period, 524288);
	const struct d_sample *s = find_sample(d, s1, 2, NULL);
	assert_non_null(s);
	assert_int_equal(s->nval, 4);
	assert_int_equal(s->val[0], 10);
	assert_int_equal(s->val[1], 1000);
	assert_int_equal(s->val[2], 2);
	assert_int_equal(s->val[3], 200);
	assert_int_equal(find_sample(d, s2, 1, NULL)->val[1], 5000);
	decoded_free(d);
	/* Sample types already there: the values would not line up. */
	assert_int_equal(pprof_heap_profile(p, v, 2, 1), -EBUSY);
	pprof_free(p);
}

static void test_errors(void **state)
{
	(void)state;
	struct pprof *p;
	assert_int_equal(pprof_new(&p), 0);
	const uint64_t a = 0x10;
	int64_t one = 1;
	assert_int_equal(pprof_add_sample(p, &a, 1, &one, NULL, 0), -EINVAL); /* no sample type */
	assert_int_equal(pprof_add_sample_type(p, "", "count"), -EINVAL);
	assert_int_equal(pprof_add_sample_type(p, "events", "count"), 0);
	assert_int_equal(pprof_add_mapping(p, 0x2000, 0x2000, 0, "/x", NULL), -EINVAL);
	assert_int_equal(pprof_add_mapping(p, 0x3000, 0x2000, 0, "/x", NULL), -EINVAL);
	const struct pprof_label nokey = { .key = "", .str = "x" };
	assert_int_equal(pprof_add_sample(p, &a, 1, &one, &nokey, 1), -EINVAL);
	assert_int_equal(pprof_add_sample(p, &a, 1, &one, NULL, 0), 0);
	assert_int_equal(pprof_add_sample_type(p, "late", "count"), -EBUSY);
	assert_int_equal(pprof_add_mapping(p, 0x0, 0x100, 0, "/late", NULL), -EBUSY);
	assert_int_equal(pprof_set_symbolizer(p, fake_sym, NULL), -EBUSY);
	assert_int_equal(pprof_heap_profile(p, NULL, 0, 0), -EINVAL);
	pprof_free(p);
	pprof_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dedup),
		cmocka_unit_test(test_values_and_header),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_heap_profile),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
