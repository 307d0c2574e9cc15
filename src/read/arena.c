/*
 * arena.c - capped bump allocators (see arena.h). Single-threaded, owned by
 * one metadata object or one stream cursor.
 */
#include "read/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "read/decode.h"

struct rd_chunk {
	struct rd_chunk *next;
	size_t size;
	size_t used;
	_Alignas(16) unsigned char data[];
};

#define ARENA_CHUNK (64 * 1024)

void rd_arena_init(struct rd_arena *a, size_t limit)
{
	a->head = NULL;
	a->total = 0;
	a->limit = limit;
}

void rd_arena_free(struct rd_arena *a)
{
	if (!a)
		return;
	struct rd_chunk *c = a->head;
	while (c) {
		struct rd_chunk *n = c->next;
		free(c);
		c = n;
	}
	a->head = NULL;
	a->total = 0;
}

void *rd_arena_alloc(struct rd_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	struct rd_chunk *c = a->head;
	if (!c || c->size - c->used < n) {
		size_t size = n > ARENA_CHUNK ? n : ARENA_CHUNK;
		if (size > a->limit || a->total > a->limit - size)
			return NULL;
		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		c->used = 0;
		c->next = a->head;
		a->head = c;
		a->total += size;
	}
	void *p = c->data + c->used;
	c->used += n;
	memset(p, 0, n);
	return p;
}

char *rd_arena_strndup(struct rd_arena *a, const char *s, size_t n)
{
	if (n == SIZE_MAX)
		return NULL;
	char *d = rd_arena_alloc(a, n + 1);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

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
