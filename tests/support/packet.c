/*
 * packet.c - CTF packet encoder for tests and the test writer (packet.h).
 *
 * One encoder per packet buffer, single-threaded. Not tuned for speed:
 * ctf_gen writes a few hundred thousand events at most.
 */
#include "support/packet.h"

#include <errno.h>
#include <string.h>

void ctf_enc_init(struct ctf_enc *e, void *buf, size_t cap, int be, int natural)
{
	e->buf = buf;
	e->cap = cap;
	e->off = 0;
	e->be = be;
	e->natural = natural;
	e->err = 0;
}

void ctf_store(uint8_t *p, uint64_t v, unsigned bytes, int be)
{
	for (unsigned i = 0; i < bytes; i++) {
		unsigned shift = be ? 8 * (bytes - 1 - i) : 8 * i;
		p[i] = (uint8_t)(v >> shift);
	}
}

/* Pad with zeros up to a multiple of `bytes` (natural mode only). */
static int enc_align(struct ctf_enc *e, unsigned bytes)
{
	if (!e->natural || bytes <= 1)
		return 0;
	size_t pad = (bytes - e->off % bytes) % bytes;
	if (pad > e->cap - e->off)
		return -ENOSPC;
	memset(e->buf + e->off, 0, pad);
	e->off += pad;
	return 0;
}

static int enc_int(struct ctf_enc *e, uint64_t v, unsigned bytes)
{
	if (enc_align(e, bytes) < 0 || bytes > e->cap - e->off)
		return -ENOSPC;
	ctf_store(e->buf + e->off, v, bytes, e->be);
	e->off += bytes;
	return 0;
}

int ctf_enc_packet_header(struct ctf_enc *e, const struct ctf_packet_info *p)
{
	if (e->cap < CTF_PACKET_HEADER_SIZE) {
		e->err = -ENOSPC;
		return e->err;
	}
	uint8_t *b = e->buf;
	memset(b, 0, CTF_PACKET_HEADER_SIZE);
	ctf_store(b + PKT_OFF(magic), p->magic ? p->magic : CTF_MAGIC, 4, e->be);
	memcpy(b + PKT_OFF(uuid), p->uuid, 16);
	ctf_store(b + PKT_OFF(stream_id), p->stream_id, 4, e->be);
	ctf_store(b + PKT_OFF(stream_instance_id), p->stream_instance_id, 8, e->be);
	ctf_store(b + PKT_OFF(timestamp_begin), p->ts_begin, 8, e->be);
	ctf_store(b + PKT_OFF(timestamp_end), p->ts_end, 8, e->be);
	ctf_store(b + PKT_OFF(content_size), p->content_size, 8, e->be);
	ctf_store(b + PKT_OFF(packet_size), p->packet_size, 8, e->be);
	ctf_store(b + PKT_OFF(packet_seq_num), p->seq, 8, e->be);
	ctf_store(b + PKT_OFF(events_discarded), p->discarded, 8, e->be);
	ctf_store(b + PKT_OFF(cpu_id), p->cpu_id, 4, e->be);
	e->off = CTF_PACKET_HEADER_SIZE;
	return 0;
}

long ctf_enc_packet_close(struct ctf_enc *e, uint64_t ts_end, size_t padding)
{
	if (e->off < CTF_PACKET_HEADER_SIZE)
		return -EINVAL;
	if (padding > e->cap - e->off)
		return -ENOSPC;
	uint64_t content = (uint64_t)e->off * 8;
	memset(e->buf + e->off, 0, padding);
	e->off += padding;
	ctf_store(e->buf + 40, ts_end, 8, e->be);
	ctf_store(e->buf + 48, content, 8, e->be);
	ctf_store(e->buf + 56, (uint64_t)e->off * 8, 8, e->be);
	return (long)e->off;
}

int ctf_needs_extended(uint32_t id, uint64_t prev_ts, uint64_t ts)
{
	return id >= CTF_EV_ID_EXTENDED || ts - prev_ts >= (UINT64_C(1) << CTF_COMPACT_TS_BITS);
}

/* Largest alignment (bytes) among the TSDL members a field becomes. */
static unsigned field_align(const struct sig_field *f)
{
	unsigned a = f->kind == SIG_STRING ? 1 : f->bits / 8u;
	if (f->array == SIG_SEQ && a < f->count_size)
		a = f->count_size;   /* the length member */
	return a;
}

static int enc_header(struct ctf_enc *e, uint32_t id, uint64_t ts, int ext)
{
	const uint32_t mask27 = (UINT32_C(1) << CTF_COMPACT_TS_BITS) - 1;
	if (!ext && id < CTF_EV_ID_EXTENDED) {
		uint32_t ts27 = (uint32_t)ts & mask27;
		uint32_t w = e->be ? (id << 27 | ts27) : (id | ts27 << 5);
		/* Two bit fields (align = 1 bit) in a byte-aligned struct:
		 * no padding before the word, even in natural mode. */
		if (4 > e->cap - e->off)
			return -ENOSPC;
		ctf_store(e->buf + e->off, w, 4, e->be);
		e->off += 4;
		return 0;
	}
	/* 5-bit tag 31 (first bits of the byte in the stream's bit order). */
	if (e->off >= e->cap)
		return -ENOSPC;
	e->buf[e->off++] = e->be ? (uint8_t)(CTF_EV_ID_EXTENDED << 3) : (uint8_t)CTF_EV_ID_EXTENDED;
	/* The `extended` struct aligns to its largest member (u64). */
	if (enc_align(e, 8) < 0 || enc_int(e, id, 4) < 0 || enc_int(e, ts, 8) < 0)
		return -ENOSPC;
	return 0;
}

static int enc_payload(struct ctf_enc *e, const struct sig_field *f, size_t n,
		       const struct sig_value *v)
{
	unsigned max_align = 1;
	for (size_t i = 0; i < n; i++)
		if (field_align(&f[i]) > max_align)
			max_align = field_align(&f[i]);
	if (enc_align(e, max_align) < 0)
		return -ENOSPC;
	for (size_t i = 0; i < n; i++) {
		unsigned sz = (unsigned)sig_elem_size(&f[i]);
		if (f[i].kind == SIG_STRING) {
			const char *s = v[i].str ? v[i].str : "(null)";
			size_t len = strlen(s) + 1;
			if (len > e->cap - e->off)
				return -ENOSPC;
			memcpy(e->buf + e->off, s, len);
			e->off += len;
		} else if (f[i].kind == SIG_FLOAT) {
			uint64_t bits;
			if (sz == 4) {
				float x = (float)v[i].f;
				uint32_t b32;
				memcpy(&b32, &x, 4);
				bits = b32;
			} else {
				memcpy(&bits, &v[i].f, 8);
			}
			if (enc_int(e, bits, sz) < 0)
				return -ENOSPC;
		} else if (f[i].array == SIG_SCALAR) {
			if (enc_int(e, v[i].u, sz) < 0)
				return -ENOSPC;
		} else {
			uint32_t count = f[i].array == SIG_FIXED ? f[i].len : v[i].count;
			if (f[i].array == SIG_FIXED && v[i].count != f[i].len)
				return -EINVAL;
			if (count && !v[i].elems)
				return -EINVAL;
			if (f[i].array == SIG_SEQ && f[i].count_size == 1 && count > 255)
				return -EINVAL;
			if (f[i].array == SIG_SEQ && enc_int(e, count, f[i].count_size) < 0)
				return -ENOSPC;
			/* An array aligns to its element even when empty (CTF 1.8
			 * section 4.2.3; babeltrace2 2.0.4 does it too). */
			if (enc_align(e, sz) < 0)
				return -ENOSPC;
			for (uint32_t k = 0; k < count; k++)
				if (enc_int(e, v[i].elems[k], sz) < 0)
					return -ENOSPC;
		}
	}
	return 0;
}

int ctf_enc_event(struct ctf_enc *e, uint32_t id, uint64_t ts, int ext,
		  const struct sig_field *f, size_t n, const struct sig_value *v)
{
	size_t start = e->off;
	if (e->err)
		return e->err;
	int r = enc_header(e, id, ts, ext);
	if (r == 0)
		r = enc_payload(e, f, n, v);
	if (r < 0) {
		e->off = start;
		if (r == -ENOSPC)
			e->err = r;
	}
	return r;
}
