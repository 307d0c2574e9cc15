/*
 * startup.h - which loaded objects ld.so loaded at start-up (startup.c).
 *
 * Who calls it: rt_unwind_init()'s registration of unwind tables
 * (unwind.c), once, in normal context: the objects loaded at start-up are
 * never unloaded and need no pinning, and pinning them would run their
 * constructors early (startup.c says why).
 */
#ifndef RINGTRACE_UNWIND_STARTUP_H
#define RINGTRACE_UNWIND_STARTUP_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#define RT_OBJ_NONE UINT32_MAX

/* One object as dl_iterate_phdr listed it: offsets in the list's text. */
struct rt_obj {
	uint32_t name;               /* dlpi_name ("" for the program) */
	uint32_t soname;             /* DT_SONAME, or RT_OBJ_NONE */
	uint32_t needed;             /* its DT_NEEDED names, each NUL-ended */
	uint32_t nneeded;
};

/*
 * The loaded objects in the loader's order, with copies of their names
 * (the objects themselves may be unloaded by another thread once the
 * loader's lock is released). Filled in two passes of dl_iterate_phdr:
 * with obj NULL, rt_objlist_add() only counts (n, and text_size: the bytes
 * the copies need); the caller allocates obj (max entries) and text
 * (text_size bytes, with room for objects loaded between the passes),
 * resets n, and calls it again for each object.
 */
struct rt_objlist {
	struct rt_obj *obj;
	int n, max;
	char *text;
	size_t text_size, text_used;
	int incomplete;              /* an object did not fit: no start-up set */
};

/* Inside the dl_iterate_phdr callback (never allocates). Returns the
 * object's index, or -1 if it was not kept (no room). */
int rt_objlist_add(struct rt_objlist *l, const struct dl_phdr_info *info);

/* The name of object i ("" for the program). */
static inline const char *rt_objlist_name(const struct rt_objlist *l, int i)
{
	return l->text + l->obj[i].name;
}

/*
 * How many objects, from the first, are certainly ones ld.so loaded at
 * start-up (0 if it cannot tell). Objects at or after it may have been
 * dlopen'ed.
 */
int rt_objlist_startup(const struct rt_objlist *l);

#endif
