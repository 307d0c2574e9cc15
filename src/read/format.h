/*
 * format.h - text forms of decoded values, for `ringtrace dump` and the
 * analyses. Appends to a ctf_buf; never prints.
 *
 *   integers   decimal (signed or unsigned), base-16 fields as 0x... (lower
 *              case, masked to the field size), base 8 as 0..., base 2 as 0b...
 *   floats     the shortest text that reads back as the same value (%g
 *              style, so 0.5 or 1e+300, with ".0" added to whole numbers:
 *              2.0); babeltrace2 prints "%g" (6 digits), which is the same
 *              text whenever 6 digits are enough and the value has a fraction
 *   strings    "quoted", C escapes for '"', '\\' and control bytes, invalid
 *              UTF-8 as \xHH
 *   arrays     [a, b, c]; structs {a=1, b=2}; variants their selected
 *              option; enums their label (or the number if none matches);
 *              arrays and sequences of encoded (UTF8/ASCII) bytes are
 *              text, a "quoted" string up to the first NUL, as babeltrace2
 *   names      one leading '_' removed (babeltrace2 does the same), and the
 *              length member of a sequence is not shown
 */
#ifndef RINGTRACE_READ_FORMAT_H
#define RINGTRACE_READ_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "read/decode.h"

/* "S.NNNNNNNNN" (with a leading '-' if negative), as babeltrace2 --clock-seconds. */
void rd_format_time(struct ctf_buf *b, int64_t ns);
void rd_format_double(struct ctf_buf *b, double v, int single);
/* Decimal, zero-padded to at least min_digits. */
void rd_format_uint(struct ctf_buf *b, uint64_t v, unsigned min_digits);
void rd_format_string(struct ctf_buf *b, const char *s, size_t len);
void rd_format_value(struct ctf_buf *b, const struct rd_value *v);
/* " name=value" for each shown member of a struct value (nothing for NULL). */
void rd_format_fields(struct ctf_buf *b, const struct rd_value *fields);
const char *rd_display_name(const char *name);

struct rd_item;
/*
 * One line of `ringtrace dump` and `ringtrace show` (no newline): an event,
 *   comm-tid [cpu] seconds.nanoseconds: provider:event: {context} field=value ...
 * or a loss, "ringtrace: N events lost on cpu C between T0 and T1".
 */
void rd_format_item(struct ctf_buf *b, const struct rd_item *it);

#endif /* RINGTRACE_READ_FORMAT_H */
