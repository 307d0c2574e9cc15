/*
 * symbolize.c - offline symbolisation of run-time addresses with
 * elfutils' libdwfl (contract in symbolize.h).
 *
 * Runs in the `ringtrace` command, after a recording, on input it does
 * not trust: mapping records from a trace and ELF files found on disk.
 * Built for a few hundred objects and a few thousand distinct stacks: a
 * linear scan of the mappings per address, libdwfl's own caches for
 * symbols and lines.
 *
 * Every file is opened non-blocking (a FIFO planted at a binary's path
 * cannot hang the command), must be a regular file, and is checked against
 * the mapping's build id before libdwfl sees it. Debug files are found by
 * our own callback, never by libdwfl's standard one: that one may ask a
 * debuginfod server when DEBUGINFOD_URLS is set, and results must not
 * depend on the network.
 */
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym/symbolize.h"

/* libstdc++'s demangler (link with -lstdc++). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define BUILD_ID_MAX 64
#define SYS_DEBUG_DIR "/usr/lib/debug"

struct sym_map {
	char *path;                  /* as recorded */
	char *file;                  /* what was loaded, NULL if nothing */
	unsigned char bid[BUILD_ID_MAX];
	size_t bid_len;
	uint64_t bias, start, end;
	Dwfl_Module *mod;            /* NULL if no file */
};

struct sym_ctx {
	Dwfl *dwfl;
	Dwfl_Callbacks cb;
	char *debug_dir;             /* NULL if none */
	struct sym_map *maps;
	size_t n, cap;
};

/* ---- helpers ------------------------------------------------------------- */

static int parse_build_id(const char *hex, unsigned char *out, size_t *ret_len)
{
	size_t len = hex ? strlen(hex) : 0;
	if (len == 0) {
		*ret_len = 0;
		return 0;
	}
	if (len % 2 || len / 2 > BUILD_ID_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len / 2; i++) {
		int v = 0;
		for (int k = 0; k < 2; k++) {
			char c = hex[2 * i + (size_t)k];
			int d = c >= '0' && c <= '9' ? c - '0'
				: c >= 'a' && c <= 'f' ? c - 'a' + 10
				: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
			if (d < 0)
				return -EINVAL;
			v = v << 4 | d;
		}
		out[i] = (unsigned char)v;
	}
	*ret_len = len / 2;
	return 0;
}

/* ".build-id/xx/rest<suffix>" under dir, into buf. */
static int build_id_path(char *buf, size_t size, const char *dir, const unsigned char *bid,
			 size_t len, const char *suffix)
{
	static const char hex[] = "0123456789abcdef";
	char h[2 * BUILD_ID_MAX + 1];
	for (size_t i = 0; i < len; i++) {
		h[2 * i] = hex[bid[i] >> 4];
		h[2 * i + 1] = hex[bid[i] & 15];
	}
	h[2 * len] = '\0';
	int r = snprintf(buf, size, "%s/.build-id/%.2s/%s%s", dir, h, h + 2, suffix);
	return r < 0 || (size_t)r >= size ? -ENAMETOOLONG : 0;
}

/* IEEE CRC-32 as .gnu_debuglink uses it. */
static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
	}
	return ~crc;
}

static int file_crc32(int fd, uint32_t *ret)
{
	unsigned char buf[65536];
	uint32_t crc = 0;
	off_t off = 0;
	for (;;) {
		ssize_t r = pread(fd, buf, sizeof(buf), off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		crc = crc32_update(crc, buf, (size_t)r);
		off += r;
	}
	*ret = crc;
	return 0;
}

/*
 * Open file if it is a regular ELF file whose GNU build id is bid (any
 * file when bid_len is 0). The fd, or -ENOENT (absent, not a regular
 * file), -EBADMSG (not ELF), -ESTALE (another build).
 */
static int open_elf_checked(const char *file, const unsigned char *bid, size_t bid_len)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -ENOENT;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	/* ELF_C_READ, not an mmap: a file truncated under us must not SIGBUS. */
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	int r = 0;
	if (!e || elf_kind(e) != ELF_K_ELF) {
		r = -EBADMSG;
	} else if (bid_len) {
		const void *b = NULL;
		ssize_t n = dwelf_elf_gnu_build_id(e, &b);
		if (n != (ssize_t)bid_len || !b || memcmp(b, bid, bid_len) != 0)
			r = -ESTALE;
	}
	if (e)
		elf_end(e);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* ---- finding debug information (libdwfl callback) ------------------------ */

static int try_debug(const char *path, const unsigned char *bid, size_t bid_len, bool check_crc,
		     uint32_t crc, char **ret_name)
{
	int fd = open_elf_checked(path, bid, bid_len);
	if (fd < 0)
		return -1;
	if (check_crc) {
		uint32_t got;
		if (file_crc32(fd, &got) < 0 || got != crc) {
			close(fd);
			return -1;
		}
	}
	*ret_name = strdup(path);
	return fd;
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink, GElf_Word crc, char **ret_name)
{
	(void)modname;
	(void)base;
	struct sym_ctx *ctx = *userdata;
	const unsigned char *bits = NULL;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &bits, &vaddr);
	size_t bid_len = len > 0 && len <= BUILD_ID_MAX ? (size_t)len : 0;
	char path[4096];
	int fd;

	if (bid_len) {
		const char *dirs[] = { ctx ? ctx->debug_dir : NULL, SYS_DEBUG_DIR };
		for (size_t i = 0; i < 2; i++) {
			if (!dirs[i] || build_id_path(path, sizeof(path), dirs[i], bits, bid_len, ".debug") < 0)
				continue;
			if ((fd = try_debug(path, bits, bid_len, false, 0, ret_name)) >= 0)
				return fd;
		}
	}
	if (!debuglink || !*debuglink || strchr(debuglink, '/') || !file_name)
		return -1;
	/* gdb's order: next to the binary, its .debug/, then the binary's
	 * directory under each global debug directory. A build id, when the
	 * binary has one, is a stronger check than the CRC. */
	char dir[4096];
	const char *slash = strrchr(file_name, '/');
	size_t dl = slash ? (size_t)(slash - file_name) : 0;
	if (dl >= sizeof(dir))
		return -1;
	memcpy(dir, file_name, dl);
	dir[dl] = '\0';
	const char *fmt[][2] = {
		{ dir, "" }, { dir, "/.debug" },
		{ ctx ? ctx->debug_dir : NULL, dir }, { SYS_DEBUG_DIR, dir },
		{ ctx ? ctx->debug_dir : NULL, "" },
	};
	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		if (!fmt[i][0] || (i < 2 && dl == 0))
			continue;
		int r = snprintf(path, sizeof(path), "%s%s/%s", fmt[i][0], fmt[i][1], debuglink);
		if (r < 0 || (size_t)r >= sizeof(path))
			continue;
		if (strcmp(path, file_name) == 0)
			continue;            /* the binary itself */
		if ((fd = try_debug(path, bits, bid_len, bid_len == 0, crc, ret_name)) >= 0)
			return fd;
	}
	return -1;
}

/* ---- context ------------------------------------------------------------- */

int sym_ctx_new(const char *debug_dir, struct sym_ctx **ret)
{
	if (!ret || (debug_dir && debug_dir[0] != '/'))
		return -EINVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	struct sym_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	if (debug_dir) {
		ctx->debug_dir = strdup(debug_dir);
		if (!ctx->debug_dir) {
			free(ctx);
			return -ENOMEM;
		}
		size_t l = strlen(ctx->debug_dir);
		while (l > 1 && ctx->debug_dir[l - 1] == '/')
			ctx->debug_dir[--l] = '\0';
	}
	/* Every module is reported with its file already open: find_elf is
	 * never needed; the build-id one is the harmless choice. */
	ctx->cb.find_elf = dwfl_build_id_find_elf;
	ctx->cb.find_debuginfo = find_debuginfo;
	ctx->cb.section_address = dwfl_offline_section_address;
	ctx->dwfl = dwfl_begin(&ctx->cb);
	if (!ctx->dwfl) {
		free(ctx->debug_dir);
		free(ctx);
		return -ENOMEM;
	}
	*ret = ctx;
	return 0;
}

void sym_ctx_free(struct sym_ctx *ctx)
{
	if (!ctx)
		return;
	dwfl_end(ctx->dwfl);
	for (size_t i = 0; i < ctx->n; i++) {
		free(ctx->maps[i].path);
		free(ctx->maps[i].file);
	}
	free(ctx->maps);
	free(ctx->debug_dir);
	free(ctx);
}

/* The file to load for a mapping: see symbolize.h. fd and *ret_file
 * (malloc'ed), or a negative errno. */
static int find_binary(struct sym_ctx *ctx, const struct sym_map *m, char **ret_file)
{
	int fd = -ENOENT, bad = 0;
	if (m->path[0] == '/') {
		fd = open_elf_checked(m->path, m->bid, m->bid_len);
		if (fd >= 0) {
			*ret_file = strdup(m->path);
			return fd;
		}
		bad = fd == -EBADMSG;
	}
	if (!m->bid_len)
		return bad ? -EBADMSG : -ENOENT;
	char path[4096];
	struct {
		const char *dir, *suffix;
	} c[] = {
		{ ctx->debug_dir, "" }, { ctx->debug_dir, ".debug" }, { SYS_DEBUG_DIR, ".debug" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (!c[i].dir || build_id_path(path, sizeof(path), c[i].dir, m->bid, m->bid_len, c[i].suffix) < 0)
			continue;
		fd = open_elf_checked(path, m->bid, m->bid_len);
		if (fd >= 0) {
			*ret_file = strdup(path);
			return fd;
		}
		bad |= fd == -EBADMSG;
	}
	return bad ? -EBADMSG : -ENOENT;
}

int sym_add_mapping(struct sym_ctx *ctx, const char *path, const char *build_id, uint64_t bias,
		    uint64_t start, uint64_t end)
{
	if (!ctx || !path || !*path || start >= end)
		return -EINVAL;
	struct sym_map m = { .bias = bias, .start = start, .end = end };
	if (parse_build_id(build_id, m.bid, &m.bid_len) < 0)
		return -EINVAL;
	for (size_t i = 0; i < ctx->n; i++)
		if (start < ctx->maps[i].end && ctx->maps[i].start < end)
			return -EEXIST;
	if (ctx->n == ctx->cap) {
		size_t cap = ctx->cap ? 2 * ctx->cap : 16;
		struct sym_map *p = realloc(ctx->maps, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		ctx->maps = p;
		ctx->cap = cap;
	}
	m.path = strdup(path);
	if (!m.path)
		return -ENOMEM;
	int r = 0;
	if (strcmp(path, "[vdso]") == 0 && !m.bid_len) {
		r = -ENOENT;                 /* no file on disk, nothing to check against */
	} else {
		char *file = NULL;
		int fd = find_binary(ctx, &m, &file);
		if (fd >= 0 && !file) {
			close(fd);
			fd = -ENOMEM;
		}
		if (fd < 0) {
			r = fd == -ENOMEM ? -ENOMEM : fd == -EBADMSG ? -EBADMSG : -ENOENT;
		} else {
			dwfl_report_begin_add(ctx->dwfl);
			/* ET_DYN: base is the load bias (add_p_vaddr); ET_EXEC
			 * ignores it. fd is the library's on success. */
			Dwfl_Module *mod = dwfl_report_elf(ctx->dwfl, m.path, file, fd, bias, true);
			dwfl_report_end(ctx->dwfl, NULL, NULL);
			if (!mod) {
				close(fd);
				free(file);
				r = -EBADMSG;
			} else {
				void **ud = NULL;
				dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
				if (ud)
					*ud = ctx;
				m.mod = mod;
				m.file = file;
			}
		}
	}
	if (r == -ENOMEM) {
		free(m.path);
		return r;
	}
	ctx->maps[ctx->n++] = m;
	return r;
}

/* ---- lookups ------------------------------------------------------------- */

static void set_function(struct sym_result *ret, const char *name)
{
	char *dem = NULL;
	if (name[0] == '_' && name[1] == 'Z') {
		int status = -1;
		dem = __cxa_demangle(name, NULL, NULL, &status);
		if (status != 0) {
			free(dem);
			dem = NULL;
		}
	}
	snprintf(ret->function, sizeof(ret->function), "%s", dem ? dem : name);
	free(dem);
	/* A symbol-table name may carry its version ("__libc_start_main@@
	 * GLIBC_2.34"); the function is the same whatever the version, and
	 * '@' is in no C or C++ name. */
	char *at = strchr(ret->function, '@');
	if (at && at != ret->function)
		*at = '\0';
	ret->has_function = 1;
}

/*
 * The line of addr by walking the compile units. libdwfl (elfutils 0.188)
 * finds a unit through .debug_aranges only, which clang does not emit: a
 * clang -g binary has lines but dwfl_module_getsrc() finds none. 0 or -1.
 */
static int line_by_units(Dwfl_Module *mod, uint64_t addr, const char **ret_file, int *ret_line)
{
	Dwarf_Addr bias = 0;
	Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
	if (!dw)
		return -1;
	Dwarf_Addr a = addr - bias;
	Dwarf_CU *cu = NULL, *next = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;
	/* Bounded: a corrupt file cannot make the walk loop. */
	for (int n = 0; n < 1000000 &&
			dwarf_get_units(dw, cu, &next, &version, &unit_type, &cudie, NULL) == 0; n++) {
		cu = next;
		if (dwarf_haspc(&cudie, a) != 1)
			continue;
		Dwarf_Line *l = dwarf_getsrc_die(&cudie, a);
		int lineno = 0;
		const char *src = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
		if (!src || dwarf_lineno(l, &lineno) != 0 || lineno <= 0)
			return -1;
		*ret_file = src;
		*ret_line = lineno;
		return 0;
	}
	return -1;
}

int sym_resolve(struct sym_ctx *ctx, uint64_t addr, struct sym_result *ret)
{
	if (!ctx || !ret)
		return -EINVAL;
	const struct sym_map *m = NULL;
	for (size_t i = 0; i < ctx->n; i++) {
		if (ctx->maps[i].start <= addr && addr < ctx->maps[i].end) {
			m = &ctx->maps[i];
			break;
		}
	}
	if (!m)
		return -ENOENT;
	memset(ret, 0, offsetof(struct sym_result, function) + 1);
	ret->offset = ret->size = 0;
	ret->file = NULL;
	ret->line = 0;
	ret->object = m->path;
	ret->object_file = m->file;
	ret->object_offset = addr - m->bias;
	if (!m->mod)
		return 0;
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(m->mod, addr, &off, &sym, NULL, NULL, NULL);
	if (name && *name) {
		set_function(ret, name);
		ret->offset = off;
		ret->size = sym.st_size;
	}
	Dwfl_Line *line = dwfl_module_getsrc(m->mod, addr);
	if (line) {
		Dwarf_Addr la;
		int lineno = 0, col = 0;
		const char *src = dwfl_lineinfo(line, &la, &lineno, &col, NULL, NULL);
		if (src && lineno > 0) {
			ret->file = src;
			ret->line = lineno;
		}
	}
	if (!ret->file)
		line_by_units(m->mod, addr, &ret->file, &ret->line);
	return 0;
}

int sym_format(struct sym_ctx *ctx, uint64_t addr, char *buf, size_t len)
{
	if (!buf || len == 0)
		return -EINVAL;
	struct sym_result r;
	if (ctx && sym_resolve(ctx, addr, &r) == 0 && r.has_function) {
		snprintf(buf, len, "%s+0x%" PRIx64 "/0x%" PRIx64, r.function, r.offset, r.size);
		return 1;
	}
	snprintf(buf, len, "0x%" PRIx64, addr);
	return 0;
}

int sym_stackmap_fn(void *arg, uint64_t addr, char *buf, size_t size)
{
	return sym_format(arg, addr, buf, size) == 1;
}
