/*
 * stack_files.c - TRACE/stacks/: the stack map, its counters and the
 * loaded objects of a traced program, written when a recording ends and
 * read back by `ringtrace stackmap DIR` and the reports (formats and
 * contract in stack_files.h).
 *
 * Who writes, who reads: the ringtrace command writes, once per trace,
 * from a map it has mapped (the program's or its own copy); any later
 * command reads, possibly on another machine, from files that may have
 * been cut short by a crash, copied badly or written by an attacker.
 * Nothing here is on a hot path: it allocates, does file I/O and never
 * prints (errors are negative errnos, the caller says them).
 *
 * Writing: each file goes to a temporary name in stacks/ and is renamed
 * over the old one, so a reader sees a whole old file or a whole new one,
 * never a partial one. stackmap.bin is renamed last: it is the file whose
 * presence says "this trace has stacks", and by then the maps and the
 * counters that belong with it are in place.
 *
 * Reading: every file is read whole, bounded (a file larger than any
 * real one is damaged, not a reason to allocate without limit), and
 * checked whole before anything is handed out. The binary layout is
 * validated by stackmap_load_bin(); the two text files are parsed here,
 * strictly: exactly what the writer prints, a complete last line, no
 * number that overflows, no field that would not fit struct rt_map.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stackmap/stack_files.h"
#include "util/outdir.h"

#define STACKS_DIR   "stacks"
#define FILE_BIN     "stackmap.bin"
#define FILE_STAT    "stackmap.stat"
#define FILE_MAPS    "maps"
#define MAPS_HEADER  "# ringtrace maps 1\n"

/* The largest binary file a map can produce: one record per pool element
 * of the largest pool, each at the deepest. Anything longer is damaged. */
#define BIN_MAX \
	(STACKMAP_BIN_HDR + \
	 ((size_t)1 << STACKMAP_BITS_MAX) * (STACKMAP_BIN_STACK + STACKMAP_MAX_DEPTH * 8))
/* The five counter lines hold at most ~150 bytes. */
#define STAT_MAX     4096
/* Objects in a maps file: far beyond any real process (a few hundred is a
 * big one), low enough that a hostile file cannot make us allocate more
 * than ~80 MB of struct rt_map. */
#define MAPS_MAX_OBJECTS (1u << 16)
#define MAPS_MAX     ((size_t)64 << 20)

/* ---- reading a whole file ---------------------------------------------- */

/*
 * The contents of dfd/name, at most cap bytes, NUL-terminated (the text
 * parsers still use the length: a NUL inside is data, and refused).
 * -ENOENT when missing, -EBADMSG when not a regular file or too long
 * (O_NONBLOCK: a FIFO planted in the trace must not hang the command),
 * -ENOMEM, or the errno of open/read.
 */
static int read_whole(int dfd, const char *name, size_t cap, char **ret, size_t *ret_len)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	int r;
	char *buf = NULL;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size > cap) {
		r = -EBADMSG;
		goto fail;
	}
	/* Sized by fstat, but read to EOF: the file may change meanwhile, and
	 * one byte of room beyond cap tells a file that grew too long. */
	size_t size = (size_t)st.st_size + 1, len = 0;
	buf = malloc(size + 1);
	if (!buf) {
		r = -ENOMEM;
		goto fail;
	}
	for (;;) {
		if (len == size) {
			if (size > cap) {
				r = -EBADMSG;
				goto fail;
			}
			size_t nsize = size * 2 < cap + 1 ? size * 2 : cap + 1;
			char *nbuf = realloc(buf, nsize + 1);
			if (!nbuf) {
				r = -ENOMEM;
				goto fail;
			}
			buf = nbuf;
			size = nsize;
		}
		ssize_t got = read(fd, buf + len, size - len);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto fail;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	if (len > cap) {
		r = -EBADMSG;
		goto fail;
	}
	close(fd);
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
fail:
	free(buf);
	close(fd);
	return r;
}

/* ---- parsing ------------------------------------------------------------ */

/* A cursor over one file; every read checks it against end. */
struct cur {
	const char *p;
	const char *end;
};

static int take(struct cur *c, const char *lit)
{
	size_t n = strlen(lit);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
		return -EBADMSG;
	c->p += n;
	return 0;
}

/* Decimal as printf's %PRIu64 writes it: 1 to 20 digits, no sign, no
 * leading zero, no overflow. */
static int take_dec(struct cur *c, uint64_t *ret)
{
	const char *s = c->p;
	uint64_t v = 0;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		unsigned d = (unsigned)(*c->p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EBADMSG;
		v = v * 10 + d;
		c->p++;
	}
	if (c->p == s || (*s == '0' && c->p - s > 1))
		return -EBADMSG;
	*ret = v;
	return 0;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1; /* the writer prints lower case only */
}

/* Hex without 0x, 1 to 16 digits, that fits a uintptr_t. */
static int take_hex(struct cur *c, uintptr_t *ret)
{
	const char *s = c->p;
	uint64_t v = 0;
	int d;
	while (c->p < c->end && (d = hexval(*c->p)) >= 0) {
		if (c->p - s == 16)
			return -EBADMSG;
		v = v << 4 | (uint64_t)d;
		c->p++;
	}
	if (c->p == s || v > UINTPTR_MAX)
		return -EBADMSG;
	*ret = (uintptr_t)v;
	return 0;
}

/* The five lines of stackmap_print_stat(), nothing before or after. */
static int parse_stat(const char *buf, size_t len, struct stackmap_stat *ret)
{
	struct cur c = { buf, buf + len };
	struct stackmap_stat st;
	uint64_t rate;
	if (take(&c, "entries: ") || take_dec(&c, &st.entries) || take(&c, " / ") ||
	    take_dec(&c, &st.max_entries) || take(&c, "\ntable_size: ") ||
	    take_dec(&c, &st.table_size) || take(&c, "\nsuccesses: ") ||
	    take_dec(&c, &st.successes) || take(&c, "\ndrops: ") || take_dec(&c, &st.drops) ||
	    take(&c, "\nsuccess_rate: ") || take_dec(&c, &rate) || take(&c, "%\n") || c.p != c.end)
		return -EBADMSG;
	/* What any map's counters satisfy; the rest (table size against the
	 * pool, the rate against S and D) is left to the writer's version. */
	if (rate > 100 || st.entries > st.max_entries)
		return -EBADMSG;
	st.success_rate = (uint32_t)rate;
	*ret = st;
	return 0;
}

/* One "START-END BIAS BUILD_ID PATH" line, without its '\n', into *m. */
static int parse_map_line(const char *line, size_t len, struct rt_map *m)
{
	struct cur c = { line, line + len };
	if (take_hex(&c, &m->start) || take(&c, "-") || take_hex(&c, &m->end) || take(&c, " ") ||
	    take_hex(&c, &m->bias) || take(&c, " "))
		return -EBADMSG;
	if (m->start > m->end)
		return -EBADMSG;
	if (take(&c, "- ") == 0) {
		m->build_id_len = 0;
		m->build_id[0] = '\0';
	} else {
		const char *s = c.p;
		while (c.p < c.end && hexval(*c.p) >= 0)
			c.p++;
		size_t n = (size_t)(c.p - s);
		if (n == 0 || n % 2 || n > 2 * RT_MAPS_BUILD_ID_MAX || take(&c, " "))
			return -EBADMSG;
		memcpy(m->build_id, s, n);
		m->build_id[n] = '\0';
		m->build_id_len = (uint32_t)(n / 2);
	}
	size_t plen = (size_t)(c.end - c.p);
	if (plen == 0 || plen >= RT_MAPS_PATH_MAX || memchr(c.p, '\0', plen))
		return -EBADMSG;
	memcpy(m->path, c.p, plen);
	m->path[plen] = '\0';
	/* What the line implies; RT_MAP_MAIN and truncation are not carried. */
	m->flags = 0;
	if (!strcmp(m->path, "[vdso]"))
		m->flags |= RT_MAP_VDSO;
	if (m->start == m->end)
		m->flags |= RT_MAP_NO_EXEC;
	return 0;
}

static int parse_maps(const char *buf, size_t len, struct rt_map **ret, size_t *ret_n)
{
	size_t hl = strlen(MAPS_HEADER);
	if (len < hl || memcmp(buf, MAPS_HEADER, hl) != 0)
		return -EBADMSG;
	/* Every line ends with '\n': a file cut short is damaged, even when
	 * the cut fell where the line would still parse. */
	if (buf[len - 1] != '\n')
		return -EBADMSG;
	size_t n = 0;
	for (const char *p = buf + hl; p < buf + len; p++)
		if (*p == '\n' && ++n > MAPS_MAX_OBJECTS)
			return -EBADMSG;
	struct rt_map *maps = calloc(n ? n : 1, sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	const char *p = buf + hl, *end = buf + len;
	for (size_t i = 0; i < n; i++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		/* n counted the newlines: each of the n lines has one. */
		if (!nl || parse_map_line(p, (size_t)(nl - p), &maps[i]) < 0) {
			free(maps);
			return -EBADMSG;
		}
		p = nl + 1;
	}
	*ret = maps;
	*ret_n = n;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const struct stackmap_stack *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

static int parse_bin(const char *buf, size_t len, struct stackmap_stack **ret, size_t *ret_n)
{
	struct stackmap_stack *s;
	size_t n;
	int r = stackmap_load_bin(buf, len, &s, &n, NULL);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return -EBADMSG; /* -EPROTO included: the header promises version 2 */
	if (n > 1)
		qsort(s, n, sizeof(*s), by_id);
	/* An id names one stack: two records with one id cannot both be right. */
	for (size_t i = 1; i < n; i++) {
		if (s[i].id == s[i - 1].id) {
			free(s);
			return -EBADMSG;
		}
	}
	*ret = s;
	*ret_n = n;
	return 0;
}

/* ---- read ----------------------------------------------------------------- */

int stack_files_read(const char *trace_dir, struct stack_files *ret)
{
	if (!trace_dir || !ret)
		return -EINVAL;
	struct stack_files f = { 0 };
	char *buf = NULL;
	size_t len;
	int r;
	int dfd = open(trace_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int sfd = openat(dfd, STACKS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(dfd);
	if (sfd < 0)
		return errno == ENOTDIR ? -EBADMSG : -errno;

	r = read_whole(sfd, FILE_BIN, BIN_MAX, &buf, &len);
	if (r < 0)
		goto out;
	r = parse_bin(buf, len, &f.stacks, &f.nstacks);
	free(buf);
	buf = NULL;
	if (r < 0)
		goto out;

	r = read_whole(sfd, FILE_STAT, STAT_MAX, &buf, &len);
	if (r == 0) {
		r = parse_stat(buf, len, &f.stat);
		f.has_stat = r == 0;
		free(buf);
		buf = NULL;
	}
	if (r < 0 && r != -ENOENT)
		goto out;

	r = read_whole(sfd, FILE_MAPS, MAPS_MAX, &buf, &len);
	if (r == 0) {
		r = parse_maps(buf, len, &f.maps, &f.nmaps);
		free(buf);
		buf = NULL;
	}
	if (r < 0 && r != -ENOENT)
		goto out;
	r = 0;
	*ret = f;
out:
	close(sfd);
	if (r < 0)
		stack_files_free(&f);
	return r;
}

/* ---- from a live map ---------------------------------------------------- */

int stack_files_from_map(const struct stackmap *map, const struct rt_map *maps, size_t nmaps,
			 struct stack_files *ret)
{
	if (!map || !ret || (nmaps && !maps))
		return -EINVAL;
	struct stack_files f = { 0 };
	int r = stackmap_collect(map, &f.stacks, &f.nstacks);
	if (r < 0)
		return r;
	r = stackmap_stat(map, &f.stat);
	if (r < 0)
		goto fail;
	f.has_stat = 1;
	if (nmaps) {
		f.maps = malloc(nmaps * sizeof(*f.maps));
		if (!f.maps) {
			r = -ENOMEM;
			goto fail;
		}
		memcpy(f.maps, maps, nmaps * sizeof(*f.maps));
		f.nmaps = nmaps;
		/* The list may come from another process's memory: whatever it
		 * held, its strings end inside their arrays. */
		for (size_t i = 0; i < nmaps; i++) {
			f.maps[i].path[sizeof(f.maps[i].path) - 1] = '\0';
			f.maps[i].build_id[sizeof(f.maps[i].build_id) - 1] = '\0';
		}
	}
	*ret = f;
	return 0;
fail:
	stack_files_free(&f);
	return r;
}

void stack_files_free(struct stack_files *f)
{
	if (!f)
		return;
	free(f->stacks);
	free(f->maps);
	memset(f, 0, sizeof(*f));
}

/* ---- write ------------------------------------------------------------- */

struct bin_arg {
	const struct stackmap_stack *s;
	size_t n;
};

static int put_bin(FILE *f, const void *arg)
{
	const struct bin_arg *b = arg;
	return stackmap_print_bin(f, b->s, b->n);
}

static int put_stat(FILE *f, const void *arg)
{
	return stackmap_print_stat(f, arg);
}

struct maps_arg {
	const struct rt_map *maps;
	size_t n;
};

/* 1 if the line format can carry m as the reader will accept it. */
static int map_writable(const struct rt_map *m)
{
	size_t plen = strnlen(m->path, sizeof(m->path));
	if (plen == 0 || plen == sizeof(m->path) || memchr(m->path, '\n', plen))
		return 0;
	size_t blen = strnlen(m->build_id, sizeof(m->build_id));
	if (blen == sizeof(m->build_id) || blen % 2)
		return 0;
	for (size_t i = 0; i < blen; i++)
		if (hexval(m->build_id[i]) < 0)
			return 0;
	return m->start <= m->end;
}

/*
 * An object the format cannot carry (a path with a newline, an
 * unterminated string or a malformed build id: memory copied from a
 * damaged process) is left out rather than failing the whole trace: its
 * addresses then print as addresses, the other objects still resolve.
 */
static int put_maps(FILE *f, const void *arg)
{
	const struct maps_arg *a = arg;
	fputs(MAPS_HEADER, f);
	for (size_t i = 0; i < a->n; i++) {
		const struct rt_map *m = &a->maps[i];
		if (!map_writable(m))
			continue;
		fprintf(f, "%" PRIxPTR "-%" PRIxPTR " %" PRIxPTR " %s %s\n", m->start, m->end, m->bias,
			m->build_id[0] ? m->build_id : "-", m->path);
	}
	return ferror(f) ? -EIO : 0;
}

/*
 * dfd/name replaced by what put() writes, through a temporary file under a
 * random name in the same directory (rename is atomic only within a file
 * system; util/outdir.h says why the name must be unpredictable). On
 * disk before the name points at it: after a crash the name holds the old
 * file or the whole new one.
 */
static int write_replace(int dfd, const char *name, int (*put)(FILE *, const void *),
			 const void *arg)
{
	struct outdir_tmp t;
	int r = outdir_tmp_open(&t, dfd, name, 0666);
	if (r < 0)
		return r;
	FILE *f = outdir_tmp_fdopen(&t, "w");
	if (!f) {
		r = -errno;
		outdir_tmp_abort(&t);
		return r;
	}
	r = put(f, arg);
	if (r < 0) {
		outdir_tmp_abort(&t);
		return r;
	}
	return outdir_tmp_commit(&t, 1);
}

int stack_files_write(const char *trace_dir, const struct stackmap *map, const struct rt_map *maps,
		      size_t nmaps)
{
	if (!trace_dir)
		return -EINVAL;
	int dfd = open(trace_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int r = stack_files_write_at(dfd, map, maps, nmaps);
	close(dfd);
	return r;
}

int stack_files_write_at(int dfd, const struct stackmap *map, const struct rt_map *maps, size_t nmaps)
{
	if (dfd < 0 || !map || (nmaps && !maps))
		return -EINVAL;
	/* Everything is read from the map before the first file is touched:
	 * a map that cannot be read leaves the trace as it was. */
	struct stackmap_stack *s;
	size_t n;
	int r = stackmap_collect(map, &s, &n);
	if (r < 0)
		return r;
	struct stackmap_stat st;
	r = stackmap_stat(map, &st);
	if (r < 0) {
		free(s);
		return r;
	}
	/* Made by us inside the trace directory (a new one, or ours from an
	 * earlier write): the ownership checks refuse one planted there. */
	int sfd = outdir_open(dfd, STACKS_DIR, OUTDIR_CREATE, NULL, NULL, 0);
	if (sfd < 0) {
		r = sfd;
		goto out;
	}
	struct maps_arg ma = { maps, nmaps };
	struct bin_arg ba = { s, n };
	r = write_replace(sfd, FILE_MAPS, put_maps, &ma);
	if (r == 0)
		r = write_replace(sfd, FILE_STAT, put_stat, &st);
	if (r == 0)
		r = write_replace(sfd, FILE_BIN, put_bin, &ba);
	/* The renames themselves on disk. */
	if (r == 0 && fsync(sfd) < 0)
		r = -errno;
	close(sfd);
out:
	free(s);
	return r;
}
