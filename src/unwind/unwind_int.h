/*
 * unwind_int.h - what unwind.c (the FP walk, libunwind, the dispatch),
 * fast.c (the table walk) and stackrange.c (the stacks' ranges) share
 * inside src/unwind. Not for other modules.
 */
#ifndef RINGTRACE_UNWIND_INT_H
#define RINGTRACE_UNWIND_INT_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#define RT_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

struct rt_unwind_note;               /* unwind.h */

struct rt_region {
	uintptr_t lo, hi;
};

/* stackrange.c: the stack range that holds sp (a thread's own cached),
 * see there. `current`: sp is this thread's stack pointer now. 1 for a
 * range kept for the thread's life, 0 for one valid now only, -1 none. */
int rt_stack_region(uintptr_t sp, int current, struct rt_region *ret);
/* stackrange.c, for tests: 1 makes rt_stack_region() read /proc/self/maps
 * as text even where the kernel answers PROCMAP_QUERY; 0 asks the kernel
 * again. */
void rt_maps_text_only(int on);

/* This thread's pointer (%fs:0 on x86-64: glibc's TCB, at the top of a
 * thread's stack block; 0 elsewhere). */
static inline uintptr_t rt_thread_pointer(void)
{
#if defined(__x86_64__)
	uintptr_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
#else
	return 0;
#endif
}

/* unwind.c: 1 if ra is glibc's sigreturn trampoline (learnt on first
 * sight, by its bytes, inside libc's text only). */
int rt_is_sigreturn(uintptr_t ra);
/* The trampoline if known (else 0) and libc's text, where it must be: a
 * walk tests ip == sig, or calls rt_is_sigreturn() for an ip in libc's
 * text while sig is 0. libc's text is set once by init, before any walk;
 * the trampoline is published by whichever thread sees it first
 * (relaxed: a walk that reads 0 tests the bytes, which say the same). */
extern uintptr_t rt_libc_text_lo, rt_libc_text_hi, rt_sigreturn_addr;

static inline void rt_sigreturn_hint(uintptr_t *ret_sig, uintptr_t *ret_lo, uintptr_t *ret_hi)
{
	*ret_sig = __atomic_load_n(&rt_sigreturn_addr, __ATOMIC_RELAXED);
	*ret_lo = rt_libc_text_lo;
	*ret_hi = rt_libc_text_hi;
}

/* fast.c: set-up from rt_unwind_init() (normal context, after libunwind). */
void ft_init(void);

/* Fallback causes of the table walk (the counters of struct rt_unwind_stats). */
enum {
	FT_FB_BAD_CFI,               /* a rule the tables do not express */
	FT_FB_NO_FDE,                /* an address with no FDE in its object */
	FT_FB_NO_OBJECT,             /* an address in no listed object */
	FT_FB_STACK,                 /* a CFA or a saved word outside the stack */
	FT_FB_NO_SLOT,               /* no per-thread slot free */
	FT_FB_NOT_READY,             /* tables not built (yet) */
	FT_FB_N
};

/*
 * The table walk from a frame whose return address is ip, whose CFA is sp
 * and where rbp holds bp, bounded by the stack of cur_sp (this thread's
 * stack pointer). Fills ips as rt_unwind() does; ips[0] (after skip) is
 * ip. The first `own` frames (own <= skip), and any of the allocation
 * tracer's object after them, keep frame pointers and are passed by
 * them; the tracer's frames passed beyond skip are not recorded, and
 * counted in *ret_passed. *ret_note: the note of the frames (rt_unwind_own());
 * with ret_note->lazy set, a repeated capture leaves its frames in the
 * memo (ret_note->frames) and ips unwritten. Returns the count, or -1 and *ret_cause when
 * libunwind must do this capture.
 */
int ft_walk(uintptr_t *ips, int max, int skip, int own, uintptr_t ip, uintptr_t sp, uintptr_t bp,
	    uintptr_t cur_sp, int *ret_passed, struct rt_unwind_note *ret_note, int *ret_cause);

/* Count a fallback that the caller decided (no slot etc. are counted by
 * ft_walk itself). */
void ft_count_fallback(int cause);

/* From an object's program headers (a dl_iterate_phdr callback's info):
 * its .eh_frame_hdr (PT_GNU_EH_FRAME; NULL, 0 if none) and the span
 * [lo, hi) of its executable segments (lo >= hi if none). Reads only the
 * headers: safe under the loader's lock. Both the libunwind tables
 * (unwind.c) and the fast tables (fast.c) list objects with it. */
void rt_object_span(const struct dl_phdr_info *info, const uint8_t **ret_hdr, size_t *ret_hdr_len,
		    uintptr_t *ret_lo, uintptr_t *ret_hi);

/* Verification mode (RINGTRACE_UNWIND_VERIFY=1, read at init). */
extern int ft_verify;
void ft_verify_result(const uintptr_t *fast, int n, const uintptr_t *ref, int m);

#endif
