/*
 * ctf_gen - write a complete, deterministic ringtrace trace for tests.
 *
 *   ctf_gen [--be] [--natural] [--events N] [--cpus C] [--gap] [--lost]
 *           [--pad] [--freq HZ] [--packet BYTES] OUTDIR
 *
 * OUTDIR gets `metadata` and one `stream_<cpu>` file per CPU, encoded with
 * src/ctf/packet.c in the chosen byte order, so that end-to-end tests can
 * check that `ringtrace dump` and babeltrace2 read the same events from a
 * big-endian trace on this little-endian machine.
 *
 * Per CPU: N events (default 200) of the event classes below, which cover
 * every field kind of docs/design.md, with values that depend only on the
 * CPU and the event index; ringtrace:thread records (id 1) whenever the
 * writing thread changes; timestamps that cross many 27-bit wraps.
 *   --gap     a 5 s pause in the middle: extended headers are required
 *   --lost    discarded-event counts (events_discarded grows) and one
 *             packet per CPU that is never written (packet_seq_num gap)
 *   --pad     zero padding after each packet's content
 *   --natural naturally aligned fields instead of byte-packed
 *   --freq    clock frequency in Hz (default 1000000000)
 *   --packet  packet buffer size in bytes (default 4096)
 *   --only ID events of that class only (and thread records)
 *   --classes N  N more classes gen:c0.. (id 1000.., "u32 n"); the events
 *             cycle over all classes, so give --events at least N
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/sig.h"
#include "ctf/metadata.h"
#include "support/packet.h"

static const struct ctf_event_class fixed_classes[] = {
	{ 1, "ringtrace", "thread", "u32 tid" },
	{ 2, "demo", "ints", "s8 a;s16 b;s32 c;s64 d;u8 e;u16 f;u32 g;u64 h" },
	{ 3, "demo", "hex", "x8 a;x16 b;x32 c;x64 d;ptr p" },
	{ 4, "demo", "floats", "f32 x;f64 y" },
	{ 5, "demo", "strings", "string path;string empty;u8 after" },
	{ 6, "demo", "arrays", "u8 tag[4];s16 sv[3];x32 hx[2];u16 vals[];ptr ips[];s64 neg[]" },
	{ 7, "demo", "empty", "" },
	{ 40, "demo", "bigid", "u32 n;string s" },
};
#define NFIXED (sizeof(fixed_classes) / sizeof(fixed_classes[0]))

/* The fixed classes, then --classes N generated ones (gen:c<k>, id 1000+k,
 * "u32 n"): a trace with as many event classes as a test needs. */
static struct ctf_event_class *classes;
static size_t NCLASSES;

struct opts {
	int be, natural, gap, lost, pad;
	unsigned only;               /* --only ID: events of that class only */
	unsigned events, cpus;
	uint64_t freq;
	size_t packet;
	const char *dir;
};

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static const double doubles[] = {
	0.0, 1.0, -1.5, 0.1, 3.141592653589793, 1e300, -2.5e-300, 123456789.125,
	6.02214076e23, -0.0, 1e-5, 100000.0, 1234567.0,
};
/*
 * No "" here: babeltrace2 2.0.4 prints an empty string field with the value
 * the same field had in an earlier event (a known bug of the 2.0 branch,
 * fixed upstream), which would make the comparison fail for the wrong
 * reason. The `empty` field is always "" and prints correctly.
 */
static const char *const strings[] = {
	"/etc/passwd", "hello world", "tab\there", "quote\"back\\slash",
	"caf\xc3\xa9", "a=b c=d", "x", "it's ok?",
};

/* Values of event `cls` number `i` on `cpu`; arrays live in `store`. */
static void make_values(const struct ctf_event_class *cls, unsigned cpu, unsigned i,
			struct sig_value *v, uint64_t store[][8])
{
	uint64_t r = mix((uint64_t)cpu << 32 | i);
	memset(v, 0, sizeof(*v) * SIG_FIELDS_MAX);
	switch (cls->id) {
	case 2:
		v[0].u = (uint64_t)(int64_t)(int8_t)(i % 3 == 0 ? -128 : (int8_t)r);
		v[1].u = (uint64_t)(int64_t)(int16_t)(r >> 8);
		v[2].u = (uint64_t)(int64_t)(int32_t)(r >> 16);
		v[3].u = i % 5 == 0 ? (uint64_t)INT64_MIN : r;
		v[4].u = (uint8_t)(r >> 3);
		v[5].u = (uint16_t)(r >> 5);
		v[6].u = (uint32_t)(r >> 7);
		v[7].u = i % 4 == 0 ? UINT64_MAX : r * 3;
		break;
	case 3:
		v[0].u = (uint8_t)r;
		v[1].u = (uint16_t)(r >> 11);
		v[2].u = (uint32_t)(r >> 13);
		v[3].u = r;
		v[4].u = 0x7f0000001000ull + (uint64_t)i * 16;
		break;
	case 4:
		v[0].f = (float)doubles[(i + cpu) % (sizeof(doubles) / sizeof(doubles[0]))] / 4;
		v[1].f = doubles[i % (sizeof(doubles) / sizeof(doubles[0]))] * (1 + (double)cpu);
		break;
	case 5:
		v[0].str = strings[(i + cpu) % (sizeof(strings) / sizeof(strings[0]))];
		v[1].str = "";
		v[2].u = i & 0xff;
		break;
	case 6:
		for (unsigned k = 0; k < 4; k++)
			store[0][k] = (uint8_t)(r >> (8 * k));
		v[0].count = 4;
		v[0].elems = store[0];
		for (unsigned k = 0; k < 3; k++)
			store[1][k] = (uint64_t)(int64_t)(int16_t)(r >> (16 * k));
		v[1].count = 3;
		v[1].elems = store[1];
		store[2][0] = (uint32_t)r;
		store[2][1] = 0xdeadbeef;
		v[2].count = 2;
		v[2].elems = store[2];
		v[3].count = i % 5;
		for (unsigned k = 0; k < v[3].count; k++)
			store[3][k] = (uint16_t)(i * 7 + k);
		v[3].elems = store[3];
		v[4].count = i % 3;
		for (unsigned k = 0; k < v[4].count; k++)
			store[4][k] = 0x400000 + (uint64_t)k * 0x20 + i;
		v[4].elems = store[4];
		v[5].count = 2;
		store[5][0] = (uint64_t)-1;
		store[5][1] = (uint64_t)INT64_MIN;
		v[5].elems = store[5];
		break;
	case 40:
		v[0].u = i;
		v[1].str = "big";
		break;
	default:
		if (cls->id >= 1000)
			v[0].u = i;
		break;
	}
}

struct cpu_writer {
	FILE *f;
	uint8_t *buf;
	struct ctf_enc enc;
	struct ctf_packet_info info;
	uint64_t prev_ts;            /* last timestamp written in this packet */
	unsigned npackets;           /* packets started */
	uint32_t tid;                /* current thread of the stream */
	int drop_this;               /* --lost: this packet is never written */
	int force_thread;            /* announce the thread again */
};

static const struct opts *O;

static void packet_open(struct cpu_writer *w, unsigned cpu, uint64_t ts)
{
	memset(&w->info, 0, sizeof(w->info));
	for (int k = 0; k < 16; k++)
		w->info.uuid[k] = (uint8_t)(0xa0 + k);
	w->info.stream_instance_id = cpu;
	w->info.cpu_id = cpu;
	w->info.ts_begin = ts;
	w->info.seq = w->npackets;
	if (O->lost && w->npackets >= 2)
		w->info.discarded = 5 + cpu;
	if (O->lost && w->npackets >= 5)
		w->info.discarded += 11;
	w->drop_this = O->lost && w->npackets == 4;
	w->npackets++;
	ctf_enc_init(&w->enc, w->buf, O->packet, O->be, O->natural);
	ctf_enc_packet_header(&w->enc, &w->info);
	w->prev_ts = ts;
}

static int packet_close(struct cpu_writer *w)
{
	long len = ctf_enc_packet_close(&w->enc, w->prev_ts,
					O->pad ? (O->packet - w->enc.off) / 2 : 0);
	if (len < 0)
		return (int)len;
	if (w->drop_this) {
		w->force_thread = 1;
		return 0;
	}
	return fwrite(w->buf, 1, (size_t)len, w->f) == (size_t)len ? 0 : -EIO;
}

static int put_event(struct cpu_writer *w, unsigned cpu, const struct ctf_event_class *cls,
		     const struct sig_field *f, size_t n, const struct sig_value *v, uint64_t ts)
{
	for (int tries = 0; tries < 2; tries++) {
		int ext = ctf_needs_extended(cls->id, w->prev_ts, ts);
		int r = ctf_enc_event(&w->enc, cls->id, ts, ext, f, n, v);
		if (r == 0) {
			w->prev_ts = ts;
			return 0;
		}
		if (r != -ENOSPC)
			return r;
		r = packet_close(w);
		if (r < 0)
			return r;
		packet_open(w, cpu, ts);
		if (w->force_thread && cls->id != 1)
			return -EAGAIN;  /* the caller re-announces the thread first */
	}
	return -E2BIG;
}

static int write_cpu(unsigned cpu, struct sig_field fields[][SIG_FIELDS_MAX], size_t *nfields)
{
	char path[4096];
	struct cpu_writer w = { 0 };
	static const uint32_t tids[] = { 4242, 4243, 4244, 5000 };
	uint64_t store[6][8];
	struct sig_value vals[SIG_FIELDS_MAX];
	int r = 0;

	snprintf(path, sizeof(path), "%s/stream_%u", O->dir, cpu);
	w.f = fopen(path, "wb");
	w.buf = malloc(O->packet);
	if (!w.f || !w.buf) {
		r = -errno;
		goto out;
	}
	/* Distinct per CPU so that no two CPUs share a timestamp. */
	uint64_t ts = 1000 + cpu * 7;
	packet_open(&w, cpu, ts);
	for (unsigned i = 0; i < O->events; i++) {
		/* Steps of up to ~42 ms: many 27-bit (134 ms) wraps. */
		ts += 1000 + (mix(i * 31 + cpu) % 42000000);
		if (O->gap && i == O->events / 2)
			ts += 5 * O->freq;
		uint32_t tid = tids[(i / 7 + cpu) % 4];
		const struct ctf_event_class *cls = &classes[1 + (i + cpu) % (NCLASSES - 1)];
		for (size_t k = 0; O->only && k < NCLASSES; k++)
			if (classes[k].id == O->only)
				cls = &classes[k];
		size_t ci = (size_t)(cls - classes);
		make_values(cls, cpu, i, vals, store);
		for (;;) {
			if (tid != w.tid || w.force_thread) {
				struct sig_value tv = { .u = tid };
				w.force_thread = 0;
				r = put_event(&w, cpu, &classes[0], fields[0], nfields[0], &tv, ts);
				if (r < 0)
					goto out;
				w.tid = tid;
			}
			r = put_event(&w, cpu, cls, fields[ci], nfields[ci], vals, ts);
			if (r != -EAGAIN)
				break;
		}
		if (r < 0)
			goto out;
	}
	r = packet_close(&w);
out:
	if (w.f && fclose(w.f) != 0 && r == 0)
		r = -EIO;
	free(w.buf);
	return r;
}

static void usage(void)
{
	fprintf(stderr, "usage: ctf_gen [--be] [--natural] [--events N] [--cpus C] [--gap] "
			"[--lost] [--pad] [--freq HZ] [--packet BYTES] OUTDIR\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "be", no_argument, NULL, 'b' },     { "natural", no_argument, NULL, 'a' },
		{ "events", required_argument, NULL, 'n' }, { "cpus", required_argument, NULL, 'c' },
		{ "gap", no_argument, NULL, 'g' },    { "lost", no_argument, NULL, 'l' },
		{ "pad", no_argument, NULL, 'p' },    { "freq", required_argument, NULL, 'f' },
		{ "packet", required_argument, NULL, 's' }, { "only", required_argument, NULL, 'o' },
		{ "classes", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .events = 200, .cpus = 2, .freq = 1000000000, .packet = 4096 };
	unsigned long extra = 0;
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'b': o.be = 1; break;
		case 'a': o.natural = 1; break;
		case 'n': o.events = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'c': o.cpus = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'g': o.gap = 1; break;
		case 'l': o.lost = 1; break;
		case 'p': o.pad = 1; break;
		case 'f': o.freq = strtoull(optarg, NULL, 0); break;
		case 's': o.packet = strtoul(optarg, NULL, 0); break;
		case 'o': o.only = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'k': extra = strtoul(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (optind != argc - 1 || o.cpus == 0 || o.cpus > 256 || o.freq == 0 || o.packet < 512 ||
	    extra > 1000000)
		usage();
	NCLASSES = NFIXED + extra;
	classes = calloc(NCLASSES, sizeof(*classes));
	struct sig_field (*fields)[SIG_FIELDS_MAX];
	fields = calloc(NCLASSES, sizeof(*fields));
	size_t *nfields = calloc(NCLASSES, sizeof(*nfields));
	if (!classes || !fields || !nfields) {
		fprintf(stderr, "ctf_gen: out of memory\n");
		return 1;
	}
	memcpy(classes, fixed_classes, sizeof(fixed_classes));
	for (size_t k = 0; k < extra; k++) {
		char *name = malloc(24);
		if (!name)
			return 1;
		snprintf(name, 24, "c%zu", k);
		classes[NFIXED + k] = (struct ctf_event_class){ (uint32_t)(1000 + k), "gen", name, "u32 n" };
	}
	o.dir = argv[optind];
	O = &o;
	if (mkdir(o.dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "ctf_gen: cannot create '%s': %s\n", o.dir, strerror(errno));
		return 1;
	}

	for (size_t i = 0; i < NCLASSES; i++)
		if (sig_parse(classes[i].signature, fields[i], SIG_FIELDS_MAX, &nfields[i]) < 0) {
			fprintf(stderr, "ctf_gen: bad signature %s\n", classes[i].signature);
			return 1;
		}

	struct ctf_trace_desc t = {
		.big_endian = o.be,
		.natural_align = o.natural,
		.clock = { .freq = o.freq, .offset_s = 1700000000, .offset = o.freq / 3,
			   .description = "ctf_gen \"test\" clock" },
		.hostname = "ctf-gen-host",
		.procname = "ctf_gen",
		.tracer_version = "0.1.0",
		.thread_names = "4242=main,4243=worker%201,4244=caf%C3%A9",
		.vpid = 4242,
		.events = classes,
		.n_events = NCLASSES,
	};
	for (int k = 0; k < 16; k++) {
		t.uuid[k] = (uint8_t)(0xa0 + k);
		t.clock.uuid[k] = (uint8_t)(0x10 + k);
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/metadata", o.dir);
	FILE *mf = fopen(path, "w");
	if (!mf) {
		fprintf(stderr, "ctf_gen: cannot create '%s': %s\n", path, strerror(errno));
		return 1;
	}
	int r = ctf_metadata_write(mf, &t);
	if (fclose(mf) != 0 && r == 0)
		r = -EIO;
	if (r < 0) {
		fprintf(stderr, "ctf_gen: metadata: %s\n", strerror(-r));
		return 1;
	}
	for (unsigned cpu = 0; cpu < o.cpus && r >= 0; cpu++) {
		r = write_cpu(cpu, fields, nfields);
		if (r < 0)
			fprintf(stderr, "ctf_gen: stream_%u: %s\n", cpu, strerror(-r));
	}
	for (size_t k = NFIXED; k < NCLASSES; k++)
		free((char *)classes[k].name);
	free(classes);
	free(fields);
	free(nfields);
	return r < 0;
}
