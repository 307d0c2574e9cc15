/*
 * vpool.c - the reader's pool of decoded values (see vpool.h). Called by
 * the stream cursor and the reader once per scope group; single-threaded.
 */
#include "read/vpool.h"

#include <stdlib.h>
#include <string.h>

#include "read/decode.h"

struct rd_vchunk {
	struct rd_vchunk *next;
	size_t cap;
	size_t used;
	struct rd_value v[];
};

#define VPOOL_CHUNK 64
#define VPOOL_CHUNK_MAX 65536

void rd_vpool_init(struct rd_vpool *p, size_t limit)
{
	p->chunks = NULL;
	p->cur = NULL;
	p->used = 0;
	p->limit = limit;
}

void rd_vpool_reset(struct rd_vpool *p)
{
	for (struct rd_vchunk *c = p->chunks; c; c = c->next)
		c->used = 0;
	p->cur = p->chunks;
	p->used = 0;
}

void rd_vpool_free(struct rd_vpool *p)
{
	if (!p)
		return;
	struct rd_vchunk *c = p->chunks;
	while (c) {
		struct rd_vchunk *n = c->next;
		free(c);
		c = n;
	}
	p->chunks = p->cur = NULL;
	p->used = 0;
}

struct rd_value *rd_vpool_alloc(struct rd_vpool *p, size_t n)
{
	static struct rd_value none;

	if (n == 0)
		return &none;
	if (n > p->limit - p->used)
		return NULL;
	/* Chunks after `cur` were used before the reset: reuse one that fits. */
	while (p->cur && p->cur->cap - p->cur->used < n && p->cur->next)
		p->cur = p->cur->next;
	struct rd_vchunk *c = p->cur;
	if (!c || c->cap - c->used < n) {
		/* Small first (most scopes have a handful of fields), then doubling. */
		size_t cap = p->cur ? p->cur->cap * 2 : VPOOL_CHUNK;
		if (cap > VPOOL_CHUNK_MAX)
			cap = VPOOL_CHUNK_MAX;
		if (cap < n)
			cap = n;
		c = malloc(sizeof(*c) + cap * sizeof(struct rd_value));
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		/* Append after cur so that the order of reuse stays simple. */
		if (p->cur) {
			c->next = p->cur->next;
			p->cur->next = c;
		} else {
			c->next = p->chunks;
			p->chunks = c;
		}
		p->cur = c;
	}
	struct rd_value *v = c->v + c->used;
	c->used += n;
	p->used += n;
	memset(v, 0, n * sizeof(*v));
	return v;
}
