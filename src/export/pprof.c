/*
 * pprof.c - the pprof profile writer (pprof.h): tables that deduplicate
 * strings, mappings, functions, locations and samples, a hand-written
 * protobuf encoder for perftools.profiles.Profile, and gzip (zlib).
 *
 * Called by the converters of `ringtrace convert --to pprof` once per
 * sample they add, then once to write. Built for profiles of a few
 * hundred thousand distinct stacks: each table is a vector indexed by id
 * with a hash map (util/u64map.h) from a hash of the entry to its index;
 * entries whose hashes collide are put under u64map_next_key(), and found
 * by comparing the entries themselves. Sample stacks and labels live in
 * two shared pools, so a sample costs one small struct and its share of
 * the pools.
 *
 * The wire format (developers.google.com/protocol-buffers, "Encoding"):
 * a message is a series of (field number << 3 | wire type) keys, each
 * followed by a varint (wire type 0) or by a varint length and that many
 * bytes (wire type 2: strings, nested messages, packed repeated scalars).
 * Fields at their zero value are left out, as proto3 encoders do.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export/pprof.h"
#include "util/u64map.h"
#include "sym/symbolize.h"

/* Field numbers of profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12, PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3, LABEL_NUM_UNIT = 4,
	MAPPING_ID = 1, MAPPING_MEMORY_START = 2, MAPPING_MEMORY_LIMIT = 3, MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7, MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

struct pmapping {
	uint64_t start, limit, offset;
	int64_t file, build_id;      /* string indexes */
	int has_functions, has_filenames, has_lines;
};

struct pfunction {
	int64_t name, system_name, file;
};

struct plocation {
	uint64_t addr;
	uint64_t mapping;            /* id, 0: none */
	uint64_t function;           /* id, 0: no line */
	int64_t line;
};

struct plabel {
	int64_t key, str, num, unit;
};

struct psample {
	size_t loc;                  /* first location id in p->locs */
	size_t lab;                  /* first label in p->labs */
	uint32_t nloc, nlab;
};

struct pprof {
	char **str;                  /* the string table; str[0] = "" */
	size_t nstr, capstr;
	struct u64map str_ix;

	int64_t (*stype)[2];         /* sample types: type, unit */
	size_t nstype, capstype;
	int64_t default_type;        /* string index, 0: none */
	int64_t period_type[2], period;
	int64_t time_nanos, duration_nanos;
	int64_t *comment;
	size_t ncomment, capcomment;

	struct pmapping *map;        /* id = index + 1 */
	size_t nmap, capmap;
	struct u64map map_ix;
	struct pfunction *fn;
	size_t nfn, capfn;
	struct u64map fn_ix;
	struct plocation *loc;
	size_t nloc, caploc;
	struct u64map loc_ix;        /* address -> id */

	struct psample *smp;
	size_t nsmp, capsmp;
	struct u64map smp_ix;
	uint64_t *locs;              /* the samples' stacks, location ids */
	size_t nlocs, caplocs;
	struct plabel *labs;
	size_t nlabs, caplabs;
	int64_t *vals;               /* nstype per sample */
	size_t capvals;

	uint64_t *tmp_locs;          /* the sample being added */
	size_t captmp_locs;
	struct plabel *tmp_labs;
	size_t captmp_labs;

	pprof_sym_fn sym;
	void *sym_arg;
	struct sym_arg *own_sym;     /* pprof_use_symbols()'s, owned */
};

/* pprof_use_symbols()'s callback argument: the result is large (a 1 KiB
 * name), so it is kept here rather than on the stack. */
struct sym_arg {
	struct sym_ctx *ctx;
	struct sym_result r;
};

/* Make room for `need` elements of `size` bytes in *v (capacity *cap). */
static int grow(void *v, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 16;
	while (c < need) {
		if (c > SIZE_MAX / 2 / size)
			return -ENOMEM;
		c *= 2;
	}
	void *nv = realloc(*(void **)v, c * size);
	if (!nv)
		return -ENOMEM;
	*(void **)v = nv;
	*cap = c;
	return 0;
}

/* ---- the tables ------------------------------------------------------------------ */

/* The index of s in the string table, added if new; NULL and "" are 0. */
static int64_t str_index(struct pprof *p, const char *s)
{
	if (!s || !*s)
		return 0;
	uint64_t key = u64map_str_key(s), *v;
	while ((v = u64map_get(&p->str_ix, key))) {
		if (!strcmp(p->str[*v], s))
			return (int64_t)*v;
		key = u64map_next_key(key);
	}
	if (grow(&p->str, &p->capstr, p->nstr + 1, sizeof(*p->str)) < 0)
		return -ENOMEM;
	char *d = strdup(s);
	if (!d || !(v = u64map_put(&p->str_ix, key, NULL))) {
		free(d);
		return -ENOMEM;
	}
	*v = p->nstr;
	p->str[p->nstr] = d;
	return (int64_t)p->nstr++;
}

int pprof_new(struct pprof **ret)
{
	struct pprof *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (grow(&p->str, &p->capstr, 1, sizeof(*p->str)) < 0 || !(p->str[0] = strdup(""))) {
		pprof_free(p);
		return -ENOMEM;
	}
	p->nstr = 1;
	*ret = p;
	return 0;
}

void pprof_free(struct pprof *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nstr; i++)
		free(p->str[i]);
	free(p->str);
	u64map_free(&p->str_ix);
	free(p->stype);
	free(p->comment);
	free(p->map);
	u64map_free(&p->map_ix);
	free(p->fn);
	u64map_free(&p->fn_ix);
	free(p->loc);
	u64map_free(&p->loc_ix);
	free(p->smp);
	u64map_free(&p->smp_ix);
	free(p->locs);
	free(p->labs);
	free(p->vals);
	free(p->tmp_locs);
	free(p->tmp_labs);
	free(p->own_sym);
	free(p);
}

int pprof_add_sample_type(struct pprof *p, const char *type, const char *unit)
{
	if (!p || !type || !*type)
		return -EINVAL;
	if (p->nsmp)
		return -EBUSY;
	int64_t t = str_index(p, type), u = str_index(p, unit);
	if (t < 0 || u < 0 || grow(&p->stype, &p->capstype, p->nstype + 1, sizeof(*p->stype)) < 0)
		return -ENOMEM;
	p->stype[p->nstype][0] = t;
	p->stype[p->nstype][1] = u;
	return (int)p->nstype++;
}

int pprof_set_default_sample_type(struct pprof *p, const char *type)
{
	for (size_t i = 0; p && type && i < p->nstype; i++)
		if (!strcmp(p->str[p->stype[i][0]], type)) {
			p->default_type = p->stype[i][0];
			return 0;
		}
	return -ENOENT;
}

int pprof_set_period(struct pprof *p, const char *type, const char *unit, int64_t period)
{
	if (!p)
		return -EINVAL;
	int64_t t = str_index(p, type), u = str_index(p, unit);
	if (t < 0 || u < 0)
		return -ENOMEM;
	p->period_type[0] = t;
	p->period_type[1] = u;
	p->period = period;
	return 0;
}

void pprof_set_time(struct pprof *p, int64_t time_nanos, int64_t duration_nanos)
{
	p->time_nanos = time_nanos;
	p->duration_nanos = duration_nanos;
}

int pprof_add_comment(struct pprof *p, const char *text)
{
	if (!p || !text)
		return -EINVAL;
	int64_t s = str_index(p, text);
	if (s < 0 || grow(&p->comment, &p->capcomment, p->ncomment + 1, sizeof(*p->comment)) < 0)
		return -ENOMEM;
	p->comment[p->ncomment++] = s;
	return 0;
}

int pprof_add_mapping(struct pprof *p, uint64_t start, uint64_t limit, uint64_t offset, const char *file,
		      const char *build_id)
{
	if (!p || start >= limit)
		return -EINVAL;
	if (p->nloc)
		return -EBUSY; /* the locations made so far were placed without it */
	int64_t f = str_index(p, file), b = str_index(p, build_id);
	if (f < 0 || b < 0)
		return -ENOMEM;
	uint64_t key = rt_mix64((uint64_t)f << 32 ^ (uint64_t)b), *v;
	key = rt_mix64(start ^ rt_mix64(limit ^ rt_mix64(offset ^ key)));
	while ((v = u64map_get(&p->map_ix, key))) {
		const struct pmapping *m = &p->map[*v];
		if (m->start == start && m->limit == limit && m->offset == offset && m->file == f && m->build_id == b)
			return (int)(*v + 1);
		key = u64map_next_key(key);
	}
	if (p->nmap >= INT_MAX || grow(&p->map, &p->capmap, p->nmap + 1, sizeof(*p->map)) < 0 ||
	    !(v = u64map_put(&p->map_ix, key, NULL)))
		return -ENOMEM;
	*v = p->nmap;
	p->map[p->nmap] = (struct pmapping){ .start = start, .limit = limit, .offset = offset, .file = f,
					     .build_id = b };
	return (int)++p->nmap;
}

int pprof_set_symbolizer(struct pprof *p, pprof_sym_fn fn, void *arg)
{
	if (!p)
		return -EINVAL;
	if (p->nloc)
		return -EBUSY;
	p->sym = fn;
	p->sym_arg = arg;
	return 0;
}

/* pprof_sym_fn over a symbolisation context. */
static int sym_ctx_fn(void *arg, uint64_t addr, struct pprof_frame *ret)
{
	struct sym_arg *a = arg;
	if (sym_resolve(a->ctx, addr, &a->r) < 0 || !a->r.has_function || !a->r.function[0])
		return 0;
	*ret = (struct pprof_frame){ .function = a->r.function, .file = a->r.file, .line = a->r.line };
	return 1;
}

int pprof_use_symbols(struct pprof *p, struct sym_ctx *ctx)
{
	if (!p)
		return -EINVAL;
	if (p->nloc)
		return -EBUSY;
	if (!ctx)
		return pprof_set_symbolizer(p, NULL, NULL);
	if (!p->own_sym && !(p->own_sym = calloc(1, sizeof(*p->own_sym))))
		return -ENOMEM;
	p->own_sym->ctx = ctx;
	return pprof_set_symbolizer(p, sym_ctx_fn, p->own_sym);
}

static int64_t function_id(struct pprof *p, const struct pprof_frame *fr)
{
	int64_t n = str_index(p, fr->function);
	int64_t s = fr->system_name ? str_index(p, fr->system_name) : n;
	int64_t f = str_index(p, fr->file);
	if (n < 0 || s < 0 || f < 0)
		return -ENOMEM;
	uint64_t key = rt_mix64((uint64_t)n ^ rt_mix64((uint64_t)s ^ rt_mix64((uint64_t)f))), *v;
	while ((v = u64map_get(&p->fn_ix, key))) {
		const struct pfunction *e = &p->fn[*v];
		if (e->name == n && e->system_name == s && e->file == f)
			return (int64_t)*v + 1;
		key = u64map_next_key(key);
	}
	if (grow(&p->fn, &p->capfn, p->nfn + 1, sizeof(*p->fn)) < 0 || !(v = u64map_put(&p->fn_ix, key, NULL)))
		return -ENOMEM;
	*v = p->nfn;
	p->fn[p->nfn] = (struct pfunction){ n, s, f };
	return (int64_t)++p->nfn;
}

/* The location of addr: made, placed and symbolised the first time. */
static int64_t location_id(struct pprof *p, uint64_t addr)
{
	uint64_t *v = u64map_get(&p->loc_ix, addr);
	if (v)
		return (int64_t)*v;
	struct plocation l = { .addr = addr };
	struct pmapping *m = NULL;
	for (size_t i = 0; i < p->nmap && !m; i++)
		if (p->map[i].start <= addr && addr < p->map[i].limit) {
			m = &p->map[i];
			l.mapping = i + 1;
		}
	struct pprof_frame fr = { 0 };
	if (p->sym && p->sym(p->sym_arg, addr, &fr) > 0 && fr.function && fr.function[0]) {
		int64_t f = function_id(p, &fr);
		if (f < 0)
			return f;
		l.function = (uint64_t)f;
		l.line = fr.line > 0 ? fr.line : 0;
		if (m) {
			m->has_functions = 1;
			m->has_filenames |= fr.file && fr.file[0];
			m->has_lines |= l.line > 0;
		}
	}
	if (grow(&p->loc, &p->caploc, p->nloc + 1, sizeof(*p->loc)) < 0 || !(v = u64map_put(&p->loc_ix, addr, NULL)))
		return -ENOMEM;
	p->loc[p->nloc++] = l;
	*v = p->nloc;
	return (int64_t)p->nloc;
}

static uint64_t sample_hash(const uint64_t *locs, size_t nloc, const struct plabel *labs, size_t nlab)
{
	uint64_t h = rt_mix64(nloc << 16 ^ nlab);
	for (size_t i = 0; i < nloc; i++)
		h = rt_mix64(h ^ locs[i]);
	for (size_t i = 0; i < nlab; i++)
		h = rt_mix64(h ^ rt_mix64((uint64_t)labs[i].key << 32 ^ (uint64_t)labs[i].str) ^
			       rt_mix64((uint64_t)labs[i].num ^ (uint64_t)labs[i].unit << 48));
	return h;
}

static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

int pprof_add_sample(struct pprof *p, const uint64_t *addrs, size_t n, const int64_t *values,
		     const struct pprof_label *labels, size_t nlabels)
{
	if (!p || !p->nstype || (n && !addrs) || !values || (nlabels && !labels) || n > UINT32_MAX ||
	    nlabels > UINT32_MAX)
		return -EINVAL;
	if (grow(&p->tmp_locs, &p->captmp_locs, n, sizeof(*p->tmp_locs)) < 0 ||
	    grow(&p->tmp_labs, &p->captmp_labs, nlabels, sizeof(*p->tmp_labs)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int64_t id = location_id(p, addrs[i]);
		if (id < 0)
			return (int)id;
		p->tmp_locs[i] = (uint64_t)id;
	}
	for (size_t i = 0; i < nlabels; i++) {
		const struct pprof_label *l = &labels[i];
		struct plabel *t = &p->tmp_labs[i];
		if (!l->key || !l->key[0])
			return -EINVAL;
		t->key = str_index(p, l->key);
		t->str = l->str ? str_index(p, l->str) : 0;
		t->num = l->str ? 0 : l->num;
		t->unit = l->str ? 0 : str_index(p, l->num_unit);
		if (t->key < 0 || t->str < 0 || t->unit < 0)
			return -ENOMEM;
	}
	uint64_t key = sample_hash(p->tmp_locs, n, p->tmp_labs, nlabels), *v;
	while ((v = u64map_get(&p->smp_ix, key))) {
		const struct psample *s = &p->smp[*v];
		/* (memcmp only on non-empty arrays: the pools may be NULL.) */
		if (s->nloc == n && s->nlab == nlabels &&
		    (!n || !memcmp(&p->locs[s->loc], p->tmp_locs, n * sizeof(*p->tmp_locs))) &&
		    (!nlabels || !memcmp(&p->labs[s->lab], p->tmp_labs, nlabels * sizeof(*p->tmp_labs)))) {
			int64_t *sv = &p->vals[*v * p->nstype];
			for (size_t i = 0; i < p->nstype; i++)
				sv[i] = add_sat(sv[i], values[i]);
			return 0;
		}
		key = u64map_next_key(key);
	}
	if (grow(&p->smp, &p->capsmp, p->nsmp + 1, sizeof(*p->smp)) < 0 ||
	    grow(&p->locs, &p->caplocs, p->nlocs + n, sizeof(*p->locs)) < 0 ||
	    grow(&p->labs, &p->caplabs, p->nlabs + nlabels, sizeof(*p->labs)) < 0 ||
	    grow(&p->vals, &p->capvals, (p->nsmp + 1) * p->nstype, sizeof(*p->vals)) < 0 ||
	    !(v = u64map_put(&p->smp_ix, key, NULL)))
		return -ENOMEM;
	*v = p->nsmp;
	p->smp[p->nsmp] = (struct psample){ p->nlocs, p->nlabs, (uint32_t)n, (uint32_t)nlabels };
	if (n)
		memcpy(&p->locs[p->nlocs], p->tmp_locs, n * sizeof(*p->locs));
	if (nlabels)
		memcpy(&p->labs[p->nlabs], p->tmp_labs, nlabels * sizeof(*p->labs));
	memcpy(&p->vals[p->nsmp * p->nstype], values, p->nstype * sizeof(*values));
	p->nlocs += n;
	p->nlabs += nlabels;
	p->nsmp++;
	return 0;
}

size_t pprof_sample_count(const struct pprof *p)
{
	return p ? p->nsmp : 0;
}

/* ---- the encoder ------------------------------------------------------------------- */

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_varint(struct ctf_buf *b, uint64_t v)
{
	unsigned char d[10];
	size_t n = 0;
	while (v >= 0x80) {
		d[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	d[n++] = (unsigned char)v;
	ctf_buf_add(b, d, n);
}

static void put_key(struct ctf_buf *b, unsigned field, unsigned wire)
{
	put_varint(b, (uint64_t)field << 3 | wire);
}

/* An int64 or uint64 field; zero is left out. Negative int64 values are
 * ten-byte varints of their two's complement, as protobuf has it. */
static void put_uint(struct ctf_buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	put_key(b, field, WIRE_VARINT);
	put_varint(b, v);
}

static void put_int(struct ctf_buf *b, unsigned field, int64_t v)
{
	put_uint(b, field, (uint64_t)v);
}

static void put_bytes(struct ctf_buf *b, unsigned field, const void *d, size_t n)
{
	put_key(b, field, WIRE_LEN);
	put_varint(b, n);
	if (n)
		ctf_buf_add(b, d, n);
}

/* A nested message that was encoded into `msg` (then emptied). */
static void put_msg(struct ctf_buf *b, unsigned field, struct ctf_buf *msg)
{
	put_bytes(b, field, msg->data, msg->len);
	ctf_buf_reset(msg);
}

static void put_value_type(struct ctf_buf *b, unsigned field, struct ctf_buf *msg, int64_t type, int64_t unit)
{
	put_int(msg, VALUE_TYPE_TYPE, type);
	put_int(msg, VALUE_TYPE_UNIT, unit);
	put_msg(b, field, msg);
}

/* A packed repeated scalar field (a length, then the varints). */
static void put_packed(struct ctf_buf *b, unsigned field, const uint64_t *v, size_t n)
{
	if (!n)
		return;
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += varint_len(v[i]);
	put_key(b, field, WIRE_LEN);
	put_varint(b, len);
	for (size_t i = 0; i < n; i++)
		put_varint(b, v[i]);
}

static void encode_sample(struct pprof *p, size_t i, struct ctf_buf *out, struct ctf_buf *msg,
			  struct ctf_buf *sub)
{
	const struct psample *s = &p->smp[i];
	put_packed(msg, SAMPLE_LOCATION_ID, &p->locs[s->loc], s->nloc);
	/* int64 values as their two's complement, which is what a packed
	 * int64 field holds. */
	put_packed(msg, SAMPLE_VALUE, (const uint64_t *)&p->vals[i * p->nstype], p->nstype);
	for (uint32_t k = 0; k < s->nlab; k++) {
		const struct plabel *l = &p->labs[s->lab + k];
		put_int(sub, LABEL_KEY, l->key);
		put_int(sub, LABEL_STR, l->str);
		put_int(sub, LABEL_NUM, l->num);
		put_int(sub, LABEL_NUM_UNIT, l->unit);
		put_msg(msg, SAMPLE_LABEL, sub);
	}
	put_msg(out, PROFILE_SAMPLE, msg);
}

int pprof_encode(struct pprof *p, struct ctf_buf *out)
{
	struct ctf_buf msg, sub;
	ctf_buf_init(&msg);
	ctf_buf_init(&sub);
	for (size_t i = 0; i < p->nstype; i++)
		put_value_type(out, PROFILE_SAMPLE_TYPE, &msg, p->stype[i][0], p->stype[i][1]);
	for (size_t i = 0; i < p->nsmp; i++)
		encode_sample(p, i, out, &msg, &sub);
	for (size_t i = 0; i < p->nmap; i++) {
		const struct pmapping *m = &p->map[i];
		put_uint(&msg, MAPPING_ID, i + 1);
		put_uint(&msg, MAPPING_MEMORY_START, m->start);
		put_uint(&msg, MAPPING_MEMORY_LIMIT, m->limit);
		put_uint(&msg, MAPPING_FILE_OFFSET, m->offset);
		put_int(&msg, MAPPING_FILENAME, m->file);
		put_int(&msg, MAPPING_BUILD_ID, m->build_id);
		put_uint(&msg, MAPPING_HAS_FUNCTIONS, (uint64_t)m->has_functions);
		put_uint(&msg, MAPPING_HAS_FILENAMES, (uint64_t)m->has_filenames);
		put_uint(&msg, MAPPING_HAS_LINE_NUMBERS, (uint64_t)m->has_lines);
		put_msg(out, PROFILE_MAPPING, &msg);
	}
	for (size_t i = 0; i < p->nloc; i++) {
		const struct plocation *l = &p->loc[i];
		put_uint(&msg, LOCATION_ID, i + 1);
		put_uint(&msg, LOCATION_MAPPING_ID, l->mapping);
		put_uint(&msg, LOCATION_ADDRESS, l->addr);
		if (l->function) {
			put_uint(&sub, LINE_FUNCTION_ID, l->function);
			put_int(&sub, LINE_LINE, l->line);
			put_msg(&msg, LOCATION_LINE, &sub);
		}
		put_msg(out, PROFILE_LOCATION, &msg);
	}
	for (size_t i = 0; i < p->nfn; i++) {
		const struct pfunction *f = &p->fn[i];
		put_uint(&msg, FUNCTION_ID, i + 1);
		put_int(&msg, FUNCTION_NAME, f->name);
		put_int(&msg, FUNCTION_SYSTEM_NAME, f->system_name);
		put_int(&msg, FUNCTION_FILENAME, f->file);
		put_msg(out, PROFILE_FUNCTION, &msg);
	}
	/* Every string, "" first (the table's index 0 must be the empty
	 * string, so it is written even though it is empty). */
	for (size_t i = 0; i < p->nstr; i++)
		put_bytes(out, PROFILE_STRING_TABLE, p->str[i], strlen(p->str[i]));
	put_int(out, PROFILE_TIME_NANOS, p->time_nanos);
	put_int(out, PROFILE_DURATION_NANOS, p->duration_nanos);
	if (p->period_type[0] || p->period_type[1])
		put_value_type(out, PROFILE_PERIOD_TYPE, &msg, p->period_type[0], p->period_type[1]);
	put_int(out, PROFILE_PERIOD, p->period);
	for (size_t i = 0; i < p->ncomment; i++) {
		put_key(out, PROFILE_COMMENT, WIRE_VARINT);
		put_varint(out, (uint64_t)p->comment[i]);
	}
	put_int(out, PROFILE_DEFAULT_SAMPLE_TYPE, p->default_type);
	int err = out->err || msg.err || sub.err ? -ENOMEM : 0;
	ctf_buf_free(&msg);
	ctf_buf_free(&sub);
	return err;
}

/* ---- gzip -------------------------------------------------------------------------- */

int pprof_write(struct pprof *p, FILE *f)
{
	struct ctf_buf b;
	ctf_buf_init(&b);
	int r = pprof_encode(p, &b);
	if (r < 0) {
		ctf_buf_free(&b);
		return r;
	}
	z_stream z;
	memset(&z, 0, sizeof(z));
	/* windowBits 15 + 16: a gzip header and trailer, as pprof reads. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		ctf_buf_free(&b);
		return -ENOMEM;
	}
	unsigned char chunk[64 * 1024];
	const unsigned char *in = (const unsigned char *)b.data;
	size_t left = b.len;
	int zr = Z_OK;
	do {
		/* avail_in is an unsigned int: feed larger profiles in parts. */
		if (!z.avail_in && left) {
			z.next_in = (unsigned char *)in;
			z.avail_in = left > UINT_MAX ? UINT_MAX : (unsigned)left;
			in += z.avail_in;
			left -= z.avail_in;
		}
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = deflate(&z, left || z.avail_in ? Z_NO_FLUSH : Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			r = -EIO;
			break;
		}
		size_t have = sizeof(chunk) - z.avail_out;
		if (have && fwrite(chunk, 1, have, f) != have) {
			r = errno ? -errno : -EIO;
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	ctf_buf_free(&b);
	return r;
}
