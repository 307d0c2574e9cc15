/*
 * cmd_check.c - `ringtrace check [-n N] DIR`: validate a trace written by
 * `ringtrace record`, `snapshot` or `recover` (or any CTF 1.8 trace the
 * TSDL parser accepts), as kmemtrace_check does for kmemtrace.
 *
 * The metadata is parsed with the reader's TSDL parser, then every stream
 * file (every regular file but `metadata` whose name does not start with
 * '.', as babeltrace2 reads them; any other entry but the directories a
 * recording writes is a problem, never opened) is walked packet by packet by the checker
 * (src/read/check_trace.c), which decodes every event. Each problem is one
 * line on stdout:
 *
 *   DIR/FILE: offset N (packet K): what is wrong
 *
 * N is the byte offset in FILE of the field or event concerned and K the
 * index of the packet in FILE, from 0 ("(packet K)" is absent for a
 * problem of the whole file). At most 100 problems are printed (-n), then
 * "... and N more problems"; the last line is always
 *
 *   ringtrace check: N streams, N packets, N events, N lost, N problems
 *
 * where events leaves out ringtrace's own thread records (as `record`
 * counts them) and lost is the events lost according to events_discarded,
 * plus those the env says the recorder lost after the buffers (never
 * written to a full disk, unreadable after a crash): the summary's count.
 * A trace whose recorder could not write everything ("the trace is cut")
 * and a stream whose events + losses differ from what the env says was
 * written are problems (docs/trace-format.md, "Loss accounting").
 * Exit status: 0 no problem, 1 problems, 2 usage error or not a trace (one
 * line on stderr). Every input is hostile: no trace can crash it or make
 * it loop.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "read/check_trace.h"
#include "read/reader.h"
#include "read/tsdl.h"

#define PFX "ringtrace check: "
#define CHECK_MAX_PRINTED 100

struct out {
	const char *dir;             /* as given, without trailing slashes */
	uint64_t max;                /* 0: print every problem */
	uint64_t printed, skipped;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ringtrace check [-n N] DIR\n"
		   "  -n, --max-problems N   print at most N problems (default %d, 0: all)\n"
		   "Validates every packet and event of the trace in DIR; exit status 0 if it has\n"
		   "no problem, 1 if it has, 2 if DIR is not a trace.\n",
		   CHECK_MAX_PRINTED);
}

/* Control bytes (from file names, event names) would break the one-line format. */
static void put_safe(const char *s)
{
	for (; *s; s++)
		putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

static void on_problem(void *ctx, const struct rd_check_problem *p)
{
	struct out *o = ctx;
	if (o->max && o->printed >= o->max) {
		o->skipped++;
		return;
	}
	o->printed++;
	put_safe(o->dir);
	putchar('/');
	put_safe(p->file);
	if (p->has_packet)
		printf(": offset %llu (packet %llu): ", (unsigned long long)p->offset,
		       (unsigned long long)p->packet);
	else
		printf(": ");
	put_safe(p->what);
	putchar('\n');
}

/* The whole of a regular file `name` in dfd, at most `max` bytes: 0, or a
 * negative errno (-EFBIG when too large). */
static int slurp(int dfd, const char *name, uint64_t max, uint8_t **ret, size_t *ret_len)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return -EFBIG;
	}
	size_t len = (size_t)st.st_size, got = 0;
	uint8_t *b = malloc(len + 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	while (got < len) {
		ssize_t n = read(fd, b + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;      /* shrank: what was read is what there is */
		got += (size_t)n;
	}
	close(fd);
	*ret = b;
	*ret_len = got;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* Names of the stream files of the trace open in dfd, sorted as the reader
 * sorts them, with the entries that cannot be streams among them (a FIFO,
 * a socket, a directory, a link loop: rd_trace_entry()) as "NAME\0why", so
 * that each is reported as a problem in its place. 0 or a negative errno. */
static int list_streams(int dfd, char ***ret, size_t *ret_n)
{
	int dfd2 = dup(dfd);
	DIR *dp = dfd2 >= 0 ? fdopendir(dfd2) : NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int r = 0;

	if (!dp) {
		r = -errno;
		if (dfd2 >= 0)
			close(dfd2);
		return r;
	}
	while ((de = readdir(dp))) {
		const char *why;
		int kind = rd_trace_entry(dfd, de->d_name, &why);
		if (kind == 0)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **v = realloc(names, ncap * sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			names = v;
			cap = ncap;
		}
		size_t ln = strlen(de->d_name), lw = kind < 0 ? strlen(why) : 0;
		if ((names[n] = malloc(ln + lw + 2)) != NULL) {
			memcpy(names[n], de->d_name, ln + 1);
			if (kind < 0)
				memcpy(names[n] + ln + 1, why, lw + 1);
			else
				names[n][ln + 1] = 0;
		}
		if (!names[n]) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(dp);
	if (r < 0) {
		while (n)
			free(names[--n]);
		free(names);
		return r;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	*ret = names;
	*ret_n = n;
	return 0;
}

/* Parse DIR/metadata; on failure the message is in err. */
static int load_metadata(int dfd, struct rd_meta **ret, char *err, size_t errlen)
{
	uint8_t *data = NULL;
	size_t len = 0, tlen;
	char *text;
	int r = slurp(dfd, "metadata", 2 * (uint64_t)RD_META_MAX, &data, &len);
	if (r < 0) {
		snprintf(err, errlen, "%s", r == -EFBIG ? "too large to be TSDL metadata" : strerror(-r));
		return r;
	}
	r = rd_meta_text(data, len, &text, &tlen, err, errlen);
	free(data);
	if (r < 0)
		return r;
	r = rd_meta_parse(text, tlen, ret, err, errlen);
	free(text);
	return r;
}

static void summary(const struct rd_check_totals *t)
{
	printf(PFX "%llu streams, %llu packets, %llu events, %llu lost, %llu problems\n",
	       (unsigned long long)t->streams, (unsigned long long)t->packets,
	       (unsigned long long)t->events, (unsigned long long)t->lost,
	       (unsigned long long)t->problems);
}

static int check_dir(const char *dir, struct out *o)
{
	struct rd_check_totals tot = { 0 };
	struct rd_meta *m = NULL;
	struct rd_check *c = NULL;
	char **names = NULL;
	size_t n = 0;
	char err[512];
	int r, status = 2;

	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, PFX "cannot open trace '%s': %s\n", dir, strerror(errno));
		return 2;
	}
	struct stat st;
	if (fstatat(dfd, "metadata", &st, 0) < 0) {
		if (errno == ENOENT)
			fprintf(stderr, PFX "'%s' is not a CTF trace: it has no 'metadata' file\n", dir);
		else
			fprintf(stderr, PFX "cannot open '%s/metadata': %s\n", dir, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, PFX "'%s' is not a CTF trace: its 'metadata' is not a regular file\n", dir);
		goto out;
	}
	if ((r = list_streams(dfd, &names, &n)) < 0) {
		fprintf(stderr, PFX "cannot list trace '%s': %s\n", dir, strerror(-r));
		goto out;
	}
	status = 1;
	if ((r = load_metadata(dfd, &m, err, sizeof(err))) < 0) {
		/* A damaged trace, not a missing one: a problem like the others. */
		struct rd_check_problem p = { .file = "metadata", .what = err };
		on_problem(o, &p);
		tot.problems = 1;
		goto done;
	}
	if (rd_check_new(m, on_problem, o, &c) < 0) {
		fprintf(stderr, PFX "%s: out of memory\n", dir);
		status = 2;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const char *why = names[i] + strlen(names[i]) + 1;
		if (*why) {
			/* Never opened: a FIFO would block, a link loop cannot be. */
			snprintf(err, sizeof(err), "not a stream file: %s", why);
			rd_check_report(c, names[i], err);
			continue;
		}
		int fd = openat(dfd, names[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			snprintf(err, sizeof(err), "cannot open: %s",
				 fd < 0 ? strerror(errno) : "not a regular file any more");
			rd_check_report(c, names[i], err);
		} else if (rd_check_file(c, names[i], fd, NULL, (uint64_t)st.st_size) < 0) {
			/* Out of memory, already reported: the next file would fare no better. */
			close(fd);
			break;
		}
		if (fd >= 0)
			close(fd);
	}
	rd_check_finish(c);
	rd_check_get_totals(c, &tot);
done:
	if (o->skipped)
		printf("... and %llu more problems\n", (unsigned long long)o->skipped);
	summary(&tot);
	if (tot.problems == 0)
		status = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, PFX "cannot write the report of '%s' to the standard output\n", dir);
		status = 2;
	}
out:
	rd_check_free(c);
	rd_meta_free(m);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	close(dfd);
	return status;
}

int cmd_check(int argc, char **argv)
{
	struct out o = { .max = CHECK_MAX_PRINTED };
	const char *dir = NULL;
	int opts = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (opts && !strcmp(a, "--")) {
			opts = 0;
		} else if (opts && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
			usage(stdout);
			return 0;
		} else if (opts && (!strcmp(a, "-n") || !strcmp(a, "--max-problems"))) {
			char *end;
			if (i + 1 >= argc || argv[i + 1][0] < '0' || argv[i + 1][0] > '9') {
				fprintf(stderr, PFX "%s needs a number\n", a);
				return 2;
			}
			errno = 0;
			unsigned long long v = strtoull(argv[++i], &end, 10);
			if (errno || *end) {
				fprintf(stderr, PFX "bad number '%s' for %s\n", argv[i], a);
				return 2;
			}
			o.max = v;
		} else if (opts && a[0] == '-' && a[1]) {
			fprintf(stderr, PFX "unknown option '%s' (try 'ringtrace check --help')\n", a);
			return 2;
		} else if (!dir) {
			dir = a;
		} else {
			fprintf(stderr, PFX "one trace directory only: '%s' and '%s' (try 'ringtrace check --help')\n", dir, a);
			return 2;
		}
	}
	if (!dir) {
		usage(stderr);
		return 2;
	}
	/* "DIR/" would print as "DIR//FILE". */
	size_t len = strlen(dir);
	char *shown = strdup(dir);
	if (!shown) {
		fprintf(stderr, PFX "out of memory\n");
		return 2;
	}
	while (len > 1 && shown[len - 1] == '/')
		shown[--len] = '\0';
	o.dir = shown;
	int status = check_dir(dir, &o);
	free(shown);
	return status;
}
