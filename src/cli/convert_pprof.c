/*
 * convert_pprof.c - `ringtrace convert DIR --to pprof -o FILE.pb.gz`: a
 * trace with stacks as a pprof profile (written by src/export/pprof.c),
 * for `pprof`, speedscope and the continuous-profiling services.
 *
 * Two profiles, chosen by what the trace declares:
 *
 *   allocations  a trace of `record --mem` (it has mem:alloc): Go's heap
 *                profile (alloc_objects, alloc_space, inuse_objects,
 *                inuse_space), one sample per allocating stack, through
 *                pprof_heap_profile(), which takes per-stack totals. The
 *                totals come from the one allocation replay
 *                (src/analyze/replay.h), so they mean what the report's
 *                do: "alloc" counts every block allocated (a realloc's
 *                new block included), "inuse" the blocks still live at
 *                the end of the trace. Without --stacks, the call site
 *                is a one-frame stack.
 *   events       any other trace: the sample type events/count, one
 *                sample per distinct stack and event name (the label
 *                "event"), its value the number of events that had it.
 *                Events of classes without a stack are left out (a
 *                comment in the profile counts them).
 *
 * Memory grows with the distinct stacks (and, for allocations, with the
 * blocks live at a point of the trace), never with the number of events.
 * Stacks are symbolised from the trace's maps and build ids once per
 * distinct address, by the writer. Prints its own errors, one line each.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/convert.h"
#include "analyze/frames.h"
#include "util/outdir.h"
#include "analyze/replay.h"
#include "export/pprof.h"
#include "read/format.h"
#include "read/reader.h"
#include "util/u64map.h"
#include "stackmap/stack_files.h"
#include "sym/symbolize.h"

#define PFX "ringtrace convert: "

/* What the converter uses of one event class, found at its first event. */
struct plan {
	int ready;
	int site, stack_id, stack;   /* field indexes, -1: none */
};

/* One distinct stack, by content. */
struct stk {
	uint64_t *ips;               /* return addresses, leaf first; NULL when n == 0 */
	uint32_t n;
	int64_t alloc_objects, alloc_bytes, inuse_objects, inuse_bytes;
	/* The objects as weights (REPLAY_W_ONE units): a sampled trace's
	 * estimates, rounded once per stack. */
	uint64_t w_alloc, w_inuse;
};

struct conv {
	const struct rd_meta *m;
	struct plan *plan;           /* per m->events[i] */
	struct stack_files sf;
	struct stk *st;
	size_t nst, capst;
	struct u64map st_by_hash;    /* hash of the addresses -> index (collisions: u64map_next_key) */
	struct u64map st_by_id;      /* stack id + 1 -> index */
	int heap;                    /* an allocation trace */
	struct u64map counts;        /* events: stack index * n_events + class -> count */
	struct replay rp;            /* allocations: the blocks, user = stack index */
	size_t cur_stack;            /*   the stack of the event being replayed */
	uint64_t events, with_stack, allocs;
	int64_t t0, t1;
	int have_t;
};

static int field_index(const struct rd_value *f, const char *name)
{
	for (uint32_t i = 0; f && i < f->sub.n; i++)
		if (f->sub.v[i].name && !strcmp(rd_display_name(f->sub.v[i].name), name))
			return (int)i;
	return -1;
}

static uint64_t fval(const struct rd_value *f, int i)
{
	return f && i >= 0 && (uint32_t)i < f->sub.n ? f->sub.v[i].u : 0;
}

static struct plan *plan_of(struct conv *c, const struct rd_item *it, size_t *ret_class)
{
	uintptr_t base = (uintptr_t)c->m->events, e = (uintptr_t)it->ec;
	if (e < base || e >= base + c->m->n_events * sizeof(*c->m->events))
		return NULL;
	size_t k = (e - base) / sizeof(*c->m->events);
	struct plan *p = &c->plan[k];
	*ret_class = k;
	if (p->ready)
		return p;
	p->ready = 1;
	const struct rd_value *f = it->fields;
	p->site = field_index(f, "site");
	p->stack_id = field_index(f, "stack_id");
	p->stack = field_index(f, "stack");
	return p;
}

/* ---- stacks ---------------------------------------------------------------------- */

/* The index of the stack ips[0..n-1], added if new; -ENOMEM. */
static long stack_intern(struct conv *c, const uint64_t *ips, uint32_t n)
{
	uint64_t key = rt_mix64(0x9e3779b97f4a7c15ull ^ n), *v;
	for (uint32_t i = 0; i < n; i++)
		key = rt_mix64(key ^ ips[i]);
	while ((v = u64map_get(&c->st_by_hash, key))) {
		const struct stk *s = &c->st[*v];
		if (s->n == n && (!n || !memcmp(s->ips, ips, n * sizeof(*ips))))
			return (long)*v;
		key = u64map_next_key(key);
	}
	if ((c->nst + 1) > c->capst) {
		size_t cap = c->capst ? c->capst * 2 : 256;
		struct stk *nv = realloc(c->st, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		c->st = nv;
		c->capst = cap;
	}
	struct stk s = { .n = n };
	if (n && !(s.ips = malloc(n * sizeof(*ips))))
		return -ENOMEM;
	if (n)
		memcpy(s.ips, ips, n * sizeof(*ips));
	if (!(v = u64map_put(&c->st_by_hash, key, NULL))) {
		free(s.ips);
		return -ENOMEM;
	}
	*v = c->nst;
	c->st[c->nst] = s;
	return (long)c->nst++;
}

static const struct stackmap_stack *stack_by_id(const struct stack_files *sf, uint32_t id)
{
	size_t lo = 0, hi = sf->nstacks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sf->stacks[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sf->nstacks && sf->stacks[lo].id == id ? &sf->stacks[lo] : NULL;
}

/* The stack of an event: its id in the trace's map, the addresses it
 * carries (the map was full), or for an allocation without stacks its
 * call site as a one-frame stack. An id the map does not have is the
 * empty stack (unknown). -1: the event has no stack; -ENOMEM. */
static long event_stack(struct conv *c, const struct plan *p, const struct rd_value *f, int mem)
{
	if (p->stack_id >= 0) {
		uint32_t id = (uint32_t)fval(f, p->stack_id);
		if (id == REPLAY_NO_STACK) {
			const struct rd_value *seq = p->stack >= 0 && (uint32_t)p->stack < f->sub.n ? &f->sub.v[p->stack] : NULL;
			uint64_t ips[STACKMAP_MAX_DEPTH];
			uint32_t n = rd_seq_len(seq);
			if (n == 0)
				return -1;   /* "no stack" (a free of the allocation tracer) */
			if (n > STACKMAP_MAX_DEPTH)
				n = STACKMAP_MAX_DEPTH;
			for (uint32_t k = 0; k < n; k++)
				ips[k] = seq->sub.v[k].u;
			return stack_intern(c, ips, n);
		}
		uint64_t *v = u64map_get(&c->st_by_id, (uint64_t)id + 1);
		if (v)
			return (long)*v;
		const struct stackmap_stack *s = stack_by_id(&c->sf, id);
		long k = s ? stack_intern(c, s->ips, s->depth) : stack_intern(c, NULL, 0);
		if (k < 0)
			return k;
		if (!(v = u64map_put(&c->st_by_id, (uint64_t)id + 1, NULL)))
			return -ENOMEM;
		*v = (uint64_t)k;
		return k;
	}
	if (mem && p->site >= 0) {
		uint64_t site = fval(f, p->site);
		return stack_intern(c, &site, site ? 1 : 0);
	}
	return -1;
}

/* ---- allocations: the shared replay (src/analyze/replay.h) ----------------------- */

/* A block allocated: counted on the stack of the event being replayed
 * (set by on_event before replay_item), which it keeps for "inuse". */
static int heap_alloc(void *arg, const struct replay_event *ev, struct replay_block *b)
{
	struct conv *c = arg;
	struct stk *st = &c->st[c->cur_stack];
	/* Weighted: a sampled trace's values scaled as Go's runtime scales
	 * its heap profile's (replay.h, "Sampling"); one each otherwise. */
	st->alloc_objects++;
	st->w_alloc += b->wn;
	st->alloc_bytes += (int64_t)(b->wsize > INT64_MAX ? INT64_MAX : b->wsize);
	b->user = (uint64_t)c->cur_stack;
	c->allocs++;
	return 0;
}

static const struct replay_ops heap_ops = { .alloc = heap_alloc };

/* ---- events ------------------------------------------------------------------------ */

static int on_event(struct conv *c, const struct rd_item *it)
{
	size_t cls;
	struct plan *p = plan_of(c, it, &cls);
	if (!p || !it->fields)
		return 0;
	if (it->ns_ok) {
		if (!c->have_t)
			c->t0 = it->ns;
		c->t1 = it->ns;
		c->have_t = 1;
	}
	if (c->heap) {
		const struct replay_class *mc = replay_item_class(&c->rp, it);
		if (!mc || mc->kind == RP_NONE)
			return 0;
		c->events++;
		c->with_stack++;
		/* A free's stack does not matter: a block stays its allocator's. */
		if (mc->kind != RP_FREE && mc->kind != RP_MUNMAP && mc->kind != RP_SAMPLING &&
		    mc->kind != RP_UNTRACKED) {
			long k = event_stack(c, p, it->fields, 1);
			if (k < 0)
				return k == -1 ? -EINVAL : (int)k;
			c->cur_stack = (size_t)k;
		}
		(void)replay_item(&c->rp, it);
		return c->rp.oom ? -ENOMEM : 0;
	}
	c->events++;
	long k = event_stack(c, p, it->fields, 0);
	if (k == -1)
		return 0;
	if (k < 0)
		return (int)k;
	c->with_stack++;
	uint64_t *n = u64map_put(&c->counts, (uint64_t)k * c->m->n_events + cls, NULL);
	if (!n)
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* ---- the profile ----------------------------------------------------------------- */

/*
 * The addresses pprof gets for a stack: the program's part (the frames of
 * the allocation tracer dropped, as the report does), each return address
 * made the address of its call. ips must hold STACKMAP_MAX_DEPTH.
 */
static size_t profile_stack(struct sym_ctx *ctx, const struct stk *s, uint64_t *ips)
{
	if (!s->n)
		return 0;
	uint32_t depth = s->n > STACKMAP_MAX_DEPTH ? STACKMAP_MAX_DEPTH : s->n;
	size_t n = 0;
	for (uint32_t i = frames_first(ctx, s->ips, depth); i < depth; i++)
		ips[n++] = s->ips[i] ? s->ips[i] - 1 : 0;
	return n;
}

static int add_events(struct conv *c, struct pprof *pp, struct sym_ctx *ctx)
{
	int r = pprof_add_sample_type(pp, "events", "count");
	if (r >= 0)
		r = pprof_set_period(pp, "events", "count", 1);
	size_t pos = 0;
	uint64_t key, count, ips[STACKMAP_MAX_DEPTH];
	while (r >= 0 && u64map_next(&c->counts, &pos, &key, &count)) {
		const struct stk *s = &c->st[key / c->m->n_events];
		const char *name = c->m->events[key % c->m->n_events].name;
		const struct pprof_label l = { .key = "event", .str = name && *name ? name : "(unnamed)" };
		int64_t v = (int64_t)count;
		r = pprof_add_sample(pp, ips, profile_stack(ctx, s, ips), &v, &l, 1);
	}
	return r < 0 ? r : 0;
}

static int add_heap(struct conv *c, struct pprof *pp, struct sym_ctx *ctx)
{
	for (size_t i = 0; i < c->rp.nblk; i++) {
		const struct replay_block *b = &c->rp.blk[i];
		if (!b->live)
			continue;
		struct stk *s = &c->st[b->user];
		s->w_inuse += b->wn;
		s->inuse_bytes += (int64_t)(b->wsize > INT64_MAX ? INT64_MAX : b->wsize);
	}
	/* Each stack's addresses, all in one array. */
	size_t n = 0;
	for (size_t i = 0; i < c->nst; i++)
		n += c->st[i].alloc_objects != 0;
	struct pprof_heap_stack *hs = calloc(n ? n : 1, sizeof(*hs));
	uint64_t *ips = calloc(n ? n : 1, STACKMAP_MAX_DEPTH * sizeof(*ips));
	int r = hs && ips ? 0 : -ENOMEM;
	for (size_t i = 0, k = 0; !r && i < c->nst; i++) {
		const struct stk *s = &c->st[i];
		if (!s->alloc_objects)
			continue;
		hs[k].addrs = &ips[k * STACKMAP_MAX_DEPTH];
		hs[k].n = profile_stack(ctx, s, &ips[k * STACKMAP_MAX_DEPTH]);
		hs[k].alloc_objects = (int64_t)((s->w_alloc + REPLAY_W_ONE / 2) >> REPLAY_W_SHIFT);
		hs[k].alloc_bytes = s->alloc_bytes;
		hs[k].inuse_objects = (int64_t)((s->w_inuse + REPLAY_W_ONE / 2) >> REPLAY_W_SHIFT);
		hs[k].inuse_bytes = s->inuse_bytes;
		k++;
	}
	if (!r)
		/* Go's period of a heap profile: its sampling rate in bytes. */
		r = pprof_heap_profile(pp, hs, n, c->rp.sample_mean ? (int64_t)c->rp.sample_mean : 1);
	free(hs);
	free(ips);
	return r;
}

static int comment(struct pprof *pp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int comment(struct pprof *pp, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return pprof_add_comment(pp, line);
}

static int build(struct conv *c, struct pprof *pp, const char *dir, const char *debug_dir)
{
	/* The main program first: pprof takes the first mapping for it. */
	for (int main_pass = 1; main_pass >= 0; main_pass--)
		for (size_t i = 0; i < c->sf.nmaps; i++) {
			const struct rt_map *m = &c->sf.maps[i];
			if (m->start >= m->end || !!(m->flags & RT_MAP_MAIN) != main_pass)
				continue;
			/* pprof's file offset of `start`: its link-time address,
			 * which is the file offset for the usual layouts of
			 * shared objects and position-independent programs. */
			int r = pprof_add_mapping(pp, m->start, m->end, m->start - m->bias, m->path,
						  m->build_id[0] ? m->build_id : NULL);
			if (r == -ENOMEM)
				return r;
		}
	struct sym_ctx *ctx = frames_symbolizer(&c->sf, debug_dir);
	int r = ctx ? pprof_use_symbols(pp, ctx) : 0;
	if (!r)
		r = c->heap ? add_heap(c, pp, ctx) : add_events(c, pp, ctx);
	if (c->have_t)
		pprof_set_time(pp, c->t0, c->t1 - c->t0);
	if (!r)
		r = comment(pp, "ringtrace " RINGTRACE_VERSION " %s profile of %s", c->heap ? "allocation" : "events",
			    dir);
	if (!r && c->heap && !c->rp.sample_mean)
		r = comment(pp, "every allocation counted (not sampled); inuse = still live at the end of the trace");
	if (!r && c->heap && c->rp.sample_mean)
		r = comment(pp,
			    "sampled: one allocation per %" PRIu64 " bytes on average (Poisson over bytes, the period); "
			    "values are estimates, each sample of s bytes scaled by 1/(1-exp(-s/%" PRIu64
			    ")) as Go's runtime does; inuse = samples still live at the end of the trace",
			    c->rp.sample_mean, c->rp.sample_mean);
	if (!r && c->events > c->with_stack)
		r = comment(pp, "%" PRIu64 " of %" PRIu64 " events had no stack and are not in the profile",
			    c->events - c->with_stack, c->events);
	/* Written before the context goes: the writer symbolised through it. */
	sym_ctx_free(ctx);
	return r;
}

static int write_profile(struct pprof *pp, const char *path, unsigned out_flags)
{
	char why[512];
	struct outfile of;
	FILE *f = outfile_fopen(&of, path, out_flags, why, sizeof(why));
	if (!f) {
		fprintf(stderr, PFX "cannot create '%s': %s\n", path, why);
		return -1;
	}
	int r = pprof_write(pp, f);
	if (!r && fflush(f) != 0)
		r = errno ? -errno : -EIO;
	if (r < 0) {
		outfile_abort(&of);
	} else {
		r = outfile_commit(&of, 0);
	}
	if (r < 0) {
		fprintf(stderr, PFX "cannot write '%s': %s\n", path, strerror(-r));
		return -1;
	}
	return 0;
}

static int has_class(const struct rd_meta *m, const char *name)
{
	for (size_t i = 0; i < m->n_events; i++)
		if (m->events[i].name && !strcmp(m->events[i].name, name))
			return 1;
	return 0;
}

static int has_stack_field(const struct rd_meta *m)
{
	for (size_t i = 0; i < m->n_events; i++) {
		const struct rd_type *f = m->events[i].fields;
		for (uint32_t k = 0; f && f->kind == RD_STRUCT && k < f->n_members; k++)
			if (f->members[k].name && !strcmp(rd_display_name(f->members[k].name), "stack_id"))
				return 1;
	}
	return 0;
}

static void conv_free(struct conv *c)
{
	for (size_t i = 0; i < c->nst; i++)
		free(c->st[i].ips);
	free(c->st);
	free(c->plan);
	stack_files_free(&c->sf);
	u64map_free(&c->st_by_hash);
	u64map_free(&c->st_by_id);
	u64map_free(&c->counts);
	replay_free(&c->rp);
}

int convert_pprof(const char *dir, const char *out, unsigned out_flags, const char *debug_dir)
{
	char err[1024];
	struct rd_trace *t;
	if (rd_trace_open(dir, &t, err, sizeof(err)) < 0) {
		fprintf(stderr, PFX "%s: %s\n", dir, err);
		return 1;
	}
	struct conv c;
	memset(&c, 0, sizeof(c));
	/* The symboliser wants it absolute; a typo should not silently give
	 * a profile without symbols. */
	char *abs_debug = NULL;
	if (debug_dir && !(abs_debug = realpath(debug_dir, NULL))) {
		fprintf(stderr, PFX "cannot use --debug-dir '%s': %s\n", debug_dir, strerror(errno));
		rd_trace_close(t);
		return 1;
	}
	c.m = rd_trace_meta(t);
	c.heap = has_class(c.m, "mem:alloc");
	struct pprof *pp = NULL;
	int status = 1, k = stack_files_read(dir, &c.sf);
	/* Stack ids need the map; an allocation trace without stacks has
	 * its call sites, which need only the maps (when there). */
	if (k < 0 && !(k == -ENOENT && !has_stack_field(c.m))) {
		fprintf(stderr, PFX "%s/stacks: %s\n", dir,
			k == -ENOENT ? "missing: the stack ids cannot be resolved" : strerror(-k));
		goto out;
	}
	c.plan = calloc(c.m->n_events ? c.m->n_events : 1, sizeof(*c.plan));
	if (!c.plan || pprof_new(&pp) < 0 || (c.heap && replay_init(&c.rp, c.m, 0, &heap_ops, &c) < 0)) {
		fprintf(stderr, PFX "%s: out of memory\n", dir);
		goto out;
	}
	status = 0;
	struct rd_item it;
	int r;
	while ((r = rd_trace_next(t, &it)) > 0) {
		if (it.kind == RD_ITEM_EVENT && on_event(&c, &it) < 0) {
			fprintf(stderr, PFX "%s: out of memory\n", dir);
			status = 1;
			goto out;
		}
	}
	if (r < 0) {
		fprintf(stderr, PFX "%s: %s (the profile covers the events before it)\n", dir, rd_trace_errmsg(t));
		status = 1;
	}
	k = build(&c, pp, dir, abs_debug);
	if (k < 0) {
		fprintf(stderr, PFX "%s: %s\n", dir, strerror(-k));
		status = 1;
		goto out;
	}
	if (write_profile(pp, out, out_flags) < 0) {
		status = 1;
		goto out;
	}
	if (c.heap && !c.allocs)
		fprintf(stderr, PFX "%s has no allocations: wrote an empty profile to '%s'\n", dir, out);
	else if (!c.heap && !c.with_stack)
		fprintf(stderr, PFX "%s has no events with a stack%s: wrote an empty profile to '%s'\n", dir,
			has_stack_field(c.m) ? "" : " (record with --stacks)", out);
out:
	free(abs_debug);
	pprof_free(pp);
	conv_free(&c);
	rd_trace_close(t);
	return status;
}
