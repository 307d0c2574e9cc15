/*
 * unwind.h - capture the return addresses of the calling thread, inside
 * the traced program, from any context: normal code, malloc hooks, and
 * signal handlers (SIGPROF sampling, tracepoints fired in handlers).
 * docs/stack-capture.md describes the methods, their rules and their cost.
 *
 * Who calls what: the library's constructor calls rt_unwind_init() once;
 * any thread then calls rt_unwind() as often as it likes (the stack map
 * turns the result into a 4-byte id). Nothing here prints, aborts, blocks
 * on a lock that a signal handler's victim may hold, or calls malloc on
 * the capture path; rt_unwind() preserves errno.
 *
 * Two methods:
 *
 *   RT_UNWIND_FP         walks the frame-pointer chain (%rbp). Every frame
 *                        pointer is checked before it is read: 8-byte
 *                        aligned, strictly above the previous one, and
 *                        inside the stack that holds the current stack
 *                        pointer (its bounds come from /proc/self/maps,
 *                        read with open/read/close once per thread and
 *                        cached in initial-exec TLS). It crosses signal
 *                        frames (glibc's sigreturn trampoline, then the
 *                        interrupted context's rip/rsp/rbp). It is exact
 *                        only for code built with -fno-omit-frame-pointer:
 *                        through Debian's libraries (built without frame
 *                        pointers) it loses or invents frames, but never
 *                        reads outside the stack.
 *
 *   RT_UNWIND_LIBUNWIND  libunwind's unw_backtrace() (its fast x86-64
 *                        trace with a per-thread frame cache, DWARF CFI
 *                        on a miss): right through any code that has
 *                        .eh_frame, which is all of Debian. libunwind is
 *                        dlopen'ed by rt_unwind_init(), see unwind.c for
 *                        why and for the three ways it could deadlock in a
 *                        signal handler and what is done about each; the
 *                        result of that is the error codes below.
 *
 * and a third, the default:
 *
 *   RT_UNWIND_TABLES     compact unwind tables built from each object's
 *                        .eh_frame, a per-thread cache of their rows and a
 *                        memo of the thread's last walk (src/unwind/fast.c):
 *                        libunwind's stacks (checked by a verification
 *                        mode) at close to the FP walk's cost, libunwind
 *                        for the captures the tables cannot answer.
 *
 * RT_UNWIND_DEFAULT is RT_UNWIND_TABLES, chosen by measurement
 * (bench/unwind.sh; figures and commands in docs/stack-capture.md): at 16
 * frames on the project's AMD VM it costs about 1.3-1.4 times the FP
 * walk and a third of libunwind, and gets all 16 frames right on a chain
 * built without frame pointers, where the FP walk gets none. Programs
 * built with -fno-omit-frame-pointer may ask for RT_UNWIND_FP; any
 * caller falls back to it when the other methods answer -ENOSYS, -EAGAIN
 * or -EBUSY.
 */
#ifndef RINGTRACE_UNWIND_H
#define RINGTRACE_UNWIND_H

#include <stdint.h>

#define RT_UNWIND_MAX_DEPTH 64
#define RT_UNWIND_MAX_SKIP  64

#define RT_UNWIND_FP        1
#define RT_UNWIND_LIBUNWIND 2
#define RT_UNWIND_TABLES    3
#define RT_UNWIND_DEFAULT   RT_UNWIND_TABLES

/*
 * One-time set-up; call it from a library constructor or any place that is
 * not a signal handler (it allocates, dlopens libunwind.so.8, walks the
 * loaded objects and registers their unwind tables with libunwind, see
 * unwind.c). Idempotent and thread-safe. Returns 0, or -ENOENT when
 * libunwind cannot be loaded or lacks a function we need (the FP method
 * works regardless).
 */
int rt_unwind_init(void);

/*
 * Make the libunwind method usable in the calling thread when libunwind's
 * thread-local storage is dynamic (libunwind was dlopen'ed rather than
 * loaded at start-up: its per-thread block is then allocated with malloc
 * on the thread's first use, which a signal handler must never do). Call
 * it from normal code in each thread that may capture from a signal
 * handler (e.g. where the tracer first sees a thread). Not
 * async-signal-safe. Returns 0, or -ENOSYS without libunwind. Threads that
 * did not call it get -EAGAIN from the libunwind method until they do.
 */
int rt_unwind_thread_init(void);

/*
 * Capture up to `max` (<= RT_UNWIND_MAX_DEPTH) return addresses of the
 * calling thread into ips[], innermost first, after dropping the `skip`
 * (<= RT_UNWIND_MAX_SKIP) innermost ones. With skip 0, ips[0] is the
 * return address into the function that called rt_unwind() (as glibc's
 * backtrace()). Where the walk crosses a signal frame, the trampoline's
 * address and then the interrupted instruction's address (not a return
 * address) are reported, for both methods.
 *
 * Returns the number of addresses stored (0 if the stack ends or cannot be
 * walked further), or:
 *   -EINVAL   NULL ips with max > 0, max or skip out of range, unknown method
 *   -ENOSYS   libunwind method without a successful rt_unwind_init()
 *   -EAGAIN   libunwind method in a thread that needs rt_unwind_thread_init()
 *   -EBUSY    libunwind method re-entered on this thread (a signal handler
 *             interrupted a capture): libunwind's cursor and per-thread
 *             cache are not re-entrant
 * Async-signal-safe, never blocks, never calls malloc, preserves errno.
 */
int rt_unwind(uintptr_t *ips, int max, int skip, int method);

/*
 * A note kept with a walk's frames. The table walk remembers each
 * thread's last full walk (its memo); when a capture's frames are exactly
 * the memo's, rt_unwind_own() hands out its note: RT_UNWIND_NOTE_WORDS
 * words the caller may read and write, which describe those frames until
 * the memo is replaced (each word carries the memo's sequence number: a
 * word written for an older memo reads as absent). Reads and writes are
 * plain: the caller makes sure no capture of the same thread (a signal
 * handler's) reads or writes notes while it does (src/lib/stack.c: only
 * the outermost probe of a thread does).
 */
#define RT_UNWIND_NOTE_WORDS 3

struct rt_unwind_note {
	uint64_t *cell;              /* NULL: no note for this capture */
	uint32_t seq;
	/* Set (with RT_UNWIND_LAZY): the frames, still in the memo, that
	 * were not copied into ips (rt_unwind_note_frames()); NULL: they are
	 * in ips. */
	const uintptr_t *frames;
	const uint32_t *memo_seq;    /* the memo's sequence number, with frames */
	uint32_t lazy;               /* in, set by rt_unwind_own() and rt_unwind_tables_here() */
};

/*
 * Or-ed into rt_unwind_own()'s method: a capture whose frames are exactly
 * the memo's leaves them there (note->frames) instead of copying them
 * into ips, for a caller that needs only the note's words most of the
 * time (the stack map's id kept in them). Skipping the copy outright
 * saved 3-4 ns of a 57 ns tracepoint with a 16-frame stack; the
 * bookkeeping of a copy made later leaves about 1 ns of it.
 */
#define RT_UNWIND_LAZY 0x100

/*
 * The n frames of a lazy capture into ips. 0 if the memo was recorded
 * again since the capture (by signal handlers' captures of this thread
 * that ran in between): ips may then be torn, and the caller captures
 * again. The memo's number is bumped before it is rewritten, and read
 * here after the copy; both in one thread, so a compiler barrier orders
 * them.
 */
static inline int rt_unwind_note_frames(const struct rt_unwind_note *n, uintptr_t *ips, int cnt)
{
	for (int i = 0; i < cnt; i++)
		ips[i] = __atomic_load_n(&n->frames[i], __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(n->memo_seq, __ATOMIC_RELAXED) == n->seq;
}

/* 1 and v[] if the note holds words written for these frames (each in
 * the low half of its v[i]). */
static inline int rt_unwind_note_get(const struct rt_unwind_note *n, uint64_t v[RT_UNWIND_NOTE_WORDS])
{
	for (int i = 0; i < RT_UNWIND_NOTE_WORDS; i++) {
		uint64_t w = __atomic_load_n(&n->cell[i], __ATOMIC_RELAXED);
		if ((uint32_t)(w >> 32) != n->seq)
			return 0;
		v[i] = (uint32_t)w;
	}
	return 1;
}

static inline void rt_unwind_note_set(const struct rt_unwind_note *n, const uint32_t v[RT_UNWIND_NOTE_WORDS])
{
	for (int i = 0; i < RT_UNWIND_NOTE_WORDS; i++)
		__atomic_store_n(&n->cell[i], (uint64_t)n->seq << 32 | v[i], __ATOMIC_RELAXED);
}

/*
 * The same for libringtrace's capture path: the first `own` (<= skip) of
 * the skipped frames are functions of libringtrace built with frame
 * pointers, passed by them with the tables method; so are the frames of
 * the allocation tracer's object (libringtrace-malloc.so) that follow,
 * which are not recorded either (readers drop them: src/analyze/frames.h).
 * The other methods capture as rt_unwind() does. *ret_note (if not NULL)
 * gets the note of the capture's frames, or a NULL cell. Unlike
 * rt_unwind(), it may change errno: its caller (rb_stack_capture) keeps
 * errno itself, once for the whole capture. With RT_UNWIND_LAZY or-ed
 * into method, the frames of a capture that repeats the memo may stay
 * there (ret_note->frames; ret_note required).
 */
int rt_unwind_own(uintptr_t *ips, int max, int skip, int own, int method, struct rt_unwind_note *ret_note);

#if defined(__x86_64__)
/*
 * rt_unwind_own() with the tables, inlined into the capture path
 * (src/lib/stack.c): the walk starts from the frame of the function this
 * is inlined into, which keeps its frame pointer, with no function of
 * ours between (a tracepoint with a stack: 3 ns less than through
 * rt_unwind_own(), a twentieth of it). skip and own count from that
 * function's caller (its own frame is not among them). -1 when the
 * tables cannot do the capture (counted by cause): the caller asks
 * libunwind. In verification mode libunwind checks it, as it checks
 * rt_unwind_own()'s. The note as rt_unwind_own()'s (frames left in the
 * memo if `lazy`).
 */
int rt_unwind_walk(uintptr_t *ips, int max, int skip, int own, uintptr_t ip, uintptr_t sp, uintptr_t bp,
		   uintptr_t cur_sp, int *ret_passed, struct rt_unwind_note *ret_note, int *ret_cause);
extern int rt_unwind_verifying;
/*
 * The thread's last capture that repeated the memo, again: a capture from
 * the same frame f (the capturing function's: rt_unwind_tables_here()'s
 * start) with the same skip, own and max, whose every stack word read is
 * the same. Returns its frames (lazy, in *ret_note) with the note's words
 * in w, *ret_passed as rt_unwind_walk()'s; -1 when it does not apply or
 * the note holds nothing (the caller then walks). Only for the outermost
 * capture of a thread (its notes' rule); async-signal-safe.
 */
int rt_unwind_again(uintptr_t f, uintptr_t cur_sp, int skip, int own, int max, uint64_t w[RT_UNWIND_NOTE_WORDS],
		    int *ret_passed, struct rt_unwind_note *ret_note);

/*
 * Its filter, inline: the frame, the stack pointer and the return address
 * into the program of that capture (fast.c writes them with f last, after
 * voiding f). 1 when rt_unwind_again() may apply; 0 rejects most captures
 * that are not a repeat (another allocation site, the same frames of
 * ours) at three loads. Only a filter: a handler may rewrite it between
 * these loads, and rt_unwind_again() checks everything again as a
 * capture. The word read lies between cur_sp and the top of the stack
 * this thread keeps for its life (fast.c records the filter only for a
 * capture there): with cur_sp the same, it is mapped, whatever the
 * stack holds now.
 */
struct rt_unwind_again_key {
	uintptr_t f, cur_sp, ra_at, ra;
};
extern __thread struct rt_unwind_again_key rt_unwind_again_key __attribute__((tls_model("initial-exec")));

static inline __attribute__((always_inline)) int rt_unwind_again_maybe(uintptr_t f, uintptr_t cur_sp)
{
	const struct rt_unwind_again_key *k = &rt_unwind_again_key;
	return k->f == f && k->cur_sp == cur_sp && *(const volatile uintptr_t *)k->ra_at == k->ra;
}
void rt_unwind_verify_own(const uintptr_t *ips, int n, int max, int skip);

static inline __attribute__((always_inline)) int rt_unwind_tables_here(uintptr_t *ips, int max, int skip, int own,
									 int lazy, struct rt_unwind_note *note)
{
	const uintptr_t *f = (const uintptr_t *)__builtin_frame_address(0);
	uintptr_t sp;
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	int passed, cause;
	/* The walk sets the note's cell and frames. */
	note->lazy = (uint32_t)lazy;
	int n = rt_unwind_walk(ips, max, skip, own, f[1], (uintptr_t)f + 16, f[0], sp, &passed, note, &cause);
	if (n >= 0 && __builtin_expect(rt_unwind_verifying, 0)) {
		/* Lazy frames are compared too (the caller may copy them
		 * again). */
		if (note->frames)
			(void)rt_unwind_note_frames(note, ips, n);
		/* From where rt_unwind_own() would have been called: one
		 * frame more to skip (the caller's own). */
		rt_unwind_verify_own(ips, n, max, skip + 1 + passed);
	}
	return n;
}
#endif

/*
 * RT_UNWIND_TABLES (src/unwind/fast.c): compact unwind tables built from
 * each loaded object's .eh_frame when the objects are listed (init, and
 * rt_unwind_refresh()), a per-thread cache of the rows of the addresses
 * seen, and libunwind for every capture the tables cannot answer (a rule
 * they do not express, an address in no listed object, a CFA outside the
 * stack, no per-thread slot): the same result as RT_UNWIND_LIBUNWIND at a
 * fraction of its cost. Its error codes are libunwind's.
 *
 * RINGTRACE_UNWIND_VERIFY=1 (read by rt_unwind_init) makes every capture
 * the tables answered run libunwind too and count the mismatches;
 * RINGTRACE_UNWIND_STATS=FILE appends the counters below to FILE at exit.
 */

/*
 * List the loaded objects again and build the tables of new ones; unmap
 * those of objects unloaded (after a grace period: no capture still reads
 * them). Normal context only (takes the loader's lock, may wait for
 * captures of other threads to finish); cheap when nothing was loaded or
 * unloaded. Returns 0, -ENOSYS before init, -EBUSY when another refresh
 * runs or the caller is inside a capture.
 */
int rt_unwind_refresh(void);

/* 1 when a capture met an address in no listed object (or found no free
 * per-thread slot) since the last refresh: a caller in normal context
 * should call rt_unwind_refresh(). Async-signal-safe; inline, as every
 * capture asks (the flag is fast.c's, relaxed: a hint). */
extern uint32_t rt_unwind_refresh_wanted;

static inline int rt_unwind_want_refresh(void)
{
	return __atomic_load_n(&rt_unwind_refresh_wanted, __ATOMIC_RELAXED) != 0;
}

struct rt_unwind_stats {
	uint64_t captures;           /* table walks started */
	uint64_t fast;               /* ... answered by the tables */
	uint64_t frames;             /* frames of those */
	uint64_t cache_hits;         /* rows found in the per-thread cache */
	uint64_t cache_misses;       /* rows looked up in an object's table */
	uint64_t memo_frames;        /* frames taken from the thread's last walk */
	/* Captures handed the note of an earlier walk with the same frames
	 * (a walk that records a new memo hands out its void note: not
	 * counted); the stack map answers them from the note's words. */
	uint64_t noted;
	uint64_t repeats;            /* ... of which found so at their first state (no step) */
	uint64_t again;              /* ... of which answered by rt_unwind_again() */
	uint64_t fb_bad_cfi;         /* fallbacks to libunwind, by cause */
	uint64_t fb_no_fde;
	uint64_t fb_no_object;
	uint64_t fb_stack;
	uint64_t fb_no_slot;
	uint64_t fb_not_ready;
	uint64_t verified;           /* verification: same as libunwind */
	uint64_t mismatches;         /* verification: different */
	uint64_t verify_skipped;     /* verification: libunwind unusable there */
	uint64_t objects;            /* objects with a table now */
	uint64_t rows;               /* their rows */
	uint64_t bad_rows;           /* rows that send a frame to libunwind */
	uint64_t refreshes;
};
int rt_unwind_get_stats(struct rt_unwind_stats *ret);

/* What rt_unwind_init() found, for tests, benchmarks and `ringtrace`'s
 * diagnostics. */
struct rt_unwind_info {
	int libunwind;               /* 1 if the libunwind method is usable */
	int static_tls;              /* 1 if libunwind's TLS is static (no per-thread init) */
	int tables;                  /* objects whose .eh_frame_hdr was registered */
	uintptr_t sigreturn;         /* glibc's sigreturn trampoline, 0 if not found yet */
};
int rt_unwind_get_info(struct rt_unwind_info *ret);

#endif
