/*
 * tsdl.c - CTF 1.8 TSDL tokenizer and recursive-descent parser (tsdl.h).
 *
 * Run once per trace by the reader (and by the fuzzer, on hostile input).
 * Metadata is at most a few megabytes, so the parser favours clear errors
 * over speed: it lexes on demand with a few tokens of look-ahead, and keeps
 * type aliases in a plain list.
 *
 * Grammar accepted (a subset of CTF 1.8 section 7, enough for LTTng,
 * barectf and babeltrace2's own output as well as ringtrace's):
 *
 *   metadata   := { top ';'? }
 *   top        := typealias | typedef | block | type-spec ';'
 *   block      := ('trace'|'env'|'clock'|'stream'|'event'|'callsite')
 *                 '{' { entry } '}' ';'
 *   entry      := typealias | typedef | path '=' value ';'
 *               | path ':=' type-spec ';'
 *   typealias  := 'typealias' type-spec ':=' word { word } ';'
 *   typedef    := 'typedef' type-spec declarator { ',' declarator } ';'
 *   type-spec  := 'integer' '{' attrs '}' | 'floating_point' '{' attrs '}'
 *               | 'string' [ '{' attrs '}' ]
 *               | 'struct' [name] [ '{' fields '}' ] [ 'align' '(' N ')' ]
 *               | 'variant' [name] [ '<' path '>' ] [ '{' fields '}' ]
 *               | 'enum' [name] [ ':' type-spec ] [ '{' entries '}' ]
 *               | alias-name (one or more words, longest known alias)
 *   fields     := { typealias | typedef | type-spec declarator {',' declarator} ';' }
 *   declarator := word { '[' (N | path) ']' }
 *
 * Attributes inside integer/floating_point/string must be known; unknown
 * attributes of trace/clock/stream/event blocks are ignored (forward
 * compatibility, as babeltrace2 does); unknown scopes (`x := type`) and
 * unknown blocks are errors.
 */
#include "read/tsdl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/u64map.h"

#define TOK_MAX_LEN   4096           /* bytes of one identifier */
#define LOOKAHEAD     8
#define ALIAS_WORDS   4
#define MEMBERS_MAX   65536
#define MAPS_MAX      65536
#define ALIGN_MAX     (1u << 20)
#define EVENTS_MAX    (1u << 20)

enum { TK_EOF = 0, TK_WORD, TK_INT, TK_STR, TK_PUNCT };
enum { P_ASSIGN = 256, P_ELLIPSIS, P_ARROW };

struct tok {
	int kind;
	int p;                       /* punctuation code */
	const char *s;               /* source text */
	size_t n;
	uint64_t ival;
	char *str;                   /* TK_STR, decoded, in the arena */
	unsigned line;
};

struct named {
	int kind;                    /* RD_STRUCT, RD_VARIANT, RD_ENUM, or 0 for aliases */
	const char *name;
	const struct rd_type *type;
};

struct vec {
	void *v;
	size_t n, cap, esz;
};

struct parser {
	const char *cur, *end;
	unsigned line;
	struct tok la[LOOKAHEAD];
	unsigned la_n;
	struct rd_meta *m;
	struct rd_arena *ar;
	char *err;
	size_t errlen;
	int failed;
	unsigned depth;
	struct vec names;            /* struct named */
	struct vec maps;             /* struct rd_type * with map_name */
	struct vec streams;          /* struct rd_stream_class */
	struct vec events;           /* struct rd_event_class */
	struct vec clocks;           /* struct rd_clock */
	struct vec env;              /* struct rd_env */
	int seen_trace, seen_env;
	int has_major, has_minor, has_bo;
};

/* ---- errors and small helpers ------------------------------------------ */

__attribute__((format(printf, 3, 4)))
static int fail(struct parser *p, unsigned line, const char *fmt, ...)
{
	if (!p->failed) {
		va_list ap;
		int n = snprintf(p->err, p->errlen, "line %u: ", line);
		if (n >= 0 && (size_t)n < p->errlen) {
			va_start(ap, fmt);
			vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
		p->failed = 1;
	}
	return -EINVAL;
}

static int oom(struct parser *p)
{
	if (!p->failed) {
		snprintf(p->err, p->errlen, "line %u: metadata too large (out of memory)", p->line);
		p->failed = 1;
	}
	return -ENOMEM;
}

static void *vec_push(struct vec *v)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		void *n = realloc(v->v, cap * v->esz);
		if (!n)
			return NULL;
		v->v = n;
		v->cap = cap;
	}
	void *e = (char *)v->v + v->n * v->esz;
	memset(e, 0, v->esz);
	v->n++;
	return e;
}

static void vec_free(struct vec *v)
{
	free(v->v);
	v->v = NULL;
	v->n = v->cap = 0;
}

/* Copy a vector into the arena (the model must not point to malloc'd memory). */
static void *vec_to_arena(struct parser *p, struct vec *v)
{
	if (v->n == 0)
		return NULL;
	void *d = rd_arena_alloc(p->ar, v->n * v->esz);
	if (d)
		memcpy(d, v->v, v->n * v->esz);
	return d;
}

/* ---- tokenizer ----------------------------------------------------------- */

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

int rd_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * A string literal, decoded into the arena. Its source text bounds its
 * decoded length, so the literal is measured first (up to the closing
 * quote or the end of the line) and decoded into a buffer of that size,
 * capped at RD_STRING_MAX + 1 bytes: one byte over the limit is enough to
 * tell a literal that is too long, whatever the size of the metadata.
 */
static int lex_string(struct parser *p, struct tok *t)
{
	const char *s = p->cur + 1;
	const char *q = s;
	while (q < p->end && *q != '"' && *q != '\n')
		q += *q == '\\' && q + 1 < p->end && q[1] != '\n' ? 2 : 1;
	size_t room = (size_t)(q - s) < RD_STRING_MAX ? (size_t)(q - s) : RD_STRING_MAX;
	char *out = rd_arena_alloc(p->ar, room + 1);
	size_t n = 0;
	if (!out)
		return oom(p);
	for (;;) {
		if (s >= p->end || *s == '\n') {
			return fail(p, t->line, "unterminated string literal");
		}
		if (*s == '"') {
			s++;
			break;
		}
		if (n >= RD_STRING_MAX) {
			return fail(p, t->line, "string literal longer than %u bytes", RD_STRING_MAX);
		}
		char c = *s++;
		if (c != '\\') {
			out[n++] = c;
			continue;
		}
		if (s >= p->end) {
			return fail(p, t->line, "unterminated string literal");
		}
		c = *s++;
		unsigned v;
		switch (c) {
		case 'n': out[n++] = '\n'; break;
		case 't': out[n++] = '\t'; break;
		case 'r': out[n++] = '\r'; break;
		case 'a': out[n++] = '\a'; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'v': out[n++] = '\v'; break;
		case '\\': case '"': case '\'': case '?': out[n++] = c; break;
		case 'x':
			v = 0;
			if (s >= p->end || rd_hexval(*s) < 0) {
					return fail(p, t->line, "bad \\x escape in string literal");
			}
			for (int k = 0; k < 2 && s < p->end && rd_hexval(*s) >= 0; k++)
				v = v * 16 + (unsigned)rd_hexval(*s++);
			if (v == 0) {
					return fail(p, t->line, "NUL byte in string literal");
			}
			out[n++] = (char)v;
			break;
		default:
			if (c >= '0' && c <= '7') {
				v = (unsigned)(c - '0');
				for (int k = 0; k < 2 && s < p->end && *s >= '0' && *s <= '7'; k++)
					v = v * 8 + (unsigned)(*s++ - '0');
				if (v == 0 || v > 255) {
							return fail(p, t->line, "bad octal escape in string literal");
				}
				out[n++] = (char)v;
				break;
			}
			return fail(p, t->line, "unknown escape '\\%c' in string literal",
				    (unsigned char)c >= 0x20 && (unsigned char)c < 0x7f ? c : '?');
		}
	}
	t->kind = TK_STR;
	out[n] = '\0';
	t->str = out;
	t->n = (size_t)(s - p->cur);
	p->cur = s;
	return 0;
}

static int lex_number(struct parser *p, struct tok *t)
{
	const char *s = p->cur;
	uint64_t v = 0;
	unsigned base = 10;
	if (*s == '0' && s + 1 < p->end && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (s >= p->end || rd_hexval(*s) < 0)
			return fail(p, t->line, "bad hexadecimal constant");
	} else if (*s == '0') {
		base = 8;
	}
	while (s < p->end && rd_hexval(*s) >= 0 && (unsigned)rd_hexval(*s) < base) {
		unsigned d = (unsigned)rd_hexval(*s++);
		if (v > (UINT64_MAX - d) / base)
			return fail(p, t->line, "integer constant too large");
		v = v * base + d;
	}
	while (s < p->end && (*s == 'u' || *s == 'U' || *s == 'l' || *s == 'L'))
		s++;
	if (s < p->end && (is_alpha(*s) || is_digit(*s) || *s == '.'))
		return fail(p, t->line, "bad integer constant");
	t->kind = TK_INT;
	t->ival = v;
	t->n = (size_t)(s - p->cur);
	p->cur = s;
	return 0;
}

/* Lex the next token into t; returns 0 or a negative errno. */
static int lex(struct parser *p, struct tok *t)
{
	memset(t, 0, sizeof(*t));
	for (;;) {
		while (p->cur < p->end && (*p->cur == ' ' || *p->cur == '\t' || *p->cur == '\n' ||
					   *p->cur == '\r' || *p->cur == '\f' || *p->cur == '\v')) {
			if (*p->cur == '\n')
				p->line++;
			p->cur++;
		}
		if (p->cur + 1 < p->end && p->cur[0] == '/' && p->cur[1] == '*') {
			unsigned start = p->line;
			p->cur += 2;
			for (;;) {
				if (p->cur + 1 >= p->end)
					return fail(p, start, "unterminated comment");
				if (p->cur[0] == '*' && p->cur[1] == '/')
					break;
				if (*p->cur == '\n')
					p->line++;
				p->cur++;
			}
			p->cur += 2;
			continue;
		}
		if (p->cur + 1 < p->end && p->cur[0] == '/' && p->cur[1] == '/') {
			while (p->cur < p->end && *p->cur != '\n')
				p->cur++;
			continue;
		}
		break;
	}
	t->line = p->line;
	t->s = p->cur;
	if (p->cur >= p->end) {
		t->kind = TK_EOF;
		return 0;
	}
	unsigned char c = (unsigned char)*p->cur;
	if (is_alpha(c)) {
		const char *s = p->cur;
		while (s < p->end && (is_alpha(*s) || is_digit(*s)))
			s++;
		if ((size_t)(s - p->cur) > TOK_MAX_LEN)
			return fail(p, t->line, "identifier longer than %u bytes", TOK_MAX_LEN);
		t->kind = TK_WORD;
		t->n = (size_t)(s - p->cur);
		p->cur = s;
		return 0;
	}
	if (is_digit(c))
		return lex_number(p, t);
	if (c == '"')
		return lex_string(p, t);
	t->kind = TK_PUNCT;
	t->n = 1;
	if (c == ':' && p->cur + 1 < p->end && p->cur[1] == '=') {
		t->p = P_ASSIGN;
		t->n = 2;
	} else if (c == '.' && p->cur + 2 < p->end && p->cur[1] == '.' && p->cur[2] == '.') {
		t->p = P_ELLIPSIS;
		t->n = 3;
	} else if (c == '-' && p->cur + 1 < p->end && p->cur[1] == '>') {
		t->p = P_ARROW;
		t->n = 2;
	} else if (strchr("{}()[];,=<>.:-+*", c) && c != '\0') {
		t->p = c;
	} else if (c >= 0x20 && c < 0x7f) {
		return fail(p, t->line, "unexpected character '%c'", c);
	} else {
		return fail(p, t->line, "unexpected byte 0x%02x", c);
	}
	p->cur += t->n;
	return 0;
}

/* The k-th token ahead (0 = next); an EOF token after an error. */
static const struct tok *peek(struct parser *p, unsigned k)
{
	static const struct tok eof = { .kind = TK_EOF };
	while (p->la_n <= k) {
		if (p->failed || lex(p, &p->la[p->la_n]) < 0)
			return &eof;
		p->la_n++;
	}
	return &p->la[k];
}

static struct tok next(struct parser *p)
{
	struct tok t = *peek(p, 0);
	if (p->la_n) {
		memmove(p->la, p->la + 1, (p->la_n - 1) * sizeof(p->la[0]));
		p->la_n--;
	}
	return t;
}

static int is_word(const struct tok *t, const char *w)
{
	return t->kind == TK_WORD && strlen(w) == t->n && memcmp(t->s, w, t->n) == 0;
}

static int is_punct(const struct tok *t, int c)
{
	return t->kind == TK_PUNCT && t->p == c;
}

static const char *describe(const struct tok *t, char *buf, size_t len)
{
	switch (t->kind) {
	case TK_EOF:
		return "end of metadata";
	case TK_STR:
		return "a string literal";
	case TK_INT:
		snprintf(buf, len, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s);
		return buf;
	default:
		snprintf(buf, len, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s);
		return buf;
	}
}

static int expect(struct parser *p, int c, const char *what)
{
	const struct tok *t = peek(p, 0);
	if (p->failed)
		return -EINVAL;
	if (!is_punct(t, c)) {
		char b[64];
		return fail(p, t->line, "expected %s, got %s", what, describe(t, b, sizeof(b)));
	}
	next(p);
	return 0;
}

static char *word_dup(struct parser *p, const struct tok *t)
{
	char *s = rd_arena_strndup(p->ar, t->s, t->n);
	if (!s)
		oom(p);
	return s;
}

/* path := word { '.' word } -> "a.b.c" */
static char *parse_path(struct parser *p)
{
	char buf[1024];
	size_t n = 0;
	for (;;) {
		const struct tok *t = peek(p, 0);
		if (t->kind != TK_WORD) {
			char b[64];
			fail(p, t->line, "expected a name, got %s", describe(t, b, sizeof(b)));
			return NULL;
		}
		if (n + t->n + 2 > sizeof(buf)) {
			fail(p, t->line, "name too long");
			return NULL;
		}
		if (n)
			buf[n++] = '.';
		memcpy(buf + n, t->s, t->n);
		n += t->n;
		next(p);
		if (!is_punct(peek(p, 0), '.'))
			break;
		next(p);
	}
	char *s = rd_arena_strndup(p->ar, buf, n);
	if (!s)
		oom(p);
	return s;
}

/* ---- values of attributes ----------------------------------------------- */

enum { V_INT = 1, V_STR, V_WORD };

struct value {
	int kind;
	int neg;
	uint64_t u;                  /* magnitude for V_INT */
	const char *s;               /* V_STR, V_WORD (path) */
	unsigned line;
};

static int parse_value(struct parser *p, struct value *v)
{
	const struct tok *t = peek(p, 0);
	memset(v, 0, sizeof(*v));
	v->line = t->line;
	if (is_punct(t, '-') || is_punct(t, '+')) {
		v->neg = is_punct(t, '-');
		next(p);
		t = peek(p, 0);
		if (t->kind != TK_INT)
			return fail(p, t->line, "expected an integer after the sign");
	}
	if (t->kind == TK_INT) {
		v->kind = V_INT;
		v->u = t->ival;
		next(p);
		if (v->neg && v->u == 0)
			v->neg = 0;
		return 0;
	}
	if (t->kind == TK_STR) {
		v->kind = V_STR;
		v->s = t->str;
		next(p);
		return 0;
	}
	if (t->kind == TK_WORD) {
		v->kind = V_WORD;
		v->s = parse_path(p);
		return v->s ? 0 : -EINVAL;
	}
	char b[64];
	return fail(p, t->line, "expected a value, got %s", describe(t, b, sizeof(b)));
}

static int value_uint(struct parser *p, const struct value *v, const char *attr, uint64_t *out)
{
	if (v->kind != V_INT || v->neg)
		return fail(p, v->line, "'%s' must be a non-negative integer", attr);
	*out = v->u;
	return 0;
}

static int value_int(struct parser *p, const struct value *v, const char *attr, int64_t *out)
{
	if (v->kind != V_INT)
		return fail(p, v->line, "'%s' must be an integer", attr);
	if (v->neg) {
		if (v->u > (uint64_t)INT64_MAX + 1)
			return fail(p, v->line, "'%s' is out of range", attr);
		*out = v->u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v->u;
	} else {
		if (v->u > INT64_MAX)
			return fail(p, v->line, "'%s' is out of range", attr);
		*out = (int64_t)v->u;
	}
	return 0;
}

static int value_bool(struct parser *p, const struct value *v, const char *attr, int *out)
{
	if (v->kind == V_INT && !v->neg && v->u <= 1) {
		*out = (int)v->u;
		return 0;
	}
	if (v->kind == V_WORD) {
		if (!strcmp(v->s, "true") || !strcmp(v->s, "TRUE")) {
			*out = 1;
			return 0;
		}
		if (!strcmp(v->s, "false") || !strcmp(v->s, "FALSE")) {
			*out = 0;
			return 0;
		}
	}
	return fail(p, v->line, "'%s' must be true or false", attr);
}

static int value_byte_order(struct parser *p, const struct value *v, int allow_native, uint8_t *out)
{
	if (v->kind == V_WORD) {
		if (!strcmp(v->s, "le") || !strcmp(v->s, "little_endian")) {
			*out = RD_BO_LE;
			return 0;
		}
		if (!strcmp(v->s, "be") || !strcmp(v->s, "network") || !strcmp(v->s, "big_endian")) {
			*out = RD_BO_BE;
			return 0;
		}
		if (allow_native && !strcmp(v->s, "native")) {
			*out = RD_BO_NATIVE;
			return 0;
		}
	}
	return fail(p, v->line, "bad byte_order (expected le or be%s)", allow_native ? " or native" : "");
}

static int value_align(struct parser *p, const struct value *v, uint32_t *out)
{
	uint64_t a = 0;
	if (value_uint(p, v, "align", &a) < 0)
		return -EINVAL;
	if (a == 0 || (a & (a - 1)) || a > ALIGN_MAX)
		return fail(p, v->line, "alignment %llu is not a power of two up to %u",
			    (unsigned long long)a, ALIGN_MAX);
	*out = (uint32_t)a;
	return 0;
}

static int parse_uuid(struct parser *p, const struct value *v, uint8_t out[16])
{
	if (v->kind != V_STR || strlen(v->s) != 36)
		return fail(p, v->line, "bad uuid (expected \"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx\")");
	const char *s = v->s;
	for (int i = 0, k = 0; i < 36;) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return fail(p, v->line, "bad uuid");
			i++;
			continue;
		}
		int h = rd_hexval(s[i]), l = rd_hexval(s[i + 1]);
		if (h < 0 || l < 0)
			return fail(p, v->line, "bad uuid");
		out[k++] = (uint8_t)(h * 16 + l);
		i += 2;
	}
	return 0;
}

/* ---- types --------------------------------------------------------------- */

static struct rd_type *new_type(struct parser *p, enum rd_type_kind kind, unsigned line)
{
	struct rd_type *t = rd_arena_alloc(p->ar, sizeof(*t));
	if (!t) {
		oom(p);
		return NULL;
	}
	t->kind = kind;
	t->line = line;
	t->clock = -1;
	t->align = 8;
	t->depth = 1;
	return t;
}

/* Saturating arithmetic for rd_type.min_bits. */
static uint64_t bits_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t bits_mul(uint64_t a, uint64_t b)
{
	return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

static const struct rd_type *find_named(struct parser *p, int kind, const char *name, size_t n)
{
	const struct named *v = p->names.v;
	for (size_t i = p->names.n; i-- > 0;)
		if (v[i].kind == kind && strlen(v[i].name) == n && memcmp(v[i].name, name, n) == 0)
			return v[i].type;
	return NULL;
}

static int add_named(struct parser *p, int kind, const char *name, const struct rd_type *t,
		     unsigned line)
{
	if (find_named(p, kind, name, strlen(name)))
		return fail(p, line, "'%s' is already defined", name);
	struct named *e = vec_push(&p->names);
	if (!e)
		return oom(p);
	e->kind = kind;
	e->name = name;
	e->type = t;
	return 0;
}

static const struct rd_type *parse_type_spec(struct parser *p);

static const struct rd_type *parse_integer(struct parser *p, unsigned line)
{
	struct rd_type *t = new_type(p, RD_INT, line);
	int has_size = 0, has_align = 0;
	if (!t || expect(p, '{', "'{' after 'integer'") < 0)
		return NULL;
	t->base = 10;
	while (!p->failed && !is_punct(peek(p, 0), '}')) {
		const struct tok *a = peek(p, 0);
		if (a->kind != TK_WORD) {
			char b[64];
			fail(p, a->line, "expected an integer attribute, got %s", describe(a, b, sizeof(b)));
			return NULL;
		}
		struct tok at = next(p);
		struct value v;
		if (expect(p, '=', "'='") < 0 || parse_value(p, &v) < 0)
			return NULL;
		uint64_t u = 0;
		int bl = 0;
		if (is_word(&at, "size")) {
			if (value_uint(p, &v, "size", &u) < 0)
				return NULL;
			if (u == 0 || u > 64) {
				fail(p, v.line, "integer size %llu is not in 1..64", (unsigned long long)u);
				return NULL;
			}
			t->size = (uint32_t)u;
			has_size = 1;
		} else if (is_word(&at, "align")) {
			if (value_align(p, &v, &t->align) < 0)
				return NULL;
			has_align = 1;
		} else if (is_word(&at, "signed")) {
			if (value_bool(p, &v, "signed", &bl) < 0)
				return NULL;
			t->is_signed = (uint8_t)bl;
		} else if (is_word(&at, "byte_order")) {
			if (value_byte_order(p, &v, 1, &t->byte_order) < 0)
				return NULL;
		} else if (is_word(&at, "base")) {
			static const struct { const char *w; uint8_t b; } bases[] = {
				{ "decimal", 10 }, { "dec", 10 }, { "d", 10 }, { "i", 10 }, { "u", 10 },
				{ "hexadecimal", 16 }, { "hex", 16 }, { "x", 16 }, { "X", 16 }, { "p", 16 },
				{ "octal", 8 }, { "oct", 8 }, { "o", 8 }, { "binary", 2 }, { "b", 2 },
			};
			int ok = 0;
			if (v.kind == V_INT && !v.neg && (v.u == 2 || v.u == 8 || v.u == 10 || v.u == 16)) {
				t->base = (uint8_t)v.u;
				ok = 1;
			}
			for (size_t i = 0; !ok && v.kind == V_WORD && i < sizeof(bases) / sizeof(bases[0]); i++)
				if (!strcmp(v.s, bases[i].w)) {
					t->base = bases[i].b;
					ok = 1;
				}
			if (!ok) {
				fail(p, v.line, "bad integer base");
				return NULL;
			}
		} else if (is_word(&at, "encoding")) {
			if ((v.kind != V_WORD && v.kind != V_STR) ||
			    (strcmp(v.s, "none") && strcmp(v.s, "UTF8") && strcmp(v.s, "ASCII") &&
			     strcmp(v.s, "utf8") && strcmp(v.s, "ascii"))) {
				fail(p, v.line, "bad encoding (expected none, UTF8 or ASCII)");
				return NULL;
			}
			t->encoded = strcmp(v.s, "none") != 0;
		} else if (is_word(&at, "map")) {
			if (v.kind != V_WORD || strncmp(v.s, "clock.", 6) != 0 || strlen(v.s) < 13 ||
			    strcmp(v.s + strlen(v.s) - 6, ".value") != 0) {
				fail(p, v.line, "bad map (expected clock.NAME.value)");
				return NULL;
			}
			t->map_name = rd_arena_strndup(p->ar, v.s + 6, strlen(v.s) - 12);
			if (!t->map_name) {
				oom(p);
				return NULL;
			}
		} else {
			fail(p, at.line, "unknown integer attribute '%.*s'", (int)at.n, at.s);
			return NULL;
		}
		if (expect(p, ';', "';' after the attribute") < 0)
			return NULL;
	}
	if (expect(p, '}', "'}'") < 0)
		return NULL;
	if (!has_size) {
		fail(p, line, "integer without a size");
		return NULL;
	}
	if (!has_align)
		t->align = t->size % 8 ? 1 : 8;
	t->min_bits = t->size;
	if (t->map_name) {
		struct rd_type **e = vec_push(&p->maps);
		if (!e) {
			oom(p);
			return NULL;
		}
		*e = t;
	}
	return t;
}

static const struct rd_type *parse_float(struct parser *p, unsigned line)
{
	struct rd_type *t = new_type(p, RD_FLOAT, line);
	uint64_t exp_dig = 0, mant_dig = 0;
	int has_align = 0;
	if (!t || expect(p, '{', "'{' after 'floating_point'") < 0)
		return NULL;
	t->is_signed = 1;
	while (!p->failed && !is_punct(peek(p, 0), '}')) {
		const struct tok *a = peek(p, 0);
		if (a->kind != TK_WORD) {
			char b[64];
			fail(p, a->line, "expected a floating_point attribute, got %s",
			     describe(a, b, sizeof(b)));
			return NULL;
		}
		struct tok at = next(p);
		struct value v;
		if (expect(p, '=', "'='") < 0 || parse_value(p, &v) < 0)
			return NULL;
		if (is_word(&at, "exp_dig")) {
			if (value_uint(p, &v, "exp_dig", &exp_dig) < 0)
				return NULL;
		} else if (is_word(&at, "mant_dig")) {
			if (value_uint(p, &v, "mant_dig", &mant_dig) < 0)
				return NULL;
		} else if (is_word(&at, "align")) {
			if (value_align(p, &v, &t->align) < 0)
				return NULL;
			has_align = 1;
		} else if (is_word(&at, "byte_order")) {
			if (value_byte_order(p, &v, 1, &t->byte_order) < 0)
				return NULL;
		} else {
			fail(p, at.line, "unknown floating_point attribute '%.*s'", (int)at.n, at.s);
			return NULL;
		}
		if (expect(p, ';', "';' after the attribute") < 0)
			return NULL;
	}
	if (expect(p, '}', "'}'") < 0)
		return NULL;
	if (exp_dig == 8 && mant_dig == 24) {
		t->size = 32;
	} else if (exp_dig == 11 && mant_dig == 53) {
		t->size = 64;
	} else {
		fail(p, line, "unsupported floating_point (only exp_dig/mant_dig 8/24 and 11/53)");
		return NULL;
	}
	if (!has_align)
		t->align = 8;
	t->min_bits = t->size;
	return t;
}

static const struct rd_type *parse_string_type(struct parser *p, unsigned line)
{
	struct rd_type *t = new_type(p, RD_STRING, line);
	if (!t)
		return NULL;
	t->min_bits = 8;             /* the NUL */
	if (!is_punct(peek(p, 0), '{'))
		return t;
	next(p);
	while (!p->failed && !is_punct(peek(p, 0), '}')) {
		struct tok at = next(p);
		struct value v;
		if (!is_word(&at, "encoding")) {
			fail(p, at.line, "unknown string attribute");
			return NULL;
		}
		if (expect(p, '=', "'='") < 0 || parse_value(p, &v) < 0)
			return NULL;
		if ((v.kind != V_WORD && v.kind != V_STR) ||
		    (strcmp(v.s, "UTF8") && strcmp(v.s, "ASCII") && strcmp(v.s, "utf8") &&
		     strcmp(v.s, "ascii"))) {
			fail(p, v.line, "bad string encoding");
			return NULL;
		}
		if (expect(p, ';', "';' after the attribute") < 0)
			return NULL;
	}
	if (expect(p, '}', "'}'") < 0)
		return NULL;
	return t;
}

static int parse_typealias(struct parser *p);
static int parse_typedef(struct parser *p);

/* One declarator: name { '[' len ']' }. */
static int parse_declarator(struct parser *p, const struct rd_type *base, const char **ret_name,
			    const struct rd_type **ret_type)
{
	const struct tok *t = peek(p, 0);
	if (t->kind != TK_WORD) {
		char b[64];
		return fail(p, t->line, "expected a field name, got %s", describe(t, b, sizeof(b)));
	}
	struct tok nt = next(p);
	const char *name = word_dup(p, &nt);
	if (!name)
		return -ENOMEM;
	struct { uint64_t len; const char *ref; unsigned line; } dims[8];
	unsigned nd = 0;
	while (is_punct(peek(p, 0), '[')) {
		unsigned line = next(p).line;
		if (nd == 8)
			return fail(p, line, "too many array dimensions");
		dims[nd].line = line;
		dims[nd].ref = NULL;
		t = peek(p, 0);
		if (t->kind == TK_INT) {
			dims[nd].len = next(p).ival;
		} else if (t->kind == TK_WORD) {
			dims[nd].ref = parse_path(p);
			if (!dims[nd].ref)
				return -EINVAL;
		} else {
			char b[64];
			return fail(p, t->line, "expected an array length, got %s", describe(t, b, sizeof(b)));
		}
		if (expect(p, ']', "']'") < 0)
			return -EINVAL;
		nd++;
	}
	const struct rd_type *ty = base;
	for (unsigned i = nd; i-- > 0;) {
		struct rd_type *a = new_type(p, dims[i].ref ? RD_SEQ : RD_ARRAY, dims[i].line);
		if (!a)
			return -ENOMEM;
		a->elem = ty;
		a->length = dims[i].len;
		a->ref = dims[i].ref;
		a->align = ty->align;
		a->depth = ty->depth + 1;
		a->min_bits = a->kind == RD_ARRAY ? bits_mul(a->length, ty->min_bits) : 0;
		if (a->depth > RD_TYPE_DEPTH)
			return fail(p, dims[i].line, "type nested more than %d deep", RD_TYPE_DEPTH);
		ty = a;
	}
	*ret_name = name;
	*ret_type = ty;
	return 0;
}

/* A field name and where it was declared, for the duplicate check. */
struct field_name {
	const char *name;
	uint32_t index;
	unsigned line;
};

static int cmp_field_name(const void *a, const void *b)
{
	const struct field_name *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : x->index < y->index ? -1 : x->index > y->index;
}

/*
 * Fail on the first field (in declaration order) whose name an earlier one
 * has. Sorting keeps this O(n log n): a struct may have MEMBERS_MAX fields,
 * and comparing each with all before it took seconds per struct.
 */
static int check_duplicates(struct parser *p, struct vec *names)
{
	struct field_name *f = names->v;
	const struct field_name *dup = NULL;
	if (names->n < 2)
		return 0;
	qsort(f, names->n, sizeof(*f), cmp_field_name);
	for (size_t i = 1; i < names->n; i++)
		if (!strcmp(f[i].name, f[i - 1].name) && (!dup || f[i].index < dup->index) &&
		    (i < 2 || strcmp(f[i].name, f[i - 2].name)))
			dup = &f[i];
	return dup ? fail(p, dup->line, "duplicate field '%s'", dup->name) : 0;
}

/* '{' fields '}' of a struct or variant. */
static int parse_fields(struct parser *p, struct rd_type *t)
{
	struct vec members = { .esz = sizeof(struct rd_member) };
	struct vec names = { .esz = sizeof(struct field_name) };
	int r = -EINVAL;
	if (expect(p, '{', "'{'") < 0)
		return -EINVAL;
	while (!p->failed && !is_punct(peek(p, 0), '}')) {
		const struct tok *k = peek(p, 0);
		if (is_word(k, "typealias")) {
			if (parse_typealias(p) < 0)
				goto out;
			continue;
		}
		if (is_word(k, "typedef")) {
			if (parse_typedef(p) < 0)
				goto out;
			continue;
		}
		const struct rd_type *base = parse_type_spec(p);
		if (!base)
			goto out;
		for (;;) {
			const char *name;
			const struct rd_type *mt;
			unsigned line = peek(p, 0)->line;
			if (parse_declarator(p, base, &name, &mt) < 0)
				goto out;
			if (members.n >= MEMBERS_MAX) {
				fail(p, line, "too many fields");
				goto out;
			}
			struct rd_member *nm = vec_push(&members);
			struct field_name *fn = vec_push(&names);
			if (!nm || !fn) {
				oom(p);
				goto out;
			}
			nm->name = name;
			nm->type = mt;
			fn->name = name;
			fn->index = (uint32_t)members.n - 1;
			fn->line = line;
			if (!is_punct(peek(p, 0), ','))
				break;
			next(p);
		}
		if (expect(p, ';', "';' after a field") < 0)
			goto out;
	}
	if (expect(p, '}', "'}'") < 0 || check_duplicates(p, &names) < 0)
		goto out;
	/* A struct takes all its fields, a variant one of its options. */
	t->min_bits = t->kind == RD_VARIANT && members.n ? UINT64_MAX : 0;
	for (size_t i = 0; i < members.n; i++) {
		const struct rd_member *m = &((const struct rd_member *)members.v)[i];
		if (m->type->depth + 1 > t->depth)
			t->depth = m->type->depth + 1;
		if (t->kind == RD_VARIANT)
			t->min_bits = m->type->min_bits < t->min_bits ? m->type->min_bits : t->min_bits;
		else
			t->min_bits = bits_add(t->min_bits, m->type->min_bits);
	}
	if (t->depth > RD_TYPE_DEPTH) {
		fail(p, t->line, "type nested more than %d deep", RD_TYPE_DEPTH);
		goto out;
	}
	t->n_members = (uint32_t)members.n;
	t->members = vec_to_arena(p, &members);
	if (members.n && !t->members) {
		oom(p);
		goto out;
	}
	r = 0;
out:
	vec_free(&members);
	vec_free(&names);
	return r;
}

static const struct rd_type *parse_struct(struct parser *p, unsigned line)
{
	const char *name = NULL;
	const struct tok *t = peek(p, 0);
	if (t->kind == TK_WORD && !is_word(t, "align")) {
		struct tok nt = next(p);
		name = word_dup(p, &nt);
		if (!name)
			return NULL;
	}
	if (!is_punct(peek(p, 0), '{')) {
		if (!name) {
			char b[64];
			fail(p, peek(p, 0)->line, "expected '{' after 'struct', got %s",
			     describe(peek(p, 0), b, sizeof(b)));
			return NULL;
		}
		const struct rd_type *ref = find_named(p, RD_STRUCT, name, strlen(name));
		if (!ref)
			fail(p, line, "unknown struct '%s'", name);
		return ref;
	}
	struct rd_type *st = new_type(p, RD_STRUCT, line);
	if (!st)
		return NULL;
	st->align = 1;
	if (parse_fields(p, st) < 0)
		return NULL;
	if (is_word(peek(p, 0), "align")) {
		next(p);
		struct value v;
		uint32_t a = 0;
		if (expect(p, '(', "'(' after 'align'") < 0 || parse_value(p, &v) < 0 ||
		    value_align(p, &v, &a) < 0 || expect(p, ')', "')'") < 0)
			return NULL;
		st->align = a;
	}
	for (uint32_t i = 0; i < st->n_members; i++)
		if (st->members[i].type->align > st->align)
			st->align = st->members[i].type->align;
	if (name && add_named(p, RD_STRUCT, name, st, line) < 0)
		return NULL;
	return st;
}

static const struct rd_type *parse_variant(struct parser *p, unsigned line)
{
	const char *name = NULL, *tag = NULL;
	const struct tok *t = peek(p, 0);
	if (t->kind == TK_WORD) {
		struct tok nt = next(p);
		name = word_dup(p, &nt);
		if (!name)
			return NULL;
	}
	if (is_punct(peek(p, 0), '<')) {
		next(p);
		tag = parse_path(p);
		if (!tag || expect(p, '>', "'>' after the variant tag") < 0)
			return NULL;
	}
	if (!is_punct(peek(p, 0), '{')) {
		if (!name) {
			fail(p, line, "expected '{' after 'variant'");
			return NULL;
		}
		const struct rd_type *ref = find_named(p, RD_VARIANT, name, strlen(name));
		if (!ref) {
			fail(p, line, "unknown variant '%s'", name);
			return NULL;
		}
		if (!tag)
			return ref;
		struct rd_type *copy = new_type(p, RD_VARIANT, line);
		if (!copy)
			return NULL;
		*copy = *ref;
		copy->ref = tag;
		return copy;
	}
	struct rd_type *vt = new_type(p, RD_VARIANT, line);
	if (!vt)
		return NULL;
	vt->align = 1;               /* the selected option aligns itself */
	vt->ref = tag;
	if (parse_fields(p, vt) < 0)
		return NULL;
	if (vt->n_members == 0) {
		fail(p, line, "variant without options");
		return NULL;
	}
	if (name && add_named(p, RD_VARIANT, name, vt, line) < 0)
		return NULL;
	return vt;
}

static int enum_value(struct parser *p, const struct rd_type *c, struct value *v, uint64_t *out)
{
	if (v->kind != V_INT)
		return fail(p, v->line, "enumerator value must be an integer");
	if (c->is_signed) {
		int64_t s = 0;
		if (value_int(p, v, "enumerator", &s) < 0)
			return -EINVAL;
		*out = (uint64_t)s;
	} else {
		if (v->neg)
			return fail(p, v->line, "negative value in an unsigned enum");
		*out = v->u;
	}
	return 0;
}

static const struct rd_type *parse_enum(struct parser *p, unsigned line)
{
	const char *name = NULL;
	const struct rd_type *container = NULL;
	struct vec maps = { .esz = sizeof(struct rd_enum_map) };
	const struct tok *t = peek(p, 0);
	if (t->kind == TK_WORD) {
		struct tok nt = next(p);
		name = word_dup(p, &nt);
		if (!name)
			return NULL;
	}
	if (is_punct(peek(p, 0), ':')) {
		next(p);
		container = parse_type_spec(p);
		if (!container)
			return NULL;
		if (container->kind != RD_INT) {
			fail(p, line, "enum container must be an integer");
			return NULL;
		}
	}
	if (!is_punct(peek(p, 0), '{')) {
		if (!name) {
			fail(p, line, "expected '{' after 'enum'");
			return NULL;
		}
		const struct rd_type *ref = find_named(p, RD_ENUM, name, strlen(name));
		if (!ref)
			fail(p, line, "unknown enum '%s'", name);
		return ref;
	}
	if (!container) {
		container = find_named(p, 0, "int", 3);
		if (!container || container->kind != RD_INT) {
			fail(p, line, "enum without a container type (and no 'int' alias)");
			return NULL;
		}
	}
	struct rd_type *et = new_type(p, RD_ENUM, line);
	if (!et)
		return NULL;
	*et = *container;
	et->kind = RD_ENUM;
	et->line = line;
	if (et->map_name) {
		struct rd_type **e = vec_push(&p->maps);
		if (!e) {
			oom(p);
			return NULL;
		}
		*e = et;
	}
	next(p);                     /* '{' */
	uint64_t nextv = 0;
	const struct rd_type *result = NULL;
	while (!p->failed && !is_punct(peek(p, 0), '}')) {
		t = peek(p, 0);
		const char *label;
		if (t->kind == TK_WORD) {
			struct tok lt = next(p);
			label = word_dup(p, &lt);
		} else if (t->kind == TK_STR) {
			label = next(p).str;
		} else {
			char b[64];
			fail(p, t->line, "expected an enumerator, got %s", describe(t, b, sizeof(b)));
			goto out;
		}
		if (!label)
			goto out;
		uint64_t lo = nextv, hi = nextv;
		if (is_punct(peek(p, 0), '=')) {
			struct value v;
			next(p);
			if (parse_value(p, &v) < 0 || enum_value(p, et, &v, &lo) < 0)
				goto out;
			hi = lo;
			if (is_punct(peek(p, 0), P_ELLIPSIS)) {
				next(p);
				if (parse_value(p, &v) < 0 || enum_value(p, et, &v, &hi) < 0)
					goto out;
				if (et->is_signed ? (int64_t)hi < (int64_t)lo : hi < lo) {
					fail(p, v.line, "enumerator range goes backwards");
					goto out;
				}
			}
		}
		if (maps.n >= MAPS_MAX) {
			fail(p, t->line, "too many enumerators");
			goto out;
		}
		struct rd_enum_map *mp = vec_push(&maps);
		if (!mp) {
			oom(p);
			goto out;
		}
		mp->label = label;
		mp->lo = lo;
		mp->hi = hi;
		nextv = hi + 1;
		if (!is_punct(peek(p, 0), ','))
			break;
		next(p);
	}
	if (expect(p, '}', "'}' after the enumerators") < 0)
		goto out;
	et->n_maps = (uint32_t)maps.n;
	et->maps = vec_to_arena(p, &maps);
	if (maps.n && !et->maps) {
		oom(p);
		goto out;
	}
	if (name && add_named(p, RD_ENUM, name, et, line) < 0)
		goto out;
	result = et;
out:
	vec_free(&maps);
	return result;
}

static int is_type_keyword(const struct tok *t)
{
	return is_word(t, "integer") || is_word(t, "floating_point") || is_word(t, "string") ||
	       is_word(t, "struct") || is_word(t, "variant") || is_word(t, "enum");
}

/* An alias name: the longest run of words (up to ALIAS_WORDS) that is known. */
static const struct rd_type *parse_alias_ref(struct parser *p)
{
	char buf[4 * 256 + 4];
	const struct rd_type *best = NULL;
	unsigned best_k = 0;
	size_t n = 0;
	for (unsigned k = 0; k < ALIAS_WORDS; k++) {
		const struct tok *t = peek(p, k);
		if (t->kind != TK_WORD || t->n > 256)
			break;
		if (k)
			buf[n++] = ' ';
		memcpy(buf + n, t->s, t->n);
		n += t->n;
		const struct rd_type *a = find_named(p, 0, buf, n);
		if (a) {
			best = a;
			best_k = k + 1;
		}
	}
	const struct tok *t = peek(p, 0);
	if (!best) {
		char b[64];
		fail(p, t->line, "unknown type %s", describe(t, b, sizeof(b)));
		return NULL;
	}
	for (unsigned k = 0; k < best_k; k++)
		next(p);
	return best;
}

static const struct rd_type *parse_type_spec(struct parser *p)
{
	const struct tok *t = peek(p, 0);
	const struct rd_type *r;
	if (p->failed)
		return NULL;
	if (t->kind != TK_WORD) {
		char b[64];
		fail(p, t->line, "expected a type, got %s", describe(t, b, sizeof(b)));
		return NULL;
	}
	if (++p->depth > RD_DEPTH_MAX) {
		fail(p, t->line, "types nested more than %d deep", RD_DEPTH_MAX);
		return NULL;
	}
	unsigned line = t->line;
	if (is_word(t, "const"))
		next(p), t = peek(p, 0);
	if (is_word(t, "integer")) {
		next(p);
		r = parse_integer(p, line);
	} else if (is_word(t, "floating_point")) {
		next(p);
		r = parse_float(p, line);
	} else if (is_word(t, "string")) {
		next(p);
		r = parse_string_type(p, line);
	} else if (is_word(t, "struct")) {
		next(p);
		r = parse_struct(p, line);
	} else if (is_word(t, "variant")) {
		next(p);
		r = parse_variant(p, line);
	} else if (is_word(t, "enum")) {
		next(p);
		r = parse_enum(p, line);
	} else {
		r = parse_alias_ref(p);
	}
	p->depth--;
	return p->failed ? NULL : r;
}

/* typealias type-spec ':=' words ';' */
static int parse_typealias(struct parser *p)
{
	unsigned line = next(p).line;
	const struct rd_type *t = parse_type_spec(p);
	if (!t)
		return -EINVAL;
	if (expect(p, P_ASSIGN, "':=' in typealias") < 0)
		return -EINVAL;
	char buf[4 * 256 + 4];
	size_t n = 0;
	unsigned k = 0;
	while (peek(p, 0)->kind == TK_WORD) {
		const struct tok *w = peek(p, 0);
		if (k == ALIAS_WORDS || w->n > 256)
			return fail(p, w->line, "alias name too long");
		if (is_type_keyword(w))
			return fail(p, w->line, "'%.*s' cannot be an alias name", (int)w->n, w->s);
		if (k)
			buf[n++] = ' ';
		memcpy(buf + n, w->s, w->n);
		n += w->n;
		next(p);
		k++;
	}
	if (!k)
		return fail(p, line, "typealias without a name");
	if (expect(p, ';', "';' after typealias") < 0)
		return -EINVAL;
	char *name = rd_arena_strndup(p->ar, buf, n);
	if (!name)
		return oom(p);
	return add_named(p, 0, name, t, line);
}

/* typedef type-spec declarator { ',' declarator } ';' */
static int parse_typedef(struct parser *p)
{
	next(p);
	const struct rd_type *base = parse_type_spec(p);
	if (!base)
		return -EINVAL;
	for (;;) {
		const char *name;
		const struct rd_type *t;
		unsigned line = peek(p, 0)->line;
		if (parse_declarator(p, base, &name, &t) < 0)
			return -EINVAL;
		if (t->kind == RD_SEQ)
			return fail(p, line, "typedef of a sequence is not supported");
		if (add_named(p, 0, name, t, line) < 0)
			return -EINVAL;
		if (!is_punct(peek(p, 0), ','))
			break;
		next(p);
	}
	return expect(p, ';', "';' after typedef");
}

/* ---- blocks -------------------------------------------------------------- */

enum block { B_TRACE, B_ENV, B_CLOCK, B_STREAM, B_EVENT };

struct block_state {
	struct rd_clock clock;
	struct rd_stream_class stream;
	struct rd_event_class event;
	int has_id, has_stream_id, has_name, has_freq;
};

static const struct rd_type *scope_struct(struct parser *p, const struct rd_type *t, unsigned line,
					  const char *scope)
{
	if (t && t->kind != RD_STRUCT) {
		fail(p, line, "%s must be a struct", scope);
		return NULL;
	}
	return t;
}

static int block_scope(struct parser *p, enum block b, struct block_state *st, const char *path,
		       unsigned line)
{
	const struct rd_type *t = parse_type_spec(p);
	if (!t)
		return -EINVAL;
	/* Optional declarator-less form only; `:= struct {...} name` is not TSDL. */
	if (b == B_TRACE && !strcmp(path, "packet.header")) {
		if (p->m->packet_header)
			return fail(p, line, "duplicate trace.packet.header");
		p->m->packet_header = scope_struct(p, t, line, "trace.packet.header");
	} else if (b == B_STREAM && !strcmp(path, "packet.context")) {
		st->stream.packet_context = scope_struct(p, t, line, "stream.packet.context");
	} else if (b == B_STREAM && !strcmp(path, "event.header")) {
		st->stream.event_header = scope_struct(p, t, line, "stream.event.header");
	} else if (b == B_STREAM && !strcmp(path, "event.context")) {
		st->stream.event_context = scope_struct(p, t, line, "stream.event.context");
	} else if (b == B_EVENT && !strcmp(path, "context")) {
		st->event.context = scope_struct(p, t, line, "event.context");
	} else if (b == B_EVENT && !strcmp(path, "fields")) {
		st->event.fields = scope_struct(p, t, line, "event.fields");
	} else {
		return fail(p, line, "unknown scope '%s'", path);
	}
	return p->failed ? -EINVAL : 0;
}

static int block_attr(struct parser *p, enum block b, struct block_state *st, const char *key,
		      const struct value *v)
{
	uint64_t u = 0;
	int64_t s = 0;
	int bl = 0;

	switch (b) {
	case B_TRACE:
		if (!strcmp(key, "major")) {
			if (value_uint(p, v, key, &u) < 0)
				return -EINVAL;
			if (u != 1)
				return fail(p, v->line, "unsupported CTF major version %llu",
					    (unsigned long long)u);
			p->has_major = 1;
		} else if (!strcmp(key, "minor")) {
			if (value_uint(p, v, key, &u) < 0)
				return -EINVAL;
			if (u != 8)
				return fail(p, v->line, "unsupported CTF minor version %llu",
					    (unsigned long long)u);
			p->has_minor = 1;
		} else if (!strcmp(key, "uuid")) {
			if (parse_uuid(p, v, p->m->uuid) < 0)
				return -EINVAL;
			p->m->has_uuid = 1;
		} else if (!strcmp(key, "byte_order")) {
			uint8_t bo;
			if (value_byte_order(p, v, 0, &bo) < 0)
				return -EINVAL;
			p->m->big_endian = bo == RD_BO_BE;
			p->has_bo = 1;
		}
		return 0;
	case B_ENV: {
		struct rd_env *e = vec_push(&p->env);
		if (!e)
			return oom(p);
		e->key = key;
		if (v->kind == V_INT) {
			if (value_int(p, v, key, &s) < 0)
				return -EINVAL;
			e->num = s;
		} else {
			e->str = v->s;
		}
		return 0;
	}
	case B_CLOCK:
		if (!strcmp(key, "name")) {
			if (v->kind == V_INT)
				return fail(p, v->line, "clock name must be a name or a string");
			st->clock.name = v->s;
			st->has_name = 1;
		} else if (!strcmp(key, "description")) {
			if (v->kind != V_STR)
				return fail(p, v->line, "clock description must be a string");
			st->clock.description = v->s;
		} else if (!strcmp(key, "uuid")) {
			if (parse_uuid(p, v, st->clock.uuid) < 0)
				return -EINVAL;
			st->clock.has_uuid = 1;
		} else if (!strcmp(key, "freq")) {
			if (value_uint(p, v, key, &st->clock.freq) < 0)
				return -EINVAL;
			if (st->clock.freq == 0)
				return fail(p, v->line, "clock frequency is 0");
			st->has_freq = 1;
		} else if (!strcmp(key, "offset_s")) {
			if (value_int(p, v, key, &st->clock.offset_s) < 0)
				return -EINVAL;
		} else if (!strcmp(key, "offset")) {
			if (value_uint(p, v, key, &st->clock.offset) < 0)
				return -EINVAL;
		} else if (!strcmp(key, "absolute")) {
			if (value_bool(p, v, key, &bl) < 0)
				return -EINVAL;
			st->clock.absolute = bl;
		}
		return 0;
	case B_STREAM:
		if (!strcmp(key, "id")) {
			if (value_uint(p, v, key, &st->stream.id) < 0)
				return -EINVAL;
			st->has_id = 1;
		}
		return 0;
	case B_EVENT:
		if (!strcmp(key, "name")) {
			if (v->kind == V_INT)
				return fail(p, v->line, "event name must be a name or a string");
			st->event.name = v->s;
			st->has_name = 1;
		} else if (!strcmp(key, "id")) {
			if (value_uint(p, v, key, &st->event.id) < 0)
				return -EINVAL;
			st->has_id = 1;
		} else if (!strcmp(key, "stream_id")) {
			if (value_uint(p, v, key, &st->event.stream_id) < 0)
				return -EINVAL;
			st->has_stream_id = 1;
		}
		return 0;
	}
	return 0;
}

static int parse_block(struct parser *p, enum block b)
{
	struct block_state st;
	unsigned line = next(p).line;
	memset(&st, 0, sizeof(st));
	st.event.line = line;
	if (expect(p, '{', "'{'") < 0)
		return -EINVAL;
	while (!p->failed && !is_punct(peek(p, 0), '}')) {
		const struct tok *k = peek(p, 0);
		if (b != B_ENV && is_word(k, "typealias")) {
			if (parse_typealias(p) < 0)
				return -EINVAL;
			continue;
		}
		if (b != B_ENV && is_word(k, "typedef")) {
			if (parse_typedef(p) < 0)
				return -EINVAL;
			continue;
		}
		unsigned aline = k->line;
		char *path = parse_path(p);
		if (!path)
			return -EINVAL;
		const struct tok *op = peek(p, 0);
		if (is_punct(op, P_ASSIGN) && b != B_ENV) {
			next(p);
			if (block_scope(p, b, &st, path, aline) < 0)
				return -EINVAL;
		} else if (is_punct(op, '=')) {
			struct value v;
			next(p);
			if (parse_value(p, &v) < 0 || block_attr(p, b, &st, path, &v) < 0)
				return -EINVAL;
		} else {
			char bf[64];
			return fail(p, op->line, "expected '=' or ':=' after '%s', got %s", path,
				    describe(op, bf, sizeof(bf)));
		}
		if (expect(p, ';', "';'") < 0)
			return -EINVAL;
	}
	if (expect(p, '}', "'}'") < 0)
		return -EINVAL;
	if (expect(p, ';', "';' after the block") < 0)
		return -EINVAL;

	if (b == B_CLOCK) {
		if (!st.has_name)
			return fail(p, line, "clock without a name");
		if (!st.has_freq)
			st.clock.freq = 1000000000;
		/* babeltrace2 (ctf visitor) moves whole seconds from offset to
		 * offset_s, so that offset < freq; times depend on it. */
		if (st.clock.offset >= st.clock.freq) {
			uint64_t secs = st.clock.offset / st.clock.freq;
			if (secs > INT64_MAX || (st.clock.offset_s > 0 &&
						 (int64_t)secs > INT64_MAX - st.clock.offset_s))
				return fail(p, line, "clock offset out of range");
			st.clock.offset_s += (int64_t)secs;
			st.clock.offset -= secs * st.clock.freq;
		}
		const struct rd_clock *c = p->clocks.v;
		for (size_t i = 0; i < p->clocks.n; i++)
			if (!strcmp(c[i].name, st.clock.name))
				return fail(p, line, "duplicate clock '%s'", st.clock.name);
		struct rd_clock *nc = vec_push(&p->clocks);
		if (!nc)
			return oom(p);
		*nc = st.clock;
	} else if (b == B_STREAM) {
		const struct rd_stream_class *s = p->streams.v;
		for (size_t i = 0; i < p->streams.n; i++)
			if (s[i].id == st.stream.id)
				return fail(p, line, "duplicate stream id %llu",
					    (unsigned long long)st.stream.id);
		struct rd_stream_class *ns = vec_push(&p->streams);
		if (!ns)
			return oom(p);
		*ns = st.stream;
		ns->clock = -1;
	} else if (b == B_EVENT) {
		if (!st.has_name)
			return fail(p, line, "event without a name");
		if (p->events.n >= EVENTS_MAX)
			return fail(p, line, "too many events");
		struct rd_event_class *ne = vec_push(&p->events);
		if (!ne)
			return oom(p);
		*ne = st.event;
		/* Events without id or stream_id: resolved later. */
		if (!st.has_id)
			ne->id = UINT64_MAX;
		if (!st.has_stream_id)
			ne->stream_id = UINT64_MAX;
	}
	return 0;
}

/* Skip a block we do not use (callsite): balanced braces then ';'. */
static int skip_block(struct parser *p)
{
	next(p);
	if (expect(p, '{', "'{'") < 0)
		return -EINVAL;
	unsigned depth = 1;
	while (depth) {
		struct tok t = next(p);
		if (p->failed)
			return -EINVAL;
		if (t.kind == TK_EOF)
			return fail(p, t.line, "unterminated block");
		if (is_punct(&t, '{'))
			depth++;
		else if (is_punct(&t, '}'))
			depth--;
	}
	return expect(p, ';', "';' after the block");
}

/* ---- semantic checks ----------------------------------------------------- */

static int find_clock(struct parser *p, const char *name)
{
	const struct rd_clock *c = p->clocks.v;
	for (size_t i = 0; i < p->clocks.n; i++)
		if (!strcmp(c[i].name, name))
			return (int)i;
	return -1;
}

/*
 * The clock mapped by integers of t (-1 none, -2 several). `memo` holds the
 * answer (+ 2) for each struct or variant already seen: types are shared,
 * and a DAG of 40 levels of two members each is 2^40 paths but 41 types.
 */
static int type_clock(const struct rd_type *t, unsigned depth, struct u64map *memo)
{
	int c = -1;
	if (!t || depth > RD_TYPE_DEPTH)
		return -1;
	switch (t->kind) {
	case RD_INT:
	case RD_ENUM:
		return t->clock;
	case RD_STRUCT:
	case RD_VARIANT: {
		uint64_t *seen = u64map_get(memo, (uintptr_t)t);
		if (seen)
			return (int)*seen - 2;
		for (uint32_t i = 0; i < t->n_members; i++) {
			int m = type_clock(t->members[i].type, depth + 1, memo);
			if (m == -2 || (m >= 0 && c >= 0 && m != c)) {
				c = -2;
				break;
			}
			if (m >= 0)
				c = m;
		}
		uint64_t *v = u64map_put(memo, (uintptr_t)t, NULL);
		if (v)                   /* else only slower */
			*v = (uint64_t)(c + 2);
		return c;
	}
	case RD_ARRAY:
	case RD_SEQ:
		return type_clock(t->elem, depth + 1, memo);
	default:
		return -1;
	}
}

/*
 * Timestamps that no `map` ties to a clock, as babeltrace2 2.0.4 reads them
 * (visitor-generate-ir.c, auto_map_fields_to_trace_clock_class): an
 * unmapped integer named `timestamp` anywhere in an event header (struct
 * members and variant options, at any depth), or `timestamp_begin` or
 * `timestamp_end` in a packet context, maps to the trace's only clock, or
 * to an implicit 1 GHz clock named "default" (origin 0) if the trace
 * declares none; with several clocks the metadata is refused. The name
 * matters: the same field named `ts` gives no time.
 *
 * Types are shared between their uses (aliases, named structs), so the
 * path down to such a field is copied before the mapping is set: the same
 * alias used elsewhere (in a payload) stays unmapped, as in babeltrace2,
 * which copies a type at each use.
 */
static int implicit_clock(struct parser *p, const struct rd_type *t)
{
	if (p->clocks.n == 1)
		return 0;
	if (p->clocks.n > 1)
		return fail(p, t->line, "a timestamp that is not mapped to a clock, in a trace with "
			    "%zu clocks", p->clocks.n);
	struct rd_clock *c = vec_push(&p->clocks);
	if (!c)
		return oom(p);
	memset(c, 0, sizeof(*c));
	c->name = "default";
	c->freq = 1000000000;
	return 0;
}

static struct rd_type *copy_type(struct parser *p, const struct rd_type *t)
{
	struct rd_type *x = rd_arena_alloc(p->ar, sizeof(*x));
	if (!x) {
		oom(p);
		return NULL;
	}
	*x = *t;
	return x;
}

/* One walk of map_timestamps(): the result for each type already seen
 * (types are shared, so the walk of a DAG stays linear in its size). */
struct ts_walk {
	struct parser *p;
	const char *name;
	struct u64map memo;          /* rd_type * -> the rd_type * that replaces it */
	int err;                     /* -EINVAL or -ENOMEM, with p->failed */
};

/* t, or a copy of it in which the unmapped integers named w->name map to a
 * clock; NULL on error (w->err set). */
static const struct rd_type *map_timestamps(struct ts_walk *w, const struct rd_type *t,
					    unsigned depth)
{
	struct parser *p = w->p;
	if (!t || (t->kind != RD_STRUCT && t->kind != RD_VARIANT))
		return t;
	uint64_t *seen = u64map_get(&w->memo, (uintptr_t)t);
	if (seen)
		return (const struct rd_type *)(uintptr_t)*seen;
	if (depth > RD_TYPE_DEPTH) {
		w->err = fail(p, t->line, "types nested too deeply");
		return NULL;
	}
	struct rd_member *m = NULL;
	for (uint32_t i = 0; i < t->n_members; i++) {
		const struct rd_type *mt = t->members[i].type, *nt;
		if (mt && (mt->kind == RD_INT || mt->kind == RD_ENUM) && mt->clock < 0 &&
		    t->members[i].name && !strcmp(t->members[i].name, w->name)) {
			struct rd_type *x;
			if ((w->err = implicit_clock(p, mt)) < 0)
				return NULL;
			if (!(x = copy_type(p, mt))) {
				w->err = -ENOMEM;
				return NULL;
			}
			x->clock = 0;        /* the only clock */
			nt = x;
		} else if (!(nt = map_timestamps(w, mt, depth + 1)) && mt) {
			return NULL;
		}
		if (nt == mt)
			continue;
		if (!m) {
			m = rd_arena_alloc(p->ar, t->n_members * sizeof(*m));
			if (!m) {
				w->err = oom(p);
				return NULL;
			}
			memcpy(m, t->members, t->n_members * sizeof(*m));
		}
		m[i].type = nt;
	}
	const struct rd_type *r = t;
	if (m) {
		struct rd_type *x = copy_type(p, t);
		if (!x) {
			w->err = -ENOMEM;
			return NULL;
		}
		x->members = m;
		r = x;
	}
	uint64_t *v = u64map_put(&w->memo, (uintptr_t)t, NULL);
	if (!v) {
		w->err = oom(p);
		return NULL;
	}
	*v = (uintptr_t)r;
	return r;
}

static int map_stream_timestamps(struct parser *p)
{
	static const struct {
		const char *name;
		int in_header;           /* else in the packet context */
	} names[] = { { "timestamp", 1 }, { "timestamp_begin", 0 }, { "timestamp_end", 0 } };
	struct rd_stream_class *sc = p->streams.v;
	int err = 0;
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]) && !err; k++) {
		struct ts_walk w = { .p = p, .name = names[k].name };
		for (size_t i = 0; i < p->streams.n && !w.err; i++) {
			const struct rd_type **t = names[k].in_header ? &sc[i].event_header
								      : &sc[i].packet_context;
			const struct rd_type *r = map_timestamps(&w, *t, 0);
			if (!w.err)
				*t = r;
		}
		err = w.err;
		u64map_free(&w.memo);
	}
	return err;
}

static int cmp_event_ptr(const void *a, const void *b)
{
	const struct rd_event_class *x = *(struct rd_event_class *const *)a;
	const struct rd_event_class *y = *(struct rd_event_class *const *)b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int finish(struct parser *p)
{
	struct rd_meta *m = p->m;
	int r;
	if (!p->seen_trace)
		return fail(p, p->line, "no trace block");
	if (!p->has_major || !p->has_minor)
		return fail(p, p->line, "trace block without major/minor");
	if (!p->has_bo)
		return fail(p, p->line, "trace block without byte_order");

	struct rd_type **maps = p->maps.v;
	for (size_t i = 0; i < p->maps.n; i++) {
		int c = find_clock(p, maps[i]->map_name);
		if (c < 0)
			return fail(p, maps[i]->line, "integer mapped to unknown clock '%s'",
				    maps[i]->map_name);
		maps[i]->clock = c;
	}
	if ((r = map_stream_timestamps(p)) < 0)
		return r;

	m->clocks = vec_to_arena(p, &p->clocks);
	m->n_clocks = p->clocks.n;
	m->env = vec_to_arena(p, &p->env);
	m->n_env = p->env.n;
	if ((p->clocks.n && !m->clocks) || (p->env.n && !m->env))
		return oom(p);

	if (p->streams.n == 0 && p->events.n) {
		struct rd_stream_class *s = vec_push(&p->streams);
		if (!s)
			return oom(p);
		s->clock = -1;
	}
	if (p->streams.n > 1 && m->packet_header) {
		int has = 0;
		for (uint32_t i = 0; i < m->packet_header->n_members; i++)
			if (!strcmp(m->packet_header->members[i].name, "stream_id"))
				has = 1;
		if (!has)
			return fail(p, p->line, "several stream classes but no stream_id in the packet header");
	} else if (p->streams.n > 1) {
		return fail(p, p->line, "several stream classes but no packet header");
	}
	m->streams = vec_to_arena(p, &p->streams);
	m->n_streams = p->streams.n;
	m->events = vec_to_arena(p, &p->events);
	m->n_events = p->events.n;
	if ((p->streams.n && !m->streams) || (p->events.n && !m->events))
		return oom(p);

	struct u64map memo = { 0 };
	for (size_t i = 0; i < m->n_streams; i++) {
		struct rd_stream_class *sc = &m->streams[i];
		int c1 = type_clock(sc->packet_context, 0, &memo), c2 = type_clock(sc->event_header, 0, &memo);
		if (c1 == -2 || c2 == -2 || (c1 >= 0 && c2 >= 0 && c1 != c2)) {
			u64map_free(&memo);
			return fail(p, p->line, "stream %llu maps more than one clock",
				    (unsigned long long)sc->id);
		}
		sc->clock = c1 >= 0 ? c1 : c2;
	}
	u64map_free(&memo);

	for (size_t i = 0; i < m->n_streams; i++) {
		struct rd_stream_class *sc = &m->streams[i];
		size_t n = 0;
		for (size_t k = 0; k < m->n_events; k++) {
			struct rd_event_class *e = &m->events[k];
			if (e->stream_id == UINT64_MAX) {
				if (m->n_streams > 1)
					return fail(p, e->line, "event '%s' without stream_id", e->name);
				e->stream_id = sc->id;
			}
			if (e->stream_id == sc->id)
				n++;
		}
		sc->events = rd_arena_alloc(p->ar, (n ? n : 1) * sizeof(*sc->events));
		if (!sc->events)
			return oom(p);
		for (size_t k = 0; k < m->n_events; k++)
			if (m->events[k].stream_id == sc->id)
				sc->events[sc->n_events++] = &m->events[k];
		for (size_t k = 0; k < sc->n_events; k++)
			if (sc->events[k]->id == UINT64_MAX) {
				if (sc->n_events > 1)
					return fail(p, sc->events[k]->line, "event '%s' without id",
						    sc->events[k]->name);
				sc->events[k]->id = 0;
			}
		if (sc->n_events > 1)
			qsort(sc->events, sc->n_events, sizeof(*sc->events), cmp_event_ptr);
		for (size_t k = 1; k < sc->n_events; k++)
			if (sc->events[k]->id == sc->events[k - 1]->id)
				return fail(p, sc->events[k]->line, "duplicate event id %llu",
					    (unsigned long long)sc->events[k]->id);
	}
	for (size_t k = 0; k < m->n_events; k++)
		if (!rd_meta_stream(m, m->events[k].stream_id))
			return fail(p, m->events[k].line, "event '%s' refers to unknown stream %llu",
				    m->events[k].name, (unsigned long long)m->events[k].stream_id);
	return 0;
}

/* ---- entry points --------------------------------------------------------- */

int rd_meta_parse(const char *text, size_t len, struct rd_meta **ret, char *err, size_t errlen)
{
	static const char sig[] = "/* CTF 1.8";
	struct parser p;
	char dummy[8];
	int r;

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	if (len > RD_META_MAX) {
		snprintf(err, errlen, "metadata larger than %u bytes", RD_META_MAX);
		return -E2BIG;
	}
	if (len < sizeof(sig) - 1 || memcmp(text, sig, sizeof(sig) - 1) != 0) {
		snprintf(err, errlen, "line 1: metadata does not begin with \"/* CTF 1.8\"");
		return -EINVAL;
	}
	struct rd_meta *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rd_arena_init(&m->arena, RD_META_MEM);
	memset(&p, 0, sizeof(p));
	p.cur = text;
	p.end = text + len;
	p.line = 1;
	p.m = m;
	p.ar = &m->arena;
	p.err = err;
	p.errlen = errlen;
	p.names.esz = sizeof(struct named);
	p.maps.esz = sizeof(struct rd_type *);
	p.streams.esz = sizeof(struct rd_stream_class);
	p.events.esz = sizeof(struct rd_event_class);
	p.clocks.esz = sizeof(struct rd_clock);
	p.env.esz = sizeof(struct rd_env);

	for (;;) {
		const struct tok *t = peek(&p, 0);
		if (p.failed || t->kind == TK_EOF)
			break;
		if (is_punct(t, ';')) {
			next(&p);
		} else if (is_word(t, "typealias")) {
			parse_typealias(&p);
		} else if (is_word(t, "typedef")) {
			parse_typedef(&p);
		} else if (is_word(t, "trace")) {
			if (p.seen_trace) {
				fail(&p, t->line, "duplicate trace block");
				break;
			}
			p.seen_trace = 1;
			parse_block(&p, B_TRACE);
		} else if (is_word(t, "env")) {
			if (p.seen_env) {
				fail(&p, t->line, "duplicate env block");
				break;
			}
			p.seen_env = 1;
			parse_block(&p, B_ENV);
		} else if (is_word(t, "clock")) {
			parse_block(&p, B_CLOCK);
		} else if (is_word(t, "stream")) {
			parse_block(&p, B_STREAM);
		} else if (is_word(t, "event")) {
			parse_block(&p, B_EVENT);
		} else if (is_word(t, "callsite")) {
			skip_block(&p);
		} else if (is_word(t, "struct") || is_word(t, "variant") || is_word(t, "enum")) {
			if (parse_type_spec(&p))
				expect(&p, ';', "';' after the type declaration");
		} else {
			char b[64];
			fail(&p, t->line, "unexpected %s at top level", describe(t, b, sizeof(b)));
		}
	}
	r = p.failed ? -EINVAL : finish(&p);
	if (p.failed && r == 0)
		r = -EINVAL;
	vec_free(&p.names);
	vec_free(&p.maps);
	vec_free(&p.streams);
	vec_free(&p.events);
	vec_free(&p.clocks);
	vec_free(&p.env);
	if (r < 0) {
		rd_meta_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

void rd_meta_free(struct rd_meta *m)
{
	if (!m)
		return;
	rd_arena_free(&m->arena);
	free(m);
}

const struct rd_stream_class *rd_meta_stream(const struct rd_meta *m, uint64_t id)
{
	for (size_t i = 0; i < m->n_streams; i++)
		if (m->streams[i].id == id)
			return &m->streams[i];
	return NULL;
}

const struct rd_event_class *rd_meta_event(const struct rd_stream_class *sc, uint64_t id)
{
	size_t lo = 0, hi = sc->n_events;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sc->events[mid]->id == id)
			return sc->events[mid];
		if (sc->events[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct rd_env *rd_meta_env(const struct rd_meta *m, const char *key)
{
	for (size_t i = m->n_env; i-- > 0;)
		if (!strcmp(m->env[i].key, key))
			return &m->env[i];
	return NULL;
}

/* ---- packetized metadata --------------------------------------------------- */

#define MD_MAGIC   0x75D11D57u
#define MD_HEADER  37u

static uint32_t load32(const uint8_t *b, int be)
{
	return be ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
		  : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
}

int rd_meta_text(const uint8_t *data, size_t len, char **ret_text, size_t *ret_len,
		 char *err, size_t errlen)
{
	int be = -1;
	if (len >= 4 && load32(data, 0) == MD_MAGIC)
		be = 0;
	else if (len >= 4 && load32(data, 1) == MD_MAGIC)
		be = 1;
	char *out = malloc(len + 1);
	size_t n = 0;
	if (!out) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (be < 0) {
		if (len)
			memcpy(out, data, len);
		n = len;
	} else {
		size_t off = 0;
		while (off < len) {
			if (len - off < MD_HEADER || load32(data + off, be) != MD_MAGIC) {
				snprintf(err, errlen, "packetized metadata: bad packet header at offset %zu", off);
				free(out);
				return -EINVAL;
			}
			uint32_t content = load32(data + off + 24, be);
			uint32_t packet = load32(data + off + 28, be);
			const uint8_t *h = data + off;
			if (content % 8 || packet % 8 || content > packet || content / 8 < MD_HEADER ||
			    packet / 8 > len - off || h[32] || h[33] || h[34]) {
				snprintf(err, errlen,
					 "packetized metadata: bad packet at offset %zu (size, compression or encryption)",
					 off);
				free(out);
				return -EINVAL;
			}
			memcpy(out + n, h + MD_HEADER, content / 8 - MD_HEADER);
			n += content / 8 - MD_HEADER;
			off += packet / 8;
		}
	}
	if (memchr(out, '\0', n)) {
		/* Text ends at the first NUL (padding of the last packet). */
		n = strlen(out);
	}
	out[n] = '\0';
	*ret_text = out;
	*ret_len = n;
	return 0;
}
