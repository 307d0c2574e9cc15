/*
 * decode.h - decode CTF fields of a packet buffer into values.
 *
 * A decoder walks one packet (bytes in memory, offsets in bits counted
 * from the packet start, as CTF aligns from there) and turns a type of the
 * model (tsdl.h) into a tree of rd_value. Every read is checked against
 * `end`; sequence lengths and variant tags are looked up by name among the
 * values decoded so far. Values are allocated from a capped pool, so a
 * hostile length cannot exhaust memory.
 *
 * Nor can it exhaust time. Work that consumes input is paid by it: a value
 * whose type takes at least one bit (rd_type.min_bits) consumes it, and an
 * array or sequence of such elements is refused at once when its length
 * times the element's min_bits exceeds the bits left. The rest is charged
 * to a budget of the packet: values that may take no bits (empty structs,
 * sequences, variants with an empty option, and arrays of these: each
 * element counted before the elements are allocated) and the names
 * compared while resolving a sequence length or a variant tag. The budget,
 * reset by each packet header, is RD_WORK_BASE + RD_WORK_PER_BIT per bit of
 * the packet, far above what real traces use (a few units per event), so
 * that no metadata can make decoding a trace cost more than linear time in
 * its size.
 */
#ifndef RINGTRACE_READ_DECODE_H
#define RINGTRACE_READ_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "read/tsdl.h"
#include "read/vpool.h"
#include "util/arena.h"

struct rd_value {
	const struct rd_type *type;
	const char *name;            /* member or option name; NULL for array elements */
	union {
		uint64_t u;          /* RD_INT, RD_ENUM: bits, sign-extended if signed */
		double f;            /* RD_FLOAT (an f32 is widened) */
		struct {
			const char *s;   /* RD_STRING: points into the packet buffer */
			size_t len;
		} str;
		struct {
			struct rd_value *v;  /* RD_STRUCT members, RD_ARRAY/RD_SEQ elements,
					      * RD_VARIANT: the selected option (n = 1) */
			uint32_t n;
		} sub;
	};
};

/* Elements of an RD_SEQ value; 0 for NULL or a value of another kind. */
static inline uint32_t rd_seq_len(const struct rd_value *v)
{
	return v && v->type && v->type->kind == RD_SEQ ? v->sub.n : 0;
}

/* The dynamic scopes of CTF, in decoding order. */
enum rd_scope {
	RD_SCOPE_PACKET_HEADER = 0,
	RD_SCOPE_PACKET_CONTEXT,
	RD_SCOPE_EVENT_HEADER,
	RD_SCOPE_EVENT_COMMON_CONTEXT,
	RD_SCOPE_EVENT_CONTEXT,
	RD_SCOPE_EVENT_FIELDS,
	RD_SCOPE_COUNT,
};

#define RD_WORK_BASE     1024u       /* budget of a packet, plus ... */
#define RD_WORK_PER_BIT  32u         /* ... this many units per bit of it */

struct rd_decoder;
typedef void (*rd_int_cb)(void *ctx, struct rd_decoder *d, const struct rd_type *t,
			  const char *name, uint64_t value);

struct rd_decoder {
	const uint8_t *buf;          /* packet start */
	uint64_t pos;                /* bits from buf[0] */
	uint64_t end;                /* bits that may be read */
	uint64_t avail;              /* bits present in buf (>= end) */
	int trace_be;
	int short_read;              /* a read stopped at `end` < the needed bits */
	int scope;                   /* enum rd_scope being decoded */
	struct rd_vpool *pool;
	const struct rd_value *scopes[RD_SCOPE_COUNT];
	rd_int_cb on_int;            /* called for each integer and enum, may be NULL */
	void *ctx;
	struct {
		const struct rd_type *t;
		struct rd_value *v;
		uint32_t done;
	} frames[RD_TYPE_DEPTH + 1];
	unsigned depth;
	uint64_t work;               /* budget used since the last packet header */
	char *err;
	size_t errlen;
};

/*
 * Decode `t` (a struct, or NULL for an absent scope) at d->pos as scope
 * `scope`; on success d->scopes[scope] and *ret point at the value (NULL for
 * an absent scope). Returns 0, -EBADMSG (data does not match, or the
 * packet's work budget is spent: message in d->err; d->short_read set if
 * the data just ended), -E2BIG (too many values). Decoding the packet
 * header scope starts a new packet: the work budget is reset.
 */
int rd_decode_scope(struct rd_decoder *d, int scope, const struct rd_type *t,
		    const struct rd_value **ret);

/* Bits `size` (1..64) at bit `pos` of buf, in the given byte order. */
uint64_t rd_read_bits(const uint8_t *buf, uint64_t pos, unsigned size, int be);

/* The member `name` of a struct value, or NULL. */
const struct rd_value *rd_value_member(const struct rd_value *v, const char *name);

/* Labels of an enum value: the first mapping that contains it, or NULL. */
const char *rd_enum_label(const struct rd_type *t, uint64_t v);

#endif /* RINGTRACE_READ_DECODE_H */
