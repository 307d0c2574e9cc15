/*
 * arena.h - a capped bump allocator (tool side: the trace reader, the
 * analyses).
 *
 * rd_arena holds everything the metadata parser builds (types, names,
 * event classes); it is freed as a whole with the metadata. It is capped:
 * a hostile trace cannot make the reader use more than the limit given at
 * init, it gets NULL (the caller reports "too large"). Its pool of decoded
 * values, reset before each scope group, is read/vpool.h.
 */
#ifndef RINGTRACE_UTIL_ARENA_H
#define RINGTRACE_UTIL_ARENA_H

#include <stddef.h>

struct rd_chunk;

struct rd_arena {
	struct rd_chunk *head;
	size_t total;                /* bytes of all chunks */
	size_t limit;
};

void rd_arena_init(struct rd_arena *a, size_t limit);
void rd_arena_free(struct rd_arena *a);
/* n zeroed bytes, 16-byte aligned; NULL on ENOMEM or past the limit. */
void *rd_arena_alloc(struct rd_arena *a, size_t n);
char *rd_arena_strndup(struct rd_arena *a, const char *s, size_t n);

#endif /* RINGTRACE_UTIL_ARENA_H */
