/*
 * writer.c - the trace writer of a session: the output directory, the
 * event classes and threads the program described (describe.c) -> CTF
 * metadata, its closed sub-buffers -> packets appended to one stream file
 * per CPU, loss accounting by cause, the stacks, the summary of a
 * recording and its figures (sess_stats_get()).
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
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "util/outdir.h"
#include "common/packet_layout.h"
#include "ctf/metadata.h"
#include "session/session_int.h"
#include "stackmap/maplog.h"
#include "stackmap/stack_files.h"
#include "stackmap/stackmap.h"

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
 * file of the trace is created relative to r->odfd (util/outdir.h).
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

/*
 * Direct writes. A buffered write() copies the packet into the page
 * cache; on a VM that copy and its accounting cost the recorder 0.5-2 ns
 * of system time per byte (`dd bs=1M` of 1 GB: 2.1 s of system time
 * against 0.08 s with oflag=direct; 1.2 GB of packets from
 * bench/mem_pairs.c: 0.6-1.0 s against 0.13-0.24 s), and at tens of
 * millions of events a second that is a CPU the traced program wanted. So a stream file is
 * written with O_DIRECT where its file system takes it: the device reads
 * the packet from our memory, the shared sub-buffer itself when it is
 * page-aligned (the held sub-buffers of discard mode, the reader's copy
 * in overwrite mode). O_DIRECT wants the address, length and file offset
 * of each write aligned to the device's block size; DIO_ALIGN (a page)
 * covers every block size up to it. Every packet is therefore padded with
 * zeros to a multiple of DIO_ALIGN, its packet_size saying so (CTF: the
 * bytes between content_size and packet_size are padding, which LTTng's
 * whole sub-buffer packets have too), so that each write starts aligned.
 * The first block is written from a copy (its packet_size changed: the
 * shared header is not ours to edit), and so is the last, partial one
 * (its padding zeroed). A file system without O_DIRECT, or a write that
 * fails for a reason of its own, makes the stream buffered from then on
 * (the packet is written again, unpadded); RINGTRACE_DIRECT_IO=0 in the
 * recorder's environment asks for buffered writes everywhere.
 */
#define DIO_ALIGN 4096u

/* Asked once per stream file. */
static int dio_wanted(void)
{
	const char *e = getenv("RINGTRACE_DIRECT_IO");
	return !(e && !strcmp(e, "0"));
}

/* The bounce buffer, at least `need` bytes, page-aligned. */
static char *dio_buffer(struct sess *r, size_t need)
{
	if (r->dio_cap < need) {
		void *p = NULL;
		if (posix_memalign(&p, DIO_ALIGN, need) != 0)
			return NULL;
		free(r->dio_buf);
		r->dio_buf = p;
		r->dio_cap = need;
	}
	return r->dio_buf;
}

/* One packet, padded, in one writev() at the file's end (kept aligned by
 * every earlier packet). The bytes written, or -errno: -EAGAIN when no
 * buffer could be had or the write came out short (the caller then cuts
 * the file back and writes the packet buffered). */
static ssize_t write_direct(struct sess *r, int fd, const struct rb_packet *pkt)
{
	const size_t a = DIO_ALIGN, len = pkt->len;
	const size_t padded = (len + a - 1) & ~(size_t)(a - 1), whole = len & ~(size_t)(a - 1);
	if (len < PKT_HDR_LEN)
		return -EAGAIN;
	const int aligned = ((uintptr_t)pkt->data & (a - 1)) == 0 && len >= a;
	char *b = dio_buffer(r, aligned ? 2 * a : padded);
	if (!b)
		return -EAGAIN;
	struct iovec iov[3];
	int n = 0;
	if (aligned) {
		/* The first block from the copy, the whole blocks after it
		 * from the packet, the rest of it from the copy's second
		 * block, padded. */
		memcpy(b, pkt->data, a);
		iov[n++] = (struct iovec){ b, a };
		if (whole > a)
			iov[n++] = (struct iovec){ (char *)pkt->data + a, whole - a };
		if (len > whole) {
			memcpy(b + a, pkt->data + whole, len - whole);
			memset(b + a + (len - whole), 0, a - (len - whole));
			iov[n++] = (struct iovec){ b + a, a };
		}
	} else {
		memcpy(b, pkt->data, len);
		memset(b + len, 0, padded - len);
		iov[n++] = (struct iovec){ b, padded };
	}
	/* In the packet's own byte order, which is ours (same machine). */
	uint64_t bits = (uint64_t)padded * 8;
	memcpy(b + PKT_OFF(packet_size), &bits, 8);
	ssize_t k;
	do
		k = writev(fd, iov, n);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return errno == ENOSPC || errno == EDQUOT || errno == EFBIG || errno == EIO ? -errno : -EAGAIN;
	return (size_t)k == padded ? k : -EAGAIN;
}

/* A packet that could not be written (error ERR): said once, the file cut
 * back to START (where the packet began), its events counted. */
static void packet_not_written(struct sess *r, const struct rb_packet *pkt, off_t start, int err)
{
	sess_log(SESS_SRC_RECORD, "cannot write '%s/stream_%u': %s; events from now on are not saved\n", r->outdir,
		 pkt->cpu, strerror(err));
	if (start >= 0 && ftruncate(r->fds[pkt->cpu], start) < 0) {
		/* nothing more to do: the message above stands */
	}
	sess_count_unwritten(r, pkt, err);
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
		/* EINVAL from a file system without O_DIRECT: buffered. */
		int fl = fcntl(*fd, F_GETFL);
		r->dio[pkt->cpu] = dio_wanted() && fl >= 0 && fcntl(*fd, F_SETFL, fl | O_DIRECT) == 0;
	}
	off_t start = lseek(*fd, 0, SEEK_END);
	size_t done = 0, len = pkt->len;
	if (r->dio[pkt->cpu]) {
		ssize_t k = write_direct(r, *fd, pkt);
		if (k >= 0) {
			done = len = (size_t)k;
		} else {
			/* Buffered from now on, this packet included, once
			 * the file is cut back to its last whole packet; a
			 * full disk is an error as below. */
			int fl = fcntl(*fd, F_GETFL);
			r->dio[pkt->cpu] = 0;
			if (k == -EAGAIN && ((start >= 0 && ftruncate(*fd, start) < 0) || fl < 0 ||
					     fcntl(*fd, F_SETFL, fl & ~O_DIRECT) < 0 || lseek(*fd, 0, SEEK_END) < 0))
				k = -EIO;
			if (k != -EAGAIN) {
				packet_not_written(r, pkt, start, (int)-k);
				return;
			}
		}
	}
	while (done < len) {
		ssize_t k = write(*fd, pkt->data + done, len - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			/* A write of 0 bytes: no room. */
			packet_not_written(r, pkt, start, k < 0 ? errno : ENOSPC);
			return;
		}
		done += (size_t)k;
	}
	r->bytes += len;
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
		/* Blocking mode: how long a writer may wait for room (0: it
		 * drops), how many events waited, for how long in all, and how
		 * many were dropped after the whole wait (in lost_full too). */
		{ "ringtrace_blocking_timeout_us", NULL, (int64_t)r->rb->block_us },
		{ "ringtrace_blocked_events", NULL, (int64_t)r->block[0] },
		{ "ringtrace_blocked_ns", NULL, (int64_t)r->block[1] },
		{ "ringtrace_blocked_timeouts", NULL, (int64_t)r->block[2] },
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
	r->dio = calloc(r->rb->ncpus, 1);
	if (!r->fds || !r->unwritten || !r->disc_written || !r->wrote || !r->dio) {
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

void sess_block_counts(const struct ringtrace__rb *rb, uint64_t v[3])
{
	v[0] = v[1] = v[2] = 0;
	for (uint32_t c = 0; c < rb->ncpus; c++) {
		const struct ringtrace__rb_cpu *cc = rb->cpu[c].ctl;
		/* Relaxed: the writers' atomic adds (rb_block.c). */
		v[0] += __atomic_load_n(&cc->block_waits, __ATOMIC_RELAXED);
		v[1] += __atomic_load_n(&cc->block_ns, __ATOMIC_RELAXED);
		v[2] += __atomic_load_n(&cc->block_timeouts, __ATOMIC_RELAXED);
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
	int k = stackmap_open_view(mem, size, &map);
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
	sess_block_counts(r->rb, r->block);
	struct rb_reader_stats st;
	rb_reader_stats(r->reader, &st);
	/* Committed but unreadable: cut off after a record its writer never
	 * finished, or in a sub-buffer whose header never got written. */
	r->lost_crash = st.crash_lost + st.corrupt_events;
	/* A followed process that did nothing (a child that exec'ed at
	 * once): no trace, the caller says so. */
	if (r->followed.kind && st.events == 0 && r->lost_full + r->lost_overwrite + r->lost_too_big +
	    r->lost_nocpu + r->lost_crash == 0 && r->run.agg_fd < 0) {
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
	if (r->block[0])
		sess_log(SESS_SRC_RECORD,
			 "writers waited for room %llu times, %.3f ms in all (blocking timeout %.3f ms); %llu events dropped after the whole wait\n",
			 (unsigned long long)r->block[0], (double)r->block[1] / 1e6, (double)r->rb->block_us / 1e3,
			 (unsigned long long)r->block[2]);
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
	uint64_t blk[3];
	sess_block_counts(r->rb, blk);
	ret->block_waits = blk[0];
	ret->block_ns = blk[1];
	ret->block_timeouts = blk[2];
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


