/*
 * sig.h - event signature strings (docs/design.md section 3).
 *
 * A signature such as "u32 id;string path;u8 tag[4];u16 vals[];ptr p;f64 r"
 * (or "x64 ips[u8]": a sequence with a one-byte count, used for stacks)
 * describes the payload of one event. The tracepoint macros produce it, the
 * library stores it in the registry, the recorder parses it to build the
 * metadata and to walk the events of a sub-buffer, and the tests use it to
 * encode and check payloads.
 *
 * The parser is strict: it is the gate between what a traced program
 * registers and what ends up in the metadata, so anything that the metadata
 * generator could not express exactly is refused with -EINVAL.
 * sig_record_size() reads untrusted bytes (a sub-buffer of a shared-memory
 * region that the traced program may have scribbled over) and is bounded by
 * `avail` in every case.
 *
 * No allocation, no output; safe to call from any thread.
 */
#ifndef RINGTRACE_SIG_H
#define RINGTRACE_SIG_H

#include <stddef.h>
#include <stdint.h>

enum sig_kind {
	SIG_INT = 0,    /* sN / uN: decimal */
	SIG_HEX,        /* xN: unsigned, shown in hexadecimal */
	SIG_PTR,        /* ptr: 64-bit unsigned, shown in hexadecimal */
	SIG_FLOAT,      /* f32 / f64 */
	SIG_STRING,     /* NUL-terminated */
};

enum sig_array {
	SIG_SCALAR = 0,
	SIG_FIXED,      /* T name[N] */
	SIG_SEQ,        /* T name[]: u32 count, then count elements;
			 * T name[u8]: u8 count (count_size 1) */
};

#define SIG_NAME_MAX   64            /* bytes, NUL included */
#define SIG_FIELDS_MAX 64            /* fields per event */
#define SIG_ARRAY_MAX  65536         /* elements of a fixed array */
#define SIG_TEXT_MAX   4096          /* bytes of a signature string */

struct sig_field {
	uint8_t kind;                /* enum sig_kind */
	uint8_t bits;                /* 8, 16, 32 or 64; 0 for strings */
	uint8_t is_signed;
	uint8_t array;               /* enum sig_array */
	uint8_t count_size;          /* SIG_SEQ: bytes of the count, 4 or 1 */
	uint8_t pad[3];
	uint32_t len;                /* element count of a SIG_FIXED array */
	char name[SIG_NAME_MAX];
};

/*
 * One value of a field, as the packet encoder takes it and the tests compare
 * it. Integers are held as their bits (signed ones sign-extended to 64 bits),
 * floats in `f` (an f32 is rounded to float when encoded), strings in `str`,
 * arrays and sequences as `count` elements in `elems` (integer bits).
 */
struct sig_value {
	uint64_t u;
	double f;
	const char *str;
	uint32_t count;
	const uint64_t *elems;
};

/*
 * Parse `text` into at most `max` fields. An empty string is an event with
 * no field. Returns 0 and sets *ret_n, or -EINVAL (malformed, unknown type,
 * bad or duplicate name, array size 0 or above SIG_ARRAY_MAX, more than
 * `max` fields), -E2BIG if `text` is longer than SIG_TEXT_MAX.
 * `ret_fields` may be written on failure, *ret_n is not.
 */
int sig_parse(const char *text, struct sig_field *ret_fields, size_t max, size_t *ret_n);

/* Bytes of one element (or of the scalar); 0 for strings. */
size_t sig_elem_size(const struct sig_field *f);

/*
 * Byte size of the payload at `payload` described by `fields`, reading at
 * most `avail` bytes: strings are scanned for their NUL, sequences read their
 * u32 count (native byte order). Returns 0 and sets *ret_size, or -EBADMSG
 * if the payload does not fit in `avail`.
 */
int sig_record_size(const struct sig_field *fields, size_t n, const void *payload,
		    size_t avail, size_t *ret_size);

#endif /* RINGTRACE_SIG_H */
