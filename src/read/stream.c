/*
 * stream.c - packet and event walking of one stream file (stream.h).
 *
 * Used by reader.c, one cursor per file, from one thread. Every size and
 * offset read from the file is checked against the file size before use:
 * packet_size and content_size must be whole bytes, content <= packet,
 * both at least as large as the headers, the packet within the file. Each
 * packet and each event consumes at least one byte, so the walk ends.
 */
#include "read/stream.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/packet_layout.h"

#define FIRST_READ 4096u

__attribute__((format(printf, 2, 3)))
static int sfail(struct rd_stream *s, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(s->err, sizeof(s->err), "%s: packet at offset %llu: ", s->name,
			 (unsigned long long)s->pkt_off);
	if (n < 0 || (size_t)n >= sizeof(s->err))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(s->err + n, sizeof(s->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* A message without the prefix (sfail_dec() adds it). */
__attribute__((format(printf, 2, 3)))
static int raw_fail(struct rd_stream *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* Report a decoder error (its message is in s->err), prefixed with `what`. */
static int sfail_dec(struct rd_stream *s, int r, const char *what)
{
	char msg[sizeof(s->err)];
	snprintf(msg, sizeof(msg), "%s", r == -E2BIG ? "too many fields" : s->err);
	return sfail(s, "%s%s", what, msg);
}

/* Stream clock update, CTF 1.8 section 8: an N-bit clock field gives the
 * low N bits of the clock; if they went down, the clock wrapped once. */
static void on_int(void *ctx, struct rd_decoder *d, const struct rd_type *t, const char *name,
		   uint64_t v)
{
	struct rd_stream *s = ctx;
	if (t->clock >= 0 && s->sc && t->clock == s->sc->clock &&
	    !(d->scope == RD_SCOPE_PACKET_CONTEXT && name && !strcmp(name, "timestamp_end"))) {
		if (t->size >= 64) {
			s->clock = v;
		} else {
			uint64_t mask = (UINT64_C(1) << t->size) - 1;
			uint64_t n = (s->clock & ~mask) | (v & mask);
			if ((v & mask) < (s->clock & mask))
				n += mask + 1;
			s->clock = n;
		}
	}
	/* Seen even if the header is cut short: a random file says "bad magic". */
	if (d->scope == RD_SCOPE_PACKET_HEADER && d->depth == 1 && name && !strcmp(name, "magic") &&
	    v != CTF_PACKET_MAGIC) {
		s->bad_magic = 1;
		s->magic = v;
	}
	if (d->scope == RD_SCOPE_EVENT_HEADER && name && !strcmp(name, "id") && !t->is_signed) {
		s->ev_id = v;
		s->has_id = 1;
	}
}

void rd_stream_init(struct rd_stream *s, const struct rd_meta *m, unsigned index,
		    const char *name, struct rd_src src)
{
	memset(s, 0, sizeof(*s));
	s->m = m;
	s->index = index;
	s->name = name;
	s->src = src;
	rd_vpool_init(&s->pkt_pool, RD_HDR_VALUES);
	rd_vpool_init(&s->hdr_pool, RD_HDR_VALUES);
	s->dec.trace_be = m->big_endian;
	const struct rd_env *att = rd_meta_env(m, "ringtrace_attached");
	s->attached = att && !att->str && att->num == 1;
	s->dec.on_int = on_int;
	s->dec.ctx = s;
	s->cpu = index;
}

void rd_stream_fini(struct rd_stream *s)
{
	if (!s)
		return;
	free(s->pkt);
	s->pkt = NULL;
	rd_vpool_free(&s->pkt_pool);
	rd_vpool_free(&s->hdr_pool);
	if (s->src.fd >= 0)
		close(s->src.fd);
	s->src.fd = -1;
}

/* Bytes [off, off + n) of the file into s->pkt. */
static int read_at(struct rd_stream *s, uint64_t off, size_t n)
{
	if (n > s->pkt_cap) {
		size_t cap = s->pkt_cap ? s->pkt_cap : FIRST_READ;
		while (cap < n)
			cap *= 2;
		uint8_t *b = realloc(s->pkt, cap);
		if (!b)
			return sfail(s, "out of memory for a %zu-byte packet", n);
		s->pkt = b;
		s->pkt_cap = cap;
	}
	if (s->src.fd < 0) {
		memcpy(s->pkt, s->src.mem + off, n);
		return 0;
	}
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(s->src.fd, s->pkt + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sfail(s, "read error: %s", strerror(errno));
		if (r == 0)
			return sfail(s, "file shrank while reading");
		done += (size_t)r;
	}
	return 0;
}

static const struct rd_value *member(const struct rd_value *v, const char *name)
{
	const struct rd_value *m = rd_value_member(v, name);
	return m && m->type && (m->type->kind == RD_INT || m->type->kind == RD_ENUM) ? m : NULL;
}

/* Decode packet header and context from s->pkt (bytes `avail`, decodable `end` bits). */
static int decode_packet_headers(struct rd_stream *s, uint64_t end, uint64_t avail)
{
	const struct rd_value *h, *c;
	struct rd_decoder *d = &s->dec;
	int r;

	rd_vpool_reset(&s->pkt_pool);
	rd_vpool_reset(&s->hdr_pool);
	memset(d->scopes, 0, sizeof(d->scopes));
	s->bad_magic = 0;
	d->buf = s->pkt;
	d->pos = 0;
	d->end = end;
	d->avail = avail;
	d->pool = &s->pkt_pool;
	d->err = s->err;
	d->errlen = sizeof(s->err);
	s->sc = NULL;

	r = rd_decode_scope(d, RD_SCOPE_PACKET_HEADER, s->m->packet_header, &h);
	if (s->bad_magic) {
		d->short_read = 0;
		return raw_fail(s, "bad magic number 0x%08llx (not a CTF stream)",
				(unsigned long long)s->magic);
	}
	if (r < 0)
		return r;
	const struct rd_value *v;
	v = member(h, "stream_id");
	if (v) {
		s->sc = rd_meta_stream(s->m, v->u);
		if (!s->sc)
			return raw_fail(s, "unknown stream class %llu", (unsigned long long)v->u);
	} else if (s->m->n_streams == 1) {
		s->sc = &s->m->streams[0];
	} else {
		return raw_fail(s, "the metadata declares no stream class");
	}
	return rd_decode_scope(d, RD_SCOPE_PACKET_CONTEXT, s->sc->packet_context, &c);
}

static void queue_loss(struct rd_stream *s, int kind, uint64_t count, int has_begin,
		       uint64_t begin, uint64_t end)
{
	if (s->n_losses < sizeof(s->losses) / sizeof(s->losses[0])) {
		struct rd_loss *l = &s->losses[s->n_losses++];
		l->kind = kind;
		l->count = count;
		l->has_begin = has_begin;
		l->begin = begin;
		l->end = end;
	}
}

/* Open the packet at s->next_off: 1, 0 at end of file, <0 on error. */
static int open_packet(struct rd_stream *s)
{
	uint64_t remaining = s->src.size - s->next_off;
	uint64_t have;
	uint64_t clock0 = s->clock;
	int r;

	if (s->next_off >= s->src.size)
		return 0;
	s->pkt_off = s->next_off;
	have = remaining < FIRST_READ ? remaining : FIRST_READ;
	for (;;) {
		if ((r = read_at(s, s->pkt_off, (size_t)have)) < 0)
			return r;
		s->clock = clock0;
		r = decode_packet_headers(s, have * 8, have * 8);
		if (r == 0)
			break;
		if (r == -E2BIG || !s->dec.short_read)
			return sfail_dec(s, r, "");
		if (have == remaining)
			return sfail(s, "truncated packet: the file ends inside the packet header "
				     "(%llu bytes left)", (unsigned long long)remaining);
		if (have >= RD_PACKET_MAX)
			return sfail(s, "packet header larger than %u bytes", RD_PACKET_MAX);
		have = have * 4 < remaining ? have * 4 : remaining;
		if (have > RD_PACKET_MAX)
			have = RD_PACKET_MAX;
	}

	const struct rd_value *h = s->dec.scopes[RD_SCOPE_PACKET_HEADER];
	const struct rd_value *c = s->dec.scopes[RD_SCOPE_PACKET_CONTEXT];
	uint64_t hdr_bits = s->dec.pos;
	const struct rd_value *v;
	uint64_t pkt_bits, content_bits;

	if ((v = member(c, "packet_size"))) {
		pkt_bits = v->u;
		if (pkt_bits % 8)
			return sfail(s, "packet_size %llu bits is not a whole number of bytes",
				     (unsigned long long)pkt_bits);
		if (pkt_bits / 8 > remaining)
			return sfail(s, "truncated packet: packet_size is %llu bytes but the file has "
				     "%llu bytes left", (unsigned long long)(pkt_bits / 8),
				     (unsigned long long)remaining);
	} else {
		pkt_bits = remaining * 8;
	}
	if ((v = member(c, "content_size"))) {
		content_bits = v->u;
		if (content_bits > pkt_bits)
			return sfail(s, "content_size (%llu bits) is greater than packet_size (%llu bits)",
				     (unsigned long long)content_bits, (unsigned long long)pkt_bits);
	} else {
		content_bits = pkt_bits;
	}
	if (content_bits < hdr_bits)
		return sfail(s, "content_size (%llu bits) is smaller than the packet header (%llu bits)",
			     (unsigned long long)content_bits, (unsigned long long)hdr_bits);
	if (pkt_bits == 0)
		return sfail(s, "packet of size 0");
	if (pkt_bits / 8 > RD_PACKET_MAX)
		return sfail(s, "packet larger than %u bytes", RD_PACKET_MAX);

	/* Whole packet in memory, then the headers again from it (the first
	 * pass may have used a shorter buffer). */
	if ((r = read_at(s, s->pkt_off, (size_t)(pkt_bits / 8))) < 0)
		return r;
	s->clock = clock0;
	r = decode_packet_headers(s, content_bits, pkt_bits);
	if (r < 0)
		return sfail_dec(s, r, "");
	s->pkt_bits = pkt_bits;
	s->content_bits = content_bits;
	s->pos = s->dec.pos;
	s->next_off = s->pkt_off + pkt_bits / 8;
	s->in_packet = 1;

	h = s->dec.scopes[RD_SCOPE_PACKET_HEADER];
	c = s->dec.scopes[RD_SCOPE_PACKET_CONTEXT];
	s->has_begin = s->has_end = s->has_seq = s->has_disc = 0;
	if ((v = member(c, "timestamp_begin"))) {
		s->begin = v->u;
		s->has_begin = 1;
	} else {
		s->begin = s->clock;
	}
	if ((v = member(c, "timestamp_end"))) {
		s->end = v->u;
		s->has_end = 1;
	}
	if ((v = member(c, "packet_seq_num"))) {
		s->seq = v->u;
		s->has_seq = 1;
	}
	if ((v = member(c, "events_discarded"))) {
		s->disc = v->u;
		s->disc_bits = v->type->size;
		s->has_disc = 1;
	}
	if ((v = member(c, "cpu_id")))
		s->cpu = (uint32_t)v->u;
	else if ((v = member(h, "stream_instance_id")))
		s->cpu = (uint32_t)v->u;

	/* Losses, as babeltrace2 reports them: events_discarded is a running
	 * total per stream, compared with the previous packet; a gap in
	 * packet_seq_num means whole packets are missing. */
	uint64_t end_ts = s->has_end ? s->end : s->begin;
	s->n_losses = s->loss_next = 0;
	if (s->npackets == 0 && s->attached) {
		/* Recorded from a running program (record -p): what happened
		 * before the recording began is not a loss of this trace. */
	} else if (s->npackets == 0) {
		if (s->has_seq && s->seq > 0) {
			queue_loss(s, RD_LOSS_PACKETS, s->seq, 0, 0, s->begin);
			s->tid = 0;
		}
		if (s->has_disc && s->disc > 0)
			queue_loss(s, RD_LOSS_EVENTS, s->disc, 1, s->begin, end_ts);
	} else {
		uint64_t from = s->prev_has_end ? s->prev_end : s->begin;
		if (s->has_seq && s->seq > s->prev_seq + 1) {
			queue_loss(s, RD_LOSS_PACKETS, s->seq - s->prev_seq - 1, 1, from, s->begin);
			s->tid = 0;
		}
		if (s->has_disc) {
			uint64_t mask = s->disc_bits >= 64 ? ~UINT64_C(0)
							   : (UINT64_C(1) << s->disc_bits) - 1;
			uint64_t diff = (s->disc - s->prev_disc) & mask;
			if (diff)
				queue_loss(s, RD_LOSS_EVENTS, diff, 1, from, end_ts);
		}
	}
	s->prev_end = end_ts;
	s->prev_has_end = s->has_end;
	s->prev_seq = s->seq;
	s->prev_disc = s->has_disc ? s->disc : 0;
	s->npackets++;
	return 1;
}

int rd_stream_advance(struct rd_stream *s)
{
	struct rd_decoder *d = &s->dec;
	int r;

	s->pending = RD_PENDING_NONE;
	for (;;) {
		if (s->loss_next < s->n_losses) {
			s->loss = s->losses[s->loss_next++];
			s->ts = s->loss.has_begin ? s->loss.begin : s->loss.end;
			s->pending = RD_PENDING_LOSS;
			return 1;
		}
		if (!s->in_packet) {
			r = open_packet(s);
			if (r <= 0)
				return r;
			continue;
		}
		if (s->pos >= s->content_bits) {
			s->in_packet = 0;
			continue;
		}
		break;
	}

	const struct rd_value *v;
	rd_vpool_reset(&s->hdr_pool);
	d->buf = s->pkt;
	d->pos = s->pos;
	d->end = s->content_bits;
	d->avail = s->pkt_bits;
	d->pool = &s->hdr_pool;
	s->ev_start = s->pos;
	s->has_id = 0;
	for (int k = RD_SCOPE_EVENT_HEADER; k < RD_SCOPE_COUNT; k++)
		d->scopes[k] = NULL;
	r = rd_decode_scope(d, RD_SCOPE_EVENT_HEADER, s->sc->event_header, &v);
	if (r == 0)
		r = rd_decode_scope(d, RD_SCOPE_EVENT_COMMON_CONTEXT, s->sc->event_context, &v);
	if (r < 0)
		goto bad;
	if (s->has_id) {
		s->ec = rd_meta_event(s->sc, s->ev_id);
		if (!s->ec)
			return sfail(s, "event at byte %llu: unknown event id %llu",
				     (unsigned long long)(s->ev_start / 8), (unsigned long long)s->ev_id);
	} else if (s->sc->n_events == 1) {
		s->ec = s->sc->events[0];
	} else {
		return sfail(s, "event at byte %llu: no event id in the event header",
			     (unsigned long long)(s->ev_start / 8));
	}
	r = rd_decode_scope(d, RD_SCOPE_EVENT_CONTEXT, s->ec->context, &v);
	if (r < 0)
		goto bad;
	s->ts = s->clock;
	s->pending = RD_PENDING_EVENT;
	return 1;
bad:
	{
		char what[64];
		snprintf(what, sizeof(what), "event at byte %llu: ",
			 (unsigned long long)(s->ev_start / 8));
		return sfail_dec(s, r, what);
	}
}

int rd_stream_payload(struct rd_stream *s, struct rd_vpool *pool, const struct rd_value **ret)
{
	struct rd_decoder *d = &s->dec;
	d->pool = pool;
	int r = rd_decode_scope(d, RD_SCOPE_EVENT_FIELDS, s->ec->fields, ret);
	d->pool = &s->hdr_pool;
	if (r < 0) {
		char what[300];
		snprintf(what, sizeof(what), "event '%.200s' at byte %llu: ", s->ec->name,
			 (unsigned long long)(s->ev_start / 8));
		return sfail_dec(s, r, what);
	}
	if (d->pos == s->ev_start)
		return sfail(s, "event '%s' at byte %llu has a size of 0", s->ec->name,
			     (unsigned long long)(s->ev_start / 8));
	s->pos = d->pos;
	return 0;
}
