/*
 * buf.h - a growable text buffer (tool side): the CTF metadata writer,
 * the reader's formatting helpers, the reports.
 *
 * Errors are sticky: after an allocation failure every append is a no-op
 * and `err` holds -ENOMEM, so a caller checks once at the end.
 */
#ifndef RINGTRACE_UTIL_BUF_H
#define RINGTRACE_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

struct ctf_buf {
	char *data;                  /* NUL-terminated when len > 0 */
	size_t len;
	size_t cap;
	int err;                     /* 0 or -ENOMEM */
};

void ctf_buf_init(struct ctf_buf *b);
void ctf_buf_free(struct ctf_buf *b);
void ctf_buf_reset(struct ctf_buf *b);
/* Slow path of the appends below: grow, then append. */
void ctf_buf_add_slow(struct ctf_buf *b, const void *p, size_t n);

/* Appends are inline: `ringtrace dump` makes tens of them per event. */
static inline void ctf_buf_add(struct ctf_buf *b, const void *p, size_t n)
{
	if (b->len + n < b->cap && !b->err) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
		b->data[b->len] = '\0';
		return;
	}
	ctf_buf_add_slow(b, p, n);
}

static inline void ctf_buf_puts(struct ctf_buf *b, const char *s)
{
	ctf_buf_add(b, s, strlen(s));
}

static inline void ctf_buf_putc(struct ctf_buf *b, char c)
{
	ctf_buf_add(b, &c, 1);
}

void ctf_buf_printf(struct ctf_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ctf_buf_vprintf(struct ctf_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

#endif /* RINGTRACE_UTIL_BUF_H */
