/*
 * buf.c - growable text buffer (see buf.h). Used by the metadata generator
 * and the dump formatter, one buffer per caller, never shared.
 */
#include "util/buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctf_buf_init(struct ctf_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->err = 0;
}

void ctf_buf_free(struct ctf_buf *b)
{
	if (!b)
		return;
	free(b->data);
	ctf_buf_init(b);
}

void ctf_buf_reset(struct ctf_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

/* Room for n more bytes plus the NUL. */
static int reserve(struct ctf_buf *b, size_t n)
{
	if (b->err)
		return b->err;
	if (n > ((size_t)-1) / 2 - b->len) {
		b->err = -ENOMEM;
		return b->err;
	}
	size_t need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	char *d = realloc(b->data, cap);
	if (!d) {
		b->err = -ENOMEM;
		return b->err;
	}
	b->data = d;
	b->cap = cap;
	return 0;
}

void ctf_buf_add_slow(struct ctf_buf *b, const void *p, size_t n)
{
	if (reserve(b, n) < 0)
		return;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void ctf_buf_vprintf(struct ctf_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	char small[256];

	va_copy(aq, ap);
	int n = vsnprintf(small, sizeof(small), fmt, aq);
	va_end(aq);
	if (n < 0) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		ctf_buf_add(b, small, (size_t)n);
		return;
	}
	if (reserve(b, (size_t)n) < 0)
		return;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void ctf_buf_printf(struct ctf_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ctf_buf_vprintf(b, fmt, ap);
	va_end(ap);
}
