/*
 * sig.c - parse event signature strings and measure payloads.
 *
 * Who calls: the library when an event is registered (from the thread that
 * registers it, under the registry lock), the recorder when it writes the
 * metadata and when it walks the events of a sub-buffer, and the tests.
 * Signatures are short (a few fields) and parsed once per event; payload
 * measuring runs once per salvaged record, so it is a plain bounded loop.
 */
#include "common/sig.h"

#include <errno.h>
#include <string.h>

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_ident_char(char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* The type words of design.md section 3. */
static int parse_type(const char *w, size_t n, struct sig_field *f)
{
	static const struct {
		const char *word;
		uint8_t kind, bits, is_signed;
	} types[] = {
		{ "s8", SIG_INT, 8, 1 },   { "s16", SIG_INT, 16, 1 },
		{ "s32", SIG_INT, 32, 1 }, { "s64", SIG_INT, 64, 1 },
		{ "u8", SIG_INT, 8, 0 },   { "u16", SIG_INT, 16, 0 },
		{ "u32", SIG_INT, 32, 0 }, { "u64", SIG_INT, 64, 0 },
		{ "x8", SIG_HEX, 8, 0 },   { "x16", SIG_HEX, 16, 0 },
		{ "x32", SIG_HEX, 32, 0 }, { "x64", SIG_HEX, 64, 0 },
		{ "ptr", SIG_PTR, 64, 0 }, { "f32", SIG_FLOAT, 32, 1 },
		{ "f64", SIG_FLOAT, 64, 1 }, { "string", SIG_STRING, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strlen(types[i].word) == n && memcmp(types[i].word, w, n) == 0) {
			f->kind = types[i].kind;
			f->bits = types[i].bits;
			f->is_signed = types[i].is_signed;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * The metadata names a field `_name` and the length of a sequence
 * `__name_length`; two fields must not map to one TSDL name.
 */
static int names_clash(const struct sig_field *a, const struct sig_field *b)
{
	if (strcmp(a->name, b->name) == 0)
		return 1;
	if (b->array == SIG_SEQ && a->name[0] == '_') {
		size_t lb = strlen(b->name);
		if (strlen(a->name) == lb + 8 && memcmp(a->name + 1, b->name, lb) == 0 &&
		    strcmp(a->name + 1 + lb, "_length") == 0)
			return 1;
	}
	return 0;
}

static int parse_field(const char *p, const char *end, struct sig_field *f)
{
	memset(f, 0, sizeof(*f));
	while (p < end && is_space(*p))
		p++;
	const char *w = p;
	while (p < end && is_ident_char(*p))
		p++;
	if (p == w || parse_type(w, (size_t)(p - w), f) < 0)
		return -EINVAL;
	if (p == end || !is_space(*p))
		return -EINVAL;
	while (p < end && is_space(*p))
		p++;
	if (p == end || !is_ident_start(*p))
		return -EINVAL;
	const char *name = p;
	while (p < end && is_ident_char(*p))
		p++;
	size_t nlen = (size_t)(p - name);
	if (nlen >= SIG_NAME_MAX)
		return -EINVAL;
	memcpy(f->name, name, nlen);
	f->name[nlen] = '\0';
	while (p < end && is_space(*p))
		p++;
	if (p < end && *p == '[') {
		if (f->kind == SIG_STRING || f->kind == SIG_FLOAT)
			return -EINVAL;
		p++;
		if (p < end && *p == ']') {
			f->array = SIG_SEQ;
			f->count_size = 4;
		} else if (end - p >= 3 && !memcmp(p, "u8]", 3)) {
			f->array = SIG_SEQ;
			f->count_size = 1;
			p += 2;
		} else {
			uint32_t v = 0;
			if (p == end || *p < '1' || *p > '9')
				return -EINVAL;
			while (p < end && *p >= '0' && *p <= '9') {
				v = v * 10 + (uint32_t)(*p - '0');
				if (v > SIG_ARRAY_MAX)
					return -EINVAL;
				p++;
			}
			if (p == end || *p != ']')
				return -EINVAL;
			f->array = SIG_FIXED;
			f->len = v;
		}
		p++;
		while (p < end && is_space(*p))
			p++;
	}
	return p == end ? 0 : -EINVAL;
}

int sig_parse(const char *text, struct sig_field *ret_fields, size_t max, size_t *ret_n)
{
	size_t len = strnlen(text, SIG_TEXT_MAX + 1);
	if (len > SIG_TEXT_MAX)
		return -E2BIG;
	const char *p = text, *end = text + len;
	while (p < end && is_space(*p))
		p++;
	if (p == end) {
		*ret_n = 0;
		return 0;
	}
	size_t n = 0;
	p = text;
	for (;;) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *fend = semi ? semi : end;
		if (n == max || n == SIG_FIELDS_MAX)
			return -EINVAL;
		if (parse_field(p, fend, &ret_fields[n]) < 0)
			return -EINVAL;
		for (size_t i = 0; i < n; i++)
			if (names_clash(&ret_fields[i], &ret_fields[n]) ||
			    names_clash(&ret_fields[n], &ret_fields[i]))
				return -EINVAL;
		n++;
		if (!semi)
			break;
		p = semi + 1;
	}
	*ret_n = n;
	return 0;
}

size_t sig_elem_size(const struct sig_field *f)
{
	return f->kind == SIG_STRING ? 0 : f->bits / 8u;
}

int sig_record_size(const struct sig_field *fields, size_t n, const void *payload,
		    size_t avail, size_t *ret_size)
{
	const unsigned char *p = payload;
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		const struct sig_field *f = &fields[i];
		uint64_t need;
		if (f->kind == SIG_STRING) {
			const void *nul = avail > off ? memchr(p + off, '\0', avail - off) : NULL;
			if (!nul)
				return -EBADMSG;
			need = (uint64_t)((const unsigned char *)nul - (p + off)) + 1;
		} else if (f->array == SIG_SEQ) {
			uint32_t count = 0;
			if (f->count_size == 1) {
				if (avail - off < 1)
					return -EBADMSG;
				count = (unsigned char)p[off];
				off += 1;
			} else {
				if (avail - off < 4)
					return -EBADMSG;
				memcpy(&count, p + off, 4);
				off += 4;
			}
			need = (uint64_t)count * sig_elem_size(f);  /* < 2^35 */
		} else if (f->array == SIG_FIXED) {
			need = (uint64_t)f->len * sig_elem_size(f);
		} else {
			need = sig_elem_size(f);
		}
		if (need > (uint64_t)(avail - off))
			return -EBADMSG;
		off += (size_t)need;
	}
	*ret_size = off;
	return 0;
}
