/*
 * mem_trace_gen - write a small allocation trace holding the errors that a
 * real program cannot make safely, for tests/e2e/mem_more.sh.
 *
 *   mem_trace_gen OUTDIR [--losses | --fork]
 *
 * OUTDIR gets what `ringtrace record --mem` writes: `metadata` with the
 * recorder's event classes (same ids, names and signatures as
 * src/mem/memtrace.c declares them, src/mem/mem_family.h for the
 * payloads), one little-endian byte-packed stream (`stream_0`, CPU 0,
 * written with src/ctf/packet.c) and `stacks/` (an empty stack map and
 * the objects of this process), so that `ringtrace report` symbolises the
 * call sites. The sites are return addresses inside functions of this
 * program, one function per role (site_NAME below): the report names
 * them, whatever the addresses are in this build.
 *
 * The events, one thread (tid 4242), in this order:
 *
 *   clean         malloc(32) at site_clean_alloc, freed at site_clean_free
 *   realloc of a freed block
 *                 malloc(64) = P_RF at site_rf_alloc, freed at site_rf_free,
 *                 then realloc(P_RF, 128) at site_rf_realloc (a new block,
 *                 freed at site_clean_free)
 *   realloc of an unknown pointer
 *                 realloc(P_UNKNOWN, 48) at site_ru_realloc, a pointer the
 *                 trace never saw (the new block freed at site_clean_free)
 *   double free   malloc(24) = P_DF at site_df_alloc, freed at site_df_free,
 *                 freed again at site_df_again
 *   mismatched free
 *                 new(40) = P_MM at site_mm_new, freed by free() at
 *                 site_mm_free
 *
 * So: 6 allocations, 2 of them by realloc, 6 frees the report counts
 * (the second free and the realloc's frees of a freed or unknown block are
 * errors, not frees), nothing alive at the end, one error of each of four
 * kinds. The pointers are the P_* constants below.
 *
 * --losses: three packets; the second says 3 events were discarded
 * (events_discarded 0, 3, 3), so events may be missing from the end of
 * the first packet to the end of the second: the loss window. For
 * tests/e2e/mem_losses.sh, which knows which leak and error a loss may
 * have caused (the name of each site says it):
 *
 *   packet 1  malloc(200) at site_leak_early, never freed: possible leak
 *             free of an unknown pointer at site_unk_early: certain
 *             malloc(24) = P_DF at site_df_alloc, freed at site_df_free
 *             new(40) = P_MM at site_mm_new
 *   packet 2  (3 events lost)
 *             P_DF freed again at site_df_again: possible (first free
 *             before the window's end)
 *   packet 3  free of an unknown pointer at site_unk_late: possible
 *             P_MM freed by free() at site_mm_free: possible mismatch
 *             malloc(100) at site_leak_late, never freed: certain leak
 *             malloc(16) = P_DF2 at site_df2_alloc, freed at
 *             site_df2_free, again at site_df2_again: certain
 *             new(48) = P_MM2 at site_mm2_new, free() at site_mm2_free:
 *             certain mismatch
 *
 * --fork: the trace of a forked child (ringtrace_follow "fork"): a free
 * of P_INH at site_inh_free and a realloc of P_INH2 at site_inh_realloc,
 * pointers it never allocated (its parent's, inherited); then a double
 * free (P_DF), which stays an error.
 *
 * Exit status 0, or 1 with a message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/sig.h"
#include "ctf/metadata.h"
#include "support/packet.h"
#include "mem/mem_family.h"
#include "stackmap/stack_files.h"
#include "stackmap/stackmap.h"
#include "sym/maps.h"

/* The recorder's classes for a --mem recording, as in its metadata. */
enum {
	EV_THREAD = 1,
	EV_THREAD_NAME,
	EV_MREMAP,
	EV_MUNMAP,
	EV_MMAP,
	EV_REALLOC_LARGE,
	EV_REALLOC,
	EV_FREE,
	EV_ALLOC_LARGE,
	EV_ALLOC,
	EV_SAMPLING,
	EV_UNTRACKED,
	EV_N
};

static const struct ctf_event_class classes[] = {
	{ EV_THREAD, "ringtrace", "thread", "u32 tid" },
	{ EV_THREAD_NAME, "ringtrace", "thread_name", "u32 tid;string comm" },
	{ EV_MREMAP, "mem", "mremap", "x64 old_ptr;x64 ptr;x64 site;u64 old_size;u64 size" },
	{ EV_MUNMAP, "mem", "munmap", "x64 ptr;x64 site;u64 size" },
	{ EV_MMAP, "mem", "mmap", "x64 ptr;x64 site;u64 size;u8 family" },
	{ EV_REALLOC_LARGE, "mem", "realloc_large", "x64 old_ptr;x64 ptr;x64 site;u64 size;u64 usable;u8 family" },
	{ EV_REALLOC, "mem", "realloc", "x64 old_ptr;x64 ptr;x64 site;u32 size;u32 usable;u8 family" },
	{ EV_FREE, "mem", "free", "x64 ptr;x64 site;u8 family" },
	{ EV_ALLOC_LARGE, "mem", "alloc_large", "x64 ptr;x64 site;u64 size;u64 usable;u8 family;u8 align_log2" },
	{ EV_ALLOC, "mem", "alloc", "x64 ptr;x64 site;u32 size;u32 usable;u8 family;u8 align_log2" },
	{ EV_SAMPLING, "mem", "sampling", "u64 mean;u64 seed;u64 capacity;u32 status;u8 fixed_seed" },
	{ EV_UNTRACKED, "mem", "untracked", "x64 ptr" },
};
#define NCLASSES (sizeof(classes) / sizeof(classes[0]))

#define TID 4242u

/* The blocks (what a 64-bit heap hands out) and the pointer never seen. */
#define P_CLEAN   0x555555a01000ull
#define P_RF      0x555555a01100ull
#define P_RF_NEW  0x555555a01200ull
#define P_UNKNOWN 0x555555a0dead0ull
#define P_RU_NEW  0x555555a01300ull
#define P_DF      0x555555a01400ull
#define P_MM      0x555555a01500ull
#define P_LEAK_EARLY 0x555555a02000ull
#define P_LEAK_LATE  0x555555a02100ull
#define P_UNK_EARLY  0x555555a0bad0ull
#define P_UNK_LATE   0x555555a0bee0ull
#define P_DF2        0x555555a02200ull
#define P_MM2        0x555555a02300ull
#define P_INH        0x555555a03000ull
#define P_INH2       0x555555a03100ull
#define P_INH2_NEW   0x555555a03200ull

/*
 * The call sites: one function each, with bodies that differ (identical
 * ones could be folded into one symbol), never called. A site is the
 * function's address + 1, a return address whose call (the byte before)
 * is in the function, as the wrappers' __builtin_return_address(0) is.
 */
#ifdef __clang__
#define SITE_FN(name, k) \
	static __attribute__((noinline, used)) unsigned name(unsigned x) { return x * (k) + (k) * 7u; }
#else
#define SITE_FN(name, k) \
	static __attribute__((noinline, noclone, used)) unsigned name(unsigned x) { return x * (k) + (k) * 7u; }
#endif
SITE_FN(site_clean_alloc, 3u)
SITE_FN(site_clean_free, 5u)
SITE_FN(site_rf_alloc, 11u)
SITE_FN(site_rf_free, 13u)
SITE_FN(site_rf_realloc, 17u)
SITE_FN(site_ru_realloc, 19u)
SITE_FN(site_df_alloc, 23u)
SITE_FN(site_df_free, 29u)
SITE_FN(site_df_again, 31u)
SITE_FN(site_mm_new, 37u)
SITE_FN(site_mm_free, 41u)
SITE_FN(site_leak_early, 43u)
SITE_FN(site_leak_late, 47u)
SITE_FN(site_unk_early, 53u)
SITE_FN(site_unk_late, 59u)
SITE_FN(site_df2_alloc, 61u)
SITE_FN(site_df2_free, 67u)
SITE_FN(site_df2_again, 71u)
SITE_FN(site_mm2_new, 73u)
SITE_FN(site_mm2_free, 79u)
SITE_FN(site_inh_free, 83u)
SITE_FN(site_inh_realloc, 89u)

static uint64_t site(unsigned (*fn)(unsigned))
{
	return (uint64_t)(uintptr_t)fn + 1;
}

enum { SC_ERRORS, SC_LOSSES, SC_FORK };

struct writer {
	struct sig_field f[EV_N][SIG_FIELDS_MAX];
	size_t nf[EV_N];
	struct ctf_enc enc;
	uint8_t buf[4096];
	uint64_t ts, prev_ts;
	uint64_t seq;
	FILE *out;
	int err;
};

static void put(struct writer *w, uint32_t id, const struct sig_value *v)
{
	if (w->err)
		return;
	w->ts += 1000;
	int ext = ctf_needs_extended(id, w->prev_ts, w->ts);
	int r = ctf_enc_event(&w->enc, id, w->ts, ext, w->f[id], w->nf[id], v);
	if (r < 0)
		w->err = r;
	w->prev_ts = w->ts;
}

static void ev_alloc(struct writer *w, uint64_t ptr, uint64_t site_, uint32_t size, uint32_t usable,
		     unsigned fam)
{
	struct sig_value v[6] = { { .u = ptr }, { .u = site_ }, { .u = size }, { .u = usable }, { .u = fam },
				  { .u = 0 } };
	put(w, EV_ALLOC, v);
}

static void ev_free(struct writer *w, uint64_t ptr, uint64_t site_, unsigned fam)
{
	struct sig_value v[3] = { { .u = ptr }, { .u = site_ }, { .u = fam } };
	put(w, EV_FREE, v);
}

static void ev_realloc(struct writer *w, uint64_t old, uint64_t ptr, uint64_t site_, uint32_t size,
		       uint32_t usable)
{
	struct sig_value v[6] = { { .u = old }, { .u = ptr }, { .u = site_ }, { .u = size }, { .u = usable },
				  { .u = MEM_A_REALLOC } };
	put(w, EV_REALLOC, v);
}

static const uint8_t trace_uuid[16] = { 0x6d, 0x65, 0x6d, 0x2d, 0x74, 0x72, 0x61, 0x63,
					0x65, 0x2d, 0x67, 0x65, 0x6e, 0x2d, 0x30, 0x31 };

static int write_metadata(const char *dir, int scenario)
{
	const struct ctf_env_kv env[] = {
		/* --fork: a forked child's (the last two, as record writes them). */
		{ "ringtrace_follow", "fork", 0 },
		{ "ringtrace_parent_vpid", NULL, 4241 },
		{ "ringtrace_mode", "discard", 0 },
		{ "ringtrace_clock", "monotonic", 0 },
		{ "ringtrace_rseq", NULL, 1 },
		{ "ringtrace_subbuf_size", NULL, 4096 },
		{ "ringtrace_subbuf_count", NULL, 1 },
		{ "ringtrace_lost_full", NULL, 0 },
		{ "ringtrace_lost_overwrite", NULL, 0 },
		{ "ringtrace_lost_too_big", NULL, 0 },
		{ "ringtrace_lost_no_rseq", NULL, 0 },
		{ "ringtrace_lost_crash", NULL, 0 },
		{ "ringtrace_attached", NULL, 0 },
		{ "ringtrace_snapshot", NULL, 0 },
		{ "ringtrace_snapshot_trigger", "", 0 },
		{ "ringtrace_snapshot_time", "", 0 },
	};
	struct ctf_trace_desc t = {
		.clock = { .freq = 1000000000, .offset_s = 1700000000,
			   .description = "CLOCK_MONOTONIC, offset to the epoch" },
		.hostname = "mem-trace-gen",
		.procname = "mem_trace_gen",
		.tracer_version = "0.1.0",
		.thread_names = "4242=mem_trace_gen",
		.vpid = TID,
		.env = scenario == SC_FORK ? env : env + 2,
		.n_env = sizeof(env) / sizeof(env[0]) - (scenario == SC_FORK ? 0 : 2),
		.events = classes,
		.n_events = NCLASSES,
	};
	memcpy(t.uuid, trace_uuid, 16);
	memcpy(t.clock.uuid, trace_uuid, 16);
	char path[4096];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "mem_trace_gen: cannot create '%s': %s\n", path, strerror(errno));
		return -1;
	}
	int r = ctf_metadata_write(f, &t);
	if (fclose(f) != 0 && r == 0)
		r = -EIO;
	if (r < 0) {
		fprintf(stderr, "mem_trace_gen: metadata: %s\n", strerror(-r));
		return -1;
	}
	return 0;
}

/* Open packet w->seq of the stream, its events_discarded `discarded`;
 * it starts with the thread's record, as the recorder's do. */
static void packet_open(struct writer *w, uint64_t discarded)
{
	struct ctf_packet_info pi = { .ts_begin = w->ts + 1000, .seq = w->seq, .discarded = discarded };
	memcpy(pi.uuid, trace_uuid, 16);
	ctf_enc_init(&w->enc, w->buf, sizeof(w->buf), 0, 0);
	if (ctf_enc_packet_header(&w->enc, &pi) < 0) {
		w->err = -ENOSPC;
		return;
	}
	w->ts = w->prev_ts = pi.ts_begin;
	struct sig_value tv = { .u = TID };
	put(w, EV_THREAD, &tv);
}

/* Close the packet (its end: 1 µs after its last event) and append it to
 * the stream file. */
static void packet_close(struct writer *w)
{
	if (w->err)
		return;
	w->ts += 1000;
	long len = ctf_enc_packet_close(&w->enc, w->ts, 0);
	if (len < 0) {
		w->err = (int)len;
		return;
	}
	if (fwrite(w->buf, 1, (size_t)len, w->out) != (size_t)len)
		w->err = -EIO;
	w->seq++;
}

static void errors_events(struct writer *w)
{
	packet_open(w, 0);
	/* clean */
	ev_alloc(w, P_CLEAN, site(site_clean_alloc), 32, 40, MEM_A_MALLOC);
	ev_free(w, P_CLEAN, site(site_clean_free), MEM_F_FREE);
	/* realloc of a freed block */
	ev_alloc(w, P_RF, site(site_rf_alloc), 64, 72, MEM_A_MALLOC);
	ev_free(w, P_RF, site(site_rf_free), MEM_F_FREE);
	ev_realloc(w, P_RF, P_RF_NEW, site(site_rf_realloc), 128, 136);
	ev_free(w, P_RF_NEW, site(site_clean_free), MEM_F_FREE);
	/* realloc of an unknown pointer */
	ev_realloc(w, P_UNKNOWN, P_RU_NEW, site(site_ru_realloc), 48, 56);
	ev_free(w, P_RU_NEW, site(site_clean_free), MEM_F_FREE);
	/* double free */
	ev_alloc(w, P_DF, site(site_df_alloc), 24, 24, MEM_A_MALLOC);
	ev_free(w, P_DF, site(site_df_free), MEM_F_FREE);
	ev_free(w, P_DF, site(site_df_again), MEM_F_FREE);
	/* mismatched free: new, then free() */
	ev_alloc(w, P_MM, site(site_mm_new), 40, 40, MEM_A_NEW);
	ev_free(w, P_MM, site(site_mm_free), MEM_F_FREE);
	packet_close(w);
}

static void losses_events(struct writer *w)
{
	packet_open(w, 0);
	ev_alloc(w, P_LEAK_EARLY, site(site_leak_early), 200, 200, MEM_A_MALLOC);
	ev_free(w, P_UNK_EARLY, site(site_unk_early), MEM_F_FREE);
	ev_alloc(w, P_DF, site(site_df_alloc), 24, 24, MEM_A_MALLOC);
	ev_free(w, P_DF, site(site_df_free), MEM_F_FREE);
	ev_alloc(w, P_MM, site(site_mm_new), 40, 40, MEM_A_NEW);
	packet_close(w);
	/* 3 events lost between the end of packet 1 and the end of this one. */
	packet_open(w, 3);
	ev_free(w, P_DF, site(site_df_again), MEM_F_FREE);
	packet_close(w);
	packet_open(w, 3);
	ev_free(w, P_UNK_LATE, site(site_unk_late), MEM_F_FREE);
	ev_free(w, P_MM, site(site_mm_free), MEM_F_FREE);
	ev_alloc(w, P_LEAK_LATE, site(site_leak_late), 100, 100, MEM_A_MALLOC);
	ev_alloc(w, P_DF2, site(site_df2_alloc), 16, 16, MEM_A_MALLOC);
	ev_free(w, P_DF2, site(site_df2_free), MEM_F_FREE);
	ev_free(w, P_DF2, site(site_df2_again), MEM_F_FREE);
	ev_alloc(w, P_MM2, site(site_mm2_new), 48, 48, MEM_A_NEW);
	ev_free(w, P_MM2, site(site_mm2_free), MEM_F_FREE);
	packet_close(w);
}

static void fork_events(struct writer *w)
{
	packet_open(w, 0);
	ev_free(w, P_INH, site(site_inh_free), MEM_F_FREE);
	ev_realloc(w, P_INH2, P_INH2_NEW, site(site_inh_realloc), 64, 64);
	ev_free(w, P_INH2_NEW, site(site_clean_free), MEM_F_FREE);
	ev_alloc(w, P_DF, site(site_df_alloc), 24, 24, MEM_A_MALLOC);
	ev_free(w, P_DF, site(site_df_free), MEM_F_FREE);
	ev_free(w, P_DF, site(site_df_again), MEM_F_FREE);
	packet_close(w);
}

static int write_stream(const char *dir, int scenario)
{
	static struct writer w;
	for (size_t i = 0; i < NCLASSES; i++)
		if (sig_parse(classes[i].signature, w.f[classes[i].id], SIG_FIELDS_MAX, &w.nf[classes[i].id]) < 0) {
			fprintf(stderr, "mem_trace_gen: bad signature %s\n", classes[i].signature);
			return -1;
		}
	char path[4096];
	snprintf(path, sizeof(path), "%s/stream_0", dir);
	w.out = fopen(path, "wb");
	if (!w.out) {
		fprintf(stderr, "mem_trace_gen: cannot create '%s': %s\n", path, strerror(errno));
		return -1;
	}
	w.ts = 0;
	if (scenario == SC_LOSSES)
		losses_events(&w);
	else if (scenario == SC_FORK)
		fork_events(&w);
	else
		errors_events(&w);
	if (fclose(w.out) != 0 && !w.err)
		w.err = -EIO;
	if (w.err) {
		fprintf(stderr, "mem_trace_gen: cannot write '%s': %s\n", path, strerror(-w.err));
		return -1;
	}
	return 0;
}

/* stacks/: an empty stack map (no event has a stack) and the objects of
 * this process, as `record --mem` saves them: the sites are ours. */
static int write_stacks(const char *dir)
{
	uint32_t bits = STACKMAP_BITS_MIN;
	size_t size = stackmap_size(bits, 1);
	size_t nmax = 256, n = 0;
	void *mem = size ? aligned_alloc(64, (size + 63) / 64 * 64) : NULL;
	struct rt_map *maps = calloc(nmax, sizeof(*maps));
	struct stackmap map;
	int r = -ENOMEM;
	if (!mem || !maps)
		goto out;
	memset(mem, 0, size);
	r = stackmap_init(mem, size, bits, 1, 0x6d656d67656e2121ull);
	if (r == 0)
		r = stackmap_open(mem, size, &map);
	if (r == 0)
		r = rt_maps_snapshot(maps, nmax, &n, NULL);
	if (r == 0)
		r = stack_files_write(dir, &map, maps, n);
out:
	if (r < 0)
		fprintf(stderr, "mem_trace_gen: %s/stacks: %s\n", dir, strerror(-r));
	free(maps);
	free(mem);
	return r < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	int scenario = SC_ERRORS;
	if (argc == 3 && !strcmp(argv[2], "--losses"))
		scenario = SC_LOSSES;
	else if (argc == 3 && !strcmp(argv[2], "--fork"))
		scenario = SC_FORK;
	else if (argc != 2) {
		fprintf(stderr, "usage: mem_trace_gen OUTDIR [--losses | --fork]\n");
		return 2;
	}
	const char *dir = argv[1];
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "mem_trace_gen: cannot create '%s': %s\n", dir, strerror(errno));
		return 1;
	}
	if (write_metadata(dir, scenario) < 0 || write_stream(dir, scenario) < 0 || write_stacks(dir) < 0)
		return 1;
	return 0;
}
