/*
 * packet_layout.h - the one definition of the packet header that starts
 * every sub-buffer, and so every CTF packet of a ringtrace trace: the CTF
 * 1.8 packet header (magic, uuid, stream_id, stream_instance_id) and packet
 * context (timestamp_begin .. cpu_id) that the metadata writer describes
 * (src/ctf/metadata.c, docs/design.md section 3).
 *
 * Who uses it: the writer in the traced program (src/ringbuf/rb_write.c)
 * opens and closes packets in place through pkt_open() and pkt_close()
 * below, its only hooks into the record format; the consumer validates
 * them and fixes up cut or salvaged ones (rb_read.c); the recorder reads
 * their sequence number and loss count (src/session/writer.c); the test
 * encoder writes them in either byte order (tests/support/packet.c); the
 * readers check the magic of any CTF trace (src/read/). Every integer is 8-byte aligned
 * within the header except the 32-bit ones, and the header is packed to
 * 84 bytes on disk (the struct's own size is rounded up to 88: use
 * PKT_HDR_LEN, never sizeof). Fields are accessed by offset with memcpy,
 * in the writer's byte order: the struct is a layout, never dereferenced
 * in a buffer.
 */
#ifndef RINGTRACE_PACKET_LAYOUT_H
#define RINGTRACE_PACKET_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ringtrace/ringtrace-abi.h>

/* CTF 1.8: the first 32 bits of every packet (any byte order reads it
 * as this value in the trace's own order). */
#define CTF_PACKET_MAGIC 0xC1FC1FC1u

struct pkt_layout {
	uint32_t magic;              /* CTF_PACKET_MAGIC */
	uint8_t uuid[16];            /* the trace's uuid */
	uint32_t stream_id;          /* 0: one stream class */
	uint64_t stream_instance_id; /* the CPU */
	uint64_t timestamp_begin;
	uint64_t timestamp_end;
	uint64_t content_size;       /* bits, headers included */
	uint64_t packet_size;        /* bits */
	uint64_t packet_seq_num;     /* position / sub-buffer size */
	uint64_t events_discarded;   /* running total of the CPU's losses */
	uint32_t cpu_id;
};

#define PKT_OFF(field) offsetof(struct pkt_layout, field)
#define PKT_HDR_LEN    (PKT_OFF(cpu_id) + sizeof(uint32_t))

/* The offsets the metadata describes with align = 8 byte packing. */
_Static_assert(PKT_OFF(uuid) == 4, "packet layout: uuid");
_Static_assert(PKT_OFF(stream_id) == 20, "packet layout: stream_id");
_Static_assert(PKT_OFF(stream_instance_id) == 24, "packet layout: stream_instance_id");
_Static_assert(PKT_OFF(timestamp_begin) == 32, "packet layout: timestamp_begin");
_Static_assert(PKT_OFF(timestamp_end) == 40, "packet layout: timestamp_end");
_Static_assert(PKT_OFF(content_size) == 48, "packet layout: content_size");
_Static_assert(PKT_OFF(packet_size) == 56, "packet layout: packet_size");
_Static_assert(PKT_OFF(packet_seq_num) == 64, "packet layout: packet_seq_num");
_Static_assert(PKT_OFF(events_discarded) == 72, "packet layout: events_discarded");
_Static_assert(PKT_OFF(cpu_id) == 80, "packet layout: cpu_id");
/* The inline fast path reserves the header by this constant. */
_Static_assert(PKT_HDR_LEN == RINGTRACE__PKT_HDR, "packet layout: header length");

/*
 * The writer's hooks, inline (they run on every sub-buffer switch, inside
 * the traced program). pkt_open() writes the begin fields of the packet at
 * p, pkt_close() its end fields once `used` bytes of it hold records (the
 * rest is padding); both in the writer's byte order. Publication is the
 * caller's: the buffer's commit (release) makes them visible to the
 * consumer together with the bytes it counts.
 */
static inline void pkt_open(char *p, const uint8_t uuid[16], uint32_t cpu, uint64_t seq, uint64_t ts)
{
	uint32_t magic = CTF_PACKET_MAGIC, stream_id = 0;
	uint64_t instance = cpu;
	memcpy(p + PKT_OFF(magic), &magic, 4);
	memcpy(p + PKT_OFF(uuid), uuid, 16);
	memcpy(p + PKT_OFF(stream_id), &stream_id, 4);
	memcpy(p + PKT_OFF(stream_instance_id), &instance, 8);
	memcpy(p + PKT_OFF(timestamp_begin), &ts, 8);
	memcpy(p + PKT_OFF(packet_seq_num), &seq, 8);
	memcpy(p + PKT_OFF(cpu_id), &cpu, 4);
}

static inline void pkt_close(char *p, uint64_t ts, uint64_t used, uint64_t discarded)
{
	uint64_t bits = used * 8;
	memcpy(p + PKT_OFF(timestamp_end), &ts, 8);
	memcpy(p + PKT_OFF(content_size), &bits, 8);
	memcpy(p + PKT_OFF(packet_size), &bits, 8);
	memcpy(p + PKT_OFF(events_discarded), &discarded, 8);
}

#endif
