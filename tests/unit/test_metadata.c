/*
 * test_metadata.c - TSDL metadata generator (ctf/metadata.h).
 *
 * Checks: golden lines of the generated text (signature at byte 0,
 * byte-packed integer aliases, trace block with packet.header, env with
 * escaped strings, absolute clock, clock-mapped aliases, the LTTng compact
 * event header, packet.context, one event block per class with the field
 * types of design.md section 3, sequences as __x_length + _x[__x_length]);
 * big-endian and natural-alignment variants; refusal of bad input (bad
 * signature, id 0, duplicate id, frequency 0, bad or duplicate env keys,
 * empty names) without output; ctf_metadata_write() writes the same text.
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

#include "util/buf.h"
#include "ctf/metadata.h"

static const struct ctf_event_class events[] = {
	{ 1, "ringtrace", "thread", "u32 tid" },
	{ 2, "demo", "all", "s8 a;u64 b;x16 c;ptr p;f32 x;f64 y;string s;u8 tag[4];u16 vals[]" },
	{ 40, "demo", "big\"id", "" },
};

static struct ctf_trace_desc desc(void)
{
	static const struct ctf_thread_name threads[] = {
		{ 42, "worker \"1\"" }, { 7, "" }, { 4294967295u, "last" },
	};
	static const struct ctf_env_kv env[] = {
		{ "extra_str", "a\"b\\c\nd\x01", 0 },
		{ "extra_num", NULL, -42 },
	};
	struct ctf_trace_desc t = {
		.clock = { .freq = 2994123456u, .offset_s = 1700000000, .offset = 12345,
			   .description = "tsc" },
		.hostname = "host\"1",
		.procname = "prog",
		.tracer_version = "0.1.0",
		.thread_names = "1=a%20b",
		.threads = threads,
		.n_threads = 3,
		.vpid = 77,
		.env = env,
		.n_env = 2,
		.events = events,
		.n_events = 3,
	};
	for (int i = 0; i < 16; i++) {
		t.uuid[i] = (uint8_t)i;
		t.clock.uuid[i] = (uint8_t)(0xf0 + i);
	}
	return t;
}

static char *build(const struct ctf_trace_desc *t)
{
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(ctf_metadata_build(t, &text, &len), 0);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	return text;
}

static void has(const char *text, const char *line)
{
	if (!strstr(text, line))
		fail_msg("missing in metadata: %s", line);
}

static void test_golden_le(void **state)
{
	(void)state;
	struct ctf_trace_desc t = desc();
	char *m = build(&t);
	assert_memory_equal(m, "/* CTF 1.8 */", 13);
	has(m, "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;");
	has(m, "typealias integer { size = 8; align = 8; signed = true; } := int8_t;");
	has(m, "typealias integer { size = 5; align = 1; signed = false; } := uint5_t;");
	has(m, "\tuuid = \"00010203-0405-0607-0809-0a0b0c0d0e0f\";\n\tbyte_order = le;");
	has(m, "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
	       "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t} align(8);");
	has(m, "\thostname = \"host\\\"1\";");
	has(m, "\tdomain = \"ust\";");
	has(m, "\ttracer_name = \"ringtrace\";");
	has(m, "\ttracer_major = 0;\n\ttracer_minor = 1;\n\ttracer_patch = 0;");
	has(m, "\tprocname = \"prog\";");
	has(m, "\tvpid = 77;");
	has(m, "\tthread_names = \"1=a%20b\";");
	/* One key per named thread, the name escaped as any string. */
	has(m, "\tthread_name_42 = \"worker \\\"1\\\"\";");
	has(m, "\tthread_name_4294967295 = \"last\";");
	assert_null(strstr(m, "thread_name_7"));
	has(m, "\textra_str = \"a\\\"b\\\\c\\nd\\001\";");
	has(m, "\textra_num = -42;");
	has(m, "clock {\n\tname = \"monotonic\";\n\tuuid = \"f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff\";");
	has(m, "\tdescription = \"tsc\";");
	has(m, "\tfreq = 2994123456;");
	has(m, "\toffset_s = 1700000000;\n\toffset = 12345;\n\tabsolute = TRUE;");
	has(m, "typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_monotonic_t;");
	has(m, "typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;");
	has(m, "\t\tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n\t\tvariant <id> {");
	has(m, "\t\t\tstruct {\n\t\t\t\tuint27_clock_monotonic_t timestamp;\n\t\t\t} compact;");
	has(m, "\t\t\tstruct {\n\t\t\t\tuint32_t id;\n\t\t\t\tuint64_clock_monotonic_t timestamp;\n\t\t\t} extended;");
	has(m, "\t\tuint64_clock_monotonic_t timestamp_begin;\n\t\tuint64_clock_monotonic_t timestamp_end;\n"
	       "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n\t\tuint64_t packet_seq_num;\n"
	       "\t\tuint64_t events_discarded;\n\t\tuint32_t cpu_id;\n\t} align(8);");
	has(m, "event {\n\tname = \"ringtrace:thread\";\n\tid = 1;\n\tstream_id = 0;\n"
	       "\tfields := struct {\n\t\tuint32_t _tid;\n\t};\n};");
	has(m, "\tname = \"demo:all\";\n\tid = 2;");
	has(m, "\t\tint8_t _a;\n\t\tuint64_t _b;\n");
	has(m, "\t\tinteger { size = 16; align = 8; signed = false; base = 16; } _c;");
	has(m, "\t\tinteger { size = 64; align = 8; signed = false; base = 16; } _p;");
	has(m, "\t\tfloating_point { exp_dig = 8; mant_dig = 24; align = 8; } _x;");
	has(m, "\t\tfloating_point { exp_dig = 11; mant_dig = 53; align = 8; } _y;");
	has(m, "\t\tstring _s;");
	has(m, "\t\tuint8_t _tag[4];");
	has(m, "\t\tuint32_t __vals_length;\n\t\tuint16_t _vals[__vals_length];");
	has(m, "\tname = \"demo:big\\\"id\";\n\tid = 40;\n\tstream_id = 0;\n\tfields := struct {\n\t};");
	free(m);
}

static void test_be_natural(void **state)
{
	(void)state;
	struct ctf_trace_desc t = desc();
	t.big_endian = 1;
	t.natural_align = 1;
	t.hostname = NULL;
	t.vpid = -1;
	t.clock.description = NULL;
	char *m = build(&t);
	has(m, "byte_order = be;");
	has(m, "typealias integer { size = 64; align = 64; signed = false; } := uint64_t;");
	has(m, "typealias integer { size = 16; align = 16; signed = true; } := int16_t;");
	has(m, "map = clock.monotonic.value; } := uint27_clock_monotonic_t;");
	has(m, "typealias integer { size = 64; align = 64; signed = false; map = clock.monotonic.value; }");
	has(m, "integer { size = 16; align = 16; signed = false; base = 16; } _c;");
	has(m, "floating_point { exp_dig = 11; mant_dig = 53; align = 64; } _y;");
	assert_null(strstr(m, "hostname"));
	assert_null(strstr(m, "vpid"));
	assert_null(strstr(m, "description"));
	free(m);
}

static void test_rejects(void **state)
{
	(void)state;
	struct ctf_event_class ev[2] = { { 1, "a", "b", "u32 x" }, { 2, "a", "c", "u32 y" } };
	struct ctf_env_kv kv[2] = { { "k", "v", 0 }, { "k2", NULL, 1 } };
	struct ctf_trace_desc t;
	char *text = (char *)0x1;

#define EXPECT_REJECT()                                                          \
	do {                                                                     \
		assert_int_equal(ctf_metadata_validate(&t), -EINVAL);            \
		assert_int_equal(ctf_metadata_build(&t, &text, NULL), -EINVAL);  \
		assert_ptr_equal(text, (char *)0x1);                             \
	} while (0)

	t = desc();
	t.events = ev;
	t.n_events = 2;
	t.env = kv;
	t.n_env = 2;
	assert_int_equal(ctf_metadata_validate(&t), 0);

	ev[1].id = 0;
	EXPECT_REJECT();
	ev[1].id = 1;
	EXPECT_REJECT();
	ev[1].id = 2;
	ev[1].signature = "u32 y;u32 y";
	EXPECT_REJECT();
	ev[1].signature = "bogus";
	EXPECT_REJECT();
	ev[1].signature = NULL;
	EXPECT_REJECT();
	ev[1].signature = "u32 y";
	ev[1].provider = "";
	EXPECT_REJECT();
	ev[1].provider = "a";
	ev[1].name = NULL;
	EXPECT_REJECT();
	ev[1].name = "x\ny";
	EXPECT_REJECT();
	ev[1].name = "c";
	assert_int_equal(ctf_metadata_validate(&t), 0);

	t.clock.freq = 0;
	EXPECT_REJECT();
	t.clock.freq = 1000;

	kv[1].key = "k";
	EXPECT_REJECT();
	kv[1].key = "hostname";
	EXPECT_REJECT();
	kv[1].key = "9x";
	EXPECT_REJECT();
	kv[1].key = "a-b";
	EXPECT_REJECT();
	kv[1].key = "";
	EXPECT_REJECT();
	kv[1].key = "k2";
	assert_int_equal(ctf_metadata_validate(&t), 0);
	assert_int_equal(ctf_metadata_validate(NULL), -EINVAL);
#undef EXPECT_REJECT
}

static void test_write(void **state)
{
	(void)state;
	struct ctf_trace_desc t = desc();
	char *m = build(&t);
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_int_equal(ctf_metadata_write(f, &t), 0);
	long len = ftell(f);
	assert_int_equal((size_t)len, strlen(m));
	rewind(f);
	char *back = malloc((size_t)len + 1);
	assert_int_equal(fread(back, 1, (size_t)len, f), (size_t)len);
	assert_memory_equal(back, m, (size_t)len);
	fclose(f);
	free(back);
	free(m);

	/* Invalid input writes nothing. */
	f = tmpfile();
	t.clock.freq = 0;
	assert_int_equal(ctf_metadata_write(f, &t), -EINVAL);
	assert_int_equal(ftell(f), 0);
	fclose(f);
}

static void test_escape(void **state)
{
	(void)state;
	struct ctf_buf b;
	ctf_buf_init(&b);
	ctf_tsdl_escape(&b, "plain é \"q\" \\ \n\t\r\x7f\x1f");
	assert_string_equal(b.data, "plain é \\\"q\\\" \\\\ \\n\\t\\r\\177\\037");
	ctf_buf_free(&b);
	char u[37];
	const uint8_t id[16] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0xff };
	ctf_uuid_format(id, u);
	assert_string_equal(u, "deadbeef-0102-0304-0506-0708090a0bff");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_le),
		cmocka_unit_test(test_be_natural),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_write),
		cmocka_unit_test(test_escape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
