/*
 * uw_coro.c - coroutines made by makecontext() that allocate, for
 * tests/e2e/unwind_verify.sh: every allocation's stack runs from the
 * coroutine's function to glibc's __start_context, whose first byte is
 * the coroutine's return address (the address - 1 has no FDE), and ends
 * there, as libunwind's does.
 *
 *   uw_coro ROUNDS        4 coroutines, each making 10 allocations a round
 *   uw_coro ROUNDS fds    the same; halfway, every descriptor open on
 *                         this process's /proc/PID/maps (the tracer's) is
 *                         replaced by the parent's maps or /dev/null
 *                         (dup2): the tracer must not ask them
 *
 * Prints "allocations N" (4 x 10 x ROUNDS) on stdout; with `fds` also
 * "replaced N" and "maps open M": the descriptors open on this process's
 * maps at the end (the tracer's), or -1 if one of those replaced no
 * longer holds what the program put there.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ucontext.h>

#define NCO 4
#define PER 10

static ucontext_t main_ctx, co_ctx[NCO];
static void *volatile sink;
static unsigned long count;

static __attribute__((noinline)) void work(int k)
{
	for (int i = 0; i < PER; i++) {
		sink = malloc(32 + (size_t)k * 16);
		free(sink);
		count++;
	}
}

static void coroutine(int k)
{
	for (;;) {
		work(k);
		swapcontext(&co_ctx[k], &main_ctx);
	}
}

/* Out of line: getcontext() returns twice, which the caller's loop
 * variables must not see. */
static __attribute__((noinline)) int make_coroutine(int k)
{
	if (getcontext(&co_ctx[k]) != 0)
		return -1;
	co_ctx[k].uc_stack.ss_size = 64 * 1024;
	co_ctx[k].uc_stack.ss_sp = malloc(64 * 1024);
	if (!co_ctx[k].uc_stack.ss_sp)
		return -1;
	co_ctx[k].uc_link = &main_ctx;
	makecontext(&co_ctx[k], (void (*)(void))coroutine, 1, k);
	return 0;
}

/* The file descriptor fd is open on, into link; 0, or -1 if none. */
static int fd_target(int fd, char *link, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, link, size - 1);
	if (n <= 0)
		return -1;
	link[n] = 0;
	return 0;
}

#define REPLACED_MAX 8
static int replaced_fd[REPLACED_MAX];
static char replaced_to[REPLACED_MAX][256];

/*
 * What a program may do to a descriptor it did not open (dup2() over it,
 * closefrom() and open again): each one open on this process's
 * /proc/PID/maps (the tracer keeps one) becomes the parent's maps (where
 * readable), then /dev/null; what it became is kept for check_fds().
 * Returns how many were replaced.
 */
static int replace_maps_fds(void)
{
	char want[64], other[64], link[256];
	snprintf(want, sizeof(want), "/proc/%d/maps", (int)getpid());
	snprintf(other, sizeof(other), "/proc/%d/maps", (int)getppid());
	int replaced = 0;
	for (int fd = 3; fd < 1024 && replaced < REPLACED_MAX; fd++) {
		if (fd_target(fd, link, sizeof(link)) < 0 || strcmp(link, want) != 0)
			continue;
		int o = open(replaced % 2 ? "/dev/null" : other, O_RDONLY);
		if (o < 0)
			o = open("/dev/null", O_RDONLY);
		if (o < 0)
			continue;
		int ok = dup2(o, fd) >= 0;
		close(o);
		if (ok && fd_target(fd, replaced_to[replaced], sizeof(replaced_to[0])) == 0)
			replaced_fd[replaced++] = fd;
	}
	return replaced;
}

/* Descriptors open on this process's maps; -1 if one of those replaced
 * no longer holds what the program put there (closed or reused by the
 * tracer). */
static int check_fds(int replaced)
{
	char want[64], link[256];
	snprintf(want, sizeof(want), "/proc/%d/maps", (int)getpid());
	for (int i = 0; i < replaced; i++)
		if (fd_target(replaced_fd[i], link, sizeof(link)) < 0 || strcmp(link, replaced_to[i]) != 0)
			return -1;
	int maps = 0;
	for (int fd = 3; fd < 1024; fd++)
		maps += fd_target(fd, link, sizeof(link)) == 0 && strcmp(link, want) == 0;
	return maps;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100;
	for (int k = 0; k < NCO; k++)
		if (make_coroutine(k) != 0)
			return 1;
	int fds = argc > 2 && strcmp(argv[2], "fds") == 0, replaced = 0;
	for (long r = 0; r < rounds; r++) {
		if (fds && r == rounds / 2)
			replaced = replace_maps_fds();
		for (int k = 0; k < NCO; k++)
			if (swapcontext(&main_ctx, &co_ctx[k]) != 0)
				return 1;
	}
	printf("allocations %lu\n", count);
	if (fds)
		printf("replaced %d\nmaps open %d\n", replaced, check_fds(replaced));
	return 0;
}
