/*
 * test_reader.c - the trace reader (read/reader.h) against the packet
 * encoder (ctf/packet.h) and the metadata generator.
 *
 * Checks:
 *  - model-based round trip: random events of every field kind, random
 *    timestamps (compact headers across many 27-bit wraps, extended headers
 *    for long gaps and ids >= 31), several streams and random packet sizes,
 *    encoded in LE and BE, byte-packed and naturally aligned; the reader
 *    returns exactly the same values in the order of a stable merge by time;
 *  - lost events (events_discarded differences, first packet) and lost
 *    packets (packet_seq_num gaps) with their counts and times;
 *  - truncated files at every length: everything before the damage is
 *    delivered, then an error that says "truncated"; never a crash;
 *  - corrupt packets (bad magic, sizes, unknown event id, random bytes);
 *  - thread attribution from ringtrace:thread records, comm names from the
 *    env (percent-decoded), tid reset after a lost packet;
 *  - clock conversion: values printed by babeltrace2 2.0.4 for odd
 *    frequencies, negative offsets and offsets larger than a second;
 *  - text formatting of times, doubles and strings;
 *  - opening a directory (dot-files and subdirectories ignored, errors);
 *  - a minimal trace with no packet header, context or event header;
 *  - a foreign trace: event contexts, text arrays, a timestamp mapped to no
 *    clock.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sig.h"
#include "util/buf.h"
#include "ctf/metadata.h"
#include "support/packet.h"
#include "read/format.h"
#include "read/reader.h"

/* ---- a small trace builder ----------------------------------------------- */

#define MAX_STREAMS 4
#define PKT_MAX 8192

static const struct ctf_event_class classes[] = {
	{ 1, "ringtrace", "thread", "u32 tid" },
	{ 2, "t", "ints", "s8 a;s16 b;s32 c;s64 d;u8 e;u16 f;u32 g;u64 h" },
	{ 3, "t", "hex", "x8 a;x16 b;x32 c;x64 d;ptr p" },
	{ 4, "t", "floats", "f32 x;f64 y;u8 pad" },
	{ 5, "t", "strings", "string s;u8 after;string t" },
	{ 6, "t", "arrays", "u8 tag[3];s16 sv[];x64 hx[2];ptr ips[];s32 n[]" },
	{ 7, "t", "empty", "" },
	{ 45, "t", "bigid", "u16 n" },
};
#define NCLASSES (sizeof(classes) / sizeof(classes[0]))

struct tb_stream {
	uint8_t *data;
	size_t len, cap;
	uint8_t pkt[PKT_MAX];
	size_t pkt_cap;
	struct ctf_enc enc;
	struct ctf_packet_info info;
	uint64_t prev_ts;
	int open;
	uint64_t seq, disc;
};

struct tb {
	int be, natural;
	char *meta;
	size_t meta_len;
	struct sig_field fields[NCLASSES][SIG_FIELDS_MAX];
	size_t nfields[NCLASSES];
	struct tb_stream s[MAX_STREAMS];
	unsigned n;
};

static void tb_init(struct tb *b, int be, int natural, unsigned nstreams, const char *threads)
{
	memset(b, 0, sizeof(*b));
	b->be = be;
	b->natural = natural;
	b->n = nstreams;
	struct ctf_trace_desc t = {
		.big_endian = be,
		.natural_align = natural,
		.clock = { .freq = 1000000000 },
		.thread_names = threads,
		.vpid = -1,
		.events = classes,
		.n_events = NCLASSES,
	};
	assert_int_equal(ctf_metadata_build(&t, &b->meta, &b->meta_len), 0);
	for (size_t i = 0; i < NCLASSES; i++)
		assert_int_equal(sig_parse(classes[i].signature, b->fields[i], SIG_FIELDS_MAX,
					   &b->nfields[i]), 0);
	for (unsigned i = 0; i < nstreams; i++)
		b->s[i].pkt_cap = PKT_MAX;
}

static void tb_free(struct tb *b)
{
	free(b->meta);
	for (unsigned i = 0; i < b->n; i++)
		free(b->s[i].data);
}

static void tb_append(struct tb_stream *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2;
		s->data = realloc(s->data, s->cap);
		assert_non_null(s->data);
	}
	memcpy(s->data + s->len, p, n);
	s->len += n;
}

static void tb_open_packet(struct tb *b, unsigned i, uint64_t ts)
{
	struct tb_stream *s = &b->s[i];
	memset(&s->info, 0, sizeof(s->info));
	s->info.stream_instance_id = i;
	s->info.cpu_id = 10 + i;
	s->info.ts_begin = ts;
	s->info.seq = s->seq++;
	s->info.discarded = s->disc;
	ctf_enc_init(&s->enc, s->pkt, s->pkt_cap, b->be, b->natural);
	assert_int_equal(ctf_enc_packet_header(&s->enc, &s->info), 0);
	s->prev_ts = ts;
	s->open = 1;
}

static void tb_close_packet(struct tb *b, unsigned i, size_t padding, int drop)
{
	struct tb_stream *s = &b->s[i];
	long len = ctf_enc_packet_close(&s->enc, s->prev_ts, padding);
	assert_true(len > 0);
	if (!drop)
		tb_append(s, s->pkt, (size_t)len);
	s->open = 0;
}

/* Append an event, opening a new packet when the current one is full. */
static void tb_event(struct tb *b, unsigned i, size_t cls, uint64_t ts, const struct sig_value *v)
{
	struct tb_stream *s = &b->s[i];
	if (!s->open)
		tb_open_packet(b, i, ts);
	for (int tries = 0; tries < 2; tries++) {
		int ext = ctf_needs_extended(classes[cls].id, s->prev_ts, ts);
		int r = ctf_enc_event(&s->enc, classes[cls].id, ts, ext, b->fields[cls],
				      b->nfields[cls], v);
		if (r == 0) {
			s->prev_ts = ts;
			return;
		}
		assert_int_equal(r, -ENOSPC);
		tb_close_packet(b, i, 0, 0);
		tb_open_packet(b, i, ts);
	}
	fail_msg("event does not fit in an empty packet");
}

static struct rd_trace *tb_read(struct tb *b)
{
	struct rd_mem_stream ms[MAX_STREAMS];
	static char names[MAX_STREAMS][24];
	for (unsigned i = 0; i < b->n; i++) {
		if (b->s[i].open)
			tb_close_packet(b, i, 0, 0);
		snprintf(names[i], sizeof(names[i]), "stream_%u", i);
		ms[i].name = names[i];
		ms[i].data = b->s[i].data;
		ms[i].size = b->s[i].len;
	}
	struct rd_trace *t = NULL;
	char err[512];
	int r = rd_trace_open_mem(b->meta, b->meta_len, ms, b->n, &t, err, sizeof(err));
	if (r)
		fail_msg("open: %s", err);
	return t;
}

/* ---- random values ------------------------------------------------------- */

static uint64_t rng_state = 1;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static uint64_t rnd_int(const struct sig_field *f)
{
	uint64_t v = rnd();
	if (rnd() % 8 == 0)
		v = rnd() % 2 ? ~UINT64_C(0) : UINT64_C(1) << (f->bits - 1);
	if (f->bits < 64) {
		v &= (UINT64_C(1) << f->bits) - 1;
		if (f->is_signed && (v >> (f->bits - 1)) & 1)
			v |= ~UINT64_C(0) << f->bits;
	}
	return v;
}

struct expect {
	unsigned stream;
	size_t cls;
	uint64_t ts;
	struct sig_value v[SIG_FIELDS_MAX];
	uint64_t elems[SIG_FIELDS_MAX][6];
	char str[SIG_FIELDS_MAX][24];
	unsigned order;              /* insertion order, for the stable sort */
};

static void rnd_values(const struct tb *b, struct expect *e)
{
	const struct sig_field *f = b->fields[e->cls];
	for (size_t k = 0; k < b->nfields[e->cls]; k++) {
		struct sig_value *v = &e->v[k];
		memset(v, 0, sizeof(*v));
		if (f[k].kind == SIG_STRING) {
			size_t n = rnd() % 20;
			for (size_t j = 0; j < n; j++)
				e->str[k][j] = (char)(1 + rnd() % 255);
			e->str[k][n] = '\0';
			v->str = e->str[k];
		} else if (f[k].kind == SIG_FLOAT) {
			uint64_t bits = rnd();
			memcpy(&v->f, &bits, 8);
			if (isnan(v->f) || rnd() % 4 == 0)
				v->f = (double)(int64_t)rnd() / 1e6;
			if (f[k].bits == 32)
				v->f = (float)v->f;
		} else if (f[k].array == SIG_SCALAR) {
			v->u = rnd_int(&f[k]);
		} else {
			v->count = f[k].array == SIG_FIXED ? f[k].len : (uint32_t)(rnd() % 6);
			for (uint32_t j = 0; j < v->count; j++)
				e->elems[k][j] = rnd_int(&f[k]);
			v->elems = e->elems[k];
		}
	}
}

static void check_values(const struct tb *b, const struct expect *e, const struct rd_value *fv)
{
	const struct sig_field *f = b->fields[e->cls];
	assert_non_null(fv);
	for (size_t k = 0; k < b->nfields[e->cls]; k++) {
		char name[SIG_NAME_MAX + 2];
		snprintf(name, sizeof(name), "_%s", f[k].name);
		const struct rd_value *v = rd_value_member(fv, name);
		assert_non_null(v);
		const struct sig_value *x = &e->v[k];
		if (f[k].kind == SIG_STRING) {
			assert_int_equal(v->str.len, strlen(x->str));
			assert_memory_equal(v->str.s, x->str, v->str.len);
		} else if (f[k].kind == SIG_FLOAT) {
			if (memcmp(&v->f, &x->f, 8) != 0)
				fail_msg("float %s: %a != %a", f[k].name, v->f, x->f);
		} else if (f[k].array == SIG_SCALAR) {
			if (v->u != x->u)
				fail_msg("%s: %llx != %llx", f[k].name, (unsigned long long)v->u,
					 (unsigned long long)x->u);
		} else {
			assert_int_equal(v->sub.n, x->count);
			for (uint32_t j = 0; j < x->count; j++)
				assert_int_equal(v->sub.v[j].u, x->elems[j]);
		}
	}
}

static int cmp_expect(const void *a, const void *b)
{
	const struct expect *x = *(struct expect *const *)a, *y = *(struct expect *const *)b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void round_trip(int be, int natural, uint64_t seed)
{
	enum { N = 1500 };
	struct tb *b = malloc(sizeof(*b));
	struct expect *ev = calloc(N, sizeof(*ev));
	struct expect **sorted = calloc(N, sizeof(*sorted));
	uint64_t ts[MAX_STREAMS];
	rng_state = seed;
	tb_init(b, be, natural, 3, NULL);
	for (unsigned i = 0; i < b->n; i++) {
		b->s[i].pkt_cap = 256 + rnd() % 2048;
		ts[i] = rnd() % 1000;
	}
	for (unsigned k = 0; k < N; k++) {
		struct expect *e = &ev[k];
		e->stream = (unsigned)(rnd() % b->n);
		e->cls = 1 + rnd() % (NCLASSES - 1);
		e->order = k;
		switch (rnd() % 8) {
		case 0: break;                                             /* same time */
		case 1: ts[e->stream] += (UINT64_C(1) << 27) - 1 - rnd() % 3; break; /* compact, wraps */
		case 2: ts[e->stream] += (UINT64_C(1) << 27) + rnd() % 1000000000; break;  /* extended */
		default: ts[e->stream] += rnd() % 50000000; break;
		}
		e->ts = ts[e->stream];
		rnd_values(b, e);
		tb_event(b, e->stream, e->cls, e->ts, e->v);
		sorted[k] = e;
	}
	qsort(sorted, N, sizeof(*sorted), cmp_expect);
	struct rd_trace *t = tb_read(b);
	struct rd_item it;
	unsigned k = 0;
	int r;
	while ((r = rd_trace_next(t, &it)) > 0) {
		assert_int_equal(it.kind, RD_ITEM_EVENT);
		assert_true(k < N);
		const struct expect *e = sorted[k++];
		assert_int_equal(it.stream, e->stream);
		assert_int_equal(it.cpu, 10 + e->stream);
		if (it.cycles != e->ts)
			fail_msg("event %u: ts %llu != %llu", k, (unsigned long long)it.cycles,
				 (unsigned long long)e->ts);
		assert_true(it.ns_ok);
		assert_int_equal(it.ns, (int64_t)e->ts);
		assert_int_equal(it.ec->id, classes[e->cls].id);
		check_values(b, e, it.fields);
	}
	if (r < 0)
		fail_msg("read error: %s", rd_trace_errmsg(t));
	assert_int_equal(k, N);
	rd_trace_close(t);
	tb_free(b);
	free(b);
	free(ev);
	free(sorted);
}

static void test_round_trip(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 6; seed++) {
		round_trip(0, 0, seed * 7919);
		round_trip(1, 0, seed * 104729);
		round_trip(0, 1, seed * 1299709);
		round_trip(1, 1, seed * 15485863);
	}
}

/* Compact timestamps across many wraps of the low 27 bits, and an id >= 31. */
static void test_wraps(void **state)
{
	(void)state;
	struct tb b;
	tb_init(&b, 1, 0, 1, NULL);
	struct sig_value v[1] = { { .u = 3 } };
	uint64_t ts = (UINT64_C(1) << 27) - 5;
	uint64_t want[40];
	for (int k = 0; k < 40; k++) {
		want[k] = ts;
		tb_event(&b, 0, k % 2 ? 7 : 6, ts, v);
		ts += (UINT64_C(1) << 27) - 1 - (uint64_t)k;
	}
	struct sig_value big = { .u = 9 };
	tb_event(&b, 0, 7, ts, &big);   /* id 45: extended header */
	struct rd_trace *t = tb_read(&b);
	struct rd_item it;
	for (int k = 0; k < 40; k++) {
		assert_int_equal(rd_trace_next(t, &it), 1);
		assert_int_equal(it.cycles, want[k]);
	}
	assert_int_equal(rd_trace_next(t, &it), 1);
	assert_int_equal(it.cycles, ts);
	assert_int_equal(it.ec->id, 45);
	assert_int_equal(rd_value_member(it.fields, "_n")->u, 9);
	assert_int_equal(rd_trace_next(t, &it), 0);
	rd_trace_close(t);
	tb_free(&b);
}

static void test_losses(void **state)
{
	(void)state;
	struct tb b;
	struct sig_value v[1] = { { .u = 1 } };
	tb_init(&b, 0, 0, 2, NULL);
	/* stream 0: packets 0,1 normal; 2 has +7 discarded; 3 missing; 4 +2 */
	for (int p = 0; p < 5; p++) {
		uint64_t base = 1000 + (uint64_t)p * 100;
		if (p == 2)
			b.s[0].disc += 7;
		if (p == 4)
			b.s[0].disc += 2;
		tb_open_packet(&b, 0, base);
		tb_event(&b, 0, 7, base + 10, v);
		tb_close_packet(&b, 0, p == 1 ? 16 : 0, p == 3);
	}
	/* stream 1: first packet already counts 4 discarded and seq starts at 3 */
	b.s[1].seq = 3;
	b.s[1].disc = 4;
	tb_open_packet(&b, 1, 1050);
	tb_event(&b, 1, 7, 1060, v);
	tb_close_packet(&b, 1, 0, 0);

	struct rd_trace *t = tb_read(&b);
	struct rd_item it;
	struct {
		int kind;
		unsigned stream;
		uint64_t count;
		int64_t ns, end;
		int has_begin;
	} want[] = {
		{ RD_ITEM_EVENT, 0, 0, 1010, 0, 0 },
		{ RD_ITEM_LOST_PACKETS, 1, 3, 0, 1050, 0 },    /* before the first packet */
		{ RD_ITEM_LOST_EVENTS, 1, 4, 1050, 1060, 1 },
		{ RD_ITEM_EVENT, 1, 0, 1060, 0, 0 },
		{ RD_ITEM_EVENT, 0, 0, 1110, 0, 0 },
		{ RD_ITEM_LOST_EVENTS, 0, 7, 1110, 1210, 1 },  /* prev end .. this end */
		{ RD_ITEM_EVENT, 0, 0, 1210, 0, 0 },
		{ RD_ITEM_LOST_PACKETS, 0, 1, 1210, 1400, 1 }, /* prev end .. this begin */
		{ RD_ITEM_LOST_EVENTS, 0, 2, 1210, 1410, 1 },
		{ RD_ITEM_EVENT, 0, 0, 1410, 0, 0 },
	};
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		assert_int_equal(rd_trace_next(t, &it), 1);
		if (it.kind != want[k].kind || it.stream != want[k].stream)
			fail_msg("item %zu: kind %d stream %u", k, it.kind, it.stream);
		if (want[k].kind == RD_ITEM_EVENT) {
			assert_int_equal(it.ns, want[k].ns);
			continue;
		}
		assert_int_equal(it.count, want[k].count);
		assert_int_equal(it.has_begin, want[k].has_begin);
		if (want[k].has_begin)
			assert_int_equal(it.ns, want[k].ns);
		assert_true(it.end_ok);
		assert_int_equal(it.end_ns, want[k].end);
		assert_int_equal(it.cpu, 10 + want[k].stream);
	}
	assert_int_equal(rd_trace_next(t, &it), 0);
	rd_trace_close(t);
	tb_free(&b);
}

/* Read a stream (and a second, intact one) after truncating it to `len`. */
static int read_truncated(struct tb *b, size_t len, unsigned *ret_events, char *err, size_t errlen)
{
	struct rd_mem_stream ms[2] = {
		{ "stream_0", b->s[0].data, len },
		{ "stream_1", b->s[1].data, b->s[1].len },
	};
	struct rd_trace *t;
	char e[256];
	assert_int_equal(rd_trace_open_mem(b->meta, b->meta_len, ms, 2, &t, e, sizeof(e)), 0);
	struct rd_item it;
	int r;
	unsigned n = 0;
	while ((r = rd_trace_next(t, &it)) > 0)
		n += it.kind == RD_ITEM_EVENT && it.stream == 0;
	snprintf(err, errlen, "%s", rd_trace_errmsg(t));
	rd_trace_close(t);
	*ret_events = n;
	return r;
}

static void test_truncated(void **state)
{
	(void)state;
	struct tb b;
	struct sig_value v[3] = { { .str = "hello" }, { .u = 5 }, { .str = "world" } };
	tb_init(&b, 0, 0, 2, NULL);
	for (int p = 0; p < 2; p++) {
		tb_open_packet(&b, 0, 100 + (uint64_t)p * 1000);
		for (int k = 0; k < 5; k++)
			tb_event(&b, 0, 4, 100 + (uint64_t)p * 1000 + (uint64_t)k, v);
		tb_close_packet(&b, 0, 0, 0);
	}
	tb_event(&b, 1, 7, 50, (struct sig_value[]){ { .u = 1 } });
	tb_close_packet(&b, 1, 0, 0);
	size_t full = b.s[0].len, first = full / 2;
	char err[512];
	unsigned n;
	assert_int_equal(read_truncated(&b, full, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 10);
	assert_int_equal(read_truncated(&b, 0, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	for (size_t len = 1; len < full; len++) {
		int r = read_truncated(&b, len, &n, err, sizeof(err));
		if (len == first) {
			assert_int_equal(r, 0);
			assert_int_equal(n, 5);
			continue;
		}
		assert_int_equal(r, -EBADMSG);
		assert_int_equal(n, len < first ? 0 : 5);
		if (!strstr(err, "truncated") || !strstr(err, "stream_0"))
			fail_msg("len %zu: %s", len, err);
	}
	tb_free(&b);
}

static void expect_error(struct tb *b, const char *what)
{
	struct rd_trace *t = tb_read(b);
	struct rd_item it;
	int r;
	while ((r = rd_trace_next(t, &it)) > 0)
		;
	assert_int_equal(r, -EBADMSG);
	if (!strstr(rd_trace_errmsg(t), what))
		fail_msg("expected \"%s\", got \"%s\"", what, rd_trace_errmsg(t));
	rd_trace_close(t);
}

static void test_corrupt(void **state)
{
	(void)state;
	struct sig_value v[1] = { { .u = 1 } };
	static const struct {
		size_t off;
		uint64_t val;
		unsigned bytes;
		const char *msg;
	} cases[] = {
		{ 0, 0xdeadbeef, 4, "bad magic number 0xdeadbeef" },
		{ 48, 100000, 8, "content_size (100000 bits) is greater than packet_size" },
		{ 56, 801, 8, "not a whole number of bytes" },
		{ 48, 8, 8, "smaller than the packet header" },
		{ 56, 0, 8, "content_size" },
		{ 56, UINT64_MAX - 7, 8, "truncated packet" },
		{ 20, 5, 4, "unknown stream class 5" },
		{ 84, 9, 1, "unknown event id 9" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct tb b;
		tb_init(&b, 0, 0, 1, NULL);
		tb_event(&b, 0, 7, 10, v);
		tb_close_packet(&b, 0, 0, 0);
		ctf_store(b.s[0].data + cases[c].off, cases[c].val, cases[c].bytes, 0);
		expect_error(&b, cases[c].msg);
		tb_free(&b);
	}
	/* Random damage: anything but a crash or a hang. */
	struct tb b;
	tb_init(&b, 1, 1, 1, NULL);
	rng_state = 99;
	struct expect *e = calloc(1, sizeof(*e));
	for (int k = 0; k < 200; k++) {
		e->cls = 1 + rnd() % (NCLASSES - 1);
		rnd_values(&b, e);
		tb_event(&b, 0, e->cls, (uint64_t)k * 1000, e->v);
	}
	tb_close_packet(&b, 0, 0, 0);
	uint8_t *copy = malloc(b.s[0].len);
	for (int iter = 0; iter < 2000; iter++) {
		memcpy(copy, b.s[0].data, b.s[0].len);
		for (int k = 0; k < 1 + iter % 5; k++)
			copy[rnd() % b.s[0].len] ^= (uint8_t)(1u << (rnd() % 8));
		struct rd_mem_stream ms = { "s", copy, b.s[0].len - (size_t)(rnd() % 3) };
		struct rd_trace *t;
		assert_int_equal(rd_trace_open_mem(b.meta, b.meta_len, &ms, 1, &t, NULL, 0), 0);
		struct rd_item it;
		unsigned n = 0;
		while (rd_trace_next(t, &it) > 0)
			assert_true(++n < 100000);
		rd_trace_close(t);
	}
	free(copy);
	free(e);
	tb_free(&b);
}

static void test_threads(void **state)
{
	(void)state;
	struct tb b;
	tb_init(&b, 0, 0, 1, "100=main,101=w%20k%25,bad,102=,x=y,103=%zz,104=a%2,100=again");
	struct sig_value v[1] = { { .u = 0 } };
	struct sig_value t100 = { .u = 100 }, t101 = { .u = 101 }, t999 = { .u = 999 };
	tb_event(&b, 0, 7, 1, v);              /* before any thread record */
	tb_event(&b, 0, 0, 2, &t100);
	tb_event(&b, 0, 7, 3, v);
	tb_event(&b, 0, 0, 4, &t101);
	tb_event(&b, 0, 7, 5, v);
	tb_close_packet(&b, 0, 0, 0);
	b.s[0].seq++;                          /* a lost packet: the thread is unknown again */
	tb_event(&b, 0, 7, 6, v);
	tb_event(&b, 0, 0, 7, &t999);
	tb_event(&b, 0, 7, 8, v);
	struct rd_trace *t = tb_read(&b);
	struct rd_item it;
	struct {
		int kind;
		uint32_t tid;
		const char *comm;
	} want[] = {
		{ RD_ITEM_EVENT, 0, NULL }, { RD_ITEM_EVENT, 100, "again" }, { RD_ITEM_EVENT, 100, "again" },
		{ RD_ITEM_EVENT, 101, "w k%" }, { RD_ITEM_EVENT, 101, "w k%" },
		{ RD_ITEM_LOST_PACKETS, 0, NULL }, { RD_ITEM_EVENT, 0, NULL },
		{ RD_ITEM_EVENT, 999, NULL }, { RD_ITEM_EVENT, 999, NULL },
	};
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		assert_int_equal(rd_trace_next(t, &it), 1);
		assert_int_equal(it.kind, want[k].kind);
		if (it.kind != RD_ITEM_EVENT)
			continue;
		assert_int_equal(it.tid, want[k].tid);
		if (want[k].comm)
			assert_string_equal(it.comm, want[k].comm);
		else
			assert_null(it.comm);
	}
	assert_int_equal(rd_trace_next(t, &it), 0);
	assert_null(rd_trace_comm(t, 102));
	assert_null(rd_trace_comm(t, 103));
	assert_null(rd_trace_comm(t, 104));
	rd_trace_close(t);
	tb_free(&b);

	struct rd_thread_name *names;
	size_t n;
	assert_int_equal(rd_parse_thread_names("", &names, &n), 0);
	assert_int_equal(n, 0);
	free(names);
	assert_int_equal(rd_parse_thread_names("5=b,3=a,99999999999=x,4=%41%42,,", &names, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(names[0].tid, 3);
	assert_string_equal(names[1].comm, "AB");
	assert_string_equal(names[2].comm, "b");
	free(names);

	/* The env of a trace: a key per thread, and the single list of older
	 * traces; a thread's own key wins over the list. */
	static const struct ctf_thread_name keyed[] = { { 9, "nine" }, { 5, "five-key" } };
	static const struct ctf_env_kv env[] = {
		{ "thread_name_x", "not a tid", 0 },
		{ "thread_name_08", "leading zero", 0 },
		{ "thread_name_6", NULL, 6 },
	};
	struct ctf_trace_desc d = {
		.clock = { .freq = 1000000000 },
		.thread_names = "5=five-list,3=three",
		.threads = keyed,
		.n_threads = 2,
		.vpid = -1,
	};
	char *text;
	struct rd_meta *m;
	char err[256];
	assert_int_equal(ctf_metadata_build(&d, &text, NULL), 0);
	assert_int_equal(rd_meta_parse(text, strlen(text), &m, err, sizeof(err)), 0);
	assert_int_equal(rd_meta_thread_names(m, &names, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(names[0].tid, 3);
	assert_string_equal(names[0].comm, "three");
	assert_int_equal(names[1].tid, 5);
	assert_string_equal(names[1].comm, "five-key");
	assert_int_equal(names[2].tid, 9);
	assert_string_equal(names[2].comm, "nine");
	free(names);
	rd_meta_free(m);
	free(text);
	/* Keys that only look like thread names are not. */
	d.thread_names = NULL;
	d.n_threads = 0;
	d.env = env;
	d.n_env = 3;
	assert_int_equal(ctf_metadata_build(&d, &text, NULL), -EINVAL);
	char meta[] = "/* CTF 1.8 */\ntrace { major = 1; minor = 8; byte_order = le; };\n"
		      "env { thread_name_x = \"a\"; thread_name_08 = \"b\"; thread_name_6 = 6;"
		      " thread_name_4294967296 = \"c\"; thread_name_ = \"d\"; };\n";
	assert_int_equal(rd_meta_parse(meta, strlen(meta), &m, err, sizeof(err)), 0);
	assert_int_equal(rd_meta_thread_names(m, &names, &n), 0);
	assert_int_equal(n, 0);
	free(names);
	rd_meta_free(m);
}

/* Expected values were printed by babeltrace2 2.0.4 --clock-seconds. */
static void test_clock(void **state)
{
	(void)state;
	static const struct {
		uint64_t freq;
		int64_t offset_s;
		uint64_t offset, value;
		int64_t ns;
	} v[] = {
		{ 2994123456u, 1700000000, 998041152, 0, INT64_C(1700000000333333333) },
		{ 2994123456u, 1700000000, 998041152, 1, INT64_C(1700000000333333333) },
		{ 2994123456u, 1700000000, 998041152, 2994123455u, INT64_C(1700000001333333332) },
		{ 2994123456u, 1700000000, 998041152, 2994123456u, INT64_C(1700000001333333333) },
		{ 2994123456u, 1700000000, 998041152, UINT64_C(123456789012345), INT64_C(1700041233365580198) },
		{ 2994123456u, 1700000000, 998041152, UINT64_MAX, INT64_C(7860983121033868117) },
		{ 2994123456u, 1700000000, 998041152, INT64_MAX, INT64_C(4780491560683600725) },
		{ 1000000000, -5, 0, 0, INT64_C(-5000000000) },
		{ 1000000000, -5, 0, 4999999999u, -1 },
		{ 1000000000, -5, 0, 5000000001u, 1 },
		{ 3, -2, 1, 0, INT64_C(-1666666667) },
		{ 3, -2, 1, 1, INT64_C(-1333333334) },
		{ 3, -2, 1, 2, INT64_C(-1000000001) },
		{ 3, -2, 1, 100, INT64_C(31666666666) },
		{ 33333, 1600000003, 0, 33332, INT64_C(1600000003999969999) },
		{ 33333, 1600000003, 0, 333330000000u, INT64_C(1610000003000000000) },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct rd_clock c = { .freq = v[i].freq, .offset_s = v[i].offset_s, .offset = v[i].offset };
		int64_t ns = 0;
		assert_int_equal(rd_clock_ns(&c, v[i].value, &ns), 0);
		if (ns != v[i].ns)
			fail_msg("case %zu: %lld != %lld", i, (long long)ns, (long long)v[i].ns);
	}
	/* Offsets normalised by the parser: offset = 5 s + 7 cycles. */
	static const char meta[] =
		"/* CTF 1.8 */ trace { major = 1; minor = 8; byte_order = le; };\n"
		"clock { name = c; freq = 2994123456; offset_s = 1700000000; offset = 14970617287; };\n";
	struct rd_meta *m;
	assert_int_equal(rd_meta_parse(meta, strlen(meta), &m, NULL, 0), 0);
	int64_t ns;
	assert_int_equal(rd_clock_ns(&m->clocks[0], 5, &ns), 0);
	assert_int_equal(ns, INT64_C(1700000005000000003));
	assert_int_equal(rd_clock_ns(&m->clocks[0], 1000000, &ns), 0);
	assert_int_equal(ns, INT64_C(1700000005000333989));
	rd_meta_free(m);
	/* Out of range, as babeltrace2 refuses it. */
	struct rd_clock c = { .freq = 1000000000, .offset_s = INT64_MAX / 1000000000 };
	assert_int_equal(rd_clock_ns(&c, 0, &ns), -ERANGE);
	c.offset_s = 9000000000;
	assert_int_equal(rd_clock_ns(&c, UINT64_C(300000000000000000), &ns), -ERANGE);
}

static void test_format(void **state)
{
	(void)state;
	struct ctf_buf b;
	ctf_buf_init(&b);
	static const struct {
		int64_t ns;
		const char *s;
	} times[] = {
		{ 0, "0.000000000" }, { 1, "0.000000001" }, { -1, "-0.000000001" },
		{ INT64_C(-5000000000), "-5.000000000" }, { INT64_C(-1666666667), "-1.666666667" },
		{ INT64_C(1700000000333333333), "1700000000.333333333" },
		{ INT64_MIN, "-9223372036.854775808" },
	};
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		ctf_buf_reset(&b);
		rd_format_time(&b, times[i].ns);
		assert_string_equal(b.data, times[i].s);
	}
	static const struct {
		double v;
		int single;
		const char *s;
	} dbl[] = {
		{ 0.5, 0, "0.5" }, { 2, 0, "2.0" }, { -0.0, 0, "-0.0" }, { 0.1, 0, "0.1" },
		{ 3.141592653589793, 0, "3.141592653589793" }, { 1e300, 0, "1e+300" },
		{ 6172835, 0, "6172835.0" }, { 0.1f, 1, "0.1" }, { 1.0 / 3, 1, "0.33333334" },
		{ 1e-5, 0, "1e-05" }, { INFINITY, 0, "inf" }, { -INFINITY, 0, "-inf" },
	};
	for (size_t i = 0; i < sizeof(dbl) / sizeof(dbl[0]); i++) {
		ctf_buf_reset(&b);
		rd_format_double(&b, dbl[i].single ? (float)dbl[i].v : dbl[i].v, dbl[i].single);
		assert_string_equal(b.data, dbl[i].s);
	}
	ctf_buf_reset(&b);
	const char s[] = "a\"b\\c\n\t\x01\x7f caf\xc3\xa9 \xff\xc3 \xc2\x9b";
	rd_format_string(&b, s, sizeof(s) - 1);
	assert_string_equal(b.data, "\"a\\\"b\\\\c\\n\\t\\x01\\x7f caf\xc3\xa9 \\xff\\xc3 \\xc2\\x9b\"");
	assert_string_equal(rd_display_name("_x"), "x");
	assert_string_equal(rd_display_name("__x_length"), "_x_length");
	assert_string_equal(rd_display_name("_"), "_");
	assert_string_equal(rd_display_name("y"), "y");
	ctf_buf_free(&b);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

static void test_dir(void **state)
{
	(void)state;
	char dir[] = "/tmp/rt-test-XXXXXX", path[256];
	assert_non_null(mkdtemp(dir));
	struct rd_trace *t;
	char err[512];

	assert_int_equal(rd_trace_open(dir, &t, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no 'metadata' file"));
	snprintf(path, sizeof(path), "%s/nope", dir);
	assert_int_equal(rd_trace_open(path, &t, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "No such file"));

	struct tb b;
	struct sig_value v[1] = { { .u = 1 } };
	tb_init(&b, 1, 0, 2, NULL);
	tb_event(&b, 0, 7, 10, v);
	tb_event(&b, 1, 7, 5, v);
	tb_close_packet(&b, 0, 0, 0);
	tb_close_packet(&b, 1, 0, 0);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	const char *bad = "/* CTF 1.8 */\ntrace {\n major = 1;\n}\nenv { };\n";
	write_file(path, bad, strlen(bad));
	assert_int_equal(rd_trace_open(dir, &t, err, sizeof(err)), -EINVAL);
	if (!strstr(err, "metadata: line 5: expected ';' after the block, got 'env'"))
		fail_msg("%s", err);
	write_file(path, b.meta, b.meta_len);
	snprintf(path, sizeof(path), "%s/stream_10", dir);
	write_file(path, b.s[0].data, b.s[0].len);
	snprintf(path, sizeof(path), "%s/stream_9", dir);
	write_file(path, b.s[1].data, b.s[1].len);
	snprintf(path, sizeof(path), "%s/.hidden", dir);
	write_file(path, "junk", 4);
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(rd_trace_open(dir, &t, err, sizeof(err)), 0);
	struct rd_item it;
	assert_int_equal(rd_trace_next(t, &it), 1);
	assert_string_equal(it.stream_name, "stream_9");
	assert_int_equal(it.stream, 0);        /* natural order: 9 before 10 */
	assert_int_equal(rd_trace_next(t, &it), 1);
	assert_string_equal(it.stream_name, "stream_10");
	assert_int_equal(rd_trace_next(t, &it), 0);
	rd_trace_close(t);

	snprintf(path, sizeof(path), "%s/README", dir);
	write_file(path, "not a stream at all, just text", 30);
	assert_int_equal(rd_trace_open(dir, &t, err, sizeof(err)), 0);
	int r, n = 0;
	while ((r = rd_trace_next(t, &it)) > 0)
		n++;
	assert_int_equal(n, 2);
	assert_int_equal(r, -EBADMSG);
	assert_non_null(strstr(rd_trace_errmsg(t), "README: packet at offset 0: bad magic number"));
	rd_trace_close(t);

	const char *names[] = { "README", ".hidden", "stream_9", "stream_10", "metadata" };
	for (size_t i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	rmdir(dir);
	tb_free(&b);
}

/* No packet header, context or event header: one packet per file, one event class. */
static void test_minimal(void **state)
{
	(void)state;
	static const char meta[] =
		"/* CTF 1.8 */\n"
		"trace { major = 1; minor = 8; byte_order = be; };\n"
		"typealias integer { size = 16; align = 16; signed = true; } := s16;\n"
		"event { name = only; fields := struct { s16 x; string s; }; };\n";
	const uint8_t data[] = { 0xff, 0xfe, 'h', 'i', 0, 0, 0x01, 0x02, 0 };
	struct rd_mem_stream ms = { "f", data, sizeof(data) };
	struct rd_trace *t;
	char err[256];
	assert_int_equal(rd_trace_open_mem(meta, sizeof(meta) - 1, &ms, 1, &t, err, sizeof(err)), 0);
	struct rd_item it;
	assert_int_equal(rd_trace_next(t, &it), 1);
	assert_false(it.ns_ok);      /* no clock: no time, as in babeltrace2 */
	assert_int_equal((int64_t)rd_value_member(it.fields, "x")->u, -2);
	assert_string_equal(rd_value_member(it.fields, "s")->str.s, "hi");
	assert_int_equal(rd_trace_next(t, &it), 1);   /* padded to 16 bits: x at byte 6 */
	assert_int_equal(rd_value_member(it.fields, "x")->u, 0x102);
	assert_int_equal(rd_value_member(it.fields, "s")->str.len, 0);
	assert_int_equal(rd_trace_next(t, &it), 0);
	rd_trace_close(t);

	/* Zero-size events would loop forever: refused. */
	static const char meta0[] =
		"/* CTF 1.8 */\n"
		"trace { major = 1; minor = 8; byte_order = le; };\n"
		"event { name = nothing; fields := struct { }; };\n";
	assert_int_equal(rd_trace_open_mem(meta0, sizeof(meta0) - 1, &ms, 1, &t, err, sizeof(err)), 0);
	assert_int_equal(rd_trace_next(t, &it), -EBADMSG);
	assert_non_null(strstr(rd_trace_errmsg(t), "size of 0"));
	rd_trace_close(t);
}

/*
 * A trace as another tracer writes it: a stream event.context (vtid,
 * procname, as LTTng adds them) and an event class context, both handed out
 * with the item; text arrays and sequences (LTTng's ctf_array_text) printed
 * as strings up to the first NUL; an event-header `timestamp` mapped to no
 * clock gives times from babeltrace2's implicit 1 GHz clock, so the two
 * files merge by time.
 */
static void test_foreign(void **state)
{
	(void)state;
	static const char meta[] =
		"/* CTF 1.8 */\n"
		"typealias integer { size = 8; align = 8; signed = false; } := u8;\n"
		"typealias integer { size = 32; align = 8; signed = false; } := u32;\n"
		"typealias integer { size = 64; align = 8; signed = false; } := u64;\n"
		"trace { major = 1; minor = 8; byte_order = le; };\n"
		"stream { event.header := struct { u8 id; u64 timestamp; };\n"
		"  event.context := struct { u32 _vtid; string _procname; }; };\n"
		"event { name = \"a:b\"; id = 0; context := struct { u8 pri; };\n"
		"  fields := struct { u8 n; integer { size = 8; align = 8; signed = false; encoding = UTF8; } txt[4];\n"
		"    u8 len; integer { size = 8; encoding = ASCII; } seq[len]; }; };\n"
		"event { name = \"a:c\"; id = 1; fields := struct { u8 n; }; };\n";
	const uint8_t s0[] = {
		0, 30, 0, 0, 0, 0, 0, 0, 0, 0xd2, 0x04, 0, 0, 'p', '1', 0,   /* a:b at 30 */
		7, 1, 'h', 'i', 0, 'x', 2, 'o', 'k',
		1, 50, 0, 0, 0, 0, 0, 0, 0, 0xd2, 0x04, 0, 0, 'p', '1', 0, 3, /* a:c at 50 */
	};
	const uint8_t s1[] = {
		1, 40, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0, 'p', '2', 0, 2,     /* a:c at 40 */
	};
	struct rd_mem_stream ms[2] = { { "s0", s0, sizeof(s0) }, { "s1", s1, sizeof(s1) } };
	struct rd_trace *t;
	struct rd_item it;
	struct ctf_buf b;
	char err[256];
	ctf_buf_init(&b);
	assert_int_equal(rd_trace_open_mem(meta, sizeof(meta) - 1, ms, 2, &t, err, sizeof(err)), 0);

	assert_int_equal(rd_trace_next(t, &it), 1);
	assert_string_equal(it.ec->name, "a:b");
	assert_true(it.ns_ok);
	assert_int_equal(it.ns, 30);
	assert_non_null(it.common_context);
	rd_format_value(&b, it.common_context);
	assert_string_equal(b.data, "{vtid=1234, procname=\"p1\"}");
	assert_non_null(it.context);
	ctf_buf_reset(&b);
	rd_format_value(&b, it.context);
	assert_string_equal(b.data, "{pri=7}");
	ctf_buf_reset(&b);
	rd_format_fields(&b, it.fields);
	assert_string_equal(b.data, " n=1 txt=\"hi\" seq=\"ok\"");

	assert_int_equal(rd_trace_next(t, &it), 1);
	assert_string_equal(it.ec->name, "a:c");
	assert_int_equal(it.ns, 40);
	assert_int_equal(rd_value_member(it.common_context, "_vtid")->u, 99);
	assert_null(it.context);

	assert_int_equal(rd_trace_next(t, &it), 1);
	assert_int_equal(it.ns, 50);
	assert_int_equal(rd_value_member(it.fields, "n")->u, 3);
	assert_int_equal(rd_trace_next(t, &it), 0);
	rd_trace_close(t);
	ctf_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_wraps),
		cmocka_unit_test(test_losses),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_clock),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_dir),
		cmocka_unit_test(test_minimal),
		cmocka_unit_test(test_foreign),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
