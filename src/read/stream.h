/*
 * stream.h - cursor over one data-stream file of a trace (reader internal).
 *
 * A cursor walks the packets of one file and the events of each packet,
 * keeping the stream clock (rebuilt from compact timestamps as CTF 1.8
 * says) and noticing lost events and packets between packets. It decodes
 * an event's header and contexts ahead (rd_stream_advance) so that the merge
 * knows its time, and its payload only when the merge hands it out
 * (rd_stream_payload), into a pool shared by all cursors.
 *
 * Each packet is read whole into memory (at most RD_PACKET_MAX bytes) with
 * pread, so a file that changes underneath cannot fault the reader.
 */
#ifndef RINGTRACE_READ_STREAM_H
#define RINGTRACE_READ_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "read/decode.h"
#include "read/tsdl.h"

#define RD_PACKET_MAX   (256u << 20)   /* bytes of one packet */
#define RD_HDR_VALUES   (1u << 16)     /* values of headers and contexts */

enum { RD_PENDING_NONE = 0, RD_PENDING_EVENT, RD_PENDING_LOSS };
enum { RD_LOSS_EVENTS = 1, RD_LOSS_PACKETS };

struct rd_loss {
	int kind;                    /* RD_LOSS_* */
	uint64_t count;
	int has_begin;               /* 0: "before end" (first packet of the stream) */
	uint64_t begin;              /* clock values */
	uint64_t end;
};

struct rd_src {
	int fd;                      /* -1 for memory */
	const uint8_t *mem;
	uint64_t size;
};

struct rd_stream {
	const struct rd_meta *m;
	const char *name;
	unsigned index;
	struct rd_src src;

	uint64_t next_off;           /* file offset of the next packet */
	uint64_t pkt_off;            /* file offset of the current packet */
	uint8_t *pkt;
	size_t pkt_cap;
	uint64_t pkt_bits;
	uint64_t content_bits;
	uint64_t pos;                /* bit offset of the next event in the packet */
	int in_packet;
	unsigned long npackets;
	int attached;                /* env ringtrace_attached = 1 */

	struct rd_decoder dec;
	struct rd_vpool pkt_pool;    /* packet header and context */
	struct rd_vpool hdr_pool;    /* event header and contexts */
	const struct rd_stream_class *sc;
	uint64_t clock;              /* current clock value */

	/* current packet */
	uint64_t begin, end, seq, disc;
	unsigned disc_bits;
	int has_begin, has_end, has_seq, has_disc;
	uint32_t cpu;
	/* previous packet */
	uint64_t prev_end, prev_seq, prev_disc;
	int prev_has_end;

	struct rd_loss losses[3];
	unsigned n_losses, loss_next;

	int pending;                 /* RD_PENDING_* */
	struct rd_loss loss;         /* RD_PENDING_LOSS */
	const struct rd_event_class *ec;  /* RD_PENDING_EVENT */
	uint64_t ts;                 /* the pending item's time (clock value) */
	uint64_t ev_start;           /* bit offset of the pending event */
	uint64_t ev_id;
	int has_id;

	int bad_magic;               /* the packet header's magic is wrong */
	uint64_t magic;
	uint32_t tid;                /* current thread (0: unknown), kept by the reader */
	char err[512];
};

void rd_stream_init(struct rd_stream *s, const struct rd_meta *m, unsigned index,
		    const char *name, struct rd_src src);
void rd_stream_fini(struct rd_stream *s);

/* Next item into s->pending: 1, 0 at the end of the file, <0 with s->err. */
int rd_stream_advance(struct rd_stream *s);

/* Decode the pending event's payload into `pool`; 0 or <0 with s->err. */
int rd_stream_payload(struct rd_stream *s, struct rd_vpool *pool, const struct rd_value **ret);

#endif /* RINGTRACE_READ_STREAM_H */
