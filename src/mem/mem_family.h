/*
 * mem_family.h - the allocation tracer's events and families, shared by
 * the preloaded library (libringtrace-malloc.so) and the readers
 * (`ringtrace report`, `convert`).
 *
 * Events of provider "mem" (payload fields in this order; x64 = pointer):
 *
 *   mem:alloc         x64 ptr; x64 site; u32 size; u32 usable; u8 family; u8 align_log2
 *   mem:alloc_large   x64 ptr; x64 site; u64 size; u64 usable; u8 family; u8 align_log2
 *   mem:free          x64 ptr; x64 site; u8 family
 *   mem:realloc       x64 old_ptr; x64 ptr; x64 site; u32 size; u32 usable; u8 family
 *   mem:realloc_large x64 old_ptr; x64 ptr; x64 site; u64 size; u64 usable; u8 family
 *   mem:mmap          x64 ptr; x64 site; u64 size; u8 family
 *   mem:munmap        x64 ptr; x64 site; u64 size
 *   mem:mremap        x64 old_ptr; x64 ptr; x64 site; u64 old_size; u64 size
 *   mem:sampling      u64 mean; u64 seed; u64 capacity; u32 status; u8 fixed_seed
 *   mem:untracked     x64 ptr
 *
 * mem:sampling marks a sampled trace (RINGTRACE_MEM_SAMPLE; docs/mem.md,
 * "Sampling"): its allocation events are samples, each of weight
 * 1 / (1 - exp(-size / mean)); mem:untracked names a sample whose end
 * will not be recorded.
 *
 * The _large forms carry sizes of 4 GiB and more; the others keep events
 * small. `site` is the return address in the caller of the allocation
 * function. An allocation that failed has ptr 0. realloc(p, 0) that frees
 * has ptr 0 and size 0; a realloc that failed (size > 0, ptr 0) leaves the
 * old block alive. usable is malloc_usable_size() of the block (0 when
 * the allocator has none); usable - size is the internal fragmentation.
 * align_log2 is log2 of the requested alignment, 0 when none was asked.
 */
#ifndef RINGTRACE_MEM_FAMILY_H
#define RINGTRACE_MEM_FAMILY_H

enum mem_alloc_family {
	MEM_A_MALLOC = 1,
	MEM_A_CALLOC,
	MEM_A_REALLOC,
	MEM_A_REALLOCARRAY,
	MEM_A_POSIX_MEMALIGN,
	MEM_A_ALIGNED_ALLOC,
	MEM_A_MEMALIGN,
	MEM_A_VALLOC,
	MEM_A_PVALLOC,
	MEM_A_NEW,                   /* operator new, all variants */
	MEM_A_NEW_ARRAY,             /* operator new[], all variants */
	MEM_A_MMAP,                  /* anonymous mmap */
	MEM_A_MREMAP,
	MEM_A_MAX
};

enum mem_free_family {
	MEM_F_FREE = 1,
	MEM_F_DELETE,                /* operator delete, all variants */
	MEM_F_DELETE_ARRAY,          /* operator delete[], all variants */
	MEM_F_MUNMAP,
	MEM_F_MAX
};

/* Which deallocation goes with an allocation: malloc-like blocks with
 * free (and realloc), new with delete, new[] with delete[], pages with
 * munmap. */
enum mem_class {
	MEM_C_MALLOC = 1,
	MEM_C_NEW,
	MEM_C_NEW_ARRAY,
	MEM_C_PAGES,
};

static inline int mem_alloc_class(unsigned fam)
{
	return fam == MEM_A_NEW ? MEM_C_NEW :
	       fam == MEM_A_NEW_ARRAY ? MEM_C_NEW_ARRAY :
	       fam == MEM_A_MMAP || fam == MEM_A_MREMAP ? MEM_C_PAGES : MEM_C_MALLOC;
}

static inline int mem_free_class(unsigned fam)
{
	return fam == MEM_F_DELETE ? MEM_C_NEW :
	       fam == MEM_F_DELETE_ARRAY ? MEM_C_NEW_ARRAY :
	       fam == MEM_F_MUNMAP ? MEM_C_PAGES : MEM_C_MALLOC;
}

static inline const char *mem_alloc_name(unsigned fam)
{
	static const char *const n[MEM_A_MAX] = {
		"?", "malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
		"memalign", "valloc", "pvalloc", "new", "new[]", "mmap", "mremap",
	};
	return fam < MEM_A_MAX ? n[fam] : "?";
}

static inline const char *mem_free_name(unsigned fam)
{
	static const char *const n[MEM_F_MAX] = { "?", "free", "delete", "delete[]", "munmap" };
	return fam < MEM_F_MAX ? n[fam] : "?";
}

#endif /* RINGTRACE_MEM_FAMILY_H */
