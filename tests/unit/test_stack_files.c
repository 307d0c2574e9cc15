/*
 * test_stack_files.c - TRACE/stacks/ (stack_files.h): a map and a list of
 * objects written and read back field for field (and the same from the
 * live map); objects the line format cannot carry left out; files
 * replaced, no temporary file left; missing stackmap.stat and maps
 * accepted, a missing stacks/ or stackmap.bin told by -ENOENT, *ret left
 * alone on failure; and the readers against hostile files: every
 * truncation of every file, bytes overwritten at every position, and a
 * table of near-miss lines (numbers that overflow, wrong case, fields too
 * long, NUL bytes, a FIFO or a directory in place of a file). A damaged
 * file must give -EBADMSG, never a crash or a half-filled result.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

#include "stackmap/stack_files.h"
#include "stackmap/stackmap.h"

struct fixture {
	char dir[64];                /* a fresh trace directory */
	char stacks[96];             /* dir/stacks */
	void *mem;
	struct stackmap map;
};

static int rm_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (!d)
			return -1;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char sub[512];
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			rm_tree(sub);
		}
		closedir(d);
		return rmdir(path);
	}
	return unlink(path);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "%s", "/tmp/test_stack_files.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->stacks, sizeof(f->stacks), "%s/stacks", f->dir);
	size_t size = stackmap_size(10, 2);
	f->mem = aligned_alloc(64, (size + 63) & ~(size_t)63);
	assert_non_null(f->mem);
	memset(f->mem, 0, size);
	assert_int_equal(stackmap_init(f->mem, size, 10, 2, 0x1234), 0);
	assert_int_equal(stackmap_open(f->mem, size, &f->map), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	rm_tree(f->dir);
	free(f->mem);
	free(f);
	return 0;
}

/* Stacks of depth 0, 1, 3 and 64, refs 1 to 4; one drop. */
static void fill(struct stackmap *m)
{
	uint64_t deep[STACKMAP_MAX_DEPTH];
	for (int i = 0; i < STACKMAP_MAX_DEPTH; i++)
		deep[i] = 0x7f0000000000 + (uint64_t)i * 0x10;
	uint64_t three[3] = { 0x401000, 0x402000, 0x403000 };
	uint32_t id;
	assert_int_equal(stackmap_get_id(m, three, 3, 0, &id), 1);
	assert_int_equal(stackmap_get_id(m, three, 1, 1, &id), 1);
	assert_int_equal(stackmap_get_id(m, NULL, 0, 0, &id), 1);
	assert_int_equal(stackmap_get_id(m, deep, 64, 1, &id), 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(stackmap_get_id(m, deep, 64, 0, &id), 0);
	assert_int_equal(stackmap_get_id(m, three, 3, 1, &id), 0);
	m->hdr->resetting = 1;
	assert_int_equal(stackmap_get_id(m, three, 3, 0, &id), -EAGAIN);
	m->hdr->resetting = 0;
}

static struct rt_map mk_map(uintptr_t start, uintptr_t end, uintptr_t bias, const char *bid,
			    const char *path)
{
	struct rt_map m;
	memset(&m, 0, sizeof(m));
	m.start = start;
	m.end = end;
	m.bias = bias;
	snprintf(m.build_id, sizeof(m.build_id), "%s", bid);
	m.build_id_len = (uint32_t)(strlen(bid) / 2);
	snprintf(m.path, sizeof(m.path), "%s", path);
	return m;
}

/* The first NGOOD can be written; the rest cannot and are left out. */
#define NGOOD 5
#define NMAPS 10
static void make_maps(struct rt_map *maps)
{
	maps[0] = mk_map(0x555500001000, 0x555500005000, 0x555500000000,
			 "0123456789abcdef0123456789abcdef01234567", "/usr/bin/prog");
	maps[1] = mk_map(0x7fff0000, 0x7fff2000, 0x7fff0000, "ab", "[vdso]");
	maps[2] = mk_map(0x7f0000000000, 0x7f0000100000, 0x7effff000000, "", "/opt/my lib;x/libz.so");
	maps[3] = mk_map(0, 0, 0x7f1000000000, "", "/usr/lib/data-only.so");
	maps[4] = mk_map(UINTPTR_MAX - 1, UINTPTR_MAX, 0, "", "/x");
	maps[5] = mk_map(0x1000, 0x2000, 0, "", "/lib/with\nnewline.so");
	maps[6] = mk_map(0x1000, 0x2000, 0, "abc", "/lib/odd-build-id.so");
	maps[7] = mk_map(0x1000, 0x2000, 0, "ABCD", "/lib/upper-build-id.so");
	maps[8] = mk_map(0x2000, 0x1000, 0, "", "/lib/backwards.so");
	maps[9] = mk_map(0x1000, 0x2000, 0, "", "/lib/unterminated.so");
	memset(maps[9].path, 'a', sizeof(maps[9].path));
}

static void assert_map_equal(const struct rt_map *got, const struct rt_map *want)
{
	assert_int_equal(got->start, want->start);
	assert_int_equal(got->end, want->end);
	assert_int_equal(got->bias, want->bias);
	assert_string_equal(got->build_id, want->build_id);
	assert_int_equal(got->build_id_len, want->build_id_len);
	assert_string_equal(got->path, want->path);
}

static void assert_stacks_equal(const struct stackmap_stack *a, size_t na,
				const struct stackmap_stack *b, size_t nb)
{
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(a[i].id, b[i].id);
		assert_int_equal(a[i].depth, b[i].depth);
		assert_int_equal(a[i].ref, b[i].ref);
		assert_memory_equal(a[i].ips, b[i].ips, a[i].depth * sizeof(a[i].ips[0]));
	}
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* ---- round trip ---------------------------------------------------------- */

static void test_round_trip(void **state)
{
	struct fixture *f = *state;
	fill(&f->map);
	struct rt_map maps[NMAPS];
	make_maps(maps);
	assert_int_equal(stack_files_write(f->dir, &f->map, maps, NMAPS), 0);
	assert_int_equal(count_entries(f->stacks), 3); /* no temporary left */

	struct stack_files sf;
	assert_int_equal(stack_files_read(f->dir, &sf), 0);
	struct stackmap_stack *want;
	size_t nwant;
	assert_int_equal(stackmap_collect(&f->map, &want, &nwant), 0);
	assert_int_equal(nwant, 4);
	assert_stacks_equal(sf.stacks, sf.nstacks, want, nwant);
	struct stackmap_stat st;
	assert_int_equal(stackmap_stat(&f->map, &st), 0);
	assert_true(sf.has_stat);
	assert_int_equal(sf.stat.entries, 4);
	assert_int_equal(sf.stat.max_entries, st.max_entries);
	assert_int_equal(sf.stat.table_size, st.table_size);
	assert_int_equal(sf.stat.successes, 8);
	assert_int_equal(sf.stat.drops, 1);
	assert_int_equal(sf.stat.success_rate, 88);
	assert_int_equal(sf.nmaps, NGOOD);
	for (int i = 0; i < NGOOD; i++)
		assert_map_equal(&sf.maps[i], &maps[i]);
	assert_int_equal(sf.maps[1].flags, RT_MAP_VDSO);
	assert_int_equal(sf.maps[3].flags, RT_MAP_NO_EXEC);
	assert_int_equal(sf.maps[0].flags, 0);
	stack_files_free(&sf);
	assert_null(sf.stacks);
	stack_files_free(&sf); /* twice: harmless */
	stack_files_free(NULL);

	/* From the live map: the same stacks and counters, every object. */
	assert_int_equal(stack_files_from_map(&f->map, maps, NMAPS, &sf), 0);
	assert_stacks_equal(sf.stacks, sf.nstacks, want, nwant);
	assert_true(sf.has_stat);
	assert_memory_equal(&sf.stat, &st, sizeof(st));
	assert_int_equal(sf.nmaps, NMAPS);
	assert_int_equal(strlen(sf.maps[9].path), sizeof(sf.maps[9].path) - 1);
	stack_files_free(&sf);
	free(want);

	/* Written again after more stacks: the files are replaced. */
	uint64_t more[2] = { 0x1, 0x2 };
	uint32_t id;
	assert_int_equal(stackmap_get_id(&f->map, more, 2, 0, &id), 1);
	assert_int_equal(stack_files_write(f->dir, &f->map, maps, 1), 0);
	assert_int_equal(count_entries(f->stacks), 3);
	assert_int_equal(stack_files_read(f->dir, &sf), 0);
	assert_int_equal(sf.nstacks, 5);
	assert_int_equal(sf.stacks[4].id, id);
	assert_int_equal(sf.nmaps, 1);
	assert_int_equal(sf.stat.entries, 5);
	stack_files_free(&sf);

	/* An empty map and no objects. */
	assert_int_equal(stackmap_reset(&f->map, 0), 0);
	assert_int_equal(stack_files_write(f->dir, &f->map, NULL, 0), 0);
	assert_int_equal(stack_files_read(f->dir, &sf), 0);
	assert_int_equal(sf.nstacks, 0);
	assert_int_equal(sf.nmaps, 0);
	assert_true(sf.has_stat);
	stack_files_free(&sf);
}

/* ---- missing pieces, bad arguments ----------------------------------------- */

static void path_of(const struct fixture *f, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", f->stacks, name);
}

static void test_missing(void **state)
{
	struct fixture *f = *state;
	struct stack_files sf, sentinel;
	memset(&sentinel, 0xa5, sizeof(sentinel));
	sf = sentinel;
	char p[256];

	assert_int_equal(stack_files_read("/nonexistent/trace", &sf), -ENOENT);
	assert_int_equal(stack_files_read(f->dir, &sf), -ENOENT); /* no stacks/ */
	assert_int_equal(mkdir(f->stacks, 0755), 0);
	assert_int_equal(stack_files_read(f->dir, &sf), -ENOENT); /* no stackmap.bin */
	assert_memory_equal(&sf, &sentinel, sizeof(sf));
	assert_int_equal(stack_files_read(NULL, &sf), -EINVAL);
	assert_int_equal(stack_files_read(f->dir, NULL), -EINVAL);

	fill(&f->map);
	struct rt_map maps[NMAPS];
	make_maps(maps);
	assert_int_equal(stack_files_write(f->dir, &f->map, maps, NGOOD), 0);
	path_of(f, "stackmap.stat", p, sizeof(p));
	assert_int_equal(unlink(p), 0);
	assert_int_equal(stack_files_read(f->dir, &sf), 0);
	assert_false(sf.has_stat);
	assert_int_equal(sf.nstacks, 4);
	assert_int_equal(sf.nmaps, NGOOD);
	stack_files_free(&sf);
	path_of(f, "maps", p, sizeof(p));
	assert_int_equal(unlink(p), 0);
	assert_int_equal(stack_files_read(f->dir, &sf), 0);
	assert_int_equal(sf.nmaps, 0);
	assert_null(sf.maps);
	assert_int_equal(sf.nstacks, 4);
	stack_files_free(&sf);

	/* Writing: bad arguments, a trace that is not a directory. */
	assert_int_equal(stack_files_write(NULL, &f->map, NULL, 0), -EINVAL);
	assert_int_equal(stack_files_write(f->dir, NULL, NULL, 0), -EINVAL);
	assert_int_equal(stack_files_write(f->dir, &f->map, NULL, 1), -EINVAL);
	assert_int_equal(stack_files_write("/nonexistent/trace", &f->map, NULL, 0), -ENOENT);
	path_of(f, "stackmap.bin", p, sizeof(p));
	assert_int_equal(stack_files_write(p, &f->map, NULL, 0), -ENOTDIR);
	assert_int_equal(stack_files_from_map(NULL, NULL, 0, &sf), -EINVAL);
	assert_int_equal(stack_files_from_map(&f->map, NULL, 1, &sf), -EINVAL);
}

/* ---- hostile files ------------------------------------------------------- */

static void put_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static char *get_file(const char *path, size_t *ret_len)
{
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	char *buf = malloc(1 << 20);
	assert_non_null(buf);
	*ret_len = fread(buf, 1, 1 << 20, fp);
	fclose(fp);
	return buf;
}

/* A successful read must hand out only what the contract promises. */
static void check_sane(const struct stack_files *sf)
{
	for (size_t i = 0; i < sf->nstacks; i++) {
		assert_true(sf->stacks[i].id != 0);
		assert_true(sf->stacks[i].depth <= STACKMAP_MAX_DEPTH);
		if (i)
			assert_true(sf->stacks[i - 1].id < sf->stacks[i].id);
	}
	for (size_t i = 0; i < sf->nmaps; i++) {
		const struct rt_map *m = &sf->maps[i];
		assert_true(m->start <= m->end);
		size_t pl = strnlen(m->path, sizeof(m->path));
		assert_true(pl > 0 && pl < sizeof(m->path));
		size_t bl = strnlen(m->build_id, sizeof(m->build_id));
		assert_true(bl < sizeof(m->build_id) && bl == 2 * m->build_id_len);
	}
	if (sf->has_stat) {
		assert_true(sf->stat.success_rate <= 100);
		assert_true(sf->stat.entries <= sf->stat.max_entries);
	}
}

static int read_checked(const struct fixture *f)
{
	struct stack_files sf;
	int r = stack_files_read(f->dir, &sf);
	if (r == 0) {
		check_sane(&sf);
		stack_files_free(&sf);
	}
	return r;
}

static const char *const NAMES[] = { "stackmap.bin", "stackmap.stat", "maps" };

static void write_small(struct fixture *f)
{
	fill(&f->map);
	struct rt_map maps[NMAPS];
	make_maps(maps);
	assert_int_equal(stack_files_write(f->dir, &f->map, maps, NGOOD), 0);
}

static void test_truncations(void **state)
{
	struct fixture *f = *state;
	write_small(f);
	for (size_t k = 0; k < 3; k++) {
		char p[256];
		size_t len;
		path_of(f, NAMES[k], p, sizeof(p));
		char *data = get_file(p, &len);
		assert_true(len > 0);
		size_t hl = strlen("# ringtrace maps 1\n");
		for (size_t cut = 0; cut < len; cut++) {
			put_file(p, data, cut);
			int r = read_checked(f);
			/* A maps file cut right after a line is a shorter valid
			 * list; every other cut is damage. */
			int valid = k == 2 && cut >= hl && data[cut - 1] == '\n';
			if (r != (valid ? 0 : -EBADMSG))
				fail_msg("%s cut to %zu of %zu bytes: %d", NAMES[k], cut, len, r);
		}
		put_file(p, data, len);
		assert_int_equal(read_checked(f), 0);
		free(data);
	}
}

static void test_overwrites(void **state)
{
	static const unsigned char vals[] = { 0x00, 0xff, '\n', ' ', '-', '0', '9', 'f', 'g', 'F', '/', 0x80 };
	struct fixture *f = *state;
	write_small(f);
	for (size_t k = 0; k < 3; k++) {
		char p[256];
		size_t len;
		path_of(f, NAMES[k], p, sizeof(p));
		char *data = get_file(p, &len);
		char *bad = malloc(len);
		assert_non_null(bad);
		for (size_t at = 0; at < len; at++) {
			for (size_t v = 0; v < sizeof(vals); v++) {
				memcpy(bad, data, len);
				bad[at] = (char)vals[v];
				put_file(p, bad, len);
				int r = read_checked(f);
				if (r != 0 && r != -EBADMSG)
					fail_msg("%s byte %zu = %#x: %d", NAMES[k], at, vals[v], r);
			}
		}
		/* Garbage after the end. */
		put_file(p, data, len);
		int fd = open(p, O_WRONLY | O_APPEND);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "x", 1), 1);
		close(fd);
		assert_int_equal(read_checked(f), -EBADMSG);
		put_file(p, data, len);
		free(bad);
		free(data);
	}
}

struct text_case {
	const char *text;
	size_t len;                  /* 0: strlen */
	int want;
};

static void run_cases(struct fixture *f, const char *name, const struct text_case *c, size_t n)
{
	char p[256];
	path_of(f, name, p, sizeof(p));
	for (size_t i = 0; i < n; i++) {
		put_file(p, c[i].text, c[i].len ? c[i].len : strlen(c[i].text));
		int r = read_checked(f);
		if (r != c[i].want)
			fail_msg("%s case %zu (%.60s): %d, want %d", name, i, c[i].text, r, c[i].want);
	}
}

static void test_maps_lines(void **state)
{
	struct fixture *f = *state;
	write_small(f);
	static char long_path[RT_MAPS_PATH_MAX + 64], max_path[RT_MAPS_PATH_MAX + 64];
	static char long_bid[512], max_bid[512];
	snprintf(max_path, sizeof(max_path), "# ringtrace maps 1\n1-2 0 - /%0*d\n",
		 RT_MAPS_PATH_MAX - 2, 0);
	snprintf(long_path, sizeof(long_path), "# ringtrace maps 1\n1-2 0 - /%0*d\n",
		 RT_MAPS_PATH_MAX - 1, 0);
	snprintf(max_bid, sizeof(max_bid), "# ringtrace maps 1\n1-2 0 %0*d /a\n",
		 2 * RT_MAPS_BUILD_ID_MAX, 0);
	snprintf(long_bid, sizeof(long_bid), "# ringtrace maps 1\n1-2 0 %0*d /a\n",
		 2 * RT_MAPS_BUILD_ID_MAX + 2, 0);
	static const char nul_path[] = "# ringtrace maps 1\n1-2 0 - /a\0b\n";
	const struct text_case cases[] = {
		{ "# ringtrace maps 1\n", 0, 0 },
		{ "# ringtrace maps 1\n1000-2000 0 - /a\n", 0, 0 },
		{ "# ringtrace maps 1\n1000-2000 0 - /a b;c\n", 0, 0 },
		{ "# ringtrace maps 1\nffffffffffffffff-ffffffffffffffff 0 ab /a\n", 0, 0 },
		{ max_path, 0, 0 },
		{ max_bid, 0, 0 },
		{ "", 0, -EBADMSG },
		{ "# ringtrace maps 2\n", 0, -EBADMSG },
		{ "# ringtrace maps 1", 0, -EBADMSG },
		{ "# ringtrace maps 1\n1000-2000 0 - /a", 0, -EBADMSG },
		{ "# ringtrace maps 1\n\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n2000-1000 0 - /a\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n0x1000-2000 0 - /a\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n1000-2000 0x0 - /a\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n10000000000000000-20000000000000000 0 - /a\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n1000-2000 0 ABCD /a\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n1000-2000 0 abc /a\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n1000-2000 0 - \n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n1000-2000 0 -\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n1000-2000 0 /a\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n1000-2000  0 - /a\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n1000 2000 0 - /a\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n-1000-2000 0 - /a\n", 0, -EBADMSG },
		{ "# ringtrace maps 1\n1000-2000 0 --/a\n", 0, -EBADMSG },
		{ long_path, 0, -EBADMSG },
		{ long_bid, 0, -EBADMSG },
		{ nul_path, sizeof(nul_path) - 1, -EBADMSG },
	};
	run_cases(f, "maps", cases, sizeof(cases) / sizeof(cases[0]));

	/* The fields of an accepted line. */
	char p[256];
	path_of(f, "maps", p, sizeof(p));
	const char *two = "# ringtrace maps 1\n0-0 7f00 - /lib/a b.so\n10-20 5 0aff [vdso]\n";
	put_file(p, two, strlen(two));
	struct stack_files sf;
	assert_int_equal(stack_files_read(f->dir, &sf), 0);
	assert_int_equal(sf.nmaps, 2);
	assert_int_equal(sf.maps[0].bias, 0x7f00);
	assert_string_equal(sf.maps[0].path, "/lib/a b.so");
	assert_int_equal(sf.maps[0].build_id_len, 0);
	assert_int_equal(sf.maps[0].flags, RT_MAP_NO_EXEC);
	assert_int_equal(sf.maps[1].start, 0x10);
	assert_int_equal(sf.maps[1].end, 0x20);
	assert_string_equal(sf.maps[1].build_id, "0aff");
	assert_int_equal(sf.maps[1].build_id_len, 2);
	assert_int_equal(sf.maps[1].flags, RT_MAP_VDSO);
	stack_files_free(&sf);
}

static void test_stat_lines(void **state)
{
	struct fixture *f = *state;
	write_small(f);
#define STAT(e, m, t, s, d, r) \
	"entries: " e " / " m "\ntable_size: " t "\nsuccesses: " s "\ndrops: " d "\nsuccess_rate: " r "%\n"
	const struct text_case cases[] = {
		{ STAT("0", "0", "0", "0", "0", "0"), 0, 0 },
		{ STAT("3", "1024", "2048", "18446744073709551615", "18446744073709551615", "100"), 0, 0 },
		{ STAT("3", "1024", "2048", "18446744073709551616", "0", "100"), 0, -EBADMSG },
		{ STAT("3", "1024", "2048", "99999999999999999999999", "0", "100"), 0, -EBADMSG },
		{ STAT("3", "1024", "2048", "1", "0", "101"), 0, -EBADMSG },
		{ STAT("1025", "1024", "2048", "1", "0", "100"), 0, -EBADMSG },
		{ STAT("03", "1024", "2048", "1", "0", "100"), 0, -EBADMSG },
		{ STAT("+3", "1024", "2048", "1", "0", "100"), 0, -EBADMSG },
		{ STAT("-3", "1024", "2048", "1", "0", "100"), 0, -EBADMSG },
		{ STAT("", "1024", "2048", "1", "0", "100"), 0, -EBADMSG },
		{ STAT("3", "1024", "2048", "1", "0", "100") "extra\n", 0, -EBADMSG },
		{ "entries: 3 / 1024\ntable_size: 2048\nsuccesses: 1\ndrops: 0\nsuccess_rate: 100%", 0,
		  -EBADMSG },
		{ "entries: 3 / 1024\ntable_size: 2048\nsuccesses: 1\ndrops: 0\n", 0, -EBADMSG },
		{ "table_size: 2048\nentries: 3 / 1024\nsuccesses: 1\ndrops: 0\nsuccess_rate: 100%\n", 0,
		  -EBADMSG },
		{ "", 0, -EBADMSG },
	};
#undef STAT
	run_cases(f, "stackmap.stat", cases, sizeof(cases) / sizeof(cases[0]));
}

static void put32(unsigned char *p, uint32_t v, int swap)
{
	if (swap)
		v = __builtin_bswap32(v);
	memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v, int swap)
{
	if (swap)
		v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
}

/* A binary file of one-frame stacks with these ids (frame = id * 16). */
static size_t make_bin(unsigned char *out, const uint32_t *ids, uint32_t n, uint32_t version,
		       int swap)
{
	put32(out, STACKMAP_BIN_MAGIC, swap);
	put32(out + 4, version, swap);
	put32(out + 8, n, swap);
	put32(out + 12, 0, swap);
	size_t o = 16;
	for (uint32_t i = 0; i < n; i++, o += 24) {
		put32(out + o, ids[i], swap);
		put32(out + o + 4, 1, swap);
		put32(out + o + 8, ids[i] + 100, swap);
		put32(out + o + 12, 0, swap);
		put64(out + o + 16, (uint64_t)ids[i] * 16, swap);
	}
	return o;
}

static void test_bin_files(void **state)
{
	struct fixture *f = *state;
	write_small(f);
	char p[256];
	path_of(f, "stackmap.bin", p, sizeof(p));
	unsigned char buf[256];
	struct stack_files sf;

	/* Out of order: sorted by id on reading; either byte order. */
	static const uint32_t shuffled[] = { 7, 2, 9, 1 };
	for (int swap = 0; swap < 2; swap++) {
		put_file(p, buf, make_bin(buf, shuffled, 4, STACKMAP_BIN_VERSION, swap));
		assert_int_equal(stack_files_read(f->dir, &sf), 0);
		assert_int_equal(sf.nstacks, 4);
		static const uint32_t sorted[] = { 1, 2, 7, 9 };
		for (int i = 0; i < 4; i++) {
			assert_int_equal(sf.stacks[i].id, sorted[i]);
			assert_int_equal(sf.stacks[i].ref, sorted[i] + 100);
			assert_int_equal(sf.stacks[i].ips[0], sorted[i] * 16);
		}
		stack_files_free(&sf);
	}
	/* One id twice; an unknown version (reported as damage: the file
	 * promises version 2). */
	static const uint32_t dup[] = { 3, 5, 3 };
	put_file(p, buf, make_bin(buf, dup, 3, STACKMAP_BIN_VERSION, 0));
	assert_int_equal(read_checked(f), -EBADMSG);
	put_file(p, buf, make_bin(buf, shuffled, 4, 3, 0));
	assert_int_equal(read_checked(f), -EBADMSG);

	/* Not regular files: a directory, a FIFO (must not block). */
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(read_checked(f), -EBADMSG);
	assert_int_equal(rmdir(p), 0);
	assert_int_equal(mkfifo(p, 0644), 0);
	assert_int_equal(read_checked(f), -EBADMSG);
	assert_int_equal(unlink(p), 0);
	char m[256];
	path_of(f, "maps", m, sizeof(m));
	put_file(p, buf, make_bin(buf, shuffled, 4, STACKMAP_BIN_VERSION, 0));
	assert_int_equal(unlink(m), 0);
	assert_int_equal(mkfifo(m, 0644), 0);
	assert_int_equal(read_checked(f), -EBADMSG);

	/* stacks/ that is a file. */
	rm_tree(f->stacks);
	put_file(f->stacks, "x", 1);
	assert_int_equal(read_checked(f), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overwrites, setup, teardown),
		cmocka_unit_test_setup_teardown(test_maps_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stat_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bin_files, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
