/*
 * packet.h - encode CTF packets of a ringtrace trace in either byte order.
 *
 * The recorder does not use this: it copies native sub-buffers as they are.
 * This encoder is for tests/tools/ctf_gen and the tests, which must produce
 * traces in the other byte order (and, to exercise the reader, with natural
 * alignment) exactly as docs/design.md section 3 lays them out:
 *
 *   packet header + context   84 bytes (magic .. cpu_id)
 *   event header              compact: one 32-bit word, id:5 + ts27:27
 *                             (LE: id | ts27 << 5; BE: id << 27 | ts27)
 *                             extended: id 31 in the first 5 bits, then
 *                             u32 id and u64 timestamp
 *   payload                   fields of the event's signature
 *
 * With `natural` set, every integer and float is aligned to its size,
 * counted from the packet start, matching the metadata that
 * ctf_metadata_build() writes with natural_align.
 *
 * All writes are bounded by the buffer; an overflow sets a sticky -ENOSPC.
 */
#ifndef RINGTRACE_TESTS_PACKET_H
#define RINGTRACE_TESTS_PACKET_H

#include <stddef.h>
#include <stdint.h>

#include "common/packet_layout.h"
#include "common/sig.h"

#define CTF_PACKET_HEADER_SIZE ((unsigned)PKT_HDR_LEN)
#define CTF_MAGIC              CTF_PACKET_MAGIC
#define CTF_EV_ID_EXTENDED     31u
#define CTF_COMPACT_TS_BITS    27u

struct ctf_packet_info {
	uint8_t uuid[16];
	uint32_t stream_id;
	uint64_t stream_instance_id;
	uint64_t ts_begin;
	uint64_t ts_end;
	uint64_t content_size;       /* bits */
	uint64_t packet_size;        /* bits */
	uint64_t seq;                /* packet_seq_num */
	uint64_t discarded;          /* events_discarded, running total */
	uint32_t cpu_id;
	uint32_t magic;              /* 0: CTF_MAGIC */
};

struct ctf_enc {
	uint8_t *buf;                /* the packet; offsets count from buf[0] */
	size_t cap;
	size_t off;                  /* bytes written */
	int be;
	int natural;
	int err;                     /* 0 or -ENOSPC, sticky */
};

void ctf_enc_init(struct ctf_enc *e, void *buf, size_t cap, int be, int natural);

/* Store an integer of 1, 2, 4 or 8 bytes at p in the chosen byte order. */
void ctf_store(uint8_t *p, uint64_t v, unsigned bytes, int be);

/* Write the 84-byte header + context at offset 0; off becomes 84. */
int ctf_enc_packet_header(struct ctf_enc *e, const struct ctf_packet_info *p);

/*
 * Close the packet: append `padding` zero bytes, then store content_size
 * (bits before the padding), packet_size and timestamp_end in the header.
 * Returns the packet length in bytes, or a negative errno.
 */
long ctf_enc_packet_close(struct ctf_enc *e, uint64_t ts_end, size_t padding);

/* Whether an event at `ts` after one at `prev_ts` needs the extended header. */
int ctf_needs_extended(uint32_t id, uint64_t prev_ts, uint64_t ts);

/*
 * Append one event: header (extended if `ext` or id >= 31) and the payload
 * of `n` fields with values `v`. On failure (-ENOSPC, or -EINVAL for a
 * value that does not fit its field) nothing is appended and `off` is
 * unchanged, but a -ENOSPC stays in e->err.
 */
int ctf_enc_event(struct ctf_enc *e, uint32_t id, uint64_t ts, int ext,
		  const struct sig_field *f, size_t n, const struct sig_value *v);

#endif /* RINGTRACE_TESTS_PACKET_H */
