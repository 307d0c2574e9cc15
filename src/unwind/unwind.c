/*
 * unwind.c - stack capture inside the traced program: a checked
 * frame-pointer walk and libunwind's fast trace (contract in unwind.h,
 * rules and figures in docs/stack-capture.md).
 *
 * Who runs it: every thread of the traced program, on every event that
 * carries a stack, including from signal handlers that interrupted
 * anything (malloc, dlopen, dl_iterate_phdr, libunwind itself). It is tuned
 * for the same few hundred stacks seen again and again: the FP walk keeps
 * one cached stack range per thread; libunwind keeps a per-thread cache of
 * how to step out of each return address.
 *
 * Frame-pointer walk. A frame is [saved rbp][return address] at rbp. Every
 * frame pointer is checked before the 16 bytes are read: aligned to 8,
 * strictly above the previous one (so the walk ends), at or above the
 * current stack pointer and 16 bytes below the top of the mapping that
 * holds the stack pointer (stackrange.c: asked of the kernel once per
 * thread and kept, or on every capture for a coroutine's stack; the page
 * of the stack pointer when nothing answers). A return address equal to
 * glibc's sigreturn trampoline (recognised by its 9 bytes inside libc's
 * text, learnt at init) means the next 8 bytes start the kernel's
 * ucontext: the walk reports the interrupted rip and continues from the
 * interrupted rbp, in the range of the interrupted rsp.
 *
 * libunwind, and the three ways it can deadlock in a signal handler:
 *
 * 1. dl_iterate_phdr. On a miss in its per-thread cache, libunwind finds
 *    the unwind table of an address with dl_iterate_phdr(), which takes
 *    glibc's recursive loader lock (dl_load_write_lock). A handler that
 *    interrupted its own thread while that thread was inside the lock's
 *    acquire or release (in dlopen, dlclose or any dl_iterate_phdr)
 *    blocks forever; a handler in thread A that waits for the lock while A
 *    holds a lock that the lock's holder B needs next (malloc's: glibc's
 *    own dlclose frees memory with the loader lock held, and so may any
 *    dl_iterate_phdr callback; or libunwind's global cache lock, seen in
 *    the storm below) deadlocks A and B together (the reports in
 *    libunwind issue 16, gperftools 1210, HPCToolkit 200). Done
 *    here: at init, the .eh_frame_hdr search table of every loaded object
 *    is registered with _U_dyn_register() as a UNW_INFO_FORMAT_REMOTE_TABLE
 *    entry. libunwind consults that list before dl_iterate_phdr, without a
 *    lock, so addresses in those objects never reach the loader lock. The
 *    tables must outlive every unwind, so each registered object that may
 *    have been dlopen'ed is made unloadable (dlopen RTLD_NOLOAD|
 *    RTLD_NODELETE) and kept past its dlclose. Objects loaded at start-up
 *    (startup.c tells them apart) are left alone: glibc never unloads
 *    them, and that dlopen would run their pending constructors inside
 *    ours (register_tables()). Remaining risk:
 *    addresses in objects dlopen'ed after init, or without an FDE, take
 *    libunwind's dl_iterate_phdr path, once per thread and address (the
 *    result is cached, also when negative).
 * 2. malloc. libunwind 1.6 never mallocs while stepping through .eh_frame
 *    (its pools use mmap), but its fast trace keeps a pointer in a
 *    global-dynamic __thread variable. When libunwind is dlopen'ed, that
 *    block is allocated with malloc by __tls_get_addr on the thread's first
 *    use (measured: one malloc per new thread), which deadlocks in a
 *    handler that interrupted malloc. Done here: when libunwind's TLS is
 *    dynamic, a thread may use it only after rt_unwind_thread_init() (or
 *    init) ran in it; other threads get -EAGAIN. When libunwind is loaded
 *    at start-up (linked, or LD_PRELOADed by whoever starts the program),
 *    its TLS is static and every thread may use it at once.
 * 3. re-entry. A handler that interrupts a capture on the same thread
 *    would run libunwind on its half-updated per-thread cache. Done here:
 *    a per-thread busy flag, -EBUSY (the caller falls back to the FP walk).
 * libunwind's remaining locks (its memory pools, taken once per thread
 * for the trace cache) are held with every signal blocked and never
 * around anything that waits, so a handler cannot deadlock on them. Its
 * global state cache is switched off (lu_load() says why).
 *
 * Measured: with the table registration removed, test_unwind's storm
 * (SIGPROF/SIGUSR1 at threads in malloc, dlopen/dlclose, dl_iterate_phdr)
 * deadlocked 3 runs out of 3 with the global cache and 2 of 4 without it
 * (gdb: a handler that interrupted pthread_mutex_lock of the loader's lock
 * in its own thread, waiting for it); with the registration, none in
 * more than 25 runs (gcc, clang, ASan).
 *
 * Why dlopen rather than -lunwind: linking libringtrace.so with -lunwind
 * loads libunwind.so.8 and liblzma.so.5 into every program that uses a
 * tracepoint; measured on the project VM, an empty program linked with
 * -lunwind takes 180 us more to exec and exit (530 -> 710 us, posix_spawn
 * loop). Most programs never capture a stack, so they should not pay it;
 * and a recorder that wants stacks can LD_PRELOAD libunwind, which gives
 * both the start-up load and static TLS (point 2).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ucontext.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "unwind/startup.h"
#include "unwind/unwind.h"
#include "unwind/unwind_int.h"

/* RT_NO_SANITIZE (unwind_int.h): the walks need no instrumentation: they
 * read other frames' saved registers, which ASan may see as another
 * frame's redzone when a frame pointer is stale. Every read is
 * bounds-checked here. */

#define RT_STR_(x) #x
#define RT_STR(x)  RT_STR_(x)

/* Objects whose unwind tables can be registered. */
#define RT_UNWIND_MAX_TABLES 1024

/* ---- per-thread state (initial-exec: no __tls_get_addr in a handler) ---- */

#define region rt_region

struct unwind_tls {
	uint32_t busy;               /* a libunwind capture runs on this thread */
	uint32_t lu_ready;           /* libunwind's TLS block is allocated in this thread */
};

static __thread struct unwind_tls rt_tls __attribute__((tls_model("initial-exec")));

/* Only this thread and its signal handlers touch rt_tls: compiler
 * ordering against a handler on the same thread is all that is needed. */
#define SIGFENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* ---- process-wide state, written once by init ---------------------------- */

/* glibc's text, for recognising its sigreturn trampoline, and the
 * trampoline once seen (unwind_int.h). */
uintptr_t rt_libc_text_lo, rt_libc_text_hi;
uintptr_t rt_sigreturn_addr;

static struct {
	int (*backtrace)(void **, int);
	int ready;                   /* release by init, acquire by rt_unwind */
	int static_tls;
	int tables;
} lu;

static unw_dyn_info_t lu_tables[RT_UNWIND_MAX_TABLES];

static inline int bad_code_address(uintptr_t a)
{
	/* The first page is never code; the upper half is the kernel's. */
	return a < 4096 || (intptr_t)a < 0;
}

/* ---- the frame-pointer walk ----------------------------------------------- */

#if defined(__x86_64__)
/* mov $15,%rax (rt_sigreturn); syscall */
static const unsigned char sigreturn_code[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };

/* The trampoline if ra is it. `known` is rt_sigreturn_addr as loaded once
 * per walk: the globals are read once, not after every store into ips[]
 * (which may alias them as far as the compiler knows). */
RT_NO_SANITIZE static int is_sigreturn(uintptr_t ra, uintptr_t known, uintptr_t clo, uintptr_t chi)
{
	if (known)
		return ra == known;
	/* libc's text is mapped for the life of the process: its bytes can be
	 * read; any other address is not looked at. */
	if (ra < clo || chi - clo < sizeof(sigreturn_code) || ra > chi - sizeof(sigreturn_code))
		return 0;
	/* A loop, not memcmp: no interceptor of a sanitizer runtime in here. */
	const volatile unsigned char *code = (const volatile unsigned char *)ra;
	for (size_t i = 0; i < sizeof(sigreturn_code); i++)
		if (code[i] != sigreturn_code[i])
			return 0;
	__atomic_store_n(&rt_sigreturn_addr, ra, __ATOMIC_RELAXED);
	return 1;
}
#endif

RT_NO_SANITIZE int rt_is_sigreturn(uintptr_t ra)
{
#if defined(__x86_64__)
	return is_sigreturn(ra, __atomic_load_n(&rt_sigreturn_addr, __ATOMIC_RELAXED), rt_libc_text_lo,
			    rt_libc_text_hi);
#else
	(void)ra;
	return 0;
#endif
}

RT_NO_SANITIZE static int fp_walk(uintptr_t fp, uintptr_t sp, uintptr_t *restrict ips, int max,
				 int skip)
{
	struct region r;
	rt_stack_region(sp, 1, &r);
	/* A frame at fp is read whole: lo <= fp <= top. */
	uintptr_t lo = sp, top = r.hi - 16;
	if (r.hi < sp + 16)
		return 0;
#if defined(__x86_64__)
	uintptr_t sig = __atomic_load_n(&rt_sigreturn_addr, __ATOMIC_RELAXED);
	const uintptr_t clo = rt_libc_text_lo, chi = rt_libc_text_hi;
#endif
	int n = 0;
	/* Every pass stores or skips at least one address, so max + skip
	 * passes bound the walk even on a forged chain. */
	const int passes = max + skip;
	for (int pass = 0; n < max && pass < passes; pass++) {
		if ((fp & 7) || fp < lo || fp > top)
			break;
		const uintptr_t *f = (const uintptr_t *)fp;
		uintptr_t next = f[0], ra = f[1];
		if (bad_code_address(ra))
			break;
		if (skip > 0)
			skip--;
		else
			ips[n++] = ra;
#if defined(__x86_64__)
		if (__builtin_expect(is_sigreturn(ra, sig, clo, chi), 0)) {
			/* The handler's frame: its return address is the
			 * trampoline, the kernel's ucontext follows it. Only the
			 * general registers are read; they end well before the
			 * part where glibc's ucontext_t and the kernel's differ. */
			sig = ra;
			uintptr_t uc = fp + 16;
			size_t need = offsetof(ucontext_t, uc_mcontext.gregs) + NGREG * sizeof(greg_t);
			if (top + 16 - uc < need)
				break;
			const greg_t *g = ((const ucontext_t *)uc)->uc_mcontext.gregs;
			uintptr_t ip = (uintptr_t)g[REG_RIP], isp = (uintptr_t)g[REG_RSP];
			uintptr_t ifp = (uintptr_t)g[REG_RBP];
			if (bad_code_address(ip) || n >= max)
				break;
			if (skip > 0)
				skip--;
			else
				ips[n++] = ip;
			if (rt_stack_region(isp, 0, &r) < 0 || r.hi < isp + 16)
				break;
			lo = isp;
			top = r.hi - 16;
			fp = ifp;
			continue;
		}
#endif
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

/* ---- capture ---------------------------------------------------------------- */

/*
 * libunwind's capture. Inlined into rt_unwind(): buf[0] is then the
 * return address into rt_unwind(), dropped with the skipped ones.
 */
static inline __attribute__((always_inline)) int lu_capture(uintptr_t *ips, int max, int skip)
{
	struct unwind_tls *t = &rt_tls;
	if (!__atomic_load_n(&lu.ready, __ATOMIC_ACQUIRE))
		return -ENOSYS;
	if (!lu.static_tls && !t->lu_ready)
		return -EAGAIN;
	if (t->busy)
		return -EBUSY;
	void *buf[RT_UNWIND_MAX_DEPTH + RT_UNWIND_MAX_SKIP + 1];
	t->busy = 1;
	SIGFENCE();
	int got = lu.backtrace(buf, max + skip + 1);
	SIGFENCE();
	t->busy = 0;
	int n = got - (skip + 1);
	if (n < 0)
		n = 0;
	for (int i = 0; i < n; i++)
		ips[i] = (uintptr_t)buf[skip + 1 + i];
	return n;
}

/* The capture from the frame at fp (the frame of a noinline function of
 * ours, whose stack pointer is sp): always inlined into one, so that
 * buf[0] of libunwind's capture is the return address into it too. */
static inline __attribute__((always_inline)) int unwind_from(uintptr_t fp, uintptr_t sp, uintptr_t *ips, int max,
							      int skip, int own, int method,
							      struct rt_unwind_note *ret_note, int keep_errno)
{
	struct rt_unwind_note note_unused;
	/* Lazy frames only for a caller that gets the note. */
	uint32_t lazy = ret_note && (method & RT_UNWIND_LAZY);
	method &= ~RT_UNWIND_LAZY;
	if (!ret_note)
		ret_note = &note_unused;
	ret_note->cell = NULL;
	ret_note->frames = NULL;
	ret_note->lazy = lazy;
	if (max < 0 || max > RT_UNWIND_MAX_DEPTH || skip < 0 || skip > RT_UNWIND_MAX_SKIP ||
	    (!ips && max > 0) || own < 0 || own > skip)
		return -EINVAL;
	if (method != RT_UNWIND_FP && method != RT_UNWIND_LIBUNWIND && method != RT_UNWIND_TABLES)
		return -EINVAL;
	if (max == 0)
		return 0;
	int saved_errno = keep_errno ? errno : 0;
	int n;
	if (method == RT_UNWIND_FP) {
		n = fp_walk(fp, sp, ips, max, skip);
	} else if (method == RT_UNWIND_TABLES) {
		/* The calling function keeps its frame pointer (unwind.o is
		 * built with them): its frame gives its caller's ip, CFA and
		 * rbp. */
		const uintptr_t *f = (const uintptr_t *)fp;
		int cause, passed;
		n = ft_walk(ips, max, skip, own, f[1], fp + 16, f[0], sp, &passed, ret_note, &cause);
		if (n >= 0 && ft_verify) {
			/* Lazy frames are compared too (the caller may copy
			 * them again). */
			if (ret_note->frames)
				(void)rt_unwind_note_frames(ret_note, ips, n);
			/* libunwind's frames after the ones the walk passed by
			 * their frame pointers (the allocation tracer's). */
			uintptr_t ref[RT_UNWIND_MAX_DEPTH];
			int m = skip + passed <= RT_UNWIND_MAX_SKIP ? lu_capture(ref, max, skip + passed) : -EINVAL;
			ft_verify_result(ips, n, ref, m);
		}
		if (n < 0) {
			ret_note->cell = NULL;
			n = lu_capture(ips, max, skip);
		}
	} else {
		n = lu_capture(ips, max, skip);
	}
	if (keep_errno)
		errno = saved_errno;
	return n;
}

static inline __attribute__((always_inline)) uintptr_t current_sp(void)
{
	uintptr_t sp;
#if defined(__x86_64__)
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
#else
	sp = (uintptr_t)&sp;
#endif
	return sp;
}

/* noinline: its frame is the one the walks start from, and ips[0] must be
 * the return address into its caller. */
__attribute__((noinline)) int rt_unwind(uintptr_t *ips, int max, int skip, int method)
{
	return unwind_from((uintptr_t)__builtin_frame_address(0), current_sp(), ips, max, skip, 0, method, NULL, 1);
}

__attribute__((noinline)) int rt_unwind_own(uintptr_t *ips, int max, int skip, int own, int method,
					    struct rt_unwind_note *ret_note)
{
	return unwind_from((uintptr_t)__builtin_frame_address(0), current_sp(), ips, max, skip, own, method,
			   ret_note, 0);
}

/* Verification of rt_unwind_tables_here()'s capture: libunwind's frames,
 * from a frame where rt_unwind_own()'s would be (called by the same
 * function), after the tracer's frames the walk passed. */
__attribute__((noinline)) void rt_unwind_verify_own(const uintptr_t *ips, int n, int max, int skip)
{
	uintptr_t ref[RT_UNWIND_MAX_DEPTH];
	int m = skip <= RT_UNWIND_MAX_SKIP && max <= RT_UNWIND_MAX_DEPTH ? lu_capture(ref, max, skip) : -EINVAL;
	ft_verify_result(ips, n, ref, m);
}

/* ---- init ------------------------------------------------------------------- */

static int libc_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	if (strncmp(base, "libc.so", 7) != 0)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			rt_libc_text_lo = info->dlpi_addr + ph->p_vaddr;
			rt_libc_text_hi = rt_libc_text_lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

/* Bytes of a DW_EH_PE_* encoded value of fixed size, 0 if not fixed. */
static size_t eh_enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00:                   /* absptr */
		return sizeof(void *);
	case 0x02:                   /* udata2 */
	case 0x0a:                   /* sdata2 */
		return 2;
	case 0x03:                   /* udata4 */
	case 0x0b:                   /* sdata4 */
		return 4;
	case 0x04:                   /* udata8 */
	case 0x0c:                   /* sdata8 */
		return 8;
	default:
		return 0;
	}
}

/*
 * Fill di from an object's .eh_frame_hdr (hdr, len bytes, in memory):
 * version 1, a binary-search table of (initial location, FDE) pairs of
 * 4-byte signed offsets from the header (DW_EH_PE_datarel | sdata4, what
 * every linker writes). 0, or -1 for anything else.
 */
static int eh_hdr_table(const uint8_t *hdr, size_t len, unw_dyn_info_t *di)
{
	if (len < 4 || hdr[0] != 1 || hdr[1] == 0xff || hdr[2] == 0xff || hdr[3] != 0x3b)
		return -1;
	size_t psz = eh_enc_size(hdr[1]), csz = eh_enc_size(hdr[2]);
	if (!psz || !csz || (hdr[2] & 0x70) != 0 || 4 + psz + csz > len)
		return -1;
	const uint8_t *p = hdr + 4 + psz;
	uint64_t count = 0;
	if (csz == 2) {
		uint16_t v;
		memcpy(&v, p, 2);
		count = (hdr[2] & 0x08) ? (uint64_t)(int64_t)(int16_t)v : v;
	} else if (csz == 4) {
		uint32_t v;
		memcpy(&v, p, 4);
		count = (hdr[2] & 0x08) ? (uint64_t)(int64_t)(int32_t)v : v;
	} else {
		memcpy(&count, p, 8);
	}
	size_t off = 4 + psz + csz;
	if (count == 0 || count > (len - off) / 8)
		return -1;
	di->format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di->gp = 0;
	di->load_offset = 0;
	di->u.rti.name_ptr = 0;
	di->u.rti.segbase = (unw_word_t)(uintptr_t)hdr;
	di->u.rti.table_len = (unw_word_t)(count * 8 / sizeof(unw_word_t));
	di->u.rti.table_data = (unw_word_t)(uintptr_t)(hdr + off);
	return 0;
}

struct table_scan {
	unw_dyn_info_t *di;          /* NULL in the counting pass */
	int n;
	int max;
	int *obj;                    /* per entry: its object in objs, -1 for the vDSO */
	struct rt_objlist objs;      /* every object, names copied (startup.h) */
};

/*
 * dl_iterate_phdr callback, run twice: first to count (and size the name
 * copies), then to fill. It never allocates: the loader lock is held.
 */
static int table_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct table_scan *s = arg;
	int o = rt_objlist_add(&s->objs, info);
	const uint8_t *hdr;
	size_t hdr_len;
	uintptr_t lo, hi;
	rt_object_span(info, &hdr, &hdr_len, &lo, &hi);
	if (!hdr || lo >= hi)
		return 0;
	if (!s->di) {
		s->n++;
		return 0;
	}
	if (o < 0)
		return 0;                /* an object loaded between the passes */
	if (s->n >= s->max)
		return 1;
	unw_dyn_info_t *di = &s->di[s->n];
	memset(di, 0, sizeof(*di));
	if (eh_hdr_table(hdr, hdr_len, di) < 0)
		return 0;
	di->start_ip = lo;
	di->end_ip = hi;
	s->obj[s->n] = info->dlpi_addr != getauxval(AT_SYSINFO_EHDR) ? o : -1;
	s->n++;
	return 0;
}

void rt_object_span(const struct dl_phdr_info *info, const uint8_t **ret_hdr, size_t *ret_hdr_len,
		    uintptr_t *ret_lo, uintptr_t *ret_hi)
{
	const uint8_t *hdr = NULL;
	size_t hdr_len = 0;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_GNU_EH_FRAME) {
			hdr = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
			hdr_len = ph->p_memsz;
		} else if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			uintptr_t a = info->dlpi_addr + ph->p_vaddr;
			if (a < lo)
				lo = a;
			if (a + ph->p_memsz > hi)
				hi = a + ph->p_memsz;
		}
	}
	*ret_hdr = hdr;
	*ret_hdr_len = hdr_len;
	*ret_lo = lo;
	*ret_hi = hi;
}

/*
 * Register the unwind tables of the loaded objects (see the file comment,
 * point 1). Returns how many were registered. Only the objects that may
 * have been dlopen'ed are pinned: those ld.so loaded at start-up are
 * never unloaded, and pinning one that was never dlopen'ed runs its
 * pending constructors (and its dependencies') inside this call, which is
 * inside libringtrace's constructor when a recording with stacks starts
 * (startup.c).
 */
static int register_tables(void (*reg)(unw_dyn_info_t *))
{
	struct table_scan s = { 0 };
	dl_iterate_phdr(table_cb, &s);
	/* Room for objects loaded meanwhile. */
	int max = s.n + 16;
	if (max > RT_UNWIND_MAX_TABLES)
		max = RT_UNWIND_MAX_TABLES;
	unw_dyn_info_t *tmp = calloc((size_t)max, sizeof(*tmp));
	int *obj = calloc((size_t)max, sizeof(*obj));
	s.objs.max = s.objs.n + 16;
	s.objs.obj = calloc((size_t)s.objs.max, sizeof(*s.objs.obj));
	s.objs.text_size += 4096;
	s.objs.text = malloc(s.objs.text_size);
	int done = 0;
	if (tmp && obj && s.objs.obj && s.objs.text) {
		s.di = tmp;
		s.obj = obj;
		s.max = max;
		s.n = 0;
		s.objs.n = 0;
		dl_iterate_phdr(table_cb, &s);
		int startup = rt_objlist_startup(&s.objs);
		for (int i = 0; i < s.n && done < RT_UNWIND_MAX_TABLES; i++) {
			const char *name = obj[i] >= 0 ? rt_objlist_name(&s.objs, obj[i]) : "";
			if (obj[i] >= startup && name[0] != '\0') {
				void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
				if (!h)
					continue;    /* unloaded since the scan */
				dlclose(h);          /* the object stays: NODELETE */
			}
			lu_tables[done] = tmp[i];
			reg(&lu_tables[done]);
			done++;
		}
	}
	free(tmp);
	free(obj);
	free(s.objs.obj);
	free(s.objs.text);
	return done;
}

static int lu_load(void)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -ENOENT;
	/* Static TLS sits just below the thread pointer; a dynamic block is
	 * allocated lazily (NULL here before the first use in this thread) or
	 * lives on the heap. */
	void *tls = NULL;
	if (dlinfo(h, RTLD_DI_TLS_DATA, &tls) != 0)
		tls = NULL;
	uintptr_t tp = rt_thread_pointer();
	int static_tls = tls && (uintptr_t)tls < tp && tp - (uintptr_t)tls < ((uintptr_t)1 << 20);

	__typeof__(&unw_backtrace) bt = (__typeof__(&unw_backtrace))dlsym(h, "unw_backtrace");
	__typeof__(&unw_set_caching_policy) policy =
		(__typeof__(&unw_set_caching_policy))dlsym(h, RT_STR(unw_set_caching_policy));
	__typeof__(&_U_dyn_register) reg = (__typeof__(&_U_dyn_register))dlsym(h, "_U_dyn_register");
	unw_addr_space_t *as = (unw_addr_space_t *)dlsym(h, RT_STR(unw_local_addr_space));
	if (!bt || !policy || !reg || !as) {
		dlclose(h);
		return -ENOENT;
	}
	/* No state cache. UNW_CACHE_PER_THREAD is what one would ask for, but
	 * Debian's libunwind 1.6 is built without it and silently uses
	 * UNW_CACHE_GLOBAL, a mutex taken (with signals blocked) around
	 * dl_iterate_phdr: seen deadlocked in test_unwind's storm, a thread
	 * holding it waiting for the loader's lock, held by a dlclose whose
	 * thread was in a handler waiting for it. The fast trace's own
	 * per-thread cache makes misses rare, so the state cache buys little:
	 * bench/unwind.sh measures the cold path. */
	policy(*as, UNW_CACHE_NONE);
	lu.tables = register_tables(reg);
	lu.backtrace = bt;
	lu.static_tls = static_tls;
	/* Allocate this thread's TLS block and trace cache now, outside any
	 * handler. */
	void *warm[4];
	rt_tls.busy = 1;
	SIGFENCE();
	bt(warm, 4);
	SIGFENCE();
	rt_tls.busy = 0;
	rt_tls.lu_ready = 1;
	__atomic_store_n(&lu.ready, 1, __ATOMIC_RELEASE);
	return 0;
}

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int init_done;
static int init_result;

int rt_unwind_init(void)
{
	pthread_mutex_lock(&init_lock);
	if (!init_done) {
		int saved_errno = errno;
		dl_iterate_phdr(libc_cb, NULL);
		/* Cache this thread's stack range outside any handler. */
		struct region r;
		rt_stack_region((uintptr_t)__builtin_frame_address(0), 1, &r);
		init_result = lu_load();
		/* The tables work without libunwind (their fallback then
		 * answers -ENOSYS, and the caller walks frame pointers). */
		ft_init();
		init_done = 1;
		errno = saved_errno;
	}
	int r = init_result;
	pthread_mutex_unlock(&init_lock);
	return r;
}

int rt_unwind_thread_init(void)
{
	if (!__atomic_load_n(&lu.ready, __ATOMIC_ACQUIRE))
		return -ENOSYS;
	if (rt_tls.lu_ready)
		return 0;
	if (rt_tls.busy)
		return -EBUSY;
	int saved_errno = errno;
	void *warm[4];
	rt_tls.busy = 1;
	SIGFENCE();
	lu.backtrace(warm, 4);
	SIGFENCE();
	rt_tls.busy = 0;
	rt_tls.lu_ready = 1;
	struct region r;
	rt_stack_region((uintptr_t)__builtin_frame_address(0), 1, &r);
	errno = saved_errno;
	return 0;
}

int rt_unwind_get_info(struct rt_unwind_info *ret)
{
	if (!ret)
		return -EINVAL;
	int ready = __atomic_load_n(&lu.ready, __ATOMIC_ACQUIRE);
	ret->libunwind = ready;
	ret->static_tls = ready ? lu.static_tls : 0;
	ret->tables = ready ? lu.tables : 0;
	ret->sigreturn = __atomic_load_n(&rt_sigreturn_addr, __ATOMIC_RELAXED);
	return 0;
}
