/*
 * test_sym.c - loaded-object snapshots (src/sym/maps.c) and offline
 * symbolisation (src/sym/symbolize.c).
 *
 * The fixtures in $(O)/tests/sym (tests/sym/, built by mk/stack.mk) print
 * their own mappings (through rt_maps_snapshot), the addresses of their
 * functions and the return addresses and source lines of calls they make;
 * the test symbolises those addresses and compares. Variants: built with
 * -g; without debug information (names from the symbol table, no lines);
 * stripped, with its debug file found by build id under the context's
 * debug directory; stripped with a .gnu_debuglink file (CRC checked); the
 * same files "moved to another machine" (found by build id only); C++
 * (demangled names). Then: addresses that no mapping holds, files with the
 * wrong build id, corrupt and hostile ELF files (truncated, bytes flipped,
 * a FIFO, a directory) which must give "not found" and never a crash, this
 * process's own live snapshot against the files on disk, and the stack
 * map's text export with sym_stackmap_fn.
 */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <libelf.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "stackmap/stackmap.h"
#include "sym/maps.h"
#include "sym/symbolize.h"

#define FX_MAX 32

struct fx_map {
	uint64_t bias, start, end;
	char bid[2 * RT_MAPS_BUILD_ID_MAX + 1];
	unsigned flags;
	char path[PATH_MAX];
};

struct fx_named {
	uint64_t addr;
	int line;
	char name[256];
};

struct fx_out {
	struct fx_map maps[FX_MAX];
	int nmaps;
	struct fx_named funcs[FX_MAX];
	int nfuncs;
	struct fx_named calls[FX_MAX];
	int ncalls;
};

static char fxdir[PATH_MAX];        /* $(O)/tests/sym */

static int setup(void **state)
{
	(void)state;
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return -1;
	self[len] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	snprintf(fxdir, sizeof(fxdir), "%.*s/sym", (int)(sizeof(fxdir) - 8), self);
	elf_version(EV_CURRENT);
	return 0;
}

/* snprintf that fails the test instead of truncating. */
__attribute__((format(printf, 3, 4))) static void pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	assert_true(r >= 0 && (size_t)r < size);
}

static void fx_path(char *buf, size_t size, const char *name)
{
	int r = snprintf(buf, size, "%s/%s", fxdir, name);
	assert_true(r > 0 && (size_t)r < size);
}

/* Run a fixture and parse what it prints (tests/sym/fx.c says the format). */
static void run_fixture(const char *name, struct fx_out *out)
{
	char path[PATH_MAX], line[PATH_MAX + 256];
	fx_path(path, sizeof(path), name);
	memset(out, 0, sizeof(*out));
	FILE *p = popen(path, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		unsigned long long a, b, c;
		int pos = 0, ln;
		if (!strncmp(line, "map ", 4) && out->nmaps < FX_MAX) {
			struct fx_map *m = &out->maps[out->nmaps];
			if (sscanf(line, "map %llx %llx %llx %128s %u %n", &a, &b, &c, m->bid, &m->flags, &pos) == 5 &&
			    pos > 0) {
				m->bias = a;
				m->start = b;
				m->end = c;
				if (!strcmp(m->bid, "-"))
					m->bid[0] = '\0';
				snprintf(m->path, sizeof(m->path), "%s", line + pos);
				out->nmaps++;
			}
		} else if (!strncmp(line, "func ", 5) && out->nfuncs < FX_MAX) {
			struct fx_named *f = &out->funcs[out->nfuncs];
			if (sscanf(line, "func %llx %n", &a, &pos) == 1 && pos > 0) {
				f->addr = a;
				snprintf(f->name, sizeof(f->name), "%s", line + pos);
				out->nfuncs++;
			}
		} else if (!strncmp(line, "call ", 5) && out->ncalls < FX_MAX) {
			struct fx_named *f = &out->calls[out->ncalls];
			if (sscanf(line, "call %llx %d %n", &a, &ln, &pos) == 2 && pos > 0) {
				f->addr = a;
				f->line = ln;
				snprintf(f->name, sizeof(f->name), "%s", line + pos);
				out->ncalls++;
			}
		}
	}
	assert_int_equal(pclose(p), 0);
	assert_true(out->nmaps >= 3);
	assert_true(out->maps[0].flags & RT_MAP_MAIN);
	assert_string_equal(out->maps[0].path, path);
	assert_true(out->ncalls >= 2);
}

/* A context with every mapping of the fixture; the program's mapping gets
 * `main_path` instead of its real path when not NULL. Returns what
 * sym_add_mapping said for the program. */
static int load(struct sym_ctx **ret, const struct fx_out *o, const char *debug_dir, const char *main_path)
{
	assert_int_equal(sym_ctx_new(debug_dir, ret), 0);
	int main_r = 0;
	for (int i = 0; i < o->nmaps; i++) {
		const struct fx_map *m = &o->maps[i];
		if (m->flags & RT_MAP_NO_EXEC)
			continue;
		const char *p = i == 0 && main_path ? main_path : m->path;
		int r = sym_add_mapping(*ret, p, m->bid, m->bias, m->start, m->end);
		if (i == 0)
			main_r = r;
		else if (m->flags & RT_MAP_VDSO)
			assert_true(r == 0 || r == -ENOENT);
		else
			assert_int_equal(r, 0);      /* libc, ld.so: on disk, same build */
	}
	return main_r;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

/* Names and offsets of the fixture's functions; lines of its calls if
 * want_lines, none otherwise. */
static void check_fixture(struct sym_ctx *ctx, const struct fx_out *o, int want_lines, const char *src,
			  const char *object)
{
	if (!object)
		object = o->maps[0].path;
	struct sym_result r;
	assert_true(o->nfuncs >= 4);
	for (int i = 0; i < o->nfuncs; i++) {
		const struct fx_named *f = &o->funcs[i];
		for (uint64_t d = 0; d < 3; d++) {
			assert_int_equal(sym_resolve(ctx, f->addr + d, &r), 0);
			if (!r.has_function || strcmp(r.function, f->name) != 0)
				fail_msg("0x%llx: '%s', expected '%s'", (unsigned long long)(f->addr + d),
					 r.function, f->name);
			assert_true(r.offset == d);
			assert_true(r.size > d);
			assert_string_equal(r.object, object);
			assert_true(r.object_offset == f->addr + d - o->maps[0].bias);
		}
		/* One past the end is not this function. */
		assert_int_equal(sym_resolve(ctx, f->addr + r.size, &r), 0);
		assert_false(r.has_function && !strcmp(r.function, f->name) && r.offset >= r.size);
		char buf[SYM_NAME_MAX + 64], want[SYM_NAME_MAX + 64];
		assert_int_equal(sym_resolve(ctx, f->addr + 2, &r), 0);
		snprintf(want, sizeof(want), "%s+0x2/0x%llx", f->name, (unsigned long long)r.size);
		assert_int_equal(sym_format(ctx, f->addr + 2, buf, sizeof(buf)), 1);
		assert_string_equal(buf, want);
	}
	for (int i = 0; i < o->ncalls; i++) {
		const struct fx_named *c = &o->calls[i];
		/* The call instruction, not the one after it. */
		assert_int_equal(sym_resolve(ctx, c->addr - 1, &r), 0);
		assert_true(r.has_function);
		assert_string_equal(r.function, c->name);
		if (want_lines) {
			if (!r.file || r.line != c->line)
				fail_msg("call in %s: %s:%d, expected line %d", c->name, r.file ? r.file : "?",
					 r.line, c->line);
			assert_true(ends_with(r.file, src));
		} else {
			assert_null(r.file);
			assert_int_equal(r.line, 0);
		}
	}
}

static void debug_dir(char *buf, size_t size)
{
	fx_path(buf, size, "debug");
}

static void test_with_debug_info(void **state)
{
	(void)state;
	struct fx_out o;
	struct sym_ctx *ctx;
	run_fixture("fx_g", &o);
	assert_int_equal(load(&ctx, &o, NULL, NULL), 0);
	check_fixture(ctx, &o, 1, "tests/sym/fx.c", NULL);
	sym_ctx_free(ctx);
}

static void test_symbol_table_only(void **state)
{
	(void)state;
	struct fx_out o;
	struct sym_ctx *ctx;
	run_fixture("fx_nodebug", &o);
	assert_int_equal(load(&ctx, &o, NULL, NULL), 0);
	check_fixture(ctx, &o, 0, NULL, NULL);
	sym_ctx_free(ctx);
}

static void test_stripped_build_id(void **state)
{
	(void)state;
	struct fx_out o;
	struct sym_ctx *ctx;
	char dir[PATH_MAX];
	debug_dir(dir, sizeof(dir));
	run_fixture("fx_stripped", &o);
	assert_true(o.maps[0].bid[0] != '\0');
	assert_int_equal(load(&ctx, &o, dir, NULL), 0);
	check_fixture(ctx, &o, 1, "tests/sym/fx.c", NULL);
	sym_ctx_free(ctx);

	/* Without the debug directory: the binary alone knows none of them. */
	assert_int_equal(load(&ctx, &o, NULL, NULL), 0);
	struct sym_result r;
	for (int i = 0; i < o.nfuncs; i++) {
		assert_int_equal(sym_resolve(ctx, o.funcs[i].addr, &r), 0);
		assert_false(r.has_function && !strcmp(r.function, "fx_alpha"));
		assert_null(r.file);
	}
	char buf[64];
	assert_int_equal(sym_format(ctx, o.calls[0].addr, buf, sizeof(buf)), 0);
	sym_ctx_free(ctx);
}

static void test_debuglink(void **state)
{
	(void)state;
	struct fx_out o;
	struct sym_ctx *ctx;
	run_fixture("fx_linked", &o);
	assert_string_equal(o.maps[0].bid, "");      /* built without one */
	assert_int_equal(load(&ctx, &o, NULL, NULL), 0);
	check_fixture(ctx, &o, 1, "tests/sym/fx.c", NULL);
	sym_ctx_free(ctx);
}

static int copy_file(const char *from, const char *to)
{
	FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
	int ok = a && b;
	char buf[65536];
	size_t n;
	while (ok && (n = fread(buf, 1, sizeof(buf), a)) > 0)
		ok = fwrite(buf, 1, n, b) == n;
	if (a)
		fclose(a);
	if (b && fclose(b) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

static void rm_tree(const char *dir)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* A trace read on "another machine": the binary is not at its recorded
 * path; the binary and its debug file are only under a debug directory,
 * by build id. */
static void test_moved(void **state)
{
	(void)state;
	struct fx_out o;
	struct sym_ctx *ctx;
	run_fixture("fx_stripped", &o);
	const char *id = o.maps[0].bid;
	char tmp[] = "/tmp/rt-sym-XXXXXX", d[PATH_MAX], f[PATH_MAX + 64], from[PATH_MAX];
	assert_non_null(mkdtemp(tmp));
	pathf(d, sizeof(d), "%s/.build-id", tmp);
	assert_int_equal(mkdir(d, 0700), 0);
	pathf(d, sizeof(d), "%s/.build-id/%.2s", tmp, id);
	assert_int_equal(mkdir(d, 0700), 0);

	/* Only the debug file: it serves as the binary too. */
	char dbg[PATH_MAX];
	debug_dir(dbg, sizeof(dbg));
	pathf(from, sizeof(from), "%s/.build-id/%.2s/%s.debug", dbg, id, id + 2);
	pathf(f, sizeof(f), "%s/%s.debug", d, id + 2);
	assert_int_equal(copy_file(from, f), 0);
	assert_int_equal(load(&ctx, &o, tmp, "/nonexistent/fx_stripped"), 0);
	check_fixture(ctx, &o, 1, "tests/sym/fx.c", "/nonexistent/fx_stripped");
	struct sym_result r;
	assert_int_equal(sym_resolve(ctx, o.funcs[0].addr, &r), 0);
	assert_string_equal(r.object, "/nonexistent/fx_stripped");
	sym_ctx_free(ctx);

	/* Binary and debug file. */
	fx_path(from, sizeof(from), "fx_stripped");
	pathf(f, sizeof(f), "%s/%s", d, id + 2);
	assert_int_equal(copy_file(from, f), 0);
	assert_int_equal(load(&ctx, &o, tmp, "/nonexistent/fx_stripped"), 0);
	check_fixture(ctx, &o, 1, "tests/sym/fx.c", "/nonexistent/fx_stripped");
	assert_int_equal(sym_resolve(ctx, o.funcs[0].addr, &r), 0);
	assert_string_equal(r.object_file, f);
	sym_ctx_free(ctx);

	/* Neither: the mapping stays, without symbols. */
	rm_tree(tmp);
	assert_int_equal(load(&ctx, &o, tmp, "/nonexistent/fx_stripped"), -ENOENT);
	assert_int_equal(sym_resolve(ctx, o.funcs[0].addr, &r), 0);
	assert_false(r.has_function);
	assert_null(r.object_file);
	assert_true(r.object_offset == o.funcs[0].addr - o.maps[0].bias);
	sym_ctx_free(ctx);
}

/* g++ writes "[static ]int ns::Klass::method(int)"; the name is what
 * follows the return type. */
static const char *pretty_to_name(const char *pretty)
{
	if (!strncmp(pretty, "static ", 7))
		pretty += 7;
	const char *sp = strchr(pretty, ' ');
	return sp ? sp + 1 : pretty;
}

static void test_cpp(void **state)
{
	(void)state;
	struct fx_out o;
	struct sym_ctx *ctx;
	run_fixture("fx_cpp", &o);
	assert_int_equal(load(&ctx, &o, NULL, NULL), 0);
	assert_int_equal(o.ncalls, 3);
	int seen_method = 0;
	for (int i = 0; i < o.ncalls; i++) {
		struct sym_result r;
		const char *want = pretty_to_name(o.calls[i].name);
		seen_method |= !strcmp(want, "ns::Klass::method(int)");
		assert_int_equal(sym_resolve(ctx, o.calls[i].addr - 1, &r), 0);
		assert_true(r.has_function);
		if (strcmp(r.function, want) != 0)
			fail_msg("demangled '%s', expected '%s'", r.function, want);
		assert_int_equal(r.line, o.calls[i].line);
		assert_true(ends_with(r.file, "tests/sym/fx_cpp.cpp"));
		char buf[SYM_NAME_MAX];
		assert_int_equal(sym_format(ctx, o.calls[i].addr - 1, buf, sizeof(buf)), 1);
		assert_true(!strncmp(buf, want, strlen(want)) && buf[strlen(want)] == '+');
	}
	assert_true(seen_method);
	sym_ctx_free(ctx);
}

static void test_not_found(void **state)
{
	(void)state;
	struct fx_out o, other;
	struct sym_ctx *ctx;
	struct sym_result r;
	char buf[64];
	run_fixture("fx_g", &o);
	run_fixture("fx_nodebug", &other);
	assert_int_equal(load(&ctx, &o, NULL, NULL), 0);
	/* Below, between and above the mappings. */
	uint64_t holes[] = { 0, 4096, o.maps[0].start - 1, o.maps[0].end, UINT64_MAX, 0x7ffffffff000ull };
	for (size_t i = 0; i < sizeof(holes) / sizeof(holes[0]); i++) {
		int in = 0;
		for (int k = 0; k < o.nmaps; k++)
			in |= holes[i] >= o.maps[k].start && holes[i] < o.maps[k].end;
		if (in)
			continue;
		assert_int_equal(sym_resolve(ctx, holes[i], &r), -ENOENT);
		assert_int_equal(sym_format(ctx, holes[i], buf, sizeof(buf)), 0);
		char want[32];
		snprintf(want, sizeof(want), "0x%llx", (unsigned long long)holes[i]);
		assert_string_equal(buf, want);
	}
	/* Overlap. */
	assert_int_equal(sym_add_mapping(ctx, "/x", NULL, 0, o.maps[0].start + 1, o.maps[0].start + 2), -EEXIST);
	/* Arguments. */
	assert_int_equal(sym_add_mapping(ctx, NULL, NULL, 0, 1, 2), -EINVAL);
	assert_int_equal(sym_add_mapping(ctx, "", NULL, 0, 1, 2), -EINVAL);
	assert_int_equal(sym_add_mapping(ctx, "/x", NULL, 0, 2, 2), -EINVAL);
	assert_int_equal(sym_add_mapping(ctx, "/x", "abc", 0, 1, 2), -EINVAL);
	assert_int_equal(sym_add_mapping(ctx, "/x", "zz", 0, 1, 2), -EINVAL);
	assert_int_equal(sym_add_mapping(NULL, "/x", NULL, 0, 1, 2), -EINVAL);
	assert_int_equal(sym_resolve(NULL, 1, &r), -EINVAL);
	assert_int_equal(sym_resolve(ctx, 1, NULL), -EINVAL);
	assert_int_equal(sym_format(ctx, 1, NULL, 4), -EINVAL);
	assert_int_equal(sym_format(ctx, 1, buf, 0), -EINVAL);
	/* Truncation keeps the NUL. */
	assert_int_equal(sym_format(ctx, o.funcs[0].addr, buf, 4), 1);
	assert_int_equal(strlen(buf), 3);
	sym_ctx_free(ctx);
	sym_ctx_free(NULL);
	assert_int_equal(sym_ctx_new("relative/dir", &ctx), -EINVAL);
	assert_int_equal(sym_ctx_new(NULL, NULL), -EINVAL);

	/* fx_g's file under fx_nodebug's build id: refused, kept without symbols. */
	assert_int_equal(sym_ctx_new(NULL, &ctx), 0);
	assert_int_equal(sym_add_mapping(ctx, o.maps[0].path, other.maps[0].bid, o.maps[0].bias,
					 o.maps[0].start, o.maps[0].end), -ENOENT);
	assert_int_equal(sym_resolve(ctx, o.funcs[0].addr, &r), 0);
	assert_false(r.has_function);
	assert_string_equal(r.object, o.maps[0].path);
	/* The vDSO has no file. */
	for (int k = 0; k < o.nmaps; k++)
		if (o.maps[k].flags & RT_MAP_VDSO)
			assert_int_equal(sym_add_mapping(ctx, "[vdso]", "", o.maps[k].bias, o.maps[k].start,
							 o.maps[k].end), -ENOENT);
	sym_ctx_free(ctx);
}

/* ---- hostile files ------------------------------------------------------- */

static unsigned char *read_all(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	assert_true(len > 0);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc((size_t)len);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*ret_len = (size_t)len;
	return b;
}

static void write_all(const char *path, const unsigned char *b, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Map the (damaged) file at path as the fixture's program, without a
 * build id (so that nothing stops libdw from reading it), and ask for
 * every address the fixture printed. Nothing is expected but survival. */
static void poke(const char *path, const struct fx_out *o)
{
	struct sym_ctx *ctx;
	struct sym_result r;
	char buf[SYM_NAME_MAX + 64];
	assert_int_equal(sym_ctx_new(NULL, &ctx), 0);
	int a = sym_add_mapping(ctx, path, NULL, o->maps[0].bias, o->maps[0].start, o->maps[0].end);
	assert_true(a == 0 || a == -ENOENT || a == -EBADMSG);
	for (int i = 0; i < o->nfuncs; i++) {
		assert_int_equal(sym_resolve(ctx, o->funcs[i].addr, &r), 0);
		sym_format(ctx, o->funcs[i].addr + 1, buf, sizeof(buf));
	}
	for (int i = 0; i < o->ncalls; i++)
		assert_int_equal(sym_resolve(ctx, o->calls[i].addr - 1, &r), 0);
	sym_ctx_free(ctx);
}

static void test_hostile_files(void **state)
{
	(void)state;
	struct fx_out o;
	run_fixture("fx_g", &o);
	size_t len;
	unsigned char *orig = read_all(o.maps[0].path, &len);
	unsigned char *b = malloc(len);
	assert_non_null(b);
	char tmp[] = "/tmp/rt-sym-XXXXXX", path[PATH_MAX];
	assert_non_null(mkdtemp(tmp));
	snprintf(path, sizeof(path), "%s/victim", tmp);

	/* Truncated anywhere. */
	size_t cuts[] = { 0, 1, 4, 16, 63, 64, 65, 200, 1000, 4096, len / 3, len / 2, len - 100, len - 1 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_all(path, orig, cuts[i] < len ? cuts[i] : len);
		poke(path, &o);
	}
	/* Bytes flipped: everywhere, then in the headers and the tables at
	 * the end (section headers, symbols, DWARF). Seeded: reproducible. */
	unsigned x = 2024;
	for (int round = 0; round < 300; round++) {
		memcpy(b, orig, len);
		int nflips = 1 + round % 40;
		for (int k = 0; k < nflips; k++) {
			x = x * 1103515245u + 12345u;
			size_t at = (x >> 4) % len;
			if (round % 3 == 1)
				at = at % 512;                   /* ELF and program headers */
			else if (round % 3 == 2)
				at = len - 1 - at % (len / 4 + 1);  /* the tail */
			x = x * 1103515245u + 12345u;
			b[at] ^= (unsigned char)(1u << ((x >> 16) & 7)) | (unsigned char)((round & 1) ? 0xff : 0);
		}
		write_all(path, b, len);
		poke(path, &o);
	}
	/* Not a regular file: a directory, a FIFO (must not block). */
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	poke(path, &o);
	rmdir(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	poke(path, &o);
	unlink(path);
	rm_tree(tmp);
	free(b);
	free(orig);
}

/* ---- this process --------------------------------------------------------- */

static int build_id_of(const char *path, char *hex, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	const void *bid = NULL;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &bid) : -1;
	int r = -1;
	if (n > 0 && (size_t)(2 * n + 1) <= size) {
		for (ssize_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)bid)[i]);
		r = 0;
	}
	if (e)
		elf_end(e);
	close(fd);
	return r;
}

__attribute__((noinline)) static int marker(void)
{
	__asm__ volatile("" ::: "memory");
	return 7;
}

static void test_self_snapshot(void **state)
{
	(void)state;
	static struct rt_map maps[256];
	size_t n = 0;
	struct rt_maps_gen gen;
	assert_int_equal(rt_maps_snapshot(maps, 256, &n, &gen), 0);
	assert_true(n >= 3 && n <= 256);
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(len > 0);
	self[len] = '\0';
	assert_true(maps[0].flags & RT_MAP_MAIN);
	assert_string_equal(maps[0].path, self);
	assert_true(rt_maps_find(maps, n, (uintptr_t)marker) == &maps[0]);
	/* A libc function no sanitizer intercepts. */
	uintptr_t in_libc = (uintptr_t)dlsym(RTLD_DEFAULT, "gnu_get_libc_version");
	const struct rt_map *libc = rt_maps_find(maps, n, in_libc);
	assert_non_null(libc);
	assert_non_null(strstr(libc->path, "libc.so"));
	int vdso = 0;
	for (size_t i = 0; i < n; i++) {
		const struct rt_map *m = &maps[i];
		if (m->flags & RT_MAP_VDSO) {
			vdso++;
			assert_string_equal(m->path, "[vdso]");
			continue;
		}
		assert_true(m->path[0] == '/');
		if (!(m->flags & RT_MAP_NO_EXEC))
			assert_true(m->start < m->end && m->start >= m->bias);
		/* What the loader mapped is what is on disk. */
		char hex[2 * RT_MAPS_BUILD_ID_MAX + 1];
		if (build_id_of(m->path, hex, sizeof(hex)) == 0) {
			assert_string_equal(m->build_id, hex);
			assert_int_equal(strlen(hex), 2 * m->build_id_len);
		}
	}
	assert_int_equal(vdso, 1);

	/* Too small an array: filled, counted, -ENOSPC. */
	size_t n1 = 0;
	assert_int_equal(rt_maps_snapshot(maps, 1, &n1, NULL), -ENOSPC);
	assert_int_equal(n1, n);
	assert_int_equal(rt_maps_snapshot(NULL, 0, &n1, NULL), -ENOSPC);
	assert_int_equal(rt_maps_snapshot(NULL, 1, &n1, NULL), -EINVAL);
	assert_int_equal(rt_maps_snapshot(maps, 1, NULL, NULL), -EINVAL);

	/* Generations: a dlopen by relative path, then its dlclose. */
	assert_int_equal(rt_maps_changed(&gen), 0);
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(fxdir), 0);
	void *h = dlopen("./libfx_plugin.so", RTLD_NOW | RTLD_LOCAL);
	assert_int_equal(chdir(cwd), 0);
	assert_non_null(h);
	assert_int_equal(rt_maps_changed(&gen), 1);
	assert_int_equal(rt_maps_snapshot(maps, 256, &n, &gen), 0);
	assert_int_equal(rt_maps_changed(&gen), 0);
	const struct rt_map *pl = rt_maps_find(maps, n, (uintptr_t)dlsym(h, "fx_plugin_value"));
	assert_non_null(pl);
	char want[PATH_MAX + 32];
	snprintf(want, sizeof(want), "%s/libfx_plugin.so", fxdir);
	char real_want[PATH_MAX];
	assert_non_null(realpath(want, real_want));
	assert_string_equal(pl->path, real_want);
	dlclose(h);
	assert_int_equal(rt_maps_changed(&gen), 1);
	assert_int_equal(rt_maps_changed(NULL), -EINVAL);

	/* Symbolise this process from its own snapshot. */
	assert_int_equal(rt_maps_snapshot(maps, 256, &n, NULL), 0);
	struct sym_ctx *ctx;
	assert_int_equal(sym_ctx_new(NULL, &ctx), 0);
	for (size_t i = 0; i < n; i++)
		if (!(maps[i].flags & RT_MAP_NO_EXEC))
			sym_add_mapping(ctx, maps[i].path, maps[i].build_id, maps[i].bias, maps[i].start,
					maps[i].end);
	struct sym_result r;
	assert_int_equal(sym_resolve(ctx, (uintptr_t)marker, &r), 0);
	assert_string_equal(r.function, "marker");
	assert_true(r.offset == 0);
	assert_int_equal(sym_resolve(ctx, in_libc, &r), 0);
	assert_true(r.has_function);
	assert_string_equal(r.function, "gnu_get_libc_version");
	assert_non_null(strstr(r.object, "libc.so"));

	/* The stack map's text export with this symboliser. */
	struct stackmap_stack s = { .id = 1, .depth = 2, .ref = 1 };
	s.ips[0] = (uintptr_t)marker + 1;
	s.ips[1] = 16;                           /* no mapping */
	char *text = NULL;
	size_t tlen = 0;
	FILE *mf = open_memstream(&text, &tlen);
	assert_non_null(mf);
	assert_int_equal(stackmap_print_text(mf, &s, 1, sym_stackmap_fn, ctx), 0);
	fclose(mf);
	char line0[128];
	assert_int_equal(sym_resolve(ctx, (uintptr_t)marker, &r), 0);
	snprintf(line0, sizeof(line0), "marker+0x1/0x%llx", (unsigned long long)r.size);
	if (!strstr(text, line0) || !strstr(text, "0x10"))
		fail_msg("export:\n%s", text);
	free(text);
	sym_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_with_debug_info),
		cmocka_unit_test(test_symbol_table_only),
		cmocka_unit_test(test_stripped_build_id),
		cmocka_unit_test(test_debuglink),
		cmocka_unit_test(test_moved),
		cmocka_unit_test(test_cpp),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_hostile_files),
		cmocka_unit_test(test_self_snapshot),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
