/*
 * tsdl.h - the trace model built from CTF 1.8 TSDL metadata.
 *
 * rd_meta_parse() is a tokenizer plus a recursive-descent parser for the
 * TSDL that ringtrace writes and the usual variations of it (any
 * whitespace and comments, any order of attributes and blocks, typealias
 * and typedef, named struct/variant/enum, integer/floating_point/string/
 * struct/variant/enum types, arrays and sequences, any power-of-two
 * alignment, both byte orders, several stream classes and clocks). Anything
 * else is refused with a message naming the line. Input is untrusted: sizes,
 * nesting depth and memory are capped, and no input can make it crash or
 * loop. Each type records the fewest bits its values take (min_bits), which
 * the decoder uses to bound its work by the input.
 *
 * The model is read-only once built and is shared by every stream cursor.
 */
#ifndef RINGTRACE_READ_TSDL_H
#define RINGTRACE_READ_TSDL_H

#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"

#define RD_META_MAX      (16u << 20)   /* bytes of metadata text */
#define RD_STRING_MAX    (1u << 20)    /* bytes of one string literal, decoded */
#define RD_META_MEM      (64u << 20)   /* bytes of model */
#define RD_DEPTH_MAX     32            /* syntactic nesting of type specifiers */
#define RD_TYPE_DEPTH    64            /* depth of a type tree, aliases included */

enum rd_type_kind {
	RD_INT = 1,
	RD_ENUM,
	RD_FLOAT,
	RD_STRING,
	RD_STRUCT,
	RD_VARIANT,
	RD_ARRAY,
	RD_SEQ,
};

enum rd_byte_order { RD_BO_NATIVE = 0, RD_BO_LE, RD_BO_BE };

struct rd_type;

struct rd_member {
	const char *name;
	const struct rd_type *type;
};

struct rd_enum_map {
	const char *label;
	uint64_t lo, hi;             /* as int64_t when the container is signed */
};

struct rd_type {
	enum rd_type_kind kind;
	uint32_t align;              /* bits, effective */
	uint32_t line;               /* where it was declared */
	uint32_t depth;              /* 1 for a leaf, else 1 + the deepest child */
	/*
	 * The fewest bits a value of this type takes, alignment padding aside
	 * (saturates at UINT64_MAX): its size for an integer, enum or float, 8
	 * for a string (the NUL), the sum for a struct, the smallest option
	 * for a variant, length x element for an array, 0 for a sequence. 0
	 * means a value may consume no input, so the decoder charges its work
	 * to the packet's budget (decode.h); above 0 it bounds the length of
	 * an array or sequence by the bits left. Types built by hand may leave
	 * it 0 (the safe value).
	 */
	uint64_t min_bits;
	/* RD_INT, RD_ENUM (its container), RD_FLOAT */
	uint32_t size;               /* bits */
	uint8_t is_signed;
	uint8_t byte_order;          /* enum rd_byte_order */
	uint8_t base;                /* 2, 8, 10, 16 */
	uint8_t encoded;             /* encoding != none */
	int32_t clock;               /* index in rd_meta.clocks, or -1 */
	const char *map_name;        /* clock name while parsing */
	/* RD_ENUM */
	const struct rd_enum_map *maps;
	uint32_t n_maps;
	/* RD_STRUCT, RD_VARIANT */
	const struct rd_member *members;
	uint32_t n_members;
	/* RD_VARIANT: tag path; RD_SEQ: length path */
	const char *ref;
	/* RD_ARRAY, RD_SEQ */
	const struct rd_type *elem;
	uint64_t length;             /* RD_ARRAY */
};

struct rd_clock {
	const char *name;
	const char *description;
	uint64_t freq;
	int64_t offset_s;            /* normalised: offset < freq */
	uint64_t offset;
	int absolute;
	int has_uuid;
	uint8_t uuid[16];
};

struct rd_env {
	const char *key;
	const char *str;             /* NULL for an integer */
	int64_t num;
};

struct rd_event_class {
	uint64_t id;
	const char *name;
	uint64_t stream_id;
	const struct rd_type *context;   /* struct or NULL */
	const struct rd_type *fields;    /* struct or NULL */
	uint32_t line;
};

struct rd_stream_class {
	uint64_t id;
	const struct rd_type *packet_context;
	const struct rd_type *event_header;
	const struct rd_type *event_context;
	int32_t clock;               /* the clock its timestamps map to, or -1 */
	struct rd_event_class **events;  /* sorted by id */
	size_t n_events;
};

struct rd_meta {
	struct rd_arena arena;
	int big_endian;
	int has_uuid;
	uint8_t uuid[16];
	const struct rd_type *packet_header;
	struct rd_clock *clocks;
	size_t n_clocks;
	struct rd_env *env;
	size_t n_env;
	struct rd_stream_class *streams;
	size_t n_streams;
	struct rd_event_class *events;
	size_t n_events;
};

/*
 * Parse `len` bytes of TSDL text (which must begin with "/\* CTF 1.8").
 * Returns 0 and a model in *ret, or -EINVAL (syntax or semantic error, the
 * message with its line number in `err`), -E2BIG (too large), -ENOMEM.
 */
int rd_meta_parse(const char *text, size_t len, struct rd_meta **ret, char *err, size_t errlen);

/* The value of a hexadecimal digit, or -1. */
int rd_hexval(int c);
void rd_meta_free(struct rd_meta *m);

/*
 * Turn the content of a `metadata` file into TSDL text: plain text is
 * copied, packetized metadata (magic 0x75D11D57, either byte order) is
 * unpacked. Returns 0 and a malloc'd NUL-terminated text, or -EINVAL with a
 * message.
 */
int rd_meta_text(const uint8_t *data, size_t len, char **ret_text, size_t *ret_len,
		 char *err, size_t errlen);

const struct rd_stream_class *rd_meta_stream(const struct rd_meta *m, uint64_t id);
const struct rd_event_class *rd_meta_event(const struct rd_stream_class *sc, uint64_t id);
const struct rd_env *rd_meta_env(const struct rd_meta *m, const char *key);

#endif /* RINGTRACE_READ_TSDL_H */
