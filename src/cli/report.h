/*
 * report.h - the state of `ringtrace report` (cmd_report.c), shared with
 * its HTML writer (report_html.c).
 *
 * cmd_report.c is a consumer of the replay of the mem:* events
 * (analyze/replay.h): it adds them up in a `struct report` (rows per call
 * site and per stack, errors, totals), then prints it as text, JSON or
 * HTML. With --html it also keeps the heap over time, the rows' live
 * bytes at the peak and the rate of every event type: the HTML is drawn
 * from the same figures as the text report. One thread; the report is
 * built once and printed once.
 */
#ifndef RINGTRACE_CLI_REPORT_H
#define RINGTRACE_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/replay.h"
#include "util/u64map.h"

struct rd_event_class;
struct sym_ctx;
struct stack_files;
struct stackmap_stack;

#define STACK_NONE REPLAY_NO_STACK

/* Per call site (or per stack): what was allocated there and what became
 * of it. */
struct agg {
	uint64_t key;
	uint64_t allocs, frees, failed;
	uint64_t req, usable;
	uint64_t live_n, live_req, live_usable;
	uint64_t peak;               /* aggregate mode: the key's highest live bytes */
	uint64_t xcpu, xthread;
	/* Of the live blocks, those whose free a loss of events may have
	 * hidden (replay_leak_possible): possible leaks, not certain ones. */
	uint64_t pos_n, pos_req;
	uint64_t fams;               /* bit per family */
	uint64_t site;               /* a call site (for stacks: the first seen) */
	char *name;                  /* symbolised, at the end */
	/* Live bytes when the heap's peak was reached, kept lazily: a row
	 * whose live bytes are about to change copies them first, once per
	 * peak (report_peak_gen). See report_live_at_peak(). */
	uint64_t snap_req, snap_usable;
	uint64_t snap_gen;
	/* A sampled trace (replay.h, "Sampling"): the counts above are
	 * estimates, summed here as weights in REPLAY_W_ONE units and
	 * rounded once at the end (report_weigh); the bytes are scaled as
	 * they are added. */
	uint64_t w_allocs, w_frees, w_live_n, w_pos_n;
	/* Aggregate mode with sampling: the row holds the exact counts of
	 * its call site (exact rows), not estimates. */
	int exact;
};

struct aggtab {
	struct agg *v;
	size_t n, cap;
	struct u64map idx;           /* key -> index in v */
};

/* Errors grouped by kind (enum replay_err) and the call sites involved. */
struct err {
	int kind;
	uint64_t site_alloc, site_free, site_again;
	uint8_t fam_alloc;           /* enum mem_alloc_family */
	uint8_t fam_free;            /* the free: how the block ended (replay.h, RP_END_*) */
	uint8_t possible;            /* a loss of events may have caused them */
	uint64_t count;
	uint64_t ptr;                /* the first one */
	int64_t ns;
};

/*
 * The heap over time, for the chart: the live bytes after each event,
 * reduced to at most HEAP_BUCKETS buckets of `width_ns` from the first
 * event, each keeping its highest point (the peak stays visible). When an
 * event falls beyond the last bucket the width doubles and neighbours
 * merge: memory is fixed whatever the length of the trace.
 */
#define HEAP_BUCKETS 2000
struct heap_point {
	int64_t t_ns;                /* from the first event; -1: empty bucket */
	uint64_t req, usable;        /* at the bucket's highest requested point */
};
struct heap_series {
	int64_t width_ns;
	size_t n;                    /* buckets used: the last one holding a point + 1 */
	struct heap_point pt[HEAP_BUCKETS];
};

/* Events per type per time bucket (every event of the trace, mem or
 * not), bucketed as the heap is; counts add up when buckets merge. */
#define RATE_BUCKETS 200
struct rate_type {
	const struct rd_event_class *ec;   /* valid during the replay only */
	char *name;
	uint64_t count;
	uint64_t *b;                 /* RATE_BUCKETS counts */
};
struct rate_series {
	int64_t t0_ns, t_end_ns, width_ns;
	int have_t0;
	size_t n;                    /* buckets used */
	struct rate_type *types;
	size_t ntypes;
	uint64_t lost;
};

struct report {
	/* options */
	int by;                      /* 0 callsite, 1 stack, 2 function */
	int sort;
	long top;
	int first_image;             /* --first-image: not the last exec'ed (cli/execs.h) */
	int json;
	int html;
	const char *debug_dir;

	struct replay rp;            /* the blocks (analyze/replay.h) */

	struct aggtab sites, stacks;
	struct err *errs;
	size_t nerrs;
	uint64_t err_total[RP_E_COUNT];
	uint64_t err_possible[RP_E_COUNT];   /* of err_total */
	/* Frees (and reallocs) in a forked child of blocks it never saw
	 * allocated: its parent's, from before the fork. Not errors. */
	uint64_t inherited;
	uint64_t pos_n, pos_req;     /* possible leaks (struct agg) */
	uint64_t w_allocs, w_frees, w_pos_n;   /* sampled: as in struct agg */
	/* Sampling: the mean (bytes between samples; 0: every call is in the
	 * trace) of the events' trace or of the aggregate block. */
	uint64_t sample_mean;

	uint64_t allocs, frees, failed, reallocs;
	uint64_t req, usable;
	uint64_t live_req, live_usable, live_n;
	uint64_t peak_req, peak_usable;
	int64_t peak_ns, t0_ns, t_end_ns;
	uint64_t peak_gen;           /* how many times the peak was raised */
	int have_t0;
	uint64_t xcpu, xthread, frees_known;
	uint64_t pages_peak, mmaps, munmaps;
	uint64_t lost;
	uint64_t events;
	int has_stacks;
	/* Counters of an aggregate-mode recording (DIR/mem/aggregate.bin). */
	int aggregate;
	uint64_t agg_untracked, agg_keys_full;
	/* --html only (NULL otherwise). */
	struct heap_series *heap;
	struct rate_series *rates;
};

enum { SORT_REQ, SORT_ALLOCS, SORT_FREES, SORT_USABLE, SORT_FRAG, SORT_LEAKED, SORT_XCPU };

/* ---- helpers of cmd_report.c --------------------------------------------- */

/* "function+0xoff (file:line)", "object+0xoff" or "0xaddr" of a return
 * address (fn_only: the function's name alone); malloc'ed, NULL if out of
 * memory. */
char *report_site_name(struct sym_ctx *ctx, uint64_t site, int fn_only);
/* Fragmentation in percent: (usable - req) / usable. */
double report_frag(uint64_t req, uint64_t usable);
/* "malloc,calloc": the families of a row's bit set. */
void report_fams_text(uint64_t fams, char *buf, size_t len);
/* Stack `id` of the trace's map, or NULL. */
const struct stackmap_stack *report_find_stack(const struct stack_files *sf, uint32_t id);
/* Errors of all kinds, and of them those a loss may have caused. */
uint64_t report_errors(const struct report *r, uint64_t *ret_possible);
/* Why an error or leak is possible: "possible (events lost)"... */
const char *report_possible_why(const struct report *r);
/* "estimated from a sample of ..." (replay_sample_text) or "". */
const char *report_sample_text(const struct report *r, char *buf, size_t len);
/* A row's live bytes at the heap's peak (events only). */
void report_live_at_peak(const struct report *r, const struct agg *a, uint64_t *ret_req, uint64_t *ret_usable);

#endif /* RINGTRACE_CLI_REPORT_H */
