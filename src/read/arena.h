/*
 * arena.h - bump allocators for the trace reader.
 *
 * rd_arena holds everything the metadata parser builds (types, names,
 * event classes); it is freed as a whole with the metadata. rd_vpool holds
 * decoded values (struct rd_value) and is reset before each scope group.
 * Both are capped: a hostile trace cannot make the reader use more than the
 * limit given at init, it gets NULL (the caller reports "too large").
 */
#ifndef RINGTRACE_READ_ARENA_H
#define RINGTRACE_READ_ARENA_H

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

struct rd_value;

/* Contiguous runs of values, reusable after a reset. */
struct rd_vpool {
	struct rd_vchunk *chunks;    /* all chunks, kept across resets */
	struct rd_vchunk *cur;
	size_t used;                 /* values handed out since the reset */
	size_t limit;                /* values between two resets */
};

void rd_vpool_init(struct rd_vpool *p, size_t limit);
void rd_vpool_reset(struct rd_vpool *p);
void rd_vpool_free(struct rd_vpool *p);
/* n zeroed values; NULL past the limit or on ENOMEM. n may be 0. */
struct rd_value *rd_vpool_alloc(struct rd_vpool *p, size_t n);

#endif /* RINGTRACE_READ_ARENA_H */
