/*
 * fast.c - the table walk (RT_UNWIND_TABLES): exact stacks through code
 * built without frame pointers at a few loads per frame, from compact
 * unwind tables precomputed per loaded object (cfi.c) and a per-thread
 * cache of the rows of the return addresses seen. libunwind does what
 * the tables cannot (fallbacks counted by cause) and, in verification
 * mode, checks every capture. docs/stack-capture.md has the design and
 * the figures.
 *
 * Who runs what:
 *  - ft_walk(): any thread, any context (malloc hooks, signal handlers
 *    that interrupted anything, a handler interrupting a capture). No
 *    lock, no malloc; mmap once per slot for its cache. Every stack read
 *    is checked against the stack range of the thread (stackrange.c).
 *  - rt_unwind_refresh(): normal context only (init, after dlclose, or a
 *    capture that found an address in no listed object, outside signal
 *    handlers): lists the loaded objects with dl_iterate_phdr and builds
 *    the tables of new ones inside the callback (the loader's lock keeps
 *    each object mapped while its .eh_frame is read; cfi.c uses mmap, not
 *    malloc), publishes a new sorted snapshot, waits for a grace period,
 *    then unmaps the tables of objects gone (dlclose).
 *
 * Grace periods. Each thread owns a slot (a fixed array: the writer must
 * be able to read every reader's state, which another thread's TLS does
 * not allow once that thread exits). A capture makes its slot's sequence
 * odd before it loads the snapshot pointer and even when done. The
 * writer publishes the new snapshot, runs membarrier(PRIVATE_EXPEDITED)
 * (a full barrier on every running thread of the process, the partner of
 * the readers' compiler-only fences: a reader either made its odd
 * sequence visible before the barrier or loads the new pointer after
 * it), then waits for every odd sequence it saw to change. Without
 * membarrier the readers pay a full fence. A handler that interrupts a
 * capture on the same thread runs inside the outer capture's odd
 * sequence and leaves it alone.
 *
 * Per thread (in its slot): two caches that map a lookup address (return
 * address - 1, or the interrupted ip after a signal frame) to its row,
 * one indexed by the frame's stack address (hot: the same few kilobytes
 * of stack every capture), one by a hash of the address; and a memo of
 * the last full walk (struct ft_memo): a capture that reaches one of its
 * states takes the frames after it once the stack words they were read
 * from still hold the same values. Cache entries are written key-last
 * with compiler fences, so a handler that interrupts the write sees a
 * miss; a nested capture writes neither caches nor memo. A generation
 * number, bumped by every snapshot that drops an object, voids them: each
 * cache entry is tagged with the generation it was written in, each memo
 * with the generation of its walk. A capture that repeats the memo
 * leaves a record of how it got there from the capturing function's
 * frame (struct ft_again): the next capture from that frame whose words
 * are all the same takes it whole (rt_unwind_again(), called before any
 * of the walk by the capture path in src/lib/stack.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>
#include <linux/membarrier.h>

#include "unwind/cfi.h"
#include "unwind/unwind.h"
#include "unwind/unwind_int.h"

#define FT_MAX_OBJS   4096           /* objects in a snapshot */
#define FT_SLOTS      256            /* threads capturing at once */
/* 8192 entries, 128 KiB per slot: cc1's captures look up rows of a few
 * thousand return addresses, which 2048 entries did not hold (0.21 table
 * look-ups a capture, against 0.065 with these; docs/stack-capture.md). */
#define FT_CACHE_BITS 13
#define FT_CACHE_N    (1u << FT_CACHE_BITS)
#define FT_MISMATCH_KEPT 4

#define SIGFENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)
/* Plain load-add-store: the counter's only writer is its slot's thread
 * (a nested handler may lose one increment; these are statistics). */
#define CNT_ADD(x, v) __atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)

struct ft_snap {
	size_t map_size;
	/* The allocation tracer's object (libringtrace-malloc.so), whose
	 * code all keeps frame pointers: its frames are passed by them
	 * (ft_walk). fp_lo >= fp_hi: not loaded. */
	uintptr_t fp_lo, fp_hi;
	uint32_t n;
	struct cfi_table *obj[];     /* sorted by lo, not overlapping */
};

/* An entry is valid in the generation whose low half is gen (ft_walk()
 * compares it): a new generation leaves the caches' entries stale
 * without clearing them. */
struct ft_cent {
	uintptr_t key;
	uint32_t info;
	uint32_t gen;
};

struct ft_counters {
	uint64_t captures, fast, frames, hits, misses, memo_frames, noted, repeats;
	/* The frames of the repeats: a repeat counts only in repeats and
	 * rep_frames (two adds, not six), the totals add them
	 * (rt_unwind_get_stats()). */
	uint64_t rep_frames;
	/* Repeats answered by rt_unwind_again() (counted in repeats too). */
	uint64_t again;
	uint64_t fb[FT_FB_N];
	uint64_t verified, mismatches, verify_skipped;
};

/*
 * The last full walk of a thread, position by position (skipped frames
 * included): the state (ip, CFA, rbp) before stepping out of each frame,
 * and the stack words each step read (the return address, and rbp when
 * the frame saved it). A later walk that reaches the same state at the
 * same CFA gets the same frames from there on if those words still hold
 * the same values: one load and compare per word, and the loads do not
 * depend on each other, where a walk's do.
 */
#define FT_MEMO_MAX (RT_UNWIND_MAX_DEPTH + RT_UNWIND_MAX_SKIP + 1)

struct ft_memo {
	uint32_t n;                  /* positions recorded: ip[0..n-1] */
	uint32_t complete;           /* the walk ended by itself after ip[n-1] */
	/* Bumped each time this memo is recorded again (the tag of its
	 * note's words), and the skip and max of the walk that recorded it:
	 * a walk with others has other frames. */
	uint32_t seq;
	int32_t skip0, max0;
	uint64_t note[RT_UNWIND_NOTE_WORDS];
	uint64_t gen;                /* generation of the tables used */
	uintptr_t hi;                /* stack top the reads were checked against */
	/* complete, and its last step read the end (ip[n] < 0x4000 at
	 * sp[n] - 8): position n holds what it read. */
	uint32_t end_read;
	/*
	 * Position k: the state before stepping out of frame k. Step k (frame
	 * k to k + 1) read the return address ip[k + 1] at sp[k + 1] - 8 (every
	 * step but the last of a walk that did not end by reading), and with
	 * FT_SAVED the rbp it restored, bp[k + 1], at sp[k + 1] + boff[k]: the
	 * words are the next state's, nothing is stored twice (the memo's
	 * recording is what a walk that does not meet it pays).
	 */
	uintptr_t ip[FT_MEMO_MAX + 1], sp[FT_MEMO_MAX + 1], bp[FT_MEMO_MAX + 1];
	int16_t boff[FT_MEMO_MAX];
	/*
	 * FT_CFA_RBP: step k took its CFA from rbp. FT_BPDEP: the frames after
	 * k depend on rbp's value at k (a step from rbp before any step
	 * restored it). Code without frame pointers uses rbp as a plain
	 * register, whose value differs from call to call: the match ignores
	 * it where the walk does not read it. So is a saved rbp when no frame
	 * after step k depends on it (memo_rbp_matters()): the checks leave it
	 * out, and a walk that takes frames from the memo reads its value
	 * from the stack again, never from bp[].
	 */
	uint8_t fl[FT_MEMO_MAX];
	/* The saved rbps that decide later frames (address, value), in step
	 * order at the top of the arrays, made when the walk is whole: steps
	 * [k, j) restored those of [xi[k], xi[j]). */
	uint16_t xi[FT_MEMO_MAX + 1];
	uintptr_t xa[FT_MEMO_MAX], xv[FT_MEMO_MAX];
};

#define FT_SAVED   1u
#define FT_CFA_RBP 2u
#define FT_BPDEP   4u

/* The second cache, indexed by the frame's stack address (sp / 16), not
 * by a hash of its code address: the frames of successive captures sit
 * at the same few kilobytes of stack, so its lines stay hot where the
 * hashed cache's are scattered (and evicted by the program's work
 * between two captures). Same entries, same key. */
#define FT_SPC_N 1024

/*
 * How the thread's last capture that repeated its memo (memo_repeat())
 * got there from the capturing function's frame f: the words of f and of
 * the frames of ours it passed by frame pointers (w[k] = the saved rbp
 * and the return address at a[k], where a[0] = f and a[k + 1] = w[k][0]),
 * and what it took of the memo. A capture from the same frame of the same
 * site whose words are all the same, with the memo not recorded again
 * since, is that capture again (rt_unwind_again()): the loads do not
 * depend on each other, where the walk's do. Written by ft_walk() alone,
 * outside of nested captures; void while it is written (f 0).
 */
#define FT_AGAIN_WORDS 8

struct ft_again {
	uintptr_t f, cur_sp;
	int32_t skip, own, max;
	uint32_t nw;                 /* pairs in w */
	uint32_t cur, seq;           /* memo[cur] at its seq */
	uint32_t to, n;              /* memo_check()'s end; frames */
	int32_t skip0, passed;
	uintptr_t w[FT_AGAIN_WORDS][2];
};

struct ft_mem {
	struct ft_cent spc[FT_SPC_N];
	struct ft_cent cache[FT_CACHE_N];
	struct ft_memo memo[2];      /* the current one, and the next one being recorded */
	struct ft_again again;
};

struct ft_slot {
	uint32_t tid;                /* 0: free; claimed by CAS */
	uint32_t seq;                /* odd while a capture runs */
	uint64_t gen;                /* generation of the cache's contents */
	struct ft_mem *mem;          /* mmap'ed on first claim, kept for the slot */
	uint32_t cur;                /* memo[cur] is the last full walk */
	uintptr_t ip0, sp0;          /* the first state of the last walk */
	/* The stack of the slot's thread, as rt_stack_region() keeps it
	 * (rlo <= sp < rhi; empty: ask it). Cleared when a thread claims the
	 * slot; written by the thread's outermost capture only. */
	uintptr_t rlo, rhi;
	struct ft_counters c;
} __attribute__((aligned(64)));

static struct ft_slot slots[FT_SLOTS];
/* The first words of this thread's struct ft_again, for the inline
 * filter of the capture path (unwind.h). */
__thread struct rt_unwind_again_key rt_unwind_again_key __attribute__((tls_model("initial-exec")));
/* The slot of this thread, plus one (0: none yet). */
static __thread uint32_t my_slot __attribute__((tls_model("initial-exec")));
/* Gives a thread's slot back when it exits (slot_release); usable only
 * when its key is below 32: pthread_setspecific then writes into the
 * thread descriptor and never allocates, so slot_get() may call it from a
 * signal handler. Otherwise slots of exited threads are taken over. */
static pthread_key_t slot_key;
static int slot_key_ok;

static struct ft_snap *snap;         /* release by the writer, acquire by captures */
static uint64_t gen = 1;             /* bumped by the writer before the grace period */
static int have_membarrier;
static int ready;
int ft_verify;
/* The same, for the capture path's inlined walk (unwind.h). */
extern int rt_unwind_verifying __attribute__((alias("ft_verify")));
static const char *stats_path;

/* Counters of slots reclaimed and of captures without a slot. */
static struct ft_counters retired;
static pthread_mutex_t writer = PTHREAD_MUTEX_INITIALIZER;
static uint64_t refreshes, objects_now, rows_now, bad_rows_now;
static unsigned long long seen_adds, seen_subs;
uint32_t rt_unwind_refresh_wanted;   /* set by captures, read by rt_unwind_want_refresh() (unwind.h) */

static struct {
	uint32_t n;
	uintptr_t fast[FT_MISMATCH_KEPT][8], ref[FT_MISMATCH_KEPT][8];
	int fn[FT_MISMATCH_KEPT], rn[FT_MISMATCH_KEPT];
} mism;

static pid_t ft_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- slots ------------------------------------------------------------------ */

static void counters_add(struct ft_counters *to, const struct ft_counters *from)
{
	const uint64_t *f = (const uint64_t *)from;
	uint64_t *t = (uint64_t *)to;
	for (size_t i = 0; i < sizeof(*from) / sizeof(uint64_t); i++)
		t[i] += __atomic_load_n(&f[i], __ATOMIC_RELAXED);
}

static int tid_dead(uint32_t tid)
{
	return syscall(SYS_tgkill, getpid(), (pid_t)tid, 0) < 0 && errno == ESRCH;
}

/* Fold a slot's counters into the shared ones (atomics: a handler in
 * another thread may take over a slot at the same time) and zero them. */
static void counters_retire(struct ft_counters *c)
{
	uint64_t *f = (uint64_t *)c, *t = (uint64_t *)&retired;
	for (size_t i = 0; i < sizeof(*c) / sizeof(uint64_t); i++) {
		__atomic_fetch_add(&t[i], __atomic_load_n(&f[i], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
		__atomic_store_n(&f[i], 0, __ATOMIC_RELAXED);
	}
}

/* Slot i, just claimed, is this thread's from now on: the stack range and
 * the memos are the last owner's (its memos' words were on its stack,
 * and memo_check() reads them unchecked). */
static struct ft_slot *slot_adopt(uint32_t i)
{
	struct ft_slot *sl = &slots[i];
	sl->mem->memo[0].n = sl->mem->memo[1].n = 0;
	sl->mem->again.f = 0;
	sl->rlo = sl->rhi = 0;
	my_slot = i + 1;
	if (slot_key_ok)
		pthread_setspecific(slot_key, (void *)(uintptr_t)(i + 1));
	return sl;
}

/* Claim a free slot for this thread (CAS: any context). */
static struct ft_slot *slot_get(void)
{
	uint32_t s = my_slot;
	if (__builtin_expect(s != 0, 1))
		return &slots[s - 1];
	uint32_t tid = (uint32_t)ft_gettid();
	for (uint32_t i = 0; i < FT_SLOTS; i++) {
		uint32_t zero = 0;
		if (__atomic_load_n(&slots[i].tid, __ATOMIC_RELAXED) != 0)
			continue;
		/* Pairs with the release store of 0 in slots_reclaim(). */
		if (!__atomic_compare_exchange_n(&slots[i].tid, &zero, tid, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		struct ft_slot *sl = &slots[i];
		if (!sl->mem) {
			void *m = mmap(NULL, sizeof(struct ft_mem), PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED) {
				__atomic_store_n(&sl->tid, 0, __ATOMIC_RELEASE);
				return NULL;
			}
			sl->mem = m;
			/* Zero pages: empty for any generation. */
			sl->gen = __atomic_load_n(&gen, __ATOMIC_ACQUIRE);
		}
		return slot_adopt(i);
	}
	/* All taken: take over the slot of a thread that exited (its
	 * sequence is even: it died outside a capture). A few per try, from
	 * a rotating start: each check is a system call. */
	static uint32_t next_check;
	for (int k = 0; k < 16; k++) {
		uint32_t i = __atomic_fetch_add(&next_check, 1, __ATOMIC_RELAXED) % FT_SLOTS;
		struct ft_slot *sl = &slots[i];
		uint32_t old = __atomic_load_n(&sl->tid, __ATOMIC_ACQUIRE);
		if (old == 0 || old == tid || !tid_dead(old) || (sl->seq & 1))
			continue;
		if (!__atomic_compare_exchange_n(&sl->tid, &old, tid, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		counters_retire(&sl->c);
		sl->gen = 0;
		if (!sl->mem) {
			/* Its owner died between its claim and its mmap:
			 * free, for the loop above to map it. */
			__atomic_store_n(&sl->tid, 0, __ATOMIC_RELEASE);
			continue;
		}
		return slot_adopt(i);
	}
	__atomic_store_n(&rt_unwind_refresh_wanted, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Thread exit (the key's destructor): the slot goes back, with its cache
 * (rows are the same for every thread) and memo (checked word by word
 * before use). A capture later in this thread's exit claims a new one. */
static void slot_release(void *v)
{
	uint32_t i = (uint32_t)(uintptr_t)v;
	if (i == 0 || i != my_slot || i > FT_SLOTS)
		return;
	struct ft_slot *sl = &slots[i - 1];
	if (sl->seq & 1)
		return;              /* cannot happen: not inside a capture */
	my_slot = 0;
	SIGFENCE();
	counters_retire(&sl->c);
	/* Pairs with the acquire CAS in slot_get(). */
	__atomic_store_n(&sl->tid, 0, __ATOMIC_RELEASE);
}

/* Free the slots of threads that exited (writer lock held). */
static void slots_reclaim(void)
{
	for (uint32_t i = 0; i < FT_SLOTS; i++) {
		uint32_t tid = __atomic_load_n(&slots[i].tid, __ATOMIC_ACQUIRE);
		if (tid == 0 || tid == UINT32_MAX || !tid_dead(tid))
			continue;
		/* Held by no one while its counters are folded: a thread
		 * taking over dead slots skips this marker (no such tid). */
		if (!__atomic_compare_exchange_n(&slots[i].tid, &tid, UINT32_MAX, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		counters_retire(&slots[i].c);
		slots[i].seq = 0;
		slots[i].gen = 0;
		/* Pairs with the acquire CAS in slot_get(). */
		__atomic_store_n(&slots[i].tid, 0, __ATOMIC_RELEASE);
	}
}

/* The child of a fork runs in the forking thread's slot, under its new
 * tid; the other threads' slots are reclaimed by the next refresh. */
static void ft_atfork_child(void)
{
	pthread_mutex_init(&writer, NULL);
	if (my_slot)
		__atomic_store_n(&slots[my_slot - 1].tid, (uint32_t)ft_gettid(), __ATOMIC_RELAXED);
}

/* ---- grace period ----------------------------------------------------------- */

static void synchronize(void)
{
	if (have_membarrier)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint32_t self = my_slot;
	for (uint32_t i = 0; i < FT_SLOTS; i++) {
		uint32_t tid = __atomic_load_n(&slots[i].tid, __ATOMIC_ACQUIRE);
		if (tid == 0 || i + 1 == self)
			continue;
		uint32_t s = __atomic_load_n(&slots[i].seq, __ATOMIC_ACQUIRE);
		if (!(s & 1))
			continue;
		/* A capture takes microseconds; its thread may be preempted,
		 * or have died in it (fork's child sees the parent's other
		 * threads' slots as they were). */
		for (unsigned spins = 1; __atomic_load_n(&slots[i].seq, __ATOMIC_ACQUIRE) == s; spins++) {
			sched_yield();
			if ((spins & 1023) == 0 && tid_dead(tid))
				break;
		}
	}
}

/* ---- the object list -------------------------------------------------------- */

struct scan {
	struct cfi_table **obj;      /* new list */
	uint32_t n, max;
	struct ft_snap *old;         /* tables to reuse */
	uint8_t *kept;               /* per old object: still loaded */
	int reuse;                   /* no object was removed: old tables can be kept */
	unsigned long long adds, subs;
	uintptr_t fp_lo, fp_hi;      /* the allocation tracer's code, if loaded */
};

/* The object whose code is all built with frame pointers: the
 * allocation tracer, preloaded (mk/mem.mk builds it so). */
static int fp_object(const char *name)
{
	const char *base = name ? strrchr(name, '/') : NULL;
	base = base ? base + 1 : name;
	return base && !strncmp(base, "libringtrace-malloc.so", 22);
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *s = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		s->adds = info->dlpi_adds;
		s->subs = info->dlpi_subs;
	}
	const uint8_t *hdr;
	size_t hdr_len;
	uintptr_t lo, hi;
	rt_object_span(info, &hdr, &hdr_len, &lo, &hi);
	if (s->max == 0)
		return 1;            /* a probe for the counters only */
	if (lo < hi && fp_object(info->dlpi_name)) {
		s->fp_lo = lo;
		s->fp_hi = hi;
	}
	if (!hdr || lo >= hi || s->n >= s->max)
		return 0;
	/* The loaded segment that holds the header bounds every read. */
	uintptr_t seg_lo = 0, seg_hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (uintptr_t)hdr >= a && (uintptr_t)hdr < a + ph->p_filesz) {
			seg_lo = a;
			seg_hi = a + ph->p_filesz;
		}
	}
	if (!seg_hi)
		return 0;
	if (s->reuse && s->old) {
		for (uint32_t i = 0; i < s->old->n; i++) {
			if (s->old->obj[i]->lo == lo && s->old->obj[i]->hi == hi) {
				s->kept[i] = 1;
				s->obj[s->n++] = s->old->obj[i];
				return 0;
			}
		}
	}
	struct cfi_table *t;
	if (cfi_table_build(hdr, hdr_len, seg_lo, seg_hi, lo, hi, &t) == 0)
		s->obj[s->n++] = t;
	return 0;
}

static void *map_anon(size_t bytes)
{
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

/* Writer lock held. */
static int refresh_locked(void)
{
	if (my_slot && (slots[my_slot - 1].seq & 1))
		return -EBUSY;       /* inside a capture of this very thread */
	struct ft_snap *old = __atomic_load_n(&snap, __ATOMIC_RELAXED);
	struct scan s = { 0 };
	s.max = FT_MAX_OBJS;
	size_t bytes = (offsetof(struct ft_snap, obj) + FT_MAX_OBJS * sizeof(void *) + 4095) & ~(size_t)4095;
	struct ft_snap *ns = map_anon(bytes);
	uint8_t *kept = map_anon(FT_MAX_OBJS);
	if (!ns || !kept) {
		if (ns)
			munmap(ns, bytes);
		return -ENOMEM;
	}
	ns->map_size = bytes;
	s.obj = ns->obj;
	s.old = old;
	s.kept = kept;
	/* Tables are reused only when no object was unloaded since the last
	 * list: otherwise a new object at an old one's addresses could take
	 * its table. */
	s.reuse = old != NULL;
	if (old) {
		struct scan probe = { 0 };
		probe.max = 0;
		dl_iterate_phdr(scan_cb, &probe);
		if (probe.subs != seen_subs)
			s.reuse = 0;
		else if (probe.adds == seen_adds) {
			munmap(ns, bytes);
			munmap(kept, FT_MAX_OBJS);
			slots_reclaim();
			return 0;    /* nothing loaded or unloaded */
		}
	}
	dl_iterate_phdr(scan_cb, &s);
	ns->n = s.n;
	ns->fp_lo = s.fp_lo;
	ns->fp_hi = s.fp_hi;
	/* Sort by address (insertion: a few hundred objects, mostly in
	 * order already). */
	uint64_t rows = 0, bad = 0;
	for (uint32_t i = 1; i < ns->n; i++) {
		struct cfi_table *t = ns->obj[i];
		uint32_t j = i;
		while (j > 0 && ns->obj[j - 1]->lo > t->lo) {
			ns->obj[j] = ns->obj[j - 1];
			j--;
		}
		ns->obj[j] = t;
	}
	for (uint32_t i = 0; i < ns->n; i++) {
		rows += ns->obj[i]->n;
		bad += ns->obj[i]->bad_rows;
	}
	mprotect(ns, bytes, PROT_READ);
	/* Pairs with the acquire load in ft_walk(). */
	__atomic_store_n(&snap, ns, __ATOMIC_RELEASE);
	if (old && !s.reuse)
		__atomic_store_n(&gen, gen + 1, __ATOMIC_RELEASE);
	seen_adds = s.adds;
	seen_subs = s.subs;
	refreshes++;
	objects_now = ns->n;
	rows_now = rows;
	bad_rows_now = bad;
	if (old) {
		synchronize();
		for (uint32_t i = 0; i < old->n; i++)
			if (!kept[i])
				cfi_table_free(old->obj[i]);
		munmap(old, old->map_size);
	}
	munmap(kept, FT_MAX_OBJS);
	slots_reclaim();
	return 0;
}

int rt_unwind_refresh(void)
{
	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
		return -ENOSYS;
	/* trylock: a capture path calls this too, and never waits. */
	if (pthread_mutex_trylock(&writer) != 0)
		return -EBUSY;
	int saved_errno = errno;
	__atomic_store_n(&rt_unwind_refresh_wanted, 0, __ATOMIC_RELAXED);
	int r = refresh_locked();
	pthread_mutex_unlock(&writer);
	errno = saved_errno;
	return r;
}


/* ---- statistics ------------------------------------------------------------- */

int rt_unwind_get_stats(struct rt_unwind_stats *ret)
{
	if (!ret)
		return -EINVAL;
	struct ft_counters c = { 0 };
	pthread_mutex_lock(&writer);
	counters_add(&c, &retired);
	for (uint32_t i = 0; i < FT_SLOTS; i++)
		if (__atomic_load_n(&slots[i].tid, __ATOMIC_ACQUIRE))
			counters_add(&c, &slots[i].c);
	memset(ret, 0, sizeof(*ret));
	ret->captures = c.captures + c.repeats;
	ret->fast = c.fast + c.repeats;
	ret->frames = c.frames + c.rep_frames;
	ret->cache_hits = c.hits;
	ret->cache_misses = c.misses;
	ret->memo_frames = c.memo_frames + c.rep_frames;
	ret->noted = c.noted + c.repeats;
	ret->repeats = c.repeats;
	ret->again = c.again;
	ret->fb_bad_cfi = c.fb[FT_FB_BAD_CFI];
	ret->fb_no_fde = c.fb[FT_FB_NO_FDE];
	ret->fb_no_object = c.fb[FT_FB_NO_OBJECT];
	ret->fb_stack = c.fb[FT_FB_STACK];
	ret->fb_no_slot = c.fb[FT_FB_NO_SLOT];
	ret->fb_not_ready = c.fb[FT_FB_NOT_READY];
	ret->verified = c.verified;
	ret->mismatches = c.mismatches;
	ret->verify_skipped = c.verify_skipped;
	ret->objects = objects_now;
	ret->rows = rows_now;
	ret->bad_rows = bad_rows_now;
	ret->refreshes = refreshes;
	pthread_mutex_unlock(&writer);
	return 0;
}

/* Counters of the calling thread's slot, or the shared ones (atomics:
 * rare, captures without a slot). */
static struct ft_counters *my_counters(void)
{
	return my_slot ? &slots[my_slot - 1].c : NULL;
}

void ft_count_fallback(int cause)
{
	struct ft_counters *c = my_counters();
	if (c)
		CNT_ADD(c->fb[cause], 1);
	else
		__atomic_fetch_add(&retired.fb[cause], 1, __ATOMIC_RELAXED);
}

void ft_verify_result(const uintptr_t *fast, int n, const uintptr_t *ref, int m)
{
	struct ft_counters *c = my_counters();
	if (m < 0) {
		if (c)
			CNT_ADD(c->verify_skipped, 1);
		else
			__atomic_fetch_add(&retired.verify_skipped, 1, __ATOMIC_RELAXED);
		return;
	}
	int same = n == m;
	for (int i = 0; same && i < n; i++)
		same = fast[i] == ref[i];
	if (same) {
		if (c)
			CNT_ADD(c->verified, 1);
		else
			__atomic_fetch_add(&retired.verified, 1, __ATOMIC_RELAXED);
		return;
	}
	/* Atomics: mismatches must all be counted. */
	__atomic_fetch_add(c ? &c->mismatches : &retired.mismatches, 1, __ATOMIC_RELAXED);
	uint32_t k = __atomic_fetch_add(&mism.n, 1, __ATOMIC_RELAXED);
	if (k < FT_MISMATCH_KEPT) {
		mism.fn[k] = n;
		mism.rn[k] = m;
		for (int i = 0; i < 8; i++) {
			mism.fast[k][i] = i < n ? fast[i] : 0;
			mism.ref[k][i] = i < m ? ref[i] : 0;
		}
	}
}

/* RINGTRACE_UNWIND_STATS=FILE: one line of counters appended at exit (and
 * the first mismatches, when verifying). For tests and benchmarks. */
__attribute__((destructor)) static void ft_write_stats(void)
{
	if (!stats_path || !__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
		return;
	struct rt_unwind_stats st;
	if (rt_unwind_get_stats(&st) < 0)
		return;
	char buf[4096];
	int len = snprintf(buf, sizeof(buf),
			   "unwind pid=%d verify=%d captures=%llu fast=%llu frames=%llu cache_hits=%llu "
			   "cache_misses=%llu memo_frames=%llu noted=%llu repeats=%llu again=%llu fb_bad_cfi=%llu fb_no_fde=%llu fb_no_object=%llu fb_stack=%llu "
			   "fb_no_slot=%llu fb_not_ready=%llu verified=%llu mismatches=%llu "
			   "verify_skipped=%llu objects=%llu rows=%llu bad_rows=%llu refreshes=%llu\n",
			   (int)getpid(), ft_verify, (unsigned long long)st.captures,
			   (unsigned long long)st.fast, (unsigned long long)st.frames,
			   (unsigned long long)st.cache_hits, (unsigned long long)st.cache_misses,
			   (unsigned long long)st.memo_frames, (unsigned long long)st.noted,
			   (unsigned long long)st.repeats, (unsigned long long)st.again,
			   (unsigned long long)st.fb_bad_cfi, (unsigned long long)st.fb_no_fde,
			   (unsigned long long)st.fb_no_object, (unsigned long long)st.fb_stack,
			   (unsigned long long)st.fb_no_slot, (unsigned long long)st.fb_not_ready,
			   (unsigned long long)st.verified, (unsigned long long)st.mismatches,
			   (unsigned long long)st.verify_skipped, (unsigned long long)st.objects,
			   (unsigned long long)st.rows, (unsigned long long)st.bad_rows,
			   (unsigned long long)st.refreshes);
	uint32_t nm = __atomic_load_n(&mism.n, __ATOMIC_RELAXED);
	for (uint32_t k = 0; k < nm && k < FT_MISMATCH_KEPT && len > 0 && (size_t)len < sizeof(buf); k++) {
		len += snprintf(buf + len, sizeof(buf) - (size_t)len, "mismatch %u fast(%d)", k, mism.fn[k]);
		for (int i = 0; i < 8 && (size_t)len < sizeof(buf); i++)
			len += snprintf(buf + len, sizeof(buf) - (size_t)len, " %lx",
					(unsigned long)mism.fast[k][i]);
		if ((size_t)len < sizeof(buf))
			len += snprintf(buf + len, sizeof(buf) - (size_t)len, " libunwind(%d)", mism.rn[k]);
		for (int i = 0; i < 8 && (size_t)len < sizeof(buf); i++)
			len += snprintf(buf + len, sizeof(buf) - (size_t)len, " %lx",
					(unsigned long)mism.ref[k][i]);
		if ((size_t)len < sizeof(buf))
			len += snprintf(buf + len, sizeof(buf) - (size_t)len, "\n");
	}
	if (len <= 0)
		return;
	if ((size_t)len > sizeof(buf))
		len = sizeof(buf);
	int fd = open(stats_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	ssize_t w = write(fd, buf, (size_t)len);
	(void)w;
	close(fd);
}

/* ---- set-up ----------------------------------------------------------------- */

void ft_init(void)
{
#if defined(__x86_64__)
	const char *v = getenv("RINGTRACE_UNWIND_VERIFY");
	ft_verify = v && !strcmp(v, "1");
	const char *p = getenv("RINGTRACE_UNWIND_STATS");
	if (p && *p)
		stats_path = strdup(p);
	have_membarrier = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
	pthread_atfork(NULL, NULL, ft_atfork_child);
	slot_key_ok = pthread_key_create(&slot_key, slot_release) == 0 && slot_key < 32;
	__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&writer);
	refresh_locked();
	pthread_mutex_unlock(&writer);
	/* This thread's slot and cache, outside any handler. */
	slot_get();
#endif
}

/* ---- the walk --------------------------------------------------------------- */

static inline uint32_t cache_index(uintptr_t key)
{
	return (uint32_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - FT_CACHE_BITS));
}

/* The table of the object that holds addr, or NULL. */
RT_NO_SANITIZE static const struct cfi_table *snap_find(const struct ft_snap *s, uintptr_t addr)
{
	uint32_t lo = 0, n = s->n;
	if (n == 0)
		return NULL;
	while (n > 1) {
		uint32_t half = n / 2;
		if (s->obj[lo + half]->lo <= addr)
			lo += half;
		n -= half;
	}
	const struct cfi_table *t = s->obj[lo];
	return addr >= t->lo && addr < t->hi ? t : NULL;
}

/*
 * Whether the rbp that step k of a whole memo restored (FT_SAVED) decides
 * any of its later frames: frame k + 1 depends on rbp (FT_BPDEP), or the
 * walk was cut at max after frame k (it may go on from there). Code
 * built without frame pointers saves rbp as any callee-saved register,
 * at every call: left out of the checks, such a word costs nothing.
 */
static inline int memo_rbp_matters(const struct ft_memo *m, uint32_t k)
{
	return k + 1 < m->n ? (m->fl[k + 1] & FT_BPDEP) != 0 : !m->complete;
}

/* Steps [from, rd) of a memo read a return address, for steps [from, to):
 * all but the last of a walk that ended without reading. */
static inline uint32_t memo_read_end(const struct ft_memo *m, uint32_t to)
{
	return to == m->n && !m->end_read ? to - 1 : to;
}

/* Verify steps [from, to) of a memo: each word that decides its frames
 * still holds what was read. Returns the first step that differs (to
 * when none). */
RT_NO_SANITIZE static uint32_t memo_first_diff(const struct ft_memo *m, uint32_t from, uint32_t to, uintptr_t lo,
					       uintptr_t hi)
{
	const uint32_t rd = memo_read_end(m, to);
	for (uint32_t k = from; k < to; k++) {
		uintptr_t a = m->sp[k + 1] - 8;
		if (k < rd && (a < lo || a > hi - 8 || *(const uintptr_t *)a != m->ip[k + 1]))
			return k;
		uintptr_t b = m->sp[k + 1] + (uintptr_t)(intptr_t)m->boff[k];
		if ((m->fl[k] & FT_SAVED) && memo_rbp_matters(m, k) &&
		    (b < lo || b > hi - 8 || *(const uintptr_t *)b != m->bp[k + 1]))
			return k;
	}
	return to;
}

/* n words from the memo to ips, two at a time: a call to memmove for a
 * stack's hundred bytes cost more than the copy (11% of a capture's
 * samples at 16 frames). */
typedef uintptr_t ft_v2 __attribute__((vector_size(2 * sizeof(uintptr_t))));

static inline __attribute__((always_inline)) void copy_words(uintptr_t *restrict to, const uintptr_t *restrict from,
							      uint32_t n)
{
	uint32_t k = 0;
	for (; k + 2 <= n; k += 2) {
		ft_v2 v;
		__builtin_memcpy(&v, from + k, sizeof(v));
#if defined(__x86_64__)
		/* Through a register: the compiler would make the loop a
		 * call to memmove again. */
		__asm__("" : "+x"(v));
#endif
		__builtin_memcpy(to + k, &v, sizeof(v));
	}
	if (k < n)
		to[k] = from[k];
}

/* What a memo gives after its frame at mp to a walk that needs `need`
 * more frames: *take of them, resting on the words of steps [mp, *to).
 * 1 when the walk may end there (it has its frames, or the memo's walk
 * ended by itself after them), 0 when it must go on past the memo. */
static inline uint32_t memo_span(const struct ft_memo *m, uint32_t mp, uint32_t need, uint32_t *take,
				 uint32_t *to)
{
	uint32_t avail = m->n - 1 - mp;
	if (need <= avail) {
		*take = need;
		*to = mp + need;
		return 1;
	}
	*take = avail;
	*to = m->complete ? m->n : m->n - 1;
	return m->complete;
}

/*
 * The same, the common case first: all words still the same, found
 * without a branch per word. Safe to read without checks: the words of a
 * step from the matched state on lie between that state's CFA (this
 * walk's sp, at or above its lo) and hi, where they were read (and
 * checked) when the memo was recorded on the same stack: inside the
 * mapping of the stack that holds the current stack pointer. The
 * differences of the return addresses or'ed: 0 when all hold.
 */
RT_NO_SANITIZE static inline __attribute__((always_inline)) uintptr_t ra_diff(const struct ft_memo *m, uint32_t from,
										   uint32_t to)
{
	uintptr_t diff = 0;
	const uintptr_t *sp = m->sp + 1, *ip = m->ip + 1;
	for (uint32_t k = from, rd = memo_read_end(m, to); k < rd; k++)
		diff |= *(const uintptr_t *)(sp[k] - 8) ^ ip[k];
	return diff;
}

/* With the saved rbps that matter. Out of line: inside the walk its loop
 * ran short of registers (the sum kept in memory). */
RT_NO_SANITIZE static __attribute__((noinline)) uintptr_t memo_diff(const struct ft_memo *m, uint32_t from, uint32_t to)
{
	uintptr_t diff = 0;
	for (uint32_t i = m->xi[from], end = m->xi[to]; i < end; i++)
		diff |= *(const uintptr_t *)m->xa[i] ^ m->xv[i];
	return diff | ra_diff(m, from, to);
}

/* The differences of every word steps [from, to) rest on, or'ed: 0 when
 * all hold. A short span without saved rbps (an allocation site a few
 * frames deep) inline: it costs less than the call. */
RT_NO_SANITIZE static inline __attribute__((always_inline)) uintptr_t memo_words_diff(const struct ft_memo *m,
										      uint32_t from, uint32_t to)
{
	return to - from <= 4 && m->xi[from] == m->xi[to] ? ra_diff(m, from, to) : memo_diff(m, from, to);
}

RT_NO_SANITIZE static inline __attribute__((always_inline)) uint32_t memo_check(const struct ft_memo *m, uint32_t from,
										       uint32_t to, uintptr_t lo, uintptr_t hi)
{
	return memo_words_diff(m, from, to) ? memo_first_diff(m, from, to, lo, hi) : to;
}

/*
 * The last full walk started at this state, with the same skip and max,
 * and every word it read (those of the skipped frames too) still holds:
 * its frames are this walk's, and so is its note. The case of a capture
 * repeated at one place (a tracepoint in a loop, an allocation site
 * called again): no step, nothing recorded. As the match in ft_walk's
 * loop, which it shortens: a memo that ended at max gives at most its
 * frames, one that ended by itself all of them. Returns the frames put
 * in ips, 0 if the memo does not give them.
 */
RT_NO_SANITIZE static inline __attribute__((always_inline)) int memo_repeat(const struct ft_memo *old, uintptr_t *ips,
										       int max, int skip0, uintptr_t ip, uintptr_t sp,
										       uintptr_t bp, uintptr_t lo, uintptr_t hi)
{
	if (old->ip[0] != ip || old->sp[0] != sp || (old->bp[0] != bp && (old->fl[0] & FT_BPDEP)) ||
	    old->skip0 != skip0 || old->max0 != max || old->n <= (uint32_t)skip0)
		return 0;
	/* This frame (memo position skip0), then what follows. */
	uint32_t take, to;
	if (!memo_span(old, (uint32_t)skip0, (uint32_t)max - 1, &take, &to) || memo_check(old, 0, to, lo, hi) != to)
		return 0;
	if (ips)
		copy_words(ips, &old->ip[skip0], take + 1);
	return (int)take + 1;
}

/*
 * A capture that repeated memo old (at cur) after `hops` frames of ours
 * from frame f0: what rt_unwind_again() needs to know it again. The
 * words are read where the hops read them (a[0] = f0, the capturing
 * function's frame; a[k + 1] = the rbp saved at a[k], checked inside the
 * stack by the hops). Void while written: a handler's capture may run
 * rt_unwind_again() in between only when it interrupted no capture, and
 * this runs inside one (the slot's odd seq).
 */
RT_NO_SANITIZE static __attribute__((noinline)) void again_record(struct ft_again *ag, uint32_t cur,
								 const struct ft_memo *old, uintptr_t f0,
								 uintptr_t cur_sp, int skip, int own, int max,
								 int hops, int skip0, int passed, int got)
{
	struct rt_unwind_again_key *key = &rt_unwind_again_key;
	ag->f = 0;
	key->f = 0;
	SIGFENCE();
	const uintptr_t *a = (const uintptr_t *)f0, *at = a;
	for (int k = 0; k <= hops; k++) {
		ag->w[k][0] = a[0];
		ag->w[k][1] = a[1];
		at = a;
		a = (const uintptr_t *)a[0];
	}
	/* The return address into the program: the word that tells most
	 * captures from the same frame apart (the allocation site). */
	key->ra_at = (uintptr_t)&at[1];
	key->ra = at[1];
	key->cur_sp = cur_sp;
	uint32_t take, to;
	(void)memo_span(old, (uint32_t)skip0, (uint32_t)max - 1, &take, &to);
	ag->nw = (uint32_t)hops + 1;
	ag->cur_sp = cur_sp;
	ag->skip = skip;
	ag->own = own;
	ag->max = max;
	ag->cur = cur;
	ag->seq = old->seq;
	ag->to = to;
	ag->n = (uint32_t)got;
	ag->skip0 = skip0;
	ag->passed = passed;
	SIGFENCE();
	ag->f = f0;
	key->f = f0;
}

/*
 * Steps [mp, mp + k) of memo old as this walk's steps [pos, pos + k) (into
 * rec, when it records) and the states after them. Returns rbp after the
 * last, from bp: the saved rbps are read from the stack again, not from
 * old->bp[], which may be stale where it was not checked
 * (memo_rbp_matters()). The words lie where memo_check() read them.
 */
RT_NO_SANITIZE static inline __attribute__((always_inline)) uintptr_t
memo_take(struct ft_memo *rec, uint32_t pos, const struct ft_memo *old, uint32_t mp, uint32_t k, uintptr_t bp)
{
	for (uint32_t j = 0; j < k; j++) {
		uint8_t f = old->fl[mp + j];
		uintptr_t nsp = old->sp[mp + j + 1];
		if (f & FT_SAVED)
			bp = *(const uintptr_t *)(nsp + (uintptr_t)(intptr_t)old->boff[mp + j]);
		if (rec) {
			rec->fl[pos + j] = f;
			rec->boff[pos + j] = old->boff[mp + j];
			rec->ip[pos + j + 1] = old->ip[mp + j + 1];
			rec->sp[pos + j + 1] = nsp;
			rec->bp[pos + j + 1] = bp;
		}
	}
	return bp;
}

/*
 * The rest of memo old from its position mp, whose walk ended by itself,
 * as rec's from pos: the steps, the states after them, and what the
 * backward pass made of them (memo_rbp_matters() flags, the saved rbps
 * that matter with their index), which are the same for the same steps
 * to the same end. The saved rbps that matter were checked against the
 * stack (memo_check()); the rbps of the other states are copied too,
 * though they may differ from the stack's now: nothing reads them (a
 * match compares rbp only where FT_BPDEP, whose rbp comes from a checked
 * word or from the matched state's). memcpy: on cc1, 0.3 G instructions
 * fewer than copy loops of our own (the element loop of memo_take() and
 * the backward pass over these steps cost 0.9 G).
 */
RT_NO_SANITIZE static inline __attribute__((always_inline)) void memo_tail(struct ft_memo *rec, uint32_t pos,
									       const struct ft_memo *old, uint32_t mp)
{
	uint32_t k = old->n - mp;    /* steps [mp, n), states mp + 1 .. n */
	uint32_t x = old->xi[mp];
	memcpy(&rec->fl[pos], &old->fl[mp], k);
	memcpy(&rec->boff[pos], &old->boff[mp], k * sizeof(rec->boff[0]));
	memcpy(&rec->ip[pos + 1], &old->ip[mp + 1], k * sizeof(rec->ip[0]));
	memcpy(&rec->sp[pos + 1], &old->sp[mp + 1], k * sizeof(rec->sp[0]));
	memcpy(&rec->bp[pos + 1], &old->bp[mp + 1], k * sizeof(rec->bp[0]));
	memcpy(&rec->xi[pos], &old->xi[mp], (k + 1) * sizeof(rec->xi[0]));
	memcpy(&rec->xa[x], &old->xa[x], (FT_MEMO_MAX - x) * sizeof(rec->xa[0]));
	memcpy(&rec->xv[x], &old->xv[x], (FT_MEMO_MAX - x) * sizeof(rec->xv[0]));
}

/*
 * A frame with no FDE where libunwind (1.6, x86-64: unw_step() after
 * -UNW_ENOINFO) ends the stack: not a PLT stub (its code pattern, which
 * libunwind would step through), and rbp 0, below the frame's stack
 * pointer, or more than 0x4000 above it (its frame-chain guess refused).
 * The case of every coroutine made by makecontext(): its function
 * returns to the first byte of glibc's __start_context, so the return
 * address - 1 lies before that function's FDE, and the context starts
 * with rbp 0. Otherwise the walk falls back, as for any frame without
 * an FDE (libunwind then guesses from rbp). The code is read only within
 * the page of ip - 1, which the table lookup found in a loaded object.
 */
RT_NO_SANITIZE static int chain_ends(uintptr_t ip, uintptr_t sp, uintptr_t bp)
{
	if (bp != 0 && bp >= sp && bp - sp <= 0x4000)
		return 0;
	if (((ip - 1) ^ (ip + 15)) & ~(uintptr_t)4095)
		return 0;
	uint64_t w0, w1;
	memcpy(&w0, (const void *)ip, 8);
	memcpy(&w1, (const void *)(ip + 8), 8);
	int plt = (w0 & 0xffff) == 0x25ff && ((w0 >> 48) & 0xff) == 0x68 && ((w1 >> 24) & 0xff) == 0xe9;
	return !plt;
}

RT_NO_SANITIZE int ft_walk(uintptr_t *ips, int max, int skip, int own, uintptr_t ip, uintptr_t sp, uintptr_t bp,
			   uintptr_t cur_sp, int *ret_passed, struct rt_unwind_note *ret_note, int *ret_cause)
{
	*ret_passed = 0;
	ret_note->cell = NULL;
	ret_note->frames = NULL;
#if defined(__x86_64__)
	/* The capturing function's frame and the site's skip (struct ft_again). */
	const uintptr_t f0 = sp - 16;
	const int skip_in = skip;
	struct ft_slot *sl = slot_get();
	if (!sl) {
		ft_count_fallback(FT_FB_NO_SLOT);
		*ret_cause = FT_FB_NO_SLOT;
		return -1;
	}
	struct ft_counters *cn = &sl->c;
	const uint32_t seq = sl->seq;
	const int nested = seq & 1;
	if (!nested) {
		__atomic_store_n(&sl->seq, seq + 1, __ATOMIC_RELAXED);
		if (have_membarrier)
			SIGFENCE();      /* the writer's membarrier is the other half */
		else
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	int n = 0, cause = -1;
	uint64_t hits = 0, misses = 0, memo_frames = 0;
	struct ft_memo *rec = NULL;  /* the memo this walk records, if any */
	struct ft_memo *noted = NULL;  /* the memo whose frames are this walk's */
	uintptr_t first_ip = 0, first_sp = 0;  /* the walk's first state */
	uint32_t pos = 0;            /* frames walked, skipped ones included */
	int complete = 1;            /* the walk ended by itself (not at max) */
	int end_read = 0;            /* ... by reading an ip below 0x4000 */
	uintptr_t lo, hi;
	const struct ft_snap *s = __atomic_load_n(&snap, __ATOMIC_ACQUIRE);
	struct ft_cent *cache = sl->mem->cache, *spc = sl->mem->spc;
	int use_cache = 1;
	uint64_t g = __atomic_load_n(&gen, __ATOMIC_ACQUIRE);
	const uint32_t g32 = (uint32_t)g;
	/* The entries' tags hold the generation's low half: cleared only when
	 * the high half moves on (after 2^32 dlcloses), or for a slot taken
	 * over (sl->gen 0 then: only its tags of this generation stay valid,
	 * and rows are the same for every thread). */
	if (__builtin_expect((sl->gen ^ g) >> 32 != 0, 0)) {
		if (nested) {
			use_cache = 0;
		} else {
			/* Whole entries: key 0 never matches (ips are >= 0x4000). */
			memset(cache, 0, sizeof(sl->mem->cache));
			memset(spc, 0, sizeof(sl->mem->spc));
			SIGFENCE();
			sl->gen = g;
		}
	}
	if (!s) {
		cause = FT_FB_NOT_READY;
		goto out;
	}
	struct rt_region r;
	if (sl->rlo <= cur_sp && cur_sp < sl->rhi) {
		hi = sl->rhi;
	} else {
		/* With `current`, a range always (its page at least). */
		int kept = rt_stack_region(cur_sp, 1, &r);
		hi = r.hi;
		if (kept == 1 && !nested) {
			/* Empty while it changes: a handler in between
			 * asks rt_stack_region() as well. */
			sl->rhi = 0;
			SIGFENCE();
			sl->rlo = r.lo;
			SIGFENCE();
			sl->rhi = r.hi;
		}
	}
	lo = cur_sp;
	/*
	 * Frames of ours, all built with frame pointers, are passed by them:
	 * the caller's first `own` ones (the capture's own functions), then
	 * those of the allocation tracer's code. In such a frame rbp holds
	 * its base, where the caller's rbp and the return address lie: two
	 * loads, no table. The allocation tracer's frames, which every
	 * reader drops anyway (src/analyze/frames.h), are not recorded: past
	 * skip they are counted in *ret_passed (verification skips as many
	 * of libunwind's). A frame pointer outside the stack, or below the
	 * frame it should lie above, falls back.
	 */
	const uintptr_t fp_lo = s->fp_lo, fp_span = s->fp_hi - s->fp_lo;
	int hops = 0;
	while (hops < own || ip - fp_lo < fp_span) {
		/* The frame (saved rbp, return address) inside the stack,
		 * at or above the last frame's CFA. */
		if (__builtin_expect(bp < sp || bp > hi - 16, 0)) {
			cause = FT_FB_STACK;
			goto out;
		}
		const uintptr_t *f = (const uintptr_t *)bp;
		ip = f[1];
		sp = bp + 16;
		bp = f[0];
		hops++;
		if (__builtin_expect(ip < 0x4000, 0))
			break;
	}
	{
		int sk = hops < skip ? hops : skip;
		skip -= sk;
		*ret_passed = hops - sk;
	}
	if (__builtin_expect(ip < 0x4000, 0))
		goto out;
	/* The memo: read the last full walk, record this one (a handler
	 * interrupting a capture does neither: the outer one owns them). */
	struct ft_memo *old = NULL;
	const int skip0 = skip;
	first_ip = ip;
	first_sp = sp;
	if (!nested && use_cache) {
		old = &sl->mem->memo[sl->cur];
		if (old->n == 0 || old->gen != g || old->hi != hi)
			old = NULL;
		/* The same capture as the last full walk (memo_repeat()). */
		const int lazy = ret_note->lazy;
		int got = old ? memo_repeat(old, lazy ? NULL : ips, max, skip0, ip, sp, bp, lo, hi) : 0;
		if (got) {
			/* The exit of `out` below for this case alone: a
			 * capture, fast, noted, its frames from the memo
			 * (left there if the caller allows), counted as a
			 * repeat (rt_unwind_get_stats()). */
			ret_note->cell = old->note;
			ret_note->seq = old->seq;
			ret_note->frames = lazy ? &old->ip[skip0] : NULL;
			ret_note->memo_seq = &old->seq;
			CNT_ADD(cn->repeats, 1);
			CNT_ADD(cn->rep_frames, (uint64_t)got);
			sl->ip0 = first_ip;
			sl->sp0 = first_sp;
			/* On the thread's own stack only (the range it keeps for
			 * its life): the inline filter reads a word of it. */
			if (hops < FT_AGAIN_WORDS && cur_sp >= sl->rlo && cur_sp < sl->rhi && hi == sl->rhi)
				again_record(&sl->mem->again, sl->cur, old, f0, cur_sp, skip_in, own, max, hops, skip0,
					     *ret_passed, got);
			/* Pairs as the release store at the end. */
			__atomic_store_n(&sl->seq, seq + 2, __ATOMIC_RELEASE);
			return got;
		}
		rec = &sl->mem->memo[sl->cur ^ 1];
		/* Its note's words are void from now on. */
		rec->seq++;
		SIGFENCE();
		rec->skip0 = skip;
		rec->max0 = max;
	}
	uint32_t mp = 0;             /* old->sp[mp] is the first CFA not below sp */
	int diverged = 0;            /* the memo was met and a word of it differed */
	/* rec's steps from `tail` on are the memo's (memo_tail()), whose
	 * words that matter begin at tail_x, and the flag of step tail */
	uint32_t tail = UINT32_MAX, tail_x = FT_MEMO_MAX;
	int tail_dep = 0;
	uintptr_t prev = 1;          /* 1: ip is a return address; 0: after a signal frame */
	uintptr_t sig, clo, chi;
	rt_sigreturn_hint(&sig, &clo, &chi);
	for (;; pos++) {
		if (rec) {
			if (pos >= FT_MEMO_MAX) {
				rec = NULL;
			} else {
				rec->ip[pos] = ip;
				rec->sp[pos] = sp;
				rec->bp[pos] = bp;
				rec->fl[pos] = 0;
			}
		}
		if (skip > 0) {
			skip--;
		} else {
			ips[n++] = ip;
			if (n >= max) {
				complete = 0;
				break;
			}
			if (old && prev) {
				/* The same state as a frame of the last full walk?
				 * Both walks' CFAs rise: one pass over it. */
				while (mp < old->n && old->sp[mp] < sp)
					mp++;
				if (mp < old->n && old->sp[mp] == sp && old->ip[mp] == ip &&
				    (old->bp[mp] == bp || !(old->fl[mp] & FT_BPDEP))) {
					uint32_t need = (uint32_t)(max - n), take, to;
					uint32_t whole = memo_span(old, mp, need, &take, &to);
					uint32_t ok = memo_check(old, mp, to, lo, hi);
					if (ok == to && whole) {
						copy_words(ips + n, &old->ip[mp + 1], take);
						n += (int)take;
						memo_frames += take;
						/* Its frames are this walk's when it agreed
						 * at the same position after the same frames:
						 * then its note is this walk's. */
						if (rec && mp == pos && old->skip0 == skip0 && old->max0 == max) {
							uint32_t k = 0;
							while (k < pos && rec->ip[k] == old->ip[k] && rec->sp[k] == old->sp[k])
								k++;
							if (k == pos)
								noted = old;
						}
						/* Keep the memo this walk agreed with from
						 * (almost) its start; unless its frames are
						 * not this walk's and the last walk started
						 * here too: the same capture again, whose
						 * next repeat gets a note when it is the
						 * memo. Not when a word of the memo differed
						 * on the way (`diverged`): kept, it would
						 * fail the next repeat's check again. */
						if (!rec || (pos < 4 && !diverged &&
							     (noted || rec->ip[0] != sl->ip0 || rec->sp[0] != sl->sp0))) {
							rec = NULL;
							goto out;
						}
						/* Walked far before agreeing: this walk,
						 * ending with the memo's frames, becomes
						 * the memo (one that ended early would
						 * keep sending deeper stacks to the
						 * tables). */
						if (need > take) {
							/* To the memo's end, where its walk
							 * ended by itself: its steps and the
							 * words that matter as they are. */
							memo_tail(rec, pos, old, mp);
							tail = pos;
							tail_x = old->xi[mp];
							tail_dep = (old->fl[mp] & FT_BPDEP) != 0;
						} else {
							memo_take(rec, pos, old, mp, to - mp, bp);
							if (to - mp == take)
								rec->fl[pos + take] = 0;   /* cut at max: no step */
						}
						pos += take;
						complete = need > take;   /* the memo's walk ended by itself first */
						end_read = complete && old->end_read;
						goto out;
					}
					/* Frames up to step ok stand (the memo ran out or a
					 * word changed): take them, into the new memo too,
					 * and walk on from there. */
					uint32_t k = ok - mp;
					if (k > need)
						k = need;
					diverged |= ok != to;
					copy_words(ips + n, &old->ip[mp + 1], k);
					/* The walk may go on from rbp. */
					bp = memo_take(rec, pos, old, mp, k, bp);
					n += (int)k;
					memo_frames += k;
					mp += k;
					pos += k;
					ip = old->ip[mp];
					sp = old->sp[mp];
					/*
					 * The memo stays: past the frames that differ
					 * (the same function called from another
					 * caller whose frame has the same size) the
					 * walk meets its states again, and takes the
					 * rest from there. The step below is the
					 * walk's; its CFA lies above sp, so the scan
					 * goes on past mp. (cc1: a fifth of the
					 * captures differ so, and walked nearly all
					 * their frames when the memo was dropped
					 * here: 15.5 M steps of 45.8 M frames, now
					 * 8.3 M.)
					 */
					if (rec)
						rec->fl[pos] = 0;
					if (n >= max) {
						complete = 0;
						break;
					}
				}
			}
		}
		if (__builtin_expect(ip == sig, 0) ||
		    (__builtin_expect(!sig, 0) && ip - clo < chi - clo && rt_is_sigreturn(ip))) {
			rt_sigreturn_hint(&sig, &clo, &chi);
			rec = NULL;          /* another stack: not memoised */
			old = NULL;
			/* The handler's CFA is the kernel's ucontext. */
			uintptr_t uc = sp;
			size_t need = offsetof(ucontext_t, uc_mcontext.gregs) + NGREG * sizeof(greg_t);
			if (uc < lo || uc > hi || hi - uc < need) {
				cause = FT_FB_STACK;
				goto out;
			}
			const greg_t *gr = ((const ucontext_t *)uc)->uc_mcontext.gregs;
			ip = (uintptr_t)gr[REG_RIP];
			sp = (uintptr_t)gr[REG_RSP];
			bp = (uintptr_t)gr[REG_RBP];
			if (ip < 0x4000)
				goto out;    /* where libunwind stops too */
			/* The interrupted code may run on another stack. */
			if (rt_stack_region(sp, 0, &r) < 0) {
				cause = FT_FB_STACK;
				goto out;
			}
			lo = sp;
			hi = r.hi;
			prev = 0;
			continue;
		}
		uintptr_t key = ip - prev;
		uint32_t info;
		struct ft_cent *c = &spc[(sp >> 4) & (FT_SPC_N - 1)];
		struct ft_cent *e = &cache[cache_index(key)];
		if (__builtin_expect(use_cache && c->key == key && c->gen == g32, 1)) {
			info = c->info;
			hits++;
		} else if (__builtin_expect(use_cache && e->key == key && e->gen == g32, 1)) {
			info = e->info;
			hits++;
			if (!nested) {
				c->key = 0;
				SIGFENCE();
				c->info = info;
				c->gen = g32;
				SIGFENCE();
				c->key = key;
			}
		} else {
			const struct cfi_table *t = snap_find(s, key);
			if (!t) {
				__atomic_store_n(&rt_unwind_refresh_wanted, 1, __ATOMIC_RELAXED);
				cause = FT_FB_NO_OBJECT;
				goto out;
			}
			info = cfi_table_find(t, key);
			misses++;
			if (use_cache && !nested) {
				e->key = c->key = 0;
				SIGFENCE();
				e->info = c->info = info;
				e->gen = c->gen = g32;
				SIGFENCE();
				e->key = c->key = key;
			}
		}
		if (__builtin_expect(CFI_KIND(info) != CFI_STD, 0)) {
			if (CFI_KIND(info) == CFI_END)
				goto out;
			if (CFI_KIND(info) == CFI_NONE && chain_ends(ip, sp, bp)) {
				/* Where libunwind ends too; the end depends on
				 * rbp (the memo matches it here). */
				if (rec)
					rec->fl[pos] |= FT_CFA_RBP;
				goto out;
			}
			cause = CFI_KIND(info) == CFI_BAD ? FT_FB_BAD_CFI : FT_FB_NO_FDE;
			goto out;
		}
		uintptr_t cfa = (CFI_CFA_RBP(info) ? bp : sp) + CFI_CFA_OFF(info);
		if (rec && CFI_CFA_RBP(info))
			rec->fl[pos] |= FT_CFA_RBP;
		/* The frame lies above the last one (its return address at
		 * or above sp, so at or above lo) and inside the stack.
		 * Strictly rising CFAs end the walk on any stack. */
		if (__builtin_expect(cfa < sp + 8 || cfa > hi, 0)) {
			cause = FT_FB_STACK;
			goto out;
		}
		if (CFI_RBP_SAVED(info)) {
			uintptr_t a = cfa + (uintptr_t)CFI_RBP_OFF(info);
			if (__builtin_expect(a < lo || a > hi - 8, 0)) {
				cause = FT_FB_STACK;
				goto out;
			}
			bp = *(const uintptr_t *)a;
			if (rec) {
				rec->fl[pos] |= FT_SAVED;
				rec->boff[pos] = (int16_t)CFI_RBP_OFF(info);
			}
		}
		ip = *(const uintptr_t *)(cfa - 8);
		sp = cfa;
		prev = 1;
		if (__builtin_expect(ip < 0x4000, 0)) {
			/* libunwind's end of the stack: what the step read is
			 * the memo's position after the last. */
			if (rec) {
				rec->ip[pos + 1] = ip;
				rec->sp[pos + 1] = sp;
			}
			end_read = 1;
			goto out;
		}
	}
out:
	if (rec && cause < 0 && pos < FT_MEMO_MAX) {
		/* A full walk: the memo of the next captures. */
		rec->n = pos + 1;
		rec->complete = (uint32_t)complete;
		/*
		 * Backwards, in one pass: which frames' rest depends on rbp
		 * (a walk cut at max may go on from its last frame: that one
		 * does), and the saved rbps that matter. Before step k's
		 * update, dep is memo_rbp_matters(rec, k): frame k + 1's flag,
		 * or !complete after the last. The words fill xa and xv from
		 * their top down, so that they lie in step order and xi[k]
		 * is where the words of steps k and after begin.
		 */
		rec->end_read = (uint32_t)end_read;
		int dep = !complete;
		uint32_t w = FT_MEMO_MAX, top = pos + 1;
		if (tail <= pos) {
			/* The memo's part is done: on from before it. */
			top = tail;
			w = tail_x;
			dep = tail_dep;
		} else {
			rec->xi[pos + 1] = (uint16_t)w;
		}
		for (uint32_t k = top; k-- > 0;) {
			uint8_t f = rec->fl[k];
			if ((f & FT_SAVED) && dep) {
				w--;
				rec->xa[w] = rec->sp[k + 1] + (uintptr_t)(intptr_t)rec->boff[k];
				rec->xv[w] = rec->bp[k + 1];
			}
			rec->xi[k] = (uint16_t)w;
			dep = (f & FT_CFA_RBP) || (!(f & FT_SAVED) && dep);
			rec->fl[k] = (uint8_t)(dep ? f | FT_BPDEP : f & ~FT_BPDEP);
		}
		rec->gen = g;
		rec->hi = hi;
		sl->cur ^= 1;
		/* Its note, void until the caller fills it: not counted as
		 * noted (the frames of no earlier walk). */
		ret_note->cell = rec->note;
		ret_note->seq = rec->seq;
	} else if (noted) {
		ret_note->cell = noted->note;
		ret_note->seq = noted->seq;
		CNT_ADD(cn->noted, 1);
	}
	if (!nested && first_sp) {
		sl->ip0 = first_ip;
		sl->sp0 = first_sp;
	}
	CNT_ADD(cn->captures, 1);
	if (hits)
		CNT_ADD(cn->hits, hits);
	if (misses)
		CNT_ADD(cn->misses, misses);
	CNT_ADD(cn->memo_frames, memo_frames);
	if (cause < 0) {
		CNT_ADD(cn->fast, 1);
		CNT_ADD(cn->frames, (uint64_t)n);
	} else {
		CNT_ADD(cn->fb[cause], 1);
	}
	if (!nested) {
		/* The capture's reads are done before the writer may free:
		 * pairs with the acquire loads in synchronize(). */
		__atomic_store_n(&sl->seq, seq + 2, __ATOMIC_RELEASE);
	}
	if (cause >= 0) {
		*ret_cause = cause;
		return -1;
	}
	return n;
#else
	(void)ips; (void)max; (void)skip; (void)ip; (void)sp; (void)bp; (void)cur_sp;
	ft_count_fallback(FT_FB_NOT_READY);
	*ret_cause = FT_FB_NOT_READY;
	return -1;
#endif
}

#if defined(__x86_64__)
/*
 * The thread's last capture that repeated its memo, again (struct
 * ft_again): the same site from the same frame, every word it read the
 * same, the memo as it was, the same generation and stack. No step, no
 * table, no snapshot: the words of our frames as pairs and the memo's
 * as memo_repeat() checks them. Runs as a capture (the slot's odd seq):
 * a handler interrupting it is nested and changes neither the memo nor
 * the record. Returns the frames, with the note's words in w (the
 * stack map's hint, set for these frames) and the note (its frames lazy,
 * in the memo); -1 when it does not apply or the note holds no words:
 * the caller walks.
 */
RT_NO_SANITIZE int rt_unwind_again(uintptr_t f, uintptr_t cur_sp, int skip, int own, int max,
				   uint64_t w[RT_UNWIND_NOTE_WORDS], int *ret_passed, struct rt_unwind_note *ret_note)
{
	const uint32_t i = my_slot;
	if (__builtin_expect(i == 0, 0))
		return -1;
	struct ft_slot *sl = &slots[i - 1];
	const uint32_t seq = sl->seq;
	if (seq & 1)
		return -1;           /* a handler's, inside a capture */
	/* Odd before the record is read: a handler's capture from here on
	 * is nested and writes neither it nor the memo. */
	__atomic_store_n(&sl->seq, seq + 1, __ATOMIC_RELAXED);
	SIGFENCE();
	int got = -1;
	struct ft_mem *mem = sl->mem;
	const struct ft_again *ag = &mem->again;
	if (ag->f != f || ag->cur_sp != cur_sp || ag->skip != skip || ag->own != own || ag->max != max)
		goto out;
	const uint32_t cur = ag->cur;
	const struct ft_memo *m = &mem->memo[cur];
	const uint64_t g = __atomic_load_n(&gen, __ATOMIC_ACQUIRE);
	if (sl->cur != cur || m->seq != ag->seq || m->gen != g || cur_sp < sl->rlo || cur_sp >= sl->rhi ||
	    m->hi != sl->rhi)
		goto out;
	/* The words of our frames: as the hops read them, inside the stack
	 * (a[k] are the same addresses, checked when recorded). */
	uintptr_t diff = 0;
	const uintptr_t *a = (const uintptr_t *)f;
	const uint32_t last = ag->nw - 1;
	for (uint32_t k = 0; k < last; k++) {
		diff |= (a[0] ^ ag->w[k][0]) | (a[1] ^ ag->w[k][1]);
		a = (const uintptr_t *)ag->w[k][0];
	}
	/* The last: the return address into the program, and the rbp of its
	 * frame, which code without frame pointers uses as a plain register:
	 * compared only where the memo's frames depend on it, as
	 * memo_repeat() does. */
	diff |= a[1] ^ ag->w[last][1];
	if (m->fl[0] & FT_BPDEP)
		diff |= a[0] ^ ag->w[last][0];
	const uint32_t to = ag->to;
	diff |= memo_words_diff(m, 0, to);
	if (diff)
		goto out;
	ret_note->cell = (uint64_t *)m->note;
	ret_note->seq = m->seq;
	ret_note->frames = &m->ip[ag->skip0];
	ret_note->memo_seq = &m->seq;
	if (!rt_unwind_note_get(ret_note, w))
		goto out;
	*ret_passed = ag->passed;
	got = (int)ag->n;
	struct ft_counters *cn = &sl->c;
	CNT_ADD(cn->repeats, 1);
	CNT_ADD(cn->rep_frames, (uint64_t)got);
	CNT_ADD(cn->again, 1);
out:
	/* Pairs as ft_walk()'s. */
	__atomic_store_n(&sl->seq, seq + 2, __ATOMIC_RELEASE);
	return got;
}

/* The walk under its name in unwind.h, for rt_unwind_tables_here(). */
int rt_unwind_walk(uintptr_t *ips, int max, int skip, int own, uintptr_t ip, uintptr_t sp, uintptr_t bp,
		   uintptr_t cur_sp, int *ret_passed, struct rt_unwind_note *ret_note, int *ret_cause)
	__attribute__((alias("ft_walk")));
#endif
