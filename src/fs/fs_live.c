/*
 * fs_live.c - the events of a running program as text, for the files
 * `trace`, `trace_pipe`, `snapshot` and `snapshot_pipe` of `ringtrace
 * mount` (fs_ops.c calls it from the FUSE worker threads, one open file
 * at a time per decoder).
 *
 * The same lines as `ringtrace show` and `ringtrace dump` (the shared
 * rd_format_item()): the program's registry (the one in its ring
 * region) is read into event classes, metadata is generated in memory
 * (ctf_metadata_build) and the packets are decoded with the trace reader
 * (rd_trace_open_mem). `show` does the same inside cmd_record.c, which
 * keeps it private; this is the thin part of it again, on top of src/ctl
 * and src/read.
 *
 * Two ways to take packets:
 *   - consuming (trace_pipe, snapshot_pipe): the ring's one reader, as
 *     `show` and `record -p` are: closed sub-buffers are taken, the open
 *     one is peeked at, and what was printed of it is remembered;
 *   - non-consuming (trace, snapshot): only when no writer runs (the live
 *     buffers after a flush that leaves tracing off, or the buffers a
 *     snapshot swapped out), every sub-buffer still whole is copied and
 *     cut at its first record never written. Nothing in the region is
 *     changed, so the file reads the same twice.
 * Memory is bounded by the buffers: at most one copy of them per read.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/packet_layout.h"
#include "common/sig.h"
#include "util/buf.h"
#include "ctf/metadata.h"
#include "ctl/ctl_client.h"
#include "fs/fs.h"
#include "read/format.h"
#include "read/reader.h"
#include "ringbuf/rb_lap.h"

void fs_dec_init(struct fs_dec *d, pid_t pid, const char *comm, struct ringtrace__rb *rb)
{
	memset(d, 0, sizeof(*d));
	d->pid = pid;
	d->rb = rb;
	snprintf(d->comm, sizeof(d->comm), "%s", comm);
	d->clock = rb->hdr->clock;
	memcpy(d->uuid, rb->hdr->uuid, sizeof(d->uuid));
	clk_sample(d->clock, &d->c0);
}

void fs_dec_free(struct fs_dec *d)
{
	for (size_t i = 0; i < d->nev; i++) {
		free(d->ev[i].provider);
		free(d->ev[i].name);
		free(d->ev[i].signature);
	}
	free(d->ev);
	d->ev = NULL;
	d->nev = d->cap = 0;
}

static struct fs_dec_event *event_by_id(struct fs_dec *d, uint32_t id)
{
	for (size_t i = 0; i < d->nev; i++)
		if (d->ev[i].id == id)
			return &d->ev[i];
	return NULL;
}

/* The entries the program appended to its region's registry since the
 * last call; an event whose fields cannot be described is left out (its
 * records then end the walk of their packet, as in `show`). */
void fs_dec_registry(struct fs_dec *d)
{
	struct ringtrace__shm_header *h = d->rb->hdr;
	/* Pairs with the registry's release store once an entry is complete. */
	uint64_t used = __atomic_load_n(&h->reg_used, __ATOMIC_ACQUIRE);
	if (used > d->rb->reg_size)
		used = d->rb->reg_size;
	const char *base = (const char *)h + d->rb->reg_off;
	struct ctl_log_entry e;
	while (ctl_log_next(base, used, &d->reg_pos, &e) > 0) {
		if (e.kind != 1 || e.n != 4 || e.id == 0 || event_by_id(d, e.id))
			continue;
		struct fs_dec_event ev = { .id = e.id };
		if (sig_parse(e.s[2], ev.fields, SIG_FIELDS_MAX, &ev.nfields) < 0)
			continue;
		if (d->nev == d->cap) {
			size_t cap = d->cap ? d->cap * 2 : 32;
			struct fs_dec_event *nv = realloc(d->ev, cap * sizeof(*nv));
			if (!nv)
				return;
			d->ev = nv;
			d->cap = cap;
		}
		ev.provider = strdup(e.s[0]);
		ev.name = strdup(e.s[1]);
		ev.signature = strdup(e.s[2]);
		if (!ev.provider || !ev.name || !ev.signature) {
			free(ev.provider);
			free(ev.name);
			free(ev.signature);
			return;
		}
		d->ev[d->nev++] = ev;
	}
}

int fs_dec_payload_size(void *arg, uint32_t id, const char *payload, size_t avail, size_t *ret)
{
	struct fs_dec_event *e = event_by_id(arg, id);
	if (!e)
		return -EBADMSG;
	return sig_record_size(e->fields, e->nfields, payload, avail, ret);
}

/* The program's threads and their names, for the comm column. */
struct threads {
	struct ctf_thread_name *v;
	char (*comm)[17];
	size_t n;
};

static void threads_scan(pid_t pid, struct threads *t)
{
	memset(t, 0, sizeof(*t));
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *dir = opendir(path);
	if (!dir)
		return;
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		char *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);
		if (*end || tid == 0 || tid > UINT32_MAX)
			continue;
		char cpath[96], comm[64] = "";
		snprintf(cpath, sizeof(cpath), "%s/%lu/comm", path, tid);
		FILE *f = fopen(cpath, "re");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		if (!comm[0])
			continue;
		if (t->n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct ctf_thread_name *nv = realloc(t->v, nc * sizeof(*nv));
			if (!nv)
				break;
			t->v = nv;
			char(*nc_comm)[17] = realloc(t->comm, nc * sizeof(*nc_comm));
			if (!nc_comm)
				break;
			t->comm = nc_comm;
			cap = nc;
		}
		snprintf(t->comm[t->n], sizeof(t->comm[0]), "%s", comm);
		t->v[t->n].tid = (uint32_t)tid;
		t->n++;
	}
	closedir(dir);
	for (size_t i = 0; i < t->n; i++)
		t->v[i].comm = t->comm[i];
}

/* The metadata of the program's events as they are now, in memory. */
static int build_metadata(struct fs_dec *d, char **ret, size_t *ret_len)
{
	struct clk_sample c1;
	struct clk_calib cal;
	clk_sample(d->clock, &c1);
	clk_calibrate(d->clock, &d->c0, &c1, &cal);
	struct ctf_event_class *ev = calloc(d->nev ? d->nev : 1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	for (size_t i = 0; i < d->nev; i++) {
		ev[i].id = d->ev[i].id;
		ev[i].provider = d->ev[i].provider;
		ev[i].name = d->ev[i].name;
		ev[i].signature = d->ev[i].signature;
	}
	struct threads th;
	threads_scan(d->pid, &th);
	char host[256] = "localhost";
	gethostname(host, sizeof(host) - 1);
	struct ctf_env_kv env[] = {
		{ "ringtrace_mode", d->rb->mode == RINGTRACE__MODE_OVERWRITE ? "overwrite" : "discard", 0 },
		{ "ringtrace_clock", d->clock == RINGTRACE__CLOCK_TSC ? "tsc" : "monotonic", 0 },
		{ "ringtrace_subbuf_size", NULL, (int64_t)(d->rb->sb_mask + 1) },
		{ "ringtrace_subbuf_count", NULL, (int64_t)1 << d->rb->nsb_shift },
		{ "ringtrace_attached", NULL, 1 },
	};
	struct ctf_trace_desc t = { 0 };
	memcpy(t.uuid, d->uuid, 16);
	t.clock.freq = cal.freq;
	t.clock.offset_s = cal.offset_s;
	t.clock.offset = cal.offset;
	memcpy(t.clock.uuid, d->uuid, 16);
	t.hostname = host;
	t.procname = d->comm;
	t.tracer_version = RINGTRACE_VERSION;
	t.threads = th.v;
	t.n_threads = th.v ? th.n : 0;
	t.vpid = d->pid;
	t.env = env;
	t.n_env = sizeof(env) / sizeof(env[0]);
	t.events = ev;
	t.n_events = d->nev;
	int r = ctf_metadata_build(&t, ret, ret_len);
	free(th.v);
	free(th.comm);
	free(ev);
	return r;
}

/* Room for one more packet at v->v[v->n] (zeroed, not counted yet). */
static struct fs_pkt *pkts_room(struct fs_pkts *v)
{
	if (v->n == v->cap) {
		size_t nc = v->cap ? v->cap * 2 : 16;
		struct fs_pkt *nv = realloc(v->v, nc * sizeof(*nv));
		if (!nv)
			return NULL;
		v->v = nv;
		v->cap = nc;
	}
	struct fs_pkt *p = &v->v[v->n];
	memset(p, 0, sizeof(*p));
	return p;
}

int fs_pkts_add(struct fs_pkts *v, const struct rb_packet *pkt, uint64_t skip, int peek)
{
	struct fs_pkt *p = pkts_room(v);
	if (!p || !(p->data = malloc(pkt->len)))
		return -ENOMEM;
	memcpy(p->data, pkt->data, pkt->len);
	p->len = pkt->len;
	p->cpu = pkt->cpu;
	memcpy(&p->seq, pkt->data + PKT_OFF(packet_seq_num), 8);
	p->skip = skip;
	p->peek = peek;
	v->n++;
	return 0;
}

/* A packet read in place (the region is mapped for as long as v lives). */
static int pkts_borrow(struct fs_pkts *v, const char *data, size_t len, uint32_t cpu)
{
	struct fs_pkt *p = pkts_room(v);
	if (!p)
		return -ENOMEM;
	p->data = (char *)data;
	p->len = len;
	p->cpu = cpu;
	p->borrowed = 1;
	v->n++;
	return 0;
}

void fs_pkts_free(struct fs_pkts *v)
{
	for (size_t i = 0; i < v->n; i++)
		if (!v->v[i].borrowed)
			free(v->v[i].data);
	free(v->v);
	memset(v, 0, sizeof(*v));
}

/*
 * One CPU's packets, one at a time: the reader loads the current packet of
 * every stream it merges, so merging all packets in one reader would hold
 * all of them; here each CPU has a reader over its current packet only,
 * and the CPUs are merged by time above it, ties going to the lower CPU
 * as the one reader orders its files (the packets were added CPU by CPU).
 */
struct cpu_iter {
	struct fs_pkt *pkt;          /* its packets: pkt[0 .. n) */
	size_t n, next;
	struct fs_pkt *cur;          /* the one t reads */
	struct rd_trace *t;
	struct rd_item it;
	int have;                    /* `it` is this CPU's next event */
};

/* The next event of the CPU (opening its next packets as needed). */
static void iter_advance(struct cpu_iter *c, const struct rd_meta *m)
{
	c->have = 0;
	for (;;) {
		if (c->t) {
			struct rd_item it;
			int k;
			while ((k = rd_trace_next(c->t, &it)) > 0) {
				if (it.kind != RD_ITEM_EVENT)
					continue; /* losses: the overflow file counts them */
				if (c->cur->seen++ < c->cur->skip)
					continue; /* printed from an earlier peek */
				if (!strcmp(it.ec->name, "ringtrace:thread") ||
				    !strcmp(it.ec->name, "ringtrace:thread_name"))
					continue;
				c->it = it;
				c->have = 1;
				return;
			}
			rd_trace_close(c->t);
			c->t = NULL;
		}
		if (c->next == c->n)
			return;
		struct fs_pkt *p = &c->pkt[c->next++];
		c->cur = p;
		struct rd_mem_stream ms = { "stream", p->data, p->len };
		char err[256];
		if (rd_trace_open_model(m, &ms, 1, &c->t, err, sizeof(err)) < 0)
			c->t = NULL; /* a damaged packet: the next one */
	}
}

/*
 * Timed events first, by the clock's raw value: every CPU of one ring has
 * the same clock, and its values order the events exactly. Not by ns: the
 * metadata of each read calibrates the clock anew (build_metadata()), so
 * two events of different CPUs a cycle apart could share a ns in one read
 * and not in the next, and two reads of a quiet ring printed them in
 * different orders. Equal: the earlier CPU, which the caller tries first.
 */
static int iter_before(const struct cpu_iter *a, const struct cpu_iter *b)
{
	if (a->it.ns_ok != b->it.ns_ok)
		return a->it.ns_ok;
	return a->it.ns_ok && a->it.cycles < b->it.cycles;
}

int fs_dec_print(struct fs_dec *d, struct fs_pkts *v, FILE *out)
{
	if (v->n == 0)
		return 0;
	char *meta = NULL;
	size_t mlen = 0;
	int r = build_metadata(d, &meta, &mlen);
	if (r < 0)
		return r;
	struct rd_trace *base = NULL;
	struct cpu_iter *ci = calloc(d->rb->ncpus, sizeof(*ci));
	char err[512];
	if (!ci) {
		r = -ENOMEM;
		goto out;
	}
	/* The model, parsed once: every packet's reader borrows it. */
	if (rd_trace_open_mem(meta, mlen, NULL, 0, &base, err, sizeof(err)) < 0) {
		r = -EBADMSG;
		goto out;
	}
	const struct rd_meta *m = rd_trace_meta(base);
	for (size_t i = 0; i < v->n; i++) {
		struct cpu_iter *c = &ci[v->v[i].cpu < d->rb->ncpus ? v->v[i].cpu : 0];
		if (!c->pkt)
			c->pkt = &v->v[i];
		c->n++;
	}
	for (uint32_t c = 0; c < d->rb->ncpus; c++)
		iter_advance(&ci[c], m);
	struct ctf_buf line;
	ctf_buf_init(&line);
	for (;;) {
		struct cpu_iter *best = NULL;
		for (uint32_t c = 0; c < d->rb->ncpus; c++)
			if (ci[c].have && (!best || iter_before(&ci[c], best)))
				best = &ci[c];
		if (!best)
			break;
		ctf_buf_reset(&line);
		rd_format_item(&line, &best->it);
		ctf_buf_putc(&line, '\n');
		if (!line.err && fwrite(line.data, 1, line.len, out) != line.len) {
			r = -EPIPE;
			break;
		}
		iter_advance(best, m);
	}
	ctf_buf_free(&line);
out:
	for (uint32_t c = 0; ci && c < d->rb->ncpus; c++)
		if (ci[c].t)
			rd_trace_close(ci[c].t);
	free(ci);
	if (base)
		rd_trace_close(base);
	free(meta);
	return r;
}

int fs_region_copy(struct fs_dec *d, struct fs_pkts *v)
{
	struct ringtrace__rb *rb = d->rb;
	uint64_t sb = rb->sb_mask + 1, buf = rb->buf_mask + 1;
	char *copy = malloc(sb);
	if (!copy)
		return -ENOMEM;
	uint64_t end_ts = ringtrace__now(rb);
	/* A consumer (trace_pipe, show, record -p) zeroes what it takes:
	 * with one there, everything is copied. Pairs with the CAS of
	 * ctl_ring_claim_reader(); one claiming later, while we read, is
	 * the race docs/mount.md names (the reader is bounds-checked). */
	int in_place = __atomic_load_n(&rb->hdr->reader_pid, __ATOMIC_ACQUIRE) == 0;
	int r = 0;
	for (uint32_t c = 0; c < rb->ncpus && r == 0; c++) {
		struct ringtrace__rb_percpu *pc = &rb->cpu[c];
		/* Pairs with the writers' reserve, as in rb_reader_seek_oldest(). */
		uint64_t pos = __atomic_load_n(&pc->ctl->state, __ATOMIC_ACQUIRE) & RINGTRACE__POS_MASK;
		/* From the oldest slot that can still be whole to the one
		 * holding pos (open, or the last one closed by a flush). */
		uint64_t last = (pos & rb->sb_mask) ? pos & ~rb->sb_mask : pos - sb;
		uint64_t first = last + sb >= buf ? last + sb - buf : 0;
		if (pos == 0)
			continue;
		for (uint64_t p = first; p <= last && r == 0; p += sb) {
			const struct ringtrace__rb_slot *s = &pc->slots[rb_slot_of(rb, p)];
			/* Pairs with the writer's CAS that opens the slot and the
			 * reader's release store that hands it back (rb_read.c). */
			uint64_t ow = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
			if (RINGTRACE__OWN_LAP(ow) != rb_lap_tag(rb, p) || RINGTRACE__OWN_READ(ow))
				continue; /* taken by a reader, or overwritten */
			uint64_t used = pos - p < sb ? pos - p : sb;
			const char *src = pc->data + (p & rb->buf_mask);
			if (in_place && used == sb && rb_lap_committed(rb, s, p) == sb) {
				/* Closed and complete: its header says how long. */
				uint32_t magic;
				uint64_t content;
				memcpy(&magic, src, 4);
				memcpy(&content, src + PKT_OFF(content_size), 8);
				if (magic != CTF_PACKET_MAGIC || content & 7 || content / 8 < RINGTRACE__PKT_HDR ||
				    content / 8 > sb)
					continue;
				r = pkts_borrow(v, src, content / 8, c);
				continue;
			}
			memcpy(copy, src, used);
			uint32_t magic;
			memcpy(&magic, copy, 4);
			if (magic != CTF_PACKET_MAGIC || used < RINGTRACE__PKT_HDR)
				continue;
			uint64_t content;
			memcpy(&content, copy + PKT_OFF(content_size), 8);
			uint64_t bound = used < sb || content / 8 < RINGTRACE__PKT_HDR || content / 8 > used ? used
													 : content / 8;
			size_t keep = rb_walk_records(copy, bound, fs_dec_payload_size, d, NULL);
			uint64_t bits = keep * 8;
			memcpy(copy + PKT_OFF(content_size), &bits, 8);
			memcpy(copy + PKT_OFF(packet_size), &bits, 8);
			uint64_t tb, te;
			memcpy(&tb, copy + PKT_OFF(timestamp_begin), 8);
			memcpy(&te, copy + PKT_OFF(timestamp_end), 8);
			if (te < tb)
				memcpy(copy + PKT_OFF(timestamp_end), &end_ts, 8); /* still open */
			struct rb_packet pkt = { .data = copy, .len = keep, .cpu = c };
			r = fs_pkts_add(v, &pkt, 0, 0);
		}
	}
	free(copy);
	return r;
}
