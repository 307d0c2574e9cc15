/*
 * writer.c - the trace writer of a session: the program's registry ->
 * event classes -> CTF metadata, its closed sub-buffers -> packets
 * appended to one stream file per CPU, thread names from /proc, the clock
 * and its checks, loss accounting by cause, and the summary of a
 * recording.
 *
 * Called by every mode of the session library (run.c, attach.c, follow.c,
 * snapshot.c, recover.c, show.c) from the thread that owns the struct
 * sess: one round every 100 ms or when a writer closes a sub-buffer, each
 * taking at most nsb sub-buffers per CPU, so a writer faster than the disk
 * cannot starve the rest of the loop. Everything read from the region is
 * validated (registry entries, packets); the program is never made to
 * wait.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/outdir.h"
#include "common/packet_layout.h"
#include "ctf/metadata.h"
#include "session/session_int.h"
#include "stackmap/maplog.h"
#include "stackmap/stack_files.h"
#include "stackmap/stackmap.h"

const struct sess_opts sess_no_opts = { .sz = sizeof(struct sess_opts) };

static sess_log_fn log_fn;

sess_log_fn sess_set_log(sess_log_fn fn)
{
	/* Set before a session starts, read by its threads: they are
	 * started after it (pthread_create orders it). */
	sess_log_fn old = log_fn;
	log_fn = fn;
	return old;
}

void sess_log(enum sess_src src, const char *fmt, ...)
{
	if (!log_fn)
		return;
	char buf[1024], *line = buf;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* A longer line (a program's own message, a long path) whole. */
	if ((size_t)n >= sizeof(buf) && (line = malloc((size_t)n + 1))) {
		va_start(ap, fmt);
		vsnprintf(line, (size_t)n + 1, fmt, ap);
		va_end(ap);
	} else if (!line) {
		line = buf;
		n = (int)sizeof(buf) - 1;
	}
	if (n && line[n - 1] == '\n')
		line[n - 1] = 0;
	log_fn(src, line);
	if (line != buf)
		free(line);
}

void sess_init(struct sess *r, const struct sess_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->o = o ? o : &sess_no_opts;
	r->outdir_opt = r->o->outdir;
	r->out_flags = r->o->outdir_flags;
	r->nsb = r->o->nsb;
	r->mode = r->o->mode;
	r->run.shm_fd = -1;
	r->run.agg_fd = -1;
}

int sess_stopped(const struct sess *r)
{
	return r->o->stop && *r->o->stop;
}

/* ---- output ---------------------------------------------------------- */

int sess_dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *e;
	int empty = 1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty;
}

/*
 * Create (or take, if empty) the output directory and open it once: every
 * file of the trace is created relative to r->odfd (common/outdir.h).
 */
int sess_make_outdir(struct sess *r)
{
	char why[256];
	if (r->outdir_opt) {
		int at = r->outdir_at_set ? r->outdir_at : AT_FDCWD;
		const char *name = r->outdir_opt, *slash = strrchr(name, '/');
		if (at != AT_FDCWD && slash)
			name = slash + 1;
		int fd = outdir_open(at, name, OUTDIR_CREATE | OUTDIR_EMPTY | r->out_flags, &r->outdir_created,
				     why, sizeof(why));
		if (fd < 0) {
			sess_log(SESS_SRC_RECORD, "output directory '%s' %s\n", r->outdir_opt, why);
			return fd;
		}
		r->outdir = strdup(r->outdir_opt);
		if (!r->outdir) {
			close(fd);
			return -ENOMEM;
		}
		r->odfd = fd;
		return 0;
	}
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	const char *base = strrchr(r->progname, '/');
	base = base ? base + 1 : r->progname;
	for (int n = 1; n < 1000; n++) {
		char *path;
		int k = n == 1 ? asprintf(&path, "ringtrace-%s-%s", base, stamp)
			       : asprintf(&path, "ringtrace-%s-%s-%d", base, stamp, n);
		if (k < 0)
			return -ENOMEM;
		int fd = outdir_open(AT_FDCWD, path, OUTDIR_CREATE | OUTDIR_NEW | r->out_flags, NULL, why, sizeof(why));
		if (fd >= 0) {
			r->outdir = path;
			r->odfd = fd;
			r->outdir_created = 1;
			return 0;
		}
		free(path);
		if (fd != -EEXIST) {
			sess_log(SESS_SRC_RECORD, "cannot create an output directory: %s\n", why);
			return fd;
		}
	}
	sess_log(SESS_SRC_RECORD, "cannot find a free output directory name (ringtrace-%s-%s-N)\n", base, stamp);
	return -EEXIST;
}

/* Hold room for the final metadata: twice the last one (it grows with
 * the events and threads seen), 64 KiB at least. A failure is not fatal:
 * the disk may be full already. */
static void sess_keep_room(struct sess *r)
{
	uint64_t want = 2 * r->meta_bytes;
	if (want < 65536)
		want = 65536;
	r->room_tried = 1;
	disk_room_hold(&r->room, r->odfd, want);
}

/* A packet that is not in the trace: its events are counted per stream
 * (sess_finish() puts them in the summary and the metadata). */
static void sess_count_unwritten(struct sess *r, const struct rb_packet *pkt, int err)
{
	r->unwritten[pkt->cpu] += pkt->events;
	r->unwritten_total += pkt->events;
	if (!r->write_errno)
		r->write_errno = err;
	r->write_failed = 1;
}

/* Append one whole packet; on a short write, cut the file back so that it
 * only ever holds whole packets (a truncated packet makes the trace
 * unreadable). After a failure nothing more is written: the trace ends
 * where its files end, and what follows is counted. */
void sess_write_packet(struct sess *r, const struct rb_packet *pkt)
{
	if (r->write_errno) {
		sess_count_unwritten(r, pkt, r->write_errno);
		return;
	}
	if (!r->room_tried)
		sess_keep_room(r);
	int *fd = &r->fds[pkt->cpu];
	if (*fd < 0) {
		char name[32];
		snprintf(name, sizeof(name), "stream_%u", pkt->cpu);
		*fd = outdir_create(r->odfd, name, 0644);
		if (*fd < 0) {
			sess_log(SESS_SRC_RECORD, "cannot create '%s/%s': %s; events from now on are not saved\n", r->outdir,
				name, strerror(-*fd));
			int err = -*fd;
			*fd = -1;
			sess_count_unwritten(r, pkt, err);
			return;
		}
	}
	off_t start = lseek(*fd, 0, SEEK_END);
	size_t done = 0;
	while (done < pkt->len) {
		ssize_t k = write(*fd, pkt->data + done, pkt->len - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int err = k < 0 ? errno : ENOSPC; /* a write of 0 bytes: no room */
			sess_log(SESS_SRC_RECORD, "cannot write '%s/stream_%u': %s; events from now on are not saved\n",
				r->outdir, pkt->cpu, strerror(err));
			if (start >= 0 && ftruncate(*fd, start) < 0) {
				/* nothing more to do: the message above stands */
			}
			sess_count_unwritten(r, pkt, err);
			return;
		}
		done += (size_t)k;
	}
	r->bytes += pkt->len;
	memcpy(&r->disc_written[pkt->cpu], pkt->data + PKT_OFF(events_discarded), 8);
	r->wrote[pkt->cpu] = 1;
}

/* Take at most `max` sub-buffers per CPU (0: all), so that a writer faster
 * than the disk cannot keep the main loop from its other duties. Returns
 * how many were taken. */
unsigned sess_consume(struct sess *r, unsigned max)
{
	struct rb_packet pkt;
	unsigned n = 0;
	for (uint32_t c = 0; c < r->rb->ncpus; c++) {
		for (unsigned k = 0; (max == 0 || k < max) && rb_reader_get(r->reader, c, &pkt) > 0; k++) {
			sess_write_packet(r, &pkt);
			rb_reader_put(r->reader, c);
			n++;
		}
	}
	return n;
}

/* ---- registry ---------------------------------------------------------- */

static struct sess_event *sess_event_by_id(struct sess *r, uint32_t id)
{
	for (size_t i = 0; i < r->nevents; i++)
		if (r->events[i].id == id)
			return &r->events[i];
	return NULL;
}

static void sess_add_event(struct sess *r, uint32_t id, const char *provider, const char *name,
		      const char *signature)
{
	struct sig_field fields[SIG_FIELDS_MAX];
	size_t n;
	if (id == 0 || sess_event_by_id(r, id))
		return;
	if (sig_parse(signature, fields, SIG_FIELDS_MAX, &n) < 0) {
		sess_log(SESS_SRC_RECORD, "event %s:%s has fields ringtrace cannot describe (\"%s\"); its records are dropped from the trace\n",
			provider, name, signature);
		return;
	}
	if (r->nevents == r->cap_events) {
		size_t cap = r->cap_events ? r->cap_events * 2 : 32;
		struct sess_event *ne = realloc(r->events, cap * sizeof(*ne));
		if (!ne)
			return;
		r->events = ne;
		r->cap_events = cap;
	}
	struct sess_event *e = &r->events[r->nevents];
	e->id = id;
	e->provider = strdup(provider);
	e->name = strdup(name);
	e->signature = strdup(signature);
	e->fields = malloc((n ? n : 1) * sizeof(*fields));
	if (!e->provider || !e->name || !e->signature || !e->fields) {
		free(e->provider);
		free(e->name);
		free(e->signature);
		free(e->fields);
		return;
	}
	memcpy(e->fields, fields, n * sizeof(*fields));
	e->nfields = n;
	r->nevents++;
	r->reg_changed = 1;
}

/* Read the entries the program appended since last time. */
void sess_read_registry(struct sess *r)
{
	struct ringtrace__shm_header *h = r->rb->hdr;
	uint64_t used = __atomic_load_n(&h->reg_used, __ATOMIC_ACQUIRE);
	/* Only the offsets validated at open (the program could change the
	 * header's copies). */
	if (used > r->rb->reg_size)
		used = r->rb->reg_size;
	const char *base = (const char *)h + r->rb->reg_off;
	struct ctl_log_entry e;
	int k;
	while ((k = ctl_log_next(base, used, &r->reg_pos, &e)) > 0) {
		if (e.kind == 1 && e.n == 4)
			sess_add_event(r, e.id, e.s[0], e.s[1], e.s[2]);
		else if (e.kind == 2 && e.n >= 1)
			sess_log(SESS_SRC_PROGRAM, "%s", e.s[0]);
	}
	if (k < 0) {
		sess_log(SESS_SRC_RECORD, "the event registry of process %d is damaged; later events are not described\n",
			 (int)r->child);
		r->reg_pos = used;
	}
}

int sess_payload_size(void *arg, uint32_t id, const char *payload, size_t avail, size_t *ret)
{
	struct sess_event *e = sess_event_by_id(arg, id);
	if (!e)
		return -EBADMSG;
	return sig_record_size(e->fields, e->nfields, payload, avail, ret);
}

/* ---- threads ----------------------------------------------------------- */

void sess_scan_threads(struct sess *r)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)r->child);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		unsigned long tid = strtoul(e->d_name, &end, 10);
		if (*end || tid == 0 || tid > UINT32_MAX)
			continue;
		char cpath[96], comm[64] = "";
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%lu/comm", (int)r->child, tid);
		FILE *f = fopen(cpath, "re");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		if (!comm[0])
			continue;
		struct sess_thread *t = NULL;
		for (size_t i = 0; i < r->nthreads; i++)
			if (r->threads[i].tid == tid)
				t = &r->threads[i];
		if (!t) {
			if (r->nthreads == r->cap_threads) {
				size_t cap = r->cap_threads ? r->cap_threads * 2 : 16;
				struct sess_thread *nt = realloc(r->threads, cap * sizeof(*nt));
				if (!nt)
					break;
				r->threads = nt;
				r->cap_threads = cap;
			}
			t = &r->threads[r->nthreads++];
			t->tid = (uint32_t)tid;
		}
		snprintf(t->comm, sizeof(t->comm), "%s", comm);
	}
	closedir(d);
}

/* The env's thread names: one key each (thread_name_<tid>). */
static struct ctf_thread_name *sess_thread_names(const struct sess *r)
{
	struct ctf_thread_name *v = calloc(r->nthreads ? r->nthreads : 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nthreads; i++) {
		v[i].tid = r->threads[i].tid;
		v[i].comm = r->threads[i].comm;
	}
	return v;
}

/* ---- the clock ----------------------------------------------------------- */


/* The value of an environment variable, fit to print on one line. */
static void sess_printable(const char *s, char *buf, size_t size)
{
	size_t i = 0;
	for (; s[i] && i + 4 < size; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (s[i])
		buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
	buf[i] = 0;
}

/* Choose the clock and check the TSC before trusting it: the one line
 * that says which clock and why. */
void sess_choose_clock(struct sess *r)
{
	struct clk_inputs in;
	struct clk_choice c;
	clk_inputs_read(&in);
	if (in.override == CLK_OVERRIDE_BAD) {
		char v[48];
		sess_printable(getenv("RINGTRACE_CLOCK"), v, sizeof(v));
		snprintf(r->clock_bad, sizeof(r->clock_bad),
			 "RINGTRACE_CLOCK='%s' is not a clock (tsc or monotonic): choosing as if unset", v);
	}
	clk_decide(&in, &c);
	int k = 0;
	if (c.clock == RINGTRACE__CLOCK_TSC) {
		k = clk_check_tsc(20, &r->check);
		in.check = k == 0 && r->check.passed ? CLK_CHECK_PASSED : CLK_CHECK_FAILED;
		clk_decide(&in, &c);
	}
	r->clock = c.clock;
	if (in.check == CLK_CHECK_PASSED && r->check.ncpus < 2)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (one CPU)", c.why);
	else if (in.check == CLK_CHECK_PASSED)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s, skew <= %llu ns", c.why,
			 (unsigned long long)r->check.skew_ns);
	else if (in.check == CLK_CHECK_FAILED && r->check.forced)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (RINGTRACE_CLOCK_CHECK=fail)", c.why);
	else if (in.check == CLK_CHECK_FAILED && k < 0)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (%s)", c.why, strerror(-k));
	else if (in.check == CLK_CHECK_FAILED)
		snprintf(r->clock_why, sizeof(r->clock_why), "%s (a reading went back %llu ns from CPU %d on CPU %d)",
			 c.why, (unsigned long long)r->check.back_ns, r->check.back_from, r->check.back_to);
	else
		snprintf(r->clock_why, sizeof(r->clock_why), "%s", c.why);
	r->watch.every_ms = 1000;
	r->watch.last_ms = sess_mono_ms();
	/* Tests only: CLOCK_MONOTONIC steps by this much against the TSC
	 * from the second periodic sample on, as a migrated VM's would. */
	const char *tj = getenv("RINGTRACE_CLOCK_TEST_JUMP_NS");
	if (tj)
		r->watch.test_jump_ns = strtoll(tj, NULL, 10);
}

/* Once the recording runs (bad input stays one line): the clock and why. */
void sess_say_clock(const struct sess *r)
{
	if (r->clock_bad[0])
		sess_log(SESS_SRC_RECORD, "%s\n", r->clock_bad);
	sess_log(SESS_SRC_RECORD, "clock %s\n", r->clock_why);
}

/* The end of the recording, c1 its last sample: did the TSC keep to
 * CLOCK_MONOTONIC? (Drift in ppm, and the size of any jump.) */
static void sess_clock_drift_end(struct sess *r, const struct clk_sample *c1)
{
	if (r->clock != RINGTRACE__CLOCK_TSC)
		return;
	size_t n = clk_watch_end(&r->watch, &r->c0, c1, &r->drift);
	/* A drift needs two intervals: "" for a recording under 2 s. */
	if (n >= 3)
		snprintf(r->drift_str, sizeof(r->drift_str), "%.3f", r->drift.drift_ppm);
}

/* ---- metadata ---------------------------------------------------------- */

int sess_write_metadata(struct sess *r, int final)
{
	struct clk_sample c1;
	struct clk_calib cal;
	if (final) {
		/* Calibrate over at least 50 ms. */
		clk_sample(r->clock, &c1);
		if (c1.mono_ns - r->c0.mono_ns < 50000000u) {
			uint64_t rest = 50000000u - (c1.mono_ns - r->c0.mono_ns);
			struct timespec ts = { 0, (long)rest };
			nanosleep(&ts, NULL);
			clk_sample(r->clock, &c1);
		}
		sess_clock_drift_end(r, &c1);
	} else {
		clk_sample(r->clock, &c1);
	}
	clk_calibrate(r->clock, &r->c0, &c1, &cal);

	struct ctf_event_class *ev = calloc(r->nevents ? r->nevents : 1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	for (size_t i = 0; i < r->nevents; i++) {
		ev[i].id = r->events[i].id;
		ev[i].provider = r->events[i].provider;
		ev[i].name = r->events[i].name;
		ev[i].signature = r->events[i].signature;
	}
	char host[256] = "localhost";
	gethostname(host, sizeof(host) - 1);
	const char *procname = strrchr(r->progname, '/');
	procname = procname ? procname + 1 : r->progname;
	struct ctf_thread_name *threads = sess_thread_names(r);
	struct ctf_env_kv env[] = {
		{ "ringtrace_mode", r->mode == RINGTRACE__MODE_OVERWRITE ? "overwrite" : "discard", 0 },
		{ "ringtrace_clock", r->clock == RINGTRACE__CLOCK_TSC ? "tsc" : "monotonic", 0 },
		/* Why that clock, what the checks measured ("" and 0 when not
		 * measured: -p, or the recording has not ended). */
		{ "ringtrace_clock_reason", r->clock_why, 0 },
		{ "ringtrace_clock_skew_ns", NULL, (int64_t)r->check.skew_ns },
		{ "ringtrace_clock_drift_ppm", r->drift_str, 0 },
		{ "ringtrace_clock_jump_ns", NULL, (int64_t)r->drift.jump_ns },
		{ "ringtrace_rseq", NULL, r->rb->hdr->use_rseq },
		{ "ringtrace_subbuf_size", NULL, (int64_t)(r->rb->sb_mask + 1) },
		{ "ringtrace_subbuf_count", NULL, (int64_t)r->nsb },
		/* Only final once the recording has ended. */
		{ "ringtrace_lost_full", NULL, (int64_t)r->lost_full },
		{ "ringtrace_lost_overwrite", NULL, (int64_t)r->lost_overwrite },
		{ "ringtrace_lost_too_big", NULL, (int64_t)r->lost_too_big },
		{ "ringtrace_lost_no_rseq", NULL, (int64_t)r->lost_nocpu },
		{ "ringtrace_lost_crash", NULL, (int64_t)r->lost_crash },
		/* Events the recorder took but could not write (disk full):
		 * the trace is cut; why, in a few words. */
		{ "ringtrace_lost_unwritten", NULL, (int64_t)r->unwritten_total },
		{ "ringtrace_write_error", r->write_errno ? strerror(r->write_errno) : "", 0 },
		/* Attached to a running program: packet numbers and discarded
		 * counts do not start at 0, and that is no loss. */
		{ "ringtrace_attached", NULL, r->attached ? 1 : 0 },
		/* Snapshots only (0 and "" otherwise). */
		{ "ringtrace_snapshot", NULL, (int64_t)r->snap.no },
		{ "ringtrace_snapshot_trigger", r->snap.trigger ? r->snap.trigger : "", 0 },
		{ "ringtrace_snapshot_time", r->snap.time, 0 },
		/* A followed process only (the last two): how it came, from whom. */
		{ "ringtrace_follow", r->followed.kind ? r->followed.kind : "", 0 },
		{ "ringtrace_parent_vpid", NULL, (int64_t)r->followed.ppid },
	};
	struct ctf_trace_desc t = { 0 };
	memcpy(t.uuid, r->uuid, 16);
	t.clock.freq = cal.freq;
	t.clock.offset_s = cal.offset_s;
	t.clock.offset = cal.offset;
	memcpy(t.clock.uuid, r->uuid, 16);
	t.clock.description = r->clock == RINGTRACE__CLOCK_TSC
				      ? "TSC calibrated against CLOCK_MONOTONIC, offset to the epoch"
				      : "CLOCK_MONOTONIC, offset to the epoch";
	t.hostname = host;
	t.procname = procname;
	t.tracer_version = RINGTRACE_VERSION;
	t.threads = threads;
	t.n_threads = threads ? r->nthreads : 0;
	t.vpid = r->child;
	size_t n_env = sizeof(env) / sizeof(env[0]) - (r->followed.kind ? 0 : 2);
	struct ctf_env_kv *all = NULL;
	char (*keys)[48] = NULL;
	if (final && !r->meta_mem) {
		/* Per stream, what the trace must account for: the events its
		 * program tried to write, and those the recorder lost after
		 * the buffer (not written; unreadable after a crash). A
		 * checker then proves, from the trace alone, events +
		 * events_discarded + these == written. Attached to a running
		 * program, the ring's counts began before the recording: no
		 * written count then. */
		uint32_t ncpus = r->rb->ncpus;
		all = calloc(n_env + 4 * (size_t)ncpus, sizeof(*all));
		keys = calloc(4 * (size_t)ncpus, sizeof(*keys));
		if (!all || !keys) {
			free(all);
			free(keys);
			free(threads);
			free(ev);
			return -ENOMEM;
		}
		memcpy(all, env, n_env * sizeof(*all));
		size_t k = 0;
		for (uint32_t c = 0; c < ncpus; c++) {
			uint64_t written = rb_cpu_written(&r->rb->cpu[c], r->nsb);
			uint64_t crash = rb_reader_cpu_lost(r->reader, c);
			uint64_t unwritten = r->unwritten ? r->unwritten[c] : 0;
			/* Losses the ring counted after the last packet written
			 * (in packets not written, or after the last one): no
			 * packet of the trace shows them. Attached, the counter
			 * did not start at 0: only after a packet. */
			uint64_t after = 0;
			if (r->disc_written && (r->wrote[c] || !r->attached)) {
				uint64_t d = rb_cpu_discarded(r->rb->cpu[c].ctl);
				if (d > r->disc_written[c])
					after = d - r->disc_written[c];
			}
			if ((written == 0 || r->attached) && unwritten == 0 && crash == 0 && after == 0)
				continue;
			if (!r->attached) {
				snprintf(keys[k], sizeof(keys[k]), "ringtrace_stream_%u_written", c);
				all[n_env++] = (struct ctf_env_kv){ keys[k++], NULL, (int64_t)written };
			}
			if (unwritten) {
				snprintf(keys[k], sizeof(keys[k]), "ringtrace_stream_%u_lost_unwritten", c);
				all[n_env++] = (struct ctf_env_kv){ keys[k++], NULL, (int64_t)unwritten };
			}
			if (after) {
				snprintf(keys[k], sizeof(keys[k]), "ringtrace_stream_%u_discarded_after", c);
				all[n_env++] = (struct ctf_env_kv){ keys[k++], NULL, (int64_t)after };
			}
			if (crash) {
				snprintf(keys[k], sizeof(keys[k]), "ringtrace_stream_%u_lost_crash", c);
				all[n_env++] = (struct ctf_env_kv){ keys[k++], NULL, (int64_t)crash };
			}
		}
	}
	t.env = all ? all : env;
	t.n_env = n_env;
	t.events = ev;
	t.n_events = r->nevents;

	if (r->meta_mem) {
		/* `show`: the text, in memory. */
		int ret = ctf_metadata_write(r->meta_mem, &t);
		free(all);
		free(keys);
		free(threads);
		free(ev);
		r->reg_changed = 0;
		return ret;
	}
	/* Rewritten as the registry grows: a new file under a random name,
	 * renamed over the old one, so a reader never sees half of it. */
	struct outdir_tmp tf;
	FILE *f = NULL;
	int ret = outdir_tmp_open(&tf, r->odfd, "metadata", 0644);
	if (ret == 0 && !(f = outdir_tmp_fdopen(&tf, "w")))
		ret = -errno;
	if (f)
		ret = ctf_metadata_write(f, &t);
	/* Its size, for the room kept for the last one (disk_room.h). */
	long bytes = f && ret == 0 ? ftell(f) : -1;
	if (ret == 0)
		ret = outdir_tmp_commit(&tf, 0);
	else if (tf.fd >= 0 || tf.f)
		outdir_tmp_abort(&tf);
	if (ret == 0 && bytes > 0)
		r->meta_bytes = (uint64_t)bytes;
	if (ret < 0)
		sess_log(SESS_SRC_RECORD, "cannot write '%s/metadata': %s\n", r->outdir, strerror(-ret));
	else if (!final && r->room_tried)
		sess_keep_room(r); /* the metadata may have grown */
	free(all);
	free(keys);
	free(threads);
	free(ev);
	r->reg_changed = 0;
	return ret;
}

/* One descriptor per CPU stream, none open yet. 0, or -ENOMEM. */
int sess_alloc_stream_fds(struct sess *r)
{
	r->fds = malloc(r->rb->ncpus * sizeof(int));
	r->unwritten = calloc(r->rb->ncpus, sizeof(*r->unwritten));
	r->disc_written = calloc(r->rb->ncpus, sizeof(*r->disc_written));
	r->wrote = calloc(r->rb->ncpus, 1);
	if (!r->fds || !r->unwritten || !r->disc_written || !r->wrote) {
		free(r->fds);
		r->fds = NULL;
		return -ENOMEM;
	}
	for (uint32_t c = 0; c < r->rb->ncpus; c++)
		r->fds[c] = -1;
	return 0;
}

/* Read a region written before we came (a live program's, a held
 * snapshot, a recovered one): the reader from its oldest untaken
 * sub-buffer, and the trace's parameters from its header. */
int sess_reader_from_region(struct sess *r)
{
	int k = rb_reader_new(r->rb, &r->reader);
	if (k < 0)
		return k;
	rb_reader_seek_oldest(r->reader);
	r->mode = r->rb->mode;
	r->nsb = 1u << r->rb->nsb_shift;
	r->clock = r->rb->hdr->clock;
	memcpy(r->uuid, r->rb->hdr->uuid, sizeof(r->uuid));
	clk_sample(r->clock, &r->c0);
	/* The program chose (on the CPU's word, unchecked); the recorder
	 * still watches the TSC against CLOCK_MONOTONIC from now on. */
	if (!r->clock_why[0])
		snprintf(r->clock_why, sizeof(r->clock_why), "%s: as the program chose",
			 r->clock == RINGTRACE__CLOCK_TSC ? "tsc" : "monotonic");
	r->watch.every_ms = 1000;
	r->watch.last_ms = sess_mono_ms();
	return 0;
}

uint64_t sess_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void sess_cleanup(struct sess *r)
{
	if (r->fds) {
		for (uint32_t c = 0; r->rb && c < r->rb->ncpus; c++)
			if (r->fds[c] >= 0)
				close(r->fds[c]);
		free(r->fds);
	}
	clk_watch_free(&r->watch);
	free(r->unwritten);
	free(r->disc_written);
	free(r->wrote);
	if (r->outdir)
		disk_room_release(&r->room, r->odfd);
	rb_reader_free(r->reader);
	if (r->rb)
		rb_view_free(r->rb);
	if (r->mem)
		munmap(r->mem, r->mem_size);
	if (r->run.shm_path) {
		unlink(r->run.shm_path);
		free(r->run.shm_path);
	}
	if (r->run.shm_fd >= 0)
		close(r->run.shm_fd);
	for (size_t i = 0; i < r->nevents; i++) {
		free(r->events[i].provider);
		free(r->events[i].name);
		free(r->events[i].signature);
		free(r->events[i].fields);
	}
	free(r->events);
	free(r->threads);
	if (r->outdir)
		close(r->odfd);
	free(r->outdir);
	ctl_close(&r->live.ctl);
}

/* Loss counters of every CPU, summed: full, overwritten, too big, no rseq. */
void sess_lost_counts(const struct ringtrace__rb *rb, uint64_t v[4])
{
	v[0] = v[1] = v[2] = v[3] = 0;
	for (uint32_t c = 0; c < rb->ncpus; c++) {
		const struct ringtrace__rb_cpu *cc = rb->cpu[c].ctl;
		v[0] += __atomic_load_n(&cc->lost_full, __ATOMIC_RELAXED);
		v[1] += __atomic_load_n(&cc->lost_overwrite, __ATOMIC_RELAXED);
		v[2] += __atomic_load_n(&cc->lost_too_big, __ATOMIC_RELAXED);
		v[3] += __atomic_load_n(&cc->lost_nocpu, __ATOMIC_RELAXED);
	}
}

/* One round of the recorder: new registry entries, the closed sub-buffers
 * (at most nsb per CPU), thread names every 50 ms, metadata at most every
 * second when events were added. Returns the sub-buffers taken. */
unsigned sess_round(struct sess *r)
{
	sess_read_registry(r);
	unsigned got = sess_consume(r, r->nsb);
	uint64_t now = sess_mono_ms();
	if (r->clock == RINGTRACE__CLOCK_TSC)
		clk_watch_tick(&r->watch, r->clock, &r->c0, now);
	if (now - r->last_scan >= 50) {
		sess_scan_threads(r);
		r->last_scan = now;
	}
	if (r->reg_changed && now - r->last_meta >= 1000) {
		sess_write_metadata(r, 0);
		r->last_meta = now;
	}
	return got;
}

/*
 * Save the region's stack map and object log under DIR/stacks, so that
 * every stack id of the trace resolves (stack_files.h). Nothing is saved
 * when no stack was captured. Returns 0, or -1 after a message.
 */
static int sess_save_stacks(struct sess *r)
{
	void *log, *mem;
	size_t log_size, size;
	if (rb_stack_area(r->rb, &log, &log_size, &mem, &size) < 0)
		return 0;
	/* Opened as a reader: nothing of ours inserts. */
	struct stackmap map;
	struct stackmap_stat st;
	int k = stackmap_open(mem, size, &map);
	if (k == 0)
		k = stackmap_stat(&map, &st);
	if (k < 0) {
		sess_log(SESS_SRC_RECORD, "the stack map of process %d is damaged (%s): stacks not saved in '%s'\n",
			 (int)r->child, strerror(-k), r->outdir);
		return -1;
	}
	/* An allocation trace keeps the objects even without stacks: its
	 * call sites are symbolised with them. */
	if (st.entries == 0 && st.drops == 0 && !r->o->memtrace)
		return 0;
	struct rt_map *maps = NULL;
	size_t nmaps = 0;
	if (maplog_copy(log, log_size, &maps, &nmaps) < 0)
		sess_log(SESS_SRC_RECORD, "the list of loaded objects of process %d is damaged: stacks in '%s' will print as addresses\n",
			 (int)r->child, r->outdir);
	k = stack_files_write_at(r->odfd, &map, maps, nmaps);
	free(maps);
	if (k < 0) {
		sess_log(SESS_SRC_RECORD, "cannot write the stacks into '%s/stacks': %s\n", r->outdir, strerror(-k));
		return -1;
	}
	if (st.drops)
		sess_log(SESS_SRC_RECORD, "the stack map was full: %llu stacks were recorded in full in their events (--stack-bits)\n",
			(unsigned long long)st.drops);
	return 0;
}

/* Write what is left, the metadata and the summary line. `salvage`: no
 * writer can run any more (the program exited, or tracing is off for good):
 * take the open sub-buffers too. */
void sess_finish(struct sess *r, int salvage)
{
	sess_read_registry(r);
	sess_consume(r, 0);
	uint64_t end_ts = ringtrace__now(r->rb);
	struct rb_packet pkt;
	for (uint32_t c = 0; salvage && c < r->rb->ncpus; c++)
		while (rb_reader_salvage(r->reader, c, sess_payload_size, r, end_ts, &pkt) > 0)
			sess_write_packet(r, &pkt);

	if (!r->rb->hdr->attached_pid)
		sess_log(SESS_SRC_RECORD, "'%s' did not load libringtrace: nothing was traced\n", r->progname);
	uint64_t lost[4];
	sess_lost_counts(r->rb, lost);
	/* Attached to a live program: only what was lost while we recorded. */
	r->lost_full = lost[0] - r->live.lost0[0];
	r->lost_overwrite = lost[1] - r->live.lost0[1];
	r->lost_too_big = lost[2] - r->live.lost0[2];
	r->lost_nocpu = lost[3] - r->live.lost0[3];
	struct rb_reader_stats st;
	rb_reader_stats(r->reader, &st);
	/* Committed but unreadable: cut off after a record its writer never
	 * finished, or in a sub-buffer whose header never got written. */
	r->lost_crash = st.crash_lost + st.corrupt_events;
	/* A followed process that did nothing (a child that exec'ed at
	 * once): no trace, the caller says so. */
	if (r->followed.kind && st.events == 0 && r->lost_full + r->lost_overwrite + r->lost_too_big +
	    r->lost_nocpu + r->lost_crash == 0) {
		r->followed.empty = 1;
		return;
	}
	/* The room held for this (disk_room.h), given back just in time. */
	disk_room_release(&r->room, r->odfd);
	int meta_ok = sess_write_metadata(r, 1) == 0;
	if (sess_save_stacks(r) < 0)
		r->write_failed = 1;
	if (r->o->aggregate && r->run.agg_fd >= 0 && r->o->agg_save && r->o->agg_save(r->run.agg_fd, r->odfd, r->outdir) < 0)
		r->write_failed = 1;

	char extra[256] = "";
	if (r->lost_nocpu)
		snprintf(extra, sizeof(extra), ", %llu from threads without rseq",
			 (unsigned long long)r->lost_nocpu);
	if (r->lost_crash)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
			 ", %llu committed but cut off by the crash", (unsigned long long)r->lost_crash);
	if (r->unwritten_total)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), ", %llu not written: %s",
			 (unsigned long long)r->unwritten_total,
			 r->write_errno == ENOSPC ? "disk full" : strerror(r->write_errno));
	/* Recorded: in the trace. Taken from the buffers but not written
	 * counts as lost. */
	sess_log(SESS_SRC_RECORD,
		"%llu events recorded, %llu lost (%llu buffer full, %llu overwritten, %llu too big%s), %llu bytes written to %s%s\n",
		(unsigned long long)(st.events - r->unwritten_total),
		(unsigned long long)(r->lost_full + r->lost_overwrite + r->lost_too_big + r->lost_nocpu + r->lost_crash +
				     r->unwritten_total),
		(unsigned long long)r->lost_full, (unsigned long long)r->lost_overwrite,
		(unsigned long long)r->lost_too_big, extra, (unsigned long long)r->bytes, r->outdir,
		(meta_ok && !r->write_failed) ? "" : " (INCOMPLETE)");
	if (r->rb->hdr->reg_dropped)
		sess_log(SESS_SRC_RECORD, "%u event descriptions did not fit in the registry\n", r->rb->hdr->reg_dropped);
	if (r->drift.jump_ns)
		sess_log(SESS_SRC_RECORD, "the TSC jumped %llu ns against CLOCK_MONOTONIC during the recording (a migrated VM?): event times are off by up to that (ringtrace_clock_jump_ns)\n",
			(unsigned long long)r->drift.jump_ns);
}

/* The figures so far, read from our own counters and the region's (the
 * program's relaxed counters: a figure may lag by a round). */
void sess_stats_get(const struct sess *r, struct sess_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!r->rb || !r->reader)
		return;
	struct rb_reader_stats st;
	rb_reader_stats(r->reader, &st);
	uint64_t lost[4];
	sess_lost_counts(r->rb, lost);
	ret->events = st.events;
	ret->bytes = r->bytes;
	ret->lost_full = lost[0] - r->live.lost0[0];
	ret->lost_overwrite = lost[1] - r->live.lost0[1];
	ret->lost_too_big = lost[2] - r->live.lost0[2];
	ret->lost_nocpu = lost[3] - r->live.lost0[3];
	ret->lost_crash = st.crash_lost + st.corrupt_events;
	ret->lost_unwritten = r->unwritten_total;
	uint64_t sb = r->rb->sb_mask + 1, ring = sb * r->nsb;
	for (uint32_t c = 0; c < r->rb->ncpus && ring; c++) {
		struct ctl_cpu_stat cs;
		ctl_ring_cpu_stat(r->rb, c, &cs);
		/* Bytes reserved since the sub-buffers we took: what waits for
		 * us, or what was overwritten. */
		uint64_t taken = cs.read_subbufs * sb;
		uint64_t pending = cs.bytes > taken ? cs.bytes - taken : 0;
		unsigned pct = pending >= ring ? 100 : (unsigned)(pending * 100 / ring);
		if (pct > ret->fullest_pct) {
			ret->fullest_pct = pct;
			ret->fullest_cpu = c;
		}
	}
}

