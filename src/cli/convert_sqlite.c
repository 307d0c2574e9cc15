/*
 * convert_sqlite.c - `ringtrace convert DIR --to sqlite -o FILE`: a trace
 * as an SQLite database, for questions the report does not answer
 * (docs/convert.md, "SQLite", has the schema and example queries).
 *
 * One table per event class with events (ev_PROVIDER_NAME: ts, cpu, tid,
 * then one column per payload field), every class, threads, stacks and their
 * symbolised frames, the losses, the trace's env, and for traces recorded
 * with --mem one row per heap block (allocations), failed allocations
 * and allocation errors, found by the replay of the mem:* events that
 * `ringtrace report` uses too (analyze/replay.h: frees matched to
 * allocations by pointer, a realloc is a free of the old block and an
 * allocation of the new one at its site, pages from mmap/munmap/mremap).
 *
 * Built for traces of millions of events: the trace is read once, in time
 * order, each row inserted through a prepared statement inside one
 * transaction on a database without a journal (it is written under a
 * random temporary name next to FILE and renamed over it at the end, so a
 * crash never leaves a half-written FILE: util/outdir.h); indexes are
 * made after the rows. An allocation row
 * is inserted when its block is freed, or at the end when it never was,
 * so memory holds one entry per address seen (the replay's table), not
 * per allocation. Everything from the trace is untrusted: strings are
 * made valid UTF-8, identifiers are sanitised and quoted, values go
 * through bound parameters.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "analyze/frames.h"
#include "util/utf8.h"
#include "cli/convert.h"
#include "analyze/replay.h"
#include "util/outdir.h"
#include "util/buf.h"
#include "mem/mem_family.h"
#include "read/decode.h"
#include "read/format.h"
#include "read/reader.h"
#include "util/u64map.h"
#include "stackmap/stack_files.h"
#include "sym/symbolize.h"

#define PFX "ringtrace convert: "
/* SQLite's default SQLITE_MAX_COMPOUND_SELECT: the `events` view is one
 * UNION ALL over the event tables. */
#define VIEW_MAX_TABLES 500
/*
 * An event table gets an index on ts from this many rows. Every CREATE
 * costs SQLite time in proportion to the tables already made (it scans
 * its schema table and walks every table), so an index per table made a
 * trace of many classes quadratic twice over; a table of fewer rows is
 * scanned as fast, and its rows are in time order anyway (rowid order).
 */
#define INDEX_MIN_ROWS 4096

/* ---- per event class ------------------------------------------------------ */

struct col {
	uint32_t member;             /* index in the payload struct */
	char *name;                  /* column name, sanitised */
};

struct tab {
	char *name;                  /* table name, sanitised */
	struct col *cols;
	uint32_t ncols;
	sqlite3_stmt *ins;           /* prepared at the first event */
	uint64_t rows;
	char *fields;                /* event_classes.fields (JSON) */
	char *create;                /* CREATE TABLE, until it is made */
	int skip;                    /* ringtrace:thread, ringtrace:thread_name */
};

/* ---- hash sets ----------------------------------------------------------- */

/* Counts a key (a site or tid of 0 is real: u64map keeps it). */
static int kset_add(struct u64map *s, uint64_t key, uint64_t inc)
{
	uint64_t *n = u64map_put(s, key, NULL);
	if (!n)
		return -ENOMEM;
	*n += inc;
	return 0;
}

/* ---- the conversion -------------------------------------------------------- */

struct conv {
	const char *dir;
	sqlite3 *db;
	struct rd_trace *t;
	const struct rd_meta *m;
	struct tab *tabs;            /* parallel to m->events */
	size_t ntabs;
	struct ctf_buf b;            /* scratch: SQL, JSON, UTF-8 */

	sqlite3_stmt *ins_alloc, *ins_failed, *ins_err, *ins_lost;

	struct replay rp;            /* the blocks, freed ones kept */
	int64_t next_id;             /* the last allocations.id */

	struct u64map sites, tids;
	uint64_t events, lost;
	int64_t first_ns, last_ns;
	int have_ns;
	int oom;                     /* a table could not grow: rows are missing */
	char dberr[512];             /* the first SQLite error */
};

static void db_fail(struct conv *c, const char *what)
{
	if (!c->dberr[0])
		snprintf(c->dberr, sizeof(c->dberr), "%s: %s", what, sqlite3_errmsg(c->db));
}

static int exec(struct conv *c, const char *sql)
{
	char *msg = NULL;
	if (sqlite3_exec(c->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		if (!c->dberr[0])
			snprintf(c->dberr, sizeof(c->dberr), "%s", msg ? msg : sqlite3_errmsg(c->db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

static sqlite3_stmt *prepare(struct conv *c, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
		db_fail(c, "prepare");
		return NULL;
	}
	return st;
}

/* Step an insert and reset it (its parameters NULL again unless `keep`:
 * the caller binds every one each time). 0 or -1 (error in c->dberr). */
static int step_keep(struct conv *c, sqlite3_stmt *st, int keep)
{
	int r = sqlite3_step(st);
	sqlite3_reset(st);
	if (!keep)
		sqlite3_clear_bindings(st);
	if (r != SQLITE_DONE) {
		db_fail(c, "insert");
		return -1;
	}
	return 0;
}

static int step(struct conv *c, sqlite3_stmt *st)
{
	return step_keep(c, st, 0);
}

/* ---- text ------------------------------------------------------------------ */

/* s[0..n) as valid UTF-8 (invalid bytes become U+FFFD); json: escaped for
 * a JSON string (without the quotes). */
static void put_text(struct ctf_buf *b, const char *s, size_t n, int json)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		unsigned ch = p[i];
		if (json && (ch < 0x20 || ch == '"' || ch == '\\')) {
			if (ch == '"' || ch == '\\') {
				ctf_buf_putc(b, '\\');
				ctf_buf_putc(b, (char)ch);
			} else if (ch == '\n') {
				ctf_buf_puts(b, "\\n");
			} else if (ch == '\t') {
				ctf_buf_puts(b, "\\t");
			} else {
				ctf_buf_printf(b, "\\u%04x", ch);
			}
			i++;
			continue;
		}
		size_t k = utf8_len(p + i, n - i);
		if (!k) {
			ctf_buf_puts(b, "\xef\xbf\xbd");
			i++;
			continue;
		}
		ctf_buf_add(b, p + i, k);
		i += k;
	}
}

/* A name made of [a-z0-9_] (lower case: SQLite names ignore case). */
static char *sanitize(const char *prefix, const char *name)
{
	size_t lp = strlen(prefix), ln = strlen(name);
	char *s = malloc(lp + ln + 2);
	if (!s)
		return NULL;
	memcpy(s, prefix, lp);
	size_t k = lp;
	if (!lp && (!ln || (name[0] >= '0' && name[0] <= '9')))
		s[k++] = '_';
	for (size_t i = 0; i < ln; i++) {
		char ch = name[i];
		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		s[k++] = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ? ch : '_';
	}
	s[k] = 0;
	return s;
}

/*
 * A set of names, by text: a u64map from the name's key (u64map_str_key,
 * then u64map_next_key while another text holds it) to the name itself.
 * Constant time per name: a trace may have 10^5 event classes, and a
 * foreign one 65,536 fields in a class.
 */
struct nameset {
	struct u64map m;
	struct u64map next;          /* base name's key -> next suffix to try */
};

static int nameset_has(const struct nameset *ns, const char *s)
{
	for (uint64_t h = u64map_str_key(s);; h = u64map_next_key(h)) {
		const uint64_t *v = u64map_get(&ns->m, h);
		if (!v)
			return 0;
		if (!strcmp((const char *)(uintptr_t)*v, s))
			return 1;
	}
}

/* s must outlive the set. 0 or -ENOMEM. */
static int nameset_add(struct nameset *ns, const char *s)
{
	for (uint64_t h = u64map_str_key(s);; h = u64map_next_key(h)) {
		int created;
		uint64_t *v = u64map_put(&ns->m, h, &created);
		if (!v)
			return -ENOMEM;
		if (created) {
			*v = (uint64_t)(uintptr_t)s;
			return 0;
		}
		if (!strcmp((const char *)(uintptr_t)*v, s))
			return 0;
	}
}

static void nameset_free(struct nameset *ns)
{
	u64map_free(&ns->m);
	u64map_free(&ns->next);
}

/*
 * name, or name_2, name_3... so that it is not in the set, then added to
 * it (NULL when out of memory; name is taken over). The suffix search of a
 * base name resumes where its last one stopped, so that many classes with
 * one sanitised name cost no more than distinct ones; the names are the
 * same as trying 2, 3... each time, since every one below is taken.
 */
static char *unique(char *name, struct nameset *taken)
{
	uint64_t *next = u64map_put(&taken->next, u64map_str_key(name), NULL);
	if (!next) {
		free(name);
		return NULL;
	}
	for (uint64_t v = *next > 1 ? *next : 1;; v++) {
		char *cand = name;
		if (v > 1) {
			size_t len = strlen(name) + 24;
			cand = malloc(len);
			if (!cand) {
				free(name);
				return NULL;
			}
			snprintf(cand, len, "%s_%" PRIu64, name, v);
		}
		if (!nameset_has(taken, cand)) {
			*next = v + 1;
			if (cand != name)
				free(name);
			if (nameset_add(taken, cand) < 0) {
				free(cand);
				return NULL;
			}
			return cand;
		}
		if (cand != name)
			free(cand);
	}
}

/* ---- values ---------------------------------------------------------------- */

/* Is member i of struct type t the length of a sequence of the same struct?
 * (Not a column: the sequence's JSON array has the length.) */
static int is_length_member(const struct rd_type *t, uint32_t i)
{
	const char *name = t->members[i].name;
	for (uint32_t k = i + 1; k < t->n_members; k++) {
		const struct rd_type *mt = t->members[k].type;
		if (mt && mt->kind == RD_SEQ && mt->ref && name && !strcmp(mt->ref, name))
			return 1;
	}
	return 0;
}

static void put_json(struct ctf_buf *b, const struct rd_value *v, unsigned depth)
{
	const struct rd_type *t = v->type;
	if (!t || depth > RD_TYPE_DEPTH + 1) {
		ctf_buf_puts(b, "null");
		return;
	}
	switch (t->kind) {
	case RD_INT:
		if (t->is_signed)
			ctf_buf_printf(b, "%" PRId64, (int64_t)v->u);
		else
			ctf_buf_printf(b, "%" PRIu64, v->u);
		return;
	case RD_ENUM: {
		const char *label = rd_enum_label(t, v->u);
		if (label) {
			ctf_buf_putc(b, '"');
			put_text(b, label, strlen(label), 1);
			ctf_buf_putc(b, '"');
		} else if (t->is_signed) {
			ctf_buf_printf(b, "%" PRId64, (int64_t)v->u);
		} else {
			ctf_buf_printf(b, "%" PRIu64, v->u);
		}
		return;
	}
	case RD_FLOAT:
		if (isfinite(v->f))
			ctf_buf_printf(b, "%.17g", v->f);
		else
			ctf_buf_puts(b, "null");
		return;
	case RD_STRING:
		ctf_buf_putc(b, '"');
		put_text(b, v->str.s, v->str.len, 1);
		ctf_buf_putc(b, '"');
		return;
	case RD_STRUCT: {
		ctf_buf_putc(b, '{');
		int first = 1;
		for (uint32_t i = 0; i < v->sub.n; i++) {
			if (i < t->n_members && is_length_member(t, i))
				continue;
			const char *n = rd_display_name(v->sub.v[i].name);
			ctf_buf_puts(b, first ? "\"" : ",\"");
			put_text(b, n, strlen(n), 1);
			ctf_buf_puts(b, "\":");
			put_json(b, &v->sub.v[i], depth + 1);
			first = 0;
		}
		ctf_buf_putc(b, '}');
		return;
	}
	case RD_VARIANT:
		if (v->sub.n)
			put_json(b, &v->sub.v[0], depth + 1);
		else
			ctf_buf_puts(b, "null");
		return;
	case RD_ARRAY:
	case RD_SEQ:
		ctf_buf_putc(b, '[');
		for (uint32_t i = 0; i < v->sub.n; i++) {
			if (i)
				ctf_buf_putc(b, ',');
			put_json(b, &v->sub.v[i], depth + 1);
		}
		ctf_buf_putc(b, ']');
		return;
	}
	ctf_buf_puts(b, "null");
}

/*
 * Bind one field: integers as INTEGER (an unsigned 64-bit value of 2^63 or
 * more reads as its two's complement, a negative number), enums as their
 * label (the number when none matches), floats as REAL, strings as TEXT,
 * compound values as JSON TEXT.
 */
static int bind_value(struct conv *c, sqlite3_stmt *st, int idx, const struct rd_value *v, unsigned depth)
{
	const struct rd_type *t = v->type;
	if (!t)
		return sqlite3_bind_null(st, idx);
	switch (t->kind) {
	case RD_INT:
		return sqlite3_bind_int64(st, idx, (sqlite3_int64)v->u);
	case RD_ENUM: {
		const char *label = rd_enum_label(t, v->u);
		if (!label)
			return sqlite3_bind_int64(st, idx, (sqlite3_int64)v->u);
		ctf_buf_reset(&c->b);
		put_text(&c->b, label, strlen(label), 0);
		return sqlite3_bind_text(st, idx, c->b.len ? c->b.data : "", (int)c->b.len, SQLITE_TRANSIENT);
	}
	case RD_FLOAT:
		return isnan(v->f) ? sqlite3_bind_null(st, idx) : sqlite3_bind_double(st, idx, v->f);
	case RD_STRING:
		ctf_buf_reset(&c->b);
		put_text(&c->b, v->str.s, v->str.len, 0);
		if (c->b.err)
			return SQLITE_NOMEM;
		return sqlite3_bind_text(st, idx, c->b.len ? c->b.data : "", (int)c->b.len, SQLITE_TRANSIENT);
	case RD_VARIANT:
		if (v->sub.n && depth < RD_TYPE_DEPTH)
			return bind_value(c, st, idx, &v->sub.v[0], depth + 1);
		return sqlite3_bind_null(st, idx);
	default:
		ctf_buf_reset(&c->b);
		put_json(&c->b, v, 0);
		if (c->b.err)
			return SQLITE_NOMEM;
		return sqlite3_bind_text(st, idx, c->b.data, (int)c->b.len, SQLITE_TRANSIENT);
	}
}

static const char *sql_type(const struct rd_type *t)
{
	switch (t->kind) {
	case RD_INT: return "INTEGER";
	case RD_FLOAT: return "REAL";
	case RD_STRING:
	case RD_ENUM: return "TEXT";
	default: return "TEXT";    /* JSON */
	}
}

/* The field's kind as the signatures write it: u32, s64, x64, f64, string... */
static void put_kind(struct ctf_buf *b, const struct rd_type *t)
{
	switch (t->kind) {
	case RD_INT:
		ctf_buf_printf(b, "%c%u", t->base == 16 ? 'x' : t->is_signed ? 's' : 'u', t->size);
		return;
	case RD_FLOAT: ctf_buf_printf(b, "f%u", t->size); return;
	case RD_STRING: ctf_buf_puts(b, "string"); return;
	case RD_ENUM: ctf_buf_puts(b, "enum"); return;
	case RD_STRUCT: ctf_buf_puts(b, "struct"); return;
	case RD_VARIANT: ctf_buf_puts(b, "variant"); return;
	case RD_ARRAY:
	case RD_SEQ:
		if (t->elem)
			put_kind(b, t->elem);
		else
			ctf_buf_putc(b, '?');
		if (t->kind == RD_ARRAY)
			ctf_buf_printf(b, "[%" PRIu64 "]", t->length);
		else
			ctf_buf_puts(b, "[]");
		return;
	}
}

/* ---- schema ---------------------------------------------------------------- */

static const char schema[] =
	"CREATE TABLE metadata(key TEXT PRIMARY KEY, value);\n"
	"CREATE TABLE event_classes(id INTEGER, stream_id INTEGER, name TEXT, table_name TEXT, fields TEXT,"
	" events INTEGER);\n"
	"CREATE TABLE threads(tid INTEGER PRIMARY KEY, comm TEXT, events INTEGER);\n"
	"CREATE TABLE lost(ts_begin INTEGER, ts_end INTEGER, cpu INTEGER, count INTEGER, kind TEXT);\n"
	"CREATE TABLE stacks(stack_id INTEGER PRIMARY KEY, depth INTEGER, ref INTEGER, tracer_frames INTEGER);\n"
	"CREATE TABLE frames(stack_id INTEGER, level INTEGER, ip INTEGER, function TEXT, offset INTEGER,"
	" file TEXT, line INTEGER, object TEXT);\n"
	"CREATE TABLE sites(site INTEGER PRIMARY KEY, name TEXT, function TEXT, offset INTEGER, file TEXT,"
	" line INTEGER, object TEXT);\n"
	"CREATE TABLE allocations(id INTEGER PRIMARY KEY, ptr INTEGER, size INTEGER, usable INTEGER,"
	" family TEXT, site INTEGER, stack_id INTEGER, tid INTEGER, cpu INTEGER, ts_alloc INTEGER,"
	" ts_free INTEGER, free_site INTEGER, free_family TEXT, free_tid INTEGER, free_cpu INTEGER, weight REAL);\n"
	"CREATE TABLE failed_allocations(ts INTEGER, size INTEGER, family TEXT, site INTEGER, stack_id INTEGER,"
	" tid INTEGER, cpu INTEGER);\n"
	"CREATE TABLE errors(kind TEXT, ts INTEGER, ptr INTEGER, tid INTEGER, cpu INTEGER, site INTEGER,"
	" family TEXT, alloc_id INTEGER, alloc_site INTEGER, alloc_family TEXT, free_site INTEGER,"
	" free_family TEXT);\n"
	"CREATE VIEW allocations_named AS SELECT a.*, s.name AS site_name, f.name AS free_site_name"
	" FROM allocations a LEFT JOIN sites s ON s.site = a.site LEFT JOIN sites f ON f.site = a.free_site;\n";

static const char indexes[] =
	"CREATE INDEX ix_allocations_site ON allocations(site);\n"
	"CREATE INDEX ix_allocations_stack_id ON allocations(stack_id);\n"
	"CREATE INDEX ix_allocations_ts_alloc ON allocations(ts_alloc);\n"
	"CREATE INDEX ix_frames_stack_id ON frames(stack_id, level);\n";

/* One table per event class, its insert statement and its row of
 * event_classes. */
static int make_tables(struct conv *c)
{
	const struct rd_meta *m = c->m;
	c->ntabs = m->n_events;
	c->tabs = calloc(c->ntabs ? c->ntabs : 1, sizeof(*c->tabs));
	struct nameset taken = { 0 }, cn = { 0 };
	if (!c->tabs)
		return -ENOMEM;
	int r = -ENOMEM;
	struct ctf_buf sql, js;
	ctf_buf_init(&sql);
	ctf_buf_init(&js);
	for (size_t i = 0; i < c->ntabs; i++) {
		const struct rd_event_class *ec = &m->events[i];
		struct tab *tb = &c->tabs[i];
		const char *n = ec->name ? ec->name : "";
		if (!strcmp(n, "ringtrace:thread") || !strcmp(n, "ringtrace:thread_name")) {
			tb->skip = 1;
			continue;
		}
		const struct rd_type *ft = ec->fields && ec->fields->kind == RD_STRUCT ? ec->fields : NULL;
		tb->name = sanitize("ev_", n);
		if (!tb->name || !(tb->name = unique(tb->name, &taken)))
			goto out;

		/* Columns: ts, cpu, tid, then the fields (sequence lengths
		 * are in the arrays). */
		uint32_t nm = ft ? ft->n_members : 0;
		tb->cols = calloc(nm ? nm : 1, sizeof(*tb->cols));
		nameset_free(&cn);
		memset(&cn, 0, sizeof(cn));
		if (!tb->cols || nameset_add(&cn, "ts") < 0 || nameset_add(&cn, "cpu") < 0 ||
		    nameset_add(&cn, "tid") < 0)
			goto out;
		ctf_buf_reset(&sql);
		ctf_buf_reset(&js);
		ctf_buf_printf(&sql, "CREATE TABLE \"%s\"(ts INTEGER, cpu INTEGER, tid INTEGER", tb->name);
		ctf_buf_putc(&js, '[');
		for (uint32_t k = 0; k < nm; k++) {
			if (is_length_member(ft, k) || !ft->members[k].type)
				continue;
			const char *fname = rd_display_name(ft->members[k].name);
			char *col = sanitize("", fname);
			if (!col || !(col = unique(col, &cn)))
				goto out;
			tb->cols[tb->ncols].member = k;
			tb->cols[tb->ncols].name = col;
			tb->ncols++;
			ctf_buf_printf(&sql, ", \"%s\" %s", col, sql_type(ft->members[k].type));
			ctf_buf_puts(&js, tb->ncols > 1 ? ",{\"name\":\"" : "{\"name\":\"");
			put_text(&js, fname, strlen(fname), 1);
			ctf_buf_printf(&js, "\",\"column\":\"%s\",\"type\":\"", col);
			put_kind(&js, ft->members[k].type);
			ctf_buf_puts(&js, "\"}");
		}
		ctf_buf_puts(&sql, ")");
		ctf_buf_putc(&js, ']');
		if (sql.err || js.err)
			goto out;
		/* The table is made at the class's first event (create_table),
		 * its event_classes row at the end, with its count. */
		if (!(tb->create = strdup(sql.data)) || !(tb->fields = strdup(js.data)))
			goto out;
	}
	r = 0;
out:
	ctf_buf_free(&sql);
	ctf_buf_free(&js);
	nameset_free(&taken);
	nameset_free(&cn);
	return r;
}

/* ---- allocations: the consumer of the replay (analyze/replay.h) ------------ */

static void bind_ts(sqlite3_stmt *st, int idx, int ok, int64_t ns)
{
	if (ok)
		sqlite3_bind_int64(st, idx, ns);
	else
		sqlite3_bind_null(st, idx);
}

/* The row of block b (its id is b->user), ended by `ev` (freed: at
 * b->end_site, as b->end says; not freed: handed out again without a
 * free we saw), or alive at the end (ev NULL). */
static int put_alloc_row(struct conv *c, const struct replay_block *b, const struct replay_event *ev, int freed)
{
	sqlite3_stmt *st = c->ins_alloc;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)b->user);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)b->ptr);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)b->size);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)b->usable);
	sqlite3_bind_text(st, 5, mem_alloc_name(b->fam), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)b->site);
	if (b->has_stack)
		sqlite3_bind_int64(st, 7, b->stack);
	sqlite3_bind_int64(st, 8, b->tid);
	sqlite3_bind_int64(st, 9, b->cpu);
	if (b->ns_ok)
		sqlite3_bind_int64(st, 10, b->ns);
	if (ev) {
		bind_ts(st, 11, ev->ns_ok, ev->ns);
		if (freed) {
			sqlite3_bind_int64(st, 12, (sqlite3_int64)b->end_site);
			sqlite3_bind_text(st, 13, replay_end_name(b->end), -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 14, ev->tid);
			sqlite3_bind_int64(st, 15, ev->cpu);
		}
	}
	/* The allocations the row stands for: 1, or a sample's weight. */
	sqlite3_bind_double(st, 16, (double)b->wn / (double)REPLAY_W_ONE);
	return step(c, st);
}

static void site_seen(struct conv *c, uint64_t site)
{
	if (kset_add(&c->sites, site, 1) < 0)
		c->oom = 1;
}

static int on_alloc(void *arg, const struct replay_event *ev, struct replay_block *b)
{
	struct conv *c = arg;
	site_seen(c, ev->site);
	b->user = (uint64_t)++c->next_id;
	return 0;
}

static int on_failed(void *arg, const struct replay_event *ev, uint64_t size, unsigned fam)
{
	struct conv *c = arg;
	site_seen(c, ev->site);
	sqlite3_stmt *st = c->ins_failed;
	bind_ts(st, 1, ev->ns_ok, ev->ns);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)size);
	sqlite3_bind_text(st, 3, mem_alloc_name(fam), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)ev->site);
	if (ev->has_stack)
		sqlite3_bind_int64(st, 5, ev->stack);
	sqlite3_bind_int64(st, 6, ev->tid);
	sqlite3_bind_int64(st, 7, ev->cpu);
	return step(c, st);
}

static int on_end(void *arg, const struct replay_event *ev, const struct replay_block *b)
{
	struct conv *c = arg;
	int freed = b->end != RP_END_REUSED && b->end != RP_END_UNTRACKED;
	if (freed)
		site_seen(c, b->end_site);
	return put_alloc_row(c, b, ev, freed);
}

static int on_error(void *arg, const struct replay_event *ev, const struct replay_error *e)
{
	struct conv *c = arg;
	const struct replay_block *b = e->b;
	sqlite3_stmt *st = c->ins_err;
	sqlite3_bind_text(st, 1, replay_err_name[e->kind], -1, SQLITE_STATIC);
	bind_ts(st, 2, ev->ns_ok, ev->ns);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)e->ptr);
	sqlite3_bind_int64(st, 4, ev->tid);
	sqlite3_bind_int64(st, 5, ev->cpu);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)ev->site);
	sqlite3_bind_text(st, 7, replay_end_name(e->call), -1, SQLITE_STATIC);
	if (b) {
		sqlite3_bind_int64(st, 8, (sqlite3_int64)b->user);
		sqlite3_bind_int64(st, 9, (sqlite3_int64)b->site);
		sqlite3_bind_text(st, 10, mem_alloc_name(b->fam), -1, SQLITE_STATIC);
		if (!b->live) {
			sqlite3_bind_int64(st, 11, (sqlite3_int64)b->end_site);
			sqlite3_bind_text(st, 12, replay_end_name(b->end), -1, SQLITE_STATIC);
		}
	}
	site_seen(c, ev->site);
	return step(c, st);
}

static const struct replay_ops sqlite_ops = { on_alloc, on_failed, on_end, on_error, NULL };

/* ---- events ----------------------------------------------------------------- */

/*
 * Make tb's table and prepare its insert statement, at the first event of
 * its class: 0 or -1 (error in c->dberr). Only classes with events get a
 * table. Every CREATE costs SQLite time in proportion to the tables
 * already there (it scans its schema table, walks every table and expires
 * every prepared statement): a table for each of 10^5 classes that never
 * had an event took hours. A trace has far fewer classes with events.
 */
static int create_table(struct conv *c, struct tab *tb)
{
	if (exec(c, tb->create) < 0)
		return -1;
	free(tb->create);
	tb->create = NULL;
	ctf_buf_reset(&c->b);
	ctf_buf_printf(&c->b, "INSERT INTO \"%s\" VALUES(?,?,?", tb->name);
	for (uint32_t k = 0; k < tb->ncols; k++)
		ctf_buf_puts(&c->b, ",?");
	ctf_buf_puts(&c->b, ")");
	if (c->b.err) {
		snprintf(c->dberr, sizeof(c->dberr), "out of memory");
		return -1;
	}
	tb->ins = prepare(c, c->b.data);
	return tb->ins ? 0 : -1;
}

static int put_event(struct conv *c, const struct rd_item *it)
{
	size_t i = (size_t)(it->ec - c->m->events);
	if (it->ec < c->m->events || i >= c->ntabs)
		return 0;
	struct tab *tb = &c->tabs[i];
	if (tb->skip)
		return 0;
	if (!tb->ins && create_table(c, tb) < 0)
		return -1;
	sqlite3_stmt *st = tb->ins;
	bind_ts(st, 1, it->ns_ok, it->ns);
	sqlite3_bind_int64(st, 2, it->cpu);
	sqlite3_bind_int64(st, 3, it->tid);
	const struct rd_value *f = it->fields;
	for (uint32_t k = 0; k < tb->ncols; k++) {
		uint32_t mi = tb->cols[k].member;
		int r = f && mi < f->sub.n ? bind_value(c, st, (int)k + 4, &f->sub.v[mi], 0) :
					     sqlite3_bind_null(st, (int)k + 4);
		if (r != SQLITE_OK) {
			db_fail(c, "bind");
			return -1;
		}
	}
	if (step_keep(c, st, 1) < 0)
		return -1;
	tb->rows++;
	c->events++;
	if (it->ns_ok) {
		if (!c->have_ns)
			c->first_ns = it->ns;
		c->last_ns = it->ns;
		c->have_ns = 1;
	}
	if (kset_add(&c->tids, it->tid, 1) < 0)
		c->oom = 1;
	return replay_item(&c->rp, it) < 0 ? -1 : 0;
}

static int put_loss(struct conv *c, const struct rd_item *it)
{
	sqlite3_stmt *st = c->ins_lost;
	if (it->has_begin && it->ns_ok)
		sqlite3_bind_int64(st, 1, it->ns);
	if (it->end_ok)
		sqlite3_bind_int64(st, 2, it->end_ns);
	sqlite3_bind_int64(st, 3, it->cpu);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)it->count);
	sqlite3_bind_text(st, 5, it->kind == RD_ITEM_LOST_EVENTS ? "events" : "packets", -1, SQLITE_STATIC);
	if (it->kind == RD_ITEM_LOST_EVENTS)
		c->lost += it->count;
	return step(c, st);
}

/* ---- after the events ------------------------------------------------------ */

static int put_meta(struct conv *c, sqlite3_stmt *st, const char *key, const char *s, int64_t num)
{
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	if (s) {
		ctf_buf_reset(&c->b);
		put_text(&c->b, s, strlen(s), 0);
		sqlite3_bind_text(st, 2, c->b.len ? c->b.data : "", (int)c->b.len, SQLITE_TRANSIENT);
	} else {
		sqlite3_bind_int64(st, 2, num);
	}
	return step(c, st);
}

static int put_metadata(struct conv *c)
{
	sqlite3_stmt *st = prepare(c, "INSERT OR REPLACE INTO metadata VALUES(?,?)");
	if (!st)
		return -1;
	int r = 0;
	const struct rd_meta *m = c->m;
	for (size_t i = 0; i < m->n_env && !r; i++)
		if (m->env[i].key)
			r = put_meta(c, st, m->env[i].key, m->env[i].str, m->env[i].num);
	/* Keys with a dot cannot be env keys (C identifiers). */
	if (!r && m->n_clocks) {
		const struct rd_clock *k = &m->clocks[0];
		r = put_meta(c, st, "clock.name", k->name ? k->name : "", 0);
		if (!r)
			r = put_meta(c, st, "clock.freq", NULL, (int64_t)k->freq);
		if (!r)
			r = put_meta(c, st, "clock.offset_s", NULL, k->offset_s);
		if (!r)
			r = put_meta(c, st, "clock.offset", NULL, (int64_t)k->offset);
	}
	if (!r)
		r = put_meta(c, st, "convert.version", "ringtrace " RINGTRACE_VERSION, 0);
	if (!r)
		r = put_meta(c, st, "convert.source", c->dir, 0);
	if (!r)
		r = put_meta(c, st, "convert.events", NULL, (int64_t)c->events);
	if (!r)
		r = put_meta(c, st, "convert.lost_events", NULL, (int64_t)c->lost);
	if (!r && c->have_ns)
		r = put_meta(c, st, "convert.first_ts", NULL, c->first_ns);
	if (!r && c->have_ns)
		r = put_meta(c, st, "convert.last_ts", NULL, c->last_ns);
	sqlite3_finalize(st);
	return r;
}

static int put_threads(struct conv *c)
{
	sqlite3_stmt *st = prepare(c, "INSERT OR REPLACE INTO threads VALUES(?,?,?)");
	if (!st)
		return -1;
	int r = 0;
	/* Threads named in the env that had no event first, so that the
	 * counted rows replace them. */
	struct rd_thread_name *names = NULL;
	size_t nn = 0;
	if (rd_meta_thread_names(c->m, &names, &nn) < 0)
		nn = 0;
	for (size_t i = 0; i < nn && !r; i++) {
		sqlite3_bind_int64(st, 1, names[i].tid);
		ctf_buf_reset(&c->b);
		put_text(&c->b, names[i].comm, strnlen(names[i].comm, sizeof(names[i].comm)), 0);
		sqlite3_bind_text(st, 2, c->b.len ? c->b.data : "", (int)c->b.len, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 3, 0);
		r = step(c, st);
	}
	free(names);
	uint64_t tid, n;
	for (size_t pos = 0; !r && u64map_next(&c->tids, &pos, &tid, &n);) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)tid);
		const char *comm = tid ? rd_trace_comm(c->t, (uint32_t)tid) : NULL;
		if (comm) {
			ctf_buf_reset(&c->b);
			put_text(&c->b, comm, strlen(comm), 0);
			sqlite3_bind_text(st, 2, c->b.len ? c->b.data : "", (int)c->b.len, SQLITE_TRANSIENT);
		}
		sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
		r = step(c, st);
	}
	sqlite3_finalize(st);
	return r;
}

/* The event_classes rows, with the rows of each table. */
static int put_event_classes(struct conv *c)
{
	sqlite3_stmt *st = prepare(c, "INSERT INTO event_classes VALUES(?,?,?,?,?,?)");
	if (!st)
		return -1;
	int r = 0;
	for (size_t i = 0; i < c->ntabs && !r; i++) {
		const struct tab *tb = &c->tabs[i];
		const struct rd_event_class *ec = &c->m->events[i];
		if (tb->skip)
			continue;
		const char *n = ec->name ? ec->name : "";
		sqlite3_bind_int64(st, 1, (sqlite3_int64)ec->id);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)ec->stream_id);
		ctf_buf_reset(&c->b);
		put_text(&c->b, n, strlen(n), 0);
		sqlite3_bind_text(st, 3, c->b.len ? c->b.data : "", (int)c->b.len, SQLITE_TRANSIENT);
		if (tb->rows)
			sqlite3_bind_text(st, 4, tb->name, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 4);
		sqlite3_bind_text(st, 5, tb->fields, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, (sqlite3_int64)tb->rows);
		r = step(c, st);
	}
	sqlite3_finalize(st);
	return r;
}

/* The blocks alive at the end. */
static int put_live(struct conv *c)
{
	for (size_t i = 0; i < c->rp.nblk; i++)
		if (c->rp.blk[i].live && put_alloc_row(c, &c->rp.blk[i], NULL, 0) < 0)
			return -1;
	return 0;
}

/*
 * Bind function, offset, file, line, object of return address ip at
 * columns idx.. (the line is the call's: ip - 1; for a stack frame
 * without a function there, ip itself). 1 resolved, 0 not.
 */
static int bind_sym(struct sym_ctx *ctx, sqlite3_stmt *st, int idx, uint64_t ip, int frame, struct sym_result *s)
{
	uint64_t back = 1;
	if (!ip || !ctx || sym_resolve(ctx, ip - 1, s) < 0)
		return 0;
	/* A signal frame's address is the trampoline's first byte
	 * (__restore_rt), not a return address: ip - 1 is outside it. */
	if (frame && !s->has_function) {
		if (sym_resolve(ctx, ip, s) < 0)
			return 0;
		back = 0;
	}
	if (s->has_function) {
		sqlite3_bind_text(st, idx, s->function, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, idx + 1, (sqlite3_int64)(s->offset + back));
	}
	if (s->file)
		sqlite3_bind_text(st, idx + 2, s->file, -1, SQLITE_TRANSIENT);
	if (s->line > 0)
		sqlite3_bind_int(st, idx + 3, s->line);
	if (s->object)
		sqlite3_bind_text(st, idx + 4, s->object, -1, SQLITE_TRANSIENT);
	return 1;
}

/* The call sites, named as `ringtrace report` names them. */
static int put_sites(struct conv *c, struct sym_ctx *ctx)
{
	sqlite3_stmt *st = prepare(c, "INSERT INTO sites VALUES(?,?,?,?,?,?,?)");
	if (!st)
		return -1;
	int r = 0;
	uint64_t site, uses;
	for (size_t pos = 0; !r && u64map_next(&c->sites, &pos, &site, &uses);) {
		struct sym_result s;
		char name[SYM_NAME_MAX + PATH_MAX + 64];
		sqlite3_bind_int64(st, 1, (sqlite3_int64)site);
		if (bind_sym(ctx, st, 3, site, 0, &s)) {
			const char *obj = s.object ? strrchr(s.object, '/') : NULL;
			obj = obj ? obj + 1 : s.object ? s.object : "?";
			if (s.has_function && s.file)
				snprintf(name, sizeof(name), "%s+0x%" PRIx64 " (%s:%d)", s.function, s.offset + 1, s.file,
					 s.line);
			else if (s.has_function)
				snprintf(name, sizeof(name), "%s+0x%" PRIx64 " (%s)", s.function, s.offset + 1, obj);
			else
				snprintf(name, sizeof(name), "%s+0x%" PRIx64, obj, s.object_offset + 1);
		} else {
			snprintf(name, sizeof(name), "0x%" PRIx64, site);
		}
		sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
		r = step(c, st);
	}
	sqlite3_finalize(st);
	return r;
}

static int put_stacks(struct conv *c, const struct stack_files *sf, struct sym_ctx *ctx)
{
	sqlite3_stmt *ss = prepare(c, "INSERT OR REPLACE INTO stacks VALUES(?,?,?,?)");
	sqlite3_stmt *fs = prepare(c, "INSERT INTO frames VALUES(?,?,?,?,?,?,?,?)");
	int r = ss && fs ? 0 : -1;
	for (size_t i = 0; i < sf->nstacks && !r; i++) {
		const struct stackmap_stack *s = &sf->stacks[i];
		uint32_t depth = s->depth < STACKMAP_MAX_DEPTH ? s->depth : STACKMAP_MAX_DEPTH;
		for (uint32_t k = 0; k < depth && !r; k++) {
			struct sym_result res;
			sqlite3_bind_int64(fs, 1, s->id);
			sqlite3_bind_int64(fs, 2, k);
			sqlite3_bind_int64(fs, 3, (sqlite3_int64)s->ips[k]);
			(void)bind_sym(ctx, fs, 4, s->ips[k], 1, &res);
			r = step(c, fs);
		}
		if (r)
			break;
		/* As the report: the program's part of the stack. */
		uint32_t skip = frames_first(ctx, s->ips, depth);
		sqlite3_bind_int64(ss, 1, s->id);
		sqlite3_bind_int64(ss, 2, depth);
		sqlite3_bind_int64(ss, 3, (sqlite3_int64)(s->ref > INT64_MAX ? INT64_MAX : s->ref));
		sqlite3_bind_int64(ss, 4, skip);
		r = step(c, ss);
	}
	sqlite3_finalize(ss);
	sqlite3_finalize(fs);
	return r;
}

/* Index on ts of every event table of INDEX_MIN_ROWS rows or more, and
 * the `events` view over all the event tables (those of the classes with
 * events). */
static int put_event_indexes(struct conv *c)
{
	struct ctf_buf sql;
	ctf_buf_init(&sql);
	int r = 0;
	size_t n = 0;
	/* Done with the inserts: a statement still prepared would be expired
	 * (walked) by each CREATE below. */
	for (size_t i = 0; i < c->ntabs; i++) {
		sqlite3_finalize(c->tabs[i].ins);
		c->tabs[i].ins = NULL;
	}
	for (size_t i = 0; i < c->ntabs && !r; i++) {
		if (c->tabs[i].skip || !c->tabs[i].rows)
			continue;
		n++;
		if (c->tabs[i].rows < INDEX_MIN_ROWS)
			continue;
		ctf_buf_reset(&sql);
		ctf_buf_printf(&sql, "CREATE INDEX \"ix_%s_ts\" ON \"%s\"(ts)", c->tabs[i].name, c->tabs[i].name);
		r = sql.err ? -1 : exec(c, sql.data);
	}
	if (r || n > VIEW_MAX_TABLES) {
		ctf_buf_free(&sql);
		return r;
	}
	ctf_buf_reset(&sql);
	ctf_buf_puts(&sql, "CREATE VIEW events(ts, cpu, tid, name, table_name) AS ");
	size_t k = 0;
	for (size_t i = 0; i < c->ntabs; i++) {
		if (c->tabs[i].skip || !c->tabs[i].rows)
			continue;
		char *q = sqlite3_mprintf("%sSELECT ts, cpu, tid, %Q, %Q FROM \"%w\"", k++ ? " UNION ALL " : "",
					  c->m->events[i].name ? c->m->events[i].name : "", c->tabs[i].name,
					  c->tabs[i].name);
		if (!q) {
			ctf_buf_free(&sql);
			return -1;
		}
		ctf_buf_puts(&sql, q);
		sqlite3_free(q);
	}
	if (!k)
		ctf_buf_puts(&sql, "SELECT NULL, NULL, NULL, NULL, NULL WHERE 0");
	r = sql.err ? -1 : exec(c, sql.data);
	ctf_buf_free(&sql);
	return r;
}

static void conv_free(struct conv *c)
{
	for (size_t i = 0; c->tabs && i < c->ntabs; i++) {
		for (uint32_t k = 0; k < c->tabs[i].ncols; k++)
			free(c->tabs[i].cols[k].name);
		free(c->tabs[i].cols);
		free(c->tabs[i].name);
		free(c->tabs[i].fields);
		free(c->tabs[i].create);
		sqlite3_finalize(c->tabs[i].ins);
	}
	free(c->tabs);
	sqlite3_finalize(c->ins_alloc);
	sqlite3_finalize(c->ins_failed);
	sqlite3_finalize(c->ins_err);
	sqlite3_finalize(c->ins_lost);
	replay_free(&c->rp);
	u64map_free(&c->sites);
	u64map_free(&c->tids);
	ctf_buf_free(&c->b);
	/* Idempotent: the error path may come after a first call. */
	c->tabs = NULL;
	c->ntabs = 0;
	c->ins_alloc = c->ins_failed = c->ins_err = c->ins_lost = NULL;
	memset(&c->sites, 0, sizeof(c->sites));
	memset(&c->tids, 0, sizeof(c->tids));
}

int convert_sqlite(const char *dir, const char *out, unsigned out_flags)
{
	if (!out || !*out || !strcmp(out, "-")) {
		fprintf(stderr, PFX "an SQLite database cannot go to standard output: say -o FILE\n");
		return 2;
	}

	struct conv c;
	memset(&c, 0, sizeof(c));
	c.dir = dir;
	ctf_buf_init(&c.b);
	char err[1024];
	if (rd_trace_open(dir, &c.t, err, sizeof(err)) < 0) {
		fprintf(stderr, PFX "%s: %s\n", dir, err);
		ctf_buf_free(&c.b);
		return 1;
	}
	c.m = rd_trace_meta(c.t);
	if (replay_init(&c.rp, c.m, REPLAY_KEEP_FREED, &sqlite_ops, &c) < 0) {
		fprintf(stderr, PFX "%s: out of memory\n", dir);
		rd_trace_close(c.t);
		ctf_buf_free(&c.b);
		return 1;
	}
	/* A new file under a random name in out's directory (util/outdir.h):
	 * a name fixed in advance could be planted as a symlink. SQLite opens
	 * it by name, a path without symlinks, told to refuse one (a name
	 * swapped in a shared directory); the commit checks it is still our
	 * file. With no journal SQLite makes no other file. */
	struct outfile of;
	int k = outfile_open(&of, out, out_flags, 0644, err, sizeof(err));
	if (k < 0) {
		fprintf(stderr, PFX "cannot create '%s': %s\n", out, err);
		replay_free(&c.rp);
		rd_trace_close(c.t);
		ctf_buf_free(&c.b);
		return 1;
	}
	int status = 1, trace_err = 0;
	const char *step_name = "cannot write the database";
	if (sqlite3_open_v2(of.libpath, &c.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
			    NULL) != SQLITE_OK) {
		snprintf(c.dberr, sizeof(c.dberr), "%s", c.db ? sqlite3_errmsg(c.db) : "out of memory");
		goto done;
	}
	/* A private file renamed at the end: no journal, no syncs until then. */
	if (exec(&c, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
		     " PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY; BEGIN") < 0 ||
	    exec(&c, schema) < 0)
		goto done;
	k = make_tables(&c);
	if (k < 0) {
		if (k == -ENOMEM && !c.dberr[0])
			snprintf(c.dberr, sizeof(c.dberr), "out of memory");
		goto done;
	}
	if (!(c.ins_alloc = prepare(&c, "INSERT INTO allocations VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")) ||
	    !(c.ins_failed = prepare(&c, "INSERT INTO failed_allocations VALUES(?,?,?,?,?,?,?)")) ||
	    !(c.ins_err = prepare(&c, "INSERT INTO errors VALUES(?,?,?,?,?,?,?,?,?,?,?,?)")) ||
	    !(c.ins_lost = prepare(&c, "INSERT INTO lost VALUES(?,?,?,?,?)")))
		goto done;

	struct rd_item it;
	for (;;) {
		k = rd_trace_next(c.t, &it);
		if (k == 0)
			break;
		if (k < 0) {
			trace_err = 1;
			break;
		}
		if ((it.kind == RD_ITEM_EVENT ? put_event(&c, &it) : put_loss(&c, &it)) < 0)
			goto done;
	}
	struct stack_files sf = { 0 };
	k = stack_files_read(dir, &sf);
	if (k < 0 && k != -ENOENT)
		fprintf(stderr, PFX "%s/stacks is damaged (%s): no stacks, call sites as addresses\n", dir,
			strerror(-k));
	struct sym_ctx *ctx = k == 0 ? frames_symbolizer(&sf, NULL) : NULL;
	k = put_live(&c);
	if (!k)
		k = put_sites(&c, ctx);
	if (!k)
		k = put_stacks(&c, &sf, ctx);
	sym_ctx_free(ctx);
	stack_files_free(&sf);
	if (k || put_threads(&c) < 0 || put_event_classes(&c) < 0 || put_metadata(&c) < 0)
		goto done;
	step_name = "cannot index the database";
	if (exec(&c, indexes) < 0 || put_event_indexes(&c) < 0 || exec(&c, "COMMIT") < 0)
		goto done;
	conv_free(&c);
	/* Every statement is finalized: close cannot be busy. */
	if (sqlite3_close(c.db) != SQLITE_OK) {
		db_fail(&c, "close");
		c.db = NULL;
		goto done;
	}
	c.db = NULL;
	k = outfile_commit(&of, 0);
	if (k < 0) {
		fprintf(stderr, PFX "cannot write '%s': %s\n", out, strerror(-k));
		rd_trace_close(c.t);
		return 1;
	}
	status = 0;
	if (trace_err) {
		fprintf(stderr, PFX "%s: %s (the database holds the events before it)\n", dir, rd_trace_errmsg(c.t));
		status = 1;
	} else if (c.oom || c.rp.oom) {
		fprintf(stderr, PFX "%s: out of memory: some allocations or call sites are missing\n", dir);
		status = 1;
	}
	rd_trace_close(c.t);
	return status;

done:
	fprintf(stderr, PFX "%s: %s: %s\n", out, step_name, c.dberr[0] ? c.dberr : "out of memory");
	conv_free(&c);
	if (c.db)
		sqlite3_close(c.db);
	outfile_abort(&of);
	rd_trace_close(c.t);
	return status;
}
