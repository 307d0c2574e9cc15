/*
 * stackmap_hit.h - the stack map's hint hit, inline for the capture path
 * (src/lib/stack.c asks it for every capture that repeats its thread's
 * last one) and used by stackmap.c's get_id(): the per-CPU section that
 * counts a hit (rseq_hit()), and the check that a hint names a stack of
 * the map (hint_names()). stackmap.c says why a hit needs no entry or
 * exit.
 */
#ifndef RINGTRACE_STACKMAP_HIT_H
#define RINGTRACE_STACKMAP_HIT_H

#include <errno.h>

#include "stackmap/stackmap.h"

/*
 * STACKMAP_RSEQ: count the calls of the CPU a thread runs on with rseq
 * critical sections (x86-64 only: the sections are written in assembly).
 * Off under TSan, which cannot see the ordering they rely on (membarrier),
 * and with -DRINGTRACE_NO_RSEQ, the switch the tracepoints honour too.
 */
#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_THREAD__) && \
	!defined(RINGTRACE_NO_RSEQ) && defined(__has_include)
#  if __has_include(<sys/rseq.h>) && __has_include(<linux/membarrier.h>)
#    define STACKMAP_RSEQ 1
#  endif
#endif
#if defined(STACKMAP_RSEQ) && defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    undef STACKMAP_RSEQ
#  endif
#endif
#ifndef STACKMAP_RSEQ
#  define STACKMAP_RSEQ 0
#endif

#if STACKMAP_RSEQ
#  include <sys/rseq.h>

/*
 * A hint hit of `id` in epoch `epoch` counted in this CPU's hits, as the
 * whole of the call (get_id()): the same kind of section, its commit the
 * add. The entry's first word is its tag, id | epoch << 32. An entry of
 * this id and epoch is added to; a free one (id 0) or one of another
 * epoch is taken: count 0, then the tag, then the add (a section aborted
 * between leaves an entry of an old epoch, or this one's with a count of
 * 0: both harmless). 0 after the add; 1 without it (another CPU, aborted,
 * or the entry belongs to another id of this epoch): the caller then
 * takes the handshake's path.
 *
 * Why no handshake with reset: the only shared word this writes is the
 * entry, and a reset does not need it quiet. It bumps the epoch, and
 * readers count only entries of the current one (read_elem(),
 * cpu_counts()), so an add that lands after a reset (its tag checked
 * before) counts in the old epoch, as if made before the reset; the
 * zeroing of the entries at reset may meet such an add and leave count 1
 * with id 0, which nothing counts and the next taker zeroes.
 */
static inline __attribute__((always_inline)) int rseq_hit(struct stackmap_hit *h, uint32_t id, uint32_t epoch,
							  uint32_t cpu)
{
	uint64_t tag = (uint64_t)id | (uint64_t)epoch << 32;
	__asm__ __volatile__ goto(
		".pushsection __rseq_cs, \"aw\"\n\t"
		".balign 32\n"
		"891:\n\t"
		".long 0, 0\n\t"
		".quad 892f, 893f - 892f, 894f\n\t"
		".popsection\n\t"
		"leaq 891b(%%rip), %%rax\n\t"
		"movq %%rax, %%fs:8(%[off])\n"
		"892:\n\t"
		"cmpl %[cpu], %%fs:4(%[off])\n\t"
		"jne %l[other]\n\t"
		"movq 0(%[h]), %%rax\n\t"
		"cmpq %[tag], %%rax\n\t"
		"je 895f\n\t"
		"testl %%eax, %%eax\n\t"
		"je 896f\n\t"
		"shrq $32, %%rax\n\t"
		"cmpl %[epoch], %%eax\n\t"
		"je %l[other]\n"
		"896:\n\t"
		"movq $0, 8(%[h])\n\t"
		"movq %[tag], 0(%[h])\n"
		"895:\n\t"
		"addq $1, 8(%[h])\n"
		"893:\n\t"
		".pushsection __rseq_failure, \"ax\"\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long %c[sig]\n"
		"894:\n\t"
		"jmp %l[other]\n\t"
		".popsection"
		:
		: [off] "r"(__rseq_offset), [cpu] "r"(cpu), [h] "r"(h), [tag] "r"(tag), [epoch] "r"(epoch),
		  [sig] "i"(RSEQ_SIG)
		: "memory", "cc", "rax"
		: other);
	return 0;
other:
	return 1;
}

static inline __attribute__((always_inline)) void rseq_done(void)
{
	__asm__ __volatile__("movq $0, %%fs:8(%0)" : : "r"(__rseq_offset) : "memory");
}

/* A hint that names a stack of the map in `epoch`, counted in CPU c's
 * entries: STACKMAP_FROM_HINT with *ret_id, or -ENODATA (nothing counted,
 * rseq_hit() says when). */
static inline __attribute__((always_inline)) int hint_hit_counted(struct stackmap_cpu *c,
								   const struct stackmap_hint *hint,
								   uint32_t epoch, uint32_t cpu,
								   uint32_t *ret_id)
{
	int other = rseq_hit(&c->hit[hint->id & (STACKMAP_HITS - 1)], hint->id, epoch, cpu);
	rseq_done();
	if (other)
		return -ENODATA;
	*ret_id = hint->id;
	return STACKMAP_FROM_HINT;
}
#endif

/* The hint names a stack of this view's map in this epoch (an id in range;
 * the element of an id never changes within an epoch). */
static inline __attribute__((always_inline)) int hint_names(const struct stackmap *map,
							     const struct stackmap_hint *hint, uint32_t epoch)
{
	return hint->serial == map->serial && hint->epoch == epoch && hint->id - 1 < map->max;
}

/*
 * stackmap_get_id_hint(map, NULL, depth, cpu, hint, 1, ret_id)'s common
 * case, inline: the hint names a stack of the map in its epoch and the
 * hit is counted in this CPU's entries. STACKMAP_FROM_HINT with *ret_id,
 * or -ENODATA (nothing counted): the caller then makes that call.
 */
static inline __attribute__((always_inline)) int stackmap_hint_hit(struct stackmap *map, uint32_t cpu,
								    const struct stackmap_hint *hint,
								    uint32_t *ret_id)
{
#if STACKMAP_RSEQ
	if (!map->percpu || cpu >= map->ncpus)
		return -ENODATA;
	/* Relaxed: as get_id()'s first load of the epoch. */
	uint32_t epoch = (uint32_t)__atomic_load_n(&map->hdr->epoch, __ATOMIC_RELAXED);
	if (!hint_names(map, hint, epoch))
		return -ENODATA;
	return hint_hit_counted(&map->cpu[cpu], hint, epoch, cpu, ret_id);
#else
	(void)map; (void)cpu; (void)hint; (void)ret_id;
	return -ENODATA;
#endif
}

#endif /* RINGTRACE_STACKMAP_HIT_H */
