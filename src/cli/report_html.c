/*
 * report_html.c - `ringtrace report DIR --html -o FILE`: the allocation
 * report as one HTML page that needs nothing else to be read (no network,
 * no external script, font or style): the totals; the heap over time as
 * an SVG line chart; the rows by call site and by stack as tables sorted
 * by a click on a header; flame graphs of the bytes allocated by stack and
 * of the bytes alive at the peak; the errors; the events per type over
 * time. A trace without mem events gets the event rates alone.
 *
 * Everything comes from the replay of cmd_report.c (report.h): during it
 * this file keeps the heap after each mem event and the count of every
 * event type per time bucket, both in fixed memory (buckets whose width
 * doubles as the trace goes on); afterwards it draws the rows and errors
 * the text report prints. One thread, run once per report: the charts are
 * built for traces of millions of events, the flame graphs for the 2^14
 * to 2^18 stacks of a stack map (frames symbolised once per address).
 *
 * Every string from the trace (function names with C++ templates, paths,
 * event names, the directory) is escaped on its way into the page.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/frames.h"
#include "util/utf8.h"
#include "cli/report.h"
#include "cli/report_html.h"
#include "mem/mem_family.h"
#include "util/u64map.h"
#include "read/reader.h"
#include "read/tsdl.h"
#include "stackmap/stack_files.h"

/* ---- sampling during the replay ------------------------------------------- */

int report_html_init(struct report *r)
{
	r->heap = calloc(1, sizeof(*r->heap));
	r->rates = calloc(1, sizeof(*r->rates));
	if (!r->heap || !r->rates) {
		report_html_free(r);
		return -ENOMEM;
	}
	r->heap->width_ns = 1000;
	for (size_t i = 0; i < HEAP_BUCKETS; i++)
		r->heap->pt[i].t_ns = -1;
	r->rates->width_ns = 1000;
	return 0;
}

void report_html_free(struct report *r)
{
	if (r->rates) {
		for (size_t i = 0; i < r->rates->ntypes; i++) {
			free(r->rates->types[i].name);
			free(r->rates->types[i].b);
		}
		free(r->rates->types);
	}
	free(r->rates);
	free(r->heap);
	r->rates = NULL;
	r->heap = NULL;
}

/* The bucket's highest requested point wins; allocated keeps its own
 * highest value. */
static void heap_merge(struct heap_point *d, const struct heap_point *s)
{
	if (s->t_ns < 0)
		return;
	if (d->t_ns < 0) {
		*d = *s;
		return;
	}
	uint64_t usable = d->usable > s->usable ? d->usable : s->usable;
	if (s->req > d->req)
		*d = *s;
	d->usable = usable;
}

void report_html_heap(struct report *r, int64_t ns)
{
	struct heap_series *h = r->heap;
	int64_t t = ns - r->t0_ns;
	if (!h)
		return;
	if (t < 0)
		t = 0;
	while (t / h->width_ns >= HEAP_BUCKETS) {
		for (size_t i = 0; i < HEAP_BUCKETS / 2; i++) {
			struct heap_point p = h->pt[2 * i];
			heap_merge(&p, &h->pt[2 * i + 1]);
			h->pt[i] = p;
		}
		for (size_t i = HEAP_BUCKETS / 2; i < HEAP_BUCKETS; i++)
			h->pt[i].t_ns = -1;
		h->width_ns *= 2;
		h->n = (h->n + 1) / 2;
	}
	size_t i = (size_t)(t / h->width_ns);
	struct heap_point p = { t, r->live_req, r->live_usable };
	heap_merge(&h->pt[i], &p);
	if (i + 1 > h->n)
		h->n = i + 1;
}

int report_html_item(struct report *r, const struct rd_item *it)
{
	struct rate_series *rs = r->rates;
	if (!rs)
		return 0;
	if (it->kind != RD_ITEM_EVENT) {
		rs->lost += it->count;
		return 0;
	}
	/* The tracer's records of threads are not the program's events
	 * (`ringtrace dump` leaves them out too). */
	const char *name = it->ec && it->ec->name ? it->ec->name : "?";
	if (!strcmp(name, "ringtrace:thread") || !strcmp(name, "ringtrace:thread_name"))
		return 0;
	struct rate_type *ty = NULL;
	for (size_t i = rs->ntypes; i-- > 0;)
		if (rs->types[i].ec == it->ec) {
			ty = &rs->types[i];
			break;
		}
	if (!ty) {
		struct rate_type *v = realloc(rs->types, (rs->ntypes + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		rs->types = v;
		ty = &v[rs->ntypes];
		memset(ty, 0, sizeof(*ty));
		ty->ec = it->ec;
		ty->name = strdup(name);
		ty->b = calloc(RATE_BUCKETS, sizeof(*ty->b));
		if (!ty->name || !ty->b) {
			free(ty->name);
			free(ty->b);
			return -ENOMEM;
		}
		rs->ntypes++;
	}
	ty->count++;
	if (!it->ns_ok)
		return 0; /* counted, not placed in time */
	if (!rs->have_t0) {
		rs->t0_ns = it->ns;
		rs->have_t0 = 1;
	}
	int64_t t = it->ns - rs->t0_ns;
	if (t < 0)
		t = 0;
	if (it->ns > rs->t_end_ns)
		rs->t_end_ns = it->ns;
	while (t / rs->width_ns >= RATE_BUCKETS) {
		for (size_t k = 0; k < rs->ntypes; k++) {
			uint64_t *b = rs->types[k].b;
			for (size_t i = 0; i < RATE_BUCKETS / 2; i++)
				b[i] = b[2 * i] + b[2 * i + 1];
			memset(b + RATE_BUCKETS / 2, 0, RATE_BUCKETS / 2 * sizeof(*b));
		}
		rs->width_ns *= 2;
		rs->n = (rs->n + 1) / 2;
	}
	size_t i = (size_t)(t / rs->width_ns);
	ty->b[i]++;
	if (i + 1 > rs->n)
		rs->n = i + 1;
	return 0;
}

/* ---- text ---------------------------------------------------------------- */

/* Text or attribute value: & < > " ' escaped. */
static void esc(FILE *o, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", o); break;
		case '<': fputs("&lt;", o); break;
		case '>': fputs("&gt;", o); break;
		case '"': fputs("&quot;", o); break;
		case '\'': fputs("&#39;", o); break;
		default: fputc(*s, o);
		}
	}
}

/* "768 KiB", "1.5 MiB", "12 B": tick labels (exact multiples print whole). */
static const char *bytes_label(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;
	while (u < 5 && v >= (1ull << (10 * (u + 1))))
		u++;
	uint64_t d = 1ull << (10 * u);
	if (v % d == 0) {
		snprintf(buf, len, "%" PRIu64 " %s", v / d, unit[u]);
	} else {
		snprintf(buf, len, "%.2f", (double)v / (double)d);
		size_t k = strlen(buf);
		while (k > 0 && buf[k - 1] == '0')
			buf[--k] = 0;
		snprintf(buf + k, len - k, " %s", unit[u]);
	}
	return buf;
}

/* 1, 2 or 5 times a power of ten, at least `raw`. */
static double nice_step(double raw)
{
	double p = 1;
	if (!(raw > 0))
		return 1;
	while (p * 10 <= raw)
		p *= 10;
	while (p > raw)
		p /= 10;
	double m = raw / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* ---- charts -------------------------------------------------------------- */

#define CH_W 960.0
#define CH_H 340.0
#define CH_L 90.0                    /* room for the y labels */
#define CH_R 20.0
#define CH_T 30.0                    /* room for the legend */
#define CH_B 45.0                    /* room for the x labels */

struct chart {
	double xmax, ymax;           /* data units at the right and top edges */
};

static double cx(const struct chart *c, double x)
{
	return CH_L + (c->xmax > 0 ? x / c->xmax : 0) * (CH_W - CH_L - CH_R);
}

static double cy(const struct chart *c, double y)
{
	return CH_T + (CH_H - CH_T - CH_B) * (1 - (c->ymax > 0 ? y / c->ymax : 0));
}

/* The SVG element, the frame, the x axis in seconds and the horizontal
 * grid at `ystep` (labels by `ylabel`). */
static void chart_open(FILE *o, const char *id, const char *aria, const struct chart *c, double ystep,
		       void (*ylabel)(double v, char *buf, size_t len), const char *ytitle)
{
	char b[64];
	fprintf(o, "<svg id=\"%s\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
		   "role=\"img\" aria-label=\"",
		id, CH_W, CH_H);
	esc(o, aria);
	fprintf(o, "\">\n");
	for (int k = 0; k * ystep <= c->ymax * 1.0000001 && k <= 64; k++) {
		double y = cy(c, k * ystep);
		ylabel(k * ystep, b, sizeof(b));
		fprintf(o, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			   "<text class=\"yl\" x=\"%.1f\" y=\"%.1f\">",
			CH_L, y, CH_W - CH_R, y, CH_L - 6, y + 4);
		esc(o, b);
		fprintf(o, "</text>\n");
	}
	double xs = nice_step(c->xmax / 8);
	for (int k = 0; k * xs <= c->xmax * 1.0000001 && k <= 100; k++) {
		double x = cx(c, k * xs);
		fprintf(o, "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			   "<text class=\"xl\" x=\"%.1f\" y=\"%.1f\">%g</text>\n",
			x, CH_H - CH_B, x, CH_H - CH_B + 5, x, CH_H - CH_B + 18, k * xs);
	}
	fprintf(o, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
		   "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		CH_L, CH_T, CH_L, CH_H - CH_B, CH_L, CH_H - CH_B, CH_W - CH_R, CH_H - CH_B);
	fprintf(o, "<text class=\"at\" x=\"%.1f\" y=\"%.1f\">time from the first event (s)</text>\n",
		(CH_L + CH_W - CH_R) / 2, CH_H - 8);
	fprintf(o, "<text class=\"at\" transform=\"translate(14 %.1f) rotate(-90)\">", (CH_T + CH_H - CH_B) / 2);
	esc(o, ytitle);
	fprintf(o, "</text>\n");
}

static void ylabel_bytes(double v, char *buf, size_t len)
{
	bytes_label((uint64_t)(v + 0.5), buf, len);
}

static void ylabel_num(double v, char *buf, size_t len)
{
	if (v >= 1e6)
		snprintf(buf, len, "%gM", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%gk", v / 1e3);
	else
		snprintf(buf, len, "%g", v);
}

static void legend(FILE *o, int i, const char *cls, const char *text)
{
	double x = CH_L + 10 + i * 230;
	fprintf(o, "<line class=\"%s\" x1=\"%.1f\" y1=\"14\" x2=\"%.1f\" y2=\"14\"/><text class=\"lg\" x=\"%.1f\" y=\"18\">",
		cls, x, x + 24, x + 30);
	esc(o, text);
	fprintf(o, "</text>\n");
}

static void heap_chart(FILE *o, const struct report *r)
{
	const struct heap_series *h = r->heap;
	char b1[64];
	struct chart c = { 0, 0 };
	uint64_t ymax = r->peak_usable > r->peak_req ? r->peak_usable : r->peak_req;
	for (size_t i = 0; h && i < h->n; i++)
		if (h->pt[i].t_ns >= 0 && h->pt[i].usable > ymax)
			ymax = h->pt[i].usable;
	uint64_t ystep = 1;
	while (ystep * 5 < ymax)
		ystep *= 2;
	c.ymax = (double)((ymax + ystep - 1) / ystep * ystep);
	if (c.ymax <= 0)
		c.ymax = 1;
	c.xmax = r->t_end_ns > r->t0_ns ? (double)(r->t_end_ns - r->t0_ns) / 1e9 : 1e-6;
	chart_open(o, "heap-chart", "the live heap over time", &c, (double)ystep, ylabel_bytes, "live bytes");
	legend(o, 0, "l-req", "requested");
	legend(o, 1, "l-use", "allocated (usable)");
	const char *cls[2] = { "l-use", "l-req" };
	for (int s = 0; s < 2; s++) {
		fprintf(o, "<polyline class=\"%s\" points=\"", cls[s]);
		for (size_t i = 0; h && i < h->n; i++) {
			const struct heap_point *p = &h->pt[i];
			if (p->t_ns < 0)
				continue;
			fprintf(o, "%.1f,%.1f ", cx(&c, (double)p->t_ns / 1e9), cy(&c, (double)(s ? p->req : p->usable)));
		}
		fprintf(o, "\"/>\n");
	}
	double px = cx(&c, (double)(r->peak_ns - r->t0_ns) / 1e9), py = cy(&c, (double)r->peak_req);
	fprintf(o, "<g id=\"heap-peak\"><circle class=\"peak\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\"/>"
		   "<text class=\"pk\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">peak %s requested at %.6f s</text>"
		   "<title>peak: %" PRIu64 " bytes requested, %" PRIu64 " allocated, at %.6f s</title></g>\n",
		px, py, px + (px > CH_W / 2 ? -8 : 8), py < CH_T + 14 ? py + 16 : py - 8, px > CH_W / 2 ? "end" : "start",
		bytes_label(r->peak_req, b1, sizeof(b1)), (double)(r->peak_ns - r->t0_ns) / 1e9, r->peak_req,
		r->peak_usable, (double)(r->peak_ns - r->t0_ns) / 1e9);
	fprintf(o, "</svg>\n");
}

static const char *const palette[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
				       "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf" };
#define NPAL (sizeof(palette) / sizeof(palette[0]))

static int cmp_type(const void *x, const void *y)
{
	const struct rate_type *a = x, *b = y;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Events per second of each type (the NPAL biggest; the rest as one
 * line), and their counts. */
static void rate_chart(FILE *o, struct rate_series *rs)
{
	if (rs->ntypes > 1)
		qsort(rs->types, rs->ntypes, sizeof(*rs->types), cmp_type);
	size_t nl = rs->ntypes > NPAL ? NPAL - 1 : rs->ntypes;
	uint64_t *other = rs->ntypes > NPAL ? calloc(RATE_BUCKETS, sizeof(*other)) : NULL;
	for (size_t k = nl; other && k < rs->ntypes; k++)
		for (size_t i = 0; i < rs->n; i++)
			other[i] += rs->types[k].b[i];
	double wsec = (double)rs->width_ns / 1e9, ymax = 0;
	for (size_t k = 0; k < rs->ntypes; k++)
		for (size_t i = 0; i < rs->n; i++) {
			uint64_t v = k < nl ? rs->types[k].b[i] : other ? other[i] : 0;
			if ((double)v / wsec > ymax)
				ymax = (double)v / wsec;
		}
	struct chart c;
	double ystep = nice_step(ymax / 5);
	c.ymax = ystep;
	while (c.ymax < ymax)
		c.ymax += ystep;
	c.xmax = rs->t_end_ns > rs->t0_ns ? (double)(rs->t_end_ns - rs->t0_ns) / 1e9 : 1e-6;
	char title[96];
	snprintf(title, sizeof(title), "events/s (buckets of %g ms)", wsec * 1e3);
	chart_open(o, "rate-chart", "events per second by type", &c, ystep, ylabel_num, title);
	for (size_t k = 0; k < nl + (other != NULL); k++) {
		const char *col = palette[k % NPAL];
		fprintf(o, "<polyline class=\"rate\" stroke=\"%s\" points=\"", col);
		for (size_t i = 0; i < rs->n; i++) {
			uint64_t v = k < nl ? rs->types[k].b[i] : other[i];
			double t = ((double)i + 0.5) * wsec;
			fprintf(o, "%.1f,%.1f ", cx(&c, t < c.xmax ? t : c.xmax), cy(&c, (double)v / wsec));
		}
		fprintf(o, "\"><title>");
		esc(o, k < nl ? rs->types[k].name : "(other types)");
		fprintf(o, "</title></polyline>\n");
	}
	fprintf(o, "</svg>\n");
	free(other);
	fprintf(o, "<table class=\"sort\" id=\"t-events\"><thead><tr><th></th><th>EVENT</th><th class=\"n\">COUNT</th>"
		   "<th class=\"n\">PER SECOND</th></tr></thead><tbody>\n");
	double span = rs->t_end_ns > rs->t0_ns ? (double)(rs->t_end_ns - rs->t0_ns) / 1e9 : 0;
	for (size_t k = 0; k < rs->ntypes; k++) {
		fprintf(o, "<tr><td><span class=\"sw\" style=\"background:%s\"></span></td><td>",
			k < nl ? palette[k] : rs->ntypes > NPAL ? palette[NPAL - 1] : "#fff");
		esc(o, rs->types[k].name);
		fprintf(o, "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%.1f</td></tr>\n", rs->types[k].count,
			span > 0 ? (double)rs->types[k].count / span : 0.0);
	}
	fprintf(o, "</tbody></table>\n");
	if (rs->lost)
		fprintf(o, "<p class=\"warn\">%" PRIu64 " events lost (buffers full): the rates miss them.</p>\n",
			rs->lost);
}

/* ---- tables -------------------------------------------------------------- */

static void stack_frames(FILE *o, struct sym_ctx *ctx, const struct stack_files *sf, uint32_t id)
{
	const struct stackmap_stack *st = report_find_stack(sf, id);
	fprintf(o, "<ol class=\"stk\">");
	if (!st) {
		fprintf(o, "<li>(stack %u not in the trace's map)</li>", id);
	} else {
		for (uint32_t i = frames_first(ctx, st->ips, st->depth); i < st->depth; i++) {
			char *n = report_site_name(ctx, st->ips[i], 0);
			fprintf(o, "<li>");
			esc(o, n ? n : "?");
			fprintf(o, "</li>");
			free(n);
		}
	}
	fprintf(o, "</ol>");
}

/* Columns as the text report has them. */
static void rows_table(FILE *o, const struct report *r, const struct aggtab *t, int by, struct sym_ctx *ctx,
		       const struct stack_files *sf)
{
	static const char *const by_name[] = { "call site", "stack", "function" };
	static const char *const id[] = { "t-sites", "t-stacks", "t-sites" };
	size_t n = r->top > 0 && (size_t)r->top < t->n ? (size_t)r->top : t->n;
	fprintf(o, "<h2>By %s (top %zu of %zu)</h2>\n", by_name[by], n, t->n);
	fprintf(o, "<table class=\"sort rows\" id=\"%s\"><thead><tr>", id[by]);
	static const char *const cols[] = { "ALLOCS", "FREES", "REQUESTED", "ALLOCATED", "FRAG%",
					    "LEAKED", "BLOCKS", "XCPU", "XTHREAD" };
	for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
		fprintf(o, "<th class=\"n\">%s</th>", cols[k]);
	fprintf(o, "<th>%s</th></tr></thead><tbody>\n", by == 1 ? "STACK (allocator's caller)" : "SITE");
	for (size_t i = 0; i < n; i++) {
		const struct agg *a = &t->v[i];
		char fams[128];
		report_fams_text(a->fams, fams, sizeof(fams));
		fprintf(o, "<tr><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
			   "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%.2f</td><td class=\"n\">%" PRIu64,
			a->allocs, a->frees, a->req, a->usable, report_frag(a->req, a->usable), a->live_req);
		/* Leaks a loss of events may have caused, said in the cell
		 * (the column still sorts by its first number). */
		if (a->pos_n)
			fprintf(o, " <span class=\"possible\">(%" PRIu64 " possible)</span>", a->pos_req);
		fprintf(o, "</td><td class=\"n\">%" PRIu64, a->live_n);
		if (a->pos_n)
			fprintf(o, " <span class=\"possible\">(%" PRIu64 " possible)</span>", a->pos_n);
		fprintf(o, "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td><td class=\"name\">",
			a->xcpu, a->xthread);
		/* A stack's row unfolds into its frames. */
		int frames = by == 1 && a->key != STACK_NONE;
		if (frames)
			fprintf(o, "<details><summary>");
		esc(o, a->name);
		fprintf(o, " <span class=\"fam\">[");
		esc(o, fams);
		fprintf(o, "]</span>");
		if (frames) {
			fprintf(o, "</summary>");
			stack_frames(o, ctx, sf, (uint32_t)a->key);
			fprintf(o, "</details>");
		}
		fprintf(o, "</td></tr>\n");
	}
	fprintf(o, "</tbody></table>\n");
}

static void site_cell(FILE *o, struct sym_ctx *ctx, const char *fam, uint64_t site)
{
	fprintf(o, "<td>");
	if (site) {
		char *n = report_site_name(ctx, site, 0);
		if (fam) {
			esc(o, fam);
			fprintf(o, " at ");
		}
		esc(o, n ? n : "?");
		free(n);
	}
	fprintf(o, "</td>");
}

static void errors_table(FILE *o, const struct report *r, struct sym_ctx *ctx)
{
	uint64_t npos, nerr = report_errors(r, &npos);
	if (npos)
		fprintf(o, "<section id=\"errors\"><h2>Errors (%" PRIu64 ", %" PRIu64 " certain, %" PRIu64 " %s)</h2>\n",
			nerr, nerr - npos, npos, report_possible_why(r));
	else
		fprintf(o, "<section id=\"errors\"><h2>Errors (%" PRIu64 ")</h2>\n", nerr);
	if (!nerr) {
		fprintf(o, "<p>None found.</p></section>\n");
		return;
	}
	fprintf(o, "<table class=\"sort\" id=\"t-errors\"><thead><tr><th>KIND</th><th class=\"n\">COUNT</th>"
		   "<th>FIRST POINTER</th><th>ALLOCATED</th><th>FREED</th><th>AGAIN</th></tr></thead><tbody>\n");
	for (size_t i = 0; i < r->nerrs; i++) {
		const struct err *e = &r->errs[i];
		fprintf(o, "<tr><td>%s", replay_err_name[e->kind]);
		if (e->possible)
			fprintf(o, " <span class=\"possible\">%s</span>", report_possible_why(r));
		fprintf(o, "</td><td class=\"n\">%" PRIu64 "</td><td>", e->count);
		if (e->ptr)
			fprintf(o, "0x%" PRIx64, e->ptr);
		fprintf(o, "</td>");
		site_cell(o, ctx, e->site_alloc ? mem_alloc_name(e->fam_alloc) : NULL, e->site_alloc);
		site_cell(o, ctx, e->site_free ? replay_end_name(e->fam_free) : NULL, e->site_free);
		site_cell(o, ctx, NULL, e->site_again);
		fprintf(o, "</tr>\n");
	}
	fprintf(o, "</tbody></table>\n");
	if (r->aggregate)
		fprintf(o, "<p>Aggregate mode keeps no sites of frees and no pointers: frees of blocks not known "
			   "alive (double frees among them) have no row of their own.</p>\n");
	fprintf(o, "</section>\n");
}

/* ---- flame graphs -------------------------------------------------------- */

struct fnode {
	uint32_t name;               /* index in flame.names */
	uint32_t parent;
	uint32_t child, next;        /* first child, next sibling (0: none; 0 is the root) */
	uint32_t depth;
	uint64_t v, v2;              /* the graph's bytes, and the other kind */
};

struct flame {
	struct sym_ctx *ctx;
	char **names;
	size_t nnames;
	struct u64map by_ip;         /* ip -> name */
	struct u64map by_text;       /* hash of a name's text -> name (collisions: rehashed) */
	struct u64map by_edge;       /* parent << 32 | name -> node */
	struct fnode *nodes;
	size_t nnodes, capnodes;
	uint32_t maxdepth;
};

/* The name's index, interned; UINT32_MAX if out of memory (takes `s`). */
static uint32_t intern(struct flame *f, char *s)
{
	if (!s)
		return UINT32_MAX;
	/* Two names with the same hash: the second goes under the hash
	 * mixed once more, and so on. */
	for (uint64_t h = u64map_str_key(s);; h = u64map_next_key(h)) {
		int created;
		uint64_t *v = u64map_put(&f->by_text, h, &created);
		if (!v)
			break;
		if (!created) {
			if (strcmp(f->names[*v], s))
				continue;
			free(s);
			return (uint32_t)*v;
		}
		if ((f->nnames & (f->nnames - 1)) == 0) {
			char **nv = realloc(f->names, (f->nnames ? f->nnames * 2 : 64) * sizeof(*nv));
			if (!nv) {
				u64map_del(&f->by_text, h);
				break;
			}
			f->names = nv;
		}
		f->names[f->nnames] = s;
		*v = f->nnames;
		return (uint32_t)f->nnames++;
	}
	free(s);
	return UINT32_MAX;
}

/* A frame's function (its object and offset when it has none). */
static uint32_t frame_name(struct flame *f, uint64_t ip)
{
	const uint64_t *v = u64map_get(&f->by_ip, ip);
	if (v)
		return (uint32_t)*v;
	uint32_t n = intern(f, report_site_name(f->ctx, ip, 1));
	if (n == UINT32_MAX)
		return n;
	uint64_t *nv = u64map_put(&f->by_ip, ip, NULL);
	if (!nv)
		return UINT32_MAX;
	*nv = n;
	return n;
}

/* The child of `parent` named `name`, made if new; UINT32_MAX if out of
 * memory. */
static uint32_t child(struct flame *f, uint32_t parent, uint32_t name)
{
	uint64_t key = (uint64_t)parent << 32 | name;
	const uint64_t *v = u64map_get(&f->by_edge, key);
	if (v)
		return (uint32_t)*v;
	if (f->nnodes == f->capnodes) {
		size_t cap = f->capnodes * 2;
		struct fnode *nv = realloc(f->nodes, cap * sizeof(*nv));
		if (!nv)
			return UINT32_MAX;
		f->nodes = nv;
		f->capnodes = cap;
	}
	uint64_t *slot = u64map_put(&f->by_edge, key, NULL);
	if (!slot)
		return UINT32_MAX;
	uint32_t id = (uint32_t)f->nnodes++;
	*slot = id;
	struct fnode *p = &f->nodes[parent];
	f->nodes[id] = (struct fnode){ name, parent, 0, p->child, p->depth + 1, 0, 0 };
	f->nodes[parent].child = id;
	if (f->nodes[id].depth > f->maxdepth)
		f->maxdepth = f->nodes[id].depth;
	return id;
}

static int flame_init(struct flame *f, struct sym_ctx *ctx)
{
	memset(f, 0, sizeof(*f));
	f->ctx = ctx;
	f->capnodes = 1024;
	f->nodes = calloc(f->capnodes, sizeof(*f->nodes));
	if (!f->nodes)
		return -ENOMEM;
	f->nnodes = 1; /* the root, "all" */
	return 0;
}

static void flame_free(struct flame *f)
{
	for (size_t i = 0; i < f->nnames; i++)
		free(f->names[i]);
	free(f->names);
	u64map_free(&f->by_ip);
	u64map_free(&f->by_text);
	u64map_free(&f->by_edge);
	free(f->nodes);
}

/* Add `v` bytes (and `v2` of the other kind) along stack `id`, outermost
 * frame first; the tracer's own frames are left out. */
static int flame_add(struct flame *f, const struct stack_files *sf, uint32_t id, uint64_t v, uint64_t v2)
{
	uint32_t node = 0;
	f->nodes[0].v += v;
	f->nodes[0].v2 += v2;
	const struct stackmap_stack *st = id == STACK_NONE ? NULL : report_find_stack(sf, id);
	if (!st) {
		char buf[64];
		if (id == STACK_NONE)
			snprintf(buf, sizeof(buf), "(no stack)");
		else
			snprintf(buf, sizeof(buf), "(stack %u not in the trace's map)", id);
		uint32_t n = intern(f, strdup(buf));
		node = n == UINT32_MAX ? n : child(f, 0, n);
		if (node == UINT32_MAX)
			return -ENOMEM;
		f->nodes[node].v += v;
		f->nodes[node].v2 += v2;
		return 0;
	}
	uint32_t first = frames_first(f->ctx, st->ips, st->depth);
	for (uint32_t i = st->depth; i-- > first;) {
		uint32_t n = frame_name(f, st->ips[i]);
		node = n == UINT32_MAX ? n : child(f, node, n);
		if (node == UINT32_MAX)
			return -ENOMEM;
		f->nodes[node].v += v;
		f->nodes[node].v2 += v2;
	}
	return 0;
}

#define FL_W 1200.0
#define FL_FH 17.0                   /* frame height */
#define FL_MIN 0.25                  /* narrower frames (pixels) are not drawn */

struct flame_out {
	FILE *o;
	const struct flame *f;
	double scale;                /* pixels per byte */
	double h;                    /* the SVG's height */
	const char *what, *what2;    /* "allocated", "requested" */
};

static int cmp_node(const void *x, const void *y)
{
	const struct fnode *a = *(const struct fnode *const *)x, *b = *(const struct fnode *const *)y;
	if (a->v != b->v)
		return a->v > b->v ? -1 : 1;
	return a->name < b->name ? -1 : a->name > b->name;
}

/* A colour of the warm family, fixed per name. */
static void flame_colour(const char *name, char *buf, size_t len)
{
	uint64_t h = u64map_str_key(name);
	unsigned r = 205 + (unsigned)(h % 51), g = (unsigned)((h >> 8) % 191), b = (unsigned)((h >> 16) % 56);
	snprintf(buf, len, "rgb(%u,%u,%u)", r, g, b);
}

static int flame_emit(const struct flame_out *fo, uint32_t id, double x)
{
	const struct fnode *n = &fo->f->nodes[id];
	double w = (double)n->v * fo->scale;
	if (w < FL_MIN)
		return 0;
	double y = fo->h - (n->depth + 1) * FL_FH;
	const char *name = id ? fo->f->names[n->name] : "all";
	char col[32];
	FILE *o = fo->o;
	const struct fnode *root = &fo->f->nodes[0];
	if (id)
		flame_colour(name, col, sizeof(col));
	else
		snprintf(col, sizeof(col), "rgb(200,200,210)");
	fprintf(o, "<g><title>");
	esc(o, name);
	fprintf(o, "\n%" PRIu64 " bytes %s (%.2f%%), %" PRIu64 " %s</title>"
		   "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"/>",
		n->v, fo->what, root->v ? 100.0 * (double)n->v / (double)root->v : 0.0, n->v2, fo->what2, x, y, w,
		FL_FH - 1, col);
	size_t fit = w > 24 ? (size_t)((w - 6) / 7) : 0;
	if (fit >= 3) {
		fprintf(o, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FL_FH - 5);
		size_t len = strlen(name);
		if (len <= fit) {
			esc(o, name);
		} else {
			/* Not inside a UTF-8 sequence. */
			char *cut = strndup(name, utf8_boundary(name, fit - 2));
			if (!cut)
				return -ENOMEM;
			esc(o, cut);
			fputs("..", o);
			free(cut);
		}
		fprintf(o, "</text>");
	}
	fprintf(o, "</g>\n");
	size_t nc = 0;
	for (uint32_t c = n->child; c; c = fo->f->nodes[c].next)
		nc++;
	if (!nc)
		return 0;
	const struct fnode **kids = malloc(nc * sizeof(*kids));
	if (!kids)
		return -ENOMEM;
	nc = 0;
	for (uint32_t c = n->child; c; c = fo->f->nodes[c].next)
		kids[nc++] = &fo->f->nodes[c];
	if (nc > 1)
		qsort(kids, nc, sizeof(*kids), cmp_node);
	int ret = 0;
	for (size_t i = 0; i < nc && !ret; i++) {
		ret = flame_emit(fo, (uint32_t)(kids[i] - fo->f->nodes), x);
		x += (double)kids[i]->v * fo->scale;
	}
	free(kids);
	return ret;
}

/* One flame graph of the stacks table: `peak` 0 for the bytes allocated
 * (usable) over the run, 1 for the bytes requested alive at the peak. */
static int flame_graph(FILE *o, const struct report *r, const struct aggtab *stacks, int peak, struct sym_ctx *ctx,
		       const struct stack_files *sf)
{
	struct flame f;
	if (flame_init(&f, ctx) < 0)
		return -ENOMEM;
	int ret = 0;
	for (size_t i = 0; i < stacks->n && !ret; i++) {
		const struct agg *a = &stacks->v[i];
		uint64_t v = a->usable, v2 = a->req;
		if (peak)
			report_live_at_peak(r, a, &v, &v2);
		if (v)
			ret = flame_add(&f, sf, (uint32_t)a->key, v, v2);
	}
	const char *id = peak ? "flame-peak" : "flame-alloc";
	if (!ret && !f.nodes[0].v) {
		fprintf(o, "<p>No bytes to show.</p>\n");
	} else if (!ret) {
		struct flame_out fo = { o, &f, FL_W / (double)f.nodes[0].v, (f.maxdepth + 1) * FL_FH + 2,
					peak ? "requested, alive at the peak" : "allocated",
					peak ? "allocated" : "requested" };
		fprintf(o, "<svg id=\"%s-svg\" class=\"flame\" xmlns=\"http://www.w3.org/2000/svg\" "
			   "viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"flame graph\">\n",
			id, FL_W, fo.h);
		ret = flame_emit(&fo, 0, 0);
		fprintf(o, "</svg>\n");
	}
	flame_free(&f);
	return ret;
}

/* ---- the page ------------------------------------------------------------ */

static const char css[] =
	"body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;margin:20px 28px;"
	"color:#222;background:#fff}\n"
	"h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:26px 0 8px;border-bottom:1px solid #ddd}\n"
	"p.sub{color:#555;margin:0 0 12px}.warn{color:#b00;font-weight:bold}.possible{color:#a60}\n"
	"table{border-collapse:collapse;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #eee;"
	"vertical-align:top}\n"
	"th{background:#f4f4f6;text-align:left;white-space:nowrap}table.sort th{cursor:pointer;user-select:none}\n"
	"table.sort th[data-dir=d]::after{content:' \\25BC'}table.sort th[data-dir=a]::after{content:' \\25B2'}\n"
	"th.n,td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
	"td.name{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}\n"
	".fam{color:#777}ol.stk{margin:4px 0 4px 18px;padding:0;color:#444}summary{cursor:pointer}\n"
	"table.kv td:first-child{color:#555}\n"
	"svg.chart{width:100%;max-width:960px;height:auto;display:block}\n"
	"svg.chart text{font-size:11px;fill:#333}svg.chart .yl{text-anchor:end}svg.chart .xl{text-anchor:middle}\n"
	"svg.chart .at{text-anchor:middle;font-size:12px}svg.chart .lg{font-size:12px}\n"
	".grid{stroke:#e6e6e6}.tick,.axis{stroke:#888}\n"
	".l-req,.l-use,.rate{fill:none;stroke-width:1.5;stroke-linejoin:round}.l-req{stroke:#d62728}"
	".l-use{stroke:#1f77b4}\n"
	".peak{fill:#d62728;stroke:#fff;stroke-width:1.5}svg.chart .pk{font-size:12px;font-weight:bold;fill:#d62728}\n"
	"svg.flame{width:100%;height:auto;display:block;background:#fafafa}\n"
	"svg.flame text{font:11px ui-monospace,Menlo,Consolas,monospace;fill:#000;pointer-events:none}\n"
	"svg.flame rect{stroke:#fafafa;stroke-width:.5}svg.flame g:hover rect{stroke:#000}\n"
	".sw{display:inline-block;width:12px;height:12px;border-radius:2px}\n";

/* Sort a table on a click on its header (numbers on th.n), twice to
 * reverse; then mark the page as having run its script. */
static const char js[] =
	"(function(){\n"
	"  function key(c,num){var t=c.textContent;return num?parseFloat(t):t;}\n"
	"  Array.prototype.forEach.call(document.querySelectorAll('table.sort'),function(tb){\n"
	"    var hs=tb.tHead.rows[0].cells;\n"
	"    Array.prototype.forEach.call(hs,function(th,i){\n"
	"      th.addEventListener('click',function(){\n"
	"        var num=th.classList.contains('n'),dir=th.getAttribute('data-dir')==='d'?'a':'d';\n"
	"        Array.prototype.forEach.call(hs,function(h){h.removeAttribute('data-dir');});\n"
	"        th.setAttribute('data-dir',dir);\n"
	"        var body=tb.tBodies[0],rows=Array.prototype.slice.call(body.rows);\n"
	"        rows.sort(function(a,b){var x=key(a.cells[i],num),y=key(b.cells[i],num);\n"
	"          var c=num?x-y:x.localeCompare(y);return dir==='d'?-c:c;});\n"
	"        rows.forEach(function(r){body.appendChild(r);});\n"
	"      });\n"
	"    });\n"
	"  });\n"
	"  document.body.setAttribute('data-ok','1');\n"
	"})();\n";

static void kv(FILE *o, const char *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void kv(FILE *o, const char *k, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(o, "<tr><td>%s</td><td>", k);
	esc(o, buf);
	fprintf(o, "</td></tr>\n");
}

static void totals(FILE *o, const struct report *r)
{
	uint64_t npos, nerr = report_errors(r, &npos);
	fprintf(o, "<section id=\"totals\"><h2>Totals</h2><table class=\"kv\" id=\"t-totals\">\n");
	kv(o, "allocations", "%" PRIu64 " (%" PRIu64 " failed)", r->allocs, r->failed);
	kv(o, "frees", "%" PRIu64, r->frees);
	kv(o, "reallocs", "%" PRIu64, r->reallocs);
	kv(o, "bytes requested", "%" PRIu64, r->req);
	kv(o, "bytes allocated", "%" PRIu64, r->usable);
	kv(o, "fragmentation", "%.2f%%", report_frag(r->req, r->usable));
	kv(o, "peak heap", "%" PRIu64 " bytes requested, %" PRIu64 " allocated, at %.6f s", r->peak_req,
	   r->peak_usable, r->have_t0 ? (double)(r->peak_ns - r->t0_ns) / 1e9 : 0.0);
	if (r->lost)
		kv(o, "leaked at exit",
		   "%" PRIu64 " bytes in %" PRIu64 " blocks: %" PRIu64 " bytes in %" PRIu64 " blocks certain, %" PRIu64
		   " bytes in %" PRIu64 " blocks possible (events lost after their allocation)",
		   r->live_req, r->live_n, r->live_req - r->pos_req, r->live_n - r->pos_n, r->pos_req, r->pos_n);
	else
		kv(o, "leaked at exit", "%" PRIu64 " bytes in %" PRIu64 " blocks", r->live_req, r->live_n);
	kv(o, "cross-CPU frees", "%" PRIu64 " (%.2f%%)", r->xcpu,
	   r->frees_known ? 100.0 * (double)r->xcpu / (double)r->frees_known : 0.0);
	kv(o, "cross-thread frees", "%" PRIu64 " (%.2f%%)", r->xthread,
	   r->frees_known ? 100.0 * (double)r->xthread / (double)r->frees_known : 0.0);
	if (r->mmaps)
		kv(o, "pages (mmap)", "%" PRIu64 " maps, %" PRIu64 " unmapped, peak %" PRIu64 " bytes", r->mmaps,
		   r->munmaps, r->pages_peak);
	if (r->lost || npos)
		kv(o, "errors", "%" PRIu64 ": %" PRIu64 " certain, %" PRIu64 " %s", nerr, nerr - npos, npos,
		   report_possible_why(r));
	else
		kv(o, "errors", "%" PRIu64, nerr);
	if (r->inherited)
		kv(o, "inherited frees", "%" PRIu64 " (blocks of the parent, allocated before the fork)", r->inherited);
	fprintf(o, "</table>\n");
	if (r->lost)
		fprintf(o, "<p class=\"warn\">%" PRIu64 " events lost (buffers full): the figures miss them.</p>\n",
			r->lost);
	if (r->agg_untracked)
		fprintf(o, "<p class=\"warn\">%" PRIu64 " blocks untracked (no room in the table of live blocks: "
			   "their frees count as unknown).</p>\n",
			r->agg_untracked);
	if (r->agg_keys_full)
		fprintf(o, "<p class=\"warn\">%" PRIu64 " calls counted under one row (no room for more keys).</p>\n",
			r->agg_keys_full);
	fprintf(o, "</section>\n");
}

int report_html_write(FILE *o, struct report *r, struct aggtab *sites, struct aggtab *stacks,
		      struct sym_ctx *ctx, const struct stack_files *sf, const char *dir)
{
	int mem = r->events || r->aggregate, ret = 0;
	double secs = r->have_t0 ? (double)(r->t_end_ns - r->t0_ns) / 1e9 : 0;
	fprintf(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		   "<meta name=\"generator\" content=\"ringtrace report\">\n<title>ringtrace report: ");
	esc(o, dir);
	fprintf(o, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", css);
	fprintf(o, "<h1>%s ", mem ? "Allocation report of" : "Events of");
	esc(o, dir);
	fprintf(o, "</h1>\n");
	if (mem && r->aggregate)
		fprintf(o, "<p class=\"sub\">Counters of %.3f s, aggregate mode: no per-event details.</p>\n", secs);
	else if (mem)
		fprintf(o, "<p class=\"sub\">%.3f s of allocation events.</p>\n", secs);
	else
		fprintf(o, "<p class=\"sub\">No allocation events (record with <code>ringtrace record --mem</code> "
			   "for the heap): the events by type.</p>\n");

	if (mem && r->sample_mean) {
		char smp[128];
		fprintf(o, "<p class=\"warn\" id=\"sampled\">Sampled: %s are ", r->aggregate ?
			"frees, the heap, leaks and the rows marked (estimate)" : "allocations, frees, bytes, the heap and leaks");
		esc(o, report_sample_text(r, smp, sizeof(smp)));
		fprintf(o, "%s.</p>\n", r->aggregate ? "; allocations, bytes and the rows marked (exact) count every call" :
			"; frees of unknown pointers and double frees are not seen");
	}
	if (mem) {
		totals(o, r);
		fprintf(o, "<section id=\"heap\"><h2>Heap over time</h2>\n");
		if (r->heap && r->heap->n)
			heap_chart(o, r);
		else
			fprintf(o, "<p>Counters only (aggregate mode): the peak, %" PRIu64 " bytes requested, was reached "
				   "at %.6f s.</p>\n",
				r->peak_req, (double)(r->peak_ns - r->t0_ns) / 1e9);
		fprintf(o, "</section>\n<section id=\"sites\">\n");
		rows_table(o, r, sites, r->by == 2 ? 2 : 0, ctx, sf);
		fprintf(o, "</section>\n");
		if (stacks) {
			fprintf(o, "<section id=\"stacks\">\n");
			rows_table(o, r, stacks, 1, ctx, sf);
			fprintf(o, "</section>\n<section id=\"flame-alloc\"><h2>Flame graph: bytes allocated, by stack</h2>\n"
				   "<p class=\"sub\">Width: bytes allocated (usable) over the whole run; the outermost "
				   "frame at the bottom, the allocator's caller on top. Hover for figures.</p>\n");
			ret = flame_graph(o, r, stacks, 0, ctx, sf);
			fprintf(o, "</section>\n<section id=\"flame-peak\"><h2>Flame graph: live bytes at the peak "
				   "(%.6f s)</h2>\n",
				(double)(r->peak_ns - r->t0_ns) / 1e9);
			if (r->aggregate) {
				fprintf(o, "<p>Counters only (aggregate mode): which blocks were alive at the peak is "
					   "not known.</p>\n");
			} else {
				fprintf(o, "<p class=\"sub\">Width: bytes requested by the blocks alive when the heap "
					   "reached its peak (%" PRIu64 " bytes).</p>\n",
					r->peak_req);
				if (!ret)
					ret = flame_graph(o, r, stacks, 1, ctx, sf);
			}
			fprintf(o, "</section>\n");
		} else {
			fprintf(o, "<section id=\"flame-alloc\"><h2>Flame graphs</h2><p>The trace has no stacks "
				   "(record with <code>--stacks</code>).</p></section>\n");
		}
		errors_table(o, r, ctx);
	}
	if (r->rates && r->rates->ntypes) {
		fprintf(o, "<section id=\"events\"><h2>Events by type</h2>\n");
		rate_chart(o, r->rates);
		fprintf(o, "</section>\n");
	} else if (!mem) {
		fprintf(o, "<section id=\"events\"><h2>Events by type</h2><p>The trace has no events.</p></section>\n");
	}
	fprintf(o, "<script>\n%s</script>\n</body></html>\n", js);
	return ret;
}
