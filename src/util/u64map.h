/*
 * u64map.h - a hash map from 64-bit keys to 64-bit values, for the
 * command's readers and reports (call sites, stack ids, thread ids,
 * addresses, interned names): open addressing with linear probing, at
 * most half full, power-of-two sizes, deletion by backward shift (no
 * tombstones, so lookups stay short however many entries come and go).
 * Every key is allowed, 0 included (it is kept beside the table).
 *
 * Not for the traced program: it allocates.
 */
#ifndef RINGTRACE_UTIL_U64MAP_H
#define RINGTRACE_UTIL_U64MAP_H

#include <stddef.h>
#include <stdint.h>

/* Keys are spread with rt_mix64() (sequential addresses, ids and small
 * integers over the whole table). */
#include "common/mix.h"

struct u64map {
	uint64_t *k;                 /* 0: an empty slot */
	uint64_t *v;
	size_t n;                    /* entries, key 0 included */
	size_t cap;                  /* slots: 0 or a power of two */
	int has0;
	uint64_t v0;                 /* key 0's value */
};

/* A string's key (FNV-1a): a map keyed by text holds this, and the callers
 * compare the strings (two texts may share a key: the second is put under
 * u64map_next_key(key), and so on). */
static inline uint64_t u64map_str_key(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static inline uint64_t u64map_next_key(uint64_t key)
{
	return rt_mix64(key ^ 0x9e3779b97f4a7c15ull);
}

/* The value of key, or NULL. The pointer is valid until the next put or
 * del. */
uint64_t *u64map_get(const struct u64map *m, uint64_t key);

/* The value of key, made (0) if new; *created tells which (may be NULL).
 * NULL if out of memory (the map is unchanged). */
uint64_t *u64map_put(struct u64map *m, uint64_t key, int *created);

/* Removes key; 1 if it was there. */
int u64map_del(struct u64map *m, uint64_t key);

/* Walks the entries, in no particular order: start with *pos = 0; each
 * call gives the next entry and returns 1, then 0 at the end. */
int u64map_next(const struct u64map *m, size_t *pos, uint64_t *key, uint64_t *val);

void u64map_free(struct u64map *m);

#endif
