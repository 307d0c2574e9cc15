/*
 * agent.c - the control block and the control thread of a traced program.
 *
 * At start-up the library publishes /dev/shm/ringtrace.ctl.PID (ctl.h) and
 * starts one thread that sleeps on the block's futex. `ringtrace` commands
 * put a request in the block and wake it; it answers in the block. The
 * thread blocks every signal (the program's signals go to its own
 * threads), never touches the program's state beyond the registry and the
 * regions, and treats every request as hostile.
 *
 * Buffers the program allocates itself (`ringtrace on`) are a memfd, so
 * nothing is left behind when the program dies; a controller maps them
 * through /proc/PID/fd/N. They are freed only after a grace period
 * (rcu.c): a probe still writing into them can never fault. A region whose
 * grace period times out (a thread stopped inside a probe) is kept mapped
 * and counted in `retired`.
 *
 * Nothing here runs on the tracepoint fast path. RINGTRACE_CONTROL=0 turns
 * all of it off.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace-api.h>

#include "common/clock.h"
#include "ctl/ctl.h"
#include "lib/agent.h"
#include "lib/rcu.h"
#include "lib/registry.h"
#include "lib/stack.h"
#include "lib/trigger.h"
#include "stackmap/stackmap.h"
#include "ringbuf/rb.h"

#define GRACE_MS 2000

struct region {
	void *mem;
	uint64_t size;
	int fd;                      /* -1 for the recorder's region */
	struct ringtrace__rb *rb;
};

static struct ctl_block *ctl;
static char ctl_path[64];
static pid_t ctl_pid;
static struct region cur;            /* the session's region (rb NULL: none) */
static int cur_own;                  /* allocated by us (else the recorder's) */
#define RETIRED_MAX 16
static struct region retired[RETIRED_MAX];
static unsigned nretired;
/* Snapshots: the spare buffers, swapped with `cur` by a snapshot, then
 * held (the old live buffers) until the controller writing them releases
 * them. Only the control thread touches these. */
static struct region spare = { .fd = -1 };
/* What the recorder chose for the flight recorder's first buffers, kept
 * for the buffers the program allocates after them. */
static uint32_t cfg_stacks, cfg_stack_bits;
/* A followed process's wait for room (the recorder's --blocking-timeout);
 * 0 in buffers the program makes for itself. */
static uint32_t cfg_block_us;
static pthread_t agent_thread;
static int publish_delay_ms;         /* a forked child publishes late */

/*
 * `ringtrace record --follow-fork/--follow-exec` (RINGTRACE_FOLLOW, read
 * once by the constructor): what a followed process records with, and the
 * recorder's SOCK_SEQPACKET socket (an abstract name) that it tells
 * "here I am".
 * A forked child inherits this copy; an exec'ed program reads the
 * variable again, kept in the environment only with --follow-exec.
 */
static struct {
	int fork, exec;
	uint64_t sb_size;
	uint32_t nsb, mode, stacks, stack_bits, block_us;
	char sock[64];               /* the name, without its leading NUL */
	char patterns[2048];         /* -e, NUL-separated, empty list = all */
} follow;

/* ---- regions -------------------------------------------------------------- */

static void region_free(struct region *r)
{
	if (r->rb) {
		stack_detach(r->rb);
		rb_view_free(r->rb);
	}
	if (r->mem)
		munmap(r->mem, r->size);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

/* Free, or keep mapped when no grace period could be proven. */
static void region_retire(struct region *r)
{
	if (rcu_synchronize(GRACE_MS) == 0) {
		region_free(r);
		/* The same grace period covers the regions kept earlier. */
		for (unsigned i = 0; i < nretired; i++)
			region_free(&retired[i]);
		nretired = 0;
	} else if (nretired < RETIRED_MAX) {
		retired[nretired++] = *r;
		memset(r, 0, sizeof(*r));
		r->fd = -1;
	} else {
		/* Leak rather than unmap memory a probe may still write. */
		memset(r, 0, sizeof(*r));
		r->fd = -1;
	}
	if (ctl)
		__atomic_store_n(&ctl->retired, nretired, __ATOMIC_RELAXED);
}

int agent_rseq_usable(const struct ringtrace__rb *rb)
{
#if RINGTRACE__RSEQ
	const char *no = getenv("RINGTRACE_NO_RSEQ");
	if (no && *no && strcmp(no, "0") != 0)
		return 0;
	/* Any clock: the TSC is read inside the critical sections, another
	 * clock before them (ringtrace__rseq_reserve_any()). The commit is
	 * one 16-byte store, which x86 makes atomic only on AVX processors
	 * (a reader could otherwise see the byte count before the event
	 * count). */
	(void)rb;
	if (__rseq_size < 20)
		return 0;
	/* We may run from a constructor, before libgcc's own: its CPU model
	 * must be filled in first or every feature reads as absent. */
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx"))
		return 0;
	return ringtrace__rseq_cpu() >= 0;
#else
	(void)rb;
	return 0;
#endif
}

static int region_alloc(struct region *r)
{
	struct rb_params p = { 0 };
	p.ncpus = rb_possible_cpus();
	p.sb_size = ctl->cfg_sb_size;
	p.nsb = ctl->cfg_nsb;
	p.mode = ctl->cfg_mode;
	/* The CPU's word alone: the recorder's cross-CPU check costs threads
	 * and milliseconds the program should not pay. */
	struct clk_inputs ci;
	struct clk_choice cc;
	clk_inputs_read(&ci);
	clk_decide(&ci, &cc);
	p.clock = cc.clock;
	static int clock_told;
	if (ci.override == CLK_OVERRIDE_BAD && !clock_told) {
		clock_told = 1;
		reg_message("ringtrace: RINGTRACE_CLOCK is not a clock (tsc or monotonic): chose as if unset, %s", cc.why);
	}
	p.reg_size = RB_DEFAULT_REG;
	/* Room for the stacks of events declared with one (sparse until
	 * used: an untouched map costs no memory); all events carry one in
	 * a flight recorder started with --stacks. */
	p.stack_bits = cfg_stack_bits ? cfg_stack_bits : STACKMAP_BITS_DEFAULT;
	p.stacks = cfg_stacks;
	p.block_us = cfg_block_us;
	if (getrandom(p.uuid, sizeof(p.uuid), GRND_NONBLOCK) != sizeof(p.uuid)) {
		uint64_t x = ringtrace__clock_monotonic() ^ ((uint64_t)getpid() << 32);
		for (int i = 0; i < 16; i++)
			p.uuid[i] = (uint8_t)(x >> (i % 8 * 8)) ^ (uint8_t)(i * 37);
	}
	p.uuid[6] = (uint8_t)((p.uuid[6] & 0x0f) | 0x40);
	p.uuid[8] = (uint8_t)((p.uuid[8] & 0x3f) | 0x80);
	uint64_t size;
	int ret = rb_region_size(&p, &size);
	if (ret < 0)
		return ret;
	int fd = memfd_create("ringtrace-ring", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		ret = -errno;
		close(fd);
		return ret;
	}
	struct ringtrace__rb *rb = NULL;
	if ((ret = rb_region_init(mem, size, &p)) < 0 || (ret = rb_view_open(mem, size, &rb)) < 0) {
		munmap(mem, size);
		close(fd);
		return ret;
	}
	rb->hdr->attached_pid = (uint32_t)getpid();
	rb_set_rseq(rb, agent_rseq_usable(rb));
	rb->hdr->use_rseq = (uint32_t)rb->use_rseq;
	/* Without its stacks the region still works: stack ids then read
	 * "none". */
	(void)stack_attach(rb);
	r->mem = mem;
	r->size = size;
	r->fd = fd;
	r->rb = rb;
	return 0;
}

/* ---- session state published in the block --------------------------------- */

static void publish_session(void)
{
	ctl->ring_fd = cur.rb ? cur.fd : -1;
	ctl->ring_size = cur.rb ? cur.size : 0;
	ctl->session = !cur.rb ? CTL_SESSION_NONE : cur_own ? CTL_SESSION_OWN : CTL_SESSION_RECORDER;
	__atomic_fetch_add(&ctl->ring_gen, 1, __ATOMIC_RELEASE);
}

/* A consumer other than one that died holds the region. */
static pid_t region_reader(const struct region *r)
{
	if (!r->rb)
		return 0;
	pid_t pid = (pid_t)__atomic_load_n(&r->rb->hdr->reader_pid, __ATOMIC_ACQUIRE);
	if (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM))
		return pid;
	return 0;
}

static void tracing_set(int on)
{
	reg_tracing(on);
	__atomic_store_n(&ctl->tracing, (uint32_t)on, __ATOMIC_RELEASE);
}

/* Off, and no probe still writes (or the grace period timed out). */
static int tracing_stop(void)
{
	tracing_set(0);
	return rcu_synchronize(GRACE_MS);
}

static void drop_session(void)
{
	reg_attach(NULL);
	if (cur_own)
		region_retire(&cur);
	else
		memset(&cur, 0, sizeof(cur));
	cur.fd = -1;
	cur_own = 0;
	publish_session();
}

/* ---- commands ---------------------------------------------------------------- */

static int answer(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int answer(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctl->msg, sizeof(ctl->msg), fmt, ap);
	va_end(ap);
	return 0;
}

/* The handlers of the control requests, op_X for CTL_OP_X (ctl.h), run
 * by the control thread; named apart from the command's cmd_* entry
 * points (src/cli/), which send the requests. */
static int op_rules(const char *text, int on)
{
	/* Validate every pattern before applying any. */
	int n = 0;
	for (const char *p = text; *p; p += strlen(p) + 1) {
		if (ctl_pattern_valid(p) < 0) {
			answer("malformed pattern '%.200s'", p);
			return -EINVAL;
		}
		n++;
	}
	if (n == 0) {
		answer("no pattern given");
		return -EINVAL;
	}
	int matched = 0;
	for (const char *p = text; *p; p += strlen(p) + 1)
		matched += reg_rule(p, on);
	return matched;
}

static int op_on(void)
{
	if (!cur.rb) {
		int r = region_alloc(&cur);
		if (r < 0) {
			answer("cannot allocate the buffers: %s", strerror(-r));
			return r;
		}
		cur_own = 1;
		reg_attach(cur.rb);
		publish_session();
	}
	tracing_set(1);
	return 0;
}

static int op_off(int free_own)
{
	int g = tracing_stop();
	if (free_own && cur_own && cur.rb) {
		pid_t rd = region_reader(&cur);
		if (rd)
			return answer("tracing off; buffers kept: pid %d reads them", (int)rd), 0;
		drop_session();
	}
	if (g == -ETIMEDOUT)
		answer("tracing off; a thread is still inside a tracepoint");
	return 0;
}

static int op_reset(void)
{
	if (!cur.rb)
		return 1; /* nothing to empty */
	if (!cur_own) {
		answer("the buffers belong to ringtrace record (pid %u): stop it instead",
		       cur.rb->hdr->creator_pid);
		return -EBUSY;
	}
	pid_t rd = region_reader(&cur);
	if (rd) {
		answer("pid %d is reading the buffers: stop it first", (int)rd);
		return -EBUSY;
	}
	int was_on = (int)ctl->tracing;
	struct region fresh = { .fd = -1 };
	int r = region_alloc(&fresh);
	if (r < 0) {
		answer("cannot allocate new buffers: %s", strerror(-r));
		return r;
	}
	tracing_stop();
	struct region old = cur;
	cur = fresh;
	reg_attach(cur.rb);
	publish_session();
	region_retire(&old);
	if (was_on)
		tracing_set(1);
	return 0;
}

static int op_buffer_size(uint64_t bytes, uint64_t arg1)
{
	uint64_t nsb = arg1 & 0xffffffffu, mode = arg1 >> 32;
	if (ctl->tracing) {
		answer("tracing is on: turn it off first (ringtrace off %d)", (int)ctl_pid);
		return -EBUSY;
	}
	if (cur.rb && !cur_own) {
		answer("the buffers belong to ringtrace record (pid %u)", cur.rb->hdr->creator_pid);
		return -EBUSY;
	}
	if (nsb == 0)
		nsb = ctl->cfg_nsb;
	if (nsb < (1u << RB_NSB_MIN_SHIFT) || nsb > (1u << RB_NSB_MAX_SHIFT) || (nsb & (nsb - 1)) ||
	    bytes == 0 || (bytes & (bytes - 1)) || bytes / nsb < (1u << RB_SB_MIN_SHIFT) ||
	    bytes / nsb > (1u << RB_SB_MAX_SHIFT)) {
		answer("invalid size: a power of two from %u KiB to %u MiB per sub-buffer, times %llu sub-buffers",
		       (1u << RB_SB_MIN_SHIFT) >> 10, (1u << RB_SB_MAX_SHIFT) >> 20, (unsigned long long)nsb);
		return -EINVAL;
	}
	if (cur.rb) {
		pid_t rd = region_reader(&cur);
		if (rd) {
			answer("pid %d is reading the buffers: stop it first", (int)rd);
			return -EBUSY;
		}
		rcu_synchronize(GRACE_MS);
		drop_session();
	}
	ctl->cfg_sb_size = bytes / nsb;
	ctl->cfg_nsb = (uint32_t)nsb;
	if (mode == 1 || mode == 2)
		ctl->cfg_mode = mode == 2 ? RINGTRACE__MODE_OVERWRITE : RINGTRACE__MODE_DISCARD;
	return 0;
}

static int op_flush(int stay_off)
{
	if (!cur.rb)
		return 0;
	int was_on = (int)ctl->tracing;
	if (tracing_stop() < 0) {
		answer("a thread is still inside a tracepoint: nothing flushed");
		if (was_on && !stay_off)
			tracing_set(1);
		return -EBUSY;
	}
	rb_flush_quiescent(cur.rb);
	if (was_on && !stay_off)
		tracing_set(1);
	return 0;
}

/* ---- snapshots (docs/design.md section 8) -------------------------------------- */

static int op_snap_enable(void);
static int op_snap_trigger(const char *text, uint64_t interval_ms);

/*
 * How long a program waits at its start for a recorder that is known to
 * be there (it started us, or it just took our notice on its socket):
 * until then, a program that exits at once would be gone before anybody
 * mapped its buffers. It is the recorder's scheduling we wait for, which
 * takes far longer than usual on a loaded machine (100 ms was missed in
 * test runs); a recorder that died is not waited for (the notice fails).
 */
#define RECORDER_WAIT_NS 1000000000ull

/* Wait until *w is set (acquire: pairs with the recorder's store and
 * FUTEX_WAKE), RECORDER_WAIT_NS at most. */
static void wait_for_recorder(uint32_t *w)
{
	uint64_t t0 = ringtrace__clock_monotonic();
	while (!__atomic_load_n(w, __ATOMIC_ACQUIRE)) {
		uint64_t waited = ringtrace__clock_monotonic() - t0;
		if (waited >= RECORDER_WAIT_NS)
			break;
		uint64_t left = RECORDER_WAIT_NS - waited;
		struct timespec d = { (time_t)(left / 1000000000u), (long)(left % 1000000000u) };
		ctl_futex(w, FUTEX_WAIT, 0, &d);
	}
}

/*
 * `ringtrace record --flight-recorder` gives the program its first buffers
 * (overwrite mode, so that the recorder has them mapped from the start and
 * can recover them if the program is killed) and RINGTRACE_FLIGHT=1: the
 * buffers are the program's to swap, snapshots are enabled at once, and
 * the recorder takes the snapshots. Called from the constructor, before
 * the control thread exists.
 */
static void flight_start(void)
{
	const char *env = getenv("RINGTRACE_FLIGHT");
	int on = env && !strcmp(env, "1");
	unsetenv("RINGTRACE_FLIGHT");
	if (!on)
		return;
	cur_own = 1;
	ctl->cfg_sb_size = cur.rb->sb_mask + 1;
	ctl->cfg_nsb = 1u << cur.rb->nsb_shift;
	ctl->cfg_mode = cur.rb->mode;
	cfg_stacks = cur.rb->stacks;
	void *log, *map;
	size_t log_size, map_size;
	if (rb_stack_area(cur.rb, &log, &log_size, &map, &map_size) == 0 &&
	    map_size >= sizeof(struct stackmap_header))
		cfg_stack_bits = ((const struct stackmap_header *)map)->bits;
	if (cfg_stack_bits < STACKMAP_BITS_MIN || cfg_stack_bits > STACKMAP_BITS_MAX)
		cfg_stack_bits = 0;
	publish_session();
	if (op_snap_enable() < 0)
		reg_message("ringtrace: no spare buffers for the flight recorder: %s", ctl->msg);
	/* --snapshot-on TEXT [--min-interval MS], validated by the recorder. */
	const char *trig = getenv("RINGTRACE_SNAPSHOT_ON");
	const char *iv = getenv("RINGTRACE_SNAPSHOT_INTERVAL");
	if (trig && *trig && op_snap_trigger(trig, iv ? strtoull(iv, NULL, 10) : 0) < 0)
		reg_message("ringtrace: %s", ctl->msg);
	unsetenv("RINGTRACE_SNAPSHOT_ON");
	unsetenv("RINGTRACE_SNAPSHOT_INTERVAL");
	/* The recorder polls for this block; until it watches, a request
	 * (ringtrace_snapshot(), a trigger) or an exit would go unseen.
	 * Bounded: the program starts anyway after RECORDER_WAIT_NS. */
	wait_for_recorder(&ctl->watcher);
}

static void publish_snap(uint32_t state, pid_t holder)
{
	ctl->snap_fd = state == CTL_SNAP_HELD ? spare.fd : -1;
	ctl->snap_size = state == CTL_SNAP_HELD ? spare.size : 0;
	ctl->snap_holder = (uint32_t)holder;
	ctl->spare_fd = state == CTL_SNAP_READY ? spare.fd : -1;
	ctl->spare_size = state == CTL_SNAP_READY ? spare.size : 0;
	/* Pairs with ctl_spare_open()'s acquire load. */
	__atomic_fetch_add(&ctl->spare_gen, 1, __ATOMIC_RELEASE);
	/* Pairs with the controller's acquire load: fd and size first. */
	__atomic_store_n(&ctl->snap_state, state, __ATOMIC_RELEASE);
}

static int holder_alive(void)
{
	pid_t h = (pid_t)ctl->snap_holder;
	return h > 0 && (kill(h, 0) == 0 || errno == EPERM);
}

/* The held buffers were written (or their writer died): after a grace
 * period no probe can still be in them, so they are freed and fresh
 * spare buffers allocated (untouched memory: nothing spent until used). */
static int snap_recycle(void)
{
	/* Freed after a grace period; if a thread stays inside a probe in
	 * them, kept mapped among the retired regions: snapshots go on with
	 * a fresh spare either way. */
	region_retire(&spare);
	int r = region_alloc(&spare);
	if (r < 0) {
		publish_snap(CTL_SNAP_OFF, 0);
		answer("cannot allocate new spare buffers: %s; snapshots are off", strerror(-r));
		return r;
	}
	publish_snap(CTL_SNAP_READY, 0);
	return 0;
}

static int op_snap_enable(void)
{
	if (cur.rb && !cur_own) {
		answer("the buffers belong to ringtrace record (pid %u): snapshots need the program's own buffers",
		       cur.rb->hdr->creator_pid);
		return -EBUSY;
	}
	if (ctl->snap_state != CTL_SNAP_OFF)
		return 0;
	int r = region_alloc(&spare);
	if (r < 0) {
		answer("cannot allocate the spare buffers: %s", strerror(-r));
		return r;
	}
	publish_snap(CTL_SNAP_READY, 0);
	return 0;
}

static int op_snap_disable(void)
{
	if (ctl->snap_state == CTL_SNAP_HELD && holder_alive()) {
		answer("pid %u is writing a snapshot: try again when it is done", ctl->snap_holder);
		return -EBUSY;
	}
	if (ctl->snap_state == CTL_SNAP_HELD && rcu_synchronize(GRACE_MS) < 0) {
		answer("a thread is still inside a tracepoint in the held buffers");
		return -EBUSY;
	}
	region_free(&spare);
	publish_snap(CTL_SNAP_OFF, 0);
	return 0;
}

/*
 * Swap: the spare becomes the live buffers (published at once: writers go
 * on in it and never wait), the old live buffers are held for `holder`
 * to write. After a grace period no probe is left in them and their open
 * sub-buffers are closed, so the holder reads a quiescent region: every
 * event is in it or in the new live buffers, none in both.
 */
static int op_snapshot(pid_t holder)
{
	if (ctl->snap_state == CTL_SNAP_OFF) {
		answer("snapshots are not enabled (ringtrace snapshot-enable %d)", (int)ctl_pid);
		return -EINVAL;
	}
	if (ctl->snap_state == CTL_SNAP_HELD) {
		if (holder_alive()) {
			answer("pid %u is still writing the previous snapshot", ctl->snap_holder);
			return -EBUSY;
		}
		int r = snap_recycle(); /* its writer died */
		if (r < 0)
			return r;
	}
	if (!cur.rb) {
		answer("no buffers: tracing was never switched on");
		return -ENOENT;
	}
	if (cur.rb->hdr->sb_shift != spare.rb->hdr->sb_shift || cur.rb->hdr->nsb_shift != spare.rb->hdr->nsb_shift ||
	    cur.rb->mode != spare.rb->mode || cur.rb->stacks != spare.rb->stacks) {
		/* buffer-size changed since snapshot-enable: follow it. */
		region_free(&spare);
		int r = region_alloc(&spare);
		if (r < 0) {
			publish_snap(CTL_SNAP_OFF, 0);
			answer("cannot allocate the spare buffers: %s", strerror(-r));
			return r;
		}
	}
	if (region_reader(&cur)) {
		answer("pid %d reads the live buffers (record -p or show): stop it first", (int)region_reader(&cur));
		return -EBUSY;
	}
	/* The requests counted by now were posted after their events were
	 * committed (acquire, pairs with the release add in
	 * agent_request_snapshot()): those events are in the buffers we
	 * swap out, so this snapshot serves those requests. */
	uint32_t served = __atomic_load_n(&ctl->snap_req, __ATOMIC_ACQUIRE);
	struct region old = cur;
	uint64_t t0 = ringtrace__clock_monotonic();
	cur = spare;
	spare = old;
	reg_attach(cur.rb);
	uint64_t t1 = ringtrace__clock_monotonic();
	if (ctl->tracing)
		reg_tracing(1); /* publishes the new region, release */
	uint64_t t2 = ringtrace__clock_monotonic();
	publish_session();
	int g = rcu_synchronize(GRACE_MS);
	ctl->snap_attach_ns = t1 - t0;
	ctl->snap_swap_ns = t2 - t1;
	ctl->snap_grace_ns = ringtrace__clock_monotonic() - t2;
	if (g == 0)
		rb_flush_quiescent(spare.rb);
	uint32_t n = ++ctl->snap_count;
	ctl->snap_served = served; /* published by publish_snap()'s release store */
	publish_snap(CTL_SNAP_HELD, holder);
	if (g < 0)
		answer("snapshot %u; a thread was still inside a tracepoint: its last event may be cut", n);
	return (int)n;
}

int agent_request_snapshot(int trig)
{
	/* The block is published once and never unmapped while the program
	 * runs (only in a forked child, before its own is published). */
	struct ctl_block *b = __atomic_load_n(&ctl, __ATOMIC_ACQUIRE);
	if (!b || __atomic_load_n(&b->snap_state, __ATOMIC_ACQUIRE) == CTL_SNAP_OFF)
		return -ENOTSUP;
	int saved = errno;
	if (trig)
		__atomic_fetch_add(&b->snap_trig, 1, __ATOMIC_RELAXED);
	/* Pairs with the waiter's acquire load before its FUTEX_WAIT (and
	 * orders snap_trig before it). */
	__atomic_fetch_add(&b->snap_req, 1, __ATOMIC_RELEASE);
	ctl_futex(&b->snap_req, FUTEX_WAKE, INT_MAX, NULL);
	errno = saved;
	return 0;
}

int ringtrace_snapshot(void)
{
	return agent_request_snapshot(0);
}

static int op_snap_trigger(const char *text, uint64_t interval_ms)
{
	char err[CTL_MSG];
	if (trigger_set(text, interval_ms, err, sizeof(err)) < 0) {
		answer("%s", err);
		return -EINVAL;
	}
	snprintf(ctl->trigger, sizeof(ctl->trigger), "%s", trigger_text());
	if (*text && ctl->snap_state == CTL_SNAP_OFF)
		answer("armed; snapshots are not enabled yet (ringtrace snapshot-enable %d)", (int)ctl_pid);
	return 0;
}

static int op_snap_release(void)
{
	if (ctl->snap_state != CTL_SNAP_HELD)
		return 0;
	return snap_recycle();
}

static void handle(uint32_t op, uint64_t arg0, uint64_t arg1, const char *text)
{
	int r;
	ctl->msg[0] = 0;
	switch (op) {
	case CTL_OP_ENABLE:
	case CTL_OP_DISABLE:
		r = op_rules(text, op == CTL_OP_ENABLE);
		break;
	case CTL_OP_ON:
		r = op_on();
		break;
	case CTL_OP_OFF:
		r = op_off(arg0 == 1);
		break;
	case CTL_OP_RESET:
		r = op_reset();
		break;
	case CTL_OP_BUFFER_SIZE:
		r = op_buffer_size(arg0, arg1);
		break;
	case CTL_OP_FLUSH:
		r = op_flush(arg0 == 1);
		break;
	case CTL_OP_SNAP_ENABLE:
		r = op_snap_enable();
		break;
	case CTL_OP_SNAP_DISABLE:
		r = op_snap_disable();
		break;
	case CTL_OP_SNAPSHOT:
		r = op_snapshot((pid_t)arg0);
		break;
	case CTL_OP_SNAP_RELEASE:
		r = op_snap_release();
		break;
	case CTL_OP_SNAP_TRIGGER:
		r = op_snap_trigger(text, arg0);
		break;
	default:
		answer("unknown request %u", op);
		r = -EINVAL;
		break;
	}
	ctl->result = r;
}

static int publish(void);

static void *agent_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "ringtrace-ctl", 0, 0, 0);
	ringtrace__tls.busy = 1; /* its allocations are the tracer's, not the program's */
	if (publish_delay_ms) {
		/* A child that execs or exits at once (fork + exec, a shell
		 * command) never leaves a block behind. */
		struct timespec d = { publish_delay_ms / 1000, (publish_delay_ms % 1000) * 1000000L };
		while (nanosleep(&d, &d) < 0 && errno == EINTR)
			;
		if (publish() < 0)
			return NULL;
		reg_set_ctl(ctl);
		publish_session();
	}
	char *text = malloc(CTL_TEXT + 2);
	if (!text)
		return NULL;
	/* From the last request answered (0 in a fresh block): a request
	 * posted before this thread ran is served, not skipped (a controller
	 * would take the block's initial result for its answer). */
	uint32_t seen = __atomic_load_n(&ctl->done_seq, __ATOMIC_ACQUIRE);
	for (;;) {
		uint32_t seq = __atomic_load_n(&ctl->cmd_seq, __ATOMIC_ACQUIRE);
		if (seq == seen) {
			/* While stacks are captured, look at the loaded objects
			 * a few times a second: a dlopen'ed object without
			 * tracepoints is logged here (the registry logs the
			 * others at once). Otherwise sleep until asked. */
			struct timespec poll = { 0, 250 * 1000000L };
			int stacks = cur.rb && cur.rb->stk && stack_capturing();
			ctl_futex(&ctl->cmd_seq, FUTEX_WAIT, seen, stacks ? &poll : NULL);
			if (stacks)
				stack_log_maps(cur.rb, 0);
			continue;
		}
		/* Take the request, unless its controller gave up on us (we
		 * were stopped): a cancelled request never takes effect. */
		uint32_t pending = CTL_CMD_PENDING;
		if (__atomic_compare_exchange_n(&ctl->cmd_state, &pending, CTL_CMD_TAKEN, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			/* Copy the request out before looking at it (the
			 * controller may be hostile). */
			uint32_t op = __atomic_load_n(&ctl->op, __ATOMIC_RELAXED);
			uint64_t a0 = ctl->arg0, a1 = ctl->arg1;
			memcpy(text, ctl->text, CTL_TEXT);
			text[CTL_TEXT] = 0;
			text[CTL_TEXT + 1] = 0;
			handle(op, a0, a1, text);
			__atomic_store_n(&ctl->cmd_state, CTL_CMD_IDLE, __ATOMIC_RELEASE);
		} else {
			ctl->result = -ECANCELED;
		}
		seen = seq;
		/* Pairs with the controller's acquire load: result and msg. */
		__atomic_store_n(&ctl->done_seq, seq, __ATOMIC_RELEASE);
		ctl_futex(&ctl->done_seq, FUTEX_WAKE, INT_MAX, NULL);
	}
	return NULL;
}

/* ---- publication ------------------------------------------------------------ */

static int publish(void)
{
	ctl_pid = getpid();
	snprintf(ctl_path, sizeof(ctl_path), "%s/%s%d", CTL_DIR, CTL_PREFIX, (int)ctl_pid);
	/* A file with our pid is left by a process that died: ours now. */
	unlink(ctl_path);
	int fd = open(ctl_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)CTL_TOTAL) < 0) {
		int e = -errno;
		close(fd);
		unlink(ctl_path);
		return e;
	}
	void *mem = mmap(NULL, CTL_TOTAL, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (mem == MAP_FAILED) {
		unlink(ctl_path);
		return -ENOMEM;
	}
	struct ctl_block *b = mem;
	b->version = CTL_VERSION;
	b->header_size = sizeof(*b);
	b->total_size = CTL_TOTAL;
	b->pid = (uint32_t)ctl_pid;
	b->uid = (uint32_t)geteuid();
	b->start_time = ctl_proc_start_time(ctl_pid);
	prctl(PR_GET_NAME, b->comm, 0, 0, 0);
	b->comm[sizeof(b->comm) - 1] = 0;
	ssize_t n = readlink("/proc/self/exe", b->exe, sizeof(b->exe) - 1);
	b->exe[n > 0 ? n : 0] = 0;
	snprintf(b->version_str, sizeof(b->version_str), "%s", RINGTRACE_VERSION);
	b->reg_off = CTL_REG_OFF;
	b->reg_size = CTL_REG_SIZE;
	b->en_off = CTL_EN_OFF;
	b->en_count = CTL_MAX_IDS;
	b->ring_fd = -1;
	b->snap_fd = -1;
	b->spare_fd = -1;
	b->cfg_sb_size = RB_DEFAULT_SB;
	b->cfg_nsb = RB_DEFAULT_NSB;
	b->cfg_mode = RINGTRACE__MODE_DISCARD;
	/* Last: a controller that sees the magic sees the rest. */
	__atomic_store_n(&b->magic, CTL_MAGIC, __ATOMIC_RELEASE);
	/* Release: ringtrace_snapshot() may run in any thread at once. */
	__atomic_store_n(&ctl, b, __ATOMIC_RELEASE);
	return 0;
}

static void start_thread(void)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* The thread inherits this mask: the program's signals never land in it. */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* Without the thread the block stays: ps, list and stat still work;
	 * commands time out with a message. */
	if (pthread_create(&agent_thread, &attr, agent_main, NULL) != 0)
		agent_thread = 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/* ---- following forks and execs (record --follow-fork/--follow-exec) ---------- */

/*
 * RINGTRACE_FOLLOW="fork=F exec=E sb=BYTES nsb=N mode=M stacks=S bits=B
 * sock=NAME block=US[ self=PID]" and RINGTRACE_FOLLOW_EVENTS (the -e
 * patterns, one a line), set by the recorder. Read once, in the
 * constructor; taken out of the environment unless exec'ed programs are
 * followed too. exec=2 follows only the execs of process PID (the program
 * the recorder runs, through its wrappers): a program another process
 * executes is not followed, and the variable leaves its environment. A
 * malformed value
 * follows nothing.
 */
void agent_follow_init(void)
{
	const char *env = getenv("RINGTRACE_FOLLOW");
	const char *ev = getenv("RINGTRACE_FOLLOW_EVENTS");
	int f = 0, e = 0;
	uint64_t sb = 0;
	unsigned nsb = 0, mode = 0, stacks = 0, bits = 0, block = 0;
	char name[sizeof(follow.sock)] = "";
	int self = 0, nf;
	memset(&follow, 0, sizeof(follow));
	if (env &&
	    ((nf = sscanf(env, "fork=%d exec=%d sb=%" SCNu64 " nsb=%u mode=%u stacks=%u bits=%u sock=%63s block=%u self=%d",
			  &f, &e, &sb, &nsb, &mode, &stacks, &bits, name, &block, &self)) >= 8) && block <= RB_BLOCK_MAX_US &&
	    sb >= (1u << RB_SB_MIN_SHIFT) && sb <= (1u << RB_SB_MAX_SHIFT) && !(sb & (sb - 1)) &&
	    nsb >= (1u << RB_NSB_MIN_SHIFT) && nsb <= (1u << RB_NSB_MAX_SHIFT) && !(nsb & (nsb - 1)) &&
	    mode <= RINGTRACE__MODE_OVERWRITE && stacks <= 1 &&
	    (bits == 0 || (bits >= STACKMAP_BITS_MIN && bits <= STACKMAP_BITS_MAX)) && name[0] &&
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(name)) {
		follow.fork = f == 1;
		/* exec=2: only the traced process's own execs (same pid,
		 * `self`), the default of a recording; not a forked child's. */
		follow.exec = e == 1 || (e == 2 && self > 0 && self == (int)getpid());
		follow.sb_size = sb;
		follow.nsb = nsb;
		follow.mode = mode;
		follow.stacks = stacks;
		follow.stack_bits = bits;
		follow.block_us = block;
		memcpy(follow.sock, name, sizeof(name));
		/* One pattern a line -> NUL-separated, as in the region header
		 * (the memset wrote the terminating NULs). */
		size_t n = 0;
		for (const char *p = ev ? ev : ""; *p && n + 2 < sizeof(follow.patterns); p++)
			follow.patterns[n++] = *p == '\n' ? 0 : *p;
	}
	if (!follow.exec) {
		unsetenv("RINGTRACE_FOLLOW");
		unsetenv("RINGTRACE_FOLLOW_EVENTS");
	}
}

int agent_follow_exec(void)
{
	return follow.exec;
}

/*
 * Tell the recorder: connect to its SOCK_SEQPACKET socket and send one
 * message. It learns our pid from the kernel (SO_PEERCRED) and follows
 * us only if we descend from the program it runs. The connection waits
 * in its listen backlog until it accepts it, so a fork burst does not
 * need the recorder to keep up (a datagram queue holds only
 * net.unix.max_dgram_qlen notices, often 10). A full backlog is a busy
 * recorder, not a gone one: connect() then waits for room (bounded by
 * SO_SNDTIMEO), RECORDER_WAIT_NS in all, signals or not. A recorder that
 * is gone answers at once (ECONNREFUSED). 0 or -errno.
 */
static int follow_notify(const char *kind)
{
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	size_t n = strlen(follow.sock);
	memcpy(a.sun_path + 1, follow.sock, n); /* abstract: sun_path[0] = 0 */
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	char msg[64];
	int len = snprintf(msg, sizeof(msg), "RTFOLLOW1 %s %d", kind, (int)getppid());
	uint64_t t0 = ringtrace__clock_monotonic();
	for (;;) {
		uint64_t waited = ringtrace__clock_monotonic() - t0;
		if (waited >= RECORDER_WAIT_NS)
			return -EAGAIN;
		uint64_t left = RECORDER_WAIT_NS - waited;
		/* Never 0: a zero timeout would mean none. */
		struct timeval tv = { (time_t)(left / 1000000000u), (suseconds_t)(left % 1000000000u / 1000u) };
		if (tv.tv_sec == 0 && tv.tv_usec == 0)
			tv.tv_usec = 1;
		/* A fresh socket each time: one whose connect() was
		 * interrupted is not reused. */
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (s < 0)
			return -errno;
		if (setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0 &&
		    connect(s, (struct sockaddr *)&a, alen) == 0) {
			ssize_t k = send(s, msg, (size_t)len, MSG_NOSIGNAL);
			int e = k == len ? 0 : k < 0 ? -errno : -EMSGSIZE;
			close(s);
			return e;
		}
		int e = errno;
		close(s);
		if (e != EINTR && e != EAGAIN && e != EWOULDBLOCK)
			return -e;
	}
}

/*
 * A followed process (a forked child, or an exec'ed program): its own
 * buffers at once, with the recorder's parameters, tracing on, the control
 * block published, then the recorder is told and we wait until it reads
 * the buffers (the `reader_pid` futex in their header), RECORDER_WAIT_NS at most:
 * events from here on are kept (in the buffers until it attaches), and a
 * process that exits at once has its buffers mapped by the recorder
 * first. If the recorder is gone (or its queue stayed full), tracing is
 * switched off again, the control block removed, and the process runs
 * untraced. Called with only this thread running the
 * program's code (atfork child handler, or the constructor). 0 if
 * followed, else -errno (the caller then starts as an untraced program).
 */
static int follow_start(const char *kind)
{
	if (!follow.sock[0] || publish() < 0)
		return -ENOENT;
	reg_set_ctl(ctl);
	ctl->cfg_sb_size = follow.sb_size;
	ctl->cfg_nsb = follow.nsb;
	ctl->cfg_mode = follow.mode;
	cfg_stacks = follow.stacks;
	cfg_stack_bits = follow.stack_bits;
	cfg_block_us = follow.block_us;
	publish_delay_ms = 0;
	int r = region_alloc(&cur);
	if (r < 0) {
		reg_message("ringtrace: cannot allocate buffers to follow process %d: %s", (int)getpid(), strerror(-r));
		publish_session();
		start_thread();
		return 0;
	}
	cur_own = 1;
	reg_attach(cur.rb);
	publish_session();
	tracing_set(1);
	start_thread();
	if (follow_notify(kind) < 0) {
		/* Nobody will read them, and no recorder knows of our control
		 * block: it goes now (a process that ends with _exit() would
		 * leave it in /dev/shm). We run untraced and unlisted. */
		tracing_stop();
		drop_session();
		unlink(ctl_path);
		return 0;
	}
	/* Pairs with the recorder's claim (CAS) and FUTEX_WAKE. */
	wait_for_recorder(&cur.rb->hdr->reader_pid);
	return 0;
}

/* The executable's DT_NEEDED names libringtrace (dl_iterate_phdr gives
 * it first; ld.so has relocated its DT_STRTAB entry). */
static int exe_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	int *needs = arg;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	const char *str = NULL;
	for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_STRTAB)
			str = (const char *)d->d_un.d_ptr;
	for (const ElfW(Dyn) *d = dyn; d && str && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_NEEDED && !strncmp(str + d->d_un.d_val, "libringtrace.so", 15))
			*needs = 1;
	return 1; /* the executable only */
}

static int exe_needs_us(void)
{
	int needs = 0;
	dl_iterate_phdr(exe_cb, &needs);
	return needs;
}

/*
 * Loaded only because a process traced by `record --mem` left the
 * allocation tracer in the environment it handed down
 * (RINGTRACE_MEM_FOLLOW=self:PID, another pid than ours: src/mem/
 * memtrace.c takes itself out of LD_PRELOAD here) into a program that
 * does not use libringtrace itself (its executable does not need it):
 * that program stays as it would be without us, no control block, no
 * thread.
 */
static int preloaded_only(void)
{
	const char *mf = getenv("RINGTRACE_MEM_FOLLOW");
	if (!mf || strncmp(mf, "self:", 5) || atol(mf + 5) == (long)getpid())
		return 0;
	return !exe_needs_us();
}

void agent_start(struct ringtrace__rb *recorder_rb, void *mem, uint64_t size, int fd)
{
	cur.fd = fd;
	const char *env = getenv("RINGTRACE_CONTROL");
	int control = !(env && !strcmp(env, "0")) && !(!recorder_rb && preloaded_only());
	if (recorder_rb) {
		cur.rb = recorder_rb;
		cur.mem = mem;
		cur.size = size;
		cur_own = 0;
	} else if (control && follow.exec) {
		/* Exec'ed by a followed process (or not the first process to
		 * attach the recorder's region): a trace of its own. */
		reg_select_patterns(follow.patterns, sizeof(follow.patterns));
		if (follow_start("exec") == 0)
			return;
	}
	if (control && publish() == 0) {
		reg_set_ctl(ctl);
		ctl->cfg_mode = recorder_rb ? recorder_rb->mode : RINGTRACE__MODE_DISCARD;
		publish_session();
	} else {
		ctl = NULL;
	}
	if (recorder_rb) {
		reg_select_patterns(recorder_rb->hdr->patterns, sizeof(recorder_rb->hdr->patterns));
		reg_attach(recorder_rb);
		reg_tracing(1);
		if (ctl)
			ctl->tracing = 1;
		if (ctl)
			flight_start();
	}
	if (ctl)
		start_thread();
}

void agent_stop(void)
{
	/* At exit (or dlclose of the library): the program stays, the block
	 * goes. The thread may still be asleep on it: keep the mapping. */
	if (ctl && getpid() == ctl_pid)
		unlink(ctl_path);
}

void agent_after_fork_child(void)
{
	/* Only this thread exists and probes are off (reg_detach_after_fork):
	 * the parent's block and regions can go from this address space. */
	struct ctl_block *b = ctl;
	/* Unpublished before it goes: a signal handler may call
	 * ringtrace_snapshot(). */
	__atomic_store_n(&ctl, NULL, __ATOMIC_RELEASE);
	if (b)
		munmap(b, CTL_TOTAL);
	if (cur_own)
		region_free(&cur);
	memset(&cur, 0, sizeof(cur));
	cur.fd = -1;
	cur_own = 0;
	for (unsigned i = 0; i < nretired; i++)
		region_free(&retired[i]);
	nretired = 0;
	region_free(&spare);
	const char *env = getenv("RINGTRACE_CONTROL");
	if (env && !strcmp(env, "0"))
		return;
	/* --follow-fork: a trace of its own, from this point on (the
	 * selection rules were inherited with the registry). */
	if (follow.fork) {
		ringtrace__tls.busy++; /* our allocations are not the child's */
		int r = follow_start("fork");
		ringtrace__tls.busy--;
		if (r == 0)
			return;
	}
	publish_delay_ms = 100;
	start_thread();
}
