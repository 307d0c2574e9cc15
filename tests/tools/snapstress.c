/*
 * snapstress - snapshots taken back to back while a program writes: no
 * event lost, none in two snapshots, writers never made to wait.
 *
 *   snapstress PID THREADS EVENTS [INTERVAL_US]
 *
 * PID runs tests/e2e/progs/snapwriter THREADS EVENTS with snapshots
 * enabled and tracing on. This tool takes a snapshot every INTERVAL_US
 * (default 1000), reads the swapped-out buffers
 * straight from shared memory (no trace written: a snapshot must be cheap
 * enough to take every millisecond), collects every snap:ev { t, seq } and
 * gives the buffers back. It stops once it has seen EVENTS events of every
 * thread or after 120 s, takes one last snapshot, then checks:
 *   - every (t, seq) for seq < EVENTS seen exactly once;
 *   - no event counted as lost in any snapshot's buffers;
 * and prints the number of snapshots and the latency of the swap request
 * (min, median, max), for the test log. Exit 0 if the checks pass.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl_client.h"
#include "ringbuf/rb.h"

static uint32_t ev_id;
static uint32_t nthreads;
static uint64_t nevents;
static uint8_t *seen;                /* nthreads x nevents counts */
static uint64_t dups, strays, total;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Payload sizes: thread (u32), thread_name (u32 + string), snap:ev. */
static int payload_size(void *arg, uint32_t id, const char *payload, size_t avail, size_t *ret)
{
	(void)arg;
	if (id == RINGTRACE__ID_THREAD) {
		*ret = 4;
	} else if (id == RINGTRACE__ID_THREAD_NAME) {
		const char *nul = avail > 4 ? memchr(payload + 4, 0, avail - 4) : NULL;
		if (!nul)
			return -EBADMSG;
		*ret = (size_t)(nul - payload) + 1;
	} else if (id == ev_id && ev_id) {
		*ret = 12;
	} else {
		return -EBADMSG;
	}
	return *ret <= avail ? 0 : -EBADMSG;
}

static int walk(const struct rb_packet *pkt)
{
	size_t off = RINGTRACE__PKT_HDR;
	while (off + 4 <= pkt->len) {
		const char *p = pkt->data + off;
		uint32_t id, hl;
		if ((unsigned char)p[0] == RINGTRACE__EV_ID_EXT) {
			if (off + RINGTRACE__EV_EXTENDED > pkt->len)
				return -1;
			memcpy(&id, p + 1, 4);
			hl = RINGTRACE__EV_EXTENDED;
		} else {
			uint32_t w;
			memcpy(&w, p, 4);
			id = w & 31;
			hl = RINGTRACE__EV_COMPACT;
		}
		if (id == 0)
			break; /* padding: the rest of the packet */
		size_t n;
		if (payload_size(NULL, id, p + hl, pkt->len - off - hl, &n) < 0)
			return -1;
		if (id == ev_id) {
			uint32_t t;
			uint64_t seq;
			memcpy(&t, p + hl, 4);
			memcpy(&seq, p + hl + 4, 8);
			total++;
			if (t >= nthreads || seq >= nevents)
				strays++;
			else if (seen[(uint64_t)t * nevents + seq]++)
				dups++;
		}
		off += hl + n;
	}
	return 0;
}

static uint32_t find_event(const struct ringtrace__rb *rb)
{
	const char *base = (const char *)rb->hdr + rb->reg_off;
	uint64_t used = __atomic_load_n(&rb->hdr->reg_used, __ATOMIC_ACQUIRE), pos = 0;
	if (used > rb->reg_size)
		used = rb->reg_size;
	struct ctl_log_entry e;
	while (ctl_log_next(base, used, &pos, &e) > 0)
		if (e.kind == 1 && e.n == 4 && !strcmp(e.s[0], "snap") && !strcmp(e.s[1], "ev"))
			return e.id;
	return 0;
}

static uint64_t lost_in(const struct ringtrace__rb *rb)
{
	uint64_t l = 0;
	for (uint32_t c = 0; c < rb->ncpus; c++) {
		const struct ringtrace__rb_cpu *x = rb->cpu[c].ctl;
		l += x->lost_full + x->lost_overwrite + x->lost_too_big + x->lost_nocpu;
	}
	return l;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: snapstress PID THREADS EVENTS [INTERVAL_US]\n");
		return 2;
	}
	pid_t pid = (pid_t)atoi(argv[1]);
	nthreads = (uint32_t)atoi(argv[2]);
	nevents = strtoull(argv[3], NULL, 10);
	long interval_us = argc > 4 ? atol(argv[4]) : 1000;
	seen = calloc((size_t)nthreads * nevents, 1);
	if (!seen)
		return 2;
	char err[512], msg[CTL_MSG];
	struct ctl_handle h;
	if (ctl_open(pid, &h, CTL_OPEN_WRITE, err, sizeof(err)) < 0) {
		fprintf(stderr, "snapstress: %s\n", err);
		return 2;
	}
	size_t cap = 1 << 16, nlat = 0;
	uint64_t *lat = malloc(cap * sizeof(*lat)), *swap = malloc(cap * sizeof(*lat));
	uint64_t *attach = malloc(cap * sizeof(*lat)), *grace = malloc(cap * sizeof(*lat));
	if (!lat || !swap || !attach || !grace)
		return 2;
	uint64_t lost = 0, snaps = 0, t_end = now_ns() + 120 * UINT64_C(1000000000);
	int last = 0, failed = 0;
	while (!failed) {
		if (!last && (total >= (uint64_t)nthreads * nevents || now_ns() > t_end))
			last = 1; /* one more, for what came meanwhile */
		uint64_t t0 = now_ns();
		int k = ctl_request(&h, CTL_OP_SNAPSHOT, (uint64_t)getpid(), 0, NULL, 0, 5000, msg, sizeof(msg));
		uint64_t d = now_ns() - t0;
		if (k < 0) {
			fprintf(stderr, "snapstress: snapshot: %s\n", *msg ? msg : strerror(-k));
			failed = 1;
			break;
		}
		if (nlat < cap) {
			lat[nlat] = d;
			swap[nlat] = h.b->snap_swap_ns;
			attach[nlat] = h.b->snap_attach_ns;
			grace[nlat] = h.b->snap_grace_ns;
			nlat++;
		}
		snaps++;
		struct ctl_ring ring;
		struct rb_reader *rd = NULL;
		if (ctl_snap_open(&h, &ring, err, sizeof(err)) < 0 || rb_reader_new(ring.rb, &rd) < 0) {
			fprintf(stderr, "snapstress: %s\n", err);
			failed = 1;
			break;
		}
		if (!ev_id)
			ev_id = find_event(ring.rb);
		rb_reader_seek_oldest(rd);
		struct rb_packet pkt;
		for (uint32_t c = 0; c < ring.rb->ncpus; c++) {
			while (rb_reader_get(rd, c, &pkt) > 0) {
				if (walk(&pkt) < 0)
					failed = 1;
				rb_reader_put(rd, c);
			}
			while (rb_reader_salvage(rd, c, payload_size, NULL, UINT64_MAX, &pkt) > 0)
				if (walk(&pkt) < 0)
					failed = 1;
		}
		lost += lost_in(ring.rb);
		rb_reader_free(rd);
		ctl_ring_close(&ring);
		k = ctl_request(&h, CTL_OP_SNAP_RELEASE, 0, 0, NULL, 0, 5000, msg, sizeof(msg));
		if (k < 0) {
			fprintf(stderr, "snapstress: release: %s\n", *msg ? msg : strerror(-k));
			failed = 1;
		}
		if (last)
			break;
		struct timespec sl = { 0, interval_us * 1000 };
		nanosleep(&sl, NULL);
	}
	uint64_t missing = 0;
	for (uint64_t i = 0; i < (uint64_t)nthreads * nevents; i++)
		missing += seen[i] == 0;
	qsort(lat, nlat, sizeof(*lat), cmp_u64);
	qsort(swap, nlat, sizeof(*lat), cmp_u64);
	qsort(attach, nlat, sizeof(*lat), cmp_u64);
	qsort(grace, nlat, sizeof(*lat), cmp_u64);
	printf("snapshots %llu events %llu missing %llu duplicated %llu stray %llu lost %llu\n",
	       (unsigned long long)snaps, (unsigned long long)total, (unsigned long long)missing,
	       (unsigned long long)dups, (unsigned long long)strays, (unsigned long long)lost);
	if (nlat)
	{
		printf("swap request round trip: min %.1f us, median %.1f us, max %.1f us\n", lat[0] / 1e3,
		       lat[nlat / 2] / 1e3, lat[nlat - 1] / 1e3);
		/* Measured in the program (ctl.h): the swap proper, the
		 * registry attach before it, the grace period after it. */
		printf("in the program: swap min %.2f us, median %.2f us, max %.2f us; attach median %.1f us; grace period median %.1f us, max %.1f us\n",
		       swap[0] / 1e3, swap[nlat / 2] / 1e3, swap[nlat - 1] / 1e3, attach[nlat / 2] / 1e3,
		       grace[nlat / 2] / 1e3, grace[nlat - 1] / 1e3);
	}
	ctl_close(&h);
	free(lat);
	free(swap);
	free(attach);
	free(grace);
	free(seen);
	int ok = !failed && !missing && !dups && !strays && !lost && ev_id;
	printf("%s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
