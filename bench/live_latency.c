/*
 * live_latency.c - how soon after `ringtrace enable PID EVENT` returns the
 * event is in the program's buffers. Built twice by bench/live_latency.sh:
 *
 *   live_latency_prog PERIOD_NS SECONDS CPU   (-DLIVE_LATENCY_PROG, linked
 *       with libringtrace.so): the traced program. Its main thread, pinned
 *       to CPU, reads CLOCK_MONOTONIC in a loop and every PERIOD_NS fires
 *       lat:tick { u64 seq; u64 ns; } with ns = that reading. A disabled
 *       tick costs the loop nothing but the flag check, so the first tick
 *       after the flag flips comes at most PERIOD_NS (plus the loop's own
 *       preemption) after it.
 *
 *   live_latency PID RINGTRACE TRIALS   (linked with libringtrace-core.a):
 *       the measuring controller. It maps the program's control block and
 *       buffers the way ctl_client.c does (it is not their reader: it only
 *       looks), and for each trial
 *         1. runs `RINGTRACE disable PID lat:tick`, waits until no CPU's
 *            write position moves for 2 ms, and notes every CPU's position;
 *         2. takes t_cmd (CLOCK_MONOTONIC), runs `RINGTRACE enable PID
 *            lat:tick` (fork, exec, waitpid) and takes t_ret right after
 *            waitpid returns;
 *         3. walks the records written from the noted positions on (packet
 *            headers, ringtrace:thread and :thread_name records, ticks;
 *            docs/design.md section 3) until it finds the first tick whose
 *            ns is after t_cmd, polling without sleeping (t_seen).
 *       The first tick's own timestamp (its record header: TSC, or
 *       CLOCK_MONOTONIC ns, low 27 bits in a compact header) is turned into
 *       CLOCK_MONOTONIC ns with a TSC calibration taken over the whole run
 *       (clk_sample at the start and the end, as the recorder does); the 27
 *       missing high bits are those that put it nearest the tick's ns
 *       field, which is read just before the tracepoint. So every time
 *       compared is on CLOCK_MONOTONIC, and the event time is the one the
 *       tracer itself gave the event.
 *
 * Figures, per trial (median and worst, in microseconds, printed as
 * `result NAME VALUE`):
 *   event_minus_return  t_event - t_ret, signed: negative means the event
 *                       was already in the buffer when enable returned
 *                       (the program applies the rule before it answers);
 *   wait_after_return   max(0, event_minus_return): how long a user who
 *                       starts looking when enable returns waits for it;
 *   cmd_to_event        t_event - t_cmd: the whole path, exec of the
 *                       command included;
 *   cmd_duration        t_ret - t_cmd;
 *   seen_after_return   t_seen - t_ret (our polling's view, an upper bound
 *                       of wait_after_return);
 *   record_minus_field  t_event - ns field: the probe's own cost plus the
 *                       calibration error (a sanity check, ~0).
 *
 * Load: the program spins one CPU for the whole run. The buffers are reset
 * (`RINGTRACE reset`) before a CPU's buffer could fill (discard mode, and
 * nobody reads them). Assumes the program is the only writer of its CPU's
 * buffer (one thread fires), which makes "committed bytes of the
 * sub-buffer cover the record" mean "the record is complete".
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#ifdef LIVE_LATENCY_PROG
/* ---- the traced program ------------------------------------------------------ */

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(lat, tick, RINGTRACE_U64(seq), RINGTRACE_U64(ns));

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: live_latency_prog PERIOD_NS SECONDS CPU\n");
		return 2;
	}
	uint64_t period = strtoull(argv[1], NULL, 10);
	double seconds = atof(argv[2]);
	int cpu = atoi(argv[3]);
	struct sigaction sa = { 0 };
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		fprintf(stderr, "live_latency_prog: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
	printf("live_latency_prog: pid %d ready\n", (int)getpid());
	fflush(stdout);
	uint64_t now = mono_ns(), end = now + (uint64_t)(seconds * 1e9), next = now, seq = 0, fired = 0;
	while (!stop && now < end) {
		now = mono_ns();
		if (now >= next) {
			ringtrace_tracepoint(lat, tick, seq, now);
			if (ringtrace_tracepoint_enabled(lat, tick))
				fired++;
			seq++;
			next = now + period;
		}
	}
	printf("live_latency_prog: done, %llu ticks, %llu while enabled\n", (unsigned long long)seq,
	       (unsigned long long)fired);
	return 0;
}

#else
/* ---- the controller ------------------------------------------------------------ */

#include <sys/wait.h>
#include <fcntl.h>

#include "common/clock.h"
#include "ctl/ctl_client.h"
#include "ringbuf/rb_lap.h"

static const char *rt_bin;
static pid_t target;
static char target_str[32];

/* Run `ringtrace CMD PID [ARG]`, its stdout to /dev/null; its exit status. */
static int run(const char *cmd, const char *arg)
{
	pid_t c = fork();
	if (c < 0)
		return -1;
	if (c == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 1);
		execl(rt_bin, rt_bin, cmd, target_str, arg, (char *)NULL);
		_exit(127);
	}
	int st;
	while (waitpid(c, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct cursor {
	uint64_t pos;                /* next record to look at */
};

static uint64_t state_pos(const struct ringtrace__rb *rb, uint32_t c)
{
	return __atomic_load_n(&rb->cpu[c].ctl->state, __ATOMIC_ACQUIRE) & RINGTRACE__POS_MASK;
}

/*
 * Look at the next complete record of CPU c at cur->pos. Returns 1 and the
 * tick's fields for a tick, 2 for another record (skipped), 0 when nothing
 * complete is there yet, -1 for a record we cannot parse.
 */
static int next_record(const struct ringtrace__rb *rb, uint32_t c, struct cursor *cur, uint32_t tick_id,
		       uint64_t *ret_ts, int *ret_ext, uint64_t *ret_ns)
{
	uint64_t sb = rb->sb_mask + 1;
	for (;;) {
		uint64_t p = cur->pos;
		if (p == state_pos(rb, c))
			return 0;
		uint64_t in = p & rb->sb_mask;
		if (in == 0) {
			cur->pos = (p + RINGTRACE__PKT_HDR) & RINGTRACE__POS_MASK;
			continue;
		}
		const struct ringtrace__rb_slot *s = &rb->cpu[c].slots[rb_slot_of(rb, p)];
		uint64_t done = rb_lap_committed(rb, s, p);
		const unsigned char *d = (const unsigned char *)rb->cpu[c].data + (p & rb->buf_mask);
		unsigned char b0 = __atomic_load_n(d, __ATOMIC_ACQUIRE);
		if (b0 == 0) {
			if (done == sb) { /* the closed sub-buffer's padding */
				cur->pos = ((p | rb->sb_mask) + 1) & RINGTRACE__POS_MASK;
				continue;
			}
			return 0;
		}
		uint32_t id = b0 & 31, hl = RINGTRACE__EV_COMPACT;
		uint64_t ts;
		int ext = 0;
		if (id == RINGTRACE__EV_ID_EXT) {
			memcpy(&id, d + 1, 4);
			memcpy(&ts, d + 5, 8);
			hl = RINGTRACE__EV_EXTENDED;
			ext = 1;
		} else {
			uint32_t w;
			memcpy(&w, d, 4);
			ts = w >> 5;
		}
		uint64_t len;
		if (id == RINGTRACE__ID_THREAD)
			len = hl + 4;
		else if (id == RINGTRACE__ID_THREAD_NAME)
			len = hl + 4 + strnlen((const char *)d + hl + 4, sb - in - hl - 4) + 1;
		else if (id == tick_id)
			len = hl + 16;
		else
			return -1;
		if (in + len > sb)
			return -1;
		if (done < in + len)
			return 0; /* reserved, header written, commit not seen yet */
		cur->pos = (p + len) & RINGTRACE__POS_MASK;
		if (id != tick_id)
			return 2;
		memcpy(ret_ns, d + hl + 8, 8);
		*ret_ts = ts;
		*ret_ext = ext;
		return 1;
	}
}

struct trial {
	uint64_t t_cmd, t_ret, t_seen, field_ns, ts;
	int ext;
	uint32_t clock;
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static void report(const char *name, int64_t *v, int n, const char *what)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	double med = n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
	printf("result live_enable_%s_median_us %.1f\n", name, med / 1e3);
	printf("result live_enable_%s_worst_us %.1f\n", name, (double)v[n - 1] / 1e3);
	printf("info %-20s median %9.1f us, best %9.1f us, worst %9.1f us  (%s)\n", name, med / 1e3,
	       (double)v[0] / 1e3, (double)v[n - 1] / 1e3, what);
}

static int open_ring(struct ctl_handle *h, struct ctl_ring *ring)
{
	char err[512];
	if (ctl_ring_open(h, ring, err, sizeof(err)) < 0) {
		fprintf(stderr, "live_latency: %s\n", err);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: live_latency PID RINGTRACE TRIALS\n");
		return 2;
	}
	target = (pid_t)atoi(argv[1]);
	snprintf(target_str, sizeof(target_str), "%d", (int)target);
	rt_bin = argv[2];
	int ntrials = atoi(argv[3]);
	if (ntrials < 1 || ntrials > 100000)
		return 2;

	struct ctl_handle h;
	char err[512];
	if (ctl_open(target, &h, CTL_OPEN_WRITE, err, sizeof(err)) < 0) {
		fprintf(stderr, "live_latency: %s\n", err);
		return 1;
	}
	/* The tick's id, from the block's registry log. */
	uint32_t tick_id = 0;
	uint64_t used = __atomic_load_n(&h.b->reg_used, __ATOMIC_ACQUIRE), lp = 0;
	if (used > CTL_REG_SIZE)
		used = CTL_REG_SIZE;
	struct ctl_log_entry e;
	while (ctl_log_next((const char *)h.b + CTL_REG_OFF, used, &lp, &e) > 0)
		if (e.kind == 1 && e.n >= 2 && !strcmp(e.s[0], "lat") && !strcmp(e.s[1], "tick"))
			tick_id = e.id;
	if (!tick_id || !h.b->tracing) {
		fprintf(stderr, "live_latency: process %d has no lat:tick event or tracing is off\n", (int)target);
		return 1;
	}
	struct ctl_ring ring;
	if (open_ring(&h, &ring) < 0)
		return 1;
	uint32_t clock = ring.rb->hdr->clock;
	struct clk_sample c0, c1;
	clk_sample(clock, &c0);

	struct trial *tr = calloc((size_t)ntrials, sizeof(*tr));
	struct cursor *cur = calloc(ring.rb->ncpus, sizeof(*cur));
	if (!tr || !cur)
		return 1;
	int resets = 0, failed = 0;
	for (int t = 0; t < ntrials; t++) {
		/* Room for this trial on every CPU (discard mode, nobody reads). */
		uint64_t buf = ring.rb->buf_mask + 1;
		int full = 0;
		for (uint32_t c = 0; c < ring.rb->ncpus; c++)
			if (state_pos(ring.rb, c) + buf / 4 > buf)
				full = 1;
		if (full) {
			if (run("reset", NULL) != 0) {
				fprintf(stderr, "live_latency: ringtrace reset failed\n");
				return 1;
			}
			ctl_ring_close(&ring);
			if (open_ring(&h, &ring) < 0)
				return 1;
			resets++;
		}
		if (run("disable", "lat:tick") != 0) {
			fprintf(stderr, "live_latency: ringtrace disable failed\n");
			return 1;
		}
		/* Quiet: no position moves for 2 ms (a probe that saw the flag
		 * before the disable has committed). */
		uint64_t quiet_since = mono_ns(), give_up = quiet_since + 2000000000u;
		for (uint32_t c = 0; c < ring.rb->ncpus; c++)
			cur[c].pos = state_pos(ring.rb, c);
		while (mono_ns() - quiet_since < 2000000 && mono_ns() < give_up) {
			struct timespec d = { 0, 100000 };
			nanosleep(&d, NULL);
			for (uint32_t c = 0; c < ring.rb->ncpus; c++) {
				uint64_t p = state_pos(ring.rb, c);
				if (p != cur[c].pos) {
					cur[c].pos = p;
					quiet_since = mono_ns();
				}
			}
		}
		tr[t].t_cmd = mono_ns();
		int rc = run("enable", "lat:tick");
		tr[t].t_ret = mono_ns();
		if (rc != 0) {
			fprintf(stderr, "live_latency: ringtrace enable failed (%d)\n", rc);
			return 1;
		}
		int found = 0, bad = 0;
		uint64_t deadline = tr[t].t_ret + 5000000000u;
		while (!found && !bad && mono_ns() < deadline) {
			for (uint32_t c = 0; c < ring.rb->ncpus && !found; c++) {
				int k;
				uint64_t ts, ns;
				int ext;
				while ((k = next_record(ring.rb, c, &cur[c], tick_id, &ts, &ext, &ns)) > 0) {
					if (k == 1 && ns >= tr[t].t_cmd) {
						tr[t].t_seen = mono_ns();
						tr[t].field_ns = ns;
						tr[t].ts = ts;
						tr[t].ext = ext;
						found = 1;
						break;
					}
				}
				if (k < 0)
					bad = 1;
			}
		}
		if (!found) {
			fprintf(stderr, "live_latency: trial %d: %s\n", t,
				bad ? "a record that is not ours" : "no tick within 5 s");
			failed++;
			t--;
			if (failed > 10)
				return 1;
		}
	}
	clk_sample(clock, &c1);
	struct clk_calib cal;
	clk_calibrate(clock, &c0, &c1, &cal);
	run("disable", "lat:tick");

	int64_t *v[6];
	for (int k = 0; k < 6; k++)
		v[k] = calloc((size_t)ntrials, sizeof(int64_t));
	for (int t = 0; t < ntrials; t++) {
		/* The record's clock value, its missing high bits from the field
		 * (read just before the probe), then CLOCK_MONOTONIC ns. */
		long double per_ns = clock == RINGTRACE__CLOCK_TSC ? (long double)cal.freq / 1e9L : 1.0L;
		uint64_t ref = c0.value + (uint64_t)((long double)((int64_t)(tr[t].field_ns - c0.mono_ns)) * per_ns);
		uint64_t full = tr[t].ts;
		if (!tr[t].ext) {
			uint64_t m = (UINT64_C(1) << RINGTRACE__TS_BITS) - 1;
			uint64_t hi = ref + (m >> 1);
			full = hi - ((hi - tr[t].ts) & m);
		}
		int64_t ev = (int64_t)c0.mono_ns + (int64_t)((long double)(int64_t)(full - c0.value) / per_ns);
		v[0][t] = ev - (int64_t)tr[t].t_ret;
		v[1][t] = v[0][t] > 0 ? v[0][t] : 0;
		v[2][t] = ev - (int64_t)tr[t].t_cmd;
		v[3][t] = (int64_t)(tr[t].t_ret - tr[t].t_cmd);
		v[4][t] = (int64_t)(tr[t].t_seen - tr[t].t_ret);
		v[5][t] = ev - (int64_t)tr[t].field_ns;
	}
	printf("info trials %d, buffer resets %d, clock %s%s\n", ntrials, resets,
	       clock == RINGTRACE__CLOCK_TSC ? "tsc" : "monotonic",
	       clock == RINGTRACE__CLOCK_TSC ? "" : " (no conversion needed)");
	if (clock == RINGTRACE__CLOCK_TSC)
		printf("info tsc_hz %llu (calibrated over %.1f s)\n", (unsigned long long)cal.freq,
		       (double)(c1.mono_ns - c0.mono_ns) / 1e9);
	report("latency", v[1], ntrials, "max(0, event - enable returned)");
	report("event_minus_return", v[0], ntrials, "signed; < 0: in the buffer before enable returned");
	report("cmd_to_event", v[2], ntrials, "exec of ringtrace enable -> event");
	report("cmd_duration", v[3], ntrials, "ringtrace enable, exec to exit");
	report("seen_after_return", v[4], ntrials, "enable returned -> our poll saw it");
	report("record_minus_field", v[5], ntrials, "record timestamp - ns field: probe cost + calibration");
	ctl_ring_close(&ring);
	ctl_close(&h);
	return 0;
}
#endif
