/*
 * check_trace.c - the trace validator behind `ringtrace check`
 * (check_trace.h).
 *
 * Called from one thread, one stream file after the other. A file is
 * walked packet by packet: the packet header and context are decoded from
 * the first 4 KiB (more only if the headers need it), their values are
 * checked, then the whole packet is read and every event decoded with the
 * reader's decoder (decode.h), which bounds every read by content_size.
 * Positions of header fields are taken from the decoder's integer callback,
 * so that each problem names the byte it is about.
 *
 * The walk goes on after a problem whenever the next packet can still be
 * found (packet_size is sane and within the file); it stops the file when
 * it cannot (a truncated or unknown header, a size that is not whole
 * bytes). Within a packet, a bad event stops that packet's events: without
 * a valid event, the next one cannot be located. Timestamp problems, which
 * usually come in runs, are reported once per kind and packet with a count.
 *
 * Tuned for traces of a few GB: one pread per packet into one reused
 * buffer, values in pools that are reset, not freed, between events.
 */
#include "read/check_trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/packet_layout.h"
#include "read/decode.h"
#include "read/stream.h"

#define CK_FIRST_READ     4096u
#define CK_EVENT_VALUES   (1u << 20)   /* values of one event */
/*
 * Decoding work allowed per file, in values decoded: a constant plus this
 * many per byte of the file. The decoder bounds a sequence of integers by
 * the bytes left, but a sequence (or a tree of shared structs) of elements
 * that take no space costs work without consuming input; hostile metadata
 * could make one 4-byte event cost a million steps. Real traces decode a
 * few values per byte (8 at most: a sequence of 1-bit integers).
 */
#define CK_WORK_BASE      (UINT64_C(1) << 22)
#define CK_WORK_PER_BYTE  64

/* Header and context members whose value or position the checks use. */
enum ck_field {
	F_MAGIC,
	F_UUID,
	F_STREAM_ID,
	F_INSTANCE,
	F_TS_BEGIN,
	F_TS_END,
	F_CONTENT,
	F_PACKET,
	F_SEQ,
	F_DISC,
	F_CPU,
	F_COUNT,
};

static const char *const field_name[F_COUNT] = {
	"magic", "uuid", "stream_id", "stream_instance_id", "timestamp_begin", "timestamp_end",
	"content_size", "packet_size", "packet_seq_num", "events_discarded", "cpu_id",
};

/* What the header and context of the current packet say. */
struct ck_pkt {
	uint64_t val[F_COUNT];
	uint64_t pos[F_COUNT];           /* bits from the packet start */
	unsigned bits[F_COUNT];
	uint8_t has[F_COUNT];
};

/* Timestamp problems of one packet, reported once per kind. */
enum { AGG_BACK, AGG_BEFORE, AGG_AFTER, AGG_COUNT };

struct ck_agg {
	uint64_t n;
	uint64_t off;
	char msg[192];
};

struct ck_file {
	const char *name;
	int fd;
	const uint8_t *mem;
	uint64_t size;
	uint64_t off;                    /* of the current packet */
	uint64_t index;                  /* of the current packet */
	uint64_t clock;                  /* stream clock (CTF 1.8 section 8) */
	uint64_t work, budget;           /* values decoded so far, allowed */
	/* the stream so far */
	int has_prev_end, has_prev_seq, has_prev_disc, has_last_ts;
	uint64_t prev_end, prev_seq, prev_disc, last_ts;
	/* identity, from the first packet that has it */
	int has_sid, has_inst, has_cpu;
	uint64_t sid, inst, cpu;
	uint64_t inst_off;
	int name_is_cpu;                 /* the name is stream_<N> */
	uint64_t name_cpu;
};

/* One file checked: its stream's identity and what it holds. */
struct ck_ident {
	const char *name;
	int has_inst, has_cpu;
	uint64_t sid, inst, off;
	uint64_t cpu;
	uint64_t events, lost;           /* decoded; lost per events_discarded */
	uint64_t problems;               /* found in the file */
};

struct rd_check {
	const struct rd_meta *m;
	rd_check_report_fn fn;
	void *ctx;
	struct rd_check_totals tot;
	int late_start_ok;               /* the first packet need not be number 0 */
	int count_first_disc;            /* events_discarded of a first packet is a loss */
	int gaps_ok;                     /* packet_seq_num gaps are accounted for */

	uint8_t *buf;
	size_t cap;
	struct rd_decoder dec;
	struct rd_vpool hdr_pool;        /* packet header and context */
	struct rd_vpool ev_pool;         /* one event */
	char derr[256];

	/* decoding state, seen by on_int() */
	const struct rd_stream_class *sc;
	struct ck_pkt pk;
	uint64_t clock;
	int ev_ts;                       /* the event has a clock field */
	int has_id;
	uint64_t ev_id;
	struct ck_agg agg[AGG_COUNT];

	struct ck_ident *ids;
	size_t n_ids, cap_ids;
};

__attribute__((format(printf, 5, 6)))
static void problem(struct rd_check *c, const struct ck_file *f, int has_packet, uint64_t off,
		    const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	struct rd_check_problem p = {
		.file = f->name,
		.offset = off,
		.has_packet = has_packet,
		.packet = f->index,
		.what = what,
	};
	c->tot.problems++;
	if (c->fn)
		c->fn(c->ctx, &p);
}

/* Problem about a header field of the current packet (at the packet start if absent). */
#define PKT_PROBLEM(c, f, fld, ...) \
	problem((c), (f), 1, (f)->off + ((c)->pk.has[fld] ? (c)->pk.pos[fld] / 8 : 0), __VA_ARGS__)

void rd_check_report(struct rd_check *c, const char *file, const char *what)
{
	struct ck_file f = { .name = file };
	problem(c, &f, 0, 0, "%s", what);
}

static void on_int(void *ctx, struct rd_decoder *d, const struct rd_type *t, const char *name,
		   uint64_t v);

static const struct rd_env *env_int(const struct rd_meta *m, const char *key)
{
	const struct rd_env *e = rd_meta_env(m, key);
	return e && !e->str ? e : NULL;
}

int rd_check_new(const struct rd_meta *m, rd_check_report_fn fn, void *ctx, struct rd_check **ret)
{
	struct rd_check *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->m = m;
	c->fn = fn;
	c->ctx = ctx;
	rd_vpool_init(&c->hdr_pool, RD_HDR_VALUES);
	rd_vpool_init(&c->ev_pool, CK_EVENT_VALUES);
	c->dec.trace_be = m->big_endian;
	c->dec.on_int = on_int;
	c->dec.ctx = c;
	c->dec.err = c->derr;
	c->dec.errlen = sizeof(c->derr);

	/*
	 * What the recorder says about the recording decides which packet
	 * numbers are expected (docs/design.md section 3: packet_seq_num is
	 * the sub-buffer's position / its size, per CPU, from 0):
	 * - attached to a running program (record -p), a snapshot or a
	 *   recovery: the trace starts wherever the buffers were, and what
	 *   was discarded before an attachment is not a loss of this trace;
	 * - overwrite mode with overwritten events: whole sub-buffers are
	 *   gone, by design, counted in ringtrace_lost_overwrite;
	 * - ringtrace_lost_crash: sub-buffers left unreadable by a crash were
	 *   skipped and their events counted.
	 */
	const struct rd_env *e;
	int attached = (e = env_int(m, "ringtrace_attached")) && e->num == 1;
	int snapshot = (e = env_int(m, "ringtrace_snapshot")) && e->num > 0;
	e = rd_meta_env(m, "ringtrace_snapshot_trigger");
	snapshot |= e && e->str && *e->str;
	e = rd_meta_env(m, "ringtrace_mode");
	int overwrite = e && e->str && !strcmp(e->str, "overwrite");
	int lost_over = (e = env_int(m, "ringtrace_lost_overwrite")) && e->num > 0;
	int lost_crash = (e = env_int(m, "ringtrace_lost_crash")) && e->num > 0;
	c->gaps_ok = (overwrite && lost_over) || lost_crash;
	c->late_start_ok = attached || snapshot || c->gaps_ok;
	c->count_first_disc = !attached;
	*ret = c;
	return 0;
}

void rd_check_free(struct rd_check *c)
{
	if (!c)
		return;
	free(c->buf);
	free(c->ids);
	rd_vpool_free(&c->hdr_pool);
	rd_vpool_free(&c->ev_pool);
	free(c);
}

void rd_check_get_totals(const struct rd_check *c, struct rd_check_totals *ret)
{
	*ret = c->tot;
}

/*
 * Integer callback of the decoder: positions and values of the packet
 * fields the checks use (direct members only, as babeltrace2 gives them a
 * meaning only there), the stream clock, the event id.
 */
static void on_int(void *ctx, struct rd_decoder *d, const struct rd_type *t, const char *name,
		   uint64_t v)
{
	struct rd_check *c = ctx;

	if (d->scope <= RD_SCOPE_PACKET_CONTEXT && d->depth == 1) {
		/* An array element has no name: its array is the member being decoded. */
		const struct rd_type *st = d->frames[0].t;
		const char *mname = name;
		if (!mname && st && d->frames[0].done < st->n_members)
			mname = st->members[d->frames[0].done].name;
		for (int i = 0; mname && i < F_COUNT; i++) {
			if (strcmp(mname, field_name[i]) != 0)
				continue;
			/* uuid is the array; the others are integers */
			if ((i == F_UUID) != (name == NULL) || c->pk.has[i])
				break;
			c->pk.has[i] = 1;
			c->pk.pos[i] = d->pos - t->size;
			c->pk.bits[i] = t->size;
			c->pk.val[i] = v;
			break;
		}
	}
	/* The stream clock: an N-bit clock field gives its low N bits, and a
	 * smaller value than the clock's low bits means one wrap.
	 * timestamp_end is the end of the packet, not a clock update. */
	if (t->clock >= 0 && c->sc && t->clock == c->sc->clock &&
	    !(d->scope == RD_SCOPE_PACKET_CONTEXT && d->depth == 1 && name &&
	      !strcmp(name, "timestamp_end"))) {
		if (t->size >= 64) {
			c->clock = v;
		} else {
			uint64_t mask = (UINT64_C(1) << t->size) - 1;
			uint64_t n = (c->clock & ~mask) | (v & mask);
			if ((v & mask) < (c->clock & mask))
				n += mask + 1;
			c->clock = n;
		}
		if (d->scope >= RD_SCOPE_EVENT_HEADER)
			c->ev_ts = 1;
	}
	if (d->scope == RD_SCOPE_EVENT_HEADER && name && !strcmp(name, "id") && !t->is_signed) {
		c->ev_id = v;
		c->has_id = 1;
	}
}

/* Bytes [off, off + n) of the file into c->buf; 0, or <0 after a problem. */
static int read_at(struct rd_check *c, struct ck_file *f, uint64_t off, size_t n)
{
	if (n > c->cap) {
		size_t cap = c->cap ? c->cap : CK_FIRST_READ;
		while (cap < n)
			cap *= 2;
		uint8_t *b = realloc(c->buf, cap);
		if (!b) {
			problem(c, f, 1, off, "out of memory for a packet of %zu bytes", n);
			return -ENOMEM;
		}
		c->buf = b;
		c->cap = cap;
	}
	if (f->fd < 0) {
		memcpy(c->buf, f->mem + off, n);
		return 0;
	}
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(f->fd, c->buf + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			problem(c, f, 1, off + done, "%s", r < 0 ? strerror(errno) : "the file shrank while being read");
			return -EIO;
		}
		done += (size_t)r;
	}
	return 0;
}

enum { HDR_OK = 0, HDR_NO_STREAM = 1 };

/*
 * Decode the packet header and context from c->buf, `end` bits. Returns
 * HDR_OK, HDR_NO_STREAM (no stream class for the header: c->pk says why),
 * or the decoder's negative errno (c->derr, c->dec.short_read).
 */
static int decode_headers(struct rd_check *c, struct ck_file *f, uint64_t end)
{
	struct rd_decoder *d = &c->dec;
	const struct rd_value *v;
	int r;

	rd_vpool_reset(&c->hdr_pool);
	memset(d->scopes, 0, sizeof(d->scopes));
	memset(&c->pk, 0, sizeof(c->pk));
	d->buf = c->buf;
	d->pos = 0;
	d->end = end;
	d->avail = end;
	d->pool = &c->hdr_pool;
	c->sc = NULL;
	c->clock = f->clock;
	r = rd_decode_scope(d, RD_SCOPE_PACKET_HEADER, c->m->packet_header, &v);
	f->work += c->hdr_pool.used;
	if (r < 0)
		return r;
	if (c->pk.has[F_STREAM_ID])
		c->sc = rd_meta_stream(c->m, c->pk.val[F_STREAM_ID]);
	else if (c->m->n_streams == 1)
		c->sc = &c->m->streams[0];
	if (!c->sc)
		return HDR_NO_STREAM;
	size_t before = c->hdr_pool.used;
	r = rd_decode_scope(d, RD_SCOPE_PACKET_CONTEXT, c->sc->packet_context, &v);
	f->work += c->hdr_pool.used - before;
	return r;
}

/* Whether the file has used up its decoding work (after a problem). */
static int over_budget(struct rd_check *c, struct ck_file *f, uint64_t off)
{
	if (f->work <= f->budget)
		return 0;
	problem(c, f, 1, off, "decoding costs more than %d values per byte of the file (the metadata "
		"has fields that take no space); the rest of the file is not checked",
		CK_WORK_PER_BYTE);
	return 1;
}

static void report_magic(struct rd_check *c, struct ck_file *f)
{
	if (c->pk.has[F_MAGIC] && c->pk.val[F_MAGIC] != CTF_PACKET_MAGIC)
		PKT_PROBLEM(c, f, F_MAGIC, "bad magic number 0x%08llx (a CTF packet starts with 0x%08x)",
			    (unsigned long long)c->pk.val[F_MAGIC], CTF_PACKET_MAGIC);
}

static void format_uuid(const uint8_t u[16], char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}

static void check_uuid(struct rd_check *c, struct ck_file *f)
{
	const struct rd_value *u = rd_value_member(c->dec.scopes[RD_SCOPE_PACKET_HEADER], "uuid");
	if (!u || !c->m->has_uuid || u->type->kind != RD_ARRAY || u->sub.n != 16)
		return;
	uint8_t got[16];
	for (int i = 0; i < 16; i++) {
		const struct rd_value *e = &u->sub.v[i];
		if (e->type->kind != RD_INT || e->type->size != 8)
			return;
		got[i] = (uint8_t)e->u;
	}
	if (memcmp(got, c->m->uuid, 16) != 0) {
		char a[37], b[37];
		format_uuid(got, a);
		format_uuid(c->m->uuid, b);
		PKT_PROBLEM(c, f, F_UUID, "uuid %s is not the trace's (%s in the metadata)", a, b);
	}
}

/* The same stream in every packet of a file; ringtrace names a file after its CPU. */
static void check_identity(struct rd_check *c, struct ck_file *f)
{
	const struct ck_pkt *p = &c->pk;
	if (p->has[F_STREAM_ID]) {
		if (!f->has_sid) {
			f->has_sid = 1;
			f->sid = p->val[F_STREAM_ID];
		} else if (p->val[F_STREAM_ID] != f->sid) {
			PKT_PROBLEM(c, f, F_STREAM_ID, "stream_id changes from %llu to %llu within the file",
				    (unsigned long long)f->sid, (unsigned long long)p->val[F_STREAM_ID]);
		}
	}
	if (p->has[F_INSTANCE]) {
		if (!f->has_inst) {
			f->has_inst = 1;
			f->inst = p->val[F_INSTANCE];
			f->inst_off = f->off + p->pos[F_INSTANCE] / 8;
		} else if (p->val[F_INSTANCE] != f->inst) {
			PKT_PROBLEM(c, f, F_INSTANCE,
				    "stream_instance_id changes from %llu to %llu within the file",
				    (unsigned long long)f->inst, (unsigned long long)p->val[F_INSTANCE]);
		}
	}
	int fld = p->has[F_CPU] ? F_CPU : p->has[F_INSTANCE] ? F_INSTANCE : -1;
	if (fld < 0)
		return;
	if (!f->has_cpu) {
		f->has_cpu = 1;
		f->cpu = p->val[fld];
		if (f->name_is_cpu && f->cpu != f->name_cpu)
			PKT_PROBLEM(c, f, fld, "%s %llu does not match the file name (stream_<cpu>)",
				    field_name[fld], (unsigned long long)f->cpu);
	} else if (fld == F_CPU && p->val[fld] != f->cpu) {
		PKT_PROBLEM(c, f, fld, "cpu_id changes from %llu to %llu within the file",
			    (unsigned long long)f->cpu, (unsigned long long)p->val[fld]);
	}
}

/* Times, packet numbers and loss counts against the previous packet. */
static void check_sequence(struct rd_check *c, struct ck_file *f)
{
	const struct ck_pkt *p = &c->pk;
	uint64_t begin = p->val[F_TS_BEGIN], end = p->val[F_TS_END];

	if (p->has[F_TS_BEGIN] && p->has[F_TS_END] && end < begin)
		PKT_PROBLEM(c, f, F_TS_END, "timestamp_end %llu is before timestamp_begin %llu",
			    (unsigned long long)end, (unsigned long long)begin);
	if (p->has[F_TS_BEGIN] && f->has_prev_end && begin < f->prev_end)
		PKT_PROBLEM(c, f, F_TS_BEGIN,
			    "timestamp_begin %llu is before the end of the previous packet (%llu)",
			    (unsigned long long)begin, (unsigned long long)f->prev_end);
	if (p->has[F_TS_END] || p->has[F_TS_BEGIN]) {
		f->prev_end = p->has[F_TS_END] ? end : begin;
		f->has_prev_end = 1;
	}

	if (p->has[F_SEQ]) {
		uint64_t seq = p->val[F_SEQ];
		if (!f->has_prev_seq) {
			if (seq != 0 && !c->late_start_ok)
				PKT_PROBLEM(c, f, F_SEQ,
					    "the first packet has packet_seq_num %llu: %llu packet%s missing "
					    "before it, and the env accounts for no loss or late start",
					    (unsigned long long)seq, (unsigned long long)seq, seq == 1 ? "" : "s");
		} else if (seq <= f->prev_seq) {
			PKT_PROBLEM(c, f, F_SEQ, "packet_seq_num %llu after %llu: not increasing",
				    (unsigned long long)seq, (unsigned long long)f->prev_seq);
		} else if (seq - f->prev_seq > 1 && !c->gaps_ok) {
			PKT_PROBLEM(c, f, F_SEQ,
				    "packet_seq_num jumps from %llu to %llu: %llu packet%s missing, and "
				    "the env accounts for no such loss",
				    (unsigned long long)f->prev_seq, (unsigned long long)seq,
				    (unsigned long long)(seq - f->prev_seq - 1),
				    seq - f->prev_seq - 1 == 1 ? "" : "s");
		}
		f->prev_seq = seq;
		f->has_prev_seq = 1;
	}

	if (p->has[F_DISC]) {
		uint64_t disc = p->val[F_DISC];
		unsigned bits = p->bits[F_DISC];
		if (!f->has_prev_disc) {
			if (c->count_first_disc)
				c->tot.lost += disc;
		} else if (bits >= 64 && disc < f->prev_disc) {
			PKT_PROBLEM(c, f, F_DISC,
				    "events_discarded goes down from %llu to %llu (it is a running total)",
				    (unsigned long long)f->prev_disc, (unsigned long long)disc);
		} else {
			/* A narrower counter may wrap, as CTF allows. */
			uint64_t mask = bits >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1;
			c->tot.lost += (disc - f->prev_disc) & mask;
		}
		f->prev_disc = disc;
		f->has_prev_disc = 1;
	}
}

__attribute__((format(printf, 4, 5)))
static void agg_add(struct rd_check *c, int kind, uint64_t off, const char *fmt, ...)
{
	struct ck_agg *a = &c->agg[kind];
	if (a->n++ == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(a->msg, sizeof(a->msg), fmt, ap);
		va_end(ap);
		a->off = off;
	}
}

static void agg_flush(struct rd_check *c, struct ck_file *f)
{
	for (int k = 0; k < AGG_COUNT; k++) {
		struct ck_agg *a = &c->agg[k];
		if (a->n == 1)
			problem(c, f, 1, a->off, "%s", a->msg);
		else if (a->n > 1)
			problem(c, f, 1, a->off, "%s (and %llu more event%s in this packet)", a->msg,
				(unsigned long long)(a->n - 1), a->n == 2 ? "" : "s");
		a->n = 0;
	}
}

static int is_internal(const struct rd_event_class *ec)
{
	/* docs/design.md section 3: neither counts as an event. */
	return ec->name && (!strcmp(ec->name, "ringtrace:thread") ||
			    !strcmp(ec->name, "ringtrace:thread_name"));
}

/* Decode every event of the packet in c->buf, [hdr, content) bits: 0, or
 * -E2BIG when the file's decoding work is used up (reported). */
static int check_events(struct rd_check *c, struct ck_file *f, uint64_t hdr, uint64_t content)
{
	struct rd_decoder *d = &c->dec;
	const struct rd_stream_class *sc = c->sc;
	const struct ck_pkt *p = &c->pk;
	uint64_t pos = hdr;

	while (pos < content) {
		const struct rd_event_class *ec = NULL;
		const struct rd_value *v;
		uint64_t off = f->off + pos / 8;
		int r;

		rd_vpool_reset(&c->ev_pool);
		d->pos = pos;
		d->end = content;
		/* Everything past content_size is out of reach, so that an event
		 * that crosses it reads as a short read, not a format error. */
		d->avail = content;
		d->pool = &c->ev_pool;
		for (int k = RD_SCOPE_EVENT_HEADER; k < RD_SCOPE_COUNT; k++)
			d->scopes[k] = NULL;
		c->has_id = 0;
		c->ev_ts = 0;
		r = rd_decode_scope(d, RD_SCOPE_EVENT_HEADER, sc->event_header, &v);
		if (r == 0)
			r = rd_decode_scope(d, RD_SCOPE_EVENT_COMMON_CONTEXT, sc->event_context, &v);
		if (r == 0) {
			if (c->has_id) {
				ec = rd_meta_event(sc, c->ev_id);
				if (!ec) {
					problem(c, f, 1, off, "unknown event id %llu (not in the metadata of stream "
						"class %llu); the rest of the packet is not checked",
						(unsigned long long)c->ev_id, (unsigned long long)sc->id);
					break;
				}
			} else if (sc->n_events == 1) {
				ec = sc->events[0];
			} else {
				problem(c, f, 1, off, "event without an id in its header, and stream class "
					"%llu has %zu event classes", (unsigned long long)sc->id, sc->n_events);
				break;
			}
			r = rd_decode_scope(d, RD_SCOPE_EVENT_CONTEXT, ec->context, &v);
			if (r == 0)
				r = rd_decode_scope(d, RD_SCOPE_EVENT_FIELDS, ec->fields, &v);
		}
		f->work += c->ev_pool.used;
		if (over_budget(c, f, off)) {
			agg_flush(c, f);
			return -E2BIG;
		}
		if (r < 0) {
			char what[320];
			if (ec)
				snprintf(what, sizeof(what), "event '%.200s' (id %llu)", ec->name,
					 (unsigned long long)ec->id);
			else
				snprintf(what, sizeof(what), "event header");
			if (r == -E2BIG)
				problem(c, f, 1, off, "%s has too many fields to decode", what);
			else if (d->short_read)
				problem(c, f, 1, off, "%s is cut by content_size: it runs past the end of the "
					"content (%llu bytes into the packet)", what,
					(unsigned long long)(content / 8));
			else
				problem(c, f, 1, off, "%s does not decode: %s", what, c->derr);
			break;
		}
		if (d->pos <= pos) {
			problem(c, f, 1, off, "event '%s' has a size of 0", ec->name);
			break;
		}
		if (c->ev_ts) {
			uint64_t ts = c->clock;
			if (f->has_last_ts && ts < f->last_ts)
				agg_add(c, AGG_BACK, off,
					"event '%.100s': timestamp %llu goes backwards (the previous event's is %llu)",
					ec->name, (unsigned long long)ts, (unsigned long long)f->last_ts);
			if (p->has[F_TS_BEGIN] && ts < p->val[F_TS_BEGIN])
				agg_add(c, AGG_BEFORE, off,
					"event '%.100s': timestamp %llu is before timestamp_begin %llu",
					ec->name, (unsigned long long)ts, (unsigned long long)p->val[F_TS_BEGIN]);
			if (p->has[F_TS_END] && ts > p->val[F_TS_END])
				agg_add(c, AGG_AFTER, off,
					"event '%.100s': timestamp %llu is after timestamp_end %llu",
					ec->name, (unsigned long long)ts, (unsigned long long)p->val[F_TS_END]);
			f->last_ts = ts;
			f->has_last_ts = 1;
		}
		if (!is_internal(ec))
			c->tot.events++;
		pos = d->pos;
	}
	agg_flush(c, f);
	return 0;
}

/* Check the packet at f->off: 1 to go on with the next, 0 at the end of the
 * file or when the next packet cannot be found, <0 (-ENOMEM) to stop. */
static int check_packet(struct rd_check *c, struct ck_file *f)
{
	if (f->off >= f->size)
		return 0;
	uint64_t remaining = f->size - f->off;
	uint64_t have = remaining < CK_FIRST_READ ? remaining : CK_FIRST_READ;
	int r;

	for (;;) {
		if ((r = read_at(c, f, f->off, (size_t)have)) < 0)
			return r == -ENOMEM ? r : 0;
		r = decode_headers(c, f, have * 8);
		if (over_budget(c, f, f->off))
			return 0;
		if (r == HDR_OK)
			break;
		if (r < 0 && r != -E2BIG && c->dec.short_read && have < remaining &&
		    have < RD_PACKET_MAX) {
			/* The headers go on past what was read: read more. */
			have = have * 4 < remaining ? have * 4 : remaining;
			if (have > RD_PACKET_MAX)
				have = RD_PACKET_MAX;
			continue;
		}
		report_magic(c, f);
		if (r == HDR_NO_STREAM) {
			if (c->pk.has[F_STREAM_ID])
				PKT_PROBLEM(c, f, F_STREAM_ID,
					    "unknown stream_id %llu (no such stream class in the metadata); "
					    "the rest of the file is not checked",
					    (unsigned long long)c->pk.val[F_STREAM_ID]);
			else
				PKT_PROBLEM(c, f, F_STREAM_ID, "no stream_id in the packet header, and the "
					    "metadata has %zu stream classes", c->m->n_streams);
			return 0;
		}
		if (r == -E2BIG) {
			problem(c, f, 1, f->off, "packet header: too many fields to decode");
			return 0;
		}
		if (!c->dec.short_read) {
			problem(c, f, 1, f->off, "packet header does not decode: %s", c->derr);
			return 0;
		}
		if (have == remaining) {
			problem(c, f, 1, f->off, "truncated: the file ends inside a packet header "
				"(%llu bytes left)", (unsigned long long)remaining);
			return 0;
		}
		problem(c, f, 1, f->off, "packet header larger than %u bytes", RD_PACKET_MAX);
		return 0;
	}

	uint64_t hdr = c->dec.pos;
	c->tot.packets++;
	report_magic(c, f);
	check_uuid(c, f);
	check_identity(c, f);
	check_sequence(c, f);

	/* Where the next packet is: without a sane packet_size, nowhere. */
	uint64_t pkt_bits = remaining * 8, content;
	int walk = 1;
	if (c->pk.has[F_PACKET]) {
		pkt_bits = c->pk.val[F_PACKET];
		if (pkt_bits % 8) {
			PKT_PROBLEM(c, f, F_PACKET, "packet_size %llu bits is not a whole number of bytes; "
				    "the rest of the file is not checked", (unsigned long long)pkt_bits);
			return 0;
		}
		if (pkt_bits == 0 || pkt_bits < hdr) {
			PKT_PROBLEM(c, f, F_PACKET, "packet_size %llu bits is smaller than the packet "
				    "header and context (%llu bits); the rest of the file is not checked",
				    (unsigned long long)pkt_bits, (unsigned long long)hdr);
			return 0;
		}
		if (pkt_bits / 8 > remaining) {
			PKT_PROBLEM(c, f, F_PACKET, "truncated file or bad packet_size: the packet is %llu "
				    "bytes but the file has %llu bytes left", (unsigned long long)(pkt_bits / 8),
				    (unsigned long long)remaining);
			return 0;
		}
	}
	content = pkt_bits;
	if (c->pk.has[F_CONTENT]) {
		content = c->pk.val[F_CONTENT];
		if (content > pkt_bits) {
			PKT_PROBLEM(c, f, F_CONTENT, "content_size %llu bits is larger than packet_size "
				    "%llu bits; the events of this packet are not checked",
				    (unsigned long long)content, (unsigned long long)pkt_bits);
			walk = 0;
		} else if (content < hdr) {
			PKT_PROBLEM(c, f, F_CONTENT, "content_size %llu bits is smaller than the packet "
				    "header and context (%llu bits)", (unsigned long long)content,
				    (unsigned long long)hdr);
			walk = 0;
		} else if (content % 8) {
			PKT_PROBLEM(c, f, F_CONTENT, "content_size %llu bits is not a whole number of bytes",
				    (unsigned long long)content);
		}
	}
	if (walk && pkt_bits / 8 > RD_PACKET_MAX) {
		PKT_PROBLEM(c, f, F_PACKET, "packet of %llu bytes, larger than check reads (%u); its "
			    "events are not checked", (unsigned long long)(pkt_bits / 8), RD_PACKET_MAX);
		walk = 0;
	}
	if (walk) {
		/* The whole packet, and its headers again from it (the first
		 * pass may have read less): the events may refer to them. */
		if ((r = read_at(c, f, f->off, (size_t)(pkt_bits / 8))) < 0)
			return r == -ENOMEM ? r : 0;
		if (decode_headers(c, f, content) != HDR_OK) {
			problem(c, f, 1, f->off, "the packet changed while being read");
			return 0;
		}
		if (over_budget(c, f, f->off) || check_events(c, f, c->dec.pos, content) < 0)
			return 0;
	}
	f->clock = c->clock;
	f->off += pkt_bits / 8;
	f->index++;
	return 1;
}

/* stream_<N>: the name ringtrace gives the file of CPU N. */
static int name_cpu(const char *name, uint64_t *ret)
{
	static const char prefix[] = "stream_";
	if (strncmp(name, prefix, sizeof(prefix) - 1) != 0)
		return 0;
	const char *s = name + sizeof(prefix) - 1;
	uint64_t v = 0;
	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > UINT32_MAX)
			return 0;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*ret = v;
	return 1;
}

int rd_check_file(struct rd_check *c, const char *name, int fd, const void *mem, uint64_t size)
{
	struct ck_file f = {
		.name = name,
		.fd = fd,
		.mem = mem,
		.size = size,
	};
	int r;
	uint64_t events0 = c->tot.events, lost0 = c->tot.lost, problems0 = c->tot.problems;

	c->tot.streams++;
	f.name_is_cpu = name_cpu(name, &f.name_cpu);
	f.budget = size > (UINT64_MAX - CK_WORK_BASE) / CK_WORK_PER_BYTE
			   ? UINT64_MAX
			   : CK_WORK_BASE + size * CK_WORK_PER_BYTE;
	if (size == 0)
		problem(c, &f, 0, 0, "empty stream file (no packet)");
	while ((r = check_packet(c, &f)) > 0)
		;
	if (c->n_ids == c->cap_ids) {
		size_t cap = c->cap_ids ? c->cap_ids * 2 : 16;
		struct ck_ident *v = realloc(c->ids, cap * sizeof(*v));
		if (!v)
			return r < 0 ? r : -ENOMEM;
		c->ids = v;
		c->cap_ids = cap;
	}
	c->ids[c->n_ids++] = (struct ck_ident){
		.name = name,
		.has_inst = f.has_inst,
		.has_cpu = f.has_cpu || f.name_is_cpu,
		.sid = f.has_sid ? f.sid : 0,
		.inst = f.inst,
		.off = f.inst_off,
		.cpu = f.has_cpu ? f.cpu : f.name_cpu,
		.events = c->tot.events - events0,
		.lost = c->tot.lost - lost0,
		.problems = c->tot.problems - problems0,
	};
	return r < 0 ? r : 0;
}

/* The env's ringtrace_stream_<cpu>_<what> as a count (0 if absent). */
static const struct rd_env *stream_env(const struct rd_check *c, uint64_t cpu, const char *what)
{
	char key[96];
	snprintf(key, sizeof(key), "ringtrace_stream_%llu_%s", (unsigned long long)cpu, what);
	const struct rd_env *e = env_int(c->m, key);
	return e && e->num >= 0 ? e : NULL;
}

static uint64_t stream_count(const struct rd_check *c, uint64_t cpu, const char *what)
{
	const struct rd_env *e = stream_env(c, cpu, what);
	return e ? (uint64_t)e->num : 0;
}

/* Env entry i, if it is a ringtrace_stream_<cpu>_* count: its cpu. */
static int stream_key(const struct rd_env *e, unsigned long long *ret_cpu)
{
	int end = 0;
	return !e->str && sscanf(e->key, "ringtrace_stream_%llu_%n", ret_cpu, &end) == 1 && end > 0;
}

/*
 * What the recorder wrote at the end, per stream (docs/trace-format.md,
 * "Loss accounting"): the events the program tried to write on that CPU
 * (not for a recording attached to a running program), and those the
 * recorder lost after the buffer: not written (the disk was full) or
 * unreadable after a crash; and the events the ring discarded after the
 * stream's last packet in the trace (counted only by packets not written,
 * say). The stream's files must account for every one: events + events_discarded + those == written (checked when the
 * stream's files had no other problem). Events not written are a problem:
 * the trace is cut.
 */
static void check_accounts(struct rd_check *c)
{
	const struct rd_meta *m = c->m;
	for (size_t i = 0; i < m->n_env; i++) {
		unsigned long long cpu, other;
		if (!stream_key(&m->env[i], &cpu))
			continue;
		/* Each stream once, at its first key. */
		size_t j = 0;
		while (j < i && !(stream_key(&m->env[j], &other) && other == cpu))
			j++;
		if (j < i)
			continue;
		const struct rd_env *w = stream_env(c, cpu, "written");
		uint64_t unwritten = stream_count(c, cpu, "lost_unwritten");
		uint64_t crash = stream_count(c, cpu, "lost_crash");
		uint64_t after = stream_count(c, cpu, "discarded_after");
		uint64_t events = 0, lost = 0, problems = 0;
		const char *name = NULL;
		for (size_t k = 0; k < c->n_ids; k++) {
			const struct ck_ident *id = &c->ids[k];
			if (!id->has_cpu || id->cpu != cpu)
				continue;
			events += id->events;
			lost += id->lost;
			problems += id->problems;
			if (!name)
				name = id->name;
		}
		char fallback[48];
		if (!name) {
			snprintf(fallback, sizeof(fallback), "stream_%llu", cpu);
			name = fallback;
		}
		struct ck_file f = { .name = name };
		lost += after;
		c->tot.lost += unwritten + crash + after;
		if (unwritten) {
			const struct rd_env *why = rd_meta_env(m, "ringtrace_write_error");
			int has_why = why && why->str && *why->str;
			problem(c, &f, 0, 0, "the trace is cut: %llu events of this stream were never written%s%s%s",
				(unsigned long long)unwritten, has_why ? " (" : "", has_why ? why->str : "",
				has_why ? ")" : "");
		}
		/* A damaged stream is reported already; its counts mean little. */
		uint64_t sum = events + lost + unwritten + crash;
		if (w && problems == 0 && sum != (uint64_t)w->num)
			problem(c, &f, 0, 0,
				"%llu events + %llu lost (events_discarded, after the last packet too) + %llu not written + "
				"%llu unreadable = "
				"%llu, but the env says %llu were written",
				(unsigned long long)events, (unsigned long long)lost, (unsigned long long)unwritten,
				(unsigned long long)crash, (unsigned long long)sum, (unsigned long long)w->num);
	}
}

static int cmp_ident(const void *a, const void *b)
{
	const struct ck_ident *x = a, *y = b;
	if (x->has_inst != y->has_inst)
		return x->has_inst < y->has_inst ? -1 : 1;
	if (x->sid != y->sid)
		return x->sid < y->sid ? -1 : 1;
	if (x->inst != y->inst)
		return x->inst < y->inst ? -1 : 1;
	return strcmp(x->name, y->name);
}

void rd_check_finish(struct rd_check *c)
{
	/* babeltrace2 reads files with one stream_instance_id as one stream
	 * (a stream split into several files); ringtrace writes one file
	 * per CPU, so two files with one id are two CPUs mixed up. */
	if (c->n_ids > 1)
		qsort(c->ids, c->n_ids, sizeof(*c->ids), cmp_ident);
	for (size_t i = 1; i < c->n_ids; i++) {
		const struct ck_ident *a = &c->ids[i - 1], *b = &c->ids[i];
		if (!a->has_inst || a->sid != b->sid || a->inst != b->inst)
			continue;
		struct ck_file f = { .name = b->name };
		problem(c, &f, 1, b->off, "stream_instance_id %llu is also that of %s: babeltrace2 "
			"reads the two files as one stream", (unsigned long long)b->inst, a->name);
	}
	check_accounts(c);
}
