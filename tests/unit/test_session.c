/*
 * test_session.c - the tool-side session library (src/session/) and the
 * snapshot watcher's side of the control block (src/ctl/ctl_watch.c),
 * without a traced child: the options and their checks, the trace
 * writer's packets and its loss accounting on a region made in memory
 * (a full disk is /dev/full), control blocks made in memory, the watcher
 * field, the request counters and their futex.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/outdir.h"
#include "common/packet_layout.h"
#include "ctl/ctl_watch.h"
#include "session/session_int.h"

/* ---- options ----------------------------------------------------------- */

static char last_msg[2048];
static int n_msgs;

static void keep_line(enum sess_src src, const char *msg)
{
	(void)src;
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
	n_msgs++;
}

static char *prog_argv[] = { "prog", "arg", NULL };

/* Finish o, expecting a refusal whose message holds `what`. */
static void refused(struct sess_opts *o, const char *what)
{
	char err[512] = "";
	assert_int_equal(sess_opts_finish(o, err, sizeof(err)), -EINVAL);
	if (!strstr(err, what))
		fail_msg("'%s' does not say '%s'", err, what);
}

static void test_opts_checks(void **state)
{
	(void)state;
	struct sess_opts o;
	char err[512];

	sess_opts_init(&o);
	refused(&o, "no program to run");

	sess_opts_init(&o);
	o.argv = prog_argv;
	assert_int_equal(sess_opts_finish(&o, err, sizeof(err)), 0);
	assert_int_equal(o.mode, RINGTRACE__MODE_DISCARD);
	assert_int_equal(o.buf_size, (uint64_t)RB_DEFAULT_SB * RB_DEFAULT_NSB);

	/* -p: the program's settings stay; nothing to run. */
	sess_opts_init(&o);
	o.attach = "1234";
	o.argv = prog_argv;
	refused(&o, "no PROGRAM may follow");
	sess_opts_init(&o);
	o.attach = "1234";
	o.stacks = 1;
	refused(&o, "with -p");
	sess_opts_init(&o);
	o.attach = "1234";
	o.snap_on = "app:x";
	refused(&o, "--snapshot-on");
	sess_opts_init(&o);
	o.attach = "1234";
	o.snapshot = 1;
	o.snap_on = "app:x";
	assert_int_equal(sess_opts_finish(&o, err, sizeof(err)), 0);
	assert_int_equal(o.snapshot, 1); /* stays snapshot mode on a running program */

	/* Following goes with a program we start, without snapshots. */
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.follow_fork = 1;
	o.flight = 1;
	refused(&o, "--follow-fork");

	/* --snapshot on a program we start is the flight recorder, in
	 * overwrite mode. */
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.snapshot = 1;
	assert_int_equal(sess_opts_finish(&o, err, sizeof(err)), 0);
	assert_true(o.flight && !o.snapshot);
	assert_int_equal(o.mode, RINGTRACE__MODE_OVERWRITE);
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.snapshot = o.flight = 1;
	refused(&o, "the same");
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.flight = 1;
	o.mode = RINGTRACE__MODE_OVERWRITE;
	refused(&o, "no --mode");
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.min_interval = "10";
	refused(&o, "--min-interval");

	/* --mem: four times the default buffers, unless a size was given. */
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.memtrace = 1;
	assert_int_equal(sess_opts_finish(&o, err, sizeof(err)), 0);
	assert_int_equal(o.buf_size, 4ull * RB_DEFAULT_SB * RB_DEFAULT_NSB);
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.memtrace = 1;
	o.buf_size_set = 1;
	assert_int_equal(sess_opts_finish(&o, err, sizeof(err)), 0);
	assert_int_equal(o.buf_size, (uint64_t)RB_DEFAULT_SB * RB_DEFAULT_NSB);
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.aggregate = 1;
	o.flight = 1;
	refused(&o, "--aggregate");
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.aggregate = 1;
	o.follow_exec = 1;
	o.follow_fork = 1;
	/* Each followed process with counters of its own. */
	assert_int_equal(sess_opts_finish(&o, err, sizeof(err)), 0);

	/* Sizes: a power of two, sub-buffers of 4K to 4M. */
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.buf_size = 3u << 20;
	refused(&o, "--buffer-size");
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.buf_size = 64u << 10;
	o.nsb = 32; /* 2K sub-buffers */
	refused(&o, "--buffer-size");
	sess_opts_init(&o);
	o.argv = prog_argv;
	o.stack_bits = 40;
	refused(&o, "--stack-bits");
}

static void test_opts_patterns(void **state)
{
	(void)state;
	struct sess_opts o;
	char err[256];
	sess_opts_init(&o);
	assert_int_equal(sess_opts_add_pattern(&o, "", err, sizeof(err)), -EINVAL);
	assert_int_equal(sess_opts_add_pattern(&o, "app:[ab", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'app:[ab'"));
	assert_int_equal(sess_opts_add_pattern(&o, "app:[ab]", err, sizeof(err)), 0);
	assert_int_equal(sess_opts_add_pattern(&o, "db:*", err, sizeof(err)), 0);
	assert_string_equal(o.patterns, "app:[ab]");
	assert_string_equal(o.patterns + strlen("app:[ab]") + 1, "db:*");
	/* Full: refused, and what was there stays. */
	char big[600];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	int k = 0;
	for (int i = 0; i < 10 && k == 0; i++)
		k = sess_opts_add_pattern(&o, big, err, sizeof(err));
	assert_int_equal(k, -EINVAL);
	assert_non_null(strstr(err, "too many"));
	assert_true(o.patterns_len + 1 <= sizeof(o.patterns));
	assert_string_equal(o.patterns, "app:[ab]");
}

/* One line per call, whole however long (a program's own message, a long
 * path), without the trailing newline; nothing without a callback. */
static void test_log_lines(void **state)
{
	(void)state;
	char big[1500];
	memset(big, 'p', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	sess_log_fn old = sess_set_log(NULL);
	n_msgs = 0;
	sess_log(SESS_SRC_RECORD, "nobody listens\n");
	assert_int_equal(n_msgs, 0);
	sess_set_log(keep_line);
	sess_log(SESS_SRC_RECORD, "cannot write '%s/stream_%u': %s\n", big, 3u, "No space left on device");
	assert_int_equal(n_msgs, 1);
	assert_int_equal(strlen(last_msg), strlen("cannot write ''/stream_3: No space left on device") + strlen(big));
	assert_int_equal(last_msg[strlen(last_msg) - 1], 'e');
	sess_log(SESS_SRC_PROGRAM, "%s", "as it is");
	assert_string_equal(last_msg, "as it is");
	assert_ptr_equal(sess_set_log(old), keep_line);
}

/* ---- the trace writer ---------------------------------------------------- */

struct wfix {
	struct sess r;
	char dir[64];
};

/* A session over a region in memory (2 CPUs), writing into a fresh
 * directory. */
static void writer_setup(struct wfix *f)
{
	struct rb_params p = { 0 };
	p.ncpus = 2;
	p.sb_size = 4096;
	p.nsb = 4;
	p.mode = RINGTRACE__MODE_DISCARD;
	p.clock = RINGTRACE__CLOCK_MONOTONIC;
	p.reg_size = 4096;
	uint64_t size;
	assert_int_equal(rb_region_size(&p, &size), 0);
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(mem != MAP_FAILED);
	assert_int_equal(rb_region_init(mem, size, &p), 0);
	sess_init(&f->r, NULL);
	f->r.mem = mem;
	f->r.mem_size = size;
	assert_int_equal(rb_view_open(mem, size, &f->r.rb), 0);
	assert_int_equal(rb_reader_new(f->r.rb, &f->r.reader), 0);
	f->r.nsb = 4;
	assert_int_equal(sess_alloc_stream_fds(&f->r), 0);
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_session.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->r.outdir = strdup(f->dir);
	f->r.odfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->r.odfd >= 0);
}

static void writer_teardown(struct wfix *f)
{
	char path[128];
	sess_cleanup(&f->r);
	for (int c = 0; c < 2; c++) {
		snprintf(path, sizeof(path), "%s/stream_%d", f->dir, c);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/.room", f->dir);
	unlink(path);
	assert_int_equal(rmdir(f->dir), 0); /* nothing else was left */
}

/* A packet of `events` events whose header says `discarded`. */
static void fake_packet(struct rb_packet *pkt, char *buf, size_t len, uint32_t cpu, uint64_t events, uint64_t discarded)
{
	memset(buf, 0x5a, len);
	memcpy(buf + PKT_OFF(events_discarded), &discarded, 8);
	memset(pkt, 0, sizeof(*pkt));
	pkt->data = buf;
	pkt->len = len;
	pkt->events = events;
	pkt->cpu = cpu;
}

/* Whether files in DIR can be opened with O_DIRECT. */
static int dir_takes_direct(const char *dir)
{
	char path[160];
	snprintf(path, sizeof(path), "%s/direct.probe", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	unlink(path);
	return fd >= 0;
}

/* Two packets to CPU 1's stream: buffered (RINGTRACE_DIRECT_IO=0) as they
 * are; by default, where the file system takes O_DIRECT, each padded with
 * zeros to 4 KiB, its packet_size saying so and nothing else changed. */
static void writer_packets(int direct)
{
	struct wfix f;
	if (direct)
		unsetenv("RINGTRACE_DIRECT_IO");
	else
		setenv("RINGTRACE_DIRECT_IO", "0", 1);
	writer_setup(&f);
	const int padded = direct && dir_takes_direct(f.dir);
	char a[256], b[512];
	struct rb_packet pkt;
	fake_packet(&pkt, a, sizeof(a), 1, 10, 3);
	sess_write_packet(&f.r, &pkt);
	fake_packet(&pkt, b, sizeof(b), 1, 20, 7);
	sess_write_packet(&f.r, &pkt);
	unsetenv("RINGTRACE_DIRECT_IO");
	/* Whole packets, appended in order, to the stream of their CPU only. */
	char path[128];
	struct stat st;
	const size_t want = padded ? 2 * 4096 : sizeof(a) + sizeof(b);
	snprintf(path, sizeof(path), "%s/stream_1", f.dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, want);
	if (padded) {
		static char got[2 * 4096];
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(read(fd, got, sizeof(got)), sizeof(got));
		close(fd);
		uint64_t bits = 4096 * 8, size;
		for (int k = 0; k < 2; k++) {
			const char *p = got + k * 4096, *orig = k ? b : a;
			const size_t len = k ? sizeof(b) : sizeof(a);
			memcpy(&size, p + PKT_OFF(packet_size), 8);
			assert_int_equal(size, bits);
			assert_memory_equal(p, orig, PKT_OFF(packet_size));
			assert_memory_equal(p + PKT_OFF(packet_size) + 8, orig + PKT_OFF(packet_size) + 8,
					    len - PKT_OFF(packet_size) - 8);
			for (size_t i = len; i < 4096; i++)
				assert_int_equal(p[i], 0);
		}
	}
	snprintf(path, sizeof(path), "%s/stream_0", f.dir);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(f.r.bytes, want);
	/* The loss accounting knows the last packet's discarded count. */
	assert_true(f.r.wrote[1] && !f.r.wrote[0]);
	assert_int_equal(f.r.disc_written[1], 7);
	assert_int_equal(f.r.unwritten_total, 0);
	assert_int_equal(f.r.write_errno, 0);
	struct sess_stats s;
	sess_stats_get(&f.r, &s);
	assert_int_equal(s.bytes, want);
	assert_int_equal(s.lost_unwritten, 0);
	writer_teardown(&f);
}

static void test_writer_packets(void **state)
{
	(void)state;
	writer_packets(0);
	writer_packets(1);
}

/* The disk is full: the packet is not in the trace (no part of it), its
 * events are counted as not written on their CPU, the message names the
 * file, and nothing more is written afterwards, on any CPU. */
static void test_writer_disk_full(void **state)
{
	(void)state;
	struct wfix f;
	writer_setup(&f);
	f.r.fds[0] = open("/dev/full", O_WRONLY | O_CLOEXEC);
	assert_true(f.r.fds[0] >= 0);
	sess_log_fn old = sess_set_log(keep_line);
	n_msgs = 0;
	char a[256], b[256];
	struct rb_packet pkt;
	fake_packet(&pkt, a, sizeof(a), 0, 10, 0);
	sess_write_packet(&f.r, &pkt);
	assert_int_equal(n_msgs, 1);
	assert_non_null(strstr(last_msg, "stream_0"));
	assert_non_null(strstr(last_msg, f.dir));
	assert_non_null(strstr(last_msg, strerror(ENOSPC)));
	fake_packet(&pkt, b, sizeof(b), 1, 5, 0);
	sess_write_packet(&f.r, &pkt);
	sess_write_packet(&f.r, &pkt);
	assert_int_equal(n_msgs, 1); /* said once */
	sess_set_log(old);
	assert_int_equal(f.r.write_errno, ENOSPC);
	assert_int_equal(f.r.unwritten[0], 10);
	assert_int_equal(f.r.unwritten[1], 10);
	assert_int_equal(f.r.unwritten_total, 20);
	assert_int_equal(f.r.bytes, 0);
	assert_true(!f.r.wrote[0] && !f.r.wrote[1]);
	char path[128];
	struct stat st;
	snprintf(path, sizeof(path), "%s/stream_1", f.dir);
	assert_int_equal(stat(path, &st), -1);
	struct sess_stats s;
	sess_stats_get(&f.r, &s);
	assert_int_equal(s.lost_unwritten, 20);
	assert_int_equal(s.bytes, 0);
	writer_teardown(&f);
}

/* A stream file that cannot be created: counted as not written, and the
 * message names the path. */
static void test_writer_cannot_create(void **state)
{
	(void)state;
	struct wfix f;
	writer_setup(&f);
	char path[128];
	snprintf(path, sizeof(path), "%s/stream_0", f.dir);
	assert_int_equal(mkdir(path, 0700), 0); /* in the way */
	sess_log_fn old = sess_set_log(keep_line);
	n_msgs = 0;
	char a[256];
	struct rb_packet pkt;
	fake_packet(&pkt, a, sizeof(a), 0, 4, 0);
	sess_write_packet(&f.r, &pkt);
	sess_set_log(old);
	assert_int_equal(n_msgs, 1);
	assert_non_null(strstr(last_msg, "cannot create"));
	assert_non_null(strstr(last_msg, path));
	assert_int_equal(f.r.unwritten[0], 4);
	assert_int_not_equal(f.r.write_errno, 0);
	assert_int_equal(rmdir(path), 0);
	writer_teardown(&f);
}

/* Append a registry entry the way the library does (docs/design.md
 * section 4) and publish it. */
static void reg_put(struct ringtrace__rb *rb, uint32_t kind, uint32_t id, const char *const *str, int n)
{
	char *log = (char *)rb->hdr + rb->reg_off;
	uint64_t pos = rb->hdr->reg_used;
	size_t len = 16;
	for (int i = 0; i < n; i++)
		len += strlen(str[i]) + 1;
	len = (len + 7) & ~(size_t)7;
	assert_true(pos + len <= rb->reg_size);
	uint32_t w[4] = { (uint32_t)len, kind, id, 0 };
	memset(log + pos, 0, len);
	memcpy(log + pos, w, 16);
	size_t off = 16;
	for (int i = 0; i < n; i++) {
		memcpy(log + pos + off, str[i], strlen(str[i]) + 1);
		off += strlen(str[i]) + 1;
	}
	__atomic_store_n(&rb->hdr->reg_used, pos + len, __ATOMIC_RELEASE);
}

static int file_has(const char *dir, const char *name, const char *what)
{
	char path[128], buf[65536];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, what) != NULL;
}

/* Registry -> event classes -> metadata: described events are in the
 * metadata with their fields, a signature ringtrace cannot describe is
 * dropped with a line naming the event, the program's own messages are
 * passed on as they are, and a damaged log stops the reading with a line
 * naming the process. */
static void test_writer_registry_metadata(void **state)
{
	(void)state;
	struct wfix f;
	writer_setup(&f);
	f.r.child = 4242;
	f.r.progname = "prog";
	const char *ev1[] = { "app", "tick", "u32 n;string what", "prog.c:1" };
	const char *ev2[] = { "app", "odd", "u32 n; nonsense", "prog.c:2" };
	const char *msg[] = { "ringtrace: hello from the program" };
	reg_put(f.r.rb, 1, 7, ev1, 4);
	reg_put(f.r.rb, 1, 8, ev2, 4);
	reg_put(f.r.rb, 2, 0, msg, 1);
	sess_log_fn old = sess_set_log(keep_line);
	n_msgs = 0;
	sess_read_registry(&f.r);
	assert_int_equal(n_msgs, 2);
	assert_string_equal(last_msg, "ringtrace: hello from the program");
	assert_int_equal(f.r.nevents, 1);
	assert_true(f.r.reg_changed);
	assert_int_equal(sess_write_metadata(&f.r, 0), 0);
	assert_true(file_has(f.dir, "metadata", "\"app:tick\""));
	assert_true(file_has(f.dir, "metadata", "what"));
	assert_false(file_has(f.dir, "metadata", "app:odd"));
	assert_true(file_has(f.dir, "metadata", "ringtrace_attached = 0"));
	/* Read again: nothing new. */
	sess_read_registry(&f.r);
	assert_int_equal(n_msgs, 2);
	assert_int_equal(f.r.nevents, 1);
	/* An entry whose length runs past the log: damaged. */
	char *log = (char *)f.r.rb->hdr + f.r.rb->reg_off;
	uint64_t pos = f.r.rb->hdr->reg_used;
	uint32_t w[4] = { 1u << 30, 1, 9, 0 };
	memcpy(log + pos, w, 16);
	__atomic_store_n(&f.r.rb->hdr->reg_used, pos + 64, __ATOMIC_RELEASE);
	sess_read_registry(&f.r);
	assert_int_equal(n_msgs, 3);
	assert_non_null(strstr(last_msg, "damaged"));
	assert_non_null(strstr(last_msg, "4242"));
	sess_set_log(old);
	char path[128];
	snprintf(path, sizeof(path), "%s/metadata", f.dir);
	assert_int_equal(unlink(path), 0);
	writer_teardown(&f);
}

/* The fullest buffer: what was reserved and not taken, per CPU. */
static void test_stats_fill(void **state)
{
	(void)state;
	struct wfix f;
	writer_setup(&f);
	struct sess_stats s;
	sess_stats_get(&f.r, &s);
	assert_int_equal(s.fullest_pct, 0);
	/* Half of CPU 1's 16 KiB reserved, one of its sub-buffers taken. */
	struct ringtrace__rb_cpu *cc = f.r.rb->cpu[1].ctl;
	cc->state = 12288;
	cc->read_subbufs = 1;
	cc->lost_full = 5;
	sess_stats_get(&f.r, &s);
	assert_int_equal(s.fullest_cpu, 1);
	assert_int_equal(s.fullest_pct, 50);
	assert_int_equal(s.lost_full, 5);
	/* Overwritten far past the reader: full. */
	cc->state = 1u << 20;
	sess_stats_get(&f.r, &s);
	assert_int_equal(s.fullest_pct, 100);
	cc->state = 0;
	cc->read_subbufs = 0;
	writer_teardown(&f);
}

/* A handle on a block in our own memory: nothing maps a file. */
static void mem_handle(struct ctl_handle *h)
{
	memset(h, 0, sizeof(*h));
	h->b = calloc(1, sizeof(*h->b));
	assert_non_null(h->b);
	h->pid = getpid();
	h->procfd = -1;
}

/* A pid that no process has: a child of ours, reaped. */
static pid_t dead_pid(void)
{
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0)
		_exit(0);
	assert_int_equal(waitpid(p, NULL, 0), p);
	return p;
}

static void test_watch_claim(void **state)
{
	(void)state;
	struct ctl_handle h;
	mem_handle(&h);
	pid_t holder = 0;
	/* Free: ours, and ours again. */
	assert_int_equal(ctl_watch_claim(&h, &holder), 0);
	assert_int_equal(h.b->watcher, (uint32_t)getpid());
	assert_int_equal(ctl_watch_claim(&h, &holder), 0);
	/* A live watcher keeps it (init is always alive). */
	h.b->watcher = 1;
	assert_int_equal(ctl_watch_claim(&h, &holder), -EBUSY);
	assert_int_equal(holder, 1);
	assert_int_equal(h.b->watcher, 1);
	/* Not ours to release. */
	ctl_watch_release(&h);
	assert_int_equal(h.b->watcher, 1);
	/* A dead watcher's field is taken over. */
	h.b->watcher = (uint32_t)dead_pid();
	assert_int_equal(ctl_watch_claim(&h, NULL), 0);
	assert_int_equal(h.b->watcher, (uint32_t)getpid());
	ctl_watch_release(&h);
	assert_int_equal(h.b->watcher, 0);
	/* A handle without a block: nothing to release. */
	struct ctl_handle none = { 0 };
	ctl_watch_release(&none);
	free(h.b);
}

struct waiter {
	uint32_t *word;
	uint32_t val;
	long ret;
	int err;
};

static void *wait_word(void *arg)
{
	struct waiter *w = arg;
	struct timespec d = { 30, 0 };
	w->ret = ctl_futex(w->word, FUTEX_WAIT, w->val, &d);
	w->err = w->ret < 0 ? errno : 0;
	return NULL;
}

/* A program starting under the flight recorder sleeps on the watcher
 * word until it is claimed: the claim wakes it. */
static void test_watch_claim_wakes(void **state)
{
	(void)state;
	struct ctl_handle h;
	mem_handle(&h);
	struct waiter w = { &h.b->watcher, 0, 0, 0 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, wait_word, &w), 0);
	assert_int_equal(ctl_watch_claim(&h, NULL), 0);
	pthread_join(th, NULL);
	/* Woken (0), or the word had changed before it slept (EAGAIN):
	 * never the 30 s timeout. */
	assert_true(w.ret == 0 || w.err == EAGAIN);
	free(h.b);
}

static void test_snap_counts_and_trigger(void **state)
{
	(void)state;
	struct ctl_handle h;
	mem_handle(&h);
	h.b->snap_req = 5;
	h.b->snap_trig = 2;
	h.b->snap_served = 4;
	h.b->snap_count = 9;
	snprintf(h.b->trigger, sizeof(h.b->trigger), "app:request if ms > 100");
	struct ctl_snap_counts c;
	ctl_snap_counts(&h, &c);
	assert_int_equal(c.req, 5);
	assert_int_equal(c.trig, 2);
	assert_int_equal(ctl_snap_served(&h), 4);
	assert_int_equal(ctl_snap_count(&h), 9);
	h.b->snap_state = CTL_SNAP_HELD;
	assert_int_equal(ctl_snap_state(&h), CTL_SNAP_HELD);
	/* A region mapped before the block existed takes the block's
	 * generation and descriptor as the live one. */
	h.b->ring_gen = 12;
	h.b->ring_fd = 5;
	struct ctl_ring live = { 0 };
	ctl_watch_adopt(&h, &live);
	assert_int_equal(live.gen, 12);
	assert_int_equal(live.fdn, 5);
	char buf[300];
	ctl_snap_trigger(&h, buf, sizeof(buf));
	assert_string_equal(buf, "app:request if ms > 100");
	ctl_snap_trigger(&h, buf, 4);
	assert_string_equal(buf, "app");
	/* A text without its NUL (the block is the program's to write):
	 * copied within the field, terminated. */
	memset(h.b->trigger, 'x', sizeof(h.b->trigger));
	memset(buf, 'y', sizeof(buf));
	ctl_snap_trigger(&h, buf, sizeof(buf));
	assert_int_equal(strlen(buf), sizeof(h.b->trigger));
	free(h.b);
}

static void *post_request(void *arg)
{
	struct ctl_handle *h = arg;
	/* As ringtrace_snapshot() does: count, then wake. */
	__atomic_fetch_add(&h->b->snap_req, 1, __ATOMIC_RELEASE);
	ctl_futex(&h->b->snap_req, FUTEX_WAKE, INT_MAX, NULL);
	return NULL;
}

static void test_snap_wait(void **state)
{
	(void)state;
	struct ctl_handle h;
	mem_handle(&h);
	h.b->snap_req = 3;
	/* Moved already: no sleep. */
	assert_int_equal(ctl_snap_wait(&h, 2, 30000), 0);
	/* Nothing comes: the timeout. */
	assert_int_equal(ctl_snap_wait(&h, 3, 1), -ETIMEDOUT);
	/* A request comes: woken, and the counter says so. */
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, post_request, &h), 0);
	while (__atomic_load_n(&h.b->snap_req, __ATOMIC_ACQUIRE) == 3)
		assert_int_equal(ctl_snap_wait(&h, 3, 30000), 0);
	pthread_join(th, NULL);
	struct ctl_snap_counts c;
	ctl_snap_counts(&h, &c);
	assert_int_equal(c.req, 4);
	free(h.b);
}

static void test_swapped_since(void **state)
{
	(void)state;
	struct ctl_handle h;
	mem_handle(&h);
	struct ctl_ring old = { 0 };
	old.gen = 7;
	h.b->ring_gen = 8;
	h.b->snap_state = CTL_SNAP_READY;
	/* Nothing mapped: nothing to write. */
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 0);
	old.rb = (struct ringtrace__rb *)&old; /* only compared with NULL */
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 1);
	/* Held by us: still ours to write. */
	h.b->snap_state = CTL_SNAP_HELD;
	h.b->snap_holder = (uint32_t)getpid();
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 1);
	/* Held by another controller: its snapshot, not ours. */
	h.b->snap_holder = (uint32_t)getpid() + 1;
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 0);
	/* Two swaps since: `old` went live again and holds newer events. */
	h.b->snap_state = CTL_SNAP_READY;
	h.b->ring_gen = 9;
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 0);
	/* No swap. */
	h.b->ring_gen = 7;
	assert_int_equal(ctl_snap_swapped_since(&h, &old), 0);
	free(h.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts_checks),
		cmocka_unit_test(test_opts_patterns),
		cmocka_unit_test(test_log_lines),
		cmocka_unit_test(test_writer_packets),
		cmocka_unit_test(test_writer_disk_full),
		cmocka_unit_test(test_writer_cannot_create),
		cmocka_unit_test(test_writer_registry_metadata),
		cmocka_unit_test(test_stats_fill),
		cmocka_unit_test(test_watch_claim),
		cmocka_unit_test(test_watch_claim_wakes),
		cmocka_unit_test(test_snap_counts_and_trigger),
		cmocka_unit_test(test_snap_wait),
		cmocka_unit_test(test_swapped_since),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
