/*
 * startup.c - which loaded objects ld.so loaded at start-up, from public
 * information only (the program headers dl_iterate_phdr gives, and the
 * dynamic sections they point to).
 *
 * Who calls it: rt_unwind_init() (unwind.c), once per process, in normal
 * context: rt_objlist_add() inside its dl_iterate_phdr callback (the
 * loader's lock held: it never allocates), rt_objlist_startup() after.
 * A program has tens to a few hundred objects, each with a handful of
 * DT_NEEDED entries: the quadratic name matching below costs well under a
 * millisecond, once.
 *
 * Why it matters. The unwind tables registered with libunwind must
 * outlive every unwind, so their objects are made unloadable with
 * dlopen(RTLD_NOLOAD | RTLD_NODELETE). For an object loaded at start-up
 * that was never dlopen'ed, glibc answers that call by building the
 * object's search list and running _dl_init() on it: every constructor of
 * it and its dependencies that has not run yet runs then. When the
 * tables are registered from libringtrace's constructor (a recording with
 * stacks), those are the constructors of every object after libringtrace
 * in the initialisation order: they would run inside ours, out of their
 * order, under the loader's lock, and inside the tracer (which takes
 * their allocations for its own). Objects loaded at start-up are never
 * unloaded (the program's link map keeps them), so they need no pin, and
 * only the others are pinned.
 *
 * How they are told apart. glibc knows (a link map's l_type) but does
 * not say. What is public: (1) ld.so loads every start-up object before
 * it runs any of their code, so they come first in its list, and every
 * object dlopen'ed later comes after them all; (2) they are the
 * preloaded objects, which ld.so loads right after the program (and the
 * vDSO) and before the program's first DT_NEEDED, and the closure of the
 * program's and their DT_NEEDED. So the closure is followed by name as
 * ld.so resolves names (a DT_NEEDED name is an object's soname, the base
 * name of the file found on the search path, or the path itself when it
 * has a slash), each name answered by the first object in the list that
 * bears it, and the start-up set is the list's prefix up to the last
 * object reached. A name not resolved this way (an alias ld.so matched by
 * file identity, a path with $ORIGIN) leaves objects out: they are pinned
 * as before, the safe side. The one way to err the other way: a DT_NEEDED
 * alias whose start-up object bears neither that name nor that base name,
 * and an object with that base name dlopen'ed before the tables are
 * registered; then that object is not pinned.
 */
#include <stdlib.h>
#include <string.h>

#include "unwind/startup.h"

/* The dynamic section's string table [ret_str, ret_str + *ret_len) if it
 * lies inside a loaded segment of the object, else NULL. */
static const char *dyn_strtab(const struct dl_phdr_info *info, const ElfW(Dyn) *dyn, size_t ndyn, size_t *ret_len)
{
	uintptr_t str = 0;
	size_t len = 0;
	for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
		if (dyn[i].d_tag == DT_STRTAB)
			str = dyn[i].d_un.d_ptr;
		else if (dyn[i].d_tag == DT_STRSZ)
			len = dyn[i].d_un.d_val;
	}
	if (!str || !len)
		return NULL;
	/* ld.so relocates the entry in place on most targets (not in a
	 * read-only dynamic section, such as the vDSO's). */
	if (str < info->dlpi_addr)
		str += info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (str >= lo && str - lo <= ph->p_memsz && len <= ph->p_memsz - (str - lo)) {
			*ret_len = len;
			return (const char *)str;
		}
	}
	return NULL;
}

/* Copy the string at off in strtab (or "" if it is out of range) to the
 * list's text; in the counting pass, count it. RT_OBJ_NONE if no room. */
static uint32_t keep(struct rt_objlist *l, const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	if (n == max)
		n = 0;               /* not NUL-terminated inside the table */
	if (!l->obj) {
		l->text_size += n + 1;
		return 0;
	}
	if (l->text_used + n + 1 > l->text_size || l->text_used + n + 1 > RT_OBJ_NONE)
		return RT_OBJ_NONE;
	uint32_t off = (uint32_t)l->text_used;
	memcpy(l->text + off, s, n);
	l->text[off + n] = '\0';
	l->text_used += n + 1;
	return off;
}

int rt_objlist_add(struct rt_objlist *l, const struct dl_phdr_info *info)
{
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	const ElfW(Dyn) *dyn = NULL;
	size_t ndyn = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC) {
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
			ndyn = ph->p_memsz / sizeof(*dyn);
		}
	}
	size_t strsz = 0;
	const char *str = dyn ? dyn_strtab(info, dyn, ndyn, &strsz) : NULL;
	if (l->obj && l->n >= l->max) {
		l->incomplete = 1;
		return -1;
	}
	struct rt_obj o = { RT_OBJ_NONE, RT_OBJ_NONE, RT_OBJ_NONE, 0 };
	int fits = (o.name = keep(l, name, strlen(name) + 1)) != RT_OBJ_NONE;
	for (size_t i = 0; str && fits && i < ndyn && dyn[i].d_tag != DT_NULL; i++)
		if (dyn[i].d_tag == DT_SONAME && dyn[i].d_un.d_val < strsz)
			fits = (o.soname = keep(l, str + dyn[i].d_un.d_val, strsz - dyn[i].d_un.d_val)) != RT_OBJ_NONE;
	for (size_t i = 0; str && fits && i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
		if (dyn[i].d_tag != DT_NEEDED || dyn[i].d_un.d_val >= strsz)
			continue;
		uint32_t off = keep(l, str + dyn[i].d_un.d_val, strsz - dyn[i].d_un.d_val);
		fits = off != RT_OBJ_NONE;
		if (fits && o.nneeded++ == 0)
			o.needed = off;
	}
	if (!l->obj) {
		l->n++;
		return 0;
	}
	if (!fits) {
		l->incomplete = 1;   /* loaded between the passes */
		return -1;
	}
	l->obj[l->n] = o;
	return l->n++;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* The first object that answers the DT_NEEDED name `want`, or -1. */
static int resolve(const struct rt_objlist *l, const char *want)
{
	int path = strchr(want, '/') != NULL;
	for (int i = 1; i < l->n; i++) {
		const struct rt_obj *o = &l->obj[i];
		const char *name = l->text + o->name;
		if (path ? !strcmp(name, want)
			 : (o->soname != RT_OBJ_NONE && !strcmp(l->text + o->soname, want)) ||
				   !strcmp(base_name(name), want))
			return i;
	}
	return -1;
}

int rt_objlist_startup(const struct rt_objlist *l)
{
	/* glibc lists the program first, with an empty name. */
	if (l->incomplete || l->n < 1 || l->text[l->obj[0].name] != '\0')
		return 0;
	/* A breadth-first walk: queue[0..tail) are the objects reached. */
	int *queue = malloc((size_t)l->n * sizeof(*queue));
	unsigned char *reached = calloc((size_t)l->n, 1);
	if (!queue || !reached) {
		free(queue);
		free(reached);
		return 0;
	}
	int tail = 0, last = 0;
	queue[tail++] = 0;
	reached[0] = 1;
	/* Between the program and the first object its DT_NEEDED names:
	 * the vDSO and the preloaded objects. */
	int first = l->n;
	const char *s = l->text + l->obj[0].needed;
	for (uint32_t k = 0; k < l->obj[0].nneeded; k++, s += strlen(s) + 1) {
		int i = resolve(l, s);
		if (i > 0 && i < first)
			first = i;
	}
	for (int i = 1; i < first && first < l->n; i++) {
		reached[i] = 1;
		queue[tail++] = i;
	}
	for (int head = 0; head < tail; head++) {
		const struct rt_obj *o = &l->obj[queue[head]];
		if (queue[head] > last)
			last = queue[head];
		s = l->text + o->needed;
		for (uint32_t k = 0; k < o->nneeded; k++, s += strlen(s) + 1) {
			int i = resolve(l, s);
			if (i > 0 && !reached[i]) {
				reached[i] = 1;
				queue[tail++] = i;
			}
		}
	}
	free(queue);
	free(reached);
	return last + 1;
}
