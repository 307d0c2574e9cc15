/*
 * maplog.c - see maplog.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stackmap/maplog.h"

#define PAGE 4096u

size_t maplog_size(void)
{
	size_t s = sizeof(struct maplog_header) + (size_t)MAPLOG_MAX * sizeof(struct rt_map);
	return (s + PAGE - 1) & ~(size_t)(PAGE - 1);
}

static struct rt_map *entries(const void *mem)
{
	return (struct rt_map *)((char *)mem + sizeof(struct maplog_header));
}

static int check(const struct maplog_header *h, size_t size)
{
	if (!h || size < maplog_size() || h->magic != MAPLOG_MAGIC || h->version != MAPLOG_VERSION ||
	    h->entry_size != sizeof(struct rt_map) || h->max != MAPLOG_MAX)
		return -EBADMSG;
	return 0;
}

int maplog_init(void *mem, size_t size)
{
	if (!mem || size < maplog_size())
		return -EINVAL;
	struct maplog_header *h = mem;
	memset(h, 0, sizeof(*h));
	h->magic = MAPLOG_MAGIC;
	h->version = MAPLOG_VERSION;
	h->entry_size = sizeof(struct rt_map);
	h->max = MAPLOG_MAX;
	return 0;
}

static int same(const struct rt_map *a, const struct rt_map *b)
{
	return a->bias == b->bias && a->start == b->start && a->end == b->end &&
	       !strcmp(a->build_id, b->build_id) && !strcmp(a->path, b->path);
}

int maplog_append(void *mem, size_t size, const struct rt_map *m, size_t n)
{
	struct maplog_header *h = mem;
	if (check(h, size) < 0)
		return -EBADMSG;
	/* Only this process writes: a plain load of our own last store. */
	uint32_t count = __atomic_load_n(&h->count, __ATOMIC_RELAXED);
	if (count > h->max)
		return -EBADMSG;
	struct rt_map *e = entries(mem);
	int added = 0;
	for (size_t i = 0; i < n; i++) {
		if (m[i].flags & RT_MAP_NO_EXEC)
			continue;    /* nothing of it can be on a stack */
		int known = 0;
		for (uint32_t k = 0; k < count && !known; k++)
			known = same(&e[k], &m[i]);
		if (known)
			continue;
		if (count == h->max) {
			h->dropped++;
			continue;
		}
		e[count] = m[i];
		count++;
		/* Pairs with the acquire load in maplog_copy(): the entry is
		 * complete before it is counted. */
		__atomic_store_n(&h->count, count, __ATOMIC_RELEASE);
		added++;
	}
	return added;
}

int maplog_copy(const void *mem, size_t size, struct rt_map **ret, size_t *ret_n)
{
	const struct maplog_header *h = mem;
	*ret = NULL;
	*ret_n = 0;
	if (check(h, size) < 0)
		return -EBADMSG;
	uint32_t count = __atomic_load_n(&h->count, __ATOMIC_ACQUIRE);
	if (count > MAPLOG_MAX)
		return -EBADMSG;
	if (!count)
		return 0;
	struct rt_map *v = malloc((size_t)count * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, entries(mem), (size_t)count * sizeof(*v));
	for (uint32_t i = 0; i < count; i++) {
		/* The writer may be hostile: terminate, check what we use. */
		v[i].path[sizeof(v[i].path) - 1] = 0;
		v[i].build_id[sizeof(v[i].build_id) - 1] = 0;
		if (v[i].end < v[i].start || v[i].path[0] == 0 ||
		    strspn(v[i].build_id, "0123456789abcdef") != strlen(v[i].build_id)) {
			free(v);
			return -EBADMSG;
		}
	}
	*ret = v;
	*ret_n = count;
	return 0;
}
