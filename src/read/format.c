/*
 * format.c - value formatting (format.h), and the one-line form of a trace
 * item that `dump` and `show` print. Called once per printed event; plain
 * snprintf-based code, the output stream is the bottleneck.
 */
#include "read/format.h"
#include "read/reader.h"
#include "util/utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Integers are formatted by hand: printf was half of the time of `ringtrace
 * dump` on a trace of small events.
 */
static void put_udec(struct ctf_buf *b, uint64_t v, unsigned min_digits)
{
	char d[24];
	unsigned n = 0;
	do {
		d[sizeof(d) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v || n < min_digits);
	ctf_buf_add(b, d + sizeof(d) - n, n);
}

static void put_sdec(struct ctf_buf *b, int64_t v)
{
	if (v < 0) {
		ctf_buf_putc(b, '-');
		put_udec(b, (uint64_t)0 - (uint64_t)v, 1);
	} else {
		put_udec(b, (uint64_t)v, 1);
	}
}

static void put_hex(struct ctf_buf *b, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char d[18];
	unsigned n = 0;
	do {
		d[sizeof(d) - 1 - n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	d[sizeof(d) - 1 - n++] = 'x';
	d[sizeof(d) - 1 - n++] = '0';
	ctf_buf_add(b, d + sizeof(d) - n, n);
}

void rd_format_uint(struct ctf_buf *b, uint64_t v, unsigned min_digits)
{
	put_udec(b, v, min_digits);
}

void rd_format_time(struct ctf_buf *b, int64_t ns)
{
	/* |ns| as unsigned: also right for INT64_MIN. */
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	if (ns < 0)
		ctf_buf_putc(b, '-');
	put_udec(b, a / 1000000000u, 1);
	ctf_buf_putc(b, '.');
	put_udec(b, a % 1000000000u, 9);
}

void rd_format_double(struct ctf_buf *b, double v, int single)
{
	char tmp[64];
	if (isnan(v) || isinf(v)) {
		ctf_buf_printf(b, "%g", v);
		return;
	}
	/* Whether p digits read back is monotonic in p: binary search. */
	int lo = 1, hi = single ? 9 : 17;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		snprintf(tmp, sizeof(tmp), "%.*g", mid, v);
		if (single ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v)
			hi = mid;
		else
			lo = mid + 1;
	}
	snprintf(tmp, sizeof(tmp), "%.*g", lo, v);
	ctf_buf_puts(b, tmp);
	/* Keep a float recognisable: 2.0, not 2. */
	if (!strpbrk(tmp, ".e"))
		ctf_buf_puts(b, ".0");
}

void rd_format_string(struct ctf_buf *b, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	ctf_buf_putc(b, '"');
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		switch (c) {
		case '"':  ctf_buf_puts(b, "\\\""); i++; continue;
		case '\\': ctf_buf_puts(b, "\\\\"); i++; continue;
		case '\n': ctf_buf_puts(b, "\\n"); i++; continue;
		case '\t': ctf_buf_puts(b, "\\t"); i++; continue;
		case '\r': ctf_buf_puts(b, "\\r"); i++; continue;
		case '\a': ctf_buf_puts(b, "\\a"); i++; continue;
		case '\b': ctf_buf_puts(b, "\\b"); i++; continue;
		case '\f': ctf_buf_puts(b, "\\f"); i++; continue;
		case '\v': ctf_buf_puts(b, "\\v"); i++; continue;
		default:
			break;
		}
		if (c >= 0x20 && c < 0x7f) {
			size_t j = i + 1;
			while (j < len && s[j] >= 0x20 && s[j] < 0x7f && s[j] != '"' && s[j] != '\\')
				j++;
			ctf_buf_add(b, s + i, j - i);
			i = j;
			continue;
		}
		size_t n = c >= 0x80 ? utf8_len(s + i, len - i) : 0;
		/* A C1 control (U+0080..U+009F) is escaped as a byte too. */
		if (n == 2 && c == 0xc2 && s[i + 1] < 0xa0)
			n = 0;
		if (n) {
			ctf_buf_add(b, s + i, n);
			i += n;
		} else {
			ctf_buf_printf(b, "\\x%02x", c);
			i++;
		}
	}
	ctf_buf_putc(b, '"');
}

const char *rd_display_name(const char *name)
{
	if (!name)
		return "";
	return name[0] == '_' && name[1] ? name + 1 : name;
}

static void format_int(struct ctf_buf *b, const struct rd_type *t, uint64_t v)
{
	uint64_t mask = t->size >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << t->size) - 1;
	switch (t->base) {
	case 16:
		put_hex(b, v & mask);
		return;
	case 8:
		ctf_buf_printf(b, "0%llo", (unsigned long long)(v & mask));
		return;
	case 2:
		ctf_buf_puts(b, "0b");
		for (unsigned i = t->size; i-- > 0;)
			ctf_buf_putc(b, (v >> i) & 1 ? '1' : '0');
		return;
	default:
		if (t->is_signed)
			put_sdec(b, (int64_t)v);
		else
			put_udec(b, v, 1);
	}
}

/* Is member i of struct type t the length of a sequence of the same struct? */
static int is_length_member(const struct rd_type *t, uint32_t i)
{
	const char *name = t->members[i].name;
	for (uint32_t k = i + 1; k < t->n_members; k++) {
		const struct rd_type *mt = t->members[k].type;
		if (mt->kind == RD_SEQ && mt->ref && !strcmp(mt->ref, name))
			return 1;
	}
	return 0;
}

/*
 * An array or sequence of byte-aligned 8-bit integers with an encoding
 * (LTTng's ctf_array_text, ctf_sequence_text) is text: babeltrace2 prints
 * it as a string that ends at the first NUL, and so do we.
 */
static int is_text(const struct rd_type *t)
{
	const struct rd_type *e = t->elem;
	return e && e->kind == RD_INT && e->size == 8 && e->align == 8 && e->encoded;
}

static void format_text(struct ctf_buf *b, const struct rd_value *v)
{
	struct ctf_buf s;
	uint32_t n = 0;
	ctf_buf_init(&s);
	while (n < v->sub.n && (uint8_t)v->sub.v[n].u != 0)
		n++;
	for (uint32_t i = 0; i < n; i++)
		ctf_buf_putc(&s, (char)v->sub.v[i].u);
	if (s.err)
		b->err = s.err;
	else
		rd_format_string(b, s.data, s.len);
	ctf_buf_free(&s);
}

static void format_value(struct ctf_buf *b, const struct rd_value *v, unsigned depth)
{
	const struct rd_type *t = v->type;
	if (!t || depth > RD_TYPE_DEPTH + 1) {
		ctf_buf_puts(b, "?");
		return;
	}
	switch (t->kind) {
	case RD_INT:
		format_int(b, t, v->u);
		return;
	case RD_ENUM: {
		const char *label = rd_enum_label(t, v->u);
		if (label)
			ctf_buf_puts(b, label);
		else
			format_int(b, t, v->u);
		return;
	}
	case RD_FLOAT:
		rd_format_double(b, v->f, t->size == 32);
		return;
	case RD_STRING:
		rd_format_string(b, v->str.s, v->str.len);
		return;
	case RD_STRUCT: {
		int first = 1;
		ctf_buf_putc(b, '{');
		for (uint32_t i = 0; i < v->sub.n; i++) {
			if (is_length_member(t, i))
				continue;
			if (!first)
				ctf_buf_puts(b, ", ");
			first = 0;
			ctf_buf_puts(b, rd_display_name(v->sub.v[i].name));
			ctf_buf_putc(b, '=');
			format_value(b, &v->sub.v[i], depth + 1);
		}
		ctf_buf_putc(b, '}');
		return;
	}
	case RD_VARIANT:
		if (v->sub.n == 1)
			format_value(b, &v->sub.v[0], depth + 1);
		return;
	case RD_ARRAY:
	case RD_SEQ:
		if (is_text(t)) {
			format_text(b, v);
			return;
		}
		ctf_buf_putc(b, '[');
		for (uint32_t i = 0; i < v->sub.n; i++) {
			if (i)
				ctf_buf_puts(b, ", ");
			format_value(b, &v->sub.v[i], depth + 1);
		}
		ctf_buf_putc(b, ']');
		return;
	}
}

void rd_format_value(struct ctf_buf *b, const struct rd_value *v)
{
	format_value(b, v, 0);
}

void rd_format_fields(struct ctf_buf *b, const struct rd_value *f)
{
	if (!f || !f->type || f->type->kind != RD_STRUCT)
		return;
	for (uint32_t i = 0; i < f->sub.n; i++) {
		if (is_length_member(f->type, i))
			continue;
		ctf_buf_putc(b, ' ');
		ctf_buf_puts(b, rd_display_name(f->sub.v[i].name));
		ctf_buf_putc(b, '=');
		format_value(b, &f->sub.v[i], 1);
	}
}

/* ---- one line of `dump` and `show` -------------------------------------- */

static void put_time(struct ctf_buf *b, int ok, int64_t ns)
{
	if (ok)
		rd_format_time(b, ns);
	else
		ctf_buf_puts(b, "?");
}

/* Right-aligned in 16 columns, control bytes shown as '?'. */
static void put_comm(struct ctf_buf *b, const char *comm)
{
	char safe[64];
	size_t n = 0;
	for (; comm && *comm && n < sizeof(safe) - 1; comm++)
		safe[n++] = (unsigned char)*comm < 0x20 || *comm == 0x7f ? '?' : *comm;
	if (!n) {
		memcpy(safe, "<...>", 5);
		n = 5;
	}
	for (size_t k = n; k < 16; k++)
		ctf_buf_putc(b, ' ');
	ctf_buf_add(b, safe, n);
}

/* " {name=value, ...}" for a context with members; nothing otherwise. */
static void put_context(struct ctf_buf *b, const struct rd_value *ctx)
{
	if (!ctx || !ctx->type || ctx->type->kind != RD_STRUCT || ctx->sub.n == 0)
		return;
	ctf_buf_putc(b, ' ');
	rd_format_value(b, ctx);
}

void rd_format_item(struct ctf_buf *b, const struct rd_item *it)
{
	if (it->kind == RD_ITEM_EVENT) {
		/* "%16s-%-7u [%03u] " without printf, which would dominate. */
		put_comm(b, it->comm);
		ctf_buf_putc(b, '-');
		size_t start = b->len;
		if (it->tid)
			rd_format_uint(b, it->tid, 1);
		else
			ctf_buf_putc(b, '?');
		for (size_t k = b->len - start; k < 7; k++)
			ctf_buf_putc(b, ' ');
		ctf_buf_puts(b, " [");
		rd_format_uint(b, it->cpu, 3);
		ctf_buf_puts(b, "] ");
		put_time(b, it->ns_ok, it->ns);
		ctf_buf_puts(b, ": ");
		ctf_buf_puts(b, it->ec->name);
		ctf_buf_putc(b, ':');
		put_context(b, it->common_context);
		put_context(b, it->context);
		rd_format_fields(b, it->fields);
		return;
	}
	ctf_buf_printf(b, "ringtrace: %llu %s lost on cpu %u ", (unsigned long long)it->count,
		       it->kind == RD_ITEM_LOST_EVENTS ? (it->count == 1 ? "event" : "events")
						      : (it->count == 1 ? "packet" : "packets"),
		       it->cpu);
	if (it->has_begin) {
		ctf_buf_puts(b, "between ");
		put_time(b, it->ns_ok, it->ns);
		ctf_buf_puts(b, " and ");
	} else {
		ctf_buf_puts(b, "before ");
	}
	put_time(b, it->end_ok, it->end_ns);
}
