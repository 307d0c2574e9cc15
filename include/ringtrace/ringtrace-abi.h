/*
 * ringtrace-abi.h - the part of libringtrace that is compiled into every
 * object that fires tracepoints: the event descriptor, the shared-memory
 * ring-buffer layout and the inline reserve/commit fast path.
 *
 * This is ABI, not API: include <ringtrace/ringtrace.h> instead. Objects
 * record RINGTRACE_ABI_VERSION in their descriptors and the library refuses
 * (leaves disabled) descriptors built against another version.
 *
 * Who writes: any thread of the traced program, from any context (signal
 * handlers included), on the CPU it runs on. Who reads: the recorder, another
 * process, through the same shared mapping. The layout and the protocol are
 * described in docs/design.md; the comments here say what each access pairs
 * with.
 *
 * Tuned for: one clock read plus a handful of plain loads and stores per
 * event. On x86-64 with rseq (glibc >= 2.35 registers it for every thread)
 * the reservation and the commit are restartable sequences: no LOCK-prefixed
 * instruction on the fast path. Elsewhere everything goes through the
 * out-of-line slow path, which uses atomics.
 */
#ifndef RINGTRACE_ABI_H
#define RINGTRACE_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(RINGTRACE_NO_RSEQ)
#  if defined(__has_feature)
#    if __has_feature(thread_sanitizer)
#      define RINGTRACE__RSEQ 0
#    endif
#  endif
#  ifndef RINGTRACE__RSEQ
#    define RINGTRACE__RSEQ 1
#  endif
#else
#  define RINGTRACE__RSEQ 0
#endif

#if RINGTRACE__RSEQ
#  include <sys/rseq.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* 4: struct ringtrace__rb grew `fast_any` (the offset of its cpu[] moved),
 * and the inline path runs with any clock. */
#define RINGTRACE_ABI_VERSION 4

#define RINGTRACE__LIKELY(x)   __builtin_expect(!!(x), 1)
#define RINGTRACE__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RINGTRACE__BARRIER()   __asm__ __volatile__("" ::: "memory")
/* The fast path must be inlined into each probe: clang otherwise keeps
 * it out of line and the write context goes through memory. */
#define RINGTRACE__INLINE      static inline __attribute__((always_inline))
/* What libringtrace exports (it is built with -fvisibility=hidden). */
#define RINGTRACE__EXPORT      __attribute__((visibility("default")))

/*
 * One per tracepoint declaration per translation unit, in .data; a pointer
 * to it goes into the section "ringtrace_events" of the object. The library
 * writes `enabled` and `id`; the call site reads `enabled` (one load).
 */
struct ringtrace_event_desc {
	int32_t enabled;
	uint32_t id;
	uint32_t abi;
	uint32_t line;
	const char *provider;
	const char *name;
	const char *signature;
	const char *file;
	uint32_t flags;              /* RINGTRACE__EVF_*: STACK declared, TRIGGER
				      * set and cleared by the library */
	uint32_t pad;
	void *reserved;
};

/* The event carries a stack (RINGTRACE_EVENT_STACK): its payload ends
 * with the stack suffix described at ringtrace__rb.stacks. */
#define RINGTRACE__EVF_STACK 0x1u
/* Set at run time by the allocation tracer on the events whose stacks no
 * report reads (a free's: its call site is a field): nothing is captured
 * for them. In a region that gives every event a stack they carry no
 * suffix (their signature there has none) and keep the inline path,
 * unless the library gave them RINGTRACE__EVF_SUFFIX: then the suffix
 * says "no stack" (stack_id RINGTRACE__STACK_NONE, depth 0). */
#define RINGTRACE__EVF_NO_STACK 0x2u
/* Set at run time by the library, for good, on the events whose records
 * end with the stack suffix in a region that gives every event a stack
 * (src/lib/registry.c): before their signature is logged there, and
 * before a probe can see that region or the definition's id. It keeps
 * them off ringtrace__reserve()'s inline path (any flag but NO_STACK
 * does), which writes no suffix; the slow path writes one when the
 * region has stacks. (With this flag alone, or with STACK, the suffix of
 * a captured stack is written inline: ringtrace__reserve_suffixed().) */
#define RINGTRACE__EVF_SUFFIX 0x4u
/* Set at run time by the library: the event arms a snapshot trigger, its
 * commit calls ringtrace__trigger() (src/lib/trigger.h). */
#define RINGTRACE__EVF_TRIGGER 0x100u

/* ---- shared-memory layout (docs/design.md section 2) ------------------- */

#define RINGTRACE__SHM_MAGIC    0x31435254474e4952ull /* "RINGTRC1" */
#define RINGTRACE__SHM_VERSION  2
#define RINGTRACE__POS_BITS     42
#define RINGTRACE__POS_MASK     ((UINT64_C(1) << RINGTRACE__POS_BITS) - 1)
#define RINGTRACE__PKT_HDR      84      /* CTF packet header + context */
#define RINGTRACE__EV_COMPACT   4       /* compact event header */
#define RINGTRACE__EV_EXTENDED  13      /* extended event header */
#define RINGTRACE__EV_ID_EXT    31
#define RINGTRACE__ID_THREAD    1       /* ringtrace:thread { u32 tid; } */
#define RINGTRACE__ID_THREAD_NAME 2     /* ringtrace:thread_name { u32 tid; string comm; } */
#define RINGTRACE__ID_FIRST_USER 3
#define RINGTRACE__STACK_NONE   0xffffffffu /* stack_id of a stack given in full */
#define RINGTRACE__STACK_DEPTH  64          /* frames captured at most */
#define RINGTRACE__TS_BITS      27

enum { RINGTRACE__MODE_DISCARD = 0, RINGTRACE__MODE_OVERWRITE = 1 };
enum { RINGTRACE__CLOCK_TSC = 0, RINGTRACE__CLOCK_MONOTONIC = 1 };

struct ringtrace__shm_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;
	uint64_t total_size;
	uint32_t ncpus;
	uint32_t sb_shift;           /* log2 sub-buffer size */
	uint32_t nsb_shift;          /* log2 sub-buffer count */
	uint32_t mode;               /* RINGTRACE__MODE_* */
	uint32_t clock;              /* RINGTRACE__CLOCK_* */
	uint32_t creator_pid;
	uint8_t uuid[16];
	uint64_t reg_off;            /* registry log */
	uint64_t reg_size;
	uint64_t cpu_off;            /* CPU 0's area */
	uint64_t cpu_stride;         /* bytes per CPU area */
	uint64_t slots_rel;          /* slot array, relative to a CPU area */
	uint64_t data_rel;           /* ring data, relative to a CPU area */
	/* Written by the program, read by the recorder. */
	uint64_t reg_used;           /* release-stored after an entry is complete */
	uint32_t reg_dropped;        /* entries that did not fit */
	uint32_t attached_pid;       /* set once the program has mapped the region */
	uint32_t use_rseq;           /* what the program chose */
	/* Set by the region's creator: every event carries a stack. */
	uint32_t stacks;
	/* The stack area (stack map, then the loaded-object log), 0 if none;
	 * laid out by the creator (src/ringbuf/rb_shm.c). */
	uint64_t stack_off;
	uint64_t stack_size;
	/* Futex word: the reader sets 1 before sleeping; a writer that closes a
	 * sub-buffer and sees 1 clears it and wakes the reader. */
	uint32_t reader_wait;
	/* The one consumer of the region (claimed by CAS, 0 = none): the
	 * recorder, or `ringtrace record -p` / `show` on a live program. */
	uint32_t reader_pid;
	/* Event selection: NUL-separated glob patterns, empty list = all. */
	char patterns[2048];
};

/* Per-CPU control, written by the program. */
struct ringtrace__rb_cpu {
	uint64_t state;              /* pos | tid << 42; rseq cs or cmpxchg */
	uint64_t last_ts;            /* a timestamp <= that of the last record */
	/* Written by the consumer only (plain stores, read by `ringtrace stat`). */
	uint64_t read_subbufs;       /* sub-buffers taken */
	uint64_t read_events;        /* user events in them */
	/* Blocking (src/ringbuf/rb_block.c; none of it on the inline path).
	 * Futex word: a writer waiting for room stores 1 before it sleeps;
	 * the consumer that hands a sub-buffer back and sees 1 clears it and
	 * wakes every waiter of the CPU. */
	uint32_t writer_wait;
	/* Set by the region's creator, the same in every CPU's area: how long
	 * a writer waits for room, in microseconds; 0: it drops the event at
	 * once (the discard mode of old). */
	uint32_t block_us;
	/* read_subbufs + 1 as a writer saw it when its wait timed out: until
	 * the consumer takes another sub-buffer, writers drop without waiting
	 * (a stopped or dead consumer costs one timeout, not one per event). */
	uint64_t block_stall;
	uint64_t pad0[2];
	uint64_t lost_full;          /* atomic adds, slow path only */
	uint64_t lost_overwrite;
	uint64_t lost_too_big;
	uint64_t lost_nocpu;
	/* Atomic adds by writers that waited for room: the events that waited,
	 * the nanoseconds they waited in all, and those of them dropped when
	 * the timeout ran out (counted in lost_full as well). */
	uint64_t block_waits;
	uint64_t block_ns;
	uint64_t block_timeouts;
	uint64_t pad1[1];
};

/* Per sub-buffer, 64 bytes. local_* is 16-byte aligned for the one-store
 * rseq commit. */
struct ringtrace__rb_slot {
	uint64_t local_bytes;
	uint64_t local_events;
	uint64_t remote_bytes;
	uint64_t remote_events;
	uint64_t owner;              /* lap:16 | st:2 | base:46 */
	uint64_t pad[3];
};

#define RINGTRACE__OWN_LAP(o)   ((uint32_t)((o) >> 48))
#define RINGTRACE__OWN_READ(o)  ((uint32_t)((o) >> 46) & 1)
#define RINGTRACE__OWN_BASE(o)  ((o) & ((UINT64_C(1) << 46) - 1))
#define RINGTRACE__OWN(lap, rd, base) \
	(((uint64_t)((lap) & 0xffff) << 48) | ((uint64_t)(rd) << 46) | \
	 ((base) & ((UINT64_C(1) << 46) - 1)))

/* Process-local view of a mapped region, built and validated at attach. */
struct ringtrace__rb_percpu {
	struct ringtrace__rb_cpu *ctl;
	struct ringtrace__rb_slot *slots;
	char *data;
};

struct ringtrace__rb {
	struct ringtrace__shm_header *hdr;
	uint32_t ncpus;
	uint32_t sb_shift;
	uint32_t nsb_shift;
	uint32_t mode;
	uint64_t sb_mask;            /* sub-buffer size - 1 */
	uint64_t buf_mask;           /* per-CPU buffer size - 1 */
	uint64_t reg_off;            /* registry log, as validated at open: */
	uint64_t reg_size;           /* never re-read from the region */
	uint64_t stack_off;          /* stack area, as validated (0: none) */
	uint64_t stack_size;
	int use_rseq;
	int clock_tsc;
	/*
	 * Stacks, for events declared with one and, when this is 1, for every
	 * event: the payload then ends with the stack suffix
	 *   u32 stack_id; u8 depth; u64 ips[depth]
	 * (signature "u32 stack_id;x64 stack[u8]"): depth is 0 when the id
	 * names a stack of the region's map; when the map had no room the id
	 * is RINGTRACE__STACK_NONE and the addresses follow. The probe's fast
	 * path writes the suffix of an event whose stack is captured
	 * (ringtrace__reserve_suffixed()); the others that carry one (NO_STACK
	 * with SUFFIX: "no stack") take the slow path.
	 */
	uint32_t stacks;
	/* use_rseq && !stacks && clock_tsc: the inline path may read the TSC
	 * inside its critical section. Objects built against ABI 3 test only
	 * this flag, so it never goes up for a region on another clock, nor
	 * for one with stacks (they do not read the flags). */
	uint32_t fast;
	void *stk;                   /* the library's stack capture state, or NULL */
	/* use_rseq, whatever the clock: the inline path may run (ABI 4) for
	 * the events whose flags are 0 or NO_STACK alone (ringtrace__reserve()).
	 * With the TSC it reads it inside the section; with any other clock
	 * before it (ringtrace__rseq_reserve_any()). */
	uint32_t fast_any;
	/* How long a writer of this region waits for room (microseconds, 0:
	 * never), as validated at open; read by the slow path only. */
	uint32_t block_us;
	struct ringtrace__rb_percpu cpu[];
};

/* Set by the library while tracing is on (release), read by every probe. */
extern RINGTRACE__EXPORT struct ringtrace__rb *ringtrace__rb_current;

/*
 * `nest` counts the probes of this thread between their load of
 * ringtrace__rb_current and the end of their commit (signal handlers nest).
 * Only this thread writes it, with plain loads and stores (a signal handler
 * that interrupts the update restores the value before it returns); the
 * library reads it from another thread after membarrier() to know when no
 * probe can still hold a region it is about to unmap (src/lib/rcu.c).
 */
struct ringtrace__tls {
	uint32_t tid;                /* 0 until the thread's first event */
	uint32_t nest;
	/* Nonzero while this thread runs library code that may allocate
	 * (registration, stack capture, the control thread): the allocation
	 * tracer (src/mem) does not record the tracer's own allocations. */
	uint32_t busy;
};
extern RINGTRACE__EXPORT __thread struct ringtrace__tls ringtrace__tls
	__attribute__((tls_model("initial-exec")));

/* What a probe holds between reserve and commit. */
struct ringtrace__wctx {
	struct ringtrace__rb *rb;
	char *rec;                   /* the event's header */
	char *payload;               /* where its fields go */
	uint64_t ts;
	uint32_t cpu;
	uint32_t slot;
	uint32_t len;                /* bytes to commit */
	uint32_t id;
	uint32_t ext;                /* bit 0: the event's header is extended;
				      * bit 1: commit evaluates a snapshot trigger */
	uint32_t pad;
};
#define RINGTRACE__CTX_TRIGGER 2u

/* Called by each translation unit's constructor/destructor with its
 * object's "ringtrace_events" section; reference counted per section. */
RINGTRACE__EXPORT void ringtrace__register_section(struct ringtrace_event_desc *const *start,
						   struct ringtrace_event_desc *const *stop);
RINGTRACE__EXPORT void ringtrace__unregister_section(struct ringtrace_event_desc *const *start,
						     struct ringtrace_event_desc *const *stop);

RINGTRACE__EXPORT int ringtrace__reserve_slow(struct ringtrace__wctx *c, const struct ringtrace_event_desc *d,
			    uint32_t payload);
/* For an event with a stack suffix (ringtrace__reserve_suffixed()): with
 * *io_id 0, capture the stack; return -1 with its id of the region's map
 * in *io_id (or RINGTRACE__STACK_NONE: no stack), for the caller to
 * reserve the record with its 5 bytes of suffix, else reserve it here as
 * ringtrace__reserve_slow() does (1, or 0 when dropped). With *io_id set,
 * reserve the record with that id as its suffix. */
RINGTRACE__EXPORT int ringtrace__reserve_stack(struct ringtrace__wctx *c, const struct ringtrace_event_desc *d,
					       uint32_t payload, uint32_t *io_id);
RINGTRACE__EXPORT void ringtrace__commit_slow(struct ringtrace__rb *rb, uint32_t cpu, uint32_t slot,
			    uint32_t bytes, uint32_t events);
/* By value: a pointer to the write context would make it escape, and keep
 * it in memory on every probe's fast path. */
RINGTRACE__EXPORT void ringtrace__trigger(struct ringtrace__rb *rb, const char *payload, uint32_t id,
					  uint32_t cpu);

/* ---- clock ------------------------------------------------------------- */

RINGTRACE__EXPORT uint64_t ringtrace__clock_monotonic(void);
/* The calling thread's stack as an id of the current region's stack map,
 * for the allocation tracer's aggregate mode (src/mem/memagg.c): the
 * stack from the caller of the function that calls this one. Returns
 * RINGTRACE__STACK_NONE when no region with stacks is attached or the map
 * is full. Async-signal-safe; never allocates (the tracer's own). */
RINGTRACE__EXPORT uint32_t ringtrace__stack_id(void);
/* Log the objects loaded since the last log into the current region, if
 * the loader's counters moved: the allocation tracer calls it before each
 * dlclose and at exit, so that an object without tracepoints that was
 * loaded for a moment still names its call sites. Not from a probe or a
 * signal handler (it takes a lock). */
RINGTRACE__EXPORT void ringtrace__maps_changed(void);

static inline uint64_t ringtrace__now(const struct ringtrace__rb *rb)
{
#if defined(__x86_64__) || defined(__i386__)
	if (RINGTRACE__LIKELY(rb->clock_tsc)) {
		uint32_t lo, hi;
		__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
	}
#endif
	return ringtrace__clock_monotonic();
}

/* ---- record headers ------------------------------------------------------ */

/* Header bytes of a record with this id, compact or extended. */
RINGTRACE__INLINE uint32_t ringtrace__hdr_len(uint32_t id, int ext)
{
	return (ext || id >= RINGTRACE__EV_ID_EXT) ? RINGTRACE__EV_EXTENDED : RINGTRACE__EV_COMPACT;
}

/* Written after the record's payload (a zero header means "never written"). */
RINGTRACE__INLINE void ringtrace__put_hdr(char *p, uint32_t id, uint64_t ts, int ext)
{
	if (!ext && id < RINGTRACE__EV_ID_EXT) {
		uint32_t w = id | (uint32_t)(ts << 5);
		RINGTRACE__BARRIER();
		memcpy(p, &w, 4);
	} else {
		memcpy(p + 1, &id, 4);
		memcpy(p + 5, &ts, 8);
		RINGTRACE__BARRIER();
		p[0] = (char)RINGTRACE__EV_ID_EXT;
	}
}

#if RINGTRACE__RSEQ

#define RINGTRACE__RSEQ_SIG 0x53053053

/* A struct rseq_cs in section __rseq_cs, and the abort handler, preceded
 * by the signature the kernel checks, in __rseq_failure. */
#define RINGTRACE__RSEQ_CS(start, post, abort)                                  \
	".pushsection __rseq_cs, \"aw\"\n\t"                                    \
	".balign 32\n\t"                                                        \
	"3:\n\t"                                                                \
	".long 0x0, 0x0\n\t"                                                    \
	".quad " #start "f, (" #post "f - " #start "f), " #abort "f\n\t"        \
	".popsection\n\t"                                                       \
	".pushsection __rseq_cs_ptr_array, \"aw\"\n\t"                          \
	".quad 3b\n\t"                                                          \
	".popsection\n\t"

/* Point the thread's rseq_cs at the descriptor above (label 3) and open
 * the section (label 1). Needs the operand [off] = __rseq_offset and
 * clobbers rax. */
#define RINGTRACE__RSEQ_ENTER                                                   \
	"leaq 3b(%%rip), %%rax\n\t"                                              \
	"movq %%rax, %%fs:8(%[off])\n\t"                                         \
	"1:\n\t"

#define RINGTRACE__RSEQ_ABORT(label)                                            \
	".pushsection __rseq_failure, \"ax\"\n\t"                               \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                            \
	".long 0x53053053\n\t"                                                  \
	"4:\n\t"                                                                \
	"jmp %l[" #label "]\n\t"                                                \
	".popsection\n\t"

RINGTRACE__INLINE int32_t ringtrace__rseq_cpu(void)
{
	int32_t cpu;
	__asm__ __volatile__("movl %%fs:4(%1), %0" : "=r"(cpu) : "r"(__rseq_offset));
	return cpu;
}

/*
 * No event leaves the thread's rseq_cs pointer set (the kernel zeroes it
 * itself when it aborts a section). Left set, it points at a descriptor in
 * the object that ran the section: once that object is dlclose'd, the
 * kernel's next look at it (at preemption or a signal) reads unmapped memory
 * and kills the process. A successful reservation is the one exit that does
 * not clear it: the commit's section, in the same probe, always follows,
 * replaces it and clears it.
 */
RINGTRACE__INLINE void ringtrace__rseq_clear(void)
{
	__asm__ __volatile__("movq $0, %%fs:8(%0)" : : "r"(__rseq_offset) : "memory");
}

/*
 * If still on `cpu` and *state == expect: read the clock into *ts, and if
 * *ts - ref < limit, store newv into *state (the commit). Returns 0 on
 * commit, 1 when preempted, migrated, signalled or the state moved, 2 when
 * the timestamp needs an extended header. Every committed state change on a
 * CPU happens in here, on that CPU, with the clock read inside: stores to
 * `state` by different threads are serialised by the CPU itself and
 * timestamps follow buffer order. The clock is read first so that its
 * latency overlaps the checks.
 */
RINGTRACE__INLINE int ringtrace__rseq_reserve(uint64_t *state, uint64_t expect, uint64_t newv,
					  uint64_t ref, uint64_t limit, uint64_t *ret_ts, int32_t cpu)
{
	uint64_t ts;
	__asm__ __volatile__ goto(
		RINGTRACE__RSEQ_CS(1, 2, 4)
		RINGTRACE__RSEQ_ENTER
		"rdtsc\n\t"
		"cmpl %[cpu], %%fs:4(%[off])\n\t"
		"jnz %l[abort]\n\t"
		"cmpq %[expect], %[v]\n\t"
		"jnz %l[abort]\n\t"
		"shlq $32, %%rdx\n\t"
		"orq %%rdx, %%rax\n\t"
		"movq %%rax, %%rdx\n\t"
		"subq %[ref], %%rdx\n\t"
		"cmpq %[limit], %%rdx\n\t"
		"jae %l[overflow]\n\t"
		"movq %[newv], %[v]\n\t"
		"2:\n\t"
		RINGTRACE__RSEQ_ABORT(abort)
		: "=&a"(ts)
		: [off] "r"(__rseq_offset), [cpu] "r"(cpu), [v] "m"(*state),
		  [expect] "r"(expect), [newv] "r"(newv), [ref] "r"(ref), [limit] "r"(limit)
		: "memory", "cc", "rdx"
		: abort, overflow);
	*ret_ts = ts;
	return 0;
abort:
	ringtrace__rseq_clear();
	return 1;
overflow:
	ringtrace__rseq_clear();
	return 2;
}

/*
 * If still on `cpu` and *state == expect: store newv into *state (the
 * commit). Returns 0 on commit, 1 when preempted, migrated, signalled or
 * the state moved. The section of ringtrace__rseq_reserve_any().
 */
RINGTRACE__INLINE int ringtrace__rseq_cmpstore(uint64_t *state, uint64_t expect, uint64_t newv, int32_t cpu)
{
	__asm__ __volatile__ goto(
		RINGTRACE__RSEQ_CS(1, 2, 4)
		RINGTRACE__RSEQ_ENTER
		"cmpl %[cpu], %%fs:4(%[off])\n\t"
		"jnz %l[abort]\n\t"
		"cmpq %[expect], %[v]\n\t"
		"jnz %l[abort]\n\t"
		"movq %[newv], %[v]\n\t"
		"2:\n\t"
		RINGTRACE__RSEQ_ABORT(abort)
		:
		: [off] "r"(__rseq_offset), [cpu] "r"(cpu), [v] "m"(*state),
		  [expect] "r"(expect), [newv] "r"(newv)
		: "memory", "cc", "rax"
		: abort);
	return 0;
abort:
	ringtrace__rseq_clear();
	return 1;
}

/*
 * ringtrace__rseq_reserve() for a clock that cannot be read inside a
 * critical section (CLOCK_MONOTONIC through the vDSO: a call into code
 * that a section cannot contain). Same contract and returns; `expect` must have
 * been loaded from *state, and `ref` from the CPU's last_ts, before the
 * call. The clock is read between that load and the section:
 *
 *   - a commit on this CPU after our load of the state changes the state
 *     word (its position only grows), so our section fails and we retry;
 *   - a commit before our load read its clock before its own store (the
 *     store retires after the clock read, on one CPU or across a context
 *     switch, which serialises), and that store is visible to our load, so
 *     it happened before our clock read: vDSO clock_gettime on the tsc and
 *     kvm-clock clocksources reads the TSC with rdtsc_ordered() (lfence;
 *     rdtsc, or rdtscp), which waits for our earlier load, and a clock
 *     that falls back to a system call is serialised by it. CLOCK_MONOTONIC
 *     never goes back between causally ordered reads, on any CPU, so our
 *     timestamp is >= that of every record before ours in the buffer.
 *
 * The clamp to `ref` (a timestamp <= the CPU's last record's) keeps that
 * order even if the clock broke its promise, at the cost of a timestamp
 * too late by the size of the break; docs/design.md bounds the error.
 */
RINGTRACE__INLINE int ringtrace__rseq_reserve_any(uint64_t *state, uint64_t expect, uint64_t newv,
						  uint64_t ref, uint64_t limit, uint64_t *ret_ts, int32_t cpu)
{
	/* The caller's loads of the state and of `ref` stay before the clock
	 * read (the compiler's side; the CPU's is the clock's own ordering). */
	RINGTRACE__BARRIER();
	uint64_t ts = ringtrace__clock_monotonic();
	if (RINGTRACE__UNLIKELY(ts < ref))
		ts = ref;
	if (RINGTRACE__UNLIKELY(ts - ref >= limit))
		return 2;
	if (RINGTRACE__UNLIKELY(ringtrace__rseq_cmpstore(state, expect, newv, cpu) != 0))
		return 1;
	*ret_ts = ts;
	return 0;
}

typedef long long ringtrace__v2di __attribute__((vector_size(16)));

/*
 * If still on `cpu`: add {bytes, events} to the slot's local pair with one
 * 16-byte store (the commit). The store is release on x86 (TSO): the reader's
 * acquire load of local_bytes sees the record's contents.
 */
RINGTRACE__INLINE int ringtrace__rseq_add16(uint64_t *pair, ringtrace__v2di inc, int32_t cpu)
{
	__asm__ __volatile__ goto(
		RINGTRACE__RSEQ_CS(1, 2, 4)
		RINGTRACE__RSEQ_ENTER
		"cmpl %[cpu], %%fs:4(%[off])\n\t"
		"jnz %l[abort]\n\t"
		"movdqu %[v], %%xmm0\n\t"
		"paddq %[inc], %%xmm0\n\t"
		"movdqu %%xmm0, %[v]\n\t"
		"2:\n\t"
		"movq $0, %%fs:8(%[off])\n\t"
		RINGTRACE__RSEQ_ABORT(abort)
		:
		: [off] "r"(__rseq_offset), [cpu] "r"(cpu), [v] "m"(*(ringtrace__v2di *)pair),
		  [inc] "x"(inc)
		: "memory", "cc", "rax", "xmm0"
		: abort);
	return 0;
abort:
	ringtrace__rseq_clear();
	return 1;
}

#endif /* RINGTRACE__RSEQ */

/*
 * Reserve room for one event with `payload` bytes of fields. Returns 1 with
 * c->payload pointing at the room, or 0 when the event is dropped (counted
 * by cause) or tracing is off. Never blocks, allocates or makes a system call
 * on this path (a full buffer is the slow path's: it may wait for room, a
 * bounded time, when the region asks for it; rb_block.c). Inline here is only the common case: rseq, a compact header,
 * room in the open sub-buffer. Everything else (first event of a thread,
 * opening a sub-buffer, extended headers, retries after preemption, no
 * rseq) is the out-of-line slow path.
 */
/* The store is release (a plain store on x86): the library's acquire load
 * that sees the count drop orders every access of the probe before it
 * unmaps a region. The ordering of the increment before the load of the
 * region comes from the library's membarrier(). */
RINGTRACE__INLINE void ringtrace__nest_add(uint32_t v)
{
	__atomic_store_n(&ringtrace__tls.nest, __atomic_load_n(&ringtrace__tls.nest, __ATOMIC_RELAXED) + v,
			 __ATOMIC_RELEASE);
}

#if RINGTRACE__RSEQ
/*
 * The common case of a reservation, with rseq: a compact header and room
 * in the open sub-buffer of this CPU. 1 with *c filled (c->rb and c->id
 * set by the caller), 0 when any of that does not hold (nothing done).
 * Inline in every probe (with the suffix's 5 bytes for an event declared
 * with a stack); the slow path uses it too once it has captured an
 * event's stack (src/lib/probe.c).
 */
RINGTRACE__INLINE int ringtrace__reserve_rseq(struct ringtrace__wctx *c, struct ringtrace__rb *rb, uint32_t tid,
					      uint32_t payload)
{
	int32_t cpu = ringtrace__rseq_cpu();
	if (RINGTRACE__UNLIKELY((uint32_t)cpu >= rb->ncpus))
		return 0;
	struct ringtrace__rb_percpu *pc = &rb->cpu[cpu];
	struct ringtrace__rb_cpu *ctl = pc->ctl;
	uint64_t st = __atomic_load_n(&ctl->state, __ATOMIC_RELAXED);
	uint64_t pos = st & RINGTRACE__POS_MASK;
	/* A thread record goes first when another thread wrote last. */
	uint32_t thr = (uint32_t)(st >> RINGTRACE__POS_BITS) != tid ? 8 : 0;
	uint64_t need = thr + RINGTRACE__EV_COMPACT + payload;
	uint64_t in = pos & rb->sb_mask;
	/* A sub-buffer is open (in != 0) and the record fits without
	 * filling it exactly (see rb_write.c). */
	if (RINGTRACE__UNLIKELY(in == 0 || in + need > rb->sb_mask))
		return 0;
	uint64_t ts;
	uint64_t ref = __atomic_load_n(&ctl->last_ts, __ATOMIC_RELAXED);
	uint64_t newv = (pos + need) | ((uint64_t)tid << RINGTRACE__POS_BITS);
	int r;
	if (RINGTRACE__LIKELY(rb->clock_tsc))
		r = ringtrace__rseq_reserve(&ctl->state, st, newv, ref, UINT64_C(1) << RINGTRACE__TS_BITS, &ts, cpu);
	else
		r = ringtrace__rseq_reserve_any(&ctl->state, st, newv, ref, UINT64_C(1) << RINGTRACE__TS_BITS, &ts,
						cpu);
	if (RINGTRACE__UNLIKELY(r != 0))
		return 0;
	/* Conservative: never newer than the last record of this CPU
	 * (pairs with the load of `ref`). */
	__atomic_store_n(&ctl->last_ts, ts, __ATOMIC_RELAXED);
	char *p = pc->data + (pos & rb->buf_mask);
	if (thr) {
		memcpy(p + RINGTRACE__EV_COMPACT, &tid, 4);
		ringtrace__put_hdr(p, RINGTRACE__ID_THREAD, ts, 0);
		p += 8;
	}
	c->ts = ts;
	c->rec = p;
	c->payload = p + RINGTRACE__EV_COMPACT;
	c->ext = 0;
	c->cpu = (uint32_t)cpu;
	c->slot = (uint32_t)(pos >> rb->sb_shift) & ((1u << rb->nsb_shift) - 1);
	c->len = (uint32_t)need;
	return 1;
}
#endif

/* Announce the probe before loading the region: pairs with the
 * membarrier() after the library unpublishes a region (rcu.c). NULL when
 * tracing is off (the probe is over). */
RINGTRACE__INLINE struct ringtrace__rb *ringtrace__enter(void)
{
	ringtrace__nest_add(1);
	RINGTRACE__BARRIER();
	struct ringtrace__rb *rb = __atomic_load_n(&ringtrace__rb_current, __ATOMIC_ACQUIRE);
	if (RINGTRACE__UNLIKELY(!rb)) {
		RINGTRACE__BARRIER();
		ringtrace__nest_add((uint32_t)-1);
	}
	return rb;
}

/* The end of a reservation made by the library into `slow` (a copy, so
 * that *c never escapes and stays in registers): the probe is over if it
 * failed. */
RINGTRACE__INLINE int ringtrace__slow_done(struct ringtrace__wctx *c, const struct ringtrace__wctx *slow, int r)
{
	*c = *slow;
	if (!r) {
		RINGTRACE__BARRIER();
		ringtrace__nest_add((uint32_t)-1);
	}
	return r;
}

#if RINGTRACE__RSEQ
/*
 * The inline path of an event whose record ends with the stack suffix
 * and is captured: the library captures the stack, and the record is
 * reserved here, as an event without one is, with the 5 bytes of the
 * suffix (u32 id, u8 depth 0) written after the payload's room. A
 * capture whose addresses must go with the event (the map had no room)
 * is reserved by the library, as is one the inline reservation cannot
 * make (with the id it has).
 */
RINGTRACE__INLINE int ringtrace__reserve_suffixed(struct ringtrace__wctx *c, struct ringtrace__wctx *slow,
						  const struct ringtrace_event_desc *d, uint32_t tid,
						  uint32_t payload)
{
	uint32_t sid = 0;
	int r = ringtrace__reserve_stack(slow, d, payload, &sid);
	if (r < 0) {
		if (RINGTRACE__LIKELY(ringtrace__reserve_rseq(c, slow->rb, tid, payload + 5))) {
			memcpy(c->payload + payload, &sid, 4);
			c->payload[payload + 4] = 0;
			return 1;
		}
		/* sid is an id or RINGTRACE__STACK_NONE, never 0: reserve
		 * only (1, or 0 when dropped). */
		r = ringtrace__reserve_stack(slow, d, payload, &sid) > 0;
	}
	return ringtrace__slow_done(c, slow, r);
}
#endif

/*
 * `stk` (a constant): the probe also has the inline path of an event whose
 * suffix carries a captured stack (ringtrace__reserve_suffixed()). Only
 * the probes that expect one have it: an event declared with a stack, and
 * every event of a translation unit that defines RINGTRACE_INLINE_SUFFIX
 * (ringtrace.h); in the others it would cost the bare events' path a few
 * spilled registers (0.3 ns of 12).
 */
RINGTRACE__INLINE int ringtrace__reserve_in(struct ringtrace__wctx *c, const struct ringtrace_event_desc *d,
					uint32_t payload, const int stk)
{
	struct ringtrace__rb *rb = ringtrace__enter();
	if (RINGTRACE__UNLIKELY(!rb))
		return 0;
	uint32_t id = d->id;
	c->rb = rb;
	c->id = id;
#if RINGTRACE__RSEQ
	uint32_t tid = ringtrace__tls.tid;
	uint32_t flags = __atomic_load_n(&d->flags, __ATOMIC_RELAXED);
	/* id - 1 < 30: ids 1..30 have compact headers; 0 (a descriptor seen
	 * before its id, possible on weakly ordered CPUs) goes to the slow path,
	 * which drops it. */
	/* In a region with stacks, every event that carries the stack
	 * suffix there has a flag (STACK or SUFFIX): only the bare ones,
	 * NO_STACK alone, take this path. */
	if (RINGTRACE__LIKELY(rb->fast_any && !(flags & ~RINGTRACE__EVF_NO_STACK) && tid != 0 &&
			      id - 1 < RINGTRACE__EV_ID_EXT - 1) &&
	    RINGTRACE__LIKELY(ringtrace__reserve_rseq(c, rb, tid, payload)))
		return 1;
#endif
	struct ringtrace__wctx slow;
	slow.rb = rb;
	slow.id = id;
#if RINGTRACE__RSEQ
	/* A suffix with a stack captured: declared with one, or in a region
	 * that gives every event one. */
	if (stk && rb->fast_any && (flags & (RINGTRACE__EVF_STACK | RINGTRACE__EVF_SUFFIX)) &&
	    !(flags & ~(RINGTRACE__EVF_STACK | RINGTRACE__EVF_SUFFIX)) &&
	    ((flags & RINGTRACE__EVF_STACK) || rb->stacks) && tid != 0 && id - 1 < RINGTRACE__EV_ID_EXT - 1)
		return ringtrace__reserve_suffixed(c, &slow, d, tid, payload);
#endif
	return ringtrace__slow_done(c, &slow, ringtrace__reserve_slow(&slow, d, payload));
}

RINGTRACE__INLINE int ringtrace__reserve(struct ringtrace__wctx *c, const struct ringtrace_event_desc *d,
				     uint32_t payload)
{
	return ringtrace__reserve_in(c, d, payload, 0);
}

RINGTRACE__INLINE void ringtrace__commit(struct ringtrace__wctx *c)
{
	/* The trigger bit rides in `ext`, which every path sets: no store
	 * more on the fast path. */
	if (RINGTRACE__UNLIKELY(c->ext & RINGTRACE__CTX_TRIGGER))
		ringtrace__trigger(c->rb, c->payload, c->id, c->cpu);
	ringtrace__put_hdr(c->rec, c->id, c->ts, (int)(c->ext & 1));
#if RINGTRACE__RSEQ
	if (RINGTRACE__LIKELY(c->rb->use_rseq)) {
		struct ringtrace__rb_slot *s = &c->rb->cpu[c->cpu].slots[c->slot];
		ringtrace__v2di inc = { (long long)c->len, 1 };
		if (RINGTRACE__LIKELY(ringtrace__rseq_add16(&s->local_bytes, inc, (int32_t)c->cpu) == 0)) {
			RINGTRACE__BARRIER();
			ringtrace__nest_add((uint32_t)-1);
			return;
		}
	}
#endif
	/* Migrated or preempted since the reservation (or no rseq): the
	 * atomic remote counters are right from any CPU. */
	ringtrace__commit_slow(c->rb, c->cpu, c->slot, c->len, 1);
	RINGTRACE__BARRIER();
	ringtrace__nest_add((uint32_t)-1);
}

#ifdef __cplusplus
}
#endif

#endif /* RINGTRACE_ABI_H */
