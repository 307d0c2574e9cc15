/*
 * maps.h - the objects loaded in this process, as the symboliser needs
 * them: where each object's code is, how far it was moved from its link
 * addresses, and which file it is (path and GNU build id), so that a
 * trace can be symbolised later, on this machine or another one with the
 * same binaries, without the live process.
 *
 * Runs inside the traced program (part of libringtrace, nothing printed).
 * Not async-signal-safe: it calls dl_iterate_phdr(), which takes the
 * loader's lock. Call it at start-up, after a dlopen/dlclose, and when a
 * trace is written; rt_maps_changed() says cheaply whether a new snapshot
 * is needed.
 */
#ifndef RINGTRACE_SYM_MAPS_H
#define RINGTRACE_SYM_MAPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RT_MAPS_PATH_MAX     1024
#define RT_MAPS_BUILD_ID_MAX 64      /* bytes; GNU build ids are 20 (SHA-1) */

#define RT_MAP_MAIN           0x1u   /* the program itself */
#define RT_MAP_VDSO           0x2u   /* the kernel's vDSO; path "[vdso]" */
#define RT_MAP_PATH_TRUNCATED 0x4u   /* path longer than RT_MAPS_PATH_MAX - 1 */
#define RT_MAP_NO_EXEC        0x8u   /* no executable PT_LOAD: start == end == 0 */

struct rt_map {
	uintptr_t bias;              /* load bias (dlpi_addr): run-time = link-time + bias */
	uintptr_t start;             /* lowest executable PT_LOAD segment, run-time */
	uintptr_t end;               /* end of the highest one (exclusive) */
	uint32_t flags;              /* RT_MAP_* */
	uint32_t build_id_len;       /* bytes, 0 if the object has none */
	char build_id[2 * RT_MAPS_BUILD_ID_MAX + 1];  /* lower-case hex, NUL-terminated */
	char path[RT_MAPS_PATH_MAX]; /* absolute, NUL-terminated */
};

/* dlpi_adds / dlpi_subs at the time of a snapshot: objects ever loaded and
 * unloaded in this process. */
struct rt_maps_gen {
	unsigned long long adds;
	unsigned long long subs;
};

/*
 * Describe every loaded object into maps[0..max-1], in dl_iterate_phdr
 * order (the program first). *ret_n gets the number of objects, which may
 * exceed max: the first max are filled and -ENOSPC returned. *ret_gen
 * (optional) gets the counters for rt_maps_changed(). Paths: the program
 * from readlink("/proc/self/exe"), libraries from dlpi_name, made absolute
 * through /proc/self/maps when they were loaded by a relative path.
 * Returns 0, -EINVAL, -ENOSPC.
 *
 * Allocation: none. The dl_iterate_phdr callback (which runs under the
 * loader's lock, where a malloc could deadlock against a thread that holds
 * malloc's lock and waits for the loader's) only copies into maps[]; the
 * paths are completed after it returns, with readlink/open/read.
 */
int rt_maps_snapshot(struct rt_map *maps, size_t max, size_t *ret_n, struct rt_maps_gen *ret_gen);

/* The current counters (one dl_iterate_phdr call that stops at the first
 * object). 0, or -ENOSYS if the C library does not provide them. */
int rt_maps_gen(struct rt_maps_gen *ret);

/* 1 if objects were loaded or unloaded since `since` was taken, 0 if not,
 * -ENOSYS if the C library cannot tell (then assume they were). */
int rt_maps_changed(const struct rt_maps_gen *since);

/* The entry of maps[0..n-1] whose executable range holds addr, or NULL. */
const struct rt_map *rt_maps_find(const struct rt_map *maps, size_t n, uintptr_t addr);

#ifdef __cplusplus
}
#endif

#endif
