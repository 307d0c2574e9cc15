/*
 * cmd_convert.c - `ringtrace convert DIR --to chrome|sqlite -o FILE` and
 * `ringtrace convert DIR --folded [--weight events|bytes] [-o FILE]`:
 * a trace in the formats other tools read.
 *
 *   --to chrome  Chrome's trace-event JSON (the Perfetto UI and
 *                chrome://tracing open it): one instant per event on its
 *                thread, begin/end pairs as slices, heap counters for
 *                allocation traces, thread names, losses. docs/convert.md
 *                gives the conventions.
 *   --folded     "frame;frame;...;frame COUNT" per distinct stack, root
 *                first (flamegraph.pl, speedscope), weighted by events or
 *                by bytes allocated.
 *   --to sqlite  convert_sqlite() (convert.h), in a file of its own.
 *   --to pprof   convert_pprof() (convert.h), in a file of its own.
 *
 * Built for traces larger than memory: the JSON is written while the trace
 * is read. What grows is the table of live heap blocks (one entry per block
 * alive at that point of the trace: the report's replay, analyze/replay.h,
 * without the freed blocks it keeps to find double frees), one entry
 * per thread (its name and its open slices, at most SLICE_DEPTH_MAX), and
 * for --folded one counter per distinct stack. Everything the trace holds
 * is untrusted (reader.h): names and strings are escaped, invalid UTF-8
 * is written as \u00XX escapes, so the output is valid JSON whatever the
 * input; a trace damaged midway gives what was read before it, a closed
 * array, one line on stderr and status 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/frames.h"
#include "analyze/replay.h"
#include "util/utf8.h"
#include "cli/cli.h"
#include "cli/convert.h"
#include "util/buf.h"
#include "read/format.h"
#include "read/reader.h"
#include "util/u64map.h"
#include "stackmap/stack_files.h"
#include "util/outdir.h"
#include "sym/symbolize.h"

#define PFX "ringtrace convert: "
#define STACK_NONE 0xffffffffu
#define SLICE_DEPTH_MAX 256          /* open slices per thread; deeper begins are instants */
#define FLUSH_AT (256u * 1024)

static void usage(FILE *f)
{
	fprintf(f, "usage: ringtrace convert DIR --to chrome|sqlite|pprof -o FILE\n"
		   "       ringtrace convert DIR --folded [--weight events|bytes] [-o FILE]\n"
		   "  --to chrome      Chrome trace-event JSON (Perfetto UI, chrome://tracing);\n"
		   "                   -o - or no -o: standard output\n"
		   "  --to sqlite      an SQLite database (-o required)\n"
		   "  --to pprof       a gzipped pprof profile (-o required): allocations of a --mem\n"
		   "                   trace, else events per stack; needs a trace with stacks\n"
		   "  --folded         'frame;frame;...;frame COUNT' per distinct stack, root first\n"
		   "                   (flamegraph.pl, speedscope); needs a trace recorded with stacks\n"
		   "  --weight W       with --folded: events (default), or bytes allocated (--mem traces)\n"
		   "  -o FILE          where to write (default: standard output, except sqlite)\n"
		   "  --debug-dir D    separate debug files (.build-id/xx/yyyy.debug), for --folded, pprof\n"
		   "  --allow-shared-dir  write FILE even if its directory is another user's, or\n"
		   "                   others may write into it (see docs/security.md)\n"
		   "FILE is written under a temporary name and renamed into place at the end.\n"
		   "See docs/convert.md.\n");
}

/* ---- output ------------------------------------------------------------------- */

/* OUTDIR_ALLOW_SHARED when --allow-shared-dir was given. */
static unsigned out_flags;

struct sink {
	FILE *f;
	struct outfile of;           /* a file: written as a temporary, renamed at the end */
	int is_file;
	const char *path;            /* for messages: the file, or "standard output" */
	struct ctf_buf b;
	int err;                     /* errno of the first failed write, or ENOMEM */
};

static void sink_flush(struct sink *s)
{
	if (s->b.err && !s->err)
		s->err = ENOMEM;
	if (!s->err && s->b.len && fwrite(s->b.data, 1, s->b.len, s->f) != s->b.len)
		s->err = errno ? errno : EIO;
	ctf_buf_reset(&s->b);
}

static void sink_maybe_flush(struct sink *s)
{
	if (s->b.len >= FLUSH_AT || s->b.err)
		sink_flush(s);
}

/* Open `path` ("-" or NULL: stdout). 0, or -1 after a message. */
static int sink_open(struct sink *s, const char *path)
{
	memset(s, 0, sizeof(*s));
	ctf_buf_init(&s->b);
	if (!path || !strcmp(path, "-")) {
		s->f = stdout;
		s->path = "standard output";
		return 0;
	}
	char why[512];
	s->path = path;
	s->f = outfile_fopen(&s->of, path, out_flags, why, sizeof(why));
	if (!s->f) {
		fprintf(stderr, PFX "cannot create '%s': %s\n", path, why);
		ctf_buf_free(&s->b);
		return -1;
	}
	s->is_file = 1;
	return 0;
}

/* Flush and close. 0, or -1 after a message. */
static int sink_close(struct sink *s)
{
	sink_flush(s);
	if (fflush(s->f) != 0 && !s->err)
		s->err = errno ? errno : EIO;
	if (s->is_file && s->err) {
		outfile_abort(&s->of);
	} else if (s->is_file) {
		int k = outfile_commit(&s->of, 0);
		if (k < 0)
			s->err = -k;
	}
	ctf_buf_free(&s->b);
	if (s->err) {
		fprintf(stderr, PFX "cannot write %s: %s\n", s->path, strerror(s->err));
		return -1;
	}
	return 0;
}

/* ---- JSON --------------------------------------------------------------------- */

/* A JSON string: escapes for '"', '\\' and control bytes; a byte that is
 * not part of valid UTF-8 becomes \u00XX (its Latin-1 reading). */
static void json_str(struct ctf_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	ctf_buf_putc(b, '"');
	for (size_t i = 0; i < n;) {
		unsigned c = p[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			size_t k = i + 1;
			while (k < n && p[k] >= 0x20 && p[k] < 0x7f && p[k] != '"' && p[k] != '\\')
				k++;
			ctf_buf_add(b, p + i, k - i);
			i = k;
			continue;
		}
		if (c == '"' || c == '\\') {
			ctf_buf_putc(b, '\\');
			ctf_buf_putc(b, (char)c);
			i++;
			continue;
		}
		size_t l = c >= 0x80 ? utf8_len(p + i, n - i) : 0;
		if (l) {
			ctf_buf_add(b, p + i, l);
			i += l;
			continue;
		}
		char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
		ctf_buf_add(b, e, sizeof(e));
		i++;
	}
	ctf_buf_putc(b, '"');
}

static void json_cstr(struct ctf_buf *b, const char *s)
{
	json_str(b, s ? s : "", s ? strlen(s) : 0);
}

static void json_u64(struct ctf_buf *b, uint64_t v)
{
	rd_format_uint(b, v, 1);
}

static void json_i64(struct ctf_buf *b, int64_t v)
{
	if (v < 0) {
		ctf_buf_putc(b, '-');
		rd_format_uint(b, (uint64_t)0 - (uint64_t)v, 1);
	} else {
		rd_format_uint(b, (uint64_t)v, 1);
	}
}

/* Is member i of struct type t the length of a later sequence? (`dump`
 * does not show those either.) */
static int is_length_member(const struct rd_type *t, uint32_t i)
{
	const char *name = t->members[i].name;
	for (uint32_t k = i + 1; name && k < t->n_members; k++) {
		const struct rd_type *mt = t->members[k].type;
		if (mt->kind == RD_SEQ && mt->ref && !strcmp(mt->ref, name))
			return 1;
	}
	return 0;
}

/* A decoded value as JSON: integers as numbers (hexadecimal ones, pointers
 * included, as "0x..." strings, as dump prints them), floats as numbers
 * (non-finite ones as strings), enums as their label, arrays as arrays,
 * structs as objects, variants as their selected option. Depth is bounded
 * by the type's (RD_TYPE_DEPTH). */
static void json_value(struct ctf_buf *b, const struct rd_value *v)
{
	const struct rd_type *t = v->type;
	if (!t) {
		ctf_buf_puts(b, "null");
		return;
	}
	switch (t->kind) {
	case RD_INT:
		if (t->base == 16 || t->base == 8 || t->base == 2) {
			ctf_buf_putc(b, '"');
			rd_format_value(b, v);
			ctf_buf_putc(b, '"');
		} else if (t->is_signed) {
			json_i64(b, (int64_t)v->u);
		} else {
			json_u64(b, v->u);
		}
		return;
	case RD_ENUM: {
		const char *l = rd_enum_label(t, v->u);
		if (l)
			json_cstr(b, l);
		else if (t->is_signed)
			json_i64(b, (int64_t)v->u);
		else
			json_u64(b, v->u);
		return;
	}
	case RD_FLOAT:
		if (isfinite(v->f))
			rd_format_double(b, v->f, t->size == 32);
		else
			json_cstr(b, isnan(v->f) ? "nan" : v->f > 0 ? "inf" : "-inf");
		return;
	case RD_STRING:
		json_str(b, v->str.s ? v->str.s : "", v->str.s ? v->str.len : 0);
		return;
	case RD_STRUCT: {
		int first = 1;
		ctf_buf_putc(b, '{');
		for (uint32_t i = 0; i < v->sub.n && i < t->n_members; i++) {
			if (is_length_member(t, i))
				continue;
			if (!first)
				ctf_buf_putc(b, ',');
			first = 0;
			json_cstr(b, rd_display_name(v->sub.v[i].name));
			ctf_buf_putc(b, ':');
			json_value(b, &v->sub.v[i]);
		}
		ctf_buf_putc(b, '}');
		return;
	}
	case RD_VARIANT:
		if (v->sub.n == 1)
			json_value(b, &v->sub.v[0]);
		else
			ctf_buf_puts(b, "null");
		return;
	case RD_ARRAY:
	case RD_SEQ:
		ctf_buf_putc(b, '[');
		for (uint32_t i = 0; i < v->sub.n; i++) {
			if (i)
				ctf_buf_putc(b, ',');
			json_value(b, &v->sub.v[i]);
		}
		ctf_buf_putc(b, ']');
		return;
	default:
		ctf_buf_puts(b, "null");
		return;
	}
}

/* Microseconds with nanosecond precision, exactly (no double rounding). */
static void json_us(struct ctf_buf *b, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	if (ns < 0)
		ctf_buf_putc(b, '-');
	rd_format_uint(b, a / 1000, 1);
	ctf_buf_putc(b, '.');
	rd_format_uint(b, a % 1000, 3);
}

/* ---- event classes -------------------------------------------------------------- */

enum role { R_INSTANT, R_BEGIN, R_END, R_SKIP };

/* What the converter does with one event class. */
struct plan {
	int ready;                   /* fields located (at its first event) */
	int role;                    /* enum role */
	uint32_t pair;               /* R_BEGIN/R_END: index of the begin class */
	size_t prefix;               /* length of the slice's name ("p:x" of "p:x_begin") */
	size_t cat;                  /* length of the provider */
	int stack_id, stack;         /* member indexes, -1: absent */
};

struct classes {
	const struct rd_meta *m;
	struct plan *p;              /* one per m->events[i] */
	size_t n;
};

static const char *const pair_suffix[][2] = { { "_begin", "_end" }, { "_entry", "_exit" } };

static int ends_with(const char *s, size_t n, const char *suf)
{
	size_t k = strlen(suf);
	return n >= k && !memcmp(s + n - k, suf, k);
}

static const struct rd_meta *g_sort_meta;

static int cmp_class_name(const void *a, const void *b)
{
	const char *x = g_sort_meta->events[*(const uint32_t *)a].name;
	const char *y = g_sort_meta->events[*(const uint32_t *)b].name;
	return strcmp(x ? x : "", y ? y : "");
}

/* The class named `name`, by binary search of the sorted index; -1. */
static long find_class(const struct rd_meta *m, const uint32_t *idx, size_t n, const char *name)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *x = m->events[idx[mid]].name;
		int c = strcmp(x ? x : "", name);
		if (c < 0)
			lo = mid + 1;
		else if (c > 0)
			hi = mid;
		else
			return idx[mid];
	}
	return -1;
}

/*
 * One plan per class; begin/end roles from the names: "p:x_begin" with
 * "p:x_end" (or "_entry" with "_exit") in the same metadata are a pair,
 * the slice "p:x". A "_begin" without its "_end" stays an instant.
 */
static int classes_init(struct classes *c, const struct rd_meta *m)
{
	c->m = m;
	c->n = m->n_events;
	c->p = calloc(c->n ? c->n : 1, sizeof(*c->p));
	uint32_t *idx = calloc(c->n ? c->n : 1, sizeof(*idx));
	if (!c->p || !idx) {
		free(idx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n; i++) {
		const char *name = m->events[i].name ? m->events[i].name : "";
		const char *colon = strchr(name, ':');
		c->p[i].cat = colon ? (size_t)(colon - name) : 0;
		c->p[i].prefix = strlen(name);
		if (!strcmp(name, "ringtrace:thread") || !strcmp(name, "ringtrace:thread_name"))
			c->p[i].role = R_SKIP;
		idx[i] = (uint32_t)i;
	}
	g_sort_meta = m;
	if (c->n > 1)
		qsort(idx, c->n, sizeof(*idx), cmp_class_name);
	char want[512];
	for (size_t i = 0; i < c->n; i++) {
		const char *name = m->events[i].name ? m->events[i].name : "";
		size_t len = strlen(name);
		for (size_t s = 0; s < sizeof(pair_suffix) / sizeof(pair_suffix[0]); s++) {
			const char *bs = pair_suffix[s][0], *es = pair_suffix[s][1];
			if (c->p[i].role != R_INSTANT || !ends_with(name, len, bs))
				continue;
			size_t pre = len - strlen(bs);
			if (pre == 0 || pre + strlen(es) + 1 > sizeof(want))
				continue;
			memcpy(want, name, pre);
			strcpy(want + pre, es);
			long e = find_class(m, idx, c->n, want);
			if (e < 0 || c->p[e].role != R_INSTANT)
				continue;
			c->p[i].role = R_BEGIN;
			c->p[e].role = R_END;
			c->p[i].pair = c->p[e].pair = (uint32_t)i;
			c->p[i].prefix = c->p[e].prefix = pre;
		}
	}
	free(idx);
	return 0;
}

static int field_index(const struct rd_value *f, const char *name)
{
	for (uint32_t i = 0; f && i < f->sub.n; i++)
		if (f->sub.v[i].name && !strcmp(rd_display_name(f->sub.v[i].name), name))
			return (int)i;
	return -1;
}

static struct plan *plan_of(struct classes *c, const struct rd_item *it)
{
	uintptr_t base = (uintptr_t)c->m->events, e = (uintptr_t)it->ec;
	if (e < base || e >= base + c->n * sizeof(*c->m->events))
		return NULL;
	struct plan *p = &c->p[(e - base) / sizeof(*c->m->events)];
	if (p->ready)
		return p;
	p->ready = 1;
	const struct rd_value *f = it->fields;
	p->stack_id = field_index(f, "stack_id");
	p->stack = field_index(f, "stack");
	return p;
}

static uint64_t fval(const struct rd_value *f, int i)
{
	return f && i >= 0 && (uint32_t)i < f->sub.n ? f->sub.v[i].u : 0;
}

/* ---- threads ---------------------------------------------------------------------- */

struct thread {
	uint32_t tid;
	int used;
	char comm[64];               /* the name last written for it */
	uint32_t *open;              /* pair ids of its open slices, innermost last */
	uint32_t depth, cap;
};

struct threads {
	struct thread *v;
	size_t n, cap;
};

static struct thread *thread_get(struct threads *t, uint32_t tid, int *ret_new)
{
	*ret_new = 0;
	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct thread *nv = calloc(cap, sizeof(*nv));
		if (!nv)
			return NULL;
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->v[i].used)
				continue;
			size_t j = rt_mix64(t->v[i].tid) & (cap - 1);
			while (nv[j].used)
				j = (j + 1) & (cap - 1);
			nv[j] = t->v[i];
		}
		free(t->v);
		t->v = nv;
		t->cap = cap;
	}
	size_t j = rt_mix64(tid) & (t->cap - 1);
	while (t->v[j].used && t->v[j].tid != tid)
		j = (j + 1) & (t->cap - 1);
	if (!t->v[j].used) {
		t->v[j].used = 1;
		t->v[j].tid = tid;
		t->n++;
		*ret_new = 1;
	}
	return &t->v[j];
}

static void threads_free(struct threads *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->v[i].open);
	free(t->v);
}

/* ---- --to chrome ------------------------------------------------------------------- */

struct chrome {
	struct sink out;
	struct classes cls;
	struct threads thr;
	struct replay heap;          /* live blocks only: the counters' figures */
	int64_t pid;
	int64_t t0, last;            /* ns of the first item; of the last one written */
	int have_t0;
	int first;                   /* no event written yet (no comma) */
	int heap_started;
	uint64_t events, slices, unmatched, lost_events, lost_packets, counters;
};

/* `,\n{"name":NAME,"cat":CAT,"ph":"P",["s":"S",]"ts":TS,"pid":P,"tid":T` */
static void ev_open(struct chrome *c, const char *name, size_t name_len, const char *cat, size_t cat_len,
		    char ph, char scope, int64_t ns, int64_t tid)
{
	struct ctf_buf *b = &c->out.b;
	ctf_buf_puts(b, c->first ? "\n{\"name\":" : ",\n{\"name\":");
	c->first = 0;
	json_str(b, name, name_len);
	ctf_buf_puts(b, ",\"cat\":");
	json_str(b, cat, cat_len);
	ctf_buf_puts(b, ",\"ph\":\"");
	ctf_buf_putc(b, ph);
	if (scope) {
		ctf_buf_puts(b, "\",\"s\":\"");
		ctf_buf_putc(b, scope);
	}
	ctf_buf_puts(b, "\",\"ts\":");
	json_us(b, ns - c->t0);
	ctf_buf_puts(b, ",\"pid\":");
	json_i64(b, c->pid);
	ctf_buf_puts(b, ",\"tid\":");
	json_i64(b, tid);
}

static void meta_name(struct chrome *c, const char *what, int64_t tid, const char *name)
{
	struct ctf_buf *b = &c->out.b;
	ctf_buf_puts(b, c->first ? "\n{\"name\":\"" : ",\n{\"name\":\"");
	c->first = 0;
	ctf_buf_puts(b, what);
	ctf_buf_puts(b, "\",\"ph\":\"M\",\"ts\":0,\"pid\":");
	json_i64(b, c->pid);
	ctf_buf_puts(b, ",\"tid\":");
	json_i64(b, tid);
	ctf_buf_puts(b, ",\"args\":{\"name\":");
	json_cstr(b, name);
	ctf_buf_puts(b, "}}");
}

static void counter(struct chrome *c, const char *name, int64_t ns, uint32_t tid, uint64_t v)
{
	ev_open(c, name, strlen(name), "mem", 3, 'C', 0, ns, tid);
	ctf_buf_puts(&c->out.b, ",\"args\":{\"bytes\":");
	json_u64(&c->out.b, v);
	ctf_buf_puts(&c->out.b, "}}");
	c->counters++;
}

/* The thread's name once, before its first event, and again if it
 * changes (a rename announced in the trace). */
static struct thread *chrome_thread(struct chrome *c, const struct rd_item *it)
{
	int fresh;
	struct thread *th = thread_get(&c->thr, it->tid, &fresh);
	if (!th)
		return NULL;
	const char *comm = it->comm ? it->comm : it->tid ? "<...>" : "(unknown thread)";
	if (fresh || strncmp(th->comm, comm, sizeof(th->comm) - 1)) {
		snprintf(th->comm, sizeof(th->comm), "%s", comm);
		meta_name(c, "thread_name", it->tid, th->comm);
	}
	return th;
}

static int chrome_event(struct chrome *c, const struct rd_item *it)
{
	struct plan *p = plan_of(&c->cls, it);
	if (!p)
		return -EINVAL;
	if (p->role == R_SKIP)
		return 0;
	struct thread *th = chrome_thread(c, it);
	if (!th)
		return -ENOMEM;
	int64_t ns = it->ns_ok ? it->ns : c->last;
	const char *name = it->ec->name ? it->ec->name : "";
	size_t name_len = strlen(name);
	char ph = 'i';
	if (p->role == R_BEGIN && th->depth < SLICE_DEPTH_MAX) {
		if (th->depth == th->cap) {
			uint32_t cap = th->cap ? th->cap * 2 : 8;
			uint32_t *v = realloc(th->open, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			th->open = v;
			th->cap = cap;
		}
		th->open[th->depth++] = p->pair;
		ph = 'B';
		name_len = p->prefix;
		c->slices++;
	} else if (p->role == R_END) {
		/* Only the innermost open slice may end: anything else would
		 * not nest, and Chrome closes the innermost whatever the name. */
		if (th->depth && th->open[th->depth - 1] == p->pair) {
			th->depth--;
			ph = 'E';
			name_len = p->prefix;
		} else {
			c->unmatched++;
		}
	}
	ev_open(c, name, name_len, name, p->cat, ph, ph == 'i' ? 't' : 0, ns, it->tid);
	ctf_buf_puts(&c->out.b, ",\"args\":");
	if (it->fields && it->fields->type && it->fields->type->kind == RD_STRUCT)
		json_value(&c->out.b, it->fields);
	else
		ctf_buf_puts(&c->out.b, "{}");
	ctf_buf_putc(&c->out.b, '}');
	c->events++;
	c->last = ns;

	const struct replay_class *mc = replay_item_class(&c->heap, it);
	if (mc && mc->kind != RP_NONE) {
		/* Weighted: a sampled trace's heap is an estimate (replay.h). */
		uint64_t req = c->heap.w_live_req, usable = c->heap.w_live_usable, pages = c->heap.live_pages;
		(void)replay_item(&c->heap, it);
		if (c->heap.oom)
			return -ENOMEM;
		/* Both heap counters start at the first mem:* event. */
		int start = !c->heap_started;
		c->heap_started = 1;
		if (req != c->heap.w_live_req || start)
			counter(c, "heap requested", ns, it->tid, c->heap.w_live_req);
		if (usable != c->heap.w_live_usable || start)
			counter(c, "heap allocated", ns, it->tid, c->heap.w_live_usable);
		if (pages != c->heap.live_pages)
			counter(c, "mapped pages", ns, it->tid, c->heap.live_pages);
	}
	return 0;
}

static void chrome_loss(struct chrome *c, const struct rd_item *it)
{
	int ev = it->kind == RD_ITEM_LOST_EVENTS;
	int64_t ns = it->ns_ok ? it->ns : it->end_ok ? it->end_ns : c->last;
	const char *name = ev ? "lost events" : "lost packets";
	ev_open(c, name, strlen(name), "ringtrace", 9, 'i', 'p', ns, c->pid);
	struct ctf_buf *b = &c->out.b;
	ctf_buf_puts(b, ",\"args\":{\"count\":");
	json_u64(b, it->count);
	ctf_buf_puts(b, ",\"cpu\":");
	json_u64(b, it->cpu);
	if (it->has_begin && it->ns_ok) {
		ctf_buf_puts(b, ",\"from_us\":");
		json_us(b, it->ns - c->t0);
	}
	if (it->end_ok) {
		ctf_buf_puts(b, ",\"until_us\":");
		json_us(b, it->end_ns - c->t0);
	}
	ctf_buf_puts(b, "}}");
	if (ev)
		c->lost_events += it->count;
	else
		c->lost_packets += it->count;
	c->last = ns;
}

static const char *env_str(const struct rd_meta *m, const char *key)
{
	const struct rd_env *e = rd_meta_env(m, key);
	return e && e->str ? e->str : NULL;
}

static int convert_chrome(const char *dir, const char *out_path)
{
	char err[1024];
	struct rd_trace *t;
	if (rd_trace_open(dir, &t, err, sizeof(err)) < 0) {
		fprintf(stderr, PFX "%s: %s\n", dir, err);
		return 1;
	}
	struct chrome c;
	memset(&c, 0, sizeof(c));
	c.first = 1;
	if (sink_open(&c.out, out_path) < 0) {
		rd_trace_close(t);
		return 1;
	}
	const struct rd_meta *m = rd_trace_meta(t);
	int status = 0;
	if (classes_init(&c.cls, m) < 0 || replay_init(&c.heap, m, 0, NULL, NULL) < 0) {
		fprintf(stderr, PFX "%s: out of memory\n", dir);
		status = 1;
	}
	const struct rd_env *vp = rd_meta_env(m, "vpid");
	c.pid = vp ? (vp->str ? strtoll(vp->str, NULL, 10) : vp->num) : 0;
	const char *procname = env_str(m, "procname");
	if (!procname) {
		procname = strrchr(dir, '/');
		procname = procname && procname[1] ? procname + 1 : dir;
	}

	struct ctf_buf *b = &c.out.b;
	ctf_buf_puts(b, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	meta_name(&c, "process_name", c.pid, procname);

	struct rd_item it;
	int r = 0;
	while (!status && (r = rd_trace_next(t, &it)) > 0) {
		if (!c.have_t0 && (it.ns_ok || (it.kind != RD_ITEM_EVENT && it.end_ok))) {
			c.t0 = c.last = it.ns_ok ? it.ns : it.end_ns;
			c.have_t0 = 1;
		}
		if (it.kind == RD_ITEM_EVENT) {
			int k = chrome_event(&c, &it);
			if (k < 0) {
				fprintf(stderr, PFX "%s: %s\n", dir, k == -ENOMEM ? "out of memory" : "bad event class");
				status = 1;
			}
		} else {
			chrome_loss(&c, &it);
		}
		sink_maybe_flush(&c.out);
		if (c.out.err)
			break;
	}
	if (r < 0 && !status) {
		fprintf(stderr, PFX "%s: %s (the output holds the events before it)\n", dir, rd_trace_errmsg(t));
		status = 1;
	}

	/* Always closed, so that what was written is valid JSON. */
	ctf_buf_puts(b, "\n],\n\"otherData\":{\"trace\":");
	json_cstr(b, dir);
	ctf_buf_puts(b, ",\"tracer\":\"ringtrace " RINGTRACE_VERSION "\",\"procname\":");
	json_cstr(b, procname);
	ctf_buf_puts(b, ",\"vpid\":");
	json_i64(b, c.pid);
	const char *host = env_str(m, "hostname");
	if (host) {
		ctf_buf_puts(b, ",\"hostname\":");
		json_cstr(b, host);
	}
	ctf_buf_puts(b, ",\"start_ns\":");
	json_i64(b, c.t0);
	ctf_buf_puts(b, ",\"events\":");
	json_u64(b, c.events);
	ctf_buf_puts(b, ",\"slices\":");
	json_u64(b, c.slices);
	ctf_buf_puts(b, ",\"unmatched_ends\":");
	json_u64(b, c.unmatched);
	ctf_buf_puts(b, ",\"lost_events\":");
	json_u64(b, c.lost_events);
	ctf_buf_puts(b, ",\"lost_packets\":");
	json_u64(b, c.lost_packets);
	ctf_buf_puts(b, ",\"complete\":");
	ctf_buf_puts(b, status ? "false" : "true");
	ctf_buf_puts(b, "}}\n");
	if (sink_close(&c.out) < 0)
		status = 1;
	rd_trace_close(t);
	threads_free(&c.thr);
	replay_free(&c.heap);
	free(c.cls.p);
	return status;
}

/* ---- --folded --------------------------------------------------------------------- */

/* A stack given in full in its event (the map had no room for it). */
struct inline_stack {
	uint64_t hash;
	uint32_t depth;
	uint64_t *ips;
	uint64_t count;
};

struct folded {
	struct classes cls;
	struct stack_files sf;
	uint64_t *count;             /* per sf.stacks[i] */
	struct inline_stack *in;     /* open addressing on hash */
	size_t nin, capin;
	uint64_t unknown;            /* events whose stack cannot be had */
	struct replay heap;          /* --weight bytes: live blocks only */
	uint64_t allocated;          /* bytes allocated by the event replayed */
	int bytes;
	uint64_t events, allocs;
};

static long stack_index(const struct stack_files *sf, uint32_t id)
{
	size_t lo = 0, hi = sf->nstacks;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (sf->stacks[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sf->nstacks && sf->stacks[lo].id == id ? (long)lo : -1;
}

static int add_inline(struct folded *fo, const struct rd_value *seq, uint64_t w)
{
	uint32_t depth = seq->sub.n < STACKMAP_MAX_DEPTH ? seq->sub.n : STACKMAP_MAX_DEPTH;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ depth;
	for (uint32_t i = 0; i < depth; i++)
		h = rt_mix64(h ^ seq->sub.v[i].u);
	if ((fo->nin + 1) * 2 > fo->capin) {
		size_t cap = fo->capin ? fo->capin * 2 : 64;
		struct inline_stack *nv = calloc(cap, sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		for (size_t i = 0; i < fo->capin; i++) {
			if (!fo->in[i].ips)
				continue;
			size_t j = fo->in[i].hash & (cap - 1);
			while (nv[j].ips)
				j = (j + 1) & (cap - 1);
			nv[j] = fo->in[i];
		}
		free(fo->in);
		fo->in = nv;
		fo->capin = cap;
	}
	size_t j = h & (fo->capin - 1);
	for (; fo->in[j].ips; j = (j + 1) & (fo->capin - 1)) {
		struct inline_stack *s = &fo->in[j];
		if (s->hash != h || s->depth != depth)
			continue;
		uint32_t i = 0;
		while (i < depth && s->ips[i] == seq->sub.v[i].u)
			i++;
		if (i == depth) {
			s->count += w;
			return 0;
		}
	}
	uint64_t *ips = malloc((depth ? depth : 1) * sizeof(*ips));
	if (!ips)
		return -ENOMEM;
	for (uint32_t i = 0; i < depth; i++)
		ips[i] = seq->sub.v[i].u;
	fo->in[j] = (struct inline_stack){ h, depth, ips, w };
	fo->nin++;
	return 0;
}

/* --weight bytes: an allocation weighs the bytes it requested (as the
 * report counts bytes_requested; a sample of a sampled trace, scaled);
 * frees and failures nothing. */
static int folded_alloc(void *arg, const struct replay_event *ev, struct replay_block *b)
{
	struct folded *fo = arg;
	fo->allocated += b->wsize;
	return 0;
}

static const struct replay_ops folded_ops = { .alloc = folded_alloc };

static int folded_event(struct folded *fo, const struct rd_item *it)
{
	struct plan *p = plan_of(&fo->cls, it);
	if (!p || p->role == R_SKIP || p->stack_id < 0)
		return 0;
	uint64_t w = 1;
	if (fo->bytes) {
		const struct replay_class *mc = replay_item_class(&fo->heap, it);
		if (!mc || mc->kind == RP_NONE)
			return 0;
		fo->allocated = 0;
		(void)replay_item(&fo->heap, it);
		if (fo->heap.oom)
			return -ENOMEM;
		w = fo->allocated;
		if (mc->kind != RP_FREE && mc->kind != RP_MUNMAP)
			fo->allocs++;
		if (!w)
			return 0;
	}
	uint32_t id = (uint32_t)fval(it->fields, p->stack_id);
	const struct rd_value *seq =
		it->fields && p->stack >= 0 && (uint32_t)p->stack < it->fields->sub.n ? &it->fields->sub.v[p->stack] : NULL;
	/* "No stack" (id none, depth 0: a free of the allocation tracer):
	 * not a sample, not an unknown one. */
	if (id == STACK_NONE && !rd_seq_len(seq))
		return 0;
	fo->events++;
	if (id == STACK_NONE)
		return add_inline(fo, seq, w);
	long i = stack_index(&fo->sf, id);
	if (i >= 0) {
		fo->count[i] += w;
		return 0;
	}
	fo->unknown += w;
	return 0;
}

/* A name as one folded frame: ';' separates frames, the last ' ' the count
 * and a line break the lines, so none of them may appear (C++ names hold
 * spaces). */
static void fold_name(struct ctf_buf *b, const char *s)
{
	for (; *s; s++)
		ctf_buf_putc(b, *s == ';' || *s == ' ' || (unsigned char)*s < 0x20 || *s == 0x7f ? '_' : *s);
}

/* The function (no offset: flame graphs merge by name), else the object
 * and the offset in it, else the address. Return addresses are looked up
 * at addr - 1, the call. */
static void fold_frame(struct ctf_buf *b, struct sym_ctx *ctx, uint64_t addr)
{
	struct sym_result r;
	if (ctx && addr && sym_resolve(ctx, addr - 1, &r) == 0) {
		if (r.has_function && r.function[0]) {
			fold_name(b, r.function);
			return;
		}
		const char *base = r.object ? strrchr(r.object, '/') : NULL;
		base = base ? base + 1 : r.object;
		if (base && *base) {
			fold_name(b, base);
			ctf_buf_printf(b, "+0x%" PRIx64, r.object_offset + 1);
			return;
		}
	}
	ctf_buf_printf(b, "0x%" PRIx64, addr);
}

struct fline {
	char *text;
	uint64_t count;
};

static int cmp_fline(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->text, ((const struct fline *)b)->text);
}

static int add_line(struct fline *v, size_t *n, struct ctf_buf *b, struct sym_ctx *ctx, const uint64_t *ips,
		    uint32_t depth, uint64_t count)
{
	ctf_buf_reset(b);
	for (uint32_t k = depth, first = frames_first(ctx, ips, depth); k-- > first;) {
		fold_frame(b, ctx, ips[k]);
		if (k > first)
			ctf_buf_putc(b, ';');
	}
	if (b->err)
		return -ENOMEM;
	v[*n].text = strdup(b->len ? b->data : "[unknown]");
	if (!v[*n].text)
		return -ENOMEM;
	v[(*n)++].count = count;
	return 0;
}

/* Symbolise, merge the stacks that fold to the same line, write sorted. */
static int folded_write(struct folded *fo, struct sink *out, const char *debug_dir)
{
	size_t cap = fo->sf.nstacks + fo->nin + 1, n = 0;
	struct fline *v = calloc(cap, sizeof(*v));
	struct sym_ctx *ctx = frames_symbolizer(&fo->sf, debug_dir);
	struct ctf_buf b;
	int r = v ? 0 : -ENOMEM;
	ctf_buf_init(&b);
	for (size_t i = 0; !r && i < fo->sf.nstacks; i++)
		if (fo->count[i])
			r = add_line(v, &n, &b, ctx, fo->sf.stacks[i].ips, fo->sf.stacks[i].depth, fo->count[i]);
	for (size_t i = 0; !r && i < fo->capin; i++)
		if (fo->in[i].ips && fo->in[i].count)
			r = add_line(v, &n, &b, ctx, fo->in[i].ips, fo->in[i].depth, fo->in[i].count);
	if (!r && fo->unknown) {
		v[n].text = strdup("[unknown]");
		r = v[n].text ? 0 : -ENOMEM;
		v[n++].count = fo->unknown;
	}
	if (!r) {
		if (n > 1)
			qsort(v, n, sizeof(*v), cmp_fline);
		for (size_t i = 0; i < n; i++) {
			uint64_t sum = v[i].count;
			while (i + 1 < n && !strcmp(v[i].text, v[i + 1].text))
				sum += v[++i].count;
			ctf_buf_puts(&out->b, v[i].text);
			ctf_buf_putc(&out->b, ' ');
			rd_format_uint(&out->b, sum, 1);
			ctf_buf_putc(&out->b, '\n');
			sink_maybe_flush(out);
		}
	}
	for (size_t i = 0; v && i < n; i++)
		free(v[i].text);
	free(v);
	ctf_buf_free(&b);
	sym_ctx_free(ctx);
	return r;
}

static int class_has_stack(const struct rd_meta *m)
{
	for (size_t i = 0; i < m->n_events; i++) {
		const struct rd_type *f = m->events[i].fields;
		for (uint32_t k = 0; f && f->kind == RD_STRUCT && k < f->n_members; k++)
			if (f->members[k].name && !strcmp(rd_display_name(f->members[k].name), "stack_id"))
				return 1;
	}
	return 0;
}

static int convert_folded(const char *dir, const char *out_path, int bytes, const char *debug_dir)
{
	char err[1024];
	struct rd_trace *t;
	if (rd_trace_open(dir, &t, err, sizeof(err)) < 0) {
		fprintf(stderr, PFX "%s: %s\n", dir, err);
		return 1;
	}
	struct folded fo;
	memset(&fo, 0, sizeof(fo));
	fo.bytes = bytes;
	int status = 1, k;
	if (!class_has_stack(rd_trace_meta(t))) {
		fprintf(stderr, PFX "%s has no stacks (record with --stacks)\n", dir);
		goto out;
	}
	k = stack_files_read(dir, &fo.sf);
	if (k < 0) {
		fprintf(stderr, PFX "%s/stacks: %s\n", dir,
			k == -ENOENT ? "missing: the stack ids cannot be resolved" : strerror(-k));
		goto out;
	}
	fo.count = calloc(fo.sf.nstacks ? fo.sf.nstacks : 1, sizeof(*fo.count));
	if (!fo.count || classes_init(&fo.cls, rd_trace_meta(t)) < 0 ||
	    replay_init(&fo.heap, rd_trace_meta(t), 0, &folded_ops, &fo) < 0) {
		fprintf(stderr, PFX "%s: out of memory\n", dir);
		goto out;
	}
	status = 0;
	struct rd_item it;
	int r;
	while ((r = rd_trace_next(t, &it)) > 0) {
		if (it.kind == RD_ITEM_EVENT && folded_event(&fo, &it) < 0) {
			fprintf(stderr, PFX "%s: out of memory\n", dir);
			status = 1;
			goto out;
		}
	}
	if (r < 0) {
		fprintf(stderr, PFX "%s: %s (the output covers the events before it)\n", dir, rd_trace_errmsg(t));
		status = 1;
	}
	if (bytes && !fo.allocs && !status) {
		fprintf(stderr, PFX "%s has no allocation events (record with --mem): --weight bytes needs them\n",
			dir);
		status = 1;
		goto out;
	}
	struct sink out;
	if (sink_open(&out, out_path) < 0) {
		status = 1;
		goto out;
	}
	if (folded_write(&fo, &out, debug_dir) < 0) {
		fprintf(stderr, PFX "%s: out of memory\n", dir);
		status = 1;
	}
	if (sink_close(&out) < 0)
		status = 1;
out:
	rd_trace_close(t);
	stack_files_free(&fo.sf);
	for (size_t i = 0; i < fo.capin; i++)
		free(fo.in[i].ips);
	free(fo.in);
	free(fo.count);
	replay_free(&fo.heap);
	free(fo.cls.p);
	return status;
}

/* ---- command line ------------------------------------------------------------------- */

int cmd_convert(int argc, char **argv)
{
	const char *dir = NULL, *to = NULL, *out = NULL, *weight = NULL, *debug_dir = NULL;
	int folded = 0, opts = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **val = NULL;
		if (opts && !strcmp(a, "--")) {
			opts = 0;
			continue;
		}
		if (opts && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
			usage(stdout);
			return 0;
		}
		if (opts && !strcmp(a, "--folded")) {
			folded = 1;
			continue;
		}
		if (opts && !strcmp(a, OUTDIR_ALLOW_OPT)) {
			out_flags |= OUTDIR_ALLOW_SHARED;
			continue;
		}
		if (opts && !strcmp(a, "--to"))
			val = &to;
		else if (opts && (!strcmp(a, "-o") || !strcmp(a, "--output")))
			val = &out;
		else if (opts && !strcmp(a, "--weight"))
			val = &weight;
		else if (opts && !strcmp(a, "--debug-dir"))
			val = &debug_dir;
		else if (opts && !strncmp(a, "--to=", 5))
			to = a + 5;
		else if (opts && !strncmp(a, "--weight=", 9))
			weight = a + 9;
		else if (opts && a[0] == '-' && a[1]) {
			fprintf(stderr, PFX "unknown option '%s' (try 'ringtrace convert --help')\n", a);
			return 2;
		} else if (!dir) {
			dir = a;
		} else {
			fprintf(stderr, PFX "one trace directory only ('%s' and '%s')\n", dir, a);
			return 2;
		}
		if (val) {
			if (++i >= argc) {
				fprintf(stderr, PFX "%s needs a value (try 'ringtrace convert --help')\n", a);
				return 2;
			}
			*val = argv[i];
		}
	}
	if (!dir) {
		fprintf(stderr, PFX "no trace directory (usage: ringtrace convert DIR --to chrome|sqlite -o FILE, "
				"or DIR --folded)\n");
		return 2;
	}
	if (!!to + folded != 1) {
		fprintf(stderr, PFX "%s (usage: ringtrace convert DIR --to chrome|sqlite -o FILE, or DIR --folded)\n",
			to ? "--to and --folded exclude each other" : "say --to chrome, --to sqlite or --folded");
		return 2;
	}
	if (weight && !folded) {
		fprintf(stderr, PFX "--weight goes with --folded\n");
		return 2;
	}
	if (weight && strcmp(weight, "events") && strcmp(weight, "bytes")) {
		fprintf(stderr, PFX "unknown --weight '%s' (events or bytes)\n", weight);
		return 2;
	}
	if (debug_dir && !folded && !(to && !strcmp(to, "pprof"))) {
		fprintf(stderr, PFX "--debug-dir goes with --folded or --to pprof\n");
		return 2;
	}
	if (folded)
		return convert_folded(dir, out, weight && !strcmp(weight, "bytes"), debug_dir);
	if (!strcmp(to, "chrome"))
		return convert_chrome(dir, out);
	if (!strcmp(to, "sqlite")) {
		if (!out || !strcmp(out, "-")) {
			fprintf(stderr, PFX "--to sqlite needs -o FILE\n");
			return 2;
		}
		return convert_sqlite(dir, out, out_flags);
	}
	if (!strcmp(to, "pprof")) {
		if (!out || !strcmp(out, "-")) {
			fprintf(stderr, PFX "--to pprof needs -o FILE\n");
			return 2;
		}
		return convert_pprof(dir, out, out_flags, debug_dir);
	}
	fprintf(stderr, PFX "unknown --to '%s' (chrome, sqlite or pprof)\n", to);
	return 2;
}
