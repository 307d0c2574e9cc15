/*
 * decode.c - CTF field decoder (decode.h).
 *
 * Called by the stream cursor for each packet header and context, event
 * header and contexts and, once the merge has chosen the event, for its
 * payload. It is the hot loop of `ringtrace dump`: byte-aligned integers
 * take a fast path, bit fields a loop of at most nine iterations. All
 * positions are bit offsets from the packet start and are checked against
 * d->end before any byte is touched. Work that consumes no input is charged
 * to the packet's budget (decode.h), so hostile metadata (arrays of empty
 * structs, sequences of sequences of length 0) ends in an error, not in a
 * loop as long as the declared lengths.
 */
#include "read/decode.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

uint64_t rd_read_bits(const uint8_t *buf, uint64_t pos, unsigned size, int be)
{
	uint64_t v = 0;
	const uint8_t *b = buf + (pos >> 3);

	if ((pos & 7) == 0 && (size & 7) == 0) {
		unsigned n = size >> 3;
		if (be)
			for (unsigned i = 0; i < n; i++)
				v = v << 8 | b[i];
		else
			for (unsigned i = n; i-- > 0;)
				v = v << 8 | b[i];
		return v;
	}
	if (!be) {
		unsigned shift = 0;
		while (size) {
			unsigned bo = (unsigned)(pos & 7);
			unsigned take = 8 - bo < size ? 8 - bo : size;
			uint64_t bits = (uint64_t)(buf[pos >> 3] >> bo) & ((1u << take) - 1);
			v |= bits << shift;
			shift += take;
			pos += take;
			size -= take;
		}
	} else {
		while (size) {
			unsigned bo = (unsigned)(pos & 7);
			unsigned take = 8 - bo < size ? 8 - bo : size;
			uint64_t bits = (uint64_t)(buf[pos >> 3] >> (8 - bo - take)) & ((1u << take) - 1);
			v = v << take | bits;
			pos += take;
			size -= take;
		}
	}
	return v;
}

__attribute__((format(printf, 2, 3)))
static int dec_fail(struct rd_decoder *d, const char *fmt, ...)
{
	if (d->err && d->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(d->err, d->errlen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static const char *nm(const char *name)
{
	return name ? name : "[element]";
}

/* Is there room for `bits` more bits at pos (after alignment)? */
static int need(struct rd_decoder *d, uint64_t bits, const char *name)
{
	if (d->pos <= d->end && bits <= d->end - d->pos)
		return 0;
	if (d->end == d->avail)
		d->short_read = 1;
	return dec_fail(d, "field '%s' at byte %llu runs past the end of the %s", nm(name),
			(unsigned long long)(d->pos / 8),
			d->scope <= RD_SCOPE_PACKET_CONTEXT ? "packet" : "packet content");
}

/*
 * Charge `units` of work that may consume no input to the packet's budget:
 * 0, or -EBADMSG once the budget is spent (and it stays spent until the
 * next packet header).
 */
static int charge(struct rd_decoder *d, uint64_t units, const char *name)
{
	uint64_t limit = d->avail > (UINT64_MAX - RD_WORK_BASE) / RD_WORK_PER_BIT
				 ? UINT64_MAX
				 : RD_WORK_BASE + d->avail * RD_WORK_PER_BIT;
	if (units <= limit && d->work <= limit - units) {
		d->work += units;
		return 0;
	}
	d->work = UINT64_MAX;
	return dec_fail(d, "field '%s' at byte %llu: decoding the packet takes more than %u steps "
			"per bit (the metadata declares fields that take no space, or costly "
			"lookups)", nm(name), (unsigned long long)(d->pos / 8), RD_WORK_PER_BIT);
}

/* Add the cost of a search; charge() reports when the budget is spent. */
static void spend(struct rd_decoder *d, uint64_t units)
{
	d->work = units > UINT64_MAX - d->work ? UINT64_MAX : d->work + units;
}

static int align_to(struct rd_decoder *d, uint32_t align, const char *name)
{
	uint64_t a = align ? align : 1;
	uint64_t pos = (d->pos + a - 1) & ~(a - 1);
	if (pos < d->pos || pos > d->end) {
		if (d->end == d->avail)
			d->short_read = 1;
		return dec_fail(d, "field '%s' at byte %llu runs past the end of the %s", nm(name),
				(unsigned long long)(d->pos / 8),
				d->scope <= RD_SCOPE_PACKET_CONTEXT ? "packet" : "packet content");
	}
	d->pos = pos;
	return 0;
}

const struct rd_value *rd_value_member(const struct rd_value *v, const char *name)
{
	if (!v || !v->type || v->type->kind != RD_STRUCT)
		return NULL;
	for (uint32_t i = 0; i < v->sub.n; i++)
		if (v->sub.v[i].name && !strcmp(v->sub.v[i].name, name))
			return &v->sub.v[i];
	return NULL;
}

const char *rd_enum_label(const struct rd_type *t, uint64_t v)
{
	for (uint32_t i = 0; i < t->n_maps; i++) {
		const struct rd_enum_map *m = &t->maps[i];
		int in = t->is_signed ? (int64_t)v >= (int64_t)m->lo && (int64_t)v <= (int64_t)m->hi
				      : v >= m->lo && v <= m->hi;
		if (in)
			return m->label;
	}
	return NULL;
}

/*
 * The last of vals[0..n) named name[0..len), the values compared spent from
 * the budget. A comparison reads at most len + 1 bytes of a name.
 */
static const struct rd_value *find_in(struct rd_decoder *d, const struct rd_value *vals,
				      uint32_t n, const char *name, size_t len)
{
	for (uint32_t i = n; i-- > 0;)
		if (vals[i].name && !strncmp(vals[i].name, name, len) && vals[i].name[len] == '\0') {
			spend(d, n - i);
			return &vals[i];
		}
	spend(d, n);
	return NULL;
}

/* Follow "a.b.c" (already past the first component) through struct members. */
static const struct rd_value *descend(struct rd_decoder *d, const struct rd_value *v,
				      const char *rest)
{
	while (v && *rest) {
		const char *dot = strchr(rest, '.');
		size_t n = dot ? (size_t)(dot - rest) : strlen(rest);
		if (v->type->kind == RD_VARIANT && v->sub.n == 1)
			v = &v->sub.v[0];
		if (!v->type || v->type->kind != RD_STRUCT)
			return NULL;
		v = find_in(d, v->sub.v, v->sub.n, rest, n);
		rest = dot ? dot + 1 : rest + n;
	}
	return v;
}

/*
 * Resolve a sequence length or variant tag. Absolute paths name a scope;
 * relative ones are looked up in the enclosing structs, innermost first,
 * then among the top-level fields of the scopes decoded before.
 */
static const struct rd_value *lookup(struct rd_decoder *d, const char *path)
{
	static const char *const prefix[RD_SCOPE_COUNT] = {
		"trace.packet.header.", "stream.packet.context.", "stream.event.header.",
		"stream.event.context.", "event.context.", "event.fields.",
	};
	for (int s = 0; strchr(path, '.') && s < RD_SCOPE_COUNT; s++) {
		size_t pl = strlen(prefix[s]);
		if (strncmp(path, prefix[s], pl) != 0)
			continue;
		const char *rest = path + pl;
		const char *dot = strchr(rest, '.');
		size_t n = dot ? (size_t)(dot - rest) : strlen(rest);
		const struct rd_value *v = NULL;
		if (s == d->scope && d->depth > 0)
			v = find_in(d, d->frames[0].v, d->frames[0].done, rest, n);
		else if (s < d->scope && d->scopes[s])
			v = find_in(d, d->scopes[s]->sub.v, d->scopes[s]->sub.n, rest, n);
		return v && dot ? descend(d, v, dot + 1) : v;
	}
	const char *dot = strchr(path, '.');
	size_t n = dot ? (size_t)(dot - path) : strlen(path);
	const struct rd_value *v = NULL;
	for (unsigned f = d->depth; !v && f-- > 0;)
		v = find_in(d, d->frames[f].v, d->frames[f].done, path, n);
	for (int s = d->scope; !v && s-- > 0;)
		if (d->scopes[s])
			v = find_in(d, d->scopes[s]->sub.v, d->scopes[s]->sub.n, path, n);
	return v && dot ? descend(d, v, dot + 1) : v;
}

static int dec_value(struct rd_decoder *d, const struct rd_type *t, const char *name,
		     struct rd_value *out);

static int dec_elements(struct rd_decoder *d, const struct rd_type *t, const char *name,
			uint64_t n, struct rd_value *out)
{
	const struct rd_type *e = t->elem;
	/*
	 * Before allocating: elements that take bits must fit in the bits
	 * left (d->pos <= d->end after the alignment of the array); elements
	 * that may take none are charged to the budget, one unit each.
	 */
	if (e->min_bits && n > (d->end - d->pos) / e->min_bits) {
		if (d->end == d->avail)
			d->short_read = 1;
		return dec_fail(d, "field '%s' at byte %llu: %llu elements of at least %llu bits run "
				"past the end of the %s", nm(name), (unsigned long long)(d->pos / 8),
				(unsigned long long)n, (unsigned long long)e->min_bits,
				d->scope <= RD_SCOPE_PACKET_CONTEXT ? "packet" : "packet content");
	}
	if (n > d->pool->limit)
		return dec_fail(d, "field '%s': %llu elements is too many", nm(name),
				(unsigned long long)n);
	if (!e->min_bits && charge(d, n, name) < 0)
		return -EBADMSG;
	struct rd_value *v = rd_vpool_alloc(d->pool, (size_t)n);
	if (!v)
		return -E2BIG;
	out->sub.v = v;
	out->sub.n = (uint32_t)n;
	for (uint64_t i = 0; i < n; i++) {
		int r = dec_value(d, e, NULL, &v[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

static int dec_value(struct rd_decoder *d, const struct rd_type *t, const char *name,
		     struct rd_value *out)
{
	int r;
	out->type = t;
	out->name = name;
	r = align_to(d, t->align, name);
	if (r < 0)
		return r;
	switch (t->kind) {
	case RD_INT:
	case RD_ENUM: {
		if ((r = need(d, t->size, name)) < 0)
			return r;
		int be = t->byte_order == RD_BO_NATIVE ? d->trace_be : t->byte_order == RD_BO_BE;
		uint64_t v = rd_read_bits(d->buf, d->pos, t->size, be);
		if (t->is_signed && t->size < 64 && (v >> (t->size - 1)) & 1)
			v |= ~UINT64_C(0) << t->size;
		d->pos += t->size;
		out->u = v;
		if (d->on_int)
			d->on_int(d->ctx, d, t, name, v);
		return 0;
	}
	case RD_FLOAT: {
		if ((r = need(d, t->size, name)) < 0)
			return r;
		int be = t->byte_order == RD_BO_NATIVE ? d->trace_be : t->byte_order == RD_BO_BE;
		uint64_t v = rd_read_bits(d->buf, d->pos, t->size, be);
		d->pos += t->size;
		if (t->size == 32) {
			uint32_t b32 = (uint32_t)v;
			float x;
			memcpy(&x, &b32, 4);
			out->f = x;
		} else {
			memcpy(&out->f, &v, 8);
		}
		return 0;
	}
	case RD_STRING: {
		if (d->pos & 7)
			return dec_fail(d, "string '%s' is not byte-aligned", nm(name));
		const uint8_t *s = d->buf + d->pos / 8;
		uint64_t max = (d->end - d->pos) / 8;
		const uint8_t *nul = memchr(s, 0, (size_t)max);
		if (!nul) {
			if (d->end == d->avail)
				d->short_read = 1;
			return dec_fail(d, "string '%s' at byte %llu is not terminated within the %s",
					nm(name), (unsigned long long)(d->pos / 8),
					d->scope <= RD_SCOPE_PACKET_CONTEXT ? "packet" : "packet content");
		}
		out->str.s = (const char *)s;
		out->str.len = (size_t)(nul - s);
		d->pos += (out->str.len + 1) * 8;
		return 0;
	}
	case RD_STRUCT: {
		struct rd_value *v = rd_vpool_alloc(d->pool, t->n_members);
		if (!v)
			return -E2BIG;
		out->sub.v = v;
		out->sub.n = t->n_members;
		if (d->depth >= sizeof(d->frames) / sizeof(d->frames[0]))
			return dec_fail(d, "types nested too deeply");
		unsigned f = d->depth++;
		d->frames[f].t = t;
		d->frames[f].v = v;
		d->frames[f].done = 0;
		for (uint32_t i = 0; i < t->n_members; i++) {
			const struct rd_member *m = &t->members[i];
			r = m->type->min_bits ? 0 : charge(d, 1, m->name);
			if (r == 0)
				r = dec_value(d, m->type, m->name, &v[i]);
			if (r < 0) {
				d->depth = f;
				return r;
			}
			d->frames[f].done = i + 1;
		}
		d->depth = f;
		return 0;
	}
	case RD_VARIANT: {
		if (!t->ref)
			return dec_fail(d, "variant '%s' has no tag", nm(name));
		const struct rd_value *tag = lookup(d, t->ref);
		if (charge(d, 0, name) < 0)
			return -EBADMSG;
		if (!tag)
			return dec_fail(d, "variant '%s': cannot find its tag '%s'", nm(name), t->ref);
		if (tag->type->kind != RD_ENUM)
			return dec_fail(d, "variant '%s': tag '%s' is not an enum", nm(name), t->ref);
		/* The mappings and options scanned below. */
		if (charge(d, (uint64_t)tag->type->n_maps + t->n_members, name) < 0)
			return -EBADMSG;
		const char *label = rd_enum_label(tag->type, tag->u);
		const struct rd_member *opt = NULL;
		for (uint32_t i = 0; label && i < t->n_members; i++) {
			const char *on = t->members[i].name;
			if (!strcmp(on, label) || (on[0] == '_' && !strcmp(on + 1, label)))
				opt = &t->members[i];
		}
		if (!opt)
			return dec_fail(d, "variant '%s': no option for tag value %lld", nm(name),
					(long long)tag->u);
		struct rd_value *v = rd_vpool_alloc(d->pool, 1);
		if (!v)
			return -E2BIG;
		out->sub.v = v;
		out->sub.n = 1;
		if (!opt->type->min_bits && charge(d, 1, opt->name) < 0)
			return -EBADMSG;
		return dec_value(d, opt->type, opt->name, v);
	}
	case RD_ARRAY:
		return dec_elements(d, t, name, t->length, out);
	case RD_SEQ: {
		const struct rd_value *len = lookup(d, t->ref);
		if (charge(d, 0, name) < 0)
			return -EBADMSG;
		if (!len)
			return dec_fail(d, "sequence '%s': cannot find its length '%s'", nm(name), t->ref);
		if (len->type->kind != RD_INT && len->type->kind != RD_ENUM)
			return dec_fail(d, "sequence '%s': length '%s' is not an integer", nm(name),
					t->ref);
		if (len->type->is_signed && (int64_t)len->u < 0)
			return dec_fail(d, "sequence '%s': negative length", nm(name));
		return dec_elements(d, t, name, len->u, out);
	}
	}
	return dec_fail(d, "bad type");
}

int rd_decode_scope(struct rd_decoder *d, int scope, const struct rd_type *t,
		    const struct rd_value **ret)
{
	d->scope = scope;
	d->depth = 0;
	d->short_read = 0;
	d->scopes[scope] = NULL;
	if (scope == RD_SCOPE_PACKET_HEADER)
		d->work = 0;
	if (!t) {
		*ret = NULL;
		return 0;
	}
	struct rd_value *v = rd_vpool_alloc(d->pool, 1);
	if (!v)
		return -E2BIG;
	int r = t->min_bits ? 0 : charge(d, 1, NULL);
	if (r == 0)
		r = dec_value(d, t, NULL, v);
	d->depth = 0;
	if (r < 0)
		return r;
	d->scopes[scope] = v;
	*ret = v;
	return 0;
}
