/*
 * test_tsdl.c - TSDL tokenizer and parser (read/tsdl.h).
 *
 * Checks: the metadata that ringtrace generates parses in LE, BE and
 * natural alignment, with the types of every field kind, the clock, the env
 * and the stream; timestamps without a clock mapping get one as babeltrace2
 * gives them; harmless variations parse too (comments, field and block
 * order, typedef, named struct/variant/enum, multi-word aliases, other
 * alignments and bases, network byte order, callsite blocks, clock offset
 * normalisation, packetized metadata); malformed metadata is refused with
 * the right line number in the message; random mutations of valid metadata
 * never crash the parser (this test runs under ASan/UBSan in CI).
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

#include "ctf/metadata.h"
#include "read/tsdl.h"

static const struct ctf_event_class events[] = {
	{ 1, "ringtrace", "thread", "u32 tid" },
	{ 2, "demo", "all", "s8 a;u64 b;x16 c;ptr p;f32 x;f64 y;string s;u8 tag[4];u16 vals[]" },
	{ 33, "demo", "other", "" },
};

static char *generated(int be, int natural)
{
	struct ctf_trace_desc t = {
		.big_endian = be,
		.natural_align = natural,
		.clock = { .freq = 1000000000, .offset_s = 1700000000, .offset = 2500000001u },
		.hostname = "h",
		.procname = "p\"q",
		.tracer_version = "0.1.0",
		.thread_names = "1=x",
		.vpid = 9,
		.events = events,
		.n_events = 3,
	};
	char *text;
	assert_int_equal(ctf_metadata_build(&t, &text, NULL), 0);
	return text;
}

static struct rd_meta *parse_ok(const char *text)
{
	struct rd_meta *m = NULL;
	char err[256];
	int r = rd_meta_parse(text, strlen(text), &m, err, sizeof(err));
	if (r != 0)
		fail_msg("parse failed: %s", err);
	return m;
}

static const struct rd_type *field(const struct rd_type *st, const char *name)
{
	for (uint32_t i = 0; i < st->n_members; i++)
		if (!strcmp(st->members[i].name, name))
			return st->members[i].type;
	fail_msg("no field %s", name);
	return NULL;
}

static void check_generated(int be, int natural)
{
	char *text = generated(be, natural);
	struct rd_meta *m = parse_ok(text);
	assert_int_equal(m->big_endian, be);
	assert_non_null(m->packet_header);
	assert_int_equal(m->packet_header->n_members, 4);
	assert_int_equal(m->n_clocks, 1);
	assert_string_equal(m->clocks[0].name, "monotonic");
	/* offset 2.5 s + 1 ns moves 2 s into offset_s, as babeltrace2 does */
	assert_int_equal(m->clocks[0].offset_s, 1700000002);
	assert_int_equal(m->clocks[0].offset, 500000001);
	assert_int_equal(m->clocks[0].absolute, 1);
	assert_string_equal(rd_meta_env(m, "hostname")->str, "h");
	assert_string_equal(rd_meta_env(m, "procname")->str, "p\"q");
	assert_null(rd_meta_env(m, "vpid")->str);
	assert_int_equal(rd_meta_env(m, "vpid")->num, 9);
	assert_int_equal(m->n_streams, 1);
	const struct rd_stream_class *sc = rd_meta_stream(m, 0);
	assert_non_null(sc);
	assert_int_equal(sc->clock, 0);
	assert_int_equal(sc->n_events, 3);
	const struct rd_type *h = sc->event_header;
	assert_int_equal(h->kind, RD_STRUCT);
	assert_int_equal(field(h, "id")->kind, RD_ENUM);
	assert_int_equal(field(h, "id")->size, 5);
	assert_int_equal(field(h, "v")->kind, RD_VARIANT);
	assert_string_equal(field(h, "v")->ref, "id");
	const struct rd_type *ext = field(field(h, "v"), "extended");
	assert_int_equal(field(ext, "timestamp")->clock, 0);
	assert_int_equal(field(ext, "timestamp")->size, 64);
	assert_int_equal(ext->align, natural ? 64 : 8);
	assert_int_equal(field(sc->packet_context, "cpu_id")->size, 32);

	const struct rd_event_class *e = rd_meta_event(sc, 2);
	assert_non_null(e);
	assert_string_equal(e->name, "demo:all");
	const struct rd_type *f = e->fields;
	const struct rd_type *t = field(f, "_a");
	assert_int_equal(t->kind, RD_INT);
	assert_int_equal(t->size, 8);
	assert_int_equal(t->is_signed, 1);
	t = field(f, "_c");
	assert_int_equal(t->base, 16);
	assert_int_equal(t->align, natural ? 16 : 8);
	assert_int_equal(field(f, "_p")->size, 64);
	assert_int_equal(field(f, "_x")->kind, RD_FLOAT);
	assert_int_equal(field(f, "_x")->size, 32);
	assert_int_equal(field(f, "_y")->size, 64);
	assert_int_equal(field(f, "_s")->kind, RD_STRING);
	t = field(f, "_tag");
	assert_int_equal(t->kind, RD_ARRAY);
	assert_int_equal(t->length, 4);
	assert_int_equal(t->elem->size, 8);
	t = field(f, "_vals");
	assert_int_equal(t->kind, RD_SEQ);
	assert_string_equal(t->ref, "__vals_length");
	assert_int_equal(t->elem->size, 16);
	assert_int_equal(f->align, natural ? 64 : 8);
	assert_string_equal(rd_meta_event(sc, 33)->name, "demo:other");
	assert_int_equal(rd_meta_event(sc, 33)->fields->n_members, 0);
	assert_null(rd_meta_event(sc, 3));
	rd_meta_free(m);
	free(text);
}

static void test_generated(void **state)
{
	(void)state;
	check_generated(0, 0);
	check_generated(1, 0);
	check_generated(0, 1);
	check_generated(1, 1);
}

/* Every construct of the grammar, in an unusual order. */
static void test_variations(void **state)
{
	(void)state;
	const char *text =
		 "/* CTF 1.8 */ // a line comment\n"
		 "typedef integer { size = 8; align = 8; signed = false; } u8, bytes4[4];\n"
		 "typealias integer { size = 32; align = 32; signed = 0; byte_order = network; base = x; } := unsigned int;\n"
		 "typealias integer { size = 64; signed = TRUE; base = decimal; encoding = none; } := long long int;\n"
		 "typealias integer { size = 3; } := u3;\n"
		 "enum choice_tag : u8 { A, B = 5, \"C d\" = 10 ... 12, E };\n"
		 "struct pair { u8 a; long long int b; } align(64);\n"
		 "variant choice { u8 A; long long int B; string _C; };\n"
		 "event {\n"
		 "  fields := struct {\n"
		 "    unsigned int n;\n"
		 "    enum choice_tag tag;\n"
		 "    struct pair p;\n"
		 "    variant choice <tag> v;\n"
		 "    u3 small, other[2];\n"
		 "    struct { u8 len; u8 data[len]; bytes4 four; } nested;\n"
		 "    floating_point { mant_dig = 53; exp_dig = 11; byte_order = be; } d;\n"
		 "    string { encoding = UTF8; } s;\n"
		 "  };\n"
		 "  name = ev1; id = 7;\n"
		 "};\n"
		 "trace { byte_order = le; minor = 8; major = 1; uuid = \"00000000-0000-0000-0000-000000000000\"; "
		 "future_attribute = 3; };\n"
		 "callsite { name = \"x\"; func = \"f\"; file = \"f.c\"; line = 3; ip = 0x1; };\n"
		 "env { a = 1; b = \"two\"; c = -3; d = word; };\n"
		 "clock { name = c2; freq = 1000; offset = 2500; offset_s = -1; };\n"
		 "stream { id = 0; packet.context := struct { integer { size = 64; map = clock.c2.value; } "
		 "timestamp_begin; }; };;\n";
	struct rd_meta *m = parse_ok(text);
	const struct rd_stream_class *sc = rd_meta_stream(m, 0);
	assert_int_equal(sc->clock, 0);
	assert_int_equal(m->clocks[0].offset_s, 1);
	assert_int_equal(m->clocks[0].offset, 500);
	const struct rd_event_class *e = rd_meta_event(sc, 7);
	assert_string_equal(e->name, "ev1");
	const struct rd_type *f = e->fields;
	assert_int_equal(field(f, "n")->byte_order, RD_BO_BE);
	assert_int_equal(field(f, "n")->base, 16);
	assert_int_equal(field(f, "n")->align, 32);
	assert_int_equal(field(f, "p")->align, 64);
	assert_int_equal(field(f, "small")->align, 1);
	assert_int_equal(field(f, "other")->length, 2);
	const struct rd_type *tag = field(f, "tag");
	assert_int_equal(tag->kind, RD_ENUM);
	assert_int_equal(tag->n_maps, 4);
	assert_int_equal(tag->maps[1].lo, 5);
	assert_string_equal(tag->maps[2].label, "C d");
	assert_int_equal(tag->maps[2].hi, 12);
	assert_int_equal(tag->maps[3].lo, 13);
	assert_int_equal(field(f, "v")->n_members, 3);
	assert_string_equal(field(f, "v")->ref, "tag");
	assert_int_equal(field(field(f, "nested"), "data")->kind, RD_SEQ);
	assert_int_equal(field(field(f, "nested"), "four")->length, 4);
	assert_int_equal(field(f, "d")->size, 64);
	assert_int_equal(rd_meta_env(m, "c")->num, -3);
	assert_string_equal(rd_meta_env(m, "d")->str, "word");
	rd_meta_free(m);
}

/*
 * Timestamps without a `map`, as babeltrace2 reads them: `timestamp` in the
 * event header (here inside a variant option) and `timestamp_begin`/`_end`
 * in the packet context map to an implicit 1 GHz clock when the trace has
 * no clock, to its only clock otherwise; other names map to nothing; the
 * same alias in a payload stays unmapped; with two clocks the trace is
 * refused.
 */
#define UNMAPPED(CLOCKS, TS, TSB)                                                              \
	"/* CTF 1.8 */\n"                                                                      \
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"             \
	"typealias integer { size = 27; align = 1; signed = false; } := uint27_t;\n"           \
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"           \
	"trace { major = 1; minor = 8; byte_order = le; };\n" CLOCKS                           \
	"stream { packet.context := struct { uint64_t " TSB "; uint64_t packet_size; };\n"     \
	"  event.header := struct { enum : uint8_t { compact = 0 ... 30, extended = 31 } id;\n" \
	"    variant <id> { struct { uint27_t " TS "; } compact;\n"                             \
	"      struct { uint8_t id; uint64_t " TS "; } extended; } v; }; };\n"                 \
	"event { name = e; fields := struct { uint64_t timestamp; uint27_t x; }; };\n"

static const struct rd_type *header_ts(const struct rd_stream_class *sc, const char *opt,
				       const char *name)
{
	return field(field(field(sc->event_header, "v"), opt), name);
}

static void test_unmapped_timestamps(void **state)
{
	(void)state;
	struct rd_meta *m = parse_ok(UNMAPPED("", "timestamp", "timestamp_begin"));
	const struct rd_stream_class *sc = &m->streams[0];
	assert_int_equal(m->n_clocks, 1);
	assert_string_equal(m->clocks[0].name, "default");
	assert_int_equal(m->clocks[0].freq, 1000000000);
	assert_int_equal(m->clocks[0].offset_s, 0);
	assert_int_equal(m->clocks[0].offset, 0);
	assert_int_equal(sc->clock, 0);
	assert_int_equal(header_ts(sc, "compact", "timestamp")->clock, 0);
	assert_int_equal(header_ts(sc, "compact", "timestamp")->size, 27);
	assert_int_equal(header_ts(sc, "extended", "timestamp")->clock, 0);
	assert_int_equal(header_ts(sc, "extended", "id")->clock, -1);
	assert_int_equal(field(sc->packet_context, "timestamp_begin")->clock, 0);
	assert_int_equal(field(sc->packet_context, "packet_size")->clock, -1);
	/* the aliases are shared with the payload, which stays unmapped */
	assert_int_equal(field(m->events[0].fields, "timestamp")->clock, -1);
	assert_int_equal(field(m->events[0].fields, "x")->clock, -1);
	rd_meta_free(m);

	m = parse_ok(UNMAPPED("", "ts", "tsb"));
	assert_int_equal(m->n_clocks, 0);
	assert_int_equal(m->streams[0].clock, -1);
	assert_int_equal(header_ts(&m->streams[0], "compact", "ts")->clock, -1);
	rd_meta_free(m);

	m = parse_ok(UNMAPPED("clock { name = mono; freq = 1000; };\n", "timestamp", "tsb"));
	assert_int_equal(m->n_clocks, 1);
	assert_string_equal(m->clocks[0].name, "mono");
	assert_int_equal(m->streams[0].clock, 0);
	assert_int_equal(header_ts(&m->streams[0], "extended", "timestamp")->clock, 0);
	rd_meta_free(m);

	/* Shared types: 40 levels of two members each are 2^40 paths to the
	 * leaves but 41 types; both walks (the mapping, and finding a
	 * stream's clock) visit each type once, or they would never end. */
	for (int named = 0; named < 2; named++) {
		char text[8192];
		int n = snprintf(text, sizeof(text),
				 "/* CTF 1.8 */\n"
				 "typealias integer { size = 8; align = 8; signed = false; } := u8;\n"
				 "trace { major = 1; minor = 8; byte_order = le; };\n"
				 "typealias struct { u8 %s; u8 x; } := s0;\n", named ? "timestamp" : "ts");
		for (int i = 1; i <= 40; i++)
			n += snprintf(text + n, sizeof(text) - (size_t)n,
				      "typealias struct { s%d a; s%d b; } := s%d;\n", i - 1, i - 1, i);
		snprintf(text + n, sizeof(text) - (size_t)n,
			 "stream { event.header := struct { s40 h; u8 id; }; };\n"
			 "event { name = e; fields := struct { s40 copy; }; };\n");
		m = parse_ok(text);
		assert_int_equal(m->n_clocks, (size_t)named);
		assert_int_equal(m->streams[0].clock, named ? 0 : -1);
		const struct rd_type *h = field(m->streams[0].event_header, "h");
		const struct rd_type *pl = m->events[0].fields->members[0].type;
		for (int i = 0; i < 40; i++) {
			h = field(h, i % 2 ? "a" : "b");
			pl = field(pl, "a");
		}
		assert_int_equal(field(h, named ? "timestamp" : "ts")->clock, named ? 0 : -1);
		assert_int_equal(field(pl, named ? "timestamp" : "ts")->clock, -1);
		rd_meta_free(m);
	}

	const char *two = UNMAPPED("clock { name = a; };\nclock { name = b; };\n", "timestamp", "tsb");
	char err[256];
	m = NULL;
	assert_int_equal(rd_meta_parse(two, strlen(two), &m, err, sizeof(err)), -EINVAL);
	assert_null(m);
	assert_non_null(strstr(err, "line 3: a timestamp that is not mapped to a clock, in a trace with 2 clocks"));
}

struct bad {
	const char *text;
	const char *msg;             /* expected substring, with its line */
};

#define HDR "/* CTF 1.8 */\n"
#define TRACE "trace { major = 1; minor = 8; byte_order = le; };\n"
#define U8 "typealias integer { size = 8; } := u8;\n"

static void test_errors(void **state)
{
	(void)state;
	static const struct bad bad[] = {
		{ "/* CTF 1.7 */\n" TRACE, "line 1: metadata does not begin" },
		{ "", "line 1: metadata does not begin" },
		{ HDR TRACE "event { name = x }\n", "line 3: expected ';'" },
		{ HDR TRACE "\nevent { name = x; fields := struct { foo_t a; }; };\n", "line 4: unknown type 'foo_t'" },
		{ HDR "typealias integer { size = 8; colour = red; } := u8;\n" TRACE, "line 2: unknown integer attribute 'colour'" },
		{ HDR "typealias integer { size = 0; } := u8;\n", "line 2: integer size 0" },
		{ HDR "typealias integer { size = 65; } := u8;\n", "line 2: integer size 65" },
		{ HDR "typealias integer { align = 8; } := u8;\n", "line 2: integer without a size" },
		{ HDR "typealias integer { size = 8; align = 3; } := u8;\n", "line 2: alignment 3" },
		{ HDR "\n\n/* unterminated\n", "line 4: unterminated comment" },
		{ HDR "env { a = \"abc\n\"; };\n", "line 2: unterminated string" },
		{ HDR "env { a = \"a\\qb\"; };\n", "line 2: unknown escape" },
		{ HDR "env { a = \"a\\0b\"; };\n", "line 2: bad octal escape" },
		{ HDR U8 TRACE "event { name = x; fields := struct { u8 a; u8 a; }; };\n", "line 4: duplicate field 'a'" },
		{ HDR U8, "no trace block" },
		{ HDR "trace { major = 1; minor = 8; };\n", "without byte_order" },
		{ HDR "trace { major = 2; minor = 8; byte_order = le; };\n", "line 2: unsupported CTF major version 2" },
		{ HDR "trace { major = 1; minor = 8; byte_order = native; };\n", "line 2: bad byte_order" },
		{ HDR TRACE "stream { packet.bogus := struct { }; };\n", "line 3: unknown scope 'packet.bogus'" },
		{ HDR TRACE "stream { packet.context := struct { integer { size = 64; map = clock.nope.value; } t; }; };\n",
		  "line 3: integer mapped to unknown clock 'nope'" },
		{ HDR U8 TRACE "event { name = a; id = 1; fields := struct { u8 x; }; };\n"
		  "event { name = b; id = 1; fields := struct { u8 x; }; };\n", "line 5: duplicate event id 1" },
		{ HDR U8 TRACE "event { name = a; fields := struct { u8 x; }; };\n"
		  "event { name = b; fields := struct { u8 x; }; };\n", "without id" },
		{ HDR U8 TRACE "stream { id = 0; };\nevent { name = a; stream_id = 3; };\n", "line 5: event 'a' refers to unknown stream 3" },
		{ HDR "typealias integer { size = 8; } := u8;\nenum e : u8 { A = 5 ... 2 };\n", "line 3: enumerator range goes backwards" },
		{ HDR "typealias floating_point { exp_dig = 5; mant_dig = 10; } := half;\n", "line 2: unsupported floating_point" },
		{ HDR "typealias integer { size = 8; } := u8;\ntypealias integer { size = 8; } := u8;\n", "line 3: 'u8' is already defined" },
		{ HDR TRACE "clock { freq = 0; name = c; };\n", "line 3: clock frequency is 0" },
		{ HDR TRACE "clock { freq = 10; };\n", "line 3: clock without a name" },
		{ HDR TRACE "event { id = 1; };\n", "line 3: event without a name" },
		{ HDR TRACE "bogus { };\n", "line 3: unexpected 'bogus' at top level" },
		{ HDR TRACE "event { name = \"x\"; fields := integer { size = 8; }; };\n", "line 3: event.fields must be a struct" },
		{ HDR TRACE "trace { major = 1; minor = 8; byte_order = le; };\n", "line 3: duplicate trace block" },
		{ HDR "trace { uuid = \"1234\"; };\n", "line 2: bad uuid" },
		{ HDR "env { a = 99999999999999999999999; };\n", "line 2: integer constant too large" },
		{ HDR "env { a = 0x; };\n", "line 2: bad hexadecimal constant" },
		{ HDR "env { a = 12abc; };\n", "line 2: bad integer constant" },
		{ HDR "env { a = 1; } @\n", "line 2: unexpected character '@'" },
		{ HDR "env { a = \x01; };\n", "line 2: unexpected byte 0x01" },
		{ HDR "struct s;\n", "line 2: unknown struct 's'" },
		{ HDR "variant v { };\n", "line 2: variant without options" },
		{ HDR "typealias integer { size = 8; } := string;\n", "line 2: 'string' cannot be an alias name" },
		{ HDR TRACE "event { name = x; fields := struct { string a[b.]; }; };\n", "line 3: expected a name" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rd_meta *m = NULL;
		char err[256] = "";
		int r = rd_meta_parse(bad[i].text, strlen(bad[i].text), &m, err, sizeof(err));
		if (r == 0)
			fail_msg("case %zu accepted: %s", i, bad[i].text);
		if (!strstr(err, bad[i].msg))
			fail_msg("case %zu: expected \"%s\", got \"%s\"", i, bad[i].msg, err);
		assert_null(m);
	}
}

static void test_limits(void **state)
{
	(void)state;
	/* Types nested deeper than the cap are refused, not recursed into. */
	size_t cap = 1 << 16, len = 0;
	char *t = malloc(cap);
	len += (size_t)snprintf(t + len, cap - len, HDR U8 TRACE "event { name = x; fields := ");
	for (int i = 0; i < 40; i++)
		len += (size_t)snprintf(t + len, cap - len, "struct { ");
	len += (size_t)snprintf(t + len, cap - len, "u8 a; ");
	for (int i = 0; i < 40; i++)
		len += (size_t)snprintf(t + len, cap - len, "} f%d; ", i);
	snprintf(t + len, cap - len, "};\n");
	struct rd_meta *m = NULL;
	char err[256];
	assert_int_equal(rd_meta_parse(t, strlen(t), &m, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nested"));

	/* A chain of aliases deeper than the type depth cap. */
	len = (size_t)snprintf(t, cap, HDR "typealias integer { size = 8; } := t0;\n");
	for (int i = 1; i < 80; i++)
		len += (size_t)snprintf(t + len, cap - len, "typealias struct { t%d x; } := t%d;\n", i - 1, i);
	assert_int_equal(rd_meta_parse(t, strlen(t), &m, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nested more than"));
	free(t);

	/* Too large. */
	assert_int_equal(rd_meta_parse("x", RD_META_MAX + 1, &m, err, sizeof(err)), -E2BIG);
}

/* "HDR TRACE env { s = "<n bytes>"; };" with each byte written as `esc`
 * (a plain 'a' when NULL): the metadata of a string-literal limit test. */
static char *env_literal(size_t n, const char *esc)
{
	const char *pre = HDR TRACE "env {\n\ts = \"", *post = "\";\n};\n";
	size_t unit = esc ? strlen(esc) : 1;
	size_t len = strlen(pre) + n * unit + strlen(post);
	char *t = malloc(len + 1), *w = t;
	assert_non_null(t);
	w = stpcpy(w, pre);
	for (size_t i = 0; i < n; i++)
		w = esc ? stpcpy(w, esc) : (*w = 'a', w + 1);
	strcpy(w, post);
	return t;
}

static void test_string_limit(void **state)
{
	(void)state;
	struct rd_meta *m = NULL;
	char err[256] = "";

	/* Exactly RD_STRING_MAX bytes: read whole (the thread_names of a
	 * program with thousands of threads, in traces written before they
	 * had an env key each). */
	char *t = env_literal(RD_STRING_MAX, NULL);
	m = parse_ok(t);
	const struct rd_env *e = rd_meta_env(m, "s");
	assert_non_null(e);
	assert_non_null(e->str);
	assert_int_equal(strlen(e->str), RD_STRING_MAX);
	assert_true(e->str[0] == 'a' && e->str[RD_STRING_MAX - 1] == 'a');
	rd_meta_free(m);
	free(t);

	/* The limit counts decoded bytes: escapes four times longer in the
	 * text are still exactly at it. */
	t = env_literal(RD_STRING_MAX, "\\x41");
	m = parse_ok(t);
	e = rd_meta_env(m, "s");
	assert_non_null(e);
	assert_int_equal(strlen(e->str), RD_STRING_MAX);
	assert_true(e->str[RD_STRING_MAX - 1] == 'A');
	rd_meta_free(m);
	free(t);

	/* One byte over: refused, with the line and the limit. */
	t = env_literal(RD_STRING_MAX + 1, NULL);
	m = NULL;
	assert_int_equal(rd_meta_parse(t, strlen(t), &m, err, sizeof(err)), -EINVAL);
	assert_null(m);
	assert_string_equal(err, "line 4: string literal longer than 1048576 bytes");
	free(t);
	t = env_literal(RD_STRING_MAX + 1, "\\x41");
	assert_int_equal(rd_meta_parse(t, strlen(t), &m, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 4: string literal longer than 1048576 bytes");
	free(t);
}

static void test_packetized(void **state)
{
	(void)state;
	const char *body = HDR U8 TRACE;
	size_t blen = strlen(body);
	for (int be = 0; be < 2; be++) {
		/* Two packets, the second with padding after the text. */
		uint8_t buf[1024] = { 0 };
		size_t off = 0, half = blen / 2;
		for (int k = 0; k < 2; k++) {
			size_t n = k ? blen - half : half;
			uint32_t content = (uint32_t)(37 + n) * 8, packet = content + (k ? 64 : 0);
			uint32_t vals[3] = { 0x75D11D57u, content, packet };
			uint8_t *h = buf + off;
			for (int j = 0; j < 4; j++) {
				h[j] = (uint8_t)(vals[0] >> (be ? 24 - 8 * j : 8 * j));
				h[24 + j] = (uint8_t)(vals[1] >> (be ? 24 - 8 * j : 8 * j));
				h[28 + j] = (uint8_t)(vals[2] >> (be ? 24 - 8 * j : 8 * j));
			}
			h[35] = 1;
			h[36] = 8;
			memcpy(h + 37, body + (k ? half : 0), n);
			off += packet / 8;
		}
		char *text;
		size_t tlen;
		char err[128];
		assert_int_equal(rd_meta_text(buf, off, &text, &tlen, err, sizeof(err)), 0);
		assert_int_equal(tlen, blen);
		assert_memory_equal(text, body, blen);
		struct rd_meta *m = parse_ok(text);
		rd_meta_free(m);
		free(text);
		/* Truncated packet */
		assert_int_equal(rd_meta_text(buf, off - 9, &text, &tlen, err, sizeof(err)), -EINVAL);
	}
}

/* Mutations of valid metadata: any result but a crash is fine. */
static void test_mutations(void **state)
{
	(void)state;
	char *text = generated(0, 0);
	size_t len = strlen(text);
	char *copy = malloc(len);
	srand(42);
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(copy, text, len);
		size_t n = len;
		int edits = 1 + rand() % 4;
		for (int e = 0; e < edits; e++) {
			size_t at = 14 + (size_t)rand() % (len - 14);
			switch (rand() % 4) {
			case 0: copy[at] = (char)(rand() % 256); break;
			case 1: copy[at] = "{}[];:=<>.\"0a_ "[rand() % 15]; break;
			case 2: n = at; break;
			default: memmove(copy + at, copy + at + 1, len - at - 1); copy[len - 1] = ' '; break;
			}
		}
		struct rd_meta *m = NULL;
		char err[256];
		if (rd_meta_parse(copy, n, &m, err, sizeof(err)) == 0)
			rd_meta_free(m);
		else
			assert_non_null(strstr(err, "line "));
	}
	free(copy);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generated),
		cmocka_unit_test(test_variations),
		cmocka_unit_test(test_unmapped_timestamps),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_string_limit),
		cmocka_unit_test(test_packetized),
		cmocka_unit_test(test_mutations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
