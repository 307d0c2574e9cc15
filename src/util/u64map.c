/*
 * u64map.c - the command's hash map from 64-bit keys to 64-bit values
 * (see u64map.h).
 */
#include "util/u64map.h"

#include <errno.h>
#include <stdlib.h>

/* The slot holding key (non-zero), or the empty slot where it would go. */
static size_t slot_of(const struct u64map *m, uint64_t key)
{
	size_t mask = m->cap - 1, j = rt_mix64(key) & mask;
	while (m->k[j] && m->k[j] != key)
		j = (j + 1) & mask;
	return j;
}

static int grow(struct u64map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	uint64_t *k = calloc(cap, sizeof(*k)), *v = malloc(cap * sizeof(*v));
	if (!k || !v || cap < m->cap) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	struct u64map old = *m;
	m->k = k;
	m->v = v;
	m->cap = cap;
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.k[i])
			continue;
		size_t j = slot_of(m, old.k[i]);
		m->k[j] = old.k[i];
		m->v[j] = old.v[i];
	}
	free(old.k);
	free(old.v);
	return 0;
}

uint64_t *u64map_get(const struct u64map *m, uint64_t key)
{
	if (!key)
		return m->has0 ? (uint64_t *)&m->v0 : NULL;
	if (!m->cap)
		return NULL;
	size_t j = slot_of(m, key);
	return m->k[j] ? &m->v[j] : NULL;
}

uint64_t *u64map_put(struct u64map *m, uint64_t key, int *created)
{
	int dummy;
	if (!created)
		created = &dummy;
	*created = 0;
	if (!key) {
		if (!m->has0) {
			m->has0 = 1;
			m->v0 = 0;
			m->n++;
			*created = 1;
		}
		return &m->v0;
	}
	if (m->cap) {
		size_t j = slot_of(m, key);
		if (m->k[j])
			return &m->v[j];
	}
	/* Key 0 lives beside the table: it takes no slot. */
	if ((m->n - (size_t)m->has0 + 1) * 2 > m->cap && grow(m) < 0)
		return NULL;
	size_t j = slot_of(m, key);
	m->k[j] = key;
	m->v[j] = 0;
	m->n++;
	*created = 1;
	return &m->v[j];
}

int u64map_del(struct u64map *m, uint64_t key)
{
	if (!key) {
		if (!m->has0)
			return 0;
		m->has0 = 0;
		m->n--;
		return 1;
	}
	if (!m->cap)
		return 0;
	size_t mask = m->cap - 1, i = slot_of(m, key), j = i;
	if (!m->k[i])
		return 0;
	/* Backward shift: each following entry of the run moves into the
	 * hole unless its home slot lies cyclically in (hole, its slot]. */
	for (;;) {
		j = (j + 1) & mask;
		if (!m->k[j])
			break;
		size_t home = rt_mix64(m->k[j]) & mask;
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			m->k[i] = m->k[j];
			m->v[i] = m->v[j];
			i = j;
		}
	}
	m->k[i] = 0;
	m->n--;
	return 1;
}

int u64map_next(const struct u64map *m, size_t *pos, uint64_t *key, uint64_t *val)
{
	while (*pos < m->cap) {
		size_t i = (*pos)++;
		if (m->k[i]) {
			*key = m->k[i];
			*val = m->v[i];
			return 1;
		}
	}
	/* Key 0, beside the table, comes last. */
	if (*pos == m->cap && m->has0) {
		(*pos)++;
		*key = 0;
		*val = m->v0;
		return 1;
	}
	return 0;
}

void u64map_free(struct u64map *m)
{
	free(m->k);
	free(m->v);
	*m = (struct u64map){ 0 };
}
