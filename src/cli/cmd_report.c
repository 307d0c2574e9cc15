/*
 * cmd_report.c - `ringtrace report DIR` (kmemtrace-report for user space)
 * and `ringtrace mem -- PROGRAM` (record with the allocation tracer and
 * stacks, then report).
 *
 * The report replays the mem:* events of a trace in time order
 * (analyze/replay.h, the converters' replay too): its table of blocks by
 * address gives each free its allocation, so frees, leaks, cross-CPU and
 * cross-thread frees and errors (unknown pointer, double free, mismatched
 * family, realloc of a freed block) are attributed to call sites. It needs nothing but the
 * trace: call sites are symbolised with the objects saved in
 * TRACE/stacks/maps (build ids checked). The state is in report.h; with
 * --html, report_html.c draws the same figures as one HTML page, from
 * samples it takes during the replay.
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze/frames.h"
#include "cli/cli.h"
#include "cli/execs.h"
#include "cli/mem_agg_io.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/report_html.h"
#include "cli/stack_live.h"
#include "mem/mem_agg.h"
#include "mem/mem_family.h"
#include "read/format.h"
#include "read/reader.h"
#include "session/session.h"
#include "stackmap/stack_files.h"
#include "util/outdir.h"
#include "sym/symbolize.h"

#define PFX "ringtrace report: "

/* ---- tables -------------------------------------------------------------- */

static struct agg *agg_get(struct aggtab *t, uint64_t key)
{
	int created;
	uint64_t *i = u64map_put(&t->idx, key, &created);
	if (!i)
		return NULL;
	if (!created)
		return &t->v[*i];
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct agg *v = realloc(t->v, cap * sizeof(*v));
		if (!v) {
			u64map_del(&t->idx, key);
			return NULL;
		}
		t->v = v;
		t->cap = cap;
	}
	struct agg *a = &t->v[t->n];
	memset(a, 0, sizeof(*a));
	a->key = key;
	*i = t->n++;
	return a;
}

static void aggtab_free(struct aggtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].name);
	free(t->v);
	u64map_free(&t->idx);
}

static void add_err(struct report *r, int kind, uint64_t ptr, int64_t ns, uint64_t sa, uint8_t fa, uint64_t sf,
		    uint8_t ff, uint64_t sg, uint8_t pos)
{
	r->err_total[kind]++;
	r->err_possible[kind] += pos;
	for (size_t i = 0; i < r->nerrs; i++) {
		struct err *e = &r->errs[i];
		if (e->kind == kind && e->site_alloc == sa && e->site_free == sf && e->site_again == sg &&
		    e->fam_alloc == fa && e->fam_free == ff && e->possible == pos) {
			e->count++;
			return;
		}
	}
	if (r->nerrs >= 4096)
		return; /* counted in err_total */
	if ((r->nerrs & (r->nerrs - 1)) == 0 || r->nerrs == 0) {
		struct err *v = realloc(r->errs, (r->nerrs ? r->nerrs * 2 : 8) * sizeof(*v));
		if (!v)
			return;
		r->errs = v;
	}
	r->errs[r->nerrs++] = (struct err){ kind, sa, sf, sg, fa, ff, pos, 1, ptr, ns };
}

/* ---- the replay's consumer ---------------------------------------------------- */

/* Before a row's live bytes change: if they have not changed since the
 * peak was last raised, they are the row's bytes at that peak. */
static void peak_keep(const struct report *r, struct agg *a)
{
	if (a && a->snap_gen != r->peak_gen) {
		a->snap_gen = r->peak_gen;
		a->snap_req = a->live_req;
		a->snap_usable = a->live_usable;
	}
}

void report_live_at_peak(const struct report *r, const struct agg *a, uint64_t *ret_req, uint64_t *ret_usable)
{
	int kept = a->snap_gen == r->peak_gen;
	*ret_req = kept ? a->snap_req : a->live_req;
	*ret_usable = kept ? a->snap_usable : a->live_usable;
}

/* The heap's figures are the replay's. */
static void heap_now(struct report *r)
{
	/* Weighted: the figures of a full trace, estimates of a sampled
	 * one (live_n in REPLAY_W_ONE units until report_weigh). */
	r->live_n = r->rp.w_live_n;
	r->live_req = r->rp.w_live_req;
	r->live_usable = r->rp.w_live_usable;
	if (r->rp.live_pages > r->pages_peak)
		r->pages_peak = r->rp.live_pages;
}

/* A block's rows, by site and by stack, as on_alloc found them: their
 * indexes + 1 in the block's `user` (0: none), so that its end needs no
 * second lookup. */
static uint64_t rows_of(const struct report *r, const struct agg *site, const struct agg *stack)
{
	uint64_t a = site ? (uint64_t)(site - r->sites.v) + 1 : 0, b = stack ? (uint64_t)(stack - r->stacks.v) + 1 : 0;
	return a | b << 32;
}

static void rows_get(struct report *r, uint64_t user, struct agg *ret[2])
{
	uint32_t a = (uint32_t)user, b = (uint32_t)(user >> 32);
	ret[0] = a ? &r->sites.v[a - 1] : NULL;
	ret[1] = b ? &r->stacks.v[b - 1] : NULL;
}

static int on_alloc(void *arg, const struct replay_event *ev, struct replay_block *b)
{
	struct report *r = arg;
	struct agg *t[2] = { agg_get(&r->sites, b->site), r->has_stacks ? agg_get(&r->stacks, b->stack) : NULL };
	b->user = rows_of(r, t[0], t[1]);
	r->allocs++;
	r->w_allocs += b->wn;
	r->req += b->wsize;
	r->usable += b->wusable;
	heap_now(r);
	for (int i = 0; i < 2; i++) {
		if (!t[i])
			continue;
		peak_keep(r, t[i]);
		t[i]->allocs++;
		t[i]->w_allocs += b->wn;
		t[i]->req += b->wsize;
		t[i]->usable += b->wusable;
		t[i]->live_n++;
		t[i]->w_live_n += b->wn;
		t[i]->live_req += b->wsize;
		t[i]->live_usable += b->wusable;
		t[i]->fams |= 1ull << (b->fam & 63);
		if (!t[i]->site)
			t[i]->site = b->site;
	}
	if (r->live_req > r->peak_req) {
		r->peak_req = r->live_req;
		r->peak_usable = r->live_usable;
		r->peak_ns = ev->ns;
		r->peak_gen++;
	}
	return 0;
}

static int on_failed(void *arg, const struct replay_event *ev, uint64_t size, unsigned fam)
{
	struct report *r = arg;
	struct agg *t[2] = { agg_get(&r->sites, ev->site), r->has_stacks ? agg_get(&r->stacks, ev->stack) : NULL };
	r->failed++;
	for (int i = 0; i < 2; i++) {
		if (t[i]) {
			t[i]->failed++;
			t[i]->fams |= 1ull << (fam & 63);
		}
	}
	return 0;
}

/* A block ended: freed (a realloc's old block included), or its address
 * handed out again (not a free: only its live bytes go). */
static int on_end(void *arg, const struct replay_event *ev, const struct replay_block *b)
{
	struct report *r = arg;
	int freed = b->end != RP_END_REUSED && b->end != RP_END_UNTRACKED;
	int xc = freed && b->cpu != ev->cpu, xt = freed && b->tid && ev->tid && b->tid != ev->tid;
	heap_now(r);
	if (freed) {
		r->frees++;
		r->w_frees += b->wn;
		r->frees_known++;
		r->xcpu += xc;
		r->xthread += xt;
		r->munmaps += b->end == MEM_F_MUNMAP;
	}
	struct agg *t[2];
	rows_get(r, b->user, t);
	for (int i = 0; i < 2; i++) {
		if (!t[i])
			continue;
		peak_keep(r, t[i]);
		t[i]->frees += freed;
		t[i]->w_frees += freed ? b->wn : 0;
		t[i]->live_n--;
		t[i]->w_live_n -= b->wn;
		t[i]->live_req -= b->wsize;
		t[i]->live_usable -= b->wusable;
		t[i]->xcpu += xc;
		t[i]->xthread += xt;
	}
	return 0;
}

/* Errors are grouped by kind and sites: the allocation's, the free's (the
 * call in error, or the block's first free), the second call's. */
static int on_error(void *arg, const struct replay_event *ev, const struct replay_error *e)
{
	struct report *r = arg;
	const struct replay_block *b = e->b;
	if (e->inherited) {
		r->inherited++;
		return 0;
	}
	if (!b)
		add_err(r, e->kind, e->ptr, ev->ns, 0, 0, ev->site, (uint8_t)e->call, 0, e->possible);
	else if (e->kind == RP_E_MISMATCH)
		add_err(r, e->kind, e->ptr, ev->ns, b->site, b->fam, ev->site, (uint8_t)e->call, 0, e->possible);
	else
		add_err(r, e->kind, e->ptr, ev->ns, b->site, b->fam, b->end_site, b->end, ev->site, e->possible);
	return 0;
}

/* The end of the trace: the blocks alive whose free a loss may have
 * hidden are possible leaks, in their rows and in the totals. */
static int on_leak(void *arg, const struct replay_block *b, int possible)
{
	struct report *r = arg;
	if (!possible)
		return 0;
	struct agg *t[2];
	rows_get(r, b->user, t);
	r->pos_n++;
	r->w_pos_n += b->wn;
	r->pos_req += b->wsize;
	for (int i = 0; i < 2; i++) {
		if (t[i]) {
			t[i]->pos_n++;
			t[i]->w_pos_n += b->wn;
			t[i]->pos_req += b->wsize;
		}
	}
	return 0;
}

static const struct replay_ops report_ops = { on_alloc, on_failed, on_end, on_error, on_leak };

uint64_t report_errors(const struct report *r, uint64_t *ret_possible)
{
	uint64_t n = 0, p = 0;
	for (int k = 0; k < RP_E_COUNT; k++) {
		n += r->err_total[k];
		p += r->err_possible[k];
	}
	if (ret_possible)
		*ret_possible = p;
	return n;
}

/* Weights in REPLAY_W_ONE units, rounded to a count. */
static uint64_t w_count(uint64_t w)
{
	return (w + REPLAY_W_ONE / 2) >> REPLAY_W_SHIFT;
}

/* The end of the replay: the counts of a sampled trace become the sums
 * of the weights (the bytes are already scaled); those of a full one are
 * the counts (every weight one). The live counts were weights all along. */
static void report_weigh(struct report *r)
{
	int est = r->rp.sample_mean != 0;
	struct aggtab *tabs[2] = { &r->sites, &r->stacks };
	r->sample_mean = r->rp.sample_mean;
	r->live_n = w_count(r->live_n);
	if (est) {
		r->allocs = w_count(r->w_allocs);
		r->frees = w_count(r->w_frees);
		r->pos_n = w_count(r->w_pos_n);
	}
	for (int i = 0; i < 2; i++) {
		for (size_t j = 0; j < tabs[i]->n; j++) {
			struct agg *a = &tabs[i]->v[j];
			a->live_n = w_count(a->w_live_n);
			if (est) {
				a->allocs = w_count(a->w_allocs);
				a->frees = w_count(a->w_frees);
				a->pos_n = w_count(a->w_pos_n);
			}
		}
	}
}

const char *report_sample_text(const struct report *r, char *buf, size_t len)
{
	struct replay mean = { .sample_mean = r->sample_mean };
	return replay_sample_text(&mean, buf, len);
}

const char *report_possible_why(const struct report *r)
{
	return r->rp.no_start ? "possible (events lost, or before the trace began)" : "possible (events lost)";
}

/* One item of the trace: the figures of a mem event, then its effects. */
static void replay(struct report *r, const struct rd_item *it)
{
	const struct replay_class *c = replay_item_class(&r->rp, it);
	if (!c || c->kind == RP_NONE || !it->fields)
		return;
	if (!r->have_t0) {
		r->t0_ns = it->ns;
		r->have_t0 = 1;
	}
	r->t_end_ns = it->ns;
	r->events++;
	r->reallocs += c->kind == RP_REALLOC;
	r->mmaps += c->kind == RP_MMAP;
	(void)replay_item_of(&r->rp, it, c);
	if (r->heap)
		report_html_heap(r, it->ns);
}

/* ---- symbols ------------------------------------------------------------- */

/* "function+0xoff (file:line)", "object+0xoff" or "0xaddr". `site` is a
 * return address: its line is the call's (site - 1). fn_only: the
 * function's name alone (for --by function). */
char *report_site_name(struct sym_ctx *ctx, uint64_t site, int fn_only)
{
	char buf[SYM_NAME_MAX + PATH_MAX + 64];
	struct sym_result s;
	if (site && ctx && sym_resolve(ctx, site - 1, &s) == 0) {
		const char *obj = s.object ? strrchr(s.object, '/') : NULL;
		obj = obj ? obj + 1 : s.object ? s.object : "?";
		if (s.has_function && fn_only)
			snprintf(buf, sizeof(buf), "%s", s.function);
		else if (s.has_function && s.file)
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64 " (%s:%d)", s.function, s.offset + 1, s.file, s.line);
		else if (s.has_function)
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64 " (%s)", s.function, s.offset + 1, obj);
		else
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, obj, s.object_offset + 1);
	} else {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, site);
	}
	return strdup(buf);
}

/* ---- output -------------------------------------------------------------- */

double report_frag(uint64_t req, uint64_t usable)
{
	return usable ? 100.0 * (double)(usable - req) / (double)usable : 0.0;
}

static int g_sort;

static uint64_t sort_key(const struct agg *a)
{
	switch (g_sort) {
	case SORT_ALLOCS: return a->allocs;
	case SORT_FREES: return a->frees;
	case SORT_USABLE: return a->usable;
	case SORT_FRAG: return (uint64_t)(report_frag(a->req, a->usable) * 1000);
	case SORT_LEAKED: return a->live_req;
	case SORT_XCPU: return a->xcpu;
	default: return a->req;
	}
}

static int cmp_agg(const void *x, const void *y)
{
	const struct agg *a = x, *b = y;
	uint64_t ka = sort_key(a), kb = sort_key(b);
	if (ka != kb)
		return ka > kb ? -1 : 1;
	if (a->allocs != b->allocs)
		return a->allocs > b->allocs ? -1 : 1;
	return a->key < b->key ? -1 : a->key > b->key;
}

/* A leak row: the certain part of a row's live blocks, or the possible
 * part, in live_n and live_req (what cmp_leak sorts by). */
static struct agg leak_part(const struct agg *a, int possible)
{
	struct agg l = *a;
	l.live_n = possible ? a->pos_n : a->live_n - a->pos_n;
	l.live_req = possible ? a->pos_req : a->live_req - a->pos_req;
	return l;
}

static int cmp_leak(const void *x, const void *y)
{
	const struct agg *a = x, *b = y;
	if (a->live_req != b->live_req)
		return a->live_req > b->live_req ? -1 : 1;
	return a->key < b->key ? -1 : a->key > b->key;
}

/* Merge rows with the same name (--by function). */
static void merge_by_name(struct aggtab *t)
{
	size_t w = 0;
	/* name hash -> kept row; two names with one hash: rehashed. */
	struct u64map seen = { 0 };
	for (size_t i = 0; i < t->n; i++) {
		size_t j = w;
		for (uint64_t h = u64map_str_key(t->v[i].name);; h = u64map_next_key(h)) {
			int created;
			uint64_t *k = u64map_put(&seen, h, &created);
			if (!k) {
				/* Out of memory: a slow search. */
				for (j = 0; j < w; j++)
					if (!strcmp(t->v[j].name, t->v[i].name))
						break;
				break;
			}
			if (created) {
				*k = w;
				break;
			}
			if (!strcmp(t->v[*k].name, t->v[i].name)) {
				j = (size_t)*k;
				break;
			}
		}
		if (j == w) {
			t->v[w++] = t->v[i];
			continue;
		}
		struct agg *d = &t->v[j], *s = &t->v[i];
		d->allocs += s->allocs;
		d->frees += s->frees;
		d->failed += s->failed;
		d->req += s->req;
		d->usable += s->usable;
		d->live_n += s->live_n;
		d->live_req += s->live_req;
		d->live_usable += s->live_usable;
		d->xcpu += s->xcpu;
		d->xthread += s->xthread;
		d->pos_n += s->pos_n;
		d->pos_req += s->pos_req;
		d->fams |= s->fams;
		free(s->name);
	}
	t->n = w;
	u64map_free(&seen);
}

void report_fams_text(uint64_t fams, char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = 0;
	for (unsigned f = 1; f < MEM_A_MAX && k + 1 < len; f++)
		if (fams & (1ull << f))
			k += (size_t)snprintf(buf + k, len - k, "%s%s", k ? "," : "", mem_alloc_name(f));
	if (k >= len)
		buf[len - 1] = 0;
}

const struct stackmap_stack *report_find_stack(const struct stack_files *sf, uint32_t id)
{
	size_t lo = 0, hi = sf->nstacks;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (sf->stacks[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sf->nstacks && sf->stacks[lo].id == id ? &sf->stacks[lo] : NULL;
}

static void print_stack(FILE *o, struct sym_ctx *ctx, const struct stack_files *sf, uint32_t id, const char *indent)
{
	const struct stackmap_stack *st = report_find_stack(sf, id);
	if (!st) {
		fprintf(o, "%s(stack %u not in the trace's map)\n", indent, id);
		return;
	}
	for (uint32_t i = frames_first(ctx, st->ips, st->depth); i < st->depth; i++) {
		char *n = report_site_name(ctx, st->ips[i], 0);
		fprintf(o, "%s%s\n", indent, n ? n : "?");
		free(n);
	}
}

static void print_text(FILE *o, struct report *r, struct aggtab *rows, struct sym_ctx *ctx,
		       const struct stack_files *sf, const char *dir)
{
	static const char *const by_name[] = { "call site", "stack", "function" };
	double secs = r->have_t0 ? (double)(r->t_end_ns - r->t0_ns) / 1e9 : 0;
	if (r->aggregate)
		fprintf(o, "Allocation report of %s (counters of %.3f s, aggregate mode: no per-event details)\n\n",
			dir, secs);
	else
		fprintf(o, "Allocation report of %s (%.3f s of events)\n\n", dir, secs);
	char smp[128];
	if (r->sample_mean && r->aggregate)
		fprintf(o, "SAMPLED: frees, the heap, leaks and the rows marked 'estimate' are %s; allocations, bytes "
			   "and the rows marked 'exact' count every call (docs/mem.md, \"Exact and estimated\")\n\n",
			report_sample_text(r, smp, sizeof(smp)));
	else if (r->sample_mean)
		fprintf(o, "SAMPLED: allocations, frees, bytes, heap and leaks are %s (docs/mem.md, \"Exact and estimated\")\n\n",
			report_sample_text(r, smp, sizeof(smp)));
	fprintf(o, "Totals\n");
	fprintf(o, "  allocations          %" PRIu64 " (%" PRIu64 " failed)\n", r->allocs, r->failed);
	fprintf(o, "  frees                %" PRIu64 "\n", r->frees);
	fprintf(o, "  reallocs             %" PRIu64 "\n", r->reallocs);
	fprintf(o, "  bytes requested      %" PRIu64 "\n", r->req);
	fprintf(o, "  bytes allocated      %" PRIu64 "\n", r->usable);
	fprintf(o, "  fragmentation        %.2f%%\n", report_frag(r->req, r->usable));
	fprintf(o, "  peak heap            %" PRIu64 " bytes requested, %" PRIu64 " allocated, at %.6f s\n",
		r->peak_req, r->peak_usable, r->have_t0 ? (double)(r->peak_ns - r->t0_ns) / 1e9 : 0.0);
	fprintf(o, "  leaked at exit       %" PRIu64 " bytes in %" PRIu64 " blocks", r->live_req, r->live_n);
	if (r->lost)
		fprintf(o, ": %" PRIu64 " bytes in %" PRIu64 " blocks certain, %" PRIu64 " bytes in %" PRIu64
			   " blocks possible (events lost after their allocation)",
			r->live_req - r->pos_req, r->live_n - r->pos_n, r->pos_req, r->pos_n);
	fputc('\n', o);
	fprintf(o, "  cross-CPU frees      %" PRIu64 " (%.2f%%)\n", r->xcpu,
		r->frees_known ? 100.0 * (double)r->xcpu / (double)r->frees_known : 0.0);
	fprintf(o, "  cross-thread frees   %" PRIu64 " (%.2f%%)\n", r->xthread,
		r->frees_known ? 100.0 * (double)r->xthread / (double)r->frees_known : 0.0);
	if (r->mmaps)
		fprintf(o, "  pages (mmap)         %" PRIu64 " maps, %" PRIu64 " unmapped, peak %" PRIu64 " bytes\n",
			r->mmaps, r->munmaps, r->pages_peak);
	uint64_t npos, nerr = report_errors(r, &npos);
	fprintf(o, "  errors               %" PRIu64, nerr);
	if (r->sample_mean)
		fprintf(o, " among the samples (frees of unknown pointers and double frees are not seen)");
	if (r->lost || npos)
		fprintf(o, ": %" PRIu64 " certain, %" PRIu64 " %s", nerr - npos, npos, report_possible_why(r));
	fputc('\n', o);
	if (r->inherited)
		fprintf(o, "  inherited frees      %" PRIu64 " (blocks of the parent, allocated before the fork)\n",
			r->inherited);
	if (r->lost)
		fprintf(o, "  LOST EVENTS          %" PRIu64 " (the figures miss them)\n", r->lost);
	if (r->sample_mean && r->rp.unmatched)
		fprintf(o, "  unmatched frees      %" PRIu64 " (of addresses no sample allocated: not errors in a sampled trace)\n",
			r->rp.unmatched);
	if (r->sample_mean && (r->rp.untracked || r->agg_untracked))
		fprintf(o, "  untracked samples    %" PRIu64 " (no room in the set of sampled blocks: counted allocated, not alive)\n",
			r->rp.untracked + r->agg_untracked);
	else if (r->agg_untracked)
		fprintf(o, "  UNTRACKED BLOCKS     %" PRIu64 " (no room in the table of live blocks: their frees count as unknown)\n",
			r->agg_untracked);
	if (r->agg_keys_full)
		fprintf(o, "  OTHER                %" PRIu64 " calls counted under one row (no room for more keys)\n",
			r->agg_keys_full);

	size_t n = r->top > 0 && (size_t)r->top < rows->n ? (size_t)r->top : rows->n;
	fprintf(o, "\nBy %s (top %zu of %zu)\n", by_name[r->by], n, rows->n);
	fprintf(o, "%10s %10s %14s %14s %6s %12s %8s %8s %8s  %s\n", "ALLOCS", "FREES", "REQUESTED", "ALLOCATED",
		"FRAG%", "LEAKED", "BLOCKS", "XCPU", "XTHREAD", r->by == 1 ? "STACK (allocator's caller)" : "SITE");
	for (size_t i = 0; i < n; i++) {
		const struct agg *a = &rows->v[i];
		char fams[128];
		report_fams_text(a->fams, fams, sizeof(fams));
		fprintf(o, "%10" PRIu64 " %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %6.2f %12" PRIu64 " %8" PRIu64
			   " %8" PRIu64 " %8" PRIu64 "  %s [%s]\n",
			a->allocs, a->frees, a->req, a->usable, report_frag(a->req, a->usable), a->live_req, a->live_n, a->xcpu,
			a->xthread, a->name, fams);
		if (r->by == 1 && a->key != STACK_NONE)
			print_stack(o, ctx, sf, (uint32_t)a->key, "            ");
	}

	/* Leaks, biggest first, with their stacks when the trace has them:
	 * the certain ones, then those a loss of events may have caused. */
	struct aggtab *lt = r->has_stacks ? &r->stacks : &r->sites;
	struct agg *leaks = malloc((lt->n ? lt->n : 1) * sizeof(*leaks));
	for (int possible = 0; possible < 2 && leaks; possible++) {
		size_t nl = 0;
		for (size_t i = 0; i < lt->n; i++) {
			struct agg l = leak_part(&lt->v[i], possible);
			if (l.live_n)
				leaks[nl++] = l;
		}
		if (!nl)
			continue;
		qsort(leaks, nl, sizeof(*leaks), cmp_leak);
		size_t m = r->top > 0 && (size_t)r->top < nl ? (size_t)r->top : nl;
		if (possible)
			fprintf(o, "\nPossible leaks: blocks alive at exit whose free may be among the lost events "
				   "(top %zu of %zu %s)\n", m, nl, r->has_stacks ? "stacks" : "sites");
		else
			fprintf(o, "\nLeaks: blocks alive at exit (top %zu of %zu %s)\n", m, nl,
				r->has_stacks ? "stacks" : "sites");
		for (size_t i = 0; i < m; i++) {
			char *sn = report_site_name(ctx, leaks[i].site, 0);
			fprintf(o, "  %" PRIu64 " bytes in %" PRIu64 " blocks allocated at %s\n", leaks[i].live_req,
				leaks[i].live_n, sn ? sn : "?");
			free(sn);
			if (r->has_stacks && leaks[i].key != STACK_NONE)
				print_stack(o, ctx, sf, (uint32_t)leaks[i].key, "      ");
		}
	}
	free(leaks);

	if (nerr) {
		fprintf(o, "\nErrors\n");
		for (int k = 0; k < RP_E_COUNT; k++) {
			if (!r->err_total[k])
				continue;
			fprintf(o, "  %s: %" PRIu64, replay_err_name[k], r->err_total[k]);
			if (r->err_possible[k])
				fprintf(o, " (%" PRIu64 " certain, %" PRIu64 " possible)", r->err_total[k] - r->err_possible[k],
					r->err_possible[k]);
			fputc('\n', o);
			for (size_t i = 0; i < r->nerrs; i++) {
				const struct err *e = &r->errs[i];
				if (e->kind != k)
					continue;
				char *sa = report_site_name(ctx, e->site_alloc, 0), *sf_ = report_site_name(ctx, e->site_free, 0),
				     *sg = report_site_name(ctx, e->site_again, 0);
				if (r->aggregate && !e->site_free)
					/* Counters only: no pointer, no free's site. */
					fprintf(o, "    %" PRIu64 "x: %s%s%s\n", e->count,
						k == RP_E_MISMATCH ? "blocks allocated at " : "frees of blocks not known alive "
											   "(double frees among them; aggregate mode "
											   "keeps no sites of frees)",
						k == RP_E_MISMATCH ? sa : "", k == RP_E_MISMATCH ? ", freed by another family" : "");
				else
					fprintf(o, "    %" PRIu64 "x%s%s, first 0x%" PRIx64 ": ", e->count,
						e->possible ? " " : "", e->possible ? report_possible_why(r) : "", e->ptr);
				if (r->aggregate && !e->site_free)
					;
				else if (k == RP_E_UNKNOWN || k == RP_E_REALLOC_UNKNOWN)
					fprintf(o, "%s at %s\n", k == RP_E_UNKNOWN ? replay_end_name(e->fam_free) : "realloc",
						sf_);
				else if (k == RP_E_MISMATCH)
					fprintf(o, "%s at %s, %s at %s\n", mem_alloc_name(e->fam_alloc), sa,
						replay_end_name(e->fam_free), sf_);
				else
					fprintf(o, "%s at %s, %s at %s, %s again at %s\n", mem_alloc_name(e->fam_alloc), sa,
						replay_end_name(e->fam_free), sf_, k == RP_E_DOUBLE ? "freed" : "realloc'ed", sg);
				free(sa);
				free(sf_);
				free(sg);
			}
		}
	}
}

static void json_num(FILE *o, const char *k, uint64_t v, int comma)
{
	fprintf(o, "\"%s\": %" PRIu64 "%s", k, v, comma ? ", " : "");
}

static void print_json(FILE *o, struct report *r, struct aggtab *rows, struct sym_ctx *ctx, const char *dir)
{
	uint64_t npos, nerr = report_errors(r, &npos);
	fprintf(o, "{\"trace\": ");
	cli_json_string(o, dir);
	fprintf(o, ",\n \"totals\": {");
	json_num(o, "allocations", r->allocs, 1);
	json_num(o, "failed", r->failed, 1);
	json_num(o, "frees", r->frees, 1);
	json_num(o, "reallocs", r->reallocs, 1);
	json_num(o, "bytes_requested", r->req, 1);
	json_num(o, "bytes_allocated", r->usable, 1);
	fprintf(o, "\"fragmentation_pct\": %.4f, ", report_frag(r->req, r->usable));
	json_num(o, "peak_requested", r->peak_req, 1);
	json_num(o, "peak_allocated", r->peak_usable, 1);
	fprintf(o, "\"peak_time_s\": %.9f, ", r->have_t0 ? (double)(r->peak_ns - r->t0_ns) / 1e9 : 0.0);
	json_num(o, "leaked_bytes", r->live_req, 1);
	json_num(o, "leaked_blocks", r->live_n, 1);
	json_num(o, "leaked_bytes_possible", r->pos_req, 1);
	json_num(o, "leaked_blocks_possible", r->pos_n, 1);
	json_num(o, "cross_cpu_frees", r->xcpu, 1);
	json_num(o, "cross_thread_frees", r->xthread, 1);
	json_num(o, "mmaps", r->mmaps, 1);
	json_num(o, "munmaps", r->munmaps, 1);
	json_num(o, "lost_events", r->lost, 1);
	fprintf(o, "\"aggregate\": %s, ", r->aggregate ? "true" : "false");
	json_num(o, "untracked_blocks", r->agg_untracked, 1);
	json_num(o, "inherited_frees", r->inherited, 1);
	/* Sampled: the counts and bytes are estimates (docs/mem.md). */
	fprintf(o, "\"sampled\": %s, ", r->sample_mean ? "true" : "false");
	json_num(o, "sample_mean", r->sample_mean, 1);
	json_num(o, "untracked_samples", r->rp.untracked, 1);
	json_num(o, "unmatched_frees", r->rp.unmatched, 1);
	json_num(o, "errors_possible", npos, 1);
	json_num(o, "errors", nerr, 0);
	fprintf(o, "},\n \"rows\": [");
	size_t n = r->top > 0 && (size_t)r->top < rows->n ? (size_t)r->top : rows->n;
	for (size_t i = 0; i < n; i++) {
		const struct agg *a = &rows->v[i];
		fprintf(o, "%s\n  {\"name\": ", i ? "," : "");
		cli_json_string(o, a->name);
		fprintf(o, ", ");
		if (r->by == 1)
			json_num(o, "stack_id", a->key, 1);
		else if (r->by == 0)
			fprintf(o, "\"site\": \"0x%" PRIx64 "\", ", a->key);
		if (r->sample_mean)
			fprintf(o, "\"estimate\": %s, ", a->exact ? "false" : "true");
		json_num(o, "allocations", a->allocs, 1);
		json_num(o, "failed", a->failed, 1);
		json_num(o, "frees", a->frees, 1);
		json_num(o, "bytes_requested", a->req, 1);
		json_num(o, "bytes_allocated", a->usable, 1);
		fprintf(o, "\"fragmentation_pct\": %.4f, ", report_frag(a->req, a->usable));
		json_num(o, "leaked_bytes", a->live_req, 1);
		json_num(o, "leaked_blocks", a->live_n, 1);
		json_num(o, "leaked_bytes_possible", a->pos_req, 1);
		json_num(o, "leaked_blocks_possible", a->pos_n, 1);
		json_num(o, "cross_cpu_frees", a->xcpu, 1);
		json_num(o, "cross_thread_frees", a->xthread, 1);
		char fams[128];
		report_fams_text(a->fams, fams, sizeof(fams));
		fprintf(o, "\"families\": ");
		cli_json_string(o, fams);
		fprintf(o, "}");
	}
	fprintf(o, "],\n \"errors\": [");
	for (size_t i = 0; i < r->nerrs; i++) {
		const struct err *e = &r->errs[i];
		char *sa = report_site_name(ctx, e->site_alloc, 0), *sf_ = report_site_name(ctx, e->site_free, 0),
		     *sg = report_site_name(ctx, e->site_again, 0);
		fprintf(o, "%s\n  {\"kind\": ", i ? "," : "");
		cli_json_string(o, replay_err_name[e->kind]);
		fprintf(o, ", ");
		json_num(o, "count", e->count, 1);
		fprintf(o, "\"possible\": %s, ", e->possible ? "true" : "false");
		fprintf(o, "\"ptr\": \"0x%" PRIx64 "\", \"alloc_family\": ", e->ptr);
		cli_json_string(o, e->site_alloc ? mem_alloc_name(e->fam_alloc) : "");
		fprintf(o, ", \"alloc_site\": ");
		cli_json_string(o, e->site_alloc ? sa : "");
		fprintf(o, ", \"free_family\": ");
		cli_json_string(o, e->site_free ? replay_end_name(e->fam_free) : "");
		fprintf(o, ", \"free_site\": ");
		cli_json_string(o, e->site_free ? sf_ : "");
		fprintf(o, ", \"again_site\": ");
		cli_json_string(o, e->site_again ? sg : "");
		fprintf(o, "}");
		free(sa);
		free(sf_);
		free(sg);
	}
	fprintf(o, "]}\n");
}

/* ---- the command ---------------------------------------------------------- */

static const char report_usage[] =
	"usage: ringtrace report DIR [--by callsite|stack|function] [--sort KEY] [--top N] [--json]\n"
	"                           [--html -o FILE.html] [-o FILE] [--debug-dir DIR] [--allow-shared-dir]\n"
	"                           [--first-image]\n";

/* The call site of stack ID: its first frame outside the tracer's
 * wrappers (0 if the stack is not in the trace's map). */
static uint64_t stack_site(const struct stack_files *sf, struct sym_ctx *ctx, uint32_t id)
{
	const struct stackmap_stack *st = report_find_stack(sf, id);
	if (!st || !st->depth)
		return 0;
	return st->ips[frames_first(ctx, st->ips, st->depth)];
}

static void add_agg(struct agg *a, const struct memagg_slot *s, uint64_t site)
{
	if (!a)
		return;
	a->allocs += s->allocs;
	a->frees += s->frees;
	a->failed += s->failed;
	a->req += s->req;
	a->usable += s->usable;
	a->live_n += s->allocs - s->frees;
	a->live_req += s->live_req;
	a->live_usable += s->live_usable;
	a->xcpu += s->xcpu;
	a->fams |= s->fams;
	a->peak += s->peak_req;
	if (!a->site)
		a->site = site;
}

/* Weights of MEMAGG_EST_UNIT per allocation, rounded to a count. */
static uint64_t est_count(uint64_t w)
{
	return (w + MEMAGG_EST_UNIT / 2) / MEMAGG_EST_UNIT;
}

/*
 * One slot of a sampled block (mem_agg.h, "Sampling"). Exact rows (a call
 * site's every call) become rows of their own, marked exact, with the
 * allocation side only (frees of blocks not sampled are not seen); they
 * make the totals' allocations and bytes, which are then exact. Estimate
 * rows (key | MEMAGG_KEY_EST) become rows keyed by their site with that
 * bit kept (and by stack when the block is by stack), their weights
 * rounded to counts; they make the totals' frees and live figures.
 */
static void merge_sampled(struct report *r, const struct memagg_slot *s, const struct stack_files *sf,
			  struct sym_ctx *ctx)
{
	uint64_t key = s->key & ~MEMAGG_KEY_EST, site = key;
	uint32_t stack = STACK_NONE;
	if (key & MEMAGG_KEY_STACK) {
		stack = (uint32_t)key;
		site = stack_site(sf, ctx, stack);
	} else if (key == MEMAGG_KEY_OTHER) {
		site = 0;
	}
	if (!(s->key & MEMAGG_KEY_EST)) {
		struct agg *a = agg_get(&r->sites, site);
		if (!a)
			return;
		a->exact = 1;
		a->allocs += s->allocs;
		a->failed += s->failed;
		a->req += s->req;
		a->usable += s->usable;
		a->fams |= s->fams;
		a->site = site;
		r->allocs += s->allocs;
		r->failed += s->failed;
		r->req += s->req;
		r->usable += s->usable;
		return;
	}
	struct memagg_slot e = *s;
	e.allocs = est_count(s->est_allocs);
	/* add_agg takes the blocks alive as allocs - frees. */
	e.frees = e.allocs - est_count(s->est_allocs > s->est_frees ? s->est_allocs - s->est_frees : 0);
	add_agg(agg_get(&r->sites, site | MEMAGG_KEY_EST), &e, site);
	if (r->has_stacks && stack != STACK_NONE)
		add_agg(agg_get(&r->stacks, stack), &e, site);
	r->frees += e.frees;
	r->frees_known += e.frees;
	r->live_n += e.allocs - e.frees;
	r->live_req += s->live_req;
	r->live_usable += s->live_usable;
	r->xcpu += s->xcpu;
}

/*
 * The counters of an aggregate-mode recording (src/mem/mem_agg.h), added
 * as the events would have been: per key (a stack, or a call site), the
 * totals, the peak, mismatched and unknown frees. 0 when the trace has
 * none, 1 when merged, -1 when the file is damaged.
 */
static void merge_block(struct report *r, void *m, size_t size, const struct stack_files *sf,
			struct sym_ctx *ctx)
{
	uint32_t n;
	if (memagg_check(m, size, &n))
		memagg_fold(m);
	const struct memagg_slot *slot = memagg_check(m, size, &n);
	const struct memagg_header *h = m;
	r->aggregate = 1;
	r->sample_mean = h->sample_mean;
	for (uint32_t i = 0; slot && i < n; i++) {
		const struct memagg_slot *s = &slot[i];
		if (!s->key || (!s->allocs && !s->failed))
			continue;
		if (h->sample_mean) {
			merge_sampled(r, s, sf, ctx);
			continue;
		}
		uint32_t stack = STACK_NONE;
		uint64_t site = s->key;
		if (s->key & MEMAGG_KEY_STACK) {
			stack = (uint32_t)s->key;
			site = stack_site(sf, ctx, stack);
		} else if (s->key == MEMAGG_KEY_OTHER) {
			site = 0;
		}
		add_agg(agg_get(&r->sites, site), s, site);
		if (r->has_stacks)
			add_agg(agg_get(&r->stacks, stack), s, site);
		r->allocs += s->allocs;
		r->frees += s->frees;
		r->frees_known += s->frees;
		r->failed += s->failed;
		r->req += s->req;
		r->usable += s->usable;
		r->live_n += s->allocs - s->frees;
		r->live_req += s->live_req;
		r->live_usable += s->live_usable;
		r->xcpu += s->xcpu;
		if (s->mismatched) {
			add_err(r, RP_E_MISMATCH, 0, 0, site, 0, 0, 0, 0, 0);
			r->errs[r->nerrs - 1].count += s->mismatched - 1;
			r->err_total[RP_E_MISMATCH] += s->mismatched - 1;
		}
	}
	if (h->unknown_frees) {
		add_err(r, RP_E_UNKNOWN, 0, 0, 0, 0, 0, 0, 0, 0);
		r->errs[r->nerrs - 1].count += h->unknown_frees - 1;
		r->err_total[RP_E_UNKNOWN] += h->unknown_frees - 1;
	}
	/* Times from the program's attach (CLOCK_MONOTONIC). */
	r->have_t0 = 1;
	r->t0_ns = 0;
	r->t_end_ns = h->end_ns > h->start_ns ? (int64_t)(h->end_ns - h->start_ns) : 0;
	r->peak_req = h->peak_req;
	r->peak_usable = h->peak_usable;
	r->peak_ns = h->peak_ns > h->start_ns ? (int64_t)(h->peak_ns - h->start_ns) : 0;
	r->agg_untracked = h->untracked;
	r->agg_keys_full = h->keys_full;
}

static int merge_aggregate(struct report *r, const char *dir, const struct stack_files *sf, struct sym_ctx *ctx)
{
	size_t size;
	char err[PATH_MAX + 128];
	void *m = agg_load(dir, &size, err, sizeof(err));
	if (!m && errno == ENOENT)
		return 0;
	if (!m) {
		fprintf(stderr, PFX "%s\n", err);
		return -1;
	}
	merge_block(r, m, size, sf, ctx);
	free(m);
	return 1;
}

/* Name the rows of `t` (by: as r->by), merge them by function (by 2) and
 * sort them as the report prints them. The slot index no longer matches
 * after sorting: lookups are done. */
static void name_rows(struct report *r, struct aggtab *t, int by, struct sym_ctx *ctx)
{
	/* A sampled aggregate's estimate rows by site have MEMAGG_KEY_EST in
	 * their key: named by their site. */
	for (size_t i = 0; i < t->n; i++)
		t->v[i].name = t->v[i].key == STACK_NONE && by == 1 ? strdup("(no stack)") :
			       report_site_name(ctx, by == 1 || (t->v[i].key & MEMAGG_KEY_EST) ? t->v[i].site : t->v[i].key,
						by == 2);
	for (size_t i = 0; i < t->n; i++)
		if (!t->v[i].name)
			t->v[i].name = strdup("?");
	/* A sampled aggregate has both kinds of rows: each says which (and
	 * --by function merges each kind apart). */
	for (size_t i = 0; r->aggregate && r->sample_mean && i < t->n; i++) {
		char *n = NULL;
		if (t->v[i].name && asprintf(&n, "%s (%s)", t->v[i].name, t->v[i].exact ? "exact" : "estimate") > 0) {
			free(t->v[i].name);
			t->v[i].name = n;
		}
	}
	if (by == 2)
		merge_by_name(t);
	g_sort = r->sort;
	/* A trace that ends before any allocation leaves t->v NULL, and
	 * qsort's pointer must not be NULL even for 0 elements. */
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), cmp_agg);
	u64map_free(&t->idx); /* sorted: the index no longer points right */
}

static int run_report(struct report *r, const char *dir, FILE *o)
{
	char err[512];
	struct rd_trace *t;
	/* The program executed others in its own process: the report is
	 * the last one's, the program that finally ran. */
	char last[PATH_MAX], name[64];
	int e = r->first_image ? 0 : execs_last(dir, last, sizeof(last), name, sizeof(name));
	if (e < 0)
		fprintf(stderr, PFX "%s/execs is damaged: the report is of the first program only\n", dir);
	else if (e > 0) {
		fprintf(stderr, PFX "the program executed '%s' in its process: the report is of its trace, %s (--first-image: the first program's)\n",
			name, last);
		dir = last;
	}
	if (rd_trace_open(dir, &t, err, sizeof(err)) < 0) {
		fprintf(stderr, PFX "%s: %s\n", dir, err);
		return 2;
	}
	struct stack_files sf = { 0 };
	int k = stack_files_read(dir, &sf);
	if (k < 0 && k != -ENOENT)
		fprintf(stderr, PFX "%s/stacks is damaged (%s): call sites print as addresses\n", dir, strerror(-k));
	if (r->by == 1 && !sf.nstacks) {
		/* Stacks may still be in the events (a full map) but not
		 * resolvable: say so rather than print one row. */
		fprintf(stderr, PFX "%s has no stacks (record with --stacks): --by stack needs them\n", dir);
		rd_trace_close(t);
		stack_files_free(&sf);
		return 2;
	}
	r->has_stacks = sf.nstacks > 0;
	/* Freed blocks are kept: a second free is then a double free. */
	if (replay_init(&r->rp, rd_trace_meta(t), REPLAY_KEEP_FREED, &report_ops, r) < 0) {
		fprintf(stderr, PFX "out of memory\n");
		rd_trace_close(t);
		stack_files_free(&sf);
		return 1;
	}
	struct rd_item it;
	int status = 0;
	for (;;) {
		k = rd_trace_next(t, &it);
		if (k == 0)
			break;
		if (k < 0) {
			fprintf(stderr, PFX "%s: %s (the report covers the events before it)\n", dir,
				rd_trace_errmsg(t));
			status = 1;
			break;
		}
		if (it.kind == RD_ITEM_EVENT) {
			replay(r, &it);
		} else {
			r->lost += it.count;
			(void)replay_item(&r->rp, &it);
		}
		if (r->rates && report_html_item(r, &it) < 0) {
			fprintf(stderr, PFX "out of memory\n");
			status = 1;
			break;
		}
	}
	rd_trace_close(t);
	/* The losses no packet shows (the env's). */
	r->lost += r->rp.env_lost;
	(void)replay_finish(&r->rp);
	report_weigh(r);
	if (r->rp.oom) {
		fprintf(stderr, PFX "%s: out of memory: the figures miss some blocks\n", dir);
		status = 1;
	}
	struct sym_ctx *ctx = frames_symbolizer(&sf, r->debug_dir);
	k = merge_aggregate(r, dir, &sf, ctx);
	if (k < 0)
		status = 1;
	if (!r->events && !r->aggregate && status == 0 && !r->html) {
		fprintf(stderr, PFX "%s has no allocation events (record with --mem)\n", dir);
		if (ctx)
			sym_ctx_free(ctx);
		stack_files_free(&sf);
		return 1;
	}

	struct aggtab *rows = r->by == 1 ? &r->stacks : &r->sites;
	name_rows(r, rows, r->by, ctx);
	if (r->html) {
		/* Both tables: by call site (or function) and by stack. */
		struct aggtab *other = r->by == 1 ? &r->sites : r->has_stacks ? &r->stacks : NULL;
		if (other)
			name_rows(r, other, r->by == 1 ? 0 : 1, ctx);
		if (report_html_write(o, r, r->by == 1 ? other : rows, r->has_stacks ? &r->stacks : NULL, ctx, &sf,
				      dir) < 0) {
			fprintf(stderr, PFX "out of memory: the HTML page is incomplete\n");
			status = 1;
		}
	} else if (r->json) {
		print_json(o, r, rows, ctx, dir);
	} else {
		print_text(o, r, rows, ctx, &sf, dir);
	}
	if (ctx)
		sym_ctx_free(ctx);
	stack_files_free(&sf);
	return status;
}

static void report_free(struct report *r)
{
	replay_free(&r->rp);
	free(r->errs);
	aggtab_free(&r->sites);
	aggtab_free(&r->stacks);
	report_html_free(r);
}

/* OUTDIR_ALLOW_SHARED when --allow-shared-dir was given. */
static unsigned out_flags;

int cmd_report(int argc, char **argv)
{
	struct report r = { 0 };
	r.top = 20;
	const char *dir = NULL, *out = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("%s\n"
			       "  Allocations of a trace recorded with 'ringtrace record --mem', per call site:\n"
			       "  counts, bytes requested and allocated (usable), fragmentation, bytes still\n"
			       "  alive at exit (leaks, with their stacks), cross-CPU and cross-thread frees,\n"
			       "  and errors: unknown pointers, double frees, mismatched families\n"
			       "  (malloc/delete, new/free, new[]/delete), realloc of freed blocks. When events\n"
			       "  were lost, the leaks and errors a loss may have caused are shown as possible.\n"
			       "  --by KEY      callsite (default), stack (needs --stacks) or function\n"
			       "  --sort KEY    requested (default), allocated, allocs, frees, frag, leaked, xcpu\n"
			       "  --top N       rows to print (default 20, 0: all)\n"
			       "  --first-image when the program executed another in its process (a wrapper,\n"
			       "                sh -c 'exec ...'), the first one's report, not the last one's\n"
			       "  --json        one JSON object\n"
			       "  --html        one self-contained HTML page (needs -o): the heap over time,\n"
			       "                the rows by call site and by stack, flame graphs of the bytes\n"
			       "                allocated and of those alive at the peak, errors, event rates\n"
			       "  -o FILE       write the report to FILE instead of the standard output\n"
			       "                (under a temporary name, renamed into place at the end)\n"
			       "  --allow-shared-dir  write FILE even if its directory is another user's,\n"
			       "                or others may write into it (see docs/security.md)\n"
			       "  --debug-dir D separate debug files (D/.build-id/xx/yyyy.debug)\n",
			       report_usage);
			return 0;
		}
		if (!strcmp(a, "--json")) {
			r.json = 1;
			continue;
		}
		if (!strcmp(a, "--first-image")) {
			r.first_image = 1;
			continue;
		}
		if (!strcmp(a, "--html")) {
			r.html = 1;
			continue;
		}
		if (!strcmp(a, OUTDIR_ALLOW_OPT)) {
			out_flags = OUTDIR_ALLOW_SHARED;
			continue;
		}
		if (!strcmp(a, "--by") || !strcmp(a, "--sort") || !strcmp(a, "--top") || !strcmp(a, "--debug-dir") ||
		    !strcmp(a, "-o")) {
			if (!v) {
				fprintf(stderr, PFX "option '%s' needs a value\n", a);
				return 2;
			}
			i++;
			if (!strcmp(a, "--by")) {
				r.by = !strcmp(v, "callsite") ? 0 : !strcmp(v, "stack") ? 1 : !strcmp(v, "function") ? 2 : -1;
				if (r.by < 0) {
					fprintf(stderr, PFX "bad --by '%s' (callsite, stack or function)\n", v);
					return 2;
				}
			} else if (!strcmp(a, "--sort")) {
				static const char *const keys[] = { "requested", "allocs", "frees", "allocated",
								    "frag", "leaked", "xcpu" };
				r.sort = -1;
				for (int k = 0; k < 7; k++)
					if (!strcmp(v, keys[k]))
						r.sort = k;
				if (r.sort < 0) {
					fprintf(stderr, PFX "bad --sort '%s' (requested, allocated, allocs, frees, frag, leaked or xcpu)\n", v);
					return 2;
				}
			} else if (!strcmp(a, "--top")) {
				char *end;
				r.top = strtol(v, &end, 10);
				if (*end || end == v || r.top < 0) {
					fprintf(stderr, PFX "bad --top '%s' (a number, 0 for all)\n", v);
					return 2;
				}
			} else if (!strcmp(a, "-o")) {
				out = v;
			} else {
				r.debug_dir = v;
			}
			continue;
		}
		if (a[0] == '-' || dir) {
			fprintf(stderr, PFX "unexpected argument '%s' (try --help)\n", a);
			return 2;
		}
		dir = a;
	}
	if (!dir) {
		fprintf(stderr, PFX "%s", report_usage);
		return 2;
	}
	if (r.html && r.json) {
		fprintf(stderr, PFX "--html and --json: choose one\n");
		return 2;
	}
	if (r.html && !out) {
		fprintf(stderr, PFX "--html needs -o FILE.html (the page is one file)\n");
		return 2;
	}
	if (r.html && report_html_init(&r) < 0) {
		fprintf(stderr, PFX "out of memory\n");
		return 1;
	}
	/* A file is written under a temporary name and renamed over FILE at
	 * the end (util/outdir.h): a partial one never takes its place. */
	struct outfile of;
	FILE *o = stdout;
	char why[512];
	if (out) {
		o = outfile_fopen(&of, out, out_flags, why, sizeof(why));
		if (!o) {
			fprintf(stderr, PFX "cannot write '%s': %s\n", out, why);
			report_free(&r);
			return 2;
		}
	}
	int status = run_report(&r, dir, o);
	report_free(&r);
	if (out) {
		/* Nothing written (the trace could not be read): no file left. */
		long len = ftell(o);
		int k = 0;
		if (len == 0 && !of.direct)
			outfile_abort(&of);
		else
			k = outfile_commit(&of, 0);
		if (k < 0) {
			fprintf(stderr, PFX "cannot write '%s': %s\n", out, strerror(-k));
			return status ? status : 1;
		}
	}
	return status;
}

/*
 * `ringtrace mem [-o DIR] [--no-stacks] -- PROGRAM [ARGS]`: record with the
 * allocation tracer and stacks, then print the report. Our status is the
 * program's.
 */
int cmd_mem(int argc, char **argv)
{
	const char *outdir = NULL;
	int stacks = 1, i = 1, progress = PROGRESS_AUTO, seed_set = 0, drop = 0;
	uint64_t sample = 0, seed = 0;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: ringtrace mem [-o DIR] [--no-stacks] [--sample BYTES [--sample-seed N]] [--drop]\n"
			       "                     [--allow-shared-dir] [--progress|--quiet] -- PROGRAM [ARGS...]\n\n"
			       "  Run PROGRAM with every allocation traced (ringtrace record --mem --stacks),\n"
			       "  then print 'ringtrace report DIR'. The trace stays in DIR (default:\n"
			       "  ringtrace-mem-PROGRAM-DATE-TIME) for report --by stack|function, check, dump.\n"
			       "  --allow-shared-dir  as for record: DIR may be another user's, or one\n"
			       "                      others may write into (see docs/security.md)\n"
			       "  --progress          the status line while recording even when stderr is not a\n"
			       "                      terminal (one line a second there)\n"
			       "  --quiet, -q         no status line (by default: one on a terminal)\n"
			       "  --sample BYTES      record a Poisson sample of the allocations, one per BYTES\n"
			       "                      allocated on average (K, M, G); the report estimates\n"
			       "  --sample-seed N     the sampling's seed (decimal or 0x...; default: random)\n"
			       "  --drop              a full buffer drops the event instead of waiting for room\n"
			       "                      (speed first; what is lost is counted and the report marks\n"
			       "                      what it may have caused)\n");
			return 0;
		}
		if (!strcmp(a, "--no-stacks")) {
			stacks = 0;
		} else if (!strcmp(a, "--drop")) {
			drop = 1;
		} else if (!strcmp(a, "--progress")) {
			progress = PROGRESS_ON;
		} else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
			progress = PROGRESS_OFF;
		} else if (!strcmp(a, OUTDIR_ALLOW_OPT)) {
			out_flags = OUTDIR_ALLOW_SHARED;
		} else if (!strcmp(a, "-o") && i + 1 < argc) {
			outdir = argv[++i];
		} else if ((!strcmp(a, "--sample") || !strcmp(a, "--sample-seed")) && i + 1 < argc) {
			const char *v = argv[++i];
			if (a[8] ? cli_parse_seed("ringtrace mem", v, &seed) < 0 :
				   cli_parse_sample("ringtrace mem", v, &sample) < 0)
				return 2;
			seed_set |= a[8] != 0;
		} else if (a[0] == '-') {
			fprintf(stderr, "ringtrace mem: unknown option '%s' (try --help)\n", a);
			return 2;
		} else {
			break;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "ringtrace mem: no program to run (usage: ringtrace mem [-o DIR] -- PROGRAM [ARGS...])\n");
		return 2;
	}
	char defdir[PATH_MAX];
	if (!outdir) {
		const char *base = strrchr(argv[i], '/');
		base = base ? base + 1 : argv[i];
		char when[32];
		time_t now = time(NULL);
		struct tm tm;
		strftime(when, sizeof(when), "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
		snprintf(defdir, sizeof(defdir), "ringtrace-mem-%s-%s", base, when);
		outdir = defdir;
	}
	/* `record --mem [--stacks] -o DIR -- PROGRAM ARGS`, as options. */
	struct sess_opts o;
	char err[512];
	sess_opts_init(&o);
	o.memtrace = 1;
	o.stacks = stacks;
	o.outdir = outdir;
	o.outdir_flags = out_flags & OUTDIR_ALLOW_SHARED;
	o.argv = argv + i;
	o.sample = sample;
	o.sample_seed = seed;
	o.sample_seed_set = seed_set;
	if (drop)
		o.block_us = 0;
	if (sess_opts_finish(&o, err, sizeof(err)) < 0) {
		fprintf(stderr, "ringtrace mem: %s\n", err);
		return 2;
	}
	int status = record_with_opts(&o, progress);
	struct stat st;
	if (stat(outdir, &st) < 0)
		return status; /* record said why */
	fflush(NULL);
	struct report r = { 0 };
	r.top = 20;
	(void)run_report(&r, outdir, stdout);
	report_free(&r);
	return status;
}

/*
 * `ringtrace top PID [-d SECONDS] [-n COUNT] [--top N]`: the live heap of
 * a program recorded with `record --mem --aggregate`, by stack or call
 * site, biggest first, refreshed every SECONDS (default 1) like top(1):
 * the screen is redrawn on a terminal, otherwise each refresh is printed
 * after the last. Ends when the program does, after COUNT refreshes, or
 * on Ctrl-C.
 */
static volatile sig_atomic_t top_stop;

static void top_on_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

static void top_print(FILE *o, int pid, const struct memagg_header *h, long top, void *copy, size_t size,
		      int tty)
{
	struct stack_files sf = { 0 };
	char target[32];
	snprintf(target, sizeof(target), "%d", pid);
	/* The program's map and objects, copied now (a stack may be new). */
	int have_sf = stack_live_load(target, &sf) == 0;
	struct sym_ctx *ctx = have_sf ? frames_symbolizer(&sf, NULL) : NULL;
	struct report r = { 0 };
	r.has_stacks = h->by_stack && sf.nstacks > 0;
	merge_block(&r, copy, size, &sf, ctx);
	struct aggtab *rows = r.has_stacks ? &r.stacks : &r.sites;
	r.sort = SORT_LEAKED;
	name_rows(&r, rows, r.has_stacks, ctx);
	char b1[32], b2[32], b3[32];
	if (tty)
		fputs("\033[H\033[2J", o);
	fprintf(o, "ringtrace top: pid %d, %.1f s; heap %s requested (%s allocated), peak %s at %.1f s\n", pid,
		(double)(r.t_end_ns - r.t0_ns) / 1e9, cli_bytes(r.live_req, b1, sizeof(b1)),
		cli_bytes(r.live_usable, b2, sizeof(b2)), cli_bytes(r.peak_req, b3, sizeof(b3)),
		(double)r.peak_ns / 1e9);
	fprintf(o, "  %" PRIu64 " allocations (%" PRIu64 " failed), %" PRIu64 " frees, %" PRIu64 " blocks alive\n",
		r.allocs, r.failed, r.frees, r.live_n);
	char smp[128];
	if (r.sample_mean)
		fprintf(o, "  sampled: allocations exact (per call site), frees, heap and rows marked 'estimate' %s\n",
			report_sample_text(&r, smp, sizeof(smp)));
	fprintf(o, "%12s %9s %12s %10s %10s  %s\n", "LIVE", "BLOCKS", "PEAK", "ALLOCS", "FREES",
		r.has_stacks ? "STACK (allocator's caller)" : "SITE");
	size_t n = top > 0 && (size_t)top < rows->n ? (size_t)top : rows->n;
	for (size_t i = 0; i < n; i++) {
		const struct agg *a = &rows->v[i];
		fprintf(o, "%12" PRIu64 " %9" PRIu64 " %12" PRIu64 " %10" PRIu64 " %10" PRIu64 "  %s\n", a->live_req,
			a->live_n, a->peak, a->allocs, a->frees, a->name);
	}
	if (!tty)
		fputc('\n', o);
	fflush(o);
	if (ctx)
		sym_ctx_free(ctx);
	if (have_sf)
		stack_files_free(&sf);
	report_free(&r);
}

int cmd_top(int argc, char **argv)
{
	double delay = 1.0;
	long count = 0, top = 20;
	int pid = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: ringtrace top PID [-d SECONDS] [-n COUNT] [--top N]\n\n"
			       "  The live heap of a program run under 'ringtrace record --mem --aggregate'\n"
			       "  (with --stacks: by stack), biggest first: bytes alive, blocks, the key's\n"
			       "  peak, allocations and frees. Refreshed every SECONDS (default 1) until the\n"
			       "  program ends, COUNT refreshes were shown, or Ctrl-C.\n");
			return 0;
		}
		if (!strcmp(a, "-d") || !strcmp(a, "-n") || !strcmp(a, "--top")) {
			if (!v) {
				fprintf(stderr, "ringtrace top: option '%s' needs a value\n", a);
				return 2;
			}
			i++;
			if (!strcmp(a, "-d")) {
				delay = strtod(v, &end);
				if (*end || end == v || !(delay >= 0.01 && delay <= 3600)) {
					fprintf(stderr, "ringtrace top: bad -d '%s' (seconds, 0.01 to 3600)\n", v);
					return 2;
				}
			} else {
				long x = strtol(v, &end, 10);
				if (*end || end == v || x < 0) {
					fprintf(stderr, "ringtrace top: bad %s '%s' (a number)\n", a, v);
					return 2;
				}
				*(!strcmp(a, "-n") ? &count : &top) = x;
			}
			continue;
		}
		long x = strtol(a, &end, 10);
		if (a[0] == '-' || *end || end == a || x <= 0 || x > INT_MAX || pid) {
			fprintf(stderr, "ringtrace top: unexpected argument '%s' (usage: ringtrace top PID [-d SECONDS] [-n COUNT] [--top N])\n", a);
			return 2;
		}
		pid = (int)x;
	}
	if (!pid) {
		fprintf(stderr, "ringtrace top: which program? (usage: ringtrace top PID [-d SECONDS] [-n COUNT] [--top N])\n");
		return 2;
	}
	char err[256];
	size_t size;
	const struct memagg_header *h = agg_attach_pid(pid, &size, err, sizeof(err));
	if (!h) {
		fprintf(stderr, "ringtrace top: %s\n", err);
		return 1;
	}
	void *copy = malloc(size);
	if (!copy) {
		fprintf(stderr, "ringtrace top: out of memory\n");
		munmap((void *)h, size);
		return 1;
	}
	struct sigaction sa = { .sa_handler = top_on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int tty = isatty(STDOUT_FILENO);
	for (long shown = 0; !top_stop;) {
		int alive = kill(pid, 0) == 0 || errno == EPERM;
		/* A copy: the counters move while the rows are made. The end
		 * time is now, as the recorder sets it when it saves them. */
		memcpy(copy, h, size);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		((struct memagg_header *)copy)->end_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		top_print(stdout, pid, h, top, copy, size, tty);
		if (!alive || (count && ++shown >= count))
			break;
		struct timespec d = { (time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9) };
		while (!top_stop && nanosleep(&d, &d) < 0 && errno == EINTR)
			;
		if (kill(pid, 0) < 0 && errno == ESRCH) {
			/* Gone: its last counters, once. */
			memcpy(copy, h, size);
			top_print(stdout, pid, h, top, copy, size, tty);
			break;
		}
	}
	free(copy);
	munmap((void *)h, size);
	return 0;
}
