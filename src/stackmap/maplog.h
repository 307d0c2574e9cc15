/*
 * maplog.h - the log of loaded objects kept beside a stack map, in the
 * stack area of a ring-buffer region (rb.h): the traced program appends
 * what it has loaded (path, load bias, executable range, build id) when
 * the region is attached and after every dlopen; the recorder copies the
 * log into the trace (stack_files.h) so that stacks symbolise offline.
 *
 * Layout: struct maplog_header, then `max` struct rt_map entries. Entries
 * are only appended, never changed: a writer fills entry `count` and then
 * publishes count + 1 (release); readers load count (acquire) and copy.
 * Writers are serialised by the caller (one process, a mutex). Readers in
 * other processes validate everything (maplog_copy).
 */
#ifndef RINGTRACE_MAPLOG_H
#define RINGTRACE_MAPLOG_H

#include <stddef.h>
#include <stdint.h>

#include "sym/maps.h"

#define MAPLOG_MAGIC   UINT64_C(0x474f4c50414d5452) /* "RTMAPLOG" in LE */
#define MAPLOG_VERSION 1
#define MAPLOG_MAX     512           /* objects: beyond, appends are counted as dropped */

struct maplog_header {
	uint64_t magic;
	uint32_t version;
	uint32_t entry_size;         /* sizeof(struct rt_map) */
	uint32_t max;
	uint32_t count;              /* entries complete (release-stored) */
	uint32_t dropped;            /* objects that did not fit */
	uint32_t pad;
};

/* Bytes of a log of MAPLOG_MAX entries, page-aligned. */
size_t maplog_size(void);

/* Lay an empty log out in `mem` (size bytes, zeroed). */
int maplog_init(void *mem, size_t size);

/*
 * Append the objects of `m` that the log does not hold yet (same path,
 * bias and build id); returns how many were added, -EBADMSG if the log is
 * damaged. Not thread-safe: the caller serialises appends.
 */
int maplog_append(void *mem, size_t size, const struct rt_map *m, size_t n);

/* A validated copy of the entries (strings NUL-terminated, ranges sane):
 * 0, -EBADMSG or -ENOMEM. *ret is malloc'ed (NULL when empty). */
int maplog_copy(const void *mem, size_t size, struct rt_map **ret, size_t *ret_n);

#endif /* RINGTRACE_MAPLOG_H */
