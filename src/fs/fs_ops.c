/*
 * fs_ops.c - the tree of `ringtrace mount DIR` and its FUSE operations
 * (libfuse's high-level API, called on its worker threads; cmd_mount.c
 * runs the loop).
 *
 *   DIR/PID/               one per traceable process the mount may see
 *   DIR/by-name/NAME       -> ../PID, for names only one process has
 *   DIR/PID/tracing_on info set_event buffer_size_kb buffer_mode overflow
 *           reset trace trace_pipe snapshot_enabled snapshot snapshot_pipe
 *           stack_map stack_map_stat stack_map_bin
 *   DIR/PID/events/enable, events/PROVIDER/enable,
 *           events/PROVIDER/NAME/{enable,id,format}
 *   DIR/PID/per_cpu/cpuN/stats
 *
 * Nothing is cached: every lookup opens the process's control block again
 * (ctl_open validates it and refuses a stale one), so processes appear and
 * disappear as they start and exit, and the kernel is told not to cache
 * either (cmd_mount.c sets the timeouts to 0). An open file remembers its
 * process's start time: after the process exits (or its pid is reused)
 * the file answers ESRCH.
 *
 * Small files are generated when opened, with the functions the commands
 * print with where they are shared (cmd_list_write, cmd_stackmap_write);
 * large ones (trace, snapshot, stack_map, stack_map_bin) are written by a
 * thread into a pipe that read() drains, so a reader that is slow or stops
 * early holds at most the pipe's 64 KiB of text. Writes are requests to
 * the program's control thread (ctl_request), whose -errno goes back to
 * the writer; the kernel checks permissions against each process's user
 * (mode bits and the default_permissions option).
 *
 * Atomics: every load of a block's word here (tracing, snap_state,
 * reg_used, enabled[id]) is an acquire that pairs with the program's
 * release store of that word (agent.c tracing_set() and publish_snap(),
 * the registry's store of reg_used once an entry is complete, its store
 * of enabled[id]): what the word announces is visible once it is read.
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/stack_live.h"
#include "ctl/ctl_client.h"
#include "fs/fs.h"

#define REQ_TIMEOUT_MS 5000

enum kind {
	K_NONE,
	/* directories */
	K_ROOT, K_BYNAME, K_PID, K_EVENTS, K_PROV, K_EVENT, K_PERCPU, K_CPU,
	K_LINK,
	/* files */
	F_TRACING_ON, F_INFO, F_SET_EVENT, F_BUF_KB, F_BUF_MODE, F_OVERFLOW, F_RESET, F_TRACE, F_TRACE_PIPE,
	F_SNAP_EN, F_SNAPSHOT, F_SNAP_PIPE, F_STACK_MAP, F_STACK_STAT, F_STACK_BIN,
	F_ALL_ENABLE, F_PROV_ENABLE, F_EV_ENABLE, F_EV_ID, F_EV_FORMAT, F_CPU_STATS,
};

/* The files of a process directory: name, kind, mode. */
static const struct {
	const char *name;
	enum kind kind;
	mode_t mode;
} pid_files[] = {
	{ "tracing_on", F_TRACING_ON, 0600 },
	{ "info", F_INFO, 0400 },
	{ "set_event", F_SET_EVENT, 0600 },
	{ "buffer_size_kb", F_BUF_KB, 0600 },
	{ "buffer_mode", F_BUF_MODE, 0600 },
	{ "overflow", F_OVERFLOW, 0400 },
	{ "reset", F_RESET, 0200 },
	{ "trace", F_TRACE, 0600 },
	{ "trace_pipe", F_TRACE_PIPE, 0400 },
	{ "snapshot_enabled", F_SNAP_EN, 0600 },
	{ "snapshot", F_SNAPSHOT, 0600 },
	{ "snapshot_pipe", F_SNAP_PIPE, 0400 },
	{ "stack_map", F_STACK_MAP, 0600 },
	{ "stack_map_stat", F_STACK_STAT, 0400 },
	{ "stack_map_bin", F_STACK_BIN, 0400 },
};

struct node {
	enum kind kind;
	pid_t pid;
	mode_t mode;                 /* of a file */
	char provider[256], event[256];
	uint32_t cpu;
	char name[256];              /* by-name/NAME */
};

/* ---- processes -------------------------------------------------------------- */

/* The process's block, read-only: 0, -ESRCH (gone, stale, none) or
 * -EPERM (another user's, for a mount that is not root's). */
static int proc_open(pid_t pid, int mode, struct ctl_handle *h)
{
	char err[512];
	return ctl_open(pid, h, mode, err, sizeof(err));
}

static int parse_pid(const char *s, pid_t *ret)
{
	if (!*s || *s == '0' || strspn(s, "0123456789") != strlen(s) || strlen(s) > 9)
		return -ENOENT;
	*ret = (pid_t)atoi(s);
	return 0;
}

/* Whether the registry of the block has the event (or, with event NULL,
 * any event of the provider); its id in *ret_id. */
static int event_lookup(const struct ctl_block *b, const char *provider, const char *event, uint32_t *ret_id)
{
	const char *log = (const char *)b + CTL_REG_OFF;
	uint64_t used = __atomic_load_n(&b->reg_used, __ATOMIC_ACQUIRE);
	if (used > CTL_REG_SIZE)
		used = CTL_REG_SIZE;
	uint64_t pos = 0;
	struct ctl_log_entry e;
	while (ctl_log_next(log, used, &pos, &e) > 0) {
		if (e.kind != 1 || e.n < 3 || e.id >= CTL_MAX_IDS || strcmp(e.s[0], provider))
			continue;
		if (!event || !strcmp(e.s[1], event)) {
			if (ret_id)
				*ret_id = e.id;
			return 1;
		}
	}
	return 0;
}

/* Each registered event: fn(provider, name, id, enabled, signature). */
static void events_each(const struct ctl_block *b,
			void (*fn)(void *arg, const char *prov, const char *name, uint32_t id, int on, const char *sig),
			void *arg)
{
	const char *log = (const char *)b + CTL_REG_OFF;
	const uint8_t *en = (const uint8_t *)b + CTL_EN_OFF;
	uint64_t used = __atomic_load_n(&b->reg_used, __ATOMIC_ACQUIRE);
	if (used > CTL_REG_SIZE)
		used = CTL_REG_SIZE;
	uint64_t pos = 0;
	struct ctl_log_entry e;
	while (ctl_log_next(log, used, &pos, &e) > 0) {
		if (e.kind != 1 || e.n < 3 || e.id >= CTL_MAX_IDS)
			continue;
		fn(arg, e.s[0], e.s[1], e.id, __atomic_load_n(&en[e.id], __ATOMIC_ACQUIRE) == CTL_EV_ENABLED, e.s[2]);
	}
}

/* A name fit for a directory entry. */
static int entry_name_ok(const char *s)
{
	return *s && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/') && strlen(s) < 256;
}

static void comm_of(const struct ctl_block *b, char out[17])
{
	memcpy(out, b->comm, 16);
	out[16] = 0;
}

/* ---- paths ---------------------------------------------------------------- */

/* Split the path into a node, checking that what it names exists now. */
static int resolve(const char *path, struct node *n, struct ctl_handle *h_ret)
{
	memset(n, 0, sizeof(*n));
	char buf[PATH_MAX];
	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	snprintf(buf, sizeof(buf), "%s", path);
	char *part[6];
	int np = 0;
	for (char *save = NULL, *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		if (np == 6)
			return -ENOENT;
		part[np++] = t;
	}
	if (np == 0) {
		n->kind = K_ROOT;
		return 0;
	}
	if (!strcmp(part[0], "by-name")) {
		if (np == 1) {
			n->kind = K_BYNAME;
			return 0;
		}
		if (np > 2 || strlen(part[1]) >= sizeof(n->name))
			return -ENOENT;
		n->kind = K_LINK;
		snprintf(n->name, sizeof(n->name), "%s", part[1]);
		return 0; /* the link's target is looked up by the caller */
	}
	if (parse_pid(part[0], &n->pid) < 0)
		return -ENOENT;
	struct ctl_handle h;
	if (proc_open(n->pid, CTL_OPEN_READ, &h) < 0)
		return -ENOENT;
	int r = -ENOENT;
	if (np == 1) {
		n->kind = K_PID;
		r = 0;
	} else if (np == 2) {
		if (!strcmp(part[1], "events")) {
			n->kind = K_EVENTS;
			r = 0;
		} else if (!strcmp(part[1], "per_cpu")) {
			n->kind = K_PERCPU;
			r = 0;
		}
		for (size_t i = 0; i < sizeof(pid_files) / sizeof(pid_files[0]); i++)
			if (!strcmp(part[1], pid_files[i].name)) {
				n->kind = pid_files[i].kind;
				n->mode = pid_files[i].mode;
				r = 0;
			}
	} else if (!strcmp(part[1], "events")) {
		if (np == 3 && !strcmp(part[2], "enable")) {
			n->kind = F_ALL_ENABLE;
			n->mode = 0600;
			r = 0;
		} else if (strlen(part[2]) < sizeof(n->provider) && event_lookup(h.b, part[2], NULL, NULL)) {
			snprintf(n->provider, sizeof(n->provider), "%s", part[2]);
			if (np == 3) {
				n->kind = K_PROV;
				r = 0;
			} else if (np == 4 && !strcmp(part[3], "enable")) {
				n->kind = F_PROV_ENABLE;
				n->mode = 0600;
				r = 0;
			} else if (strlen(part[3]) < sizeof(n->event) && event_lookup(h.b, part[2], part[3], NULL)) {
				snprintf(n->event, sizeof(n->event), "%s", part[3]);
				if (np == 4) {
					n->kind = K_EVENT;
					r = 0;
				} else if (np == 5 && !strcmp(part[4], "enable")) {
					n->kind = F_EV_ENABLE;
					n->mode = 0600;
					r = 0;
				} else if (np == 5 && !strcmp(part[4], "id")) {
					n->kind = F_EV_ID;
					n->mode = 0400;
					r = 0;
				} else if (np == 5 && !strcmp(part[4], "format")) {
					n->kind = F_EV_FORMAT;
					n->mode = 0400;
					r = 0;
				}
			}
		}
	} else if (!strcmp(part[1], "per_cpu") && !strncmp(part[2], "cpu", 3) && np <= 4) {
		char *end;
		unsigned long c = strtoul(part[2] + 3, &end, 10);
		if (part[2][3] >= '0' && part[2][3] <= '9' && !*end && c < rb_possible_cpus() &&
		    (np == 3 || !strcmp(part[3], "stats"))) {
			n->cpu = (uint32_t)c;
			n->kind = np == 3 ? K_CPU : F_CPU_STATS;
			n->mode = 0400;
			r = 0;
		}
	}
	if (r == 0 && h_ret)
		*h_ret = h;
	else
		ctl_close(&h);
	return r;
}

/* ---- by-name --------------------------------------------------------------- */

struct names {
	struct {
		char name[17];
		pid_t pid;
		int count;
	} *v;
	size_t n, cap;
};

static void names_one(pid_t pid, const char *path, void *arg)
{
	(void)path;
	struct names *ns = arg;
	struct ctl_handle h;
	if (proc_open(pid, CTL_OPEN_READ, &h) < 0)
		return;
	char comm[17];
	comm_of(h.b, comm);
	ctl_close(&h);
	if (!entry_name_ok(comm))
		return;
	for (size_t i = 0; i < ns->n; i++)
		if (!strcmp(ns->v[i].name, comm)) {
			ns->v[i].count++;
			return;
		}
	if (ns->n == ns->cap) {
		size_t nc = ns->cap ? ns->cap * 2 : 16;
		void *nv = realloc(ns->v, nc * sizeof(*ns->v));
		if (!nv)
			return;
		ns->v = nv;
		ns->cap = nc;
	}
	snprintf(ns->v[ns->n].name, sizeof(ns->v[0].name), "%s", comm);
	ns->v[ns->n].pid = pid;
	ns->v[ns->n].count = 1;
	ns->n++;
}

/* The one process of that name, or -ENOENT (none, or several). */
static int name_to_pid(const char *name, pid_t *ret)
{
	struct names ns = { 0 };
	ctl_scan(names_one, &ns);
	int r = -ENOENT;
	for (size_t i = 0; i < ns.n; i++)
		if (!strcmp(ns.v[i].name, name) && ns.v[i].count == 1) {
			*ret = ns.v[i].pid;
			r = 0;
		}
	free(ns.v);
	return r;
}

/* ---- attributes and directories ---------------------------------------------- */

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	struct node n;
	struct ctl_handle h;
	memset(st, 0, sizeof(*st));
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	st->st_atim = st->st_mtim = st->st_ctim = now;
	int r = resolve(path, &n, &h);
	if (r < 0)
		return r;
	if (n.kind == K_ROOT || n.kind == K_BYNAME) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		st->st_uid = geteuid();
		st->st_gid = getegid();
		return 0;
	}
	if (n.kind == K_LINK) {
		pid_t pid;
		if (name_to_pid(n.name, &pid) < 0)
			return -ENOENT;
		char target[32];
		st->st_mode = S_IFLNK | 0777;
		st->st_nlink = 1;
		st->st_size = snprintf(target, sizeof(target), "../%d", (int)pid);
		st->st_uid = geteuid();
		st->st_gid = getegid();
		return 0;
	}
	struct stat pst;
	st->st_uid = h.uid;
	st->st_gid = fstat(h.procfd, &pst) == 0 ? pst.st_gid : 0;
	ctl_close(&h);
	if (n.kind < K_LINK) {
		st->st_mode = S_IFDIR | 0700;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | n.mode;
		st->st_nlink = 1;
		st->st_size = 0; /* generated: read until the end */
	}
	return 0;
}

static int fs_readlink(const char *path, char *buf, size_t size)
{
	struct node n;
	int r = resolve(path, &n, NULL);
	if (r < 0)
		return r;
	pid_t pid;
	if (n.kind != K_LINK || name_to_pid(n.name, &pid) < 0)
		return -ENOENT;
	snprintf(buf, size, "../%d", (int)pid);
	return 0;
}

struct fill {
	void *buf;
	fuse_fill_dir_t filler;
	const char *provider;        /* K_PROV: its events; else providers */
	char (*seen)[256];
	size_t nseen, capseen;
};

static void fill(struct fill *f, const char *name)
{
	f->filler(f->buf, name, NULL, 0, 0);
}

static void root_one(pid_t pid, const char *path, void *arg)
{
	(void)path;
	struct ctl_handle h;
	if (proc_open(pid, CTL_OPEN_READ, &h) < 0)
		return;
	ctl_close(&h);
	char name[16];
	snprintf(name, sizeof(name), "%d", (int)pid);
	fill(arg, name);
}

static void events_fill(void *arg, const char *prov, const char *name, uint32_t id, int on, const char *sig)
{
	struct fill *f = arg;
	(void)id, (void)on, (void)sig;
	const char *what = f->provider ? name : prov;
	if ((f->provider && strcmp(prov, f->provider)) || !entry_name_ok(what))
		return;
	for (size_t i = 0; i < f->nseen; i++)
		if (!strcmp(f->seen[i], what))
			return;
	if (f->nseen == f->capseen) {
		size_t nc = f->capseen ? f->capseen * 2 : 16;
		void *nv = realloc(f->seen, nc * sizeof(*f->seen));
		if (!nv)
			return;
		f->seen = nv;
		f->capseen = nc;
	}
	snprintf(f->seen[f->nseen++], sizeof(f->seen[0]), "%s", what);
	fill(f, what);
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	(void)off, (void)fi, (void)flags;
	struct node n;
	struct ctl_handle h;
	int r = resolve(path, &n, &h);
	if (r < 0)
		return r;
	if (n.kind >= K_LINK) {
		if (n.kind > K_LINK)
			ctl_close(&h);
		return -ENOTDIR;
	}
	struct fill f = { .buf = buf, .filler = filler };
	fill(&f, ".");
	fill(&f, "..");
	switch (n.kind) {
	case K_ROOT:
		fill(&f, "by-name");
		ctl_scan(root_one, &f);
		return 0;
	case K_BYNAME: {
		struct names ns = { 0 };
		ctl_scan(names_one, &ns);
		for (size_t i = 0; i < ns.n; i++)
			if (ns.v[i].count == 1)
				fill(&f, ns.v[i].name);
		free(ns.v);
		return 0;
	}
	case K_PID:
		for (size_t i = 0; i < sizeof(pid_files) / sizeof(pid_files[0]); i++)
			fill(&f, pid_files[i].name);
		fill(&f, "events");
		fill(&f, "per_cpu");
		break;
	case K_EVENTS:
		fill(&f, "enable");
		events_each(h.b, events_fill, &f);
		break;
	case K_PROV:
		fill(&f, "enable");
		f.provider = n.provider;
		events_each(h.b, events_fill, &f);
		break;
	case K_EVENT:
		fill(&f, "enable");
		fill(&f, "id");
		fill(&f, "format");
		break;
	case K_PERCPU:
		for (uint32_t c = 0; c < rb_possible_cpus(); c++) {
			char name[32];
			snprintf(name, sizeof(name), "cpu%u", c);
			fill(&f, name);
		}
		break;
	case K_CPU:
		fill(&f, "stats");
		break;
	default:
		break;
	}
	free(f.seen);
	ctl_close(&h);
	return 0;
}

/* ---- small files ------------------------------------------------------------ */

struct enable_state {
	const char *provider, *event;
	int on, off;
	FILE *out;                   /* set_event: the enabled ones */
};

static void enable_one(void *arg, const char *prov, const char *name, uint32_t id, int on, const char *sig)
{
	struct enable_state *s = arg;
	(void)id, (void)sig;
	if ((s->provider && strcmp(prov, s->provider)) || (s->event && strcmp(name, s->event)))
		return;
	if (on)
		s->on++;
	else
		s->off++;
	if (s->out && on)
		fprintf(s->out, "%s:%s\n", prov, name);
}

/* Per-CPU or total counters, under the names `ringtrace stat --json` uses. */
static void print_stat(FILE *out, const struct ctl_cpu_stat *s)
{
	fprintf(out,
		"in_buffer: %llu\nwritten: %llu\nlost_full: %llu\nlost_overwrite: %llu\nlost_too_big: %llu\n"
		"lost_no_rseq: %llu\nbytes: %llu\nsubbuffers_read: %llu\nevents_read: %llu\n",
		(unsigned long long)s->in_buffer, (unsigned long long)s->written, (unsigned long long)s->lost_full,
		(unsigned long long)s->lost_overwrite, (unsigned long long)s->lost_too_big,
		(unsigned long long)s->lost_nocpu, (unsigned long long)s->bytes,
		(unsigned long long)s->read_subbufs, (unsigned long long)s->read_events);
}

static void stats_of(struct ctl_handle *h, int cpu, FILE *out)
{
	struct ctl_cpu_stat tot = { 0 }, s;
	struct ctl_ring ring;
	char err[512];
	if (h->b->session != CTL_SESSION_NONE && ctl_ring_open(h, &ring, err, sizeof(err)) == 0) {
		for (uint32_t c = 0; c < ring.rb->ncpus; c++) {
			if (cpu >= 0 && (uint32_t)cpu != c)
				continue;
			ctl_ring_cpu_stat(ring.rb, c, &s);
			ctl_cpu_stat_add(&tot, &s);
		}
		ctl_ring_close(&ring);
	}
	print_stat(out, &tot);
}

/* Per-CPU bytes of the buffers: those mapped now, else the next ones. */
static uint64_t buffer_bytes(struct ctl_handle *h, uint32_t *ret_mode)
{
	struct ctl_ring ring;
	char err[512];
	if (h->b->session != CTL_SESSION_NONE && ctl_ring_open(h, &ring, err, sizeof(err)) == 0) {
		uint64_t v = (ring.rb->sb_mask + 1) << ring.rb->nsb_shift;
		*ret_mode = ring.rb->mode;
		ctl_ring_close(&ring);
		return v;
	}
	*ret_mode = h->b->cfg_mode;
	return h->b->cfg_sb_size * h->b->cfg_nsb;
}

/* The text of a small file, as it is now. 0 or -errno. */
static int generate(const struct node *n, struct ctl_handle *h, FILE *out)
{
	const struct ctl_block *b = h->b;
	switch (n->kind) {
	case F_TRACING_ON:
		fprintf(out, "%d\n", __atomic_load_n(&b->tracing, __ATOMIC_ACQUIRE) ? 1 : 0);
		return 0;
	case F_INFO:
		return cmd_list_write(out, h, 0) ? -EIO : 0;
	case F_SET_EVENT: {
		struct enable_state s = { .out = out };
		events_each(b, enable_one, &s);
		return 0;
	}
	case F_ALL_ENABLE:
	case F_PROV_ENABLE:
	case F_EV_ENABLE: {
		struct enable_state s = { .provider = n->kind == F_ALL_ENABLE ? NULL : n->provider,
					  .event = n->kind == F_EV_ENABLE ? n->event : NULL };
		events_each(b, enable_one, &s);
		fprintf(out, "%s\n", s.on && s.off ? "X" : s.on ? "1" : "0");
		return 0;
	}
	case F_EV_ID:
	case F_EV_FORMAT: {
		uint32_t id = 0;
		event_lookup(b, n->provider, n->event, &id);
		if (n->kind == F_EV_ID) {
			fprintf(out, "%u\n", id);
			return 0;
		}
		const char *log = (const char *)b + CTL_REG_OFF;
		uint64_t used = __atomic_load_n(&b->reg_used, __ATOMIC_ACQUIRE), pos = 0;
		if (used > CTL_REG_SIZE)
			used = CTL_REG_SIZE;
		struct ctl_log_entry e;
		while (ctl_log_next(log, used, &pos, &e) > 0)
			if (e.kind == 1 && e.n >= 3 && e.id == id) {
				fprintf(out, "name: %s:%s\nID: %u\nfields: %s\n", e.s[0], e.s[1], id,
					*e.s[2] ? e.s[2] : "(none)");
				if (e.n >= 4)
					fprintf(out, "defined_at: %s\n", e.s[3]);
				break;
			}
		return 0;
	}
	case F_BUF_KB: {
		uint32_t mode;
		fprintf(out, "%llu\n", (unsigned long long)(buffer_bytes(h, &mode) >> 10));
		return 0;
	}
	case F_BUF_MODE: {
		uint32_t mode;
		buffer_bytes(h, &mode);
		fprintf(out, "%s\n", mode == RINGTRACE__MODE_OVERWRITE ? "overwrite" : "discard");
		return 0;
	}
	case F_OVERFLOW:
		stats_of(h, -1, out);
		return 0;
	case F_CPU_STATS:
		stats_of(h, (int)n->cpu, out);
		return 0;
	case F_SNAP_EN:
		fprintf(out, "%d\n", __atomic_load_n(&b->snap_state, __ATOMIC_ACQUIRE) != CTL_SNAP_OFF);
		return 0;
	default:
		return 0;
	}
}

/* ---- streamed files ---------------------------------------------------------- */

/* What the thread of a streamed file writes, and what it needs. */
struct stream {
	enum kind kind;
	int wfd;
	pthread_t thread;
	struct ctl_handle h;         /* trace: opened for writing (pause, resume) */
	struct ctl_ring ring;
	int have_ring;
	struct stack_files sf;
	int have_sf;
};

static void *stream_main(void *arg)
{
	struct stream *s = arg;
	FILE *out = fdopen(s->wfd, "w");
	if (!out) {
		close(s->wfd);
		return NULL;
	}
	if (s->have_sf) {
		cmd_stackmap_write(out, &s->sf, s->kind == F_STACK_BIN ? 2 : 0);
	} else if (s->have_ring) {
		struct fs_dec d;
		struct fs_pkts v = { 0 };
		char comm[17];
		comm_of(s->h.b, comm);
		fs_dec_init(&d, s->h.pid, comm, s->ring.rb);
		fs_dec_registry(&d);
		if (fs_region_copy(&d, &v) == 0)
			fs_dec_print(&d, &v, out);
		fs_pkts_free(&v);
		fs_dec_free(&d);
	}
	fclose(out); /* the reader's end of the file */
	return NULL;
}

/* ---- open files -------------------------------------------------------------- */

struct ofile {
	struct node n;
	uint64_t start_time;         /* of the process the file was opened for */
	char *text;                  /* small files: generated at open */
	size_t len;
	struct fs_pipe *pipe;        /* trace_pipe, snapshot_pipe */
	struct stream *stream;       /* trace, snapshot, stack_map, stack_map_bin */
	int rfd;
	int resume;                  /* trace: tracing was on, switch it on again */
	int cleared;                 /* set_event opened with O_TRUNC: cleared once */
};

static struct ofile *of_of(struct fuse_file_info *fi)
{
	return (struct ofile *)(uintptr_t)fi->fh;
}

static int request(struct ctl_handle *h, uint32_t op, uint64_t a0, uint64_t a1, const char *text, size_t len)
{
	char msg[CTL_MSG];
	int r = ctl_request(h, op, a0, a1, text, len, REQ_TIMEOUT_MS, msg, sizeof(msg));
	return r < 0 ? r : 0;
}

/* Start the thread of a streamed file; the state it uses is in s. */
static int stream_start(struct ofile *of, struct stream *s)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	s->kind = of->n.kind;
	s->wfd = fds[1];
	int r = pthread_create(&s->thread, NULL, stream_main, s);
	if (r) {
		close(fds[0]);
		close(fds[1]);
		return -r;
	}
	of->rfd = fds[0];
	of->stream = s;
	return 0;
}

static void stream_free(struct stream *s)
{
	if (s->have_sf)
		stack_files_free(&s->sf);
	if (s->have_ring)
		ctl_ring_close(&s->ring);
	ctl_close(&s->h);
	free(s);
}

static int open_stream(struct ofile *of, struct ctl_handle *h)
{
	struct stream *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	char err[512];
	int r = 0;
	switch (of->n.kind) {
	case F_STACK_MAP:
	case F_STACK_BIN: {
		char target[16];
		snprintf(target, sizeof(target), "%d", (int)of->n.pid);
		if (h->b->session == CTL_SESSION_NONE)
			r = -ENOENT; /* no buffers: no map */
		else if (stack_live_load(target, &s->sf) < 0)
			r = -EIO;
		else
			s->have_sf = 1;
		break;
	}
	case F_TRACE:
		/* ftrace's way: tracing pauses while `trace` is read, so that
		 * what is printed holds still. The flush closes the open
		 * sub-buffers, and no writer runs until the file is closed. */
		r = proc_open(of->n.pid, CTL_OPEN_WRITE, &s->h);
		if (r < 0 || s->h.b->session == CTL_SESSION_NONE)
			break;
		of->resume = __atomic_load_n(&s->h.b->tracing, __ATOMIC_ACQUIRE) != 0;
		r = request(&s->h, CTL_OP_FLUSH, 1, 0, NULL, 0);
		if (r < 0) {
			if (of->resume)
				request(&s->h, CTL_OP_ON, 0, 0, NULL, 0);
			of->resume = 0;
			break;
		}
		if (ctl_ring_open(&s->h, &s->ring, err, sizeof(err)) == 0)
			s->have_ring = 1;
		break;
	case F_SNAPSHOT:
		r = proc_open(of->n.pid, CTL_OPEN_READ, &s->h);
		if (r == 0 && ctl_snap_open(&s->h, &s->ring, err, sizeof(err)) == 0)
			s->have_ring = 1; /* none held: an empty file */
		break;
	default:
		r = -EINVAL;
	}
	if (r == 0)
		r = stream_start(of, s);
	if (r < 0) {
		if (of->resume)
			request(&s->h, CTL_OP_ON, 0, 0, NULL, 0);
		of->resume = 0;
		stream_free(s);
	}
	return r;
}

static void of_free(struct ofile *of)
{
	if (of->stream) {
		/* The thread ends once its writes fail (EPIPE) or it is done. */
		close(of->rfd);
		pthread_join(of->stream->thread, NULL);
		if (of->resume && of->stream->h.b && !ctl_is_stale(of->stream->h.b))
			request(&of->stream->h, CTL_OP_ON, 0, 0, NULL, 0);
		stream_free(of->stream);
	}
	fs_pipe_close(of->pipe);
	free(of->text);
	free(of);
}

static int truncate_file(const struct node *n);

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	struct node n;
	struct ctl_handle h;
	int r = resolve(path, &n, &h);
	if (r < 0)
		return r;
	if (n.kind <= K_LINK) {
		if (n.kind > K_ROOT && n.kind != K_BYNAME && n.kind != K_LINK)
			ctl_close(&h);
		return -EISDIR;
	}
	struct ofile *of = calloc(1, sizeof(*of));
	if (!of) {
		ctl_close(&h);
		return -ENOMEM;
	}
	of->n = n;
	of->rfd = -1;
	of->start_time = h.b->start_time;
	int acc = fi->flags & O_ACCMODE;
	int reading = acc == O_RDONLY || acc == O_RDWR;
	fi->direct_io = 1; /* contents change under us: no page cache, no size */
	/* libfuse passes O_TRUNC to open (atomic_o_trunc) rather than a
	 * truncate: `echo x > set_event` clears the events first, `echo >
	 * trace` empties the buffers (ftrace's ways). */
	if ((fi->flags & O_TRUNC) && (n.kind == F_SET_EVENT || n.kind == F_TRACE)) {
		ctl_close(&h);
		r = truncate_file(&n);
		if (r < 0) {
			free(of);
			return r;
		}
		of->cleared = 1;
		if ((r = proc_open(n.pid, CTL_OPEN_READ, &h)) < 0) {
			free(of);
			return r == -EPERM ? r : -ESRCH;
		}
	}
	if (reading) {
		switch (n.kind) {
		case F_TRACE_PIPE:
		case F_SNAP_PIPE:
			r = fs_pipe_open(n.pid, n.kind == F_SNAP_PIPE, &of->pipe);
			fi->nonseekable = 1;
			break;
		case F_TRACE:
		case F_SNAPSHOT:
		case F_STACK_MAP:
		case F_STACK_BIN:
			r = open_stream(of, &h);
			fi->nonseekable = 1;
			break;
		case F_STACK_STAT: {
			char target[16];
			struct stack_files sf;
			snprintf(target, sizeof(target), "%d", (int)n.pid);
			if (h.b->session == CTL_SESSION_NONE) {
				r = -ENOENT;
				break;
			}
			if (stack_live_load(target, &sf) < 0) {
				r = -EIO;
				break;
			}
			FILE *f = open_memstream(&of->text, &of->len);
			if (!f) {
				r = -ENOMEM;
			} else {
				r = cmd_stackmap_write(f, &sf, 1);
				if (fclose(f) != 0 && r == 0)
					r = -ENOMEM;
			}
			stack_files_free(&sf);
			break;
		}
		default: {
			FILE *f = open_memstream(&of->text, &of->len);
			if (!f) {
				r = -ENOMEM;
				break;
			}
			r = generate(&n, &h, f);
			if (fclose(f) != 0 && r == 0)
				r = -ENOMEM;
			break;
		}
		}
	}
	ctl_close(&h);
	if (r < 0) {
		of_free(of);
		return r;
	}
	fi->fh = (uint64_t)(uintptr_t)of;
	return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	struct ofile *of = of_of(fi);
	if (of->pipe)
		return (int)fs_pipe_read(of->pipe, buf, size > INT_MAX ? INT_MAX : size);
	if (of->stream) {
		ssize_t n;
		do
			n = read(of->rfd, buf, size);
		while (n < 0 && errno == EINTR && !fs_interrupted());
		return n < 0 ? -errno : (int)n;
	}
	if (off < 0 || (size_t)off >= of->len)
		return 0;
	size_t n = of->len - (size_t)off;
	if (n > size)
		n = size;
	memcpy(buf, of->text + off, n);
	return (int)n;
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	of_free(of_of(fi));
	return 0;
}

/* ---- writes --------------------------------------------------------------------- */

/* The written text without surrounding blanks, NUL-terminated. */
static int written_value(const char *buf, size_t size, char *out, size_t outsz)
{
	while (size && strchr(" \t\n", buf[size - 1]))
		size--;
	while (size && strchr(" \t\n", *buf))
		buf++, size--;
	if (size >= outsz)
		return -EINVAL;
	memcpy(out, buf, size);
	out[size] = 0;
	return 0;
}

static int bool_value(const char *v)
{
	if (!strcmp(v, "1"))
		return 1;
	if (!strcmp(v, "0"))
		return 0;
	return -EINVAL;
}

/* One rule of set_event: "provider:name" globs, "name" (any provider),
 * "!..." to disable. */
static int set_event_rule(struct ctl_handle *h, const char *tok)
{
	int on = 1;
	if (*tok == '!')
		on = 0, tok++;
	char pat[512];
	if (strchr(tok, ':') || !strcmp(tok, "*"))
		snprintf(pat, sizeof(pat), "%s", tok);
	else
		snprintf(pat, sizeof(pat), "*:%s", tok);
	if (ctl_pattern_valid(pat) < 0)
		return -EINVAL;
	char text[520];
	size_t len = strlen(pat) + 1;
	memcpy(text, pat, len);
	text[len++] = 0;
	return request(h, on ? CTL_OP_ENABLE : CTL_OP_DISABLE, 0, 0, text, len);
}

static int enable_pattern(struct ctl_handle *h, const char *pat, int on)
{
	char text[600];
	size_t len = (size_t)snprintf(text, sizeof(text) - 1, "%s", pat) + 1;
	if (len >= sizeof(text) - 1)
		return -EINVAL;
	text[len++] = 0;
	return request(h, on ? CTL_OP_ENABLE : CTL_OP_DISABLE, 0, 0, text, len);
}

static int held_by_us(const struct ctl_block *b)
{
	return __atomic_load_n(&b->snap_state, __ATOMIC_ACQUIRE) == CTL_SNAP_HELD &&
	       b->snap_holder == (uint32_t)getpid();
}

/* The process the file was opened for, for writing: -ESRCH once it is gone. */
static int of_target(const struct ofile *of, struct ctl_handle *h)
{
	int r = proc_open(of->n.pid, CTL_OPEN_WRITE, h);
	if (r == -ESRCH || (r == 0 && h->b->start_time != of->start_time)) {
		if (r == 0)
			ctl_close(h);
		return -ESRCH;
	}
	return r;
}

static int do_write(struct ofile *of, const char *v, struct ctl_handle *h)
{
	const struct ctl_block *b = h->b;
	int k;
	switch (of->n.kind) {
	case F_TRACING_ON:
		if ((k = bool_value(v)) < 0)
			return k;
		return request(h, k ? CTL_OP_ON : CTL_OP_OFF, 0, 0, NULL, 0);
	case F_ALL_ENABLE:
	case F_PROV_ENABLE:
	case F_EV_ENABLE: {
		if ((k = bool_value(v)) < 0)
			return k;
		char pat[520];
		if (of->n.kind == F_ALL_ENABLE)
			snprintf(pat, sizeof(pat), "*");
		else if (of->n.kind == F_PROV_ENABLE)
			snprintf(pat, sizeof(pat), "%s:*", of->n.provider);
		else
			snprintf(pat, sizeof(pat), "%s:%s", of->n.provider, of->n.event);
		return enable_pattern(h, pat, k);
	}
	case F_SET_EVENT: {
		char tmp[CTL_TEXT];
		snprintf(tmp, sizeof(tmp), "%s", v);
		int r = 0;
		for (char *save = NULL, *t = strtok_r(tmp, " \t\n", &save); t && r == 0;
		     t = strtok_r(NULL, " \t\n", &save))
			r = set_event_rule(h, t);
		return r;
	}
	case F_BUF_KB: {
		char *end;
		unsigned long long kb = strtoull(v, &end, 10);
		if (end == v || *end || kb == 0 || kb > (UINT64_C(1) << 30) || (kb & (kb - 1)))
			return -EINVAL;
		return request(h, CTL_OP_BUFFER_SIZE, kb << 10, 0, NULL, 0);
	}
	case F_BUF_MODE: {
		uint64_t mode;
		if (!strcmp(v, "discard"))
			mode = 1;
		else if (!strcmp(v, "overwrite"))
			mode = 2;
		else
			return -EINVAL;
		return request(h, CTL_OP_BUFFER_SIZE, b->cfg_sb_size * b->cfg_nsb, mode << 32, NULL, 0);
	}
	case F_RESET:
		if ((k = bool_value(v)) != 1)
			return -EINVAL;
		return request(h, CTL_OP_RESET, 0, 0, NULL, 0);
	case F_TRACE:
		return -EINVAL; /* only emptied, by truncating it */
	case F_SNAP_EN:
		if ((k = bool_value(v)) < 0)
			return k;
		if (k)
			return request(h, CTL_OP_SNAP_ENABLE, 0, 0, NULL, 0);
		if (held_by_us(b) && (k = request(h, CTL_OP_SNAP_RELEASE, 0, 0, NULL, 0)) < 0)
			return k;
		return request(h, CTL_OP_SNAP_DISABLE, 0, 0, NULL, 0);
	case F_SNAPSHOT:
		/* ftrace: 1 takes a snapshot (allocating the spare if need
		 * be), 0 frees it, 2 empties it. The snapshot is held (the
		 * file reads it) until the next one. */
		if (!strcmp(v, "1")) {
			if (held_by_us(b) && (k = request(h, CTL_OP_SNAP_RELEASE, 0, 0, NULL, 0)) < 0)
				return k;
			if (__atomic_load_n(&b->snap_state, __ATOMIC_ACQUIRE) == CTL_SNAP_OFF &&
			    (k = request(h, CTL_OP_SNAP_ENABLE, 0, 0, NULL, 0)) < 0)
				return k;
			return request(h, CTL_OP_SNAPSHOT, (uint64_t)getpid(), 0, NULL, 0);
		}
		if (!strcmp(v, "0") || !strcmp(v, "2")) {
			if (held_by_us(b) && (k = request(h, CTL_OP_SNAP_RELEASE, 0, 0, NULL, 0)) < 0)
				return k;
			return v[0] == '0' ? request(h, CTL_OP_SNAP_DISABLE, 0, 0, NULL, 0) : 0;
		}
		return -EINVAL;
	case F_STACK_MAP: {
		if (strcmp(v, "0") && strcmp(v, "reset"))
			return -EINVAL;
		if (__atomic_load_n(&b->tracing, __ATOMIC_ACQUIRE))
			return -EBUSY; /* ids in the buffers would name other stacks */
		if (b->session == CTL_SESSION_NONE)
			return 0; /* no buffers: no map, nothing to empty */
		char target[16];
		snprintf(target, sizeof(target), "%d", (int)of->n.pid);
		return stack_live_reset(target) < 0 ? -EBUSY : 0;
	}
	default:
		return -EINVAL;
	}
}

static int fs_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path, (void)off;
	struct ofile *of = of_of(fi);
	char v[CTL_TEXT];
	if (written_value(buf, size, v, sizeof(v)) < 0)
		return -EINVAL;
	struct ctl_handle h;
	int r = of_target(of, &h);
	if (r < 0)
		return r;
	if (*v)
		r = do_write(of, v, &h);
	ctl_close(&h);
	return r < 0 ? r : (int)size;
}

/* Truncating set_event clears it (ftrace), truncating trace empties the
 * buffers (ftrace's `echo > trace`); the other files ignore it. */
static int truncate_file(const struct node *n)
{
	if (n->kind != F_SET_EVENT && n->kind != F_TRACE)
		return 0;
	struct ctl_handle h;
	int r = proc_open(n->pid, CTL_OPEN_WRITE, &h);
	if (r < 0)
		return r;
	r = n->kind == F_TRACE ? request(&h, CTL_OP_RESET, 0, 0, NULL, 0) : enable_pattern(&h, "*", 0);
	ctl_close(&h);
	return r;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct node n;
	struct ctl_handle h;
	int r = resolve(path, &n, &h);
	if (r < 0)
		return r;
	if (n.kind <= K_LINK) {
		if (n.kind > K_ROOT && n.kind != K_BYNAME && n.kind != K_LINK)
			ctl_close(&h);
		return -EISDIR;
	}
	ctl_close(&h);
	if (size != 0 || (fi && of_of(fi)->cleared))
		return 0;
	return truncate_file(&n);
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* Nothing cached: processes come and go, files change. */
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->direct_io = 1;
	/* A reader's signal (Ctrl-C on `cat trace_pipe`) reaches the worker
	 * serving it: libfuse installs its handler after this returns. */
	cfg->intr = 1;
	return NULL;
}

const struct fuse_operations fs_operations = {
	.init = fs_init,
	.getattr = fs_getattr,
	.readlink = fs_readlink,
	.readdir = fs_readdir,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.truncate = fs_truncate,
	.release = fs_release,
};
