/*
 * vpool.h - the trace reader's pool of decoded values (struct rd_value):
 * contiguous runs handed out to one scope group, reused after a reset.
 * Capped like the arena (util/arena.h): past the limit given at init the
 * caller gets NULL and reports "too large". Single-threaded, owned by one
 * stream cursor or reader.
 */
#ifndef RINGTRACE_READ_VPOOL_H
#define RINGTRACE_READ_VPOOL_H

#include <stddef.h>

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

#endif /* RINGTRACE_READ_VPOOL_H */
