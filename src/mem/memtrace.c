/*
 * memtrace.c - libringtrace-malloc.so, the allocation tracer (kmemtrace
 * for programs that were not rebuilt). Loaded with LD_PRELOAD by
 * `ringtrace record --mem`, it interposes the C allocation functions, the
 * C++ operators new and delete, and anonymous mmap/munmap/mremap, calls
 * the next definition of each (glibc's, or jemalloc's or tcmalloc's when
 * the program uses one: RTLD_NEXT finds whichever comes after us), and
 * fires one event of provider "mem" per call (src/mem/mem_family.h) -
 * or, with RINGTRACE_MEM_SAMPLE set, only for a Poisson sample of the
 * allocations and the frees of the sampled blocks (memsample.c).
 *
 * Rules of this file, because it runs inside every allocation:
 *  - it never recurses: a thread-local flag is set while an event is
 *    written (the library may allocate then: its first event in a thread,
 *    libunwind) and while a C++ operator calls the real one (which calls
 *    malloc): allocations made meanwhile go straight to the allocator;
 *  - the symbol lookup at start-up (dlsym may call calloc) is served from
 *    a static pool, never given back;
 *  - a free is recorded before the real free, so that no other thread can
 *    be handed the address and record its allocation in between;
 *  - nothing here locks, prints or aborts.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Recorded with stacks by default (`ringtrace mem`): the probes write the
 * stack suffix on their inline path. */
#define RINGTRACE_INLINE_SUFFIX 1
#include <ringtrace/ringtrace.h>

#include "mem/mem_family.h"
#include "mem/memagg.h"
#include "mem/memsample.h"

#define EXPORT __attribute__((visibility("default")))

RINGTRACE_EVENT(mem, alloc, RINGTRACE_X64(ptr), RINGTRACE_X64(site), RINGTRACE_U32(size), RINGTRACE_U32(usable),
		RINGTRACE_U8(family), RINGTRACE_U8(align_log2));
RINGTRACE_EVENT(mem, alloc_large, RINGTRACE_X64(ptr), RINGTRACE_X64(site), RINGTRACE_U64(size),
		RINGTRACE_U64(usable), RINGTRACE_U8(family), RINGTRACE_U8(align_log2));
RINGTRACE_EVENT(mem, free, RINGTRACE_X64(ptr), RINGTRACE_X64(site), RINGTRACE_U8(family));
RINGTRACE_EVENT(mem, realloc, RINGTRACE_X64(old_ptr), RINGTRACE_X64(ptr), RINGTRACE_X64(site),
		RINGTRACE_U32(size), RINGTRACE_U32(usable), RINGTRACE_U8(family));
RINGTRACE_EVENT(mem, realloc_large, RINGTRACE_X64(old_ptr), RINGTRACE_X64(ptr), RINGTRACE_X64(site),
		RINGTRACE_U64(size), RINGTRACE_U64(usable), RINGTRACE_U8(family));
RINGTRACE_EVENT(mem, mmap, RINGTRACE_X64(ptr), RINGTRACE_X64(site), RINGTRACE_U64(size), RINGTRACE_U8(family));
RINGTRACE_EVENT(mem, munmap, RINGTRACE_X64(ptr), RINGTRACE_X64(site), RINGTRACE_U64(size));
RINGTRACE_EVENT(mem, mremap, RINGTRACE_X64(old_ptr), RINGTRACE_X64(ptr), RINGTRACE_X64(site),
		RINGTRACE_U64(old_size), RINGTRACE_U64(size));
/* Sampling (memsample.c): how this process's allocation events were
 * chosen, once per process before its first sample; and a sampled block
 * whose free will not be recorded (the set of sampled blocks was full). */
RINGTRACE_EVENT(mem, sampling, RINGTRACE_U64(mean), RINGTRACE_U64(seed), RINGTRACE_U64(capacity),
		RINGTRACE_U32(status), RINGTRACE_U8(fixed_seed));
RINGTRACE_EVENT(mem, untracked, RINGTRACE_X64(ptr));

/* ---- the next definitions ------------------------------------------------ */

struct real {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*usable)(void *);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	void *(*mremap)(void *, size_t, size_t, int, ...);
};

static struct real real;
/* 0: not looked up, 1: being looked up (by one thread), 2: done. */
static int real_state;
/* Set in the thread doing the lookup: its allocations come from the pool. */
static __thread int resolving __attribute__((tls_model("initial-exec")));
/* Set while this thread is inside the tracer or a real C++ operator. */
static __thread int in_hook __attribute__((tls_model("initial-exec")));

static void *sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static void resolve(void)
{
	int expect = 0;
	if (!__atomic_compare_exchange_n(&real_state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return; /* another thread looks them up: the pool serves us meanwhile */
	resolving = 1;
	struct real r;
	r.malloc = (void *(*)(size_t))sym("malloc");
	r.calloc = (void *(*)(size_t, size_t))sym("calloc");
	r.realloc = (void *(*)(void *, size_t))sym("realloc");
	r.reallocarray = (void *(*)(void *, size_t, size_t))sym("reallocarray");
	r.free = (void (*)(void *))sym("free");
	r.posix_memalign = (int (*)(void **, size_t, size_t))sym("posix_memalign");
	r.aligned_alloc = (void *(*)(size_t, size_t))sym("aligned_alloc");
	r.memalign = (void *(*)(size_t, size_t))sym("memalign");
	r.valloc = (void *(*)(size_t))sym("valloc");
	r.pvalloc = (void *(*)(size_t))sym("pvalloc");
	r.usable = (size_t(*)(void *))sym("malloc_usable_size");
	r.mmap = (void *(*)(void *, size_t, int, int, int, off_t))sym("mmap");
	r.munmap = (int (*)(void *, size_t))sym("munmap");
	r.mremap = (void *(*)(void *, size_t, size_t, int, ...))sym("mremap");
	real = r;
	resolving = 0;
	/* Pairs with the acquire loads in ready(): `real` is complete. */
	__atomic_store_n(&real_state, 2, __ATOMIC_RELEASE);
}

static inline int ready(void)
{
	if (__builtin_expect(__atomic_load_n(&real_state, __ATOMIC_ACQUIRE) == 2, 1))
		return 1;
	if (!resolving)
		resolve();
	return __atomic_load_n(&real_state, __ATOMIC_ACQUIRE) == 2 && !resolving;
}

/*
 * The bootstrap pool: allocations made while the functions are looked up
 * (dlsym's error buffers) or while another thread looks them up. Bump
 * allocation, 16-byte aligned, a size word before each block (for
 * realloc), never reused; free() of a pool block does nothing.
 */
static char pool[64 * 1024] __attribute__((aligned(16)));
static size_t pool_used;

static int in_pool(const void *p)
{
	return (const char *)p >= pool && (const char *)p < pool + sizeof(pool);
}

static void *pool_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	if (size > sizeof(pool) || align > 4096)
		return NULL;
	size_t need = (size + 15) & ~(size_t)15;
	size_t old = __atomic_load_n(&pool_used, __ATOMIC_RELAXED), start;
	do {
		start = (old + 16 + align - 1) & ~(align - 1); /* room for the size word */
		if (start + need > sizeof(pool))
			return NULL;
	} while (!__atomic_compare_exchange_n(&pool_used, &old, start + need, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	((size_t *)(pool + start))[-1] = size;
	return pool + start; /* zero: the pool is never reused */
}

static size_t pool_size(const void *p)
{
	return ((const size_t *)p)[-1];
}

/* ---- events ------------------------------------------------------------- */

static inline unsigned log2_align(size_t a)
{
	return a > 1 ? (unsigned)__builtin_ctzll(a) : 0;
}

static inline size_t usable_of(void *p)
{
	return p && real.usable ? real.usable(p) : 0;
}

/* Aggregate mode (memagg.c): counters instead of events. Set once, before
 * main, by memagg_ctor(); cleared in a forked child. */
static inline struct memagg_header *agg(void)
{
	return __atomic_load_n(&memagg_hdr, __ATOMIC_RELAXED);
}

/*
 * Allocations made before tracing is on: those of ld.so and of the
 * constructors of the libraries initialised before our events are
 * registered (a constructor of this object) and before libringtrace has
 * attached the recorder's buffers (its constructor; with stacks, its
 * dlopen of libunwind and its pinning of objects it cannot prove ld.so
 * loaded at start-up, src/unwind/startup.c, may run pending constructors
 * inside its own). They are kept in a static array, in order, and
 * written when tracing turns out to be on
 * (early_end()): every event goes there until then, so none written
 * directly comes before an earlier one kept. They carry their call site,
 * size and usable size as they were; their time and stack are those of
 * the moment they are written (before main). Discarded if nothing records
 * once libringtrace has started. Pairs: early_on's release store in
 * early_end() with the acquire loads here.
 */
#define EARLY_MAX 1024
enum { EARLY_ALLOC, EARLY_FREE, EARLY_REALLOC };
struct early_ev {
	void *p, *old, *site;
	size_t size, usable;
	uint8_t kind, fam, align_log2;
	uint8_t done;                /* written: release store, acquire load in early_write_range() */
};
static struct early_ev early_evs[EARLY_MAX];
static unsigned early_n;             /* slots taken (may pass EARLY_MAX: those are lost) */
static int early_on = 1;

static inline int early(void)
{
	return __builtin_expect(__atomic_load_n(&early_on, __ATOMIC_ACQUIRE), 0);
}

static void early_end(int write);

/* Keep one event for early_end(): 1 if kept (or lost: the array is
 * full), 0 if tracing is on and the caller writes it itself. */
static __attribute__((noinline)) int early_keep(unsigned kind, unsigned fam, void *p, void *old, size_t size,
						size_t usable, size_t align, void *site)
{
	if (!early())
		return 0;
	if (agg() || ringtrace_tracepoint_enabled(mem, alloc)) {
		early_end(1);
		return 0;
	}
	unsigned i = __atomic_fetch_add(&early_n, 1, __ATOMIC_RELAXED);
	if (i >= EARLY_MAX) {
		/* Full, and still off after libringtrace's start-up: this
		 * process is not recorded; stop paying for it. */
		if (!ringtrace__tls.busy)
			early_end(0);
		return 1;
	}
	struct early_ev *e = &early_evs[i];
	e->p = p;
	e->old = old;
	e->site = site;
	e->size = size;
	e->usable = usable;
	e->kind = (uint8_t)kind;
	e->fam = (uint8_t)fam;
	e->align_log2 = (uint8_t)(align > 1 ? __builtin_ctzll(align) : 0);
	__atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
	return 1;
}

static inline int tracing(void)
{
	return !in_hook && !ringtrace__tls.busy && memsample_mode != MEMSAMPLE_BAD &&
	       (early() || agg() || ringtrace_tracepoint_enabled(mem, alloc) || ringtrace_tracepoint_enabled(mem, free) ||
		ringtrace_tracepoint_enabled(mem, realloc) || ringtrace_tracepoint_enabled(mem, mmap));
}

/* Aggregate mode: the key of an allocation made at SITE: its stack when
 * the recording has stacks (and the map has room), else the call site. */
static inline uint64_t agg_key(void *site)
{
	if (memagg_hdr->by_stack) {
		uint32_t id = ringtrace__stack_id();
		if (id != RINGTRACE__STACK_NONE)
			return MEMAGG_KEY_STACK | id;
	}
	return (uint64_t)(uintptr_t)site;
}

static __attribute__((noinline)) void rec_alloc(unsigned fam, void *p, size_t size, size_t align, void *site)
{
	in_hook = 1;
	size_t u = usable_of(p);
	if (early_keep(EARLY_ALLOC, fam, p, NULL, size, u, align, site)) {
		in_hook = 0;
		return;
	}
	if (agg()) {
		memagg_alloc(fam, p, size, u, agg_key(site));
		in_hook = 0;
		return;
	}
	if (size <= UINT32_MAX && u <= UINT32_MAX)
		ringtrace_tracepoint(mem, alloc, (uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)site, (uint32_t)size,
				     (uint32_t)u, (uint8_t)fam, (uint8_t)log2_align(align));
	else
		ringtrace_tracepoint(mem, alloc_large, (uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)site,
				     (uint64_t)size, (uint64_t)u, (uint8_t)fam, (uint8_t)log2_align(align));
	in_hook = 0;
}

static __attribute__((noinline)) void rec_free(unsigned fam, void *p, void *site)
{
	in_hook = 1;
	if (early() && early_keep(EARLY_FREE, fam, p, NULL, 0, usable_of(p), 0, site)) {
		in_hook = 0;
		return;
	}
	if (agg()) {
		memagg_free(p, mem_free_class(fam), usable_of(p));
		in_hook = 0;
		return;
	}
	ringtrace_tracepoint(mem, free, (uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)site, (uint8_t)fam);
	in_hook = 0;
}

/* Aggregate mode and realloc: the old block leaves the live ones before
 * the real realloc (which may free it, and another thread then get the
 * address), and comes back if the realloc failed. */
struct agg_old {
	struct memagg_blk blk;
	size_t usable;
	int had;
};

static __attribute__((noinline)) void agg_realloc_pre(void *old, struct agg_old *o)
{
	in_hook = 1;
	o->had = 0;
	if (old) {
		o->usable = usable_of(old);
		o->had = memagg_take(old, &o->blk);
	}
	in_hook = 0;
}

static __attribute__((noinline)) void agg_realloc_post(unsigned fam, void *old, void *p, size_t size, void *site,
							 const struct agg_old *o)
{
	in_hook = 1;
	if (!p && size) {
		/* Failed: the old block stays as it was. */
		if (o->had)
			memagg_put_back(old, &o->blk);
		memagg_alloc(fam, NULL, size, 0, agg_key(site));
	} else {
		if (o->had)
			memagg_release(&o->blk, MEM_C_MALLOC, o->usable);
		else if (old)
			memagg_free(old, MEM_C_MALLOC, o->usable); /* counted as unknown */
		if (p)
			memagg_alloc(fam, p, size, usable_of(p), agg_key(site));
	}
	in_hook = 0;
}

static __attribute__((noinline)) void rec_realloc(unsigned fam, void *old, void *p, size_t size, void *site)
{
	in_hook = 1;
	size_t u = usable_of(p);
	if (early_keep(EARLY_REALLOC, fam, p, old, size, u, 0, site)) {
		in_hook = 0;
		return;
	}
	if (size <= UINT32_MAX && u <= UINT32_MAX)
		ringtrace_tracepoint(mem, realloc, (uint64_t)(uintptr_t)old, (uint64_t)(uintptr_t)p,
				     (uint64_t)(uintptr_t)site, (uint32_t)size, (uint32_t)u, (uint8_t)fam);
	else
		ringtrace_tracepoint(mem, realloc_large, (uint64_t)(uintptr_t)old, (uint64_t)(uintptr_t)p,
				     (uint64_t)(uintptr_t)site, (uint64_t)size, (uint64_t)u, (uint8_t)fam);
	in_hook = 0;
}

/* ---- sampling (memsample.c; docs/mem.md, "Sampling") ---------------------
 *
 * With RINGTRACE_MEM_SAMPLE set, an allocation is recorded only when it
 * is sampled (its stack captured then only), and a free only when its
 * block was: the sampled blocks alive are in memsample's set. Failed
 * allocations are all recorded (rare, and an error worth seeing); pages
 * (mmap, munmap, mremap) too, each call a system call anyway. Aggregate
 * mode counts every allocation exactly under its call site's row
 * (memagg_count) and the samples, scaled, under estimate rows.
 */

/* mem:sampling once per process (again in a forked child, which has a
 * trace of its own when followed), as soon as the event is enabled. */
static int announced;

static __attribute__((noinline)) void announce(void)
{
	if (__atomic_load_n(&announced, __ATOMIC_RELAXED) || agg() || ringtrace__tls.busy ||
	    !ringtrace_tracepoint_enabled(mem, sampling))
		return;
	int expect = 0;
	if (!__atomic_compare_exchange_n(&announced, &expect, 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	int was = in_hook;
	in_hook = 1;
	ringtrace_tracepoint(mem, sampling, memsample_mean, memsample_seed, memsample_capacity,
			     (uint32_t)memsample_status, (uint8_t)memsample_fixed_seed);
	in_hook = was;
}

static __attribute__((noinline)) void untracked(void *p)
{
	int was = in_hook;
	in_hook = 1;
	if (agg())
		memagg_sample_untracked();
	else
		ringtrace_tracepoint(mem, untracked, (uint64_t)(uintptr_t)p);
	in_hook = was;
}

/*
 * The usable size of a block the allocator has just returned, for the
 * exact rows (every allocation of a sampled aggregate). glibc's
 * malloc_usable_size() checks that the block is in use by loading the
 * next chunk's header, which is a cache miss at most calls (on cc1 more
 * than the rest of the counting, perf cpu-clock); a block just returned is
 * in use, and its own header, which malloc has just read or written, says
 * its size: the chunk's size (the low 3 bits are flags) less the 8 bytes
 * of its header, as glibc's musable() computes it for a chunk of the heap.
 * A chunk of its own mapping (IS_MMAPPED, bit 1; a system call made it
 * anyway) gets malloc_usable_size(). Used only when malloc and
 * malloc_usable_size are glibc's own (the same libc.so object,
 * usable_probe(), which allocates nothing: the program's heap stays as it
 * would be), and checked against malloc_usable_size() on the first
 * USABLE_CHECKS blocks: a difference turns it off for good.
 */
#define USABLE_CHECKS 256
enum { USABLE_CALL, USABLE_CHECKING, USABLE_HDR };
static int usable_hdr;               /* USABLE_*: how new_usable() answers */
static int usable_checks = USABLE_CHECKS;

static inline size_t hdr_usable(size_t h)
{
	return (h & ~(size_t)7) - sizeof(size_t);
}

static __attribute__((noinline)) size_t usable_check(void *p, size_t got)
{
	size_t want = usable_of(p);
	/* Relaxed: a few more checks than USABLE_CHECKS when threads race;
	 * a difference found by one thread stops the others at their next
	 * block. */
	if (want != got)
		__atomic_store_n(&usable_hdr, USABLE_CALL, __ATOMIC_RELAXED);
	else if (__atomic_sub_fetch(&usable_checks, 1, __ATOMIC_RELAXED) <= 0) {
		int expect = USABLE_CHECKING;
		__atomic_compare_exchange_n(&usable_hdr, &expect, USABLE_HDR, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	return want;
}

static inline size_t new_usable(void *p)
{
	int how = __atomic_load_n(&usable_hdr, __ATOMIC_RELAXED);
	if (how == USABLE_CALL || !p)
		return usable_of(p);
	size_t h = ((const size_t *)p)[-1];
	if (__builtin_expect(h & 2, 0))
		return usable_of(p);
	if (__builtin_expect(how == USABLE_CHECKING, 0))
		return usable_check(p, hdr_usable(h));
	return hdr_usable(h);
}

static void usable_probe(void)
{
	Dl_info a, b;
	if (!real.malloc || !real.usable || !dladdr((void *)real.malloc, &a) || !dladdr((void *)real.usable, &b) ||
	    !a.dli_fname || a.dli_fbase != b.dli_fbase)
		return;
	const char *base = strrchr(a.dli_fname, '/');
	if (!strncmp(base ? base + 1 : a.dli_fname, "libc.so", 7))
		usable_hdr = USABLE_CHECKING;
}

/* Aggregate mode, a block not sampled: its exact count only. */
static __attribute__((noinline)) void agg_count(unsigned fam, void *p, size_t size, void *site)
{
	in_hook = 1;
	memagg_count(fam, p, size, new_usable(p), (uint64_t)(uintptr_t)site);
	in_hook = 0;
}

/* The same, inline in the wrappers for the common case (a heap chunk of
 * glibc's, at a site the thread's way holds): no call, no registers
 * saved, which was a third of the counting's cost on malloc/free pairs
 * (perf cpu-clock). */
static inline void agg_count_inline(unsigned fam, void *p, size_t size, void *site)
{
	if (__atomic_load_n(&usable_hdr, __ATOMIC_RELAXED) == USABLE_HDR) {
		size_t h = ((const size_t *)p)[-1];
		if (!(h & 2)) {
			in_hook = 1;
			int done = memagg_count_way(fam, size, hdr_usable(h), (uint64_t)(uintptr_t)site);
			in_hook = 0;
			if (__builtin_expect(done, 1))
				return;
		}
	}
	agg_count(fam, p, size, site);
}

/* A sampled block (P NULL: a failed allocation, always recorded). */
static __attribute__((noinline)) void sampled_alloc(unsigned fam, void *p, size_t size, size_t align, void *site)
{
	announce();
	if (agg()) {
		in_hook = 1;
		size_t u = new_usable(p);
		memagg_count(fam, p, size, u, (uint64_t)(uintptr_t)site);
		if (p) {
			/* The estimate row's counters first: a free racing in
			 * (the program's bug) finds the row counted. */
			uint64_t info = memagg_sample_alloc(fam, size, u, agg_key(site), 1);
			if (memsample_insert((uintptr_t)p, info) < 0) {
				memagg_sample_free(info, 0, u); /* not alive: its free will not be seen */
				memagg_sample_untracked();
			}
		}
		in_hook = 0;
		return;
	}
	/* Remembered before the event and before the program has the
	 * block: its free, in any thread, finds it. */
	int lost = p && memsample_insert((uintptr_t)p, 0) < 0;
	rec_alloc(fam, p, size, align, site);
	if (lost)
		untracked(p);
}

static __attribute__((noinline)) void sampled_free(unsigned fam, void *p, void *site)
{
	uint64_t info;
	if (!memsample_take((uintptr_t)p, &info))
		return;
	if (agg()) {
		in_hook = 1;
		memagg_sample_free(info, mem_free_class(fam), usable_of(p));
		in_hook = 0;
		return;
	}
	rec_free(fam, p, site);
}

static inline void ev_alloc(unsigned fam, void *p, size_t size, size_t align, void *site)
{
	if (__builtin_expect(memsample_mode == MEMSAMPLE_OFF, 1)) {
		rec_alloc(fam, p, size, align, site);
		return;
	}
	/* MEMSAMPLE_ON: tracing() is 0 when the configuration was bad. */
	if (p && !memsample_pick(size)) {
		if (agg())
			agg_count_inline(fam, p, size, site);
		return;
	}
	sampled_alloc(fam, p, size, align, site);
}

/* Before the real free, as rec_free: the block leaves the set first. */
static inline void ev_free(unsigned fam, void *p, void *site)
{
	if (__builtin_expect(memsample_mode == MEMSAMPLE_OFF, 1)) {
		rec_free(fam, p, site);
		return;
	}
	if (memsample_maybe(p))
		sampled_free(fam, p, site);
}

/* realloc while sampling, both modes: the old block leaves the set
 * before the real realloc (the address may be handed to another thread
 * as soon as it returns) and comes back if the realloc failed. The new
 * block is a new allocation for the countdown. Events: both sampled,
 * realloc(old, ptr); only the new, realloc(0, ptr) (an allocation); only
 * the old, realloc(old, 0) of size 0 (the old block's end). */
struct samp_old {
	uint64_t info;
	size_t usable;
	int had;
};

static __attribute__((noinline)) void sampled_realloc_pre(void *old, struct samp_old *o)
{
	o->had = 0;
	if (!old || !memsample_maybe(old))
		return;
	in_hook = 1;
	if (memsample_take((uintptr_t)old, &o->info)) {
		o->had = 1;
		o->usable = usable_of(old);
	}
	in_hook = 0;
}

static __attribute__((noinline)) void sampled_realloc_post(unsigned fam, void *old, void *p, size_t size, void *site,
							     const struct samp_old *o)
{
	if (!p && size) {
		/* Failed: the old block stays as it was; the failure is
		 * recorded, as every failed allocation. */
		if (o->had && memsample_insert((uintptr_t)old, o->info) < 0) {
			if (agg()) {
				in_hook = 1;
				memagg_sample_free(o->info, 0, o->usable);
				in_hook = 0;
			}
			untracked(old);
		}
		if (agg())
			agg_count(fam, NULL, size, site);
		else
			rec_realloc(fam, NULL, NULL, size, site);
		return;
	}
	int pick = p && memsample_pick(size);
	if (pick)
		announce();
	if (agg()) {
		in_hook = 1;
		size_t u = new_usable(p);
		if (p)
			memagg_count(fam, p, size, u, (uint64_t)(uintptr_t)site);
		if (o->had)
			memagg_sample_free(o->info, MEM_C_MALLOC, o->usable);
		if (pick) {
			uint64_t info = memagg_sample_alloc(fam, size, u, agg_key(site), 1);
			if (memsample_insert((uintptr_t)p, info) < 0) {
				memagg_sample_free(info, 0, u);
				memagg_sample_untracked();
			}
		}
		in_hook = 0;
		return;
	}
	if (pick) {
		int lost = memsample_insert((uintptr_t)p, 0) < 0;
		rec_realloc(fam, o->had ? old : NULL, p, size, site);
		if (lost)
			untracked(p);
	} else if (o->had) {
		rec_realloc(fam, old, NULL, 0, site);
	}
}

/* in_hook for the rest of a scope, restored even when an exception
 * passes (the C++ operators). */
static void guard_restore(int *was)
{
	in_hook = *was;
}

#define GUARD int guard_was_ __attribute__((cleanup(guard_restore), unused)) = in_hook; in_hook = 1

/*
 * An operator new in progress on this thread. The real operator new calls
 * malloc (or aligned_alloc) for its block; that call records the block as
 * new or new[] with the program's call site, and clears the request. Any
 * other allocation made meanwhile (a new_handler's, the std::bad_alloc
 * object's) is recorded as what it is, so that its later free matches.
 * A request still set when the real operator new returns was served
 * without our malloc (an allocator's own operator new): recorded then.
 */
struct pend_new {
	void *site;
	size_t size;
	size_t align;
	uint8_t fam;
	uint8_t set;
};

static __thread struct pend_new pend __attribute__((tls_model("initial-exec")));

/* Called by the allocation functions while a request is set: 1 if the
 * block of SIZE bytes at P was the one operator new asked for (recorded
 * as such; a failed attempt is not recorded, operator new retries or
 * fails as a whole), 0 if it is some other allocation. */
static __attribute__((noinline)) int pend_claim(void *p, size_t size)
{
	size_t want = pend.size ? pend.size : 1;
	size_t slack = pend.align > 16 ? pend.align : 16;
	if (size < want || size - want >= slack)
		return 0;
	if (p) {
		pend.set = 0;
		ev_alloc(pend.fam, p, pend.size, pend.align, pend.site);
	}
	return 1;
}

#define PEND_CLAIM(p, size) (__builtin_expect(pend.set, 0) && pend_claim((p), (size)))

/* Leaving an operator new: a request still set here means the real one
 * threw (std::bad_alloc), recorded as a failed allocation; the request of
 * an enclosing operator new (one called by a new_handler) is restored. */
static void pend_leave(struct pend_new *saved)
{
	if (pend.set && !in_hook && !ringtrace__tls.busy)
		ev_alloc(pend.fam, NULL, pend.size, pend.align, pend.site);
	pend = *saved;
}

/* Aggregate mode, when the recorder asked for it (RINGTRACE_MEM_AGG): the
 * block is mapped before main, with in_hook set so that the mappings made
 * for it are not the program's. A forked child stops counting (its
 * allocations would land in its parent's counters). */
static int agg_follow_fork;          /* --follow-fork: a child counts into its own block */

static void sample_setup(void);

/* Before any count: readers of the block know which rows mean what. */
static void agg_describe_sampling(void)
{
	struct memagg_header *h = agg();
	if (!h)
		return;
	sample_setup();
	h->sample_mean = memsample_mode == MEMSAMPLE_ON ? memsample_mean : 0;
	h->sample_seed = memsample_seed;
	h->sample_status = (uint32_t)memsample_status;
	h->sample_flags = memsample_fixed_seed ? MEMAGG_SAMPLE_FIXED_SEED : 0;
}

static void agg_child(void)
{
	struct memagg_header *h = agg();
	if (!h || !agg_follow_fork) {
		__atomic_store_n(&memagg_hdr, NULL, __ATOMIC_RELAXED);
		return;
	}
	int was = in_hook;
	in_hook = 1;
	if (memagg_own(h->key_bits, h->by_stack) < 0)
		__atomic_store_n(&memagg_hdr, NULL, __ATOMIC_RELAXED);
	else
		agg_describe_sampling();
	in_hook = was;
}

static int mem_follows_exec(void);

/*
 * Followed processes under --aggregate (RINGTRACE_MEM_AGG_FOLLOW="fork=F",
 * set by the recorder): the program's block's key bits and kind are added
 * to the variable for the programs it executes, and a followed one (the
 * tracer stays in its LD_PRELOAD only then) makes a block of its own
 * (memagg_own()); a forked child makes one when F is 1.
 */
static void agg_follow_start(void)
{
	const char *env = getenv("RINGTRACE_MEM_AGG_FOLLOW");
	int f = 0;
	unsigned bits = 0, stack = 0;
	if (!env)
		return;
	int n = sscanf(env, "fork=%d bits=%u stack=%u", &f, &bits, &stack);
	agg_follow_fork = f == 1;
	if (agg()) {
		char v[64];
		snprintf(v, sizeof(v), "fork=%d bits=%u stack=%u", f == 1, agg()->key_bits, agg()->by_stack);
		setenv("RINGTRACE_MEM_AGG_FOLLOW", v, 1);
		return;
	}
	if (n == 3 && mem_follows_exec() && memagg_own(bits, stack) == 0) {
		agg_describe_sampling();
		pthread_atfork(NULL, NULL, agg_child);
	}
}

/* A forked child announces its sampling in its own trace (when it is
 * followed, libringtrace's fork handler, registered before this one, has
 * given it buffers by now). */
static void sample_child(void)
{
	__atomic_store_n(&announced, 0, __ATOMIC_RELAXED);
	announce();
}

/* Sampling's configuration, read once by whichever constructor runs
 * first (both need it). */
static void sample_setup(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	int was = in_hook;
	in_hook = 1; /* the set's mapping is the tracer's */
	memsample_init();
	if (memsample_mode != MEMSAMPLE_OFF)
		pthread_atfork(NULL, NULL, sample_child);
	if (memsample_mode == MEMSAMPLE_ON && ready())
		usable_probe();
	in_hook = was;
}

__attribute__((constructor(101))) static void memagg_ctor(void)
{
	if (!ready())
		return;
	sample_setup();
	in_hook = 1;
	if (getenv("RINGTRACE_MEM_AGG") && memagg_attach() == 0 && memagg_hdr) {
		pthread_atfork(NULL, NULL, agg_child);
		agg_describe_sampling();
	}
	unsetenv("RINGTRACE_MEM_AGG");
	agg_follow_start();
	in_hook = 0;
}

/* ---- the C allocator ----------------------------------------------------- */

EXPORT void *malloc(size_t size)
{
	if (__builtin_expect(!ready(), 0))
		return pool_alloc(size, 16);
	void *p = real.malloc(size);
	if (tracing() && !PEND_CLAIM(p, size))
		ev_alloc(MEM_A_MALLOC, p, size, 0, __builtin_return_address(0));
	return p;
}

EXPORT void *calloc(size_t n, size_t each)
{
	size_t size;
	if (__builtin_expect(!ready(), 0))
		return __builtin_mul_overflow(n, each, &size) ? NULL : pool_alloc(size, 16);
	void *p = real.calloc(n, each);
	if (tracing())
		ev_alloc(MEM_A_CALLOC, p, __builtin_mul_overflow(n, each, &size) ? SIZE_MAX : size, 0,
			 __builtin_return_address(0));
	return p;
}

EXPORT void free(void *p)
{
	if (!p || in_pool(p))
		return;
	if (__builtin_expect(!ready(), 0))
		return; /* cannot happen: the block came from somewhere */
	if (tracing())
		ev_free(MEM_F_FREE, p, __builtin_return_address(0));
	real.free(p);
}

/* realloc of a pool block: a real one, with the contents copied. */
static void *pool_move(void *old, size_t size)
{
	void *p = real.malloc(size);
	if (p) {
		size_t n = pool_size(old);
		memcpy(p, old, n < size ? n : size);
	}
	return p;
}

EXPORT void *realloc(void *old, size_t size)
{
	if (__builtin_expect(!ready(), 0)) {
		void *p = pool_alloc(size, 16);
		if (p && old && in_pool(old)) {
			size_t n = pool_size(old);
			memcpy(p, old, n < size ? n : size);
		}
		return p;
	}
	if (__builtin_expect(memsample_mode != MEMSAMPLE_OFF, 0) && tracing()) {
		struct samp_old o;
		void *o_ptr = in_pool(old) ? NULL : old;
		sampled_realloc_pre(o_ptr, &o);
		void *p = in_pool(old) ? pool_move(old, size) : real.realloc(old, size);
		sampled_realloc_post(MEM_A_REALLOC, o_ptr, p, size, __builtin_return_address(0), &o);
		return p;
	}
	if (__builtin_expect(agg() != NULL, 0) && tracing()) {
		struct agg_old o;
		void *o_ptr = in_pool(old) ? NULL : old;
		agg_realloc_pre(o_ptr, &o);
		void *p = in_pool(old) ? pool_move(old, size) : real.realloc(old, size);
		agg_realloc_post(MEM_A_REALLOC, o_ptr, p, size, __builtin_return_address(0), &o);
		return p;
	}
	void *p = in_pool(old) ? pool_move(old, size) : real.realloc(old, size);
	if (tracing())
		rec_realloc(MEM_A_REALLOC, in_pool(old) ? NULL : old, p, size, __builtin_return_address(0));
	return p;
}

EXPORT void *reallocarray(void *old, size_t n, size_t each)
{
	size_t size;
	if (__builtin_mul_overflow(n, each, &size)) {
		errno = ENOMEM;
		return NULL;
	}
	if (__builtin_expect(!ready(), 0) || in_pool(old) || !real.reallocarray)
		return realloc(old, size);
	void *p;
	if (__builtin_expect(memsample_mode != MEMSAMPLE_OFF, 0) && tracing()) {
		struct samp_old so;
		sampled_realloc_pre(old, &so);
		{
			GUARD;
			p = real.reallocarray(old, n, each);
		}
		sampled_realloc_post(MEM_A_REALLOCARRAY, old, p, size, __builtin_return_address(0), &so);
		return p;
	}
	struct agg_old o;
	int aggr = agg() && tracing();
	if (aggr)
		agg_realloc_pre(old, &o);
	{
		/* glibc's calls realloc: one event, not two. */
		GUARD;
		p = real.reallocarray(old, n, each);
	}
	if (aggr)
		agg_realloc_post(MEM_A_REALLOCARRAY, old, p, size, __builtin_return_address(0), &o);
	else if (tracing())
		rec_realloc(MEM_A_REALLOCARRAY, old, p, size, __builtin_return_address(0));
	return p;
}

EXPORT int posix_memalign(void **ret, size_t align, size_t size)
{
	if (__builtin_expect(!ready(), 0)) {
		void *p = pool_alloc(size, align);
		if (!p)
			return ENOMEM;
		*ret = p;
		return 0;
	}
	int r = real.posix_memalign(ret, align, size);
	if (tracing() && !PEND_CLAIM(r == 0 ? *ret : NULL, size))
		ev_alloc(MEM_A_POSIX_MEMALIGN, r == 0 ? *ret : NULL, size, align, __builtin_return_address(0));
	return r;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (__builtin_expect(!ready(), 0))
		return pool_alloc(size, align);
	void *p = real.aligned_alloc(align, size);
	if (tracing() && !PEND_CLAIM(p, size))
		ev_alloc(MEM_A_ALIGNED_ALLOC, p, size, align, __builtin_return_address(0));
	return p;
}

EXPORT void *memalign(size_t align, size_t size)
{
	if (__builtin_expect(!ready(), 0))
		return pool_alloc(size, align);
	void *p = real.memalign(align, size);
	if (tracing() && !PEND_CLAIM(p, size))
		ev_alloc(MEM_A_MEMALIGN, p, size, align, __builtin_return_address(0));
	return p;
}

EXPORT void *valloc(size_t size)
{
	if (__builtin_expect(!ready(), 0))
		return pool_alloc(size, 4096);
	void *p = real.valloc(size);
	if (tracing())
		ev_alloc(MEM_A_VALLOC, p, size, (size_t)sysconf(_SC_PAGESIZE), __builtin_return_address(0));
	return p;
}

EXPORT void *pvalloc(size_t size)
{
	if (__builtin_expect(!ready(), 0))
		return pool_alloc(size, 4096);
	void *p = real.pvalloc(size);
	if (tracing())
		ev_alloc(MEM_A_PVALLOC, p, size, (size_t)sysconf(_SC_PAGESIZE), __builtin_return_address(0));
	return p;
}

/* ---- pages --------------------------------------------------------------- */

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (__builtin_expect(!ready(), 0) || !real.mmap) {
		errno = ENOSYS;
		return MAP_FAILED;
	}
	void *p = real.mmap(addr, len, prot, flags, fd, off);
	if ((flags & MAP_ANONYMOUS) && p != MAP_FAILED && tracing() && !agg() && ringtrace_tracepoint_enabled(mem, mmap)) {
		in_hook = 1;
		ringtrace_tracepoint(mem, mmap, (uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)__builtin_return_address(0),
				     (uint64_t)len, (uint8_t)MEM_A_MMAP);
		in_hook = 0;
	}
	return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

EXPORT int munmap(void *addr, size_t len)
{
	if (__builtin_expect(!ready(), 0) || !real.munmap) {
		errno = ENOSYS;
		return -1;
	}
	/* Before the unmapping, as a free: the range cannot be handed out
	 * again before the event. (File mappings too: the reader ignores
	 * ranges it never saw mapped.) */
	if (tracing() && !agg() && ringtrace_tracepoint_enabled(mem, munmap)) {
		in_hook = 1;
		ringtrace_tracepoint(mem, munmap, (uint64_t)(uintptr_t)addr,
				     (uint64_t)(uintptr_t)__builtin_return_address(0), (uint64_t)len);
		in_hook = 0;
	}
	return real.munmap(addr, len);
}

EXPORT void *mremap(void *old, size_t old_size, size_t size, int flags, ...)
{
	if (__builtin_expect(!ready(), 0) || !real.mremap) {
		errno = ENOSYS;
		return MAP_FAILED;
	}
	void *want = NULL;
	if (flags & MREMAP_FIXED) {
		__builtin_va_list ap;
		__builtin_va_start(ap, flags);
		want = __builtin_va_arg(ap, void *);
		__builtin_va_end(ap);
	}
	void *p = real.mremap(old, old_size, size, flags, want);
	if (p != MAP_FAILED && tracing() && !agg() && ringtrace_tracepoint_enabled(mem, mremap)) {
		in_hook = 1;
		ringtrace_tracepoint(mem, mremap, (uint64_t)(uintptr_t)old, (uint64_t)(uintptr_t)p,
				     (uint64_t)(uintptr_t)__builtin_return_address(0), (uint64_t)old_size,
				     (uint64_t)size);
		in_hook = 0;
	}
	return p;
}

/* ---- C++ operators new and delete ----------------------------------------
 *
 * Defined here by their mangled names (this file is C, built with
 * -fexceptions so that a std::bad_alloc thrown by the real operator new
 * unwinds through it). Each calls the next definition (libstdc++'s, or the
 * allocator's own). The block a real operator new allocates is recorded
 * once, as new or new[] (struct pend_new); a real operator delete runs
 * with in_hook set so that its free is not recorded a second time. The
 * state is restored by cleanups, which also run when an exception passes.
 */

static void *cxx_sym(void **cache, const char *name)
{
	void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	if (f)
		return f;
	f = sym(name);
	if (!f) {
		/* Loaded later, and only in a local scope (a dlopen'ed plugin's
		 * libstdc++): not found by RTLD_NEXT. */
		void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
		if (h) {
			f = dlsym(h, name);
			dlclose(h);
		}
	}
	if (f)
		__atomic_store_n(cache, f, __ATOMIC_RELEASE);
	return f;
}


/* operator new / new[]: plain (sz), nothrow (sz, nt), aligned (sz, al),
 * aligned nothrow (sz, al, nt). Without the real one (no C++ runtime found),
 * malloc-family fallbacks keep the program going. While tracing, the
 * request is left for the allocation function the real one calls (see
 * struct pend_new); otherwise the real one runs with in_hook set. The
 * operator new that libstdc++'s new[] calls serves the same request. */
#define NEW_BODY(fam, sz, al, call, fallback)                                      \
	if (!tracing()) {                                                           \
		GUARD;                                                              \
		return f ? call : fallback;                                         \
	}                                                                           \
	if (pend.set && pend.size == (sz))                                          \
		return f ? call : fallback; /* new[] calling new: one request */   \
	void *site = __builtin_return_address(0);                                   \
	struct pend_new saved __attribute__((cleanup(pend_leave), unused)) = pend;         \
	pend = (struct pend_new){ site, sz, al, fam, 1 };                           \
	void *p = f ? call : fallback;                                              \
	if (pend.set) {                                                             \
		pend.set = 0;                                                       \
		ev_alloc(fam, p, sz, al, site);                                     \
	}                                                                           \
	return p

#define NEW_PLAIN(mangled, fam)                                                     \
	EXPORT void *mangled(size_t sz);                                            \
	EXPORT void *mangled(size_t sz)                                             \
	{                                                                           \
		static void *cache;                                                 \
		void *(*f)(size_t) = (void *(*)(size_t))cxx_sym(&cache, #mangled);  \
		NEW_BODY(fam, sz, 0, f(sz), malloc(sz ? sz : 1));                   \
	}

#define NEW_NOTHROW(mangled, fam)                                                      \
	EXPORT void *mangled(size_t sz, const void *nt);                               \
	EXPORT void *mangled(size_t sz, const void *nt)                                \
	{                                                                              \
		static void *cache;                                                    \
		void *(*f)(size_t, const void *) =                                     \
			(void *(*)(size_t, const void *))cxx_sym(&cache, #mangled);    \
		NEW_BODY(fam, sz, 0, f(sz, nt), malloc(sz ? sz : 1));                  \
	}

#define NEW_ALIGNED(mangled, fam)                                                       \
	EXPORT void *mangled(size_t sz, size_t al);                                     \
	EXPORT void *mangled(size_t sz, size_t al)                                      \
	{                                                                               \
		static void *cache;                                                     \
		void *(*f)(size_t, size_t) = (void *(*)(size_t, size_t))cxx_sym(&cache, #mangled); \
		NEW_BODY(fam, sz, al, f(sz, al), aligned_alloc(al, (sz + al - 1) / al * al)); \
	}

#define NEW_ALIGNED_NOTHROW(mangled, fam)                                               \
	EXPORT void *mangled(size_t sz, size_t al, const void *nt);                     \
	EXPORT void *mangled(size_t sz, size_t al, const void *nt)                      \
	{                                                                               \
		static void *cache;                                                     \
		void *(*f)(size_t, size_t, const void *) =                              \
			(void *(*)(size_t, size_t, const void *))cxx_sym(&cache, #mangled); \
		NEW_BODY(fam, sz, al, f(sz, al, nt), aligned_alloc(al, (sz + al - 1) / al * al)); \
	}

NEW_PLAIN(_Znwm, MEM_A_NEW)
NEW_PLAIN(_Znam, MEM_A_NEW_ARRAY)
NEW_NOTHROW(_ZnwmRKSt9nothrow_t, MEM_A_NEW)
NEW_NOTHROW(_ZnamRKSt9nothrow_t, MEM_A_NEW_ARRAY)
NEW_ALIGNED(_ZnwmSt11align_val_t, MEM_A_NEW)
NEW_ALIGNED(_ZnamSt11align_val_t, MEM_A_NEW_ARRAY)
NEW_ALIGNED_NOTHROW(_ZnwmSt11align_val_tRKSt9nothrow_t, MEM_A_NEW)
NEW_ALIGNED_NOTHROW(_ZnamSt11align_val_tRKSt9nothrow_t, MEM_A_NEW_ARRAY)

/* operator delete / delete[]: the event first (as for free), then the
 * real one; every variant takes the pointer first and up to two more
 * arguments (size, alignment, nothrow tag), passed on as they came. */
#define DELETE_1(mangled, fam)                                                  \
	EXPORT void mangled(void *p);                                           \
	EXPORT void mangled(void *p)                                            \
	{                                                                       \
		static void *cache;                                             \
		if (!p || in_pool(p))                                           \
			return;                                                 \
		void (*f)(void *) = (void (*)(void *))cxx_sym(&cache, #mangled); \
		if (tracing())                                                  \
			ev_free(fam, p, __builtin_return_address(0));           \
		GUARD;                                                          \
		if (f)                                                          \
			f(p);                                                   \
		else                                                            \
			free(p);                                                \
	}

#define DELETE_2(mangled, fam, T)                                                       \
	EXPORT void mangled(void *p, T a);                                              \
	EXPORT void mangled(void *p, T a)                                               \
	{                                                                               \
		static void *cache;                                                     \
		if (!p || in_pool(p))                                                   \
			return;                                                         \
		void (*f)(void *, T) = (void (*)(void *, T))cxx_sym(&cache, #mangled);  \
		if (tracing())                                                          \
			ev_free(fam, p, __builtin_return_address(0));                   \
		GUARD;                                                                  \
		if (f)                                                                  \
			f(p, a);                                                        \
		else                                                                    \
			free(p);                                                        \
	}

#define DELETE_3(mangled, fam, T, U)                                                       \
	EXPORT void mangled(void *p, T a, U b);                                            \
	EXPORT void mangled(void *p, T a, U b)                                             \
	{                                                                                  \
		static void *cache;                                                        \
		if (!p || in_pool(p))                                                      \
			return;                                                            \
		void (*f)(void *, T, U) = (void (*)(void *, T, U))cxx_sym(&cache, #mangled); \
		if (tracing())                                                             \
			ev_free(fam, p, __builtin_return_address(0));                      \
		GUARD;                                                                     \
		if (f)                                                                     \
			f(p, a, b);                                                        \
		else                                                                       \
			free(p);                                                           \
	}

DELETE_1(_ZdlPv, MEM_F_DELETE)
DELETE_1(_ZdaPv, MEM_F_DELETE_ARRAY)
DELETE_2(_ZdlPvm, MEM_F_DELETE, size_t)
DELETE_2(_ZdaPvm, MEM_F_DELETE_ARRAY, size_t)
DELETE_2(_ZdlPvRKSt9nothrow_t, MEM_F_DELETE, const void *)
DELETE_2(_ZdaPvRKSt9nothrow_t, MEM_F_DELETE_ARRAY, const void *)
DELETE_2(_ZdlPvSt11align_val_t, MEM_F_DELETE, size_t)
DELETE_2(_ZdaPvSt11align_val_t, MEM_F_DELETE_ARRAY, size_t)
DELETE_3(_ZdlPvmSt11align_val_t, MEM_F_DELETE, size_t, size_t)
DELETE_3(_ZdaPvmSt11align_val_t, MEM_F_DELETE_ARRAY, size_t, size_t)
DELETE_3(_ZdlPvSt11align_val_tRKSt9nothrow_t, MEM_F_DELETE, size_t, const void *)
DELETE_3(_ZdaPvSt11align_val_tRKSt9nothrow_t, MEM_F_DELETE_ARRAY, size_t, const void *)

/* ---- objects unloaded ------------------------------------------------------
 *
 * Call sites are named from the log of loaded objects. An object without
 * tracepoints that the program dlopen()s and dlclose()s would be missing
 * from it, so the objects are logged before each dlclose (still mapped
 * then) and at exit. dlopen itself is not wrapped: glibc resolves a
 * relative name and $ORIGIN from the caller's object, which a wrapper
 * would change.
 */
EXPORT int dlclose(void *handle)
{
	static void *cache;
	int (*f)(void *) = (int (*)(void *))cxx_sym(&cache, "dlclose");
	if (!f)
		return -1;
	int tracing = !in_hook && (agg() || ringtrace_tracepoint_enabled(mem, alloc));
	if (tracing)
		ringtrace__maps_changed();
	int r = f(handle);
	/* Again once unloaded: the stack capture's unwind tables of the
	 * object are dropped before anything can be loaded at its place. */
	if (tracing)
		ringtrace__maps_changed();
	return r;
}

__attribute__((destructor)) static void memtrace_fini(void)
{
	if (early())
		early_end(agg() || ringtrace_tracepoint_enabled(mem, alloc));
	if (agg() || ringtrace_tracepoint_enabled(mem, alloc))
		ringtrace__maps_changed();
}

/* ---- start-up ------------------------------------------------------------ */

/*
 * Does this library stay in LD_PRELOAD? RINGTRACE_MEM_FOLLOW=1 (record
 * --follow-exec): for every program. RINGTRACE_MEM_FOLLOW=self:PID (the
 * default): in process PID only, the program the recorder runs, so that
 * the program it executes in its own process (a wrapper's exec, `sh -c
 * 'exec ...'`, env) is traced too; a child it forks that executes a
 * program is not the same pid, and takes it out at start.
 */
static int mem_follows_exec(void)
{
	const char *follow = getenv("RINGTRACE_MEM_FOLLOW");
	if (!follow)
		return 0;
	if (!strcmp(follow, "1"))
		return 1;
	if (strncmp(follow, "self:", 5))
		return 0;
	char *end;
	long pid = strtol(follow + 5, &end, 10);
	if (!*end && pid > 0 && pid == (long)getpid())
		return 1;
	unsetenv("RINGTRACE_MEM_FOLLOW");
	return 0;
}

/*
 * Look the functions up before main, and take this library out of
 * LD_PRELOAD: programs this one starts are left alone unless followed
 * (mem_follows_exec()).
 */
__attribute__((constructor(101))) static void memtrace_init(void)
{
	(void)ready();
	GUARD; /* its allocations (and setenv's) are the tracer's */
	sample_setup();
	/* A free's stack is read by no report (its call site is a field),
	 * and capturing it doubled the cost of stacks: not captured unless
	 * asked (docs/mem.md). Before any free is recorded: the probe reads
	 * the flags relaxed, as it reads the trigger bit. */
	const char *fs = getenv("RINGTRACE_MEM_FREE_STACKS");
	if (!fs || strcmp(fs, "1") != 0)
		__atomic_fetch_or(&ringtrace__desc_mem_free.flags, RINGTRACE__EVF_NO_STACK, __ATOMIC_RELAXED);
	if (mem_follows_exec())
		return;
	const char *pre = getenv("LD_PRELOAD");
	if (!pre)
		return;
	size_t n = strlen(pre);
	char *keep = malloc(n + 1);
	if (!keep)
		return;
	size_t k = 0;
	const char *s = pre;
	while (*s) {
		size_t len = strcspn(s, ": ");
		const char *base = s + len;
		while (base > s && base[-1] != '/')
			base--;
		int ours = (size_t)(s + len - base) == strlen("libringtrace-malloc.so") &&
			   !strncmp(base, "libringtrace-malloc.so", (size_t)(s + len - base));
		if (len && !ours) {
			if (k)
				keep[k++] = ':';
			memcpy(keep + k, s, len);
			k += len;
		}
		s += len;
		while (*s == ':' || *s == ' ')
			s++;
	}
	keep[k] = 0;
	if (k)
		setenv("LD_PRELOAD", keep, 1);
	else
		unsetenv("LD_PRELOAD");
	free(keep);
}

/* After the constructors that register this file's events (no priority,
 * so after memtrace_init): say how the trace is sampled before the
 * program runs, and why nothing is recorded when the configuration was
 * refused. */
__attribute__((constructor)) static void memsample_announce(void)
{
	if (memsample_mode != MEMSAMPLE_OFF)
		announce();
}

/* ---- the allocations made before tracing is on (early_keep()) ---------- */

/* One kept event, written as it would have been then. */
/*
 * Under sampling (event log), a kept event meets the draw a live one
 * would have met, in the order they happened: an allocation is picked by
 * the countdown (and enters the set of sampled blocks), a free is written
 * only for a sampled block, a realloc becomes what sampled_realloc_post()
 * writes. Failed allocations are all written, as live ones. *e may be
 * changed; 0: not written, 1: write it, 2: write it, then say the block
 * is untracked (the set is full).
 */
static int early_draw(struct early_ev *e)
{
	uint64_t info;
	if (e->kind == EARLY_FREE)
		return e->p && memsample_take((uintptr_t)e->p, &info);
	int had = e->kind == EARLY_REALLOC && e->old && memsample_take((uintptr_t)e->old, &info);
	if (!e->p)
		return e->size || had; /* a failure; or realloc(old, 0) that freed */
	if (!memsample_pick(e->size)) {
		if (!had)
			return 0;
		/* Only the old block was sampled: its end. */
		e->p = NULL;
		e->size = e->usable = 0;
		return 1;
	}
	announce();
	if (e->kind == EARLY_REALLOC && !had)
		e->old = NULL; /* an allocation, as far as the samples go */
	/* The set full: written, then said untracked, as sampled_alloc(). */
	return memsample_insert((uintptr_t)e->p, 0) < 0 ? 2 : 1;
}

static void early_write_one(const struct early_ev *e);

static void early_write(const struct early_ev *kept)
{
	struct early_ev copy = *kept;
	int draw = 1;
	if (memsample_mode == MEMSAMPLE_ON && !agg() && !(draw = early_draw(&copy)))
		return;
	early_write_one(&copy);
	if (draw == 2)
		untracked(copy.p);
}

static void early_write_one(const struct early_ev *e)
{
	uint64_t p = (uint64_t)(uintptr_t)e->p, site = (uint64_t)(uintptr_t)e->site;
	if (agg()) {
		/* By call site: the stack now is not theirs. */
		if (e->kind == EARLY_FREE) {
			memagg_free(e->p, mem_free_class(e->fam), e->usable);
			return;
		}
		if (e->kind == EARLY_REALLOC && e->old)
			memagg_free(e->old, MEM_C_MALLOC, 0);
		if (e->p || e->kind == EARLY_ALLOC)
			memagg_alloc(e->fam, e->p, e->size, e->usable, site);
		return;
	}
	int small = e->size <= UINT32_MAX && e->usable <= UINT32_MAX;
	if (e->kind == EARLY_FREE)
		ringtrace_tracepoint(mem, free, p, site, e->fam);
	else if (e->kind == EARLY_ALLOC && small)
		ringtrace_tracepoint(mem, alloc, p, site, (uint32_t)e->size, (uint32_t)e->usable, e->fam, e->align_log2);
	else if (e->kind == EARLY_ALLOC)
		ringtrace_tracepoint(mem, alloc_large, p, site, (uint64_t)e->size, (uint64_t)e->usable, e->fam,
				     e->align_log2);
	else if (small)
		ringtrace_tracepoint(mem, realloc, (uint64_t)(uintptr_t)e->old, p, site, (uint32_t)e->size,
				     (uint32_t)e->usable, e->fam);
	else
		ringtrace_tracepoint(mem, realloc_large, (uint64_t)(uintptr_t)e->old, p, site, (uint64_t)e->size,
				     (uint64_t)e->usable, e->fam);
}

static void early_write_range(unsigned from, unsigned to)
{
	for (unsigned i = from; i < to && i < EARLY_MAX; i++)
		if (__atomic_load_n(&early_evs[i].done, __ATOMIC_ACQUIRE))
			early_write(&early_evs[i]);
}

/*
 * The end of keeping: what was kept is written (WRITE) or dropped, in
 * order, then events are written directly. Once, by the first thread to
 * get here. Slots another thread took meanwhile are written after;
 * before main, threads are rare, and an event of another thread may come
 * out before the kept ones.
 */
static void early_end(int write)
{
	static int ending;
	int expect = 0;
	if (!__atomic_compare_exchange_n(&ending, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	GUARD;
	/* Under sampling the kept events go through the draw when written
	 * (early_draw()); in aggregate mode, whose exact and estimated rows
	 * they would have to be split into, they are dropped (documented in
	 * docs/mem.md), and a refused configuration records nothing. */
	sample_setup();
	if (memsample_mode == MEMSAMPLE_BAD || (memsample_mode == MEMSAMPLE_ON && agg()))
		write = 0;
	unsigned n = __atomic_load_n(&early_n, __ATOMIC_RELAXED);
	if (write)
		early_write_range(0, n);
	__atomic_store_n(&early_on, 0, __ATOMIC_RELEASE);
	unsigned m = __atomic_load_n(&early_n, __ATOMIC_RELAXED);
	if (write)
		early_write_range(n, m);
}

/*
 * After our events are registered (defined after them: this object's
 * constructors run in order). Tracing on: what was kept is written now.
 * Off, and libringtrace's start-up over (it is not running on this
 * thread): nothing will record it. Off inside libringtrace's start-up
 * (its set-up of stack capture ran us, the comment above says when):
 * the first event once it is on
 * writes them (early_keep()), or our destructor.
 */
__attribute__((constructor)) static void early_ctor(void)
{
	if (agg() || ringtrace_tracepoint_enabled(mem, alloc))
		early_end(1);
	else if (!ringtrace__tls.busy)
		early_end(0);
}
