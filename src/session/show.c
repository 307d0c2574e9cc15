/*
 * show.c - `ringtrace show PID`: `record -p` handing events to the caller
 * instead of writing them. Each round it takes the closed sub-buffers and
 * peeks at the open ones (rb_reader_peek), decodes them against metadata
 * generated in memory, and passes the events it has not passed yet to the
 * caller, sorted by time within the round. Losses are passed from the
 * program's counters as they grow.
 *
 * One round per 100 ms or closed sub-buffer, on the caller's thread; the
 * caller prints (src/cli/cmd_record.c, in `dump`'s format).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/packet_layout.h"
#include "read/reader.h"
#include "session/session_int.h"

struct show_pkt {
	char *data;
	size_t len;
	uint32_t cpu;
	uint64_t seq;
	uint64_t skip;               /* event items already printed */
	int peek;
	uint64_t seen;               /* event items in it */
};

struct show_cpu {
	uint64_t seq;                /* packet partly printed (peeked), or ~0 */
	uint64_t printed;
};

static int show_add(struct show_pkt **v, size_t *n, size_t *cap, const struct rb_packet *pkt, int peek,
		    struct show_cpu *sc)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct show_pkt *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	struct show_pkt *p = &(*v)[*n];
	p->data = malloc(pkt->len);
	if (!p->data)
		return -ENOMEM;
	memcpy(p->data, pkt->data, pkt->len);
	p->len = pkt->len;
	p->cpu = pkt->cpu;
	uint64_t seq;
	memcpy(&seq, pkt->data + PKT_OFF(packet_seq_num), 8);
	p->seq = seq;
	p->skip = sc->seq == seq ? sc->printed : 0;
	p->peek = peek;
	p->seen = 0;
	(*n)++;
	return 0;
}

static void show_lost(struct sess *r, const struct sess_show_opts *so, uint64_t *prev)
{
	for (uint32_t c = 0; c < r->rb->ncpus; c++) {
		struct ringtrace__rb_cpu *cc = r->rb->cpu[c].ctl;
		uint64_t v[3] = { cc->lost_full, cc->lost_overwrite, cc->lost_too_big + cc->lost_nocpu };
		static const char *const why[3] = { "buffer full", "overwritten", "too big or no rseq" };
		for (int k = 0; k < 3; k++) {
			if (v[k] > prev[c * 3 + k] && so->on_lost)
				so->on_lost(so->arg, c, v[k] - prev[c * 3 + k], why[k]);
			prev[c * 3 + k] = v[k];
		}
	}
}

static int show_round(struct sess *r, const struct sess_show_opts *so, struct show_cpu *sc)
{
	struct show_pkt *v = NULL;
	size_t n = 0, cap = 0;
	struct rb_packet pkt;
	uint64_t end_ts = ringtrace__now(r->rb);
	int ret = 0;
	for (uint32_t c = 0; c < r->rb->ncpus && ret == 0; c++) {
		while (ret == 0 && rb_reader_get(r->reader, c, &pkt) > 0) {
			ret = show_add(&v, &n, &cap, &pkt, 0, &sc[c]);
			rb_reader_put(r->reader, c);
		}
		if (ret == 0 && rb_reader_peek(r->reader, c, sess_payload_size, r, end_ts, &pkt) > 0)
			ret = show_add(&v, &n, &cap, &pkt, 1, &sc[c]);
	}
	if (n == 0 || ret < 0)
		goto out;
	char *meta = NULL;
	size_t mlen = 0;
	r->meta_mem = open_memstream(&meta, &mlen);
	if (!r->meta_mem) {
		ret = -ENOMEM;
		goto out;
	}
	sess_write_metadata(r, 0);
	fclose(r->meta_mem);
	r->meta_mem = NULL;
	struct rd_mem_stream *ms = calloc(n, sizeof(*ms));
	char (*names)[32] = calloc(n, sizeof(*names));
	struct rd_trace *t = NULL;
	char err[512];
	if (!ms || !names) {
		ret = -ENOMEM;
	} else {
		for (size_t i = 0; i < n; i++) {
			snprintf(names[i], sizeof(names[i]), "stream_%u.%zu", v[i].cpu, i);
			ms[i].name = names[i];
			ms[i].data = v[i].data;
			ms[i].size = v[i].len;
		}
		if (rd_trace_open_mem(meta, mlen, ms, n, &t, err, sizeof(err)) < 0) {
			sess_log(SESS_SRC_SHOW, "cannot decode the events of process %d: %s\n", (int)r->child, err);
			ret = -EBADMSG;
		}
	}
	struct rd_item it;
	while (t && rd_trace_next(t, &it) > 0) {
		if (it.kind != RD_ITEM_EVENT)
			continue; /* losses come from the program's counters */
		struct show_pkt *p = &v[it.stream];
		if (p->seen++ < p->skip)
			continue;
		if (!strcmp(it.ec->name, "ringtrace:thread") || !strcmp(it.ec->name, "ringtrace:thread_name"))
			continue;
		if (so->on_item && (ret = so->on_item(so->arg, &it)) < 0)
			break;
	}
	if (t)
		rd_trace_close(t);
	free(ms);
	free(names);
	free(meta);
	for (size_t i = 0; i < n; i++) {
		struct show_cpu *c = &sc[v[i].cpu];
		if (v[i].peek) {
			c->seq = v[i].seq;
			c->printed = v[i].seen > v[i].skip ? v[i].seen : v[i].skip;
		} else if (c->seq == v[i].seq) {
			c->seq = ~UINT64_C(0);
			c->printed = 0;
		}
	}
	if (ret == 0 && so->on_round_end)
		ret = so->on_round_end(so->arg);
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].data);
	free(v);
	return ret;
}

int sess_show(const struct sess_show_opts *so)
{
	/* As `record -p` attaches (attach.c). */
	struct sess_opts o = { .sz = sizeof(o), .attach = so->target, .stop = so->stop };
	struct sess rr, *r = &rr;
	sess_init(r, &o);
	int status;
	struct show_cpu *sc = NULL;
	uint64_t *lost = NULL;
	if ((status = sess_live_attach(r, SESS_SRC_SHOW)) < 0)
		goto out;
	sc = calloc(r->rb->ncpus, sizeof(*sc));
	lost = calloc(r->rb->ncpus * 3, sizeof(*lost));
	status = -ENOMEM;
	if (!sc || !lost)
		goto out;
	for (uint32_t c = 0; c < r->rb->ncpus; c++) {
		sc[c].seq = ~UINT64_C(0);
		struct ringtrace__rb_cpu *cc = r->rb->cpu[c].ctl;
		lost[c * 3] = cc->lost_full;
		lost[c * 3 + 1] = cc->lost_overwrite;
		lost[c * 3 + 2] = cc->lost_too_big + cc->lost_nocpu;
	}
	sess_log(SESS_SRC_SHOW, "following '%s' (pid %d); Ctrl-C stops\n", r->comm, (int)r->child);
	uint64_t last_scan = 0;
	int exited = 0;
	while (!sess_stopped(r)) {
		sess_read_registry(r);
		uint64_t now = sess_mono_ms();
		if (now - last_scan >= 200) {
			sess_scan_threads(r);
			last_scan = now;
		}
		if (show_round(r, so, sc) == -EPIPE)
			break; /* the reader of our output went away */
		show_lost(r, so, lost);
		if (!sess_process_alive(r)) {
			exited = 1;
			break;
		}
		rb_reader_wait(r->reader, 100);
	}
	if (exited) {
		/* No writer is left: what the last round did not see. */
		show_round(r, so, sc);
		sess_log(SESS_SRC_SHOW, "process %d exited\n", (int)r->child);
	}
	status = 0;
out:
	sess_live_detach(r, SESS_SRC_SHOW);
	free(sc);
	free(lost);
	sess_cleanup(r);
	return status;
}

