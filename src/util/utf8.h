/*
 * utf8.h - UTF-8 as the tool's outputs check it: the names and strings of
 * a trace are untrusted bytes, and every output that must be valid UTF-8
 * (JSON, SQLite text, HTML, dump's quoted strings) asks these where a
 * sequence is valid and where one starts. Used by `convert`
 * (src/cli/cmd_convert.c, convert_sqlite.c), the HTML report
 * (src/cli/report_html.c) and the reader's formatter (src/read/format.c).
 * Pure functions; any thread.
 */
#ifndef RINGTRACE_UTIL_UTF8_H
#define RINGTRACE_UTIL_UTF8_H

#include <stddef.h>

/*
 * Bytes of the valid UTF-8 sequence at p (at most n bytes, n >= 1): 1 for
 * ASCII, 2 to 4, or 0 when invalid: a continuation or invalid lead byte,
 * a sequence cut by n, an overlong form, a surrogate (U+D800..U+DFFF) or
 * a code point above U+10FFFF.
 */
size_t utf8_len(const unsigned char *p, size_t n);

/* The greatest k' <= k where s[k'] does not continue a sequence: a cut
 * of s at k' splits no character (s holds at least k + 1 bytes when
 * k > 0). */
size_t utf8_boundary(const char *s, size_t k);

#endif /* RINGTRACE_UTIL_UTF8_H */
