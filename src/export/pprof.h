/*
 * pprof.h - a writer of pprof profiles (perftools.profiles.Profile, the
 * format of Google's pprof tool, Go's runtime profiles, speedscope and the
 * continuous-profiling services), gzip-compressed as those tools expect.
 *
 * A converter (src/cli/convert_pprof.c) declares the sample types, gives
 * the loaded objects as mappings, then adds samples: each a stack of
 * addresses, leaf first, and one value per sample type. The writer keeps
 * one copy of everything: the strings, the functions, the locations (one
 * per distinct address, symbolised once when first seen) and the mappings
 * are deduplicated, and two samples with the same stack and labels become
 * one with their values added, so a converter may add a stack as often as
 * it likes. Memory grows with the distinct stacks, addresses and names,
 * not with the number of samples added.
 *
 * The encoder is written by hand from profile.proto (no protobuf library):
 * every message is encoded once, at pprof_write(), into one buffer.
 *
 * Command side only: it allocates, and never prints. Errors are negative
 * errno values (-EINVAL, -ENOMEM, -EBUSY, or a write's errno).
 */
#ifndef RINGTRACE_EXPORT_PPROF_H
#define RINGTRACE_EXPORT_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/buf.h"

struct pprof;
struct sym_ctx;

/* What a symboliser says about one address; NULL or 0 when unknown. The
 * strings need to live only until the callback's next call. */
struct pprof_frame {
	const char *function;        /* shown name (demangled) */
	const char *system_name;     /* linker name; NULL: the same as function */
	const char *file;            /* source file */
	int64_t line;                /* source line */
};

/* Fill *ret for addr and return 1, or return 0 when nothing is known (the
 * location keeps its address and mapping only). */
typedef int (*pprof_sym_fn)(void *arg, uint64_t addr, struct pprof_frame *ret);

/* A label of a sample: a string one (str set) or a number (num, with an
 * optional unit, when str is NULL). */
struct pprof_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit;
};

/* 0 or -ENOMEM. Free with pprof_free() (NULL accepted). */
int pprof_new(struct pprof **ret);
void pprof_free(struct pprof *p);

/*
 * Append a sample type ("alloc_space", "bytes"). All of them come before
 * the first sample: afterwards -EBUSY. Returns its index (0, 1, ...) or a
 * negative errno.
 */
int pprof_add_sample_type(struct pprof *p, const char *type, const char *unit);
/* The type pprof shows when not told (default: the last). -ENOENT when no
 * sample type has that name. */
int pprof_set_default_sample_type(struct pprof *p, const char *type);
/* What one unit of sampling stands for ("space", "bytes", 524288). */
int pprof_set_period(struct pprof *p, const char *type, const char *unit, int64_t period);
/* Wall-clock start of the profile and its length, in nanoseconds. */
void pprof_set_time(struct pprof *p, int64_t time_nanos, int64_t duration_nanos);
/* A line shown by `pprof -comments` (and in some viewers' headers). */
int pprof_add_comment(struct pprof *p, const char *text);

/*
 * A loaded object: its run-time range [start, limit), the file offset (or
 * link-time address) that start corresponds to, its path and its GNU build
 * id in hex (file and build_id may be NULL). The same object given twice
 * is kept once. Addresses are placed in the first mapping added that holds
 * them; add the main program first (pprof takes the first mapping as the
 * program). Mappings come before the first sample (-EBUSY afterwards).
 * Returns its id (>= 1) or a negative errno; -EINVAL if start >= limit.
 */
int pprof_add_mapping(struct pprof *p, uint64_t start, uint64_t limit, uint64_t offset, const char *file,
		      const char *build_id);

/*
 * How new addresses get their function, file and line: a callback, or a
 * symbolisation context (sym/symbolize.h; not owned). Without either,
 * locations have an address and a mapping only. Set before the first
 * sample (-EBUSY afterwards).
 */
int pprof_set_symbolizer(struct pprof *p, pprof_sym_fn fn, void *arg);
int pprof_use_symbols(struct pprof *p, struct sym_ctx *ctx);

/*
 * Add a sample: addrs[0..n-1] leaf first, each the address of an
 * instruction (for a return address, pass the address of the call:
 * return address - 1, as Go's profiles do), values[] one per sample type,
 * labels[0..nlabels-1] (may be NULL when nlabels is 0). A sample with the
 * same addresses and labels as one added before adds its values to it.
 * n may be 0 (a sample whose stack is unknown). 0 or a negative errno:
 * -EINVAL without sample types.
 */
int pprof_add_sample(struct pprof *p, const uint64_t *addrs, size_t n, const int64_t *values,
		     const struct pprof_label *labels, size_t nlabels);

/*
 * An allocation profile as Go's runtime writes its heap profile, from
 * per-stack totals: the sample types alloc_objects/count,
 * alloc_space/bytes, inuse_objects/count and inuse_space/bytes (pprof
 * shows the last by default), the period type space/bytes with `period`
 * (the mean bytes between samples; 1 for a trace of every allocation),
 * and one sample per stack. The totals are the estimates to show: a
 * sampled trace's are scaled up by the caller. The profile must have no
 * sample type yet. 0 or a negative errno.
 */
struct pprof_heap_stack {
	const uint64_t *addrs;       /* leaf first, as pprof_add_sample() takes them */
	size_t n;
	int64_t alloc_objects, alloc_bytes;   /* allocated over the whole trace */
	int64_t inuse_objects, inuse_bytes;   /* still live at its end */
};

int pprof_heap_profile(struct pprof *p, const struct pprof_heap_stack *v, size_t n, int64_t period);

/* Samples kept (after merging). */
size_t pprof_sample_count(const struct pprof *p);

/* The profile, protobuf-encoded and not compressed, appended to out. 0 or
 * -ENOMEM. */
int pprof_encode(struct pprof *p, struct ctf_buf *out);
/* The profile gzip-compressed to f (not flushed nor closed). 0, -ENOMEM,
 * -EIO or the write's errno. */
int pprof_write(struct pprof *p, FILE *f);

#endif /* RINGTRACE_EXPORT_PPROF_H */
