/*
 * symbolize.h - turn the return addresses of a trace into
 * function+offset, object and source line, after the fact, from the
 * binaries and their debug files (elfutils' libdwfl; C++ names demangled).
 *
 * Runs in the `ringtrace` command only (it allocates, opens files, and its
 * input is untrusted). Nothing depends on the live process: the trace
 * carries, per loaded object, its path, GNU build id, load bias and code
 * range (src/sym/maps.h); a trace copied to another machine with the same
 * binaries resolves the same, with the files found by build id when the
 * paths differ. Files are checked against the build id before use;
 * corrupt or hostile ELF files give "not found", never a crash.
 *
 * Where files are looked for, per mapping:
 *   the binary: the mapping's path if its build id matches (or the mapping
 *     has none); else DIR/.build-id/xx/rest, then DIR/.build-id/xx/rest.debug
 *     and /usr/lib/debug/.build-id/xx/rest.debug (a debug file has the
 *     symbols and lines, which is all symbolisation needs);
 *   its debug information, when the binary has none: by build id under DIR
 *     and /usr/lib/debug (.build-id/xx/rest.debug), then by .gnu_debuglink
 *     name next to the binary, in its .debug/ subdirectory, under DIR and
 *     under /usr/lib/debug (the CRC is checked).
 * DIR is the optional debug directory given to sym_ctx_new().
 *
 * A context is not thread-safe: one thread at a time.
 */
#ifndef RINGTRACE_SYM_SYMBOLIZE_H
#define RINGTRACE_SYM_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#define SYM_NAME_MAX 1024

struct sym_ctx;

/* A new context; debug_dir may be NULL. 0, -ENOMEM, -EINVAL (a debug_dir
 * that is not absolute). */
int sym_ctx_new(const char *debug_dir, struct sym_ctx **ret);
/* NULL is accepted. */
void sym_ctx_free(struct sym_ctx *ctx);

/*
 * One loaded object: path as recorded (absolute, "[vdso]" for the vDSO),
 * build id in hex (NULL or "" if unknown), load bias, and the run-time
 * range [start, end) of its code. Returns 0 when a matching file was found
 * and loaded; -ENOENT when none was (the mapping is kept: its addresses
 * resolve to the object and offset, without a symbol); -EBADMSG when the
 * file found is not a usable ELF file (also kept); -EEXIST when the range
 * overlaps a mapping added before (not kept); -EINVAL on bad arguments
 * (path NULL or empty, start >= end, build id not hex); -ENOMEM.
 */
int sym_add_mapping(struct sym_ctx *ctx, const char *path, const char *build_id,
		    uint64_t bias, uint64_t start, uint64_t end);

struct sym_result {
	const char *object;          /* the mapping's path (owned by ctx) */
	const char *object_file;     /* file the symbols came from, NULL if none (ctx) */
	uint64_t object_offset;      /* addr - bias: the address in the ELF file */
	int has_function;
	char function[SYM_NAME_MAX]; /* demangled, truncated if longer; "" if unknown */
	uint64_t offset;             /* addr - start of the function */
	uint64_t size;               /* size of the function, 0 if unknown */
	const char *file;            /* source file, NULL if unknown (owned by ctx) */
	int line;                    /* source line, 0 if unknown */
};

/*
 * Resolve a run-time address. The address is looked up as given: for a
 * return address, pass addr - 1 to get the line of the call rather than
 * of the next statement (the function and offset are almost always the
 * same). Returns 0 (ret filled: at least the object), -ENOENT when no
 * mapping holds addr (ret untouched), -EINVAL.
 */
int sym_resolve(struct sym_ctx *ctx, uint64_t addr, struct sym_result *ret);

/*
 * "function+0xoff/0xsize" for addr into buf (NUL-terminated, truncated to
 * len), or "0x<addr>" when no function is known. Returns 1 with a symbol,
 * 0 with the address, -EINVAL (NULL buf or len 0).
 */
int sym_format(struct sym_ctx *ctx, uint64_t addr, char *buf, size_t len);

/* stackmap_sym_fn (stackmap/stackmap.h) over a context passed as arg:
 * writes the symbol and returns 1, or returns 0 so that the exports print
 * the address. */
int sym_stackmap_fn(void *arg, uint64_t addr, char *buf, size_t size);

#endif
