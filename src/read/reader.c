/*
 * reader.c - trace directory reader: metadata, stream files, k-way merge by
 * time, thread attribution, clock conversion (reader.h).
 *
 * Used by `ringtrace dump` (and the analyses) from one thread. The merge
 * keeps one pending item per stream file in a binary heap keyed by
 * (ns from origin, file index): O(log files) per item, and items of one
 * file never overtake each other because a file has one item in the heap at
 * a time.
 */
#include "read/reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read/stream.h"

#define RD_FILES_MAX    65536
#define RD_PAYLOAD_VALUES (1u << 22)

struct rd_trace {
	struct rd_meta *meta;
	int borrowed;                /* meta belongs to the caller */
	char **names;                /* stream file names */
	struct rd_stream *streams;
	size_t n;
	unsigned *heap;              /* stream indexes */
	size_t nheap;
	int64_t *key;                /* per stream: ns of its pending item */
	unsigned *rank;              /* per stream: place of its name in strcmp order */
	long advance;                /* stream to advance before the next pop, or -1 */
	struct rd_vpool payload;
	struct rd_thread_name *threads;  /* env thread_name_<tid> and thread_names, by tid */
	size_t n_threads;
	struct rd_thread_name *inband;   /* ringtrace:thread_name records seen so far */
	size_t n_inband, cap_inband;
	char **skipped;              /* "NAME: why" of entries that cannot be streams */
	size_t n_skipped;
	unsigned n_errors;
	char err[1024];
};

/* ---- clock conversion ---------------------------------------------------- */

/*
 * Same arithmetic as babeltrace2 2.0.4, src/lib/trace-ir/utils.h:
 *   bt_util_ns_from_value(): value * 1e9 / freq in double precision, then
 *     truncated (exact integer path when freq is 1 GHz);
 *   bt_util_get_base_offset_ns(): offset_s * 1e9 + ns_from_value(offset),
 *     refused if offset_s is outside (INT64_MIN/1e9 - 1, INT64_MAX/1e9 - 1);
 *   bt_util_ns_from_origin_inline(): base + ns_from_value(value), refused
 *     if the value's ns reach INT64_MAX or the sum overflows.
 * The offset has already been normalised to offset < freq when the
 * metadata was parsed, as the CTF plugin of babeltrace2 does. So
 *   ns = offset_s*1e9 + trunc(1e9*offset/freq) + trunc(1e9*value/freq),
 * with two separate truncations: this is what `babeltrace2
 * --clock-seconds` prints, to the nanosecond (tests/unit/test_reader.c
 * checks it against values printed by babeltrace2 for a 2.994 GHz clock).
 */
static uint64_t ns_from_value(uint64_t freq, uint64_t v)
{
	if (freq == UINT64_C(1000000000))
		return v;
	double d = (1e9 * (double)v) / (double)freq;
	if (d >= (double)UINT64_MAX)
		return UINT64_MAX;
	return (uint64_t)d;
}

int rd_clock_ns(const struct rd_clock *c, uint64_t value, int64_t *ret_ns)
{
	if (c->offset_s <= INT64_MIN / INT64_C(1000000000) - 1 ||
	    c->offset_s >= INT64_MAX / INT64_C(1000000000) - 1)
		return -ERANGE;
	int64_t base = c->offset_s * INT64_C(1000000000) + (int64_t)ns_from_value(c->freq, c->offset);
	uint64_t v = ns_from_value(c->freq, value);
	if (v >= (uint64_t)INT64_MAX)
		return -ERANGE;
	if (base > 0 && (int64_t)v > INT64_MAX - base)
		return -ERANGE;
	*ret_ns = base + (int64_t)v;
	return 0;
}

/*
 * A stream class that maps no clock has no time at all (babeltrace2 prints
 * none): its items are not ns_ok, and merge after every timed item, each
 * file whole, in file-name order, as babeltrace2 prints such files.
 */
static int to_ns(const struct rd_trace *t, const struct rd_stream *s, uint64_t cycles, int64_t *ns)
{
	if (s->sc && s->sc->clock >= 0)
		return rd_clock_ns(&t->meta->clocks[s->sc->clock], cycles, ns) == 0;
	*ns = 0;
	return 0;
}

/* ---- thread names -------------------------------------------------------- */

static int cmp_thread(const void *a, const void *b)
{
	const struct rd_thread_name *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* A name as it was appended, with its rank: equal tids keep their order. */
struct thread_rank {
	struct rd_thread_name e;
	size_t rank;
};

static int cmp_thread_rank(const void *a, const void *b)
{
	const struct thread_rank *x = a, *y = b;
	if (x->e.tid != y->e.tid)
		return x->e.tid < y->e.tid ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Sort v[0..n) by tid, the last entry of a tid winning, into a table of
 * plain names (v is freed). O(n log n): a trace may name 10^5 threads. */
static int finish_names(struct thread_rank *v, size_t n, struct rd_thread_name **ret, size_t *ret_n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_thread_rank);
	struct rd_thread_name *out = calloc(n ? n : 1, sizeof(*out));
	if (!out) {
		free(v);
		return -ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && v[i + 1].e.tid == v[i].e.tid)
			continue;
		out[k++] = v[i].e;
	}
	free(v);
	*ret = out;
	*ret_n = k;
	return 0;
}

/* Append the entries of "tid=comm,..." (comm %XX-encoded) to v. */
static size_t parse_name_list(const char *s, struct thread_rank *v, size_t n, size_t cap)
{
	while (*s && n < cap) {
		const char *end = strchr(s, ',');
		if (!end)
			end = s + strlen(s);
		struct rd_thread_name e = { 0 };
		const char *q = s;
		uint64_t tid = 0;
		int ok = q < end && *q >= '0' && *q <= '9';
		while (ok && q < end && *q >= '0' && *q <= '9') {
			tid = tid * 10 + (uint64_t)(*q++ - '0');
			if (tid > UINT32_MAX)
				ok = 0;
		}
		ok = ok && q < end && *q == '=';
		size_t len = 0;
		for (q++; ok && q < end; q++) {
			char c = *q;
			if (c == '%') {
				int h = -1;
				if (end - q >= 3 && rd_hexval(q[1]) >= 0 && rd_hexval(q[2]) >= 0)
					h = rd_hexval(q[1]) * 16 + rd_hexval(q[2]);
				if (h <= 0) {
					ok = 0;
					break;
				}
				c = (char)h;
				q += 2;
			}
			if (len < sizeof(e.comm) - 1)
				e.comm[len++] = c;
		}
		if (ok && len) {
			e.tid = (uint32_t)tid;
			v[n].e = e;
			v[n].rank = n;
			n++;
		}
		s = *end ? end + 1 : end;
	}
	return n;
}

int rd_parse_thread_names(const char *s, struct rd_thread_name **ret, size_t *ret_n)
{
	size_t cap = 1;
	for (const char *q = s; *q; q++)
		cap += *q == ',';
	if (cap > 1u << 20)
		cap = 1u << 20;
	struct thread_rank *v = calloc(cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	return finish_names(v, parse_name_list(s, v, 0, cap), ret, ret_n);
}

/* The tid of an env key "thread_name_<tid>" (decimal, no sign, no leading
 * zero), or -1. */
static int64_t thread_key_tid(const char *key)
{
	static const char pre[] = RD_THREAD_NAME_KEY;
	if (strncmp(key, pre, sizeof(pre) - 1))
		return -1;
	const char *q = key + sizeof(pre) - 1;
	uint64_t tid = 0;
	if (*q < '0' || *q > '9' || (*q == '0' && q[1]))
		return -1;
	for (; *q; q++) {
		if (*q < '0' || *q > '9')
			return -1;
		tid = tid * 10 + (uint64_t)(*q - '0');
		if (tid > UINT32_MAX)
			return -1;
	}
	return (int64_t)tid;
}

int rd_meta_thread_names(const struct rd_meta *m, struct rd_thread_name **ret, size_t *ret_n)
{
	const struct rd_env *list = rd_meta_env(m, "thread_names");
	if (list && !list->str)
		list = NULL;
	size_t cap = 1;
	for (const char *q = list ? list->str : ""; *q; q++)
		cap += *q == ',';
	if (cap > 1u << 20)
		cap = 1u << 20;
	cap += m->n_env;
	struct thread_rank *v = calloc(cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	/* The old single list first, so that a key of its own wins. */
	size_t n = list ? parse_name_list(list->str, v, 0, cap - m->n_env) : 0;
	for (size_t i = 0; i < m->n_env; i++) {
		const struct rd_env *e = &m->env[i];
		int64_t tid = e->str ? thread_key_tid(e->key) : -1;
		if (tid < 0 || !e->str[0])
			continue;
		v[n].e.tid = (uint32_t)tid;
		snprintf(v[n].e.comm, sizeof(v[n].e.comm), "%s", e->str);
		v[n].rank = n;
		n++;
	}
	return finish_names(v, n, ret, ret_n);
}

/*
 * A thread's name: the recorder's last look at /proc (env thread_name_<tid>,
 * or thread_names in older traces)
 * when it has one, since it follows renames; else the name the thread
 * announced before its first event (ringtrace:thread_name).
 */
const char *rd_trace_comm(const struct rd_trace *t, uint32_t tid)
{
	struct rd_thread_name key = { .tid = tid };
	if (t->n_threads) {
		const struct rd_thread_name *e =
			bsearch(&key, t->threads, t->n_threads, sizeof(key), cmp_thread);
		if (e)
			return e->comm;
	}
	for (size_t i = t->n_inband; i-- > 0;)
		if (t->inband[i].tid == tid)
			return t->inband[i].comm;
	return NULL;
}

static void note_thread_name(struct rd_trace *t, const struct rd_value *fields)
{
	const struct rd_value *tid = rd_value_member(fields, "_tid");
	const struct rd_value *comm = rd_value_member(fields, "_comm");
	if (!tid)
		tid = rd_value_member(fields, "tid");
	if (!comm)
		comm = rd_value_member(fields, "comm");
	if (!tid || !comm || tid->type->kind != RD_INT || comm->type->kind != RD_STRING || !comm->str.s)
		return;
	for (size_t i = 0; i < t->n_inband; i++) {
		if (t->inband[i].tid == (uint32_t)tid->u) {
			snprintf(t->inband[i].comm, sizeof(t->inband[i].comm), "%.*s", (int)comm->str.len,
				 comm->str.s);
			return;
		}
	}
	if (t->n_inband == t->cap_inband) {
		/* Bounded: a hostile trace cannot make this grow without end. */
		if (t->cap_inband >= 65536)
			return;
		size_t cap = t->cap_inband ? t->cap_inband * 2 : 16;
		struct rd_thread_name *v = realloc(t->inband, cap * sizeof(*v));
		if (!v)
			return;
		t->inband = v;
		t->cap_inband = cap;
	}
	t->inband[t->n_inband].tid = (uint32_t)tid->u;
	snprintf(t->inband[t->n_inband].comm, sizeof(t->inband[0].comm), "%.*s", (int)comm->str.len,
		 comm->str.s);
	t->n_inband++;
}

/* ---- heap ---------------------------------------------------------------- */

static int before(const struct rd_trace *t, unsigned a, unsigned b)
{
	if (t->key[a] != t->key[b])
		return t->key[a] < t->key[b];
	/* Items without time come file by file in the order of their names
	 * under strcmp, as babeltrace2 prints them; timed items with equal
	 * times in the order of the files (strverscmp: stream_2 before
	 * stream_10). */
	if (t->key[a] == INT64_MAX)
		return t->rank[a] < t->rank[b];
	return a < b;
}

static void heap_push(struct rd_trace *t, unsigned s)
{
	size_t i = t->nheap++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!before(t, s, t->heap[parent]))
			break;
		t->heap[i] = t->heap[parent];
		i = parent;
	}
	t->heap[i] = s;
}

static unsigned heap_pop(struct rd_trace *t)
{
	unsigned top = t->heap[0];
	unsigned last = t->heap[--t->nheap];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= t->nheap)
			break;
		if (c + 1 < t->nheap && before(t, t->heap[c + 1], t->heap[c]))
			c++;
		if (!before(t, t->heap[c], last))
			break;
		t->heap[i] = t->heap[c];
		i = c;
	}
	if (t->nheap)
		t->heap[i] = last;
	return top;
}

/* ---- opening -------------------------------------------------------------- */

static void record_error(struct rd_trace *t, const struct rd_stream *s)
{
	if (t->n_errors++ == 0)
		snprintf(t->err, sizeof(t->err), "%s", s->err);
}

/* Advance stream i and queue its next item. */
static void advance(struct rd_trace *t, unsigned i)
{
	struct rd_stream *s = &t->streams[i];
	int r = rd_stream_advance(s);
	if (r < 0) {
		record_error(t, s);
		return;
	}
	if (r == 0)
		return;
	int64_t ns;
	t->key[i] = to_ns(t, s, s->ts, &ns) ? ns : INT64_MAX;
	heap_push(t, i);
}

struct named_index {
	const char *name;
	unsigned i;
};

static int cmp_named_index(const void *a, const void *b)
{
	return strcmp(((const struct named_index *)a)->name, ((const struct named_index *)b)->name);
}

/* t->rank: each file's place when the names are sorted by strcmp. */
static int rank_names(struct rd_trace *t)
{
	struct named_index *v = calloc(t->n ? t->n : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		v[i].name = t->names[i];
		v[i].i = (unsigned)i;
	}
	if (t->n)
		qsort(v, t->n, sizeof(*v), cmp_named_index);
	for (size_t k = 0; k < t->n; k++)
		t->rank[v[k].i] = (unsigned)k;
	free(v);
	return 0;
}

static int setup(struct rd_trace *t, char *err, size_t errlen)
{
	t->heap = calloc(t->n ? t->n : 1, sizeof(*t->heap));
	t->key = calloc(t->n ? t->n : 1, sizeof(*t->key));
	t->rank = calloc(t->n ? t->n : 1, sizeof(*t->rank));
	if (!t->heap || !t->key || !t->rank || rank_names(t) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rd_vpool_init(&t->payload, RD_PAYLOAD_VALUES);
	if (rd_meta_thread_names(t->meta, &t->threads, &t->n_threads) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->advance = -1;
	for (size_t i = 0; i < t->n; i++)
		advance(t, (unsigned)i);
	return 0;
}

static int parse_metadata(struct rd_trace *t, const uint8_t *data, size_t len, char *err,
			  size_t errlen)
{
	char *text;
	size_t tlen;
	char msg[512];
	int r = rd_meta_text(data, len, &text, &tlen, msg, sizeof(msg));
	if (r < 0) {
		snprintf(err, errlen, "metadata: %s", msg);
		return r;
	}
	r = rd_meta_parse(text, tlen, &t->meta, msg, sizeof(msg));
	free(text);
	if (r < 0)
		snprintf(err, errlen, "metadata: %s", msg);
	return r;
}

static int cmp_names(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* ---- the entries of a trace directory --------------------------------------- */

int rd_trace_entry(int dfd, const char *name, const char **ret_why)
{
	struct stat st;
	*ret_why = NULL;
	if (name[0] == '.' || !strcmp(name, "metadata"))
		return 0;
	if (fstatat(dfd, name, &st, 0) < 0) {
		/* A dangling link or a link loop: no stream can be read there. */
		*ret_why = errno == ELOOP ? "a symbolic link loop" : strerror(errno);
		return -1;
	}
	if (S_ISREG(st.st_mode))
		return 1;
	/* What a recording writes beside its streams, and LTTng's packet
	 * indexes (index/): directories that are no stream and no problem. */
	if (S_ISDIR(st.st_mode) && (!strcmp(name, "stacks") || !strcmp(name, "mem") ||
				    !strcmp(name, "children") || !strcmp(name, "index")))
		return 0;
	*ret_why = rd_file_kind(st.st_mode);
	return -1;
}

const char *rd_file_kind(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "a regular file";
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFLNK: return "a symbolic link";
	default: return "not a regular file";
	}
}

static int note_skipped(struct rd_trace *t, const char *name, const char *why)
{
	char **v = realloc(t->skipped, (t->n_skipped + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	t->skipped = v;
	if (asprintf(&v[t->n_skipped], "%s: %s, not a stream file", name, why) < 0)
		return -ENOMEM;
	t->n_skipped++;
	return 0;
}

size_t rd_trace_n_skipped(const struct rd_trace *t)
{
	return t->n_skipped;
}

const char *rd_trace_skipped(const struct rd_trace *t, size_t i)
{
	return i < t->n_skipped ? t->skipped[i] : NULL;
}

int rd_trace_open(const char *dir, struct rd_trace **ret, char *err, size_t errlen)
{
	struct rd_trace *t = calloc(1, sizeof(*t));
	uint8_t *mdata = NULL;
	DIR *dp = NULL;
	int dfd = -1, r;
	char dummy[8];

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		goto fail;
	}
	int mfd = openat(dfd, "metadata", O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (mfd < 0) {
		r = -errno;
		if (errno == ENOENT)
			snprintf(err, errlen, "no 'metadata' file: not a CTF trace directory");
		else
			snprintf(err, errlen, "cannot open 'metadata': %s", strerror(errno));
		goto fail;
	}
	struct stat st;
	if (fstat(mfd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(mfd);
		r = -EINVAL;
		snprintf(err, errlen, "'metadata' is not a regular file");
		goto fail;
	}
	if ((uint64_t)st.st_size > 2 * (uint64_t)RD_META_MAX) {
		close(mfd);
		r = -E2BIG;
		snprintf(err, errlen, "'metadata' is too large (%lld bytes)", (long long)st.st_size);
		goto fail;
	}
	size_t mlen = (size_t)st.st_size, got = 0;
	mdata = malloc(mlen + 1);
	while (mdata && got < mlen) {
		ssize_t n = read(mfd, mdata + got, mlen - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(mfd);
	if (!mdata) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if ((r = parse_metadata(t, mdata, got, err, errlen)) < 0)
		goto fail;
	free(mdata);
	mdata = NULL;

	int dfd2 = dup(dfd);
	dp = dfd2 >= 0 ? fdopendir(dfd2) : NULL;
	if (!dp) {
		r = -errno;
		if (dfd2 >= 0)
			close(dfd2);
		snprintf(err, errlen, "cannot list: %s", strerror(errno));
		goto fail;
	}
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(dp))) {
		const char *why;
		int kind = rd_trace_entry(dfd, de->d_name, &why);
		if (kind == 0)
			continue;
		if (kind < 0) {
			if (t->n_skipped < RD_FILES_MAX && note_skipped(t, de->d_name, why) < 0) {
				r = -ENOMEM;
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			continue;
		}
		if (t->n == RD_FILES_MAX) {
			r = -E2BIG;
			snprintf(err, errlen, "more than %d stream files", RD_FILES_MAX);
			goto fail;
		}
		if (t->n == cap) {
			cap = cap ? cap * 2 : 16;
			char **nn = realloc(t->names, cap * sizeof(*nn));
			if (!nn) {
				r = -ENOMEM;
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			t->names = nn;
		}
		t->names[t->n] = strdup(de->d_name);
		if (!t->names[t->n]) {
			r = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		t->n++;
	}
	closedir(dp);
	dp = NULL;
	if (t->n)
		qsort(t->names, t->n, sizeof(*t->names), cmp_names);
	t->streams = calloc(t->n ? t->n : 1, sizeof(*t->streams));
	if (!t->streams) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < t->n; i++) {
		struct rd_src src = { .fd = -1 };
		int fd = openat(dfd, t->names[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			r = fd < 0 ? -errno : -EINVAL;
			snprintf(err, errlen, "cannot open '%s': %s", t->names[i],
				 fd < 0 ? strerror(errno) : "not a regular file");
			if (fd >= 0)
				close(fd);
			t->n = i;
			goto fail;
		}
		src.fd = fd;
		src.size = (uint64_t)st.st_size;
		rd_stream_init(&t->streams[i], t->meta, (unsigned)i, t->names[i], src);
	}
	close(dfd);
	dfd = -1;
	if ((r = setup(t, err, errlen)) < 0)
		goto fail;
	*ret = t;
	return 0;
fail:
	if (dp)
		closedir(dp);
	if (dfd >= 0)
		close(dfd);
	free(mdata);
	rd_trace_close(t);
	return r;
}

static int open_mem(struct rd_trace *t, const struct rd_mem_stream *streams, size_t n,
		    struct rd_trace **ret, char *err, size_t errlen)
{
	int r;
	t->streams = calloc(n ? n : 1, sizeof(*t->streams));
	t->names = calloc(n ? n : 1, sizeof(*t->names));
	if (!t->streams || !t->names) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		t->names[i] = strdup(streams[i].name ? streams[i].name : "stream");
		if (!t->names[i]) {
			r = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		struct rd_src src = { .fd = -1, .mem = streams[i].data, .size = streams[i].size };
		rd_stream_init(&t->streams[i], t->meta, (unsigned)i, t->names[i], src);
		t->n = i + 1;
	}
	if ((r = setup(t, err, errlen)) < 0)
		goto fail;
	*ret = t;
	return 0;
fail:
	rd_trace_close(t);
	return r;
}

int rd_trace_open_mem(const char *metadata, size_t len, const struct rd_mem_stream *streams,
		      size_t n, struct rd_trace **ret, char *err, size_t errlen)
{
	struct rd_trace *t = calloc(1, sizeof(*t));
	char dummy[8];
	int r;

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if ((r = parse_metadata(t, (const uint8_t *)metadata, len, err, errlen)) < 0) {
		rd_trace_close(t);
		return r;
	}
	return open_mem(t, streams, n, ret, err, errlen);
}

int rd_trace_open_model(const struct rd_meta *m, const struct rd_mem_stream *streams, size_t n,
			struct rd_trace **ret, char *err, size_t errlen)
{
	struct rd_trace *t = calloc(1, sizeof(*t));
	char dummy[8];

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->meta = (struct rd_meta *)m;
	t->borrowed = 1;
	return open_mem(t, streams, n, ret, err, errlen);
}

void rd_trace_close(struct rd_trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; t->streams && i < t->n; i++)
		rd_stream_fini(&t->streams[i]);
	for (size_t i = 0; t->names && i < t->n; i++)
		free(t->names[i]);
	free(t->names);
	for (size_t i = 0; i < t->n_skipped; i++)
		free(t->skipped[i]);
	free(t->skipped);
	free(t->streams);
	free(t->heap);
	free(t->key);
	free(t->rank);
	free(t->threads);
	free(t->inband);
	rd_vpool_free(&t->payload);
	if (!t->borrowed)
		rd_meta_free(t->meta);
	free(t);
}

const char *rd_trace_errmsg(const struct rd_trace *t)
{
	return t->err;
}

const struct rd_meta *rd_trace_meta(const struct rd_trace *t)
{
	return t->meta;
}

/* ---- iteration ------------------------------------------------------------- */

int rd_trace_next(struct rd_trace *t, struct rd_item *it)
{
	for (;;) {
		if (t->advance >= 0) {
			unsigned i = (unsigned)t->advance;
			t->advance = -1;
			advance(t, i);
		}
		if (t->nheap == 0) {
			if (t->n_errors > 1) {
				size_t l = strlen(t->err);
				snprintf(t->err + l, sizeof(t->err) - l, " (and %u more error%s)",
					 t->n_errors - 1, t->n_errors > 2 ? "s" : "");
				t->n_errors = 1;
			}
			return t->n_errors ? -EBADMSG : 0;
		}
		unsigned i = heap_pop(t);
		struct rd_stream *s = &t->streams[i];
		t->advance = (long)i;
		memset(it, 0, sizeof(*it));
		it->stream = i;
		it->stream_name = s->name;
		it->cpu = s->cpu;
		it->cycles = s->ts;
		it->ns_ok = to_ns(t, s, s->ts, &it->ns);
		if (s->pending == RD_PENDING_LOSS) {
			it->kind = s->loss.kind == RD_LOSS_EVENTS ? RD_ITEM_LOST_EVENTS : RD_ITEM_LOST_PACKETS;
			it->count = s->loss.count;
			it->has_begin = s->loss.has_begin;
			it->end_ok = to_ns(t, s, s->loss.end, &it->end_ns);
			return 1;
		}
		const struct rd_value *fields;
		rd_vpool_reset(&t->payload);
		if (rd_stream_payload(s, &t->payload, &fields) < 0) {
			record_error(t, s);
			t->advance = -1;
			continue;
		}
		it->kind = RD_ITEM_EVENT;
		it->ec = s->ec;
		it->fields = fields;
		it->common_context = s->dec.scopes[RD_SCOPE_EVENT_COMMON_CONTEXT];
		it->context = s->dec.scopes[RD_SCOPE_EVENT_CONTEXT];
		if (!strcmp(s->ec->name, "ringtrace:thread")) {
			const struct rd_value *v = rd_value_member(fields, "_tid");
			if (!v)
				v = rd_value_member(fields, "tid");
			if (v && (v->type->kind == RD_INT || v->type->kind == RD_ENUM))
				s->tid = (uint32_t)v->u;
		} else if (!strcmp(s->ec->name, "ringtrace:thread_name")) {
			note_thread_name(t, fields);
		}
		it->tid = s->tid;
		it->comm = s->tid ? rd_trace_comm(t, s->tid) : NULL;
		return 1;
	}
}
