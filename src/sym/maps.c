/*
 * maps.c - a snapshot of the loaded objects (paths, load bias, code
 * ranges, GNU build ids) for offline symbolisation (contract in maps.h).
 *
 * Runs in the traced program, rarely: at start-up, after dlopen/dlclose,
 * when a trace is written. It reads only what the loader mapped (program
 * headers and PT_NOTE segments are inside loaded segments) and
 * /proc/self/{exe,maps}. Nothing is allocated: the callback of
 * dl_iterate_phdr, which holds the loader's lock, only copies into the
 * caller's array.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "sym/maps.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

struct snap {
	struct rt_map *maps;
	size_t max;
	size_t n;
	struct rt_maps_gen gen;
	int have_gen;
	uintptr_t vdso;
};

static size_t align4(size_t v)
{
	return (v + 3) & ~(size_t)3;
}

/* The NT_GNU_BUILD_ID note among the PT_NOTE segments, as hex. */
static void find_build_id(const struct dl_phdr_info *info, struct rt_map *m)
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		size_t len = ph->p_memsz, off = 0;
		while (len - off >= sizeof(ElfW(Nhdr))) {
			ElfW(Nhdr) nh;
			memcpy(&nh, p + off, sizeof(nh));
			size_t name_at = off + sizeof(nh);
			if (nh.n_namesz > len - name_at)
				break;
			size_t desc_at = name_at + align4(nh.n_namesz);
			if (desc_at > len || nh.n_descsz > len - desc_at)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp(p + name_at, "GNU", 4) == 0 && nh.n_descsz > 0 &&
			    nh.n_descsz <= RT_MAPS_BUILD_ID_MAX) {
				const unsigned char *d = p + desc_at;
				for (size_t k = 0; k < nh.n_descsz; k++) {
					m->build_id[2 * k] = hex[d[k] >> 4];
					m->build_id[2 * k + 1] = hex[d[k] & 15];
				}
				m->build_id[2 * nh.n_descsz] = '\0';
				m->build_id_len = nh.n_descsz;
				return;
			}
			size_t next = desc_at + align4(nh.n_descsz);
			if (next <= off)
				break;
			off = next;
		}
	}
}

static void set_path(struct rt_map *m, const char *s, size_t len)
{
	if (len >= RT_MAPS_PATH_MAX) {
		len = RT_MAPS_PATH_MAX - 1;
		m->flags |= RT_MAP_PATH_TRUNCATED;
	}
	memcpy(m->path, s, len);
	m->path[len] = '\0';
}

static int snap_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct snap *s = arg;
	if (!s->have_gen && size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		s->gen.adds = info->dlpi_adds;
		s->gen.subs = info->dlpi_subs;
		s->have_gen = 1;
	}
	size_t i = s->n++;
	if (i >= s->max)
		return 0;            /* keep counting */
	struct rt_map *m = &s->maps[i];
	memset(m, 0, offsetof(struct rt_map, path) + 1);
	m->bias = info->dlpi_addr;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			uintptr_t a = info->dlpi_addr + ph->p_vaddr;
			if (a < lo)
				lo = a;
			if (a + ph->p_memsz > hi)
				hi = a + ph->p_memsz;
		}
	}
	if (lo < hi) {
		m->start = lo;
		m->end = hi;
	} else {
		m->flags |= RT_MAP_NO_EXEC;
	}
	find_build_id(info, m);
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	if (s->vdso && info->dlpi_addr == s->vdso) {
		m->flags |= RT_MAP_VDSO;
		set_path(m, "[vdso]", 6);
	} else if (i == 0 && name[0] == '\0') {
		m->flags |= RT_MAP_MAIN;     /* path filled after the iteration */
	} else {
		set_path(m, name, strlen(name));
	}
	return 0;
}

/* The file mapped at addr, from /proc/self/maps, into m->path: for objects
 * loaded by a relative path (dlopen("./x.so")). 0 or -1. */
static int path_from_maps(uintptr_t addr, struct rt_map *m)
{
	int fd;
	do
		fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -1;
	char buf[4096];
	char line[RT_MAPS_PATH_MAX + 128];
	size_t ll = 0;
	int found = -1, done = 0;
	while (!done) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r && !done; i++) {
			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = '\0';
			/* start-end perms offset dev inode   path */
			unsigned long long lo = 0, hi = 0;
			const char *p = line;
			while (*p && *p != '-') {
				char c = *p++;
				lo = lo << 4 | (unsigned long long)(c <= '9' ? c - '0' : c - 'a' + 10);
			}
			if (*p == '-')
				p++;
			while (*p && *p != ' ') {
				char c = *p++;
				hi = hi << 4 | (unsigned long long)(c <= '9' ? c - '0' : c - 'a' + 10);
			}
			if (lo <= addr && addr < hi) {
				for (int f = 0; f < 4 && *p; f++) {   /* skip perms, offset, dev, inode */
					while (*p == ' ')
						p++;
					while (*p && *p != ' ')
						p++;
				}
				while (*p == ' ')
					p++;
				if (*p == '/') {
					set_path(m, p, strlen(p));
					found = 0;
				}
				done = 1;
			}
			ll = 0;
		}
	}
	close(fd);
	return found;
}

int rt_maps_snapshot(struct rt_map *maps, size_t max, size_t *ret_n, struct rt_maps_gen *ret_gen)
{
	if ((!maps && max > 0) || !ret_n)
		return -EINVAL;
	struct snap s = { .maps = maps, .max = max, .vdso = getauxval(AT_SYSINFO_EHDR) };
	dl_iterate_phdr(snap_cb, &s);
	size_t filled = s.n < max ? s.n : max;
	for (size_t i = 0; i < filled; i++) {
		struct rt_map *m = &maps[i];
		if (m->flags & RT_MAP_MAIN) {
			char buf[RT_MAPS_PATH_MAX];
			ssize_t len = readlink("/proc/self/exe", buf, sizeof(buf));
			if (len > 0 && (size_t)len < sizeof(buf)) {
				set_path(m, buf, (size_t)len);
			} else if (len == (ssize_t)sizeof(buf)) {
				set_path(m, buf, sizeof(buf));
			}
		} else if (!(m->flags & RT_MAP_VDSO) && m->path[0] != '/' &&
			   !(m->flags & RT_MAP_NO_EXEC)) {
			path_from_maps(m->start, m);
		}
	}
	*ret_n = s.n;
	if (ret_gen) {
		if (s.have_gen)
			*ret_gen = s.gen;
		else
			memset(ret_gen, 0, sizeof(*ret_gen));
	}
	return s.n > max ? -ENOSPC : 0;
}

static int gen_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct snap *s = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		s->gen.adds = info->dlpi_adds;
		s->gen.subs = info->dlpi_subs;
		s->have_gen = 1;
	}
	return 1;
}

int rt_maps_gen(struct rt_maps_gen *ret)
{
	if (!ret)
		return -EINVAL;
	struct snap s = { 0 };
	dl_iterate_phdr(gen_cb, &s);
	if (!s.have_gen)
		return -ENOSYS;
	*ret = s.gen;
	return 0;
}

int rt_maps_changed(const struct rt_maps_gen *since)
{
	if (!since)
		return -EINVAL;
	struct rt_maps_gen now;
	int r = rt_maps_gen(&now);
	if (r < 0)
		return r;
	return now.adds != since->adds || now.subs != since->subs;
}

const struct rt_map *rt_maps_find(const struct rt_map *maps, size_t n, uintptr_t addr)
{
	for (size_t i = 0; maps && i < n; i++)
		if (maps[i].start <= addr && addr < maps[i].end)
			return &maps[i];
	return NULL;
}
