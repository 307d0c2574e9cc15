/*
 * stacks - events with stacks, for the stack-map end-to-end tests.
 *
 *   stacks [N [DISTINCT [SLEEP_MS]]]
 *
 * Fires stk:alloc (declared with a stack) N times from each of three call
 * paths: main -> path_a -> leaf, main -> path_b -> leaf, and
 * main -> path_c (directly), then stk:plain (no stack) N times from main,
 * then stk:alloc from DISTINCT (at most 8192) different stacks (13 frames
 * of left/right chosen by the bits of the event's field), then once from
 * a SIGUSR1 handler. With SLEEP_MS, then fires from path_a once a
 * millisecond for that long (for the live tests). Prints "a N b N c N plain N distinct D signal 1".
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT_STACK(stk, alloc, RINGTRACE_U32(n));
RINGTRACE_EVENT(stk, plain, RINGTRACE_U32(n));

#define NOINLINE __attribute__((noinline))

/* Not static, so that their names are in the symbol table. */
void leaf(uint32_t n);
void path_a(uint32_t n);
void path_b(uint32_t n);
void path_c(uint32_t n);
void left(uint32_t code, uint32_t level);
void right(uint32_t code, uint32_t level);
void branch(uint32_t code, uint32_t level);

/* An empty asm keeps each call a real call with a frame after it. */
NOINLINE void leaf(uint32_t n)
{
	ringtrace_tracepoint(stk, alloc, n);
	__asm__ __volatile__("" ::: "memory");
}

NOINLINE void path_a(uint32_t n)
{
	leaf(n);
	__asm__ __volatile__("" ::: "memory");
}

NOINLINE void path_b(uint32_t n)
{
	leaf(n);
	__asm__ __volatile__("" ::: "memory");
}

/* The tracepoint is the function's last statement: the macro must keep
 * the probe from being a tail call, or path_c's frame would be missing. */
NOINLINE void path_c(uint32_t n)
{
	ringtrace_tracepoint(stk, alloc, n);
}

NOINLINE void left(uint32_t code, uint32_t level)
{
	branch(code, level);
	__asm__ __volatile__("" ::: "memory");
}

NOINLINE void right(uint32_t code, uint32_t level)
{
	branch(code, level);
	__asm__ __volatile__("" ::: "memory");
}

/* Each code is a different path of left/right frames: a distinct stack. */
NOINLINE void branch(uint32_t code, uint32_t level)
{
	if (level == 0)
		ringtrace_tracepoint(stk, alloc, code);
	else if (code >> (level - 1) & 1)
		left(code, level - 1);
	else
		right(code, level - 1);
	__asm__ __volatile__("" ::: "memory");
}

static void on_usr1(int sig)
{
	(void)sig;
	path_c(999999);
	__asm__ __volatile__("" ::: "memory"); /* not a tail call */
}

/*
 * `stacks storm`: a worker thread allocates and frees in a loop while the
 * main thread keeps sending it SIGUSR2, whose handler fires stk:alloc: the
 * worker's first captures happen in a handler that may have interrupted
 * malloc (they must not set up libunwind's per-thread block there), its
 * last one from normal code. Prints "storm handled K".
 */
static volatile uint32_t storm_handled;
static volatile int storm_done;

static void on_usr2(int sig)
{
	(void)sig;
	path_c(storm_handled);
	storm_handled = storm_handled + 1;
	__asm__ __volatile__("" ::: "memory");
}

static void *storm_worker(void *arg)
{
	(void)arg;
	/* Until a signal came too: on a busy machine the main thread may
	 * not run before 300000 pairs are done (bounded all the same). */
	for (int i = 0; i < 300000 || (storm_handled == 0 && i < 300000000); i++) {
		void *volatile p = malloc((size_t)(i % 512) + 1);
		free(p);
	}
	path_a(0);
	__atomic_store_n(&storm_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int storm(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_usr2;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR2, &sa, NULL);
	pthread_t w;
	if (pthread_create(&w, NULL, storm_worker, NULL) != 0)
		return 1;
	while (!__atomic_load_n(&storm_done, __ATOMIC_ACQUIRE)) {
		pthread_kill(w, SIGUSR2);
		struct timespec d = { 0, 20000 };
		nanosleep(&d, NULL);
	}
	pthread_join(w, NULL);
	printf("storm handled %u\n", storm_handled);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "storm"))
		return storm();
	uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100;
	uint32_t distinct = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 0;
	long sleep_ms = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
	for (uint32_t i = 0; i < n; i++) {
		path_a(i);
		path_b(i);
		path_c(i);
	}
	for (uint32_t i = 0; i < n; i++)
		ringtrace_tracepoint(stk, plain, i);
	for (uint32_t i = 0; i < distinct; i++)
		branch(i, 13);
	signal(SIGUSR1, on_usr1);
	raise(SIGUSR1);
	printf("a %u b %u c %u plain %u distinct %u signal 1\n", n, n, n, n, distinct);
	fflush(stdout);
	/* Live tests: keep firing from path_a, once a millisecond. */
	for (long ms = 0; ms < sleep_ms; ms++) {
		struct timespec d = { 0, 1000000L };
		nanosleep(&d, NULL);
		path_a((uint32_t)ms);
	}
	return 0;
}
