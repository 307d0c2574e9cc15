/*
 * stackrange.c - the range of the stack that holds a stack pointer, for
 * the walks' bounds (unwind.c's frame-pointer walk, fast.c's tables).
 *
 * Who runs it: any thread of the traced program, on a capture, including
 * from signal handlers: only async-signal-safe system calls (open, read,
 * ioctl, fstat, close, sigaltstack), no stdio, no malloc, and per-thread
 * state in initial-exec TLS (no __tls_get_addr, which may allocate).
 *
 * A thread's own stack is asked for once and kept (two ranges per
 * thread): the main thread's "[stack]", or a mapping that holds the
 * thread pointer, clipped to it (glibc puts a thread's TCB at the top of
 * its stack's block, so a neighbouring mapping merged into the same VMA
 * and unmapped later can never be read). Any other range (a coroutine's
 * stack, which may be freed) is asked for on every capture: of the kernel
 * (PROCMAP_QUERY on a kept /proc/self/maps descriptor), else of
 * sigaltstack() and then of /proc/self/maps's text. When none answers, a
 * walk from this thread's stack pointer stays in its page (always
 * mapped).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwind/unwind_int.h"

#define region rt_region

struct range_tls {
	struct region reg[2];        /* cached stack ranges */
	uint32_t valid;              /* bit i: reg[i] may be used */
	uint32_t next;               /* slot the next cached range replaces */
	uint32_t updating;           /* an update of reg[] runs (a nested handler leaves it alone) */
};

static __thread struct range_tls range_tls __attribute__((tls_model("initial-exec")));

/* Only this thread and its signal handlers touch range_tls: compiler
 * ordering against a handler on the same thread is all that is needed. */
#define SIGFENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * PROCMAP_QUERY (Linux 6.11, include/uapi/linux/fs.h): the mapping that
 * covers an address, asked of an open /proc/self/maps instead of reading
 * its text, which the kernel formats for every mapping of the process.
 * For captures on coroutines' stacks (ranges that are not cached):
 * `ringtrace record --mem --stacks -o D -- build/tests/unwind/uw_coro
 * 10000` took 5.0 s with the text, 2.0 s with this (AMD EPYC VM, Linux
 * 6.18). The layout is the kernel's ABI, 104 bytes.
 */
struct rt_procmap_query {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define RT_PROCMAP_QUERY        _IOWR('f', 17, struct rt_procmap_query)
#define RT_PROCMAP_VMA_READABLE 0x01ull /* query_flags: a readable mapping only */

/* 0 not known yet, 1 the kernel answers, -1 it does not (older kernel):
 * the text then. Relaxed: any thread may find out, the answer is all. */
static int procmap_query_state;

void rt_maps_text_only(int on)
{
	__atomic_store_n(&procmap_query_state, on ? -1 : 0, __ATOMIC_RELAXED);
}

/* 0 and *ret (readable mapping), 1 none readable covers addr, -1 not
 * answered (read the text). */
static int procmap_find(int fd, uintptr_t addr, struct region *ret, int *ret_main)
{
	if (__atomic_load_n(&procmap_query_state, __ATOMIC_RELAXED) < 0)
		return -1;
	char name[16];
	struct rt_procmap_query q;
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_flags = RT_PROCMAP_VMA_READABLE;
	q.query_addr = addr;
	q.vma_name_size = sizeof(name);
	q.vma_name_addr = (uintptr_t)name;
	int r = ioctl(fd, RT_PROCMAP_QUERY, &q);
	if (r < 0 && errno == ENAMETOOLONG) {
		/* A file's mapping: not "[stack]"; the range alone. */
		q.vma_name_size = 0;
		q.vma_name_addr = 0;
		r = ioctl(fd, RT_PROCMAP_QUERY, &q);
	}
	if (r < 0) {
		if (errno == ENOENT) {
			__atomic_store_n(&procmap_query_state, 1, __ATOMIC_RELAXED);
			return 1;
		}
		if (errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP)
			__atomic_store_n(&procmap_query_state, -1, __ATOMIC_RELAXED);
		return -1;
	}
	__atomic_store_n(&procmap_query_state, 1, __ATOMIC_RELAXED);
	if (q.vma_start > addr || addr >= q.vma_end)
		return -1;           /* not what was asked: the text decides */
	ret->lo = (uintptr_t)q.vma_start;
	ret->hi = (uintptr_t)q.vma_end;
	*ret_main = q.vma_name_size == sizeof("[stack]") && memcmp(name, "[stack]", sizeof("[stack]")) == 0;
	return 0;
}

/*
 * The descriptor PROCMAP_QUERY is asked through, kept open: opening
 * /proc/self/maps costs several times the query, and a capture on a
 * coroutine's stack asks once per capture. `ringtrace record --mem
 * --stacks -o D -- build/tests/unwind/uw_coro 10000` (400 k captures on
 * makecontext stacks): 2.2 s opening it each time, 0.64 s kept (AMD EPYC
 * VM, Linux 6.18; the program alone 0.03 s).
 *
 * One word, fd | (inode & 0xffffffff) << 32, so that a descriptor and
 * what it must be are read together (all ones: none). The program may
 * close that number or reuse it for another file at any time
 * (closefrom(), dup2()): before each use, fstat says whether it is still
 * the file opened here (procfs's device and the inode), else it is
 * forgotten, never closed (it is the program's now), and another one
 * opened. Between that fstat and the query the program could still put
 * another process's maps on the number (a thread of its own doing it in
 * that window): not guarded against. A fork's child would ask about its
 * parent's address space through it: the child forgets it
 * (maps_forget()). Open, fstat and ioctl are async-signal-safe; of two
 * callers opening at once one keeps its descriptor (CAS), the other
 * closes its own after use.
 */
static uint64_t maps_word = UINT64_MAX;
static uint64_t maps_dev;            /* procfs's st_dev, set with the first descriptor */

static int maps_same(int fd, uint32_t ino)
{
	struct stat st;
	return fstat(fd, &st) == 0 && (uint32_t)st.st_ino == ino &&
	       (uint64_t)st.st_dev == __atomic_load_n(&maps_dev, __ATOMIC_RELAXED);
}

/*
 * Kept only once a range that cannot be cached was asked for (a stack
 * not a thread's own: a coroutine's), so that a program that captures
 * only on its threads' stacks, asked once per thread, holds no
 * descriptor of ours. Relaxed: a hint.
 */
static int maps_keep;

/* A new descriptor of /proc/self/maps, or -1. */
static int maps_open(void)
{
	int fd;
	do
		fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	return fd;
}

/* The kept descriptor, checked, or a new one (*ret_close: this call's
 * alone, close it after use); -1 if none can be opened. */
static int maps_fd(int *ret_close)
{
	*ret_close = 0;
	/* Acquire, partner: the release CAS below (maps_dev before it). */
	uint64_t w = __atomic_load_n(&maps_word, __ATOMIC_ACQUIRE);
	if (w != UINT64_MAX && maps_same((int)(uint32_t)w, (uint32_t)(w >> 32)))
		return (int)(uint32_t)w;
	int fd = maps_open();
	if (fd < 0)
		return -1;
	if (!__atomic_load_n(&maps_keep, __ATOMIC_RELAXED)) {
		*ret_close = 1;
		return fd;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return -1;
	}
	__atomic_store_n(&maps_dev, (uint64_t)st.st_dev, __ATOMIC_RELAXED);
	uint64_t mine = (uint64_t)(uint32_t)fd | (uint64_t)(uint32_t)st.st_ino << 32;
	/* Release, partner: the acquire load above. A lost race keeps the
	 * winner's descriptor; this one serves this call only. */
	if (!__atomic_compare_exchange_n(&maps_word, &w, mine, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		*ret_close = 1;
	return fd;
}

/* In a fork's child (pthread_atfork, registered by the constructor below,
 * in normal context): the kept descriptor describes the parent. Closed
 * if it is still the one opened (inherited, so this process's). */
static void maps_forget(void)
{
	uint64_t w = __atomic_exchange_n(&maps_word, UINT64_MAX, __ATOMIC_RELAXED);
	if (w != UINT64_MAX && maps_same((int)(uint32_t)w, (uint32_t)(w >> 32)))
		close((int)(uint32_t)w);
}

__attribute__((constructor)) static void maps_init(void)
{
	pthread_atfork(NULL, NULL, maps_forget);
}

/* The readable mapping that holds addr, asked of the kernel
 * (PROCMAP_QUERY): 0 and *ret, 1 none holds it, -1 not answered (an
 * older kernel, or no descriptor). *ret_main as for maps_text(). */
static int maps_query(uintptr_t addr, struct region *ret, int *ret_main)
{
	if (__atomic_load_n(&procmap_query_state, __ATOMIC_RELAXED) < 0)
		return -1;
	int own;
	int fd = maps_fd(&own);
	if (fd < 0)
		return -1;
	int q = procmap_find(fd, addr, ret, ret_main);
	if (own)
		close(fd);
	return q;
}

/*
 * The readable mapping of /proc/self/maps that holds addr, read from its
 * text where the kernel does not answer maps_query(): 0 and *ret, or -1.
 * *ret_main is 1 if it is the main thread's "[stack]". A character at a
 * time through a small buffer (lines may be longer than any buffer: file
 * names; the fields needed are at their start), on a descriptor of this
 * call's own (the read position is its).
 */
static int maps_text(uintptr_t addr, struct region *ret, int *ret_main)
{
	static const char tag[] = "[stack]";
	int fd = maps_open();
	if (fd < 0)
		return -1;
	char buf[1024];
	uintptr_t lo = 0, hi = 0;
	int field = 0, col = 0, readable = 0, tagpos = 0, found = -1, done = 0;
	while (!done) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r && !done; i++) {
			char c = buf[i];
			if (c == '\n') {
				if (field >= 2 && lo <= addr && addr < hi && readable) {
					ret->lo = lo;
					ret->hi = hi;
					*ret_main = tagpos == (int)sizeof(tag) - 1;
					found = 0;
					done = 1;
				} else if (field >= 1 && lo > addr) {
					done = 1;    /* sorted by address: passed it */
				}
				lo = hi = 0;
				field = col = readable = tagpos = 0;
				continue;
			}
			switch (field) {
			case 0:
				if (c == '-')
					field = 1;
				else if (hexval(c) >= 0)
					lo = lo << 4 | (uintptr_t)hexval(c);
				break;
			case 1:
				if (c == ' ')
					field = 2;
				else if (hexval(c) >= 0)
					hi = hi << 4 | (uintptr_t)hexval(c);
				break;
			case 2:
				if (col++ == 0)
					readable = c == 'r';
				if (c == ' ')
					field = 3;
				break;
			default:
				if (tagpos < (int)sizeof(tag) - 1) {
					if (c == tag[tagpos])
						tagpos++;
					else
						tagpos = c == tag[0];
				}
				break;
			}
		}
	}
	close(fd);
	return found;
}

/*
 * The range that holds sp: from the cache, the sigaltstack, or
 * /proc/self/maps. `current` says sp is this thread's stack pointer now,
 * so its own page is known to be mapped (the last resort); an sp taken
 * from a signal frame has no such guarantee. Returns 1 for a range this
 * thread keeps for its life (its own stack, cached), 0 for one valid now
 * only, -1 when none is known.
 */
RT_NO_SANITIZE int rt_stack_region(uintptr_t sp, int current, struct region *ret)
{
	struct range_tls *t = &range_tls;
	for (int i = 0; i < 2; i++) {
		if ((t->valid >> i & 1) && t->reg[i].lo <= sp && sp < t->reg[i].hi) {
			*ret = t->reg[i];
			return 1;
		}
	}
	struct region r;
	int is_main = 0;
	/* Where the kernel answers, its answer alone (one system call on the
	 * kept descriptor, and one fstat: a capture on a coroutine's stack
	 * comes here every time): a handler's alternate stack lies in a
	 * readable mapping too. Else the alternate stack first, cheaper than
	 * the text. */
	int q = maps_query(sp, &r, &is_main);
	stack_t ss;
	if (q < 0 && sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE)) {
		uintptr_t lo = (uintptr_t)ss.ss_sp;
		if (sp >= lo && sp - lo < ss.ss_size) {
			ret->lo = lo;
			ret->hi = lo + ss.ss_size;
			return 0;
		}
	}
	if (q == 0 || (q < 0 && maps_text(sp, &r, &is_main) == 0)) {
		uintptr_t tp = rt_thread_pointer();
		int cache = is_main;
		if (tp > sp && tp <= r.hi) {
			r.hi = tp;           /* glibc puts the thread's TCB at its stack's top */
			cache = 1;
		}
		if (cache && !t->updating) {
			t->updating = 1;
			SIGFENCE();
			uint32_t slot = t->next++ & 1;
			t->valid &= ~(1u << slot);
			SIGFENCE();
			t->reg[slot] = r;
			SIGFENCE();
			t->valid |= 1u << slot;
			SIGFENCE();
			t->updating = 0;
		}
		if (!cache && q == 0)
			__atomic_store_n(&maps_keep, 1, __ATOMIC_RELAXED);
		*ret = r;
		return cache;
	}
	if (!current)
		return -1;
	ret->lo = sp & ~(uintptr_t)4095;
	ret->hi = ret->lo + 4096;
	return 0;
}

