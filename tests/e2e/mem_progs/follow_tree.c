/*
 * follow_tree.c - a process tree for tests/e2e/follow.sh (record
 * --follow-fork/--follow-exec). Each process allocates with its own
 * function, so that the report by function tells whose allocations a
 * trace holds, and how many:
 *
 *   parent       parent_work: 2 x 50 blocks, all freed
 *   child A      child_work: 120 blocks, 100 freed; forks
 *     grandchild grandchild_work: 33 blocks, all freed; exit 3
 *   child A exits 7
 *   child B      execs this program with "exec": exec_work: 37 blocks,
 *                30 freed; exit 9
 *   child C      quick_work: 5 blocks, none freed; _exit(0) at once
 *   parent exits 5
 *
 * Output is complete before each fork (flushed) and each child is waited
 * for, so it is the same at every run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile sink[200];

/* n blocks of base+i bytes, the first `freed` of them freed; inlined, so
 * that the call sites are in the callers below. */
static inline __attribute__((always_inline)) unsigned long work(int n, int freed, size_t base)
{
	unsigned long sum = 0;
	for (int i = 0; i < n; i++) {
		char *p = malloc(base + (size_t)i);
		if (!p)
			exit(1);
		memset(p, i, base + (size_t)i);
		sum += (unsigned char)p[i];
		sink[i] = p;
	}
	for (int i = 0; i < freed; i++)
		free(sink[i]);
	return sum;
}

__attribute__((noinline)) static unsigned long parent_work(void) { return work(50, 50, 1000); }
__attribute__((noinline)) static unsigned long child_work(void) { return work(120, 100, 2000); }
__attribute__((noinline)) static unsigned long grandchild_work(void) { return work(33, 33, 4000); }
__attribute__((noinline)) static unsigned long exec_work(void) { return work(37, 30, 3000); }
__attribute__((noinline)) static unsigned long quick_work(void) { return work(5, 0, 500); }

static int reap(pid_t pid, const char *what)
{
	int st;
	if (waitpid(pid, &st, 0) != pid) {
		perror("waitpid");
		exit(1);
	}
	printf("%s: %s %d\n", what, WIFEXITED(st) ? "exit" : "signal",
	       WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? WTERMSIG(st) : -1);
	return st;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		printf("exec: %lu\n", exec_work());
		return 9;
	}
	printf("parent: %lu\n", parent_work());

	fflush(stdout);
	pid_t a = fork();
	if (a < 0)
		return 1;
	if (a == 0) {
		printf("child: %lu\n", child_work());
		fflush(stdout);
		pid_t g = fork();
		if (g < 0)
			exit(1);
		if (g == 0) {
			printf("grandchild: %lu\n", grandchild_work());
			exit(3);
		}
		reap(g, "grandchild");
		exit(7);
	}
	reap(a, "child");

	fflush(stdout);
	pid_t b = fork();
	if (b < 0)
		return 1;
	if (b == 0) {
		/* By its path, so that it keeps its name (comm). */
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			_exit(127);
		self[n] = 0;
		execl(self, argv[0], "exec", (char *)NULL);
		_exit(127);
	}
	reap(b, "exec child");

	fflush(stdout);
	pid_t c = fork();
	if (c < 0)
		return 1;
	if (c == 0) {
		quick_work();
		_exit(0);
	}
	reap(c, "quick child");

	printf("parent: %lu\n", parent_work());
	return 5;
}
