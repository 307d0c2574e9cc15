/*
 * fuzz_trace.c - libFuzzer target for the packet and event decoder, the
 * merge and the value formatting: the input is one or two stream files of
 * a trace whose metadata is generated (every field kind of ringtrace).
 *
 * Byte 0 of the input picks the metadata (bit 0: big-endian, bit 1:
 * natural alignment) and byte 1 where the input is split into two stream
 * files (0: one file).
 *
 *   make build-fuzz/fuzz_trace
 *   build-fuzz/fuzz_trace -max_total_time=60 /tmp/fz-trace
 *   (seeds: "\x00\x00" + a stream_N file of build/tests/tools/ctf_gen)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "ctf/metadata.h"
#include "read/format.h"
#include "read/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct ctf_event_class classes[] = {
	{ 1, "ringtrace", "thread", "u32 tid" },
	{ 2, "demo", "ints", "s8 a;s16 b;s32 c;s64 d;u8 e;u16 f;u32 g;u64 h" },
	{ 3, "demo", "hex", "x8 a;x16 b;x32 c;x64 d;ptr p" },
	{ 4, "demo", "floats", "f32 x;f64 y" },
	{ 5, "demo", "strings", "string path;string empty;u8 after" },
	{ 6, "demo", "arrays", "u8 tag[4];s16 sv[3];x32 hx[2];u16 vals[];ptr ips[];s64 neg[]" },
	{ 7, "demo", "empty", "" },
	{ 40, "demo", "bigid", "u32 n;string s" },
};

static struct rd_meta *meta[4];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!meta[0]) {
		for (int k = 0; k < 4; k++) {
			struct ctf_trace_desc t = {
				.big_endian = k & 1,
				.natural_align = (k >> 1) & 1,
				.clock = { .freq = 2994123456u, .offset_s = 1700000000, .offset = 5 },
				.thread_names = "1=a,2=b%20c",
				.vpid = 1,
				.events = classes,
				.n_events = sizeof(classes) / sizeof(classes[0]),
			};
			char *text;
			size_t len;
			if (ctf_metadata_build(&t, &text, &len) < 0 ||
			    rd_meta_parse(text, len, &meta[k], NULL, 0) < 0)
				abort();
			free(text);
		}
	}
	if (size < 2)
		return 0;
	int k = data[0] & 3;
	size_t split = data[1] % (size - 1);
	data += 2;
	size -= 2;
	struct rd_mem_stream ms[2] = {
		{ "stream_0", data, split ? split : size },
		{ "stream_1", data + split, size - split },
	};
	struct rd_trace *t;
	if (rd_trace_open_model(meta[k], ms, split ? 2 : 1, &t, NULL, 0) < 0)
		abort();
	struct rd_item it;
	struct ctf_buf b;
	ctf_buf_init(&b);
	while (rd_trace_next(t, &it) > 0) {
		ctf_buf_reset(&b);
		if (it.kind == RD_ITEM_EVENT)
			rd_format_fields(&b, it.fields);
		if (it.ns_ok)
			rd_format_time(&b, it.ns);
	}
	ctf_buf_free(&b);
	rd_trace_close(t);
	return 0;
}
