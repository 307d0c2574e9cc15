/*
 * arena.c - a capped bump allocator (see arena.h). Single-threaded, owned
 * by one metadata object or one stream cursor.
 */
#include "util/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
