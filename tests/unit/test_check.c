/*
 * test_check.c - the trace validator (read/check_trace.h) against traces
 * built in memory with the packet encoder (ctf/packet.h) and the metadata
 * generator, in both byte orders, byte-packed and naturally aligned.
 *
 * Checks:
 *  - a good trace: no problem, and the counts of packets, events (the
 *    ringtrace:thread records left out) and lost events;
 *  - one fault at a time, each reported once (or with its known
 *    consequence) at the right file, byte offset and packet: magic, uuid,
 *    stream_id, sizes, truncations, timestamps (backwards, outside the
 *    packet, packets overlapping), packet_seq_num, events_discarded,
 *    unknown event id, an event cut by content_size, the file's identity;
 *  - what the env excuses: attached recorder, overwrite mode with
 *    overwritten events, crash losses, snapshots;
 *  - hostile input: every truncation length, random corruption, random
 *    files: no crash, and no problem exactly when the cut falls between
 *    packets; metadata whose fields take no space: bounded work.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/sig.h"
#include "ctf/metadata.h"
#include "support/packet.h"
#include "read/check_trace.h"
#include "read/tsdl.h"

#define NSTREAMS 2
#define NPKT     4
#define NEV      6                   /* records per packet, the thread record first */
#define PKT_CAP  1024

static const struct ctf_event_class classes[] = {
	{ 1, "ringtrace", "thread", "u32 tid" },
	{ 3, "t", "a", "u32 x;string s" },
	{ 40, "t", "big", "u64 v" },
};
#define NCLASSES (sizeof(classes) / sizeof(classes[0]))

/* A trace in memory: stream s, packet k, record i. */
struct fx {
	int be, natural;
	struct rd_meta *m;
	struct sig_field f[NCLASSES][SIG_FIELDS_MAX];
	size_t nf[NCLASSES];
	uint8_t *data[NSTREAMS];
	size_t len[NSTREAMS];
	size_t pkt_off[NSTREAMS][NPKT];
	size_t pkt_len[NSTREAMS][NPKT];
	size_t ev_off[NSTREAMS][NPKT][NEV];
	uint64_t ts[NSTREAMS][NPKT][NEV];
	const char *name[NSTREAMS];
};

/* A change to one record while building: id, time, extended header. */
struct tweak {
	int on;
	unsigned s, k, i;
	uint32_t id;
	uint64_t ts;
};

static uint64_t rec_ts(unsigned s, unsigned k, unsigned i)
{
	return 100000 + k * 1000 + i * 10 + s;
}

static size_t class_of(uint32_t id)
{
	for (size_t c = 0; c < NCLASSES; c++)
		if (classes[c].id == id)
			return c;
	return 1;
}

static void fx_build(struct fx *x, int be, int natural, const struct ctf_env_kv *env, size_t n_env,
		     const struct tweak *tw)
{
	memset(x, 0, sizeof(*x));
	x->be = be;
	x->natural = natural;
	struct ctf_trace_desc t = {
		.big_endian = be,
		.natural_align = natural,
		.clock = { .freq = 1000000000 },
		.vpid = -1,
		.env = env,
		.n_env = n_env,
		.events = classes,
		.n_events = NCLASSES,
	};
	for (int i = 0; i < 16; i++)
		t.uuid[i] = (uint8_t)(0xa0 + i);
	char *text, err[256];
	size_t tlen;
	assert_int_equal(ctf_metadata_build(&t, &text, &tlen), 0);
	if (rd_meta_parse(text, tlen, &x->m, err, sizeof(err)) < 0)
		fail_msg("metadata: %s", err);
	free(text);
	for (size_t c = 0; c < NCLASSES; c++)
		assert_int_equal(sig_parse(classes[c].signature, x->f[c], SIG_FIELDS_MAX, &x->nf[c]), 0);

	static const char *const names[NSTREAMS] = { "stream_0", "stream_1" };
	for (unsigned s = 0; s < NSTREAMS; s++) {
		x->name[s] = names[s];
		x->data[s] = calloc(NPKT, PKT_CAP);
		assert_non_null(x->data[s]);
		for (unsigned k = 0; k < NPKT; k++) {
			uint8_t pkt[PKT_CAP];
			struct ctf_enc e;
			struct ctf_packet_info pi = {
				.stream_instance_id = s,
				.cpu_id = s,
				.ts_begin = rec_ts(s, k, 0),
				.seq = k,
				.discarded = 2 + 3 * k,
			};
			memcpy(pi.uuid, t.uuid, 16);
			ctf_enc_init(&e, pkt, sizeof(pkt), be, natural);
			assert_int_equal(ctf_enc_packet_header(&e, &pi), 0);
			uint64_t prev = pi.ts_begin;
			for (unsigned i = 0; i < NEV; i++) {
				/* thread, four t:a, one t:big (extended: id >= 31) */
				uint32_t id = i == 0 ? 1 : i < NEV - 1 ? 3 : 40;
				uint64_t ts = rec_ts(s, k, i);
				if (tw && tw->on && tw->s == s && tw->k == k && tw->i == i) {
					id = tw->id ? tw->id : id;
					ts = tw->ts ? tw->ts : ts;
				}
				struct sig_value v[2] = { { .u = 7 + i }, { .str = "abc" } };
				x->ev_off[s][k][i] = x->len[s] + e.off;
				x->ts[s][k][i] = ts;
				int ext = ctf_needs_extended(id, prev, ts) || ts < prev;
				size_t c = class_of(id);
				assert_int_equal(ctf_enc_event(&e, id, ts, ext, x->f[c], x->nf[c], v), 0);
				prev = ts;
			}
			long n = ctf_enc_packet_close(&e, rec_ts(s, k, NEV - 1) + 5, k == 1 ? 16 : 0);
			assert_true(n > 0);
			x->pkt_off[s][k] = x->len[s];
			x->pkt_len[s][k] = (size_t)n;
			memcpy(x->data[s] + x->len[s], pkt, (size_t)n);
			x->len[s] += (size_t)n;
		}
	}
}

static void fx_free(struct fx *x)
{
	for (unsigned s = 0; s < NSTREAMS; s++)
		free(x->data[s]);
	rd_meta_free(x->m);
}

/* Store an integer field of the packet header (fixed offsets, design.md section 3). */
static void put(struct fx *x, unsigned s, size_t off, uint64_t v, unsigned bytes)
{
	ctf_store(x->data[s] + off, v, bytes, x->be);
}

static uint64_t get(const struct fx *x, unsigned s, size_t off, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++) {
		unsigned shift = x->be ? 8 * (bytes - 1 - i) : 8 * i;
		v |= (uint64_t)x->data[s][off + i] << shift;
	}
	return v;
}

/* ---- running the checker --------------------------------------------------- */

struct got {
	size_t n;
	struct {
		char file[32];
		uint64_t off;
		int has_packet;
		uint64_t packet;
		char what[512];
	} p[32];
};

static void collect(void *ctx, const struct rd_check_problem *p)
{
	struct got *g = ctx;
	if (g->n < sizeof(g->p) / sizeof(g->p[0])) {
		snprintf(g->p[g->n].file, sizeof(g->p[0].file), "%s", p->file);
		g->p[g->n].off = p->offset;
		g->p[g->n].has_packet = p->has_packet;
		g->p[g->n].packet = p->packet;
		snprintf(g->p[g->n].what, sizeof(g->p[0].what), "%s", p->what);
	}
	g->n++;
}

static void run(const struct fx *x, struct got *g, struct rd_check_totals *tot)
{
	struct rd_check *c;
	memset(g, 0, sizeof(*g));
	assert_int_equal(rd_check_new(x->m, collect, g, &c), 0);
	for (unsigned s = 0; s < NSTREAMS; s++)
		assert_int_equal(rd_check_file(c, x->name[s], -1, x->data[s], x->len[s]), 0);
	rd_check_finish(c);
	rd_check_get_totals(c, tot);
	rd_check_free(c);
	assert_int_equal(tot->problems, g->n);
}

static void dump(const struct got *g)
{
	for (size_t i = 0; i < g->n && i < 32; i++)
		print_message("  %s: offset %llu (packet %llu): %s\n", g->p[i].file,
			      (unsigned long long)g->p[i].off, (unsigned long long)g->p[i].packet,
			      g->p[i].what);
}

/* The first problem is `what` at (file s, off, packet k); n problems in all. */
static void expect(const struct got *g, size_t n, unsigned s, uint64_t off, uint64_t k,
		   const char *what)
{
	char file[16];
	snprintf(file, sizeof(file), "stream_%u", s);
	if (g->n != n || !g->n || strcmp(g->p[0].file, file) != 0 || g->p[0].off != off ||
	    g->p[0].packet != k || !strstr(g->p[0].what, what)) {
		print_message("want %zu problem(s), first %s: offset %llu (packet %llu): ...%s...; got:\n",
			      n, file, (unsigned long long)off, (unsigned long long)k, what);
		dump(g);
		fail();
	}
}

/* ---- tests ------------------------------------------------------------------ */

static void test_good(void **state)
{
	(void)state;
	for (int v = 0; v < 4; v++) {
		struct fx x;
		struct got g;
		struct rd_check_totals tot;
		fx_build(&x, v & 1, v >> 1, NULL, 0, NULL);
		run(&x, &g, &tot);
		if (g.n)
			dump(&g);
		assert_int_equal(g.n, 0);
		assert_int_equal(tot.streams, NSTREAMS);
		assert_int_equal(tot.packets, NSTREAMS * NPKT);
		assert_int_equal(tot.events, NSTREAMS * NPKT * (NEV - 1));
		/* events_discarded 2, 5, 8, 11: all of it lost, from the start */
		assert_int_equal(tot.lost, NSTREAMS * (2 + 3 * (NPKT - 1)));
		fx_free(&x);
	}
}

enum fault {
	F_MAGIC, F_UUID, F_SID, F_CONTENT_GT, F_PSIZE_BITS, F_CSIZE_BITS, F_SEQ_GAP, F_SEQ_DOWN,
	F_SEQ_FIRST, F_DISC_DOWN, F_END_BEFORE_BEGIN, F_OVERLAP, F_AFTER_END, F_BACKWARDS,
	F_UNKNOWN_ID, F_CUT_EVENT, F_CUT_HEADER, F_CUT_PACKET, F_EMPTY, F_NAME, F_INST_CHANGE,
	F_DUP_INST, F_HUGE, F_COUNT
};

static void test_faults(void **state)
{
	(void)state;
	for (int v = 0; v < 4; v++) {
		for (int f = 0; f < F_COUNT; f++) {
			struct fx x;
			struct got g;
			struct rd_check_totals tot;
			struct tweak tw = { 0 };
			if (f == F_BACKWARDS)   /* the extended t:big just before the t:a before it */
				tw = (struct tweak){ 1, 1, 2, NEV - 1, 0, rec_ts(1, 2, NEV - 2) - 1 };
			if (f == F_UNKNOWN_ID)
				tw = (struct tweak){ 1, 1, 2, 2, 30, 0 };
			fx_build(&x, v & 1, v >> 1, NULL, 0, &tw);
			size_t P = x.pkt_off[1][2], P3 = x.pkt_off[1][3];
			uint64_t psize = get(&x, 1, P + 56, 8), csize = get(&x, 1, P + 48, 8);
			switch (f) {
			case F_MAGIC:
				x.data[1][P] ^= 0xff;
				break;
			case F_UUID:
				x.data[1][P + 7] ^= 1;
				break;
			case F_SID:
				put(&x, 1, P + 20, 5, 4);
				break;
			case F_CONTENT_GT:
				put(&x, 1, P + 48, psize + 64, 8);
				break;
			case F_PSIZE_BITS:
				put(&x, 1, P + 56, psize + 4, 8);
				break;
			case F_CSIZE_BITS:
				put(&x, 1, P + 48, csize - 4, 8);
				break;
			case F_SEQ_GAP:
				put(&x, 1, P + 64, 3, 8);
				put(&x, 1, P3 + 64, 4, 8);
				break;
			case F_SEQ_DOWN:
				put(&x, 1, P3 + 64, 1, 8);
				break;
			case F_SEQ_FIRST:
				for (unsigned k = 0; k < NPKT; k++)
					put(&x, 1, x.pkt_off[1][k] + 64, 5 + k, 8);
				break;
			case F_DISC_DOWN:
				put(&x, 1, P + 72, 100, 8);
				break;
			case F_END_BEFORE_BEGIN:
				put(&x, 1, P + 40, rec_ts(1, 2, 0) - 1, 8);
				break;
			case F_OVERLAP:
				put(&x, 1, P + 32, rec_ts(1, 1, NEV - 1) + 4, 8);
				break;
			case F_AFTER_END:
				put(&x, 1, P + 40, rec_ts(1, 2, NEV - 2) - 1, 8);
				break;
			case F_CUT_EVENT:
				put(&x, 1, P + 48, csize - 8, 8);
				break;
			case F_CUT_HEADER:
				x.len[1] = P3 + 30;
				break;
			case F_CUT_PACKET:
				x.len[1] = P3 + 90;
				break;
			case F_EMPTY:
				x.len[1] = 0;
				break;
			case F_NAME:
				x.name[1] = "stream_7";
				break;
			case F_INST_CHANGE:
				put(&x, 1, P + 24, 9, 8);
				break;
			case F_DUP_INST:
				for (unsigned k = 0; k < NPKT; k++)
					put(&x, 1, x.pkt_off[1][k] + 24, 0, 8);
				break;
			case F_HUGE:
				put(&x, 1, P + 56, ~UINT64_C(7), 8);
				put(&x, 1, P + 48, UINT64_C(1) << 63, 8);
				break;
			}
			run(&x, &g, &tot);
			const size_t *ev = x.ev_off[1][2];
			switch (f) {
			case F_MAGIC: expect(&g, 1, 1, P, 2, "bad magic number 0x"); break;
			case F_UUID: expect(&g, 1, 1, P + 4, 2, "uuid a0a1a2a2-"); break;
			case F_SID: expect(&g, 1, 1, P + 20, 2, "unknown stream_id 5"); break;
			case F_CONTENT_GT: expect(&g, 1, 1, P + 48, 2, "is larger than packet_size"); break;
			case F_PSIZE_BITS: expect(&g, 1, 1, P + 56, 2, "not a whole number of bytes"); break;
			case F_CSIZE_BITS:
				/* and the last event, 4 bits short */
				expect(&g, 2, 1, P + 48, 2, "not a whole number of bytes");
				assert_true(strstr(g.p[1].what, "cut by content_size") && g.p[1].off == ev[NEV - 1]);
				break;
			case F_SEQ_GAP: expect(&g, 1, 1, P + 64, 2, "jumps from 1 to 3: 1 packet missing"); break;
			case F_SEQ_DOWN: expect(&g, 1, 1, P3 + 64, 3, "packet_seq_num 1 after 2"); break;
			case F_SEQ_FIRST: expect(&g, 1, 1, x.pkt_off[1][0] + 64, 0, "first packet has packet_seq_num 5"); break;
			case F_DISC_DOWN: expect(&g, 1, 1, P3 + 72, 3, "goes down from 100 to 11"); break;
			case F_END_BEFORE_BEGIN:
				/* and every record of the packet is after its end */
				expect(&g, 2, 1, P + 40, 2, "is before timestamp_begin");
				assert_true(strstr(g.p[1].what, "after timestamp_end") &&
					    strstr(g.p[1].what, "(and 5 more events in this packet)"));
				break;
			case F_OVERLAP: expect(&g, 1, 1, P + 32, 2, "before the end of the previous packet"); break;
			case F_AFTER_END:
				expect(&g, 1, 1, ev[NEV - 2], 2, "is after timestamp_end");
				assert_non_null(strstr(g.p[0].what, "(and 1 more event in this packet)"));
				break;
			case F_BACKWARDS: expect(&g, 1, 1, ev[NEV - 1], 2, "goes backwards"); break;
			case F_UNKNOWN_ID: expect(&g, 1, 1, ev[2], 2, "unknown event id 30"); break;
			case F_CUT_EVENT: expect(&g, 1, 1, ev[NEV - 1], 2, "'t:big' (id 40) is cut by content_size"); break;
			case F_CUT_HEADER: expect(&g, 1, 1, P3, 3, "ends inside a packet header (30 bytes left)"); break;
			case F_CUT_PACKET: expect(&g, 1, 1, P3 + 56, 3, "but the file has 90 bytes left"); break;
			case F_EMPTY:
				expect(&g, 1, 1, 0, 0, "empty stream file");
				assert_int_equal(g.p[0].has_packet, 0);
				break;
			case F_NAME:
				/* (expect() names files stream_N: compare by hand) */
				assert_int_equal(g.n, 1);
				assert_string_equal(g.p[0].file, "stream_7");
				assert_int_equal(g.p[0].off, x.pkt_off[1][0] + 80);
				assert_non_null(strstr(g.p[0].what, "cpu_id 1 does not match the file name"));
				break;
			case F_INST_CHANGE: expect(&g, 1, 1, P + 24, 2, "changes from 1 to 9"); break;
			case F_DUP_INST: expect(&g, 1, 1, 24, 0, "stream_instance_id 0 is also that of stream_0"); break;
			case F_HUGE: expect(&g, 1, 1, P + 56, 2, "the packet is 2305843009213693951 bytes"); break;
			}
			/* A fault in stream 1 never costs stream 0 anything. */
			if (f != F_DUP_INST)
				assert_true(tot.events >= NPKT * (NEV - 1));
			fx_free(&x);
		}
	}
}

static void test_env(void **state)
{
	(void)state;
	static const struct ctf_env_kv attached[] = { { "ringtrace_attached", NULL, 1 } };
	static const struct ctf_env_kv overwrite[] = {
		{ "ringtrace_mode", "overwrite", 0 },
		{ "ringtrace_lost_overwrite", NULL, 12 },
	};
	static const struct ctf_env_kv overwrite0[] = {
		{ "ringtrace_mode", "overwrite", 0 },
		{ "ringtrace_lost_overwrite", NULL, 0 },
	};
	static const struct ctf_env_kv crash[] = { { "ringtrace_lost_crash", NULL, 3 } };
	static const struct ctf_env_kv snap[] = { { "ringtrace_snapshot_trigger", "recover", 0 } };
	static const struct {
		const struct ctf_env_kv *env;
		size_t n;
		int late_ok, gap_ok;
	} cases[] = {
		{ NULL, 0, 0, 0 },
		{ attached, 1, 1, 0 },
		{ overwrite, 2, 1, 1 },
		{ overwrite0, 2, 0, 0 },
		{ crash, 1, 1, 1 },
		{ snap, 1, 1, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fx x;
		struct got g;
		struct rd_check_totals tot;
		fx_build(&x, 0, 0, cases[i].env, cases[i].n, NULL);
		/* stream 0 starts at packet 40; stream 1 loses its packet 2 */
		for (unsigned k = 0; k < NPKT; k++)
			put(&x, 0, x.pkt_off[0][k] + 64, 40 + k, 8);
		put(&x, 1, x.pkt_off[1][2] + 64, 3, 8);
		put(&x, 1, x.pkt_off[1][3] + 64, 4, 8);
		run(&x, &g, &tot);
		size_t want = (size_t)!cases[i].late_ok + (size_t)!cases[i].gap_ok;
		if (g.n != want) {
			print_message("env case %zu: want %zu problems\n", i, want);
			dump(&g);
			fail();
		}
		/* An attached recorder did not lose what was lost before it came. */
		assert_int_equal(tot.lost, cases[i].env == attached ? 2 * 9 : 2 * 11);
		fx_free(&x);
	}
}

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void test_hostile(void **state)
{
	(void)state;
	for (int v = 0; v < 4; v++) {
		struct fx x;
		struct got g;
		struct rd_check_totals tot;
		fx_build(&x, v & 1, v >> 1, NULL, 0, NULL);
		size_t full = x.len[1];
		uint8_t *orig = malloc(full);
		assert_non_null(orig);
		memcpy(orig, x.data[1], full);

		/* Every length: a problem unless the cut falls between packets. */
		for (size_t len = 0; len <= full; len++) {
			int boundary = len == full;
			for (unsigned k = 1; k < NPKT; k++)
				boundary |= len == x.pkt_off[1][k];
			x.len[1] = len;
			run(&x, &g, &tot);
			if (boundary != (g.n == 0)) {
				print_message("cut at %zu of %zu:\n", len, full);
				dump(&g);
				fail();
			}
		}
		x.len[1] = full;

		/* Random bytes changed: any verdict, no crash, sane counts. */
		for (int it = 0; it < 3000; it++) {
			memcpy(x.data[1], orig, full);
			int n = 1 + (int)(rnd() % 8);
			for (int j = 0; j < n; j++)
				x.data[1][rnd() % full] = (uint8_t)rnd();
			run(&x, &g, &tot);
			/* a packet is 84 bytes at least */
			assert_true(tot.packets <= NPKT + full / 84 + 1);
		}

		/* Random files. */
		for (int it = 0; it < 500; it++) {
			size_t len = (size_t)(rnd() % full);
			for (size_t j = 0; j < len; j++)
				x.data[1][j] = (uint8_t)rnd();
			/* now and then a valid magic, to get past the first check */
			if (it % 2 && len >= 4)
				ctf_store(x.data[1], CTF_MAGIC, 4, x.be);
			x.len[1] = len;
			run(&x, &g, &tot);
			assert_true(g.n > 0);
		}
		memcpy(x.data[1], orig, full);
		x.len[1] = full;
		free(orig);
		fx_free(&x);
	}
}

/*
 * Hostile metadata: a sequence of empty structs costs the decoder work
 * without consuming input (a million steps for a 9-byte event). The
 * checker's work bound stops the file early instead of spinning.
 */
static void test_work_bound(void **state)
{
	(void)state;
	static const struct ctf_event_class one[] = { { 1, "ringtrace", "thread", "u32 tid" } };
	struct ctf_trace_desc t = {
		.clock = { .freq = 1000000000 },
		.vpid = -1,
		.events = one,
		.n_events = 1,
	};
	char *text;
	size_t tlen;
	assert_int_equal(ctf_metadata_build(&t, &text, &tlen), 0);
	static const char extra[] = "event {\n\tname = \"x:y\";\n\tid = 50;\n\tstream_id = 0;\n"
				    "\tfields := struct {\n\t\tuint32_t _n;\n\t\tstruct { } _e[_n];\n\t};\n};\n";
	text = realloc(text, tlen + sizeof(extra));
	assert_non_null(text);
	memcpy(text + tlen, extra, sizeof(extra));
	struct rd_meta *m;
	char err[256];
	if (rd_meta_parse(text, tlen + sizeof(extra) - 1, &m, err, sizeof(err)) < 0)
		fail_msg("metadata: %s", err);
	free(text);

	/* 4000 events x.y with n = 1000000 (extended headers: id >= 31). */
	static uint8_t pkt[84 + 4000 * 17];
	struct sig_field f[SIG_FIELDS_MAX];
	size_t nf;
	assert_int_equal(sig_parse("u32 n", f, SIG_FIELDS_MAX, &nf), 0);
	struct ctf_enc e;
	struct ctf_packet_info pi = { .ts_begin = 1 };
	ctf_enc_init(&e, pkt, sizeof(pkt), 0, 0);
	assert_int_equal(ctf_enc_packet_header(&e, &pi), 0);
	struct sig_value v = { .u = 1000000 };
	for (int i = 0; i < 4000; i++)
		assert_int_equal(ctf_enc_event(&e, 50, 2 + (uint64_t)i, 1, f, nf, &v), 0);
	long n = ctf_enc_packet_close(&e, 5000, 0);
	assert_true(n > 0);

	struct rd_check *c;
	struct got g = { 0 };
	struct rd_check_totals tot;
	assert_int_equal(rd_check_new(m, collect, &g, &c), 0);
	assert_int_equal(rd_check_file(c, "stream_0", -1, pkt, (uint64_t)n), 0);
	rd_check_finish(c);
	rd_check_get_totals(c, &tot);
	rd_check_free(c);
	if (g.n != 1 || !strstr(g.p[0].what, "values per byte of the file")) {
		dump(&g);
		fail();
	}
	assert_true(tot.events < 50);
	rd_meta_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_work_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
