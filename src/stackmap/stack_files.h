/*
 * stack_files.h - the stacks of a trace: what `ringtrace record` saves
 * under TRACE/stacks/ so that every stack id in the trace resolves, and
 * what `ringtrace stackmap DIR` and the reports read back.
 *
 * TRACE/stacks/ holds three files (babeltrace2 and our reader ignore
 * subdirectories of a trace):
 *
 *   stackmap.bin   the map in the binary export layout (stackmap.h,
 *                  magic 0x464D5342, version 2), the writer's byte order
 *   stackmap.stat  the map's counters, the lines of `stackmap --stat`:
 *                  entries: E / MAX, table_size: T, successes: S,
 *                  drops: D, success_rate: P%
 *   maps           the objects the program had loaded (at the start and
 *                  after every dlopen): a first line "# ringtrace maps 1",
 *                  then one line per object
 *                    START-END BIAS BUILD_ID PATH
 *                  START, END (exclusive) and BIAS in hex without 0x,
 *                  BUILD_ID in lower-case hex or "-" when the object has
 *                  none, PATH the rest of the line (may hold spaces).
 *
 * Readers treat every file as untrusted: a damaged file is an error
 * (-EBADMSG), never a crash; a missing maps or stackmap.stat file is not
 * an error (the stacks print as addresses, the counters as unknown).
 *
 * Command side only (allocates, does file I/O).
 */
#ifndef RINGTRACE_STACK_FILES_H
#define RINGTRACE_STACK_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "stackmap/stackmap.h"
#include "sym/maps.h"

struct stack_files {
	struct stackmap_stack *stacks;   /* by id, ascending */
	size_t nstacks;
	int has_stat;                    /* 0: no stackmap.stat */
	struct stackmap_stat stat;
	struct rt_map *maps;             /* in file order */
	size_t nmaps;
};

/*
 * Write TRACE/stacks/ (created if missing, files replaced) from a mapped
 * stack map and a list of objects. Returns 0 or a negative errno.
 */
int stack_files_write(const char *trace_dir, const struct stackmap *map, const struct rt_map *maps,
		      size_t nmaps);
/* The same, into the trace directory open as dfd (the recorder's
 * descriptor: util/outdir.h). */
int stack_files_write_at(int dfd, const struct stackmap *map, const struct rt_map *maps, size_t nmaps);

/*
 * Read TRACE/stacks/. Returns 0, -ENOENT when the trace has no stacks/
 * directory or no stackmap.bin, -EBADMSG when a file is damaged,
 * -ENOMEM. On success free with stack_files_free().
 */
int stack_files_read(const char *trace_dir, struct stack_files *ret);

/* The same, from a live map (copied; the map may change meanwhile). */
int stack_files_from_map(const struct stackmap *map, const struct rt_map *maps, size_t nmaps,
			 struct stack_files *ret);

void stack_files_free(struct stack_files *f);

#endif /* RINGTRACE_STACK_FILES_H */
