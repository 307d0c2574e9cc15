/*
 * stack.c - see stack.h.
 *
 * The capture path (rb_stack_capture) runs in probes: it unwinds into a
 * buffer on the caller's stack and asks the lock-free map for an id; it
 * never locks, allocates or prints. Logging the loaded objects takes a
 * mutex and allocates, and runs only outside probes.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <signal.h>
#include <unistd.h>

#include "lib/probe.h"
#include "lib/registry.h"
#include "lib/stack.h"
#include "ringbuf/rb.h"
#include "stackmap/maplog.h"
#include "stackmap/stackmap.h"
#include "stackmap/stackmap_hit.h"
#include "sym/maps.h"
#include "unwind/unwind.h"

/*
 * Frames between rt_unwind() and the function that fired the event:
 * rb_stack_capture, ringtrace__reserve_slow (or ringtrace__stack_id),
 * the event's probe (or stack_id's caller). All are out of line
 * (noinline here, exported there; the probe is noinline). The first two
 * are libringtrace's, built with frame pointers (mk/stack.mk): the walk
 * passes them by those, and the probe too when it is the allocation
 * tracer's (rt_unwind_own()). ringtrace__reserve_stack() and
 * ringtrace__stack_id() capture in their own frames (capture_in()
 * inlined): one of each fewer.
 */
#define OWN_FRAMES 3
#define OWN_FP_FRAMES 2

struct lib_stack {
	struct stackmap map;
	void *log;
	size_t log_size;
	struct rt_maps_gen gen;
};

/* Serialises appends to every region's log (maplog.h). */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

int stack_attach(struct ringtrace__rb *rb)
{
	void *log, *mem;
	size_t log_size, size;
	if (rb_stack_area(rb, &log, &log_size, &mem, &size) < 0)
		return 0;
	struct lib_stack *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	int r = stackmap_open(mem, size, &s->map);
	if (r < 0) {
		free(s);
		return r;
	}
	/* Per-CPU counting needs rseq; without it (RINGTRACE_NO_RSEQ, or
	 * none registered) the map's atomics are used. */
	if (!rb->use_rseq)
		s->map.percpu = 0;
	s->log = log;
	s->log_size = log_size;
	rb->stk = s;
	if (rb->stacks || reg_has_stack_events())
		stack_unwind_prepare();
	stack_log_maps(rb, 1);
	return 0;
}

/*
 * libunwind is dlopen'ed, not linked, and only once a stack can be
 * captured (a region with `stacks`, or an event declared with a stack):
 * loading it registers the unwind tables of the loaded objects, which
 * keeps them loaded (docs/stack-capture.md), a change a program that
 * captures no stack must not see. Until then, and if it cannot be
 * loaded, captures walk frame pointers.
 */
static int unwind_method;            /* 0 until prepared; read by probes */

int stack_capturing(void)
{
	return __atomic_load_n(&unwind_method, __ATOMIC_ACQUIRE) != 0;
}

/*
 * The method: the unwind tables (exact, libunwind as their fallback) by
 * default. RINGTRACE_UNWIND=libunwind or =fp chooses another, for
 * comparisons (bench/mem.sh runs both in the same round).
 */
void stack_unwind_prepare(void)
{
	if (__atomic_load_n(&unwind_method, __ATOMIC_ACQUIRE))
		return;
	const char *want = getenv("RINGTRACE_UNWIND");
	int m = RT_UNWIND_DEFAULT;
	if (want && !strcmp(want, "libunwind"))
		m = RT_UNWIND_LIBUNWIND;
	else if (want && !strcmp(want, "fp"))
		m = RT_UNWIND_FP;
	/* Without libunwind the tables still work (rb_stack_capture then
	 * falls back to the FP walk where they cannot answer). */
	if (rt_unwind_init() != 0 && m == RT_UNWIND_LIBUNWIND)
		m = RT_UNWIND_FP;
	/* Pairs with the acquire load in rb_stack_capture(). */
	__atomic_store_n(&unwind_method, m, __ATOMIC_RELEASE);
}

void stack_detach(struct ringtrace__rb *rb)
{
	free(rb->stk);
	rb->stk = NULL;
}

void stack_log_maps(struct ringtrace__rb *rb, int force)
{
	struct lib_stack *s = rb ? rb->stk : NULL;
	if (!s)
		return;
	pthread_mutex_lock(&log_lock);
	if (force || rt_maps_changed(&s->gen) != 0) {
		/* 600 KiB for a moment: mapped and unmapped rather than
		 * malloc'ed, so that the program's heap does not keep it. */
		size_t bytes = MAPLOG_MAX * sizeof(struct rt_map);
		struct rt_map *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		size_t n = 0;
		if (m != MAP_FAILED) {
			if (rt_maps_snapshot(m, MAPLOG_MAX, &n, &s->gen) >= 0)
				(void)maplog_append(s->log, s->log_size, m, n);
			munmap(m, bytes);
		}
	}
	pthread_mutex_unlock(&log_lock);
}

/*
 * libunwind's per-thread block, when its TLS is dynamic (dlopen'ed), is
 * malloc'ed on the thread's first use: never from a signal handler, whose
 * thread may be inside malloc. A handler runs with its signal blocked
 * (unless SA_NODEFER), so the block is set up in a capture that finds
 * the thread's signal mask empty; until then captures walk frame
 * pointers (libringtrace's own frames keep them, so the walk reaches the
 * code that fired the event, and beyond where that code keeps them too).
 * One rt_sigprocmask per capture for a thread's first 64, then one per 64
 * (a thread that blocks signals for good stays on the FP walk). With the
 * tables and past those 64, only the captures they cannot answer ask
 * (unwind_here()), unless libunwind checks every capture (verification):
 * a server's threads that keep their signals blocked made one system
 * call per 64 captures otherwise.
 */
static __thread uint32_t thread_ready __attribute__((tls_model("initial-exec")));
static __thread uint32_t thread_tries __attribute__((tls_model("initial-exec")));

static void thread_prepare(void)
{
	uint32_t t = thread_tries++;
	if (t >= 64 && (t & 63))
		return;
	uint64_t mask = ~UINT64_C(0);
	/* The raw system call: async-signal-safe, nothing of libc's. */
	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask, sizeof(mask)) == 0 && mask == 0 &&
	    rt_unwind_thread_init() == 0)
		thread_ready = 1;
}

/* Whether this capture asks to prepare the thread (thread_prepare()). */
static inline int prepare_now(int method)
{
	if (thread_ready || method == RT_UNWIND_FP)
		return 0;
#if defined(__x86_64__)
	if (method == RT_UNWIND_TABLES && thread_tries >= 64 && !rt_unwind_verifying)
		return 0;
#endif
	return 1;
}

/*
 * A capture met code in an object loaded since the tables were built (or
 * the per-thread slots ran out): list the objects again, from a capture
 * in normal context only (the same signal-mask test as above: a handler
 * runs with its signal blocked), at most once per 256 such captures of a
 * thread (an address in no object at all, JIT code, keeps asking).
 */
static __thread uint32_t refresh_tries __attribute__((tls_model("initial-exec")));

static void refresh_tables(void)
{
	if (refresh_tries++ & 255)
		return;
	uint64_t mask = ~UINT64_C(0);
	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask, sizeof(mask)) == 0 && mask == 0)
		(void)rt_unwind_refresh();
}

/* This thread's errno, found once: `errno` is a call into libc
 * (__errno_location) on every capture otherwise. Async-signal-safe: the
 * address of a thread's errno never changes. */
static __thread int *errno_at __attribute__((tls_model("initial-exec")));

/* The CPU whose counters the stack map's calls use: rseq's, else the
 * kernel's answer (errno kept). */
static inline __attribute__((always_inline)) uint32_t capture_cpu(const struct ringtrace__rb *rb)
{
	int cpu = -1;
#if RINGTRACE__RSEQ
	if (rb->use_rseq)
		cpu = ringtrace__rseq_cpu();
#else
	(void)rb;
#endif
	if (cpu < 0) {
		int saved = errno;
		cpu = sched_getcpu();
		errno = saved;
	}
	return (uint32_t)(cpu < 0 ? 0 : cpu);
}

/* The id an earlier answer of the map names (a note's words), counted as
 * a hit of its stack: STACKMAP_FROM_HINT with *id, else the map's
 * refusal (stackmap_get_id_hint() without frames). */
static inline __attribute__((always_inline)) int id_from_hint(struct lib_stack *s, uint32_t cpu,
							      struct stackmap_hint *h, uint32_t depth, uint32_t *id)
{
	int r = stackmap_hint_hit(&s->map, cpu, h, id);
	if (r != STACKMAP_FROM_HINT)
		r = stackmap_get_id_hint(&s->map, NULL, depth, cpu, h, 1, id);
	return r;
}

/* The frames above the function that captures (this is inlined into it
 * through capture_in(): `frames` counts its frame), by the tables or
 * libunwind, else by frame pointers:
 * re-entered from a signal handler (-EBUSY), or a thread libunwind
 * cannot serve. */
static inline __attribute__((always_inline)) int unwind_here(uintptr_t *buf, int method, const int frames,
							     const int fp_frames, struct rt_unwind_note *note)
{
#if defined(__x86_64__)
	/* The tables' walk inlined here (from this function's frame: one
	 * frame fewer to skip), libunwind where it cannot do the capture. */
	if ((method & ~RT_UNWIND_LAZY) == RT_UNWIND_TABLES) {
		int n = rt_unwind_tables_here(buf, STACKMAP_MAX_DEPTH, frames - 1, fp_frames - 1,
					      method & RT_UNWIND_LAZY, note);
		if (n >= 0)
			return n;
		method = RT_UNWIND_LIBUNWIND;
		/* Only libunwind needs the thread prepared: a thread whose
		 * signals stay blocked asks at its fallbacks, not at every
		 * capture. */
		if (!thread_ready)
			thread_prepare();
	}
#endif
	int n = rt_unwind_own(buf, STACKMAP_MAX_DEPTH, frames, fp_frames, method, note);
	if (n < 0 && (method & ~RT_UNWIND_LAZY) != RT_UNWIND_FP)
		n = rt_unwind(buf, STACKMAP_MAX_DEPTH, frames, RT_UNWIND_FP);
	return n;
}

/*
 * rb_stack_capture() inlined into the function that captures: `frames`
 * to skip counting that function, the first `fp_frames` of them
 * libringtrace's, passed by frame pointers (rt_unwind_own()).
 */
static inline __attribute__((always_inline)) uint32_t capture_in(struct ringtrace__rb *rb, uint64_t *ips,
								  uint32_t *ret_depth, const int frames,
								  const int fp_frames)
{
	struct lib_stack *s = rb->stk;
	*ret_depth = 0;
	if (!s)
		return RINGTRACE__STACK_NONE;
#if defined(__x86_64__)
	/*
	 * The thread's last capture that repeated its memo, again (an
	 * allocation site in a loop): its words checked, its id from the
	 * note, nothing else of the walk (rt_unwind_again()). It touches
	 * neither errno nor libunwind. The outermost probe only, as for the
	 * notes below; otherwise, or if the map does not take the note's id,
	 * the walk as ever.
	 */
	const uintptr_t f = (uintptr_t)__builtin_frame_address(0);
	uintptr_t sp;
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	if (rt_unwind_again_maybe(f, sp) && ringtrace__tls.nest == 1 &&
	    __atomic_load_n(&unwind_method, __ATOMIC_ACQUIRE) == RT_UNWIND_TABLES) {
		uint64_t w[RT_UNWIND_NOTE_WORDS];
		struct rt_unwind_note note;
		int passed;
		int n = rt_unwind_again(f, sp, frames - 1, fp_frames - 1, STACKMAP_MAX_DEPTH, w, &passed, &note);
		if (n > 0) {
			if (__builtin_expect(rt_unwind_verifying, 0)) {
				/* Checked as the walk's are (rt_unwind_tables_here()),
				 * with libunwind: errno kept, its mallocs the tracer's. */
				int saved = errno;
				uintptr_t *v = (uintptr_t *)ips;
				ringtrace__tls.busy++;
				if (rt_unwind_note_frames(&note, v, n))
					rt_unwind_verify_own(v, n, STACKMAP_MAX_DEPTH, frames + passed);
				ringtrace__tls.busy--;
				errno = saved;
			}
			struct stackmap_hint h = { (uint32_t)w[0], (uint32_t)w[1], (uint32_t)w[2] };
			uint32_t id;
			if (id_from_hint(s, capture_cpu(rb), &h, (uint32_t)n, &id) == STACKMAP_FROM_HINT)
				return id;
		}
	}
#endif
	int *ep = errno_at;
	if (__builtin_expect(!ep, 0))
		ep = errno_at = &errno;
	int saved_errno = *ep;
	int method = __atomic_load_n(&unwind_method, __ATOMIC_ACQUIRE);
	if (!method)
		method = RT_UNWIND_FP;
	/* libunwind may allocate (its per-thread caches): the tracer's. */
	ringtrace__tls.busy++;
	if (prepare_now(method))
		thread_prepare();
	else if (__builtin_expect(rt_unwind_want_refresh(), 0) && method == RT_UNWIND_TABLES)
		refresh_tables();
#if UINTPTR_MAX == UINT64_MAX
	/* The same unsigned long on LP64: the walk fills ips itself. */
	uintptr_t *buf = (uintptr_t *)ips;
#else
	uintptr_t buf[STACKMAP_MAX_DEPTH];
#endif
	/* Lazy: the frames of a capture that repeats the last one stay in
	 * the unwinder's memo until the note's id turns out not to do
	 * (below). */
	struct rt_unwind_note note;
	int n = unwind_here(buf, method | RT_UNWIND_LAZY, frames, fp_frames, &note);
	ringtrace__tls.busy--;
	if (n <= 0) {
		*ep = saved_errno;
		return RINGTRACE__STACK_NONE;
	}
	const uint32_t ucpu = capture_cpu(rb);
	*ep = saved_errno;
	uint32_t id;
	/*
	 * The same frames as this thread's last walk (the unwinder's note):
	 * the id the map gave for them then, if no reset came between. Only
	 * the outermost probe of a thread reads and writes notes: a handler
	 * interrupting it runs nested (nest > 1) and leaves them alone, so no
	 * note is torn; one that re-records the memo voids the note's words.
	 */
	int noted = note.cell && ringtrace__tls.nest == 1;
	/* 64-bit words: read back as they were stored (32-bit halves read
	 * as one word stall the store forwarding). */
	uint64_t w[RT_UNWIND_NOTE_WORDS] = { 0 };
	int known = noted && rt_unwind_note_get(&note, w);
	struct stackmap_hint h = { (uint32_t)w[0], (uint32_t)w[1], (uint32_t)w[2] };
	int r = -ENODATA;
	if (note.frames) {
		/* The id from the note needs no frames; else take them out
		 * of the memo, or, should a signal handler's captures have
		 * recorded it again meanwhile (seldom), capture again. */
		if (known) {
			r = id_from_hint(s, ucpu, &h, (uint32_t)n, &id);
			if (r == STACKMAP_FROM_HINT)
				return id;
			known = 0;
		}
		if (!rt_unwind_note_frames(&note, buf, n)) {
			ringtrace__tls.busy++;
			n = unwind_here(buf, method, frames, fp_frames, &note);
			ringtrace__tls.busy--;
			*ep = saved_errno;
			if (n <= 0)
				return RINGTRACE__STACK_NONE;
			noted = note.cell && ringtrace__tls.nest == 1;
		}
	}
#if UINTPTR_MAX != UINT64_MAX
	for (int i = 0; i < n; i++)
		ips[i] = buf[i];
#endif
	/* -ENODATA: the map was not asked, or only for the note's id. */
	if (r == -ENODATA)
		r = stackmap_get_id_hint(&s->map, ips, (uint32_t)n, ucpu, &h, known, &id);
	if (r >= 0) {
		if (noted && r != STACKMAP_FROM_HINT) {
			uint32_t v[RT_UNWIND_NOTE_WORDS] = { h.id, h.serial, h.epoch };
			rt_unwind_note_set(&note, v);
		}
		return id;
	}
	/* No room in the map (counted there as a drop): the event carries
	 * the addresses themselves, so no stack is lost. */
	*ret_depth = (uint32_t)n;
	return RINGTRACE__STACK_NONE;
}

__attribute__((noinline)) uint32_t rb_stack_capture(struct ringtrace__rb *rb, uint64_t *ips,
						     uint32_t *ret_depth)
{
	return capture_in(rb, ips, ret_depth, OWN_FRAMES, OWN_FP_FRAMES);
}

/*
 * The inline path of an event whose suffix carries a captured stack
 * (ringtrace-abi.h: declared with one, or any event of the allocation
 * tracer in a region with stacks): the capture inlined here, so that the
 * frames to skip are this function (frame pointers) and the probe. The reservation is the probe's when
 * the stack has an id of the map; else (the map had no room: the
 * addresses go with the event) it is made here, as the slow path makes
 * it. Called again with the id when the probe's reservation failed.
 */
int ringtrace__reserve_stack(struct ringtrace__wctx *c, const struct ringtrace_event_desc *d, uint32_t payload,
			     uint32_t *io_id)
{
	uint32_t id = *io_id;
	if (id == 0) {
		uint64_t ips[STACKMAP_MAX_DEPTH];
		uint32_t depth;
		id = capture_in(c->rb, ips, &depth, OWN_FRAMES - 1, OWN_FP_FRAMES - 1);
		if (!depth) {
			*io_id = id;
			return -1;
		}
		return probe_reserve_suffix(c, d, payload, id, depth, ips);
	}
	return probe_reserve_suffix(c, d, payload, id, 0, NULL);
}

/*
 * Frames: the capture, inlined here, skips this function and its caller
 * (the allocation tracer's accounting function), as rb_stack_capture
 * skips reserve_slow and the probe for an event. The region is held as a
 * probe holds it (nest, paired with the grace period before a region is
 * unmapped, rcu.c).
 */
__attribute__((noinline)) uint32_t ringtrace__stack_id(void)
{
	ringtrace__nest_add(1);
	RINGTRACE__BARRIER();
	struct ringtrace__rb *rb = __atomic_load_n(&ringtrace__rb_current, __ATOMIC_ACQUIRE);
	uint32_t id = RINGTRACE__STACK_NONE;
	if (rb && rb->stacks && rb->stk) {
		uint64_t ips[STACKMAP_MAX_DEPTH];
		uint32_t depth;
		id = capture_in(rb, ips, &depth, OWN_FRAMES - 1, OWN_FP_FRAMES - 1);
	}
	RINGTRACE__BARRIER();
	ringtrace__nest_add((uint32_t)-1);
	return id;
}

void ringtrace__maps_changed(void)
{
	ringtrace__tls.busy++;
	ringtrace__nest_add(1);
	RINGTRACE__BARRIER();
	struct ringtrace__rb *rb = __atomic_load_n(&ringtrace__rb_current, __ATOMIC_ACQUIRE);
	if (rb)
		stack_log_maps(rb, 0);
	/* Tables of objects loaded or unloaded since the last list. */
	if (stack_capturing())
		(void)rt_unwind_refresh();
	RINGTRACE__BARRIER();
	ringtrace__nest_add((uint32_t)-1);
	ringtrace__tls.busy--;
}
