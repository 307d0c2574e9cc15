/*
 * fs_pipe.c - `trace_pipe` and `snapshot_pipe` of `ringtrace mount`: the
 * consuming reads (ftrace's semantics). fs_ops.c calls it from a FUSE
 * worker thread per read; one open file is read by one thread at a time.
 *
 * trace_pipe is `ringtrace show` without switching tracing on: the open
 * file is the ring's one reader (ctl_ring_claim_reader, so `show` or
 * `record -p` running meanwhile is EBUSY), takes the closed sub-buffers,
 * peeks at the open ones, and blocks while there is nothing new, waking
 * on the writers' futex or every 100 ms to notice an interrupted reader,
 * an unmount, a program that exited or buffers that were replaced (a
 * program with no buffers yet is waited for). snapshot_pipe takes what
 * the held snapshot holds, then reads as the end of the file. A round
 * takes a few sub-buffers per CPU, so that its copies stay small.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fs.h"

/* Closed sub-buffers taken per CPU in one round of trace_pipe. */
#define ROUND_PKTS 4

struct fs_pipe_cpu {
	uint64_t seq;                /* packet partly printed (peeked), or ~0 */
	uint64_t printed;
};

struct fs_pipe {
	pthread_mutex_t lock;
	int snap;
	struct ctl_handle h;
	struct ctl_ring ring;
	int have_ring, claimed, drained;
	struct rb_reader *reader;
	struct fs_dec dec;
	struct fs_pipe_cpu *sc;
	char *out;                   /* text not yet handed to the reader */
	size_t out_len, out_off;
};

static void detach(struct fs_pipe *p)
{
	if (p->claimed)
		ctl_ring_release_reader(p->ring.rb);
	p->claimed = 0;
	rb_reader_free(p->reader);
	p->reader = NULL;
	fs_dec_free(&p->dec);
	free(p->sc);
	p->sc = NULL;
	if (p->have_ring)
		ctl_ring_close(&p->ring);
	p->have_ring = 0;
}

/* Map the buffers (live or held) and become their reader. */
static int attach(struct fs_pipe *p)
{
	char err[512];
	int r = p->snap ? ctl_snap_open(&p->h, &p->ring, err, sizeof(err))
			: ctl_ring_open(&p->h, &p->ring, err, sizeof(err));
	if (r < 0)
		return r;
	p->have_ring = 1;
	/* The one consumer, of the live buffers as of a held snapshot (the
	 * snapshot file then copies what it reads). */
	r = ctl_ring_claim_reader(p->ring.rb, err, sizeof(err));
	if (r < 0) {
		detach(p);
		return r;
	}
	p->claimed = 1;
	r = rb_reader_new(p->ring.rb, &p->reader);
	p->sc = calloc(p->ring.rb->ncpus, sizeof(*p->sc));
	if (r < 0 || !p->sc) {
		detach(p);
		return -ENOMEM;
	}
	for (uint32_t c = 0; c < p->ring.rb->ncpus; c++)
		p->sc[c].seq = ~UINT64_C(0);
	rb_reader_seek_oldest(p->reader);
	char comm[17];
	memcpy(comm, p->h.b->comm, 16);
	comm[16] = 0;
	fs_dec_init(&p->dec, p->h.pid, comm, p->ring.rb);
	return 0;
}

int fs_pipe_open(pid_t pid, int snap, struct fs_pipe **ret)
{
	struct fs_pipe *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	p->snap = snap;
	char err[512];
	int r = ctl_open(pid, &p->h, CTL_OPEN_WRITE, err, sizeof(err));
	if (r < 0) {
		free(p);
		return r;
	}
	/* The live buffers may come later (trace_pipe waits for them); a
	 * reader already there is EBUSY now. */
	if (snap || (p->h.b->session != CTL_SESSION_NONE && p->h.b->ring_fd >= 0)) {
		r = attach(p);
		if (r == -ENOENT && snap)
			p->drained = 1; /* no snapshot held: an empty file, as `snapshot` */
		else if (r < 0 && (snap || r == -EBUSY || r == -EPERM)) {
			ctl_close(&p->h);
			free(p);
			return r;
		}
	}
	*ret = p;
	return 0;
}

void fs_pipe_close(struct fs_pipe *p)
{
	if (!p)
		return;
	detach(p);
	ctl_close(&p->h);
	free(p->out);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* One round: what the buffers hold that was not printed yet, as text in
 * p->out. `all`: no writer runs (held snapshot), take everything, the
 * open sub-buffers too. The packets taken, peeks not counted (0: none),
 * or -errno. */
static int round_text(struct fs_pipe *p, int all)
{
	struct ringtrace__rb *rb = p->ring.rb;
	struct fs_pkts v = { 0 };
	struct rb_packet pkt;
	uint64_t end_ts = ringtrace__now(rb);
	int r = 0;
	fs_dec_registry(&p->dec);
	for (uint32_t c = 0; c < rb->ncpus && r == 0; c++) {
		struct fs_pipe_cpu *sc = &p->sc[c];
		if (all) {
			for (unsigned k = 0; r == 0 && k < ROUND_PKTS &&
			     rb_reader_salvage(p->reader, c, fs_dec_payload_size, &p->dec, end_ts, &pkt) > 0; k++)
				r = fs_pkts_add(&v, &pkt, 0, 0);
			continue;
		}
		/* A few closed sub-buffers per CPU a round, so that a round's
		 * copies stay small after a long wait; the next read takes
		 * the rest at once. Only when they are all taken is the open
		 * one peeked at. */
		unsigned taken = 0;
		while (r == 0 && taken < ROUND_PKTS && rb_reader_get(p->reader, c, &pkt) > 0) {
			r = fs_pkts_add(&v, &pkt, 0, 0);
			if (r == 0 && v.v[v.n - 1].seq == sc->seq)
				v.v[v.n - 1].skip = sc->printed;
			rb_reader_put(p->reader, c);
			taken++;
		}
		if (r == 0 && taken < ROUND_PKTS &&
		    rb_reader_peek(p->reader, c, fs_dec_payload_size, &p->dec, end_ts, &pkt) > 0) {
			r = fs_pkts_add(&v, &pkt, 0, 1);
			if (r == 0 && v.v[v.n - 1].seq == sc->seq)
				v.v[v.n - 1].skip = sc->printed;
		}
	}
	if (r == 0 && v.n) {
		FILE *f = open_memstream(&p->out, &p->out_len);
		if (!f) {
			r = -ENOMEM;
		} else {
			r = fs_dec_print(&p->dec, &v, f);
			if (fclose(f) != 0 && r == 0)
				r = -ENOMEM;
			p->out_off = 0;
		}
		for (size_t i = 0; i < v.n; i++) {
			struct fs_pipe_cpu *sc = &p->sc[v.v[i].cpu];
			if (v.v[i].peek) {
				sc->seq = v.v[i].seq;
				sc->printed = v.v[i].seen > v.v[i].skip ? v.v[i].seen : v.v[i].skip;
			} else if (sc->seq == v.v[i].seq) {
				sc->seq = ~UINT64_C(0);
				sc->printed = 0;
			}
		}
	}
	size_t n = 0;
	for (size_t i = 0; i < v.n; i++)
		n += !v.v[i].peek;
	fs_pkts_free(&v);
	return r < 0 ? r : (int)(n > INT32_MAX ? INT32_MAX : n);
}

static int process_alive(const struct fs_pipe *p)
{
	return !ctl_is_stale(p->h.b) && ctl_proc_state(p->h.pid) != 'Z';
}

ssize_t fs_pipe_read(struct fs_pipe *p, char *buf, size_t size)
{
	/* libfuse cancels its workers when a signal stops the loop: this one
	 * finishes instead (within 100 ms, fs_stopping() says so), so that
	 * the blocked reader gets its end of file, not a dead connection,
	 * and the lock is never left held. */
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	pthread_mutex_lock(&p->lock);
	ssize_t ret = 0;
	for (;;) {
		if (p->out && p->out_off < p->out_len) {
			size_t n = p->out_len - p->out_off;
			if (n > size)
				n = size;
			memcpy(buf, p->out + p->out_off, n);
			p->out_off += n;
			ret = (ssize_t)n;
			break;
		}
		free(p->out);
		p->out = NULL;
		p->out_len = p->out_off = 0;
		if (p->snap) {
			if (p->drained)
				break;
			int r = round_text(p, 1);
			if (r < 0) {
				ret = r;
				break;
			}
			if (r == 0)
				p->drained = 1; /* every CPU's salvage has ended */
			continue;
		}
		int alive = process_alive(p);
		/* Buffers replaced (resized, freed and allocated again):
		 * follow the new ones. Pairs with the program's release
		 * increment of ring_gen (agent.c) after it published them. */
		if (p->have_ring && __atomic_load_n(&p->h.b->ring_gen, __ATOMIC_ACQUIRE) != p->ring.gen)
			detach(p);
		if (!p->have_ring && alive && p->h.b->session != CTL_SESSION_NONE && p->h.b->ring_fd >= 0) {
			int r = attach(p);
			if (r == -EBUSY || r == -EPERM) {
				ret = r;
				break;
			}
		}
		if (p->have_ring) {
			int r = round_text(p, 0);
			if (r < 0 && r != -EPIPE) {
				ret = r;
				break;
			}
			if (r > 0 || (p->out && p->out_len))
				continue; /* text, or more to take at once */
		}
		if (!alive || fs_stopping())
			break; /* the end of the file */
		if (fs_interrupted()) {
			ret = -EINTR;
			break;
		}
		if (p->reader) {
			rb_reader_wait(p->reader, 100);
		} else {
			struct timespec ts = { 0, 100000000 };
			nanosleep(&ts, NULL);
		}
	}
	pthread_mutex_unlock(&p->lock);
	pthread_setcancelstate(cancel, NULL);
	return ret;
}
