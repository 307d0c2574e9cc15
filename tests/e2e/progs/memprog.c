/*
 * memprog.c - a known allocation pattern for tests/e2e/mem.sh: each pattern
 * is its own function, so the report's rows (by function) can be checked
 * exactly.
 *
 *   memprog pattern   the patterns below, then prints "done"
 *   memprog spin N    N malloc/free pairs (a bigger trace)
 *   memprog hold N SIZE
 *                     N blocks of SIZE bytes allocated by hold_blocks(), kept
 *                     until SIGUSR2 ("holding PID" once they are, "released"
 *                     after), for `ringtrace top`
 *
 * Not linked with libringtrace: the allocation tracer needs no rebuild.
 */
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

static void *keep[256];
static volatile unsigned sink;
/* Through these the compiler cannot see a block unused or a pointer NULL:
 * clang removes a calloc whose block nothing reads, and turns a first
 * realloc(NULL, n) into malloc(n). */
static void *volatile held10[10];
static void *volatile nothing;

/* 100 x malloc(24), all freed by free_all24(). */
static NOINLINE void alloc24(void)
{
	for (int i = 0; i < 100; i++)
		keep[i] = malloc(24);
}

static NOINLINE void free_all24(void)
{
	for (int i = 0; i < 100; i++)
		free(keep[i]);
}

/* 10 x calloc(10, 10): 7 freed, 3 leaked (300 bytes). */
static NOINLINE void calloc_leak3(void)
{
	for (int i = 0; i < 10; i++)
		held10[i] = calloc(10, 10);
	for (int i = 0; i < 7; i++)
		free(held10[i]);
}

/* realloc from NULL through 16, 32, 64, 128, 256: 5 reallocs, 4 blocks
 * given back by them, 256 bytes leaked. */
static NOINLINE void *realloc_grow(void)
{
	void *p = nothing;
	for (size_t s = 16; s <= 256; s *= 2) {
		p = realloc(p, s);
		memset(p, 1, s);
	}
	return p;
}

/* The aligned families, all freed: 4 posix_memalign(64, 1000),
 * 2 aligned_alloc(128, 256), 1 memalign(32, 100), 1 valloc(100). */
static NOINLINE void aligned_all(void)
{
	void *p[8];
	for (int i = 0; i < 4; i++)
		if (posix_memalign(&p[i], 64, 1000) != 0)
			p[i] = NULL;
	p[4] = aligned_alloc(128, 256);
	p[5] = aligned_alloc(128, 256);
	p[6] = memalign(32, 100);
	p[7] = valloc(100);
	for (int i = 0; i < 8; i++)
		free(p[i]);
}

/* 4 anonymous mappings of 64 KiB, 3 unmapped. */
static NOINLINE void pages(void)
{
	void *m[4];
	for (int i = 0; i < 4; i++)
		m[i] = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < 3; i++)
		munmap(m[i], 65536);
}

/* 50 x malloc(40) on one thread (CPU 0 if it can be pinned), freed on
 * another (CPU 1): 50 cross-thread frees, and 50 cross-CPU frees when
 * pinning worked (printed). */
static void *xblocks[50];
static int pinned;

static int pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof(s), &s) == 0;
}

static NOINLINE void *xalloc40(void *arg)
{
	(void)arg;
	pinned += pin(0);
	for (int i = 0; i < 50; i++)
		xblocks[i] = malloc(40);
	return NULL;
}

static NOINLINE void *xfree40(void *arg)
{
	(void)arg;
	pinned += pin(1);
	for (int i = 0; i < 50; i++)
		free(xblocks[i]);
	return NULL;
}

static void cross_thread(void)
{
	pthread_t t;
	pthread_create(&t, NULL, xalloc40, NULL);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, xfree40, NULL);
	pthread_join(t, NULL);
}

/*
 * Errors, guarded so that the allocator's own checks (which abort) do not
 * end the program: SIGABRT jumps back. glibc checks a double free before
 * it changes anything, so the heap stays sound.
 */
static sigjmp_buf back;

static void on_abrt(int sig)
{
	(void)sig;
	siglongjmp(back, 1);
}

/* malloc(48), freed twice. */
static void *volatile opaque; /* the compiler may not pair or judge these */

static NOINLINE void double_free48(void)
{
	opaque = malloc(48);
	free(opaque);
	if (sigsetjmp(back, 1) == 0)
		free(opaque);
}

/* free() of a pointer no allocator gave. */
static char not_heap[64] __attribute__((aligned(16)));
static NOINLINE void free_unknown(void)
{
	opaque = not_heap + 16;
	if (sigsetjmp(back, 1) == 0)
		free(opaque);
}

/* 5 x malloc(77) in a signal handler, freed there. */
static NOINLINE void on_usr1(int sig)
{
	(void)sig;
	opaque = malloc(77);
	free(opaque);
}

static void *held[10000];
static volatile sig_atomic_t release_now;

static void on_usr2(int sig)
{
	(void)sig;
	release_now = 1;
}

static NOINLINE void hold_blocks(long n, size_t size)
{
	for (long i = 0; i < n; i++)
		held[i] = malloc(size);
}

static int hold(long n, size_t size)
{
	if (n < 0 || n > (long)(sizeof(held) / sizeof(held[0])))
		return 2;
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	sigprocmask(SIG_BLOCK, &block, &old);
	signal(SIGUSR2, on_usr2);
	hold_blocks(n, size);
	printf("holding %d\n", (int)getpid());
	fflush(stdout);
	while (!release_now)
		sigsuspend(&old);
	for (long i = 0; i < n; i++)
		free(held[i]);
	puts("released");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "hold"))
		return hold(atol(argv[2]), (size_t)atol(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "spin")) {
		long n = atol(argv[2]);
		for (long i = 0; i < n; i++) {
			void *p = malloc((size_t)(i % 256) + 1);
			sink += (unsigned)(uintptr_t)p;
			free(p);
		}
		puts("done");
		return 0;
	}
	if (argc != 2 || strcmp(argv[1], "pattern")) {
		fprintf(stderr, "usage: memprog pattern | spin N | hold N SIZE\n");
		return 2;
	}
	/* stdout's buffer first, so that it is not among the patterns. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("start\n");
	struct sigaction sa = { 0 };
	sa.sa_handler = on_abrt;
	sigaction(SIGABRT, &sa, NULL);
	alloc24();
	free_all24();
	calloc_leak3();
	void *grown = realloc_grow();
	aligned_all();
	pages();
	cross_thread();
	double_free48();
	free_unknown();
	signal(SIGUSR1, on_usr1);
	for (int i = 0; i < 5; i++)
		raise(SIGUSR1);
	printf("pinned %d\n", pinned);
	printf("done %u\n", (unsigned)(((unsigned char *)grown)[255]));
	return 0;
}
