/*
 * cmd_stackmap.c - `ringtrace stackmap`: print the stacks of a trace
 * (TRACE/stacks/, stack_files.h), of a running program (stack_live.h), or
 * of a file in the binary export layout (either byte order); and
 * `ringtrace stackmap --reset PID` to empty a program's map.
 *
 * The three sources end in one set of stacks, printed one way: text (the
 * default), JSON, the top N by reference count, folded stacks for
 * flame-graph tools, the counters, or the binary layout again in this
 * machine's byte order. Traces and programs carry their loaded objects,
 * so their frames are symbolised (libdw, src/sym/symbolize.h) unless
 * --no-symbols; a binary file has no objects and prints addresses.
 *
 * Every input is untrusted: the readers (stack_files.c, stackmap_export.c)
 * validate whole files before anything is printed, and a damaged file is
 * a one-line error and exit 1, never partial output.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/stack_live.h"
#include "util/outdir.h"
#include "stackmap/stack_files.h"
#include "stackmap/stackmap.h"
#include "sym/symbolize.h"

#define PFX "ringtrace stackmap: "
#define MAX_FILE (1u << 30)

static void usage(FILE *f)
{
	fprintf(f, "usage: ringtrace stackmap TRACE_DIR|PID|NAME [OPTIONS]\n"
		   "       ringtrace stackmap --from-bin FILE [OPTIONS]\n"
		   "       ringtrace stackmap --reset PID|NAME\n"
		   "\n"
		   "  TRACE_DIR        a trace recorded with stacks (its stacks/ directory)\n"
		   "  PID|NAME         a running traced program (a name must match one process)\n"
		   "  --from-bin FILE  a stack map in the binary layout (magic 0x464D5342, version 2),\n"
		   "                   written on a machine of either byte order; printed as addresses\n"
		   "  --reset          empty the program's stack map (tracing must be off)\n"
		   "\n"
		   "Output (one of):\n"
		   "  (no option)      text: 'stack_id N [ref R, depth D]', one line per frame\n"
		   "  --json           JSON\n"
		   "  --stat           the map's counters (entries, table size, successes, drops);\n"
		   "                   for --from-bin: number of stacks and references\n"
		   "  --folded         'frame;frame;frame count' lines, outermost frame first,\n"
		   "                   count = references, identical lines merged\n"
		   "  --bin OUT        write the stacks in the binary layout, this machine's byte order\n"
		   "  --top N          only the N most referenced stacks (text, --json, --folded, --bin)\n"
		   "  --allow-shared-dir  write OUT even if its directory is another user's, or\n"
		   "                   others may write into it (see docs/security.md); OUT is\n"
		   "                   written under a temporary name and renamed into place\n"
		   "\n"
		   "Symbols (traces and programs):\n"
		   "  --debug-dir D    also look for binaries and debug files by build id under D\n"
		   "  --no-symbols     print addresses\n");
}

struct opts {
	const char *from;
	const char *bin_out;
	const char *target;
	const char *debug_dir;
	int json, stat, folded, reset, no_symbols;
	unsigned out_flags;          /* OUTDIR_ALLOW_SHARED: --allow-shared-dir */
	long top;
};

/* 0, -1 for --help, or the exit status of a usage error (printed). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			return -1;
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
		} else if (!strcmp(a, "--stat")) {
			o->stat = 1;
		} else if (!strcmp(a, "--folded")) {
			o->folded = 1;
		} else if (!strcmp(a, "--reset")) {
			o->reset = 1;
		} else if (!strcmp(a, "--no-symbols")) {
			o->no_symbols = 1;
		} else if (!strcmp(a, OUTDIR_ALLOW_OPT)) {
			o->out_flags |= OUTDIR_ALLOW_SHARED;
		} else if (!strcmp(a, "--from-bin") || !strcmp(a, "--bin") || !strcmp(a, "--top") ||
			   !strcmp(a, "--debug-dir")) {
			if (!v) {
				fprintf(stderr, PFX "option '%s' needs a value\n", a);
				return 2;
			}
			i++;
			if (!strcmp(a, "--from-bin")) {
				o->from = v;
			} else if (!strcmp(a, "--bin")) {
				o->bin_out = v;
			} else if (!strcmp(a, "--debug-dir")) {
				o->debug_dir = v;
			} else {
				char *end;
				o->top = strtol(v, &end, 10);
				if (*end || end == v || o->top < 1 || o->top > 1000000) {
					fprintf(stderr, PFX "bad --top '%s' (a number from 1)\n", v);
					return 2;
				}
			}
		} else if (a[0] == '-') {
			fprintf(stderr, PFX "unknown option '%s' (try --help)\n", a);
			return 2;
		} else if (!o->target) {
			o->target = a;
		} else {
			fprintf(stderr, PFX "unexpected argument '%s' (try --help)\n", a);
			return 2;
		}
	}
	if (o->json + o->stat + o->folded + (o->bin_out != NULL) > 1) {
		fprintf(stderr, PFX "--json, --stat, --folded and --bin exclude each other\n");
		return 2;
	}
	if (o->reset) {
		if (!o->target || o->from || o->json || o->stat || o->folded || o->bin_out ||
		    o->top > 0 || o->debug_dir || o->no_symbols) {
			fprintf(stderr, PFX "--reset takes a program and no other option\n");
			return 2;
		}
		return 0;
	}
	if (o->from && o->target) {
		fprintf(stderr, PFX "--from-bin FILE and '%s' exclude each other\n", o->target);
		return 2;
	}
	if (!o->from && !o->target) {
		usage(stderr);
		return 2;
	}
	return 0;
}

/* ---- sources ---------------------------------------------------------------- */

static int read_file(const char *path, char **ret, size_t *ret_len)
{
	/* O_NONBLOCK: a FIFO given as input is refused below, never waited on. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	if (!f) {
		fprintf(stderr, PFX "cannot open '%s': %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct stat st;
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_FILE) {
		fprintf(stderr, PFX "'%s' is not a regular file of at most 1 GiB\n", path);
		fclose(f);
		return -1;
	}
	size_t len = (size_t)st.st_size;
	char *buf = malloc(len ? len : 1);
	if (!buf || fread(buf, 1, len, f) != len) {
		fprintf(stderr, PFX "cannot read '%s': %s\n", path, buf ? (ferror(f) ? strerror(errno) : "shorter than its size") : strerror(ENOMEM));
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* A binary export as a stack_files without objects or counters. */
static int load_bin_file(const char *path, struct stack_files *ret, struct stackmap_bin_info *info)
{
	char *data;
	size_t len;
	if (read_file(path, &data, &len) < 0)
		return -1;
	int r = stackmap_load_bin(data, len, &ret->stacks, &ret->nstacks, info);
	free(data);
	if (r < 0) {
		fprintf(stderr, PFX "'%s' is not a valid stack map file: %s\n", path,
			r == -EPROTO ? "unknown version" : r == -ENOMEM ? "out of memory" : "damaged or truncated");
		return -1;
	}
	return 0;
}

static int load_trace(const char *dir, struct stack_files *ret)
{
	int r = stack_files_read(dir, ret);
	if (r == 0)
		return 0;
	if (r == -ENOENT)
		fprintf(stderr, PFX "'%s' has no stacks (record with --stacks, or events declared with a stack)\n",
			dir);
	else if (r == -EBADMSG)
		fprintf(stderr, PFX "'%s': damaged stack files in %s/stacks (stackmap.bin, stackmap.stat or maps)\n",
			dir, dir);
	else
		fprintf(stderr, PFX "cannot read the stacks of '%s': %s\n", dir, strerror(-r));
	return -1;
}

/*
 * A symboliser over the trace's or program's objects, or NULL in *ret
 * when there is nothing to resolve with. Objects that cannot be used are
 * skipped: an object without an executable range (nothing to resolve),
 * one that overlaps another (a maps list appended after every dlopen
 * names an object again), one whose file is missing (kept by
 * sym_add_mapping: object+offset without a symbol).
 */
static int make_symbolizer(const struct stack_files *f, const char *debug_dir, struct sym_ctx **ret)
{
	*ret = NULL;
	if (!f->nmaps)
		return 0;
	char abs_dir[PATH_MAX];
	if (debug_dir) {
		/* sym_ctx_new wants it absolute; a typo should not silently
		 * give "no symbols". */
		struct stat st;
		const char *why = NULL;
		if (!realpath(debug_dir, abs_dir) || stat(abs_dir, &st) < 0)
			why = strerror(errno);
		else if (!S_ISDIR(st.st_mode))
			why = strerror(ENOTDIR);
		if (why) {
			fprintf(stderr, PFX "debug directory '%s': %s\n", debug_dir, why);
			return -1;
		}
		debug_dir = abs_dir;
	}
	struct sym_ctx *ctx;
	int r = sym_ctx_new(debug_dir, &ctx);
	if (r < 0) {
		fprintf(stderr, PFX "cannot start the symboliser: %s\n", strerror(-r));
		return -1;
	}
	for (size_t i = 0; i < f->nmaps; i++) {
		const struct rt_map *m = &f->maps[i];
		if (m->start >= m->end)
			continue;
		r = sym_add_mapping(ctx, m->path, m->build_id[0] ? m->build_id : NULL, m->bias, m->start,
				    m->end);
		if (r == -ENOMEM) {
			fprintf(stderr, PFX "cannot load the objects: %s\n", strerror(ENOMEM));
			sym_ctx_free(ctx);
			return -1;
		}
	}
	*ret = ctx;
	return 0;
}

/* ---- folded stacks ------------------------------------------------------------ */

struct sbuf {
	char *p;
	size_t len, cap;
	int failed;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->cap - b->len <= n) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap - b->len <= n)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->failed = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* A name as one folded frame: ';' separates frames and the last ' ' the
 * count, and a line break would end the line, so none of them may appear
 * (C++ names hold spaces: "foo(int, char)"). */
static void sb_add_name(struct sbuf *b, const char *s)
{
	size_t start = b->len;
	sb_add(b, s, strlen(s));
	if (b->failed)
		return;
	for (char *c = b->p + start; *c; c++)
		if (*c == ';' || *c == ' ' || (unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '_';
}

static void sb_add_hex(struct sbuf *b, const char *prefix, uint64_t v)
{
	char tmp[40];
	int n = snprintf(tmp, sizeof(tmp), "%s0x%" PRIx64, prefix, v);
	sb_add(b, tmp, (size_t)n);
}

/* The function (no offset: flame graphs merge by name), else the object
 * and the offset in it, else the address. */
static void fold_frame(struct sbuf *b, struct sym_ctx *ctx, uint64_t addr)
{
	struct sym_result r;
	if (ctx && sym_resolve(ctx, addr, &r) == 0) {
		if (r.has_function && r.function[0]) {
			sb_add_name(b, r.function);
			return;
		}
		const char *base = strrchr(r.object, '/');
		base = base ? base + 1 : r.object;
		if (*base) {
			sb_add_name(b, base);
			sb_add_hex(b, "+", r.object_offset);
			return;
		}
	}
	sb_add_hex(b, "", addr);
}

struct fold_line {
	char *text;
	uint64_t count;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
	return h;
}

/*
 * One line per distinct folded stack, in the order of the stacks' first
 * appearance, counts summed (saturating). Two stacks fold to the same
 * line when they differ only in offsets inside the same functions, or by
 * the duplicate ids two racing inserts can create.
 */
static int print_folded(FILE *out, const struct stackmap_stack *s, size_t n, struct sym_ctx *ctx)
{
	size_t nslots = 16;
	while (nslots < 2 * n)
		nslots *= 2;
	size_t *slots = calloc(nslots, sizeof(*slots)); /* index + 1 into lines; 0 free */
	struct fold_line *lines = calloc(n ? n : 1, sizeof(*lines));
	struct sbuf b = { 0 };
	size_t nlines = 0;
	int r = -ENOMEM;
	if (!slots || !lines)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (s[i].ref == 0 || s[i].depth == 0)
			continue;
		b.len = 0;
		/* ips[0] is the innermost frame; flame graphs read root first. */
		for (uint32_t k = s[i].depth; k-- > 0;) {
			fold_frame(&b, ctx, s[i].ips[k]);
			if (k)
				sb_add(&b, ";", 1);
		}
		if (b.failed)
			goto out;
		size_t h = (size_t)str_hash(b.p) & (nslots - 1);
		while (slots[h] && strcmp(lines[slots[h] - 1].text, b.p))
			h = (h + 1) & (nslots - 1);
		if (slots[h]) {
			struct fold_line *l = &lines[slots[h] - 1];
			l->count = l->count > UINT64_MAX - s[i].ref ? UINT64_MAX : l->count + s[i].ref;
			continue;
		}
		lines[nlines].text = strdup(b.p);
		if (!lines[nlines].text)
			goto out;
		lines[nlines].count = s[i].ref;
		slots[h] = ++nlines;
	}
	for (size_t i = 0; i < nlines; i++)
		fprintf(out, "%s %" PRIu64 "\n", lines[i].text, lines[i].count);
	r = ferror(out) ? -EIO : 0;
out:
	for (size_t i = 0; lines && i < nlines; i++)
		free(lines[i].text);
	free(lines);
	free(slots);
	free(b.p);
	return r;
}

/* ---- output ------------------------------------------------------------------- */

static int print_stat(FILE *out, const struct stack_files *f, int from_bin, const struct stackmap_bin_info *info)
{
	if (f->has_stat)
		return stackmap_print_stat(out, &f->stat);
	uint64_t refs = 0;
	for (size_t i = 0; i < f->nstacks; i++)
		refs = refs > UINT64_MAX - f->stacks[i].ref ? UINT64_MAX : refs + f->stacks[i].ref;
	if (from_bin)
		fprintf(out, "entries: %zu\nreferences: %" PRIu64 "\nbyte_order: %s\n", f->nstacks, refs,
		       info->swapped ? "swapped (written on a machine of the other byte order)" : "native");
	else
		fprintf(out, "stacks: %zu\nreferences: %" PRIu64 "\ncounters: unknown (no stackmap.stat)\n",
		       f->nstacks, refs);
	return ferror(out) ? -EIO : 0;
}

/* Under a temporary name, renamed over path at the end (util/outdir.h). */
static int write_bin(const char *path, const struct stack_files *f, unsigned out_flags)
{
	struct outfile of;
	char why[512];
	FILE *out = outfile_fopen(&of, path, out_flags, why, sizeof(why));
	if (!out) {
		fprintf(stderr, PFX "cannot create '%s': %s\n", path, why);
		return -1;
	}
	int r = stackmap_print_bin(out, f->stacks, f->nstacks);
	if (r < 0)
		outfile_abort(&of);
	else
		r = outfile_commit(&of, 0);
	if (r < 0) {
		fprintf(stderr, PFX "cannot write '%s': %s\n", path, strerror(-r));
		return -1;
	}
	return 0;
}

/* The one printing path of every source. Returns the exit status. */
static int output(const struct opts *o, struct stack_files *f, int from_bin,
		  const struct stackmap_bin_info *info)
{
	if (o->top > 0) {
		stackmap_sort_by_ref(f->stacks, f->nstacks);
		if ((size_t)o->top < f->nstacks)
			f->nstacks = (size_t)o->top;
	}
	struct sym_ctx *ctx = NULL;
	int need_sym = !o->stat && !o->bin_out && !o->no_symbols && !from_bin;
	if (need_sym && make_symbolizer(f, o->debug_dir, &ctx) < 0)
		return 1;
	stackmap_sym_fn sym = ctx ? sym_stackmap_fn : NULL;

	int r, status = 0;
	if (o->stat) {
		r = print_stat(stdout, f, from_bin, info);
	} else if (o->folded) {
		r = print_folded(stdout, f->stacks, f->nstacks, ctx);
		if (r == -ENOMEM) {
			fprintf(stderr, PFX "out of memory\n");
			status = 1;
		}
	} else if (o->json) {
		r = stackmap_print_json(stdout, f->stacks, f->nstacks, sym, ctx);
	} else if (o->bin_out) {
		r = 0;
		if (write_bin(o->bin_out, f, o->out_flags) < 0)
			status = 1;
	} else {
		r = stackmap_print_text(stdout, f->stacks, f->nstacks, sym, ctx);
	}
	if (fflush(stdout) != 0 || ferror(stdout) || r < 0) {
		if (!status)
			fprintf(stderr, PFX "cannot write the stacks of '%s' to the standard output\n", o->target ? o->target : o->from);
		status = 1;
	}
	sym_ctx_free(ctx);
	return status;
}

int cmd_stackmap(int argc, char **argv)
{
	struct opts o = { .top = -1 };
	int status = parse_args(argc, argv, &o);
	if (status < 0) {
		usage(stdout);
		return 0;
	}
	if (status)
		return status;
	if (o.reset)
		return stack_live_reset(o.target) < 0 ? 1 : 0;

	struct stack_files f = { 0 };
	struct stackmap_bin_info info = { 0 };
	struct stat st;
	int from_bin = o.from != NULL;
	int r;
	int e = 0;
	if (!from_bin && stat(o.target, &st) < 0)
		e = errno;
	if (from_bin)
		r = load_bin_file(o.from, &f, &info);
	else if (!e && S_ISDIR(st.st_mode))
		r = load_trace(o.target, &f);
	else if (strchr(o.target, '/')) {
		/* A path: no program's name has a slash (a file named like
		 * the program, in the current directory, is not in the way). */
		fprintf(stderr, PFX "cannot open trace '%s': %s\n", o.target, e ? strerror(e) : strerror(ENOTDIR));
		return 1;
	} else
		r = stack_live_load(o.target, &f);
	if (r < 0)
		return 1;
	status = output(&o, &f, from_bin, &info);
	stack_files_free(&f);
	return status;
}

/* The stack_map, stack_map_stat and stack_map_bin files of `ringtrace
 * mount` (src/fs/): what `stackmap PID`, `--stat` and `--bin` write. */
int cmd_stackmap_write(FILE *out, struct stack_files *f, int what)
{
	if (what == 1)
		return print_stat(out, f, 0, NULL);
	if (what == 2)
		return stackmap_print_bin(out, f->stacks, f->nstacks);
	struct sym_ctx *ctx = NULL;
	if (make_symbolizer(f, NULL, &ctx) < 0)
		return -EIO;
	int r = stackmap_print_text(out, f->stacks, f->nstacks, ctx ? sym_stackmap_fn : NULL, ctx);
	sym_ctx_free(ctx);
	return r;
}
