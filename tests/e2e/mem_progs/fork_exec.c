/*
 * fork_exec.c - a program that starts others, for tests/e2e/mem_real.sh:
 * fork + exec of /bin/echo, a forked child that allocates and exits
 * without exec, popen() and system() (fork + exec of sh), with the parent
 * allocating between them. Each child's output is complete before the
 * parent prints again (stdout flushed before each fork, each child waited
 * for), so the output is the same at every run. The exec'ed shells say
 * whether the allocation tracer is still preloaded in them (it takes
 * itself out of LD_PRELOAD: children are not traced). Exits with status
 * 5, to show that the status comes through.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Blocks the parent allocates and frees between its children. */
static unsigned long churn(int round)
{
	unsigned long sum = 0;
	char *v[200];
	for (int i = 0; i < 200; i++) {
		v[i] = malloc((size_t)(i * 13 + round + 1));
		if (!v[i])
			exit(1);
		memset(v[i], i, (size_t)(i * 13 + round + 1));
	}
	for (int i = 0; i < 200; i++) {
		sum += (unsigned char)v[i][i * 13 + round];
		free(v[i]);
	}
	return sum;
}

/* Waits for pid; prints how it ended. */
static void reap(pid_t pid, const char *what)
{
	int st;
	if (waitpid(pid, &st, 0) != pid) {
		perror("waitpid");
		exit(1);
	}
	if (WIFEXITED(st))
		printf("%s: exit %d\n", what, WEXITSTATUS(st));
	else
		printf("%s: signal %d\n", what, WIFSIGNALED(st) ? WTERMSIG(st) : -1);
}

int main(void)
{
	char *keep = strdup("parent block kept across forks");
	printf("parent start: %lu\n", churn(0));

	/* fork + exec. */
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		execl("/bin/echo", "echo", "child: echo from exec", (char *)NULL);
		_exit(127);
	}
	reap(pid, "exec child");
	printf("parent after exec child: %lu\n", churn(1));

	/* fork, no exec: the child allocates with the parent's heap (and the
	 * tracer still loaded), then exits through exit(). */
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		unsigned long s = churn(2);
		char *p = realloc(keep, 200);
		printf("fork child: %lu %s\n", s, p ? p : "(null)");
		free(p);
		exit(7);
	}
	reap(pid, "fork child");
	printf("parent after fork child: %lu\n", churn(3));

	/* popen: fork + exec of sh, read through a pipe. */
	fflush(stdout);
	FILE *f = popen("case \"$LD_PRELOAD\" in *ringtrace-malloc*) echo preloaded;; *) echo clean;; esac", "r");
	if (!f)
		return 1;
	char line[128];
	while (fgets(line, sizeof(line), f))
		printf("popen: %s", line);
	printf("popen status: %d\n", pclose(f));

	/* system: the shell writes straight to our stdout. */
	fflush(stdout);
	int r = system("echo system: shell says hi; exit 4");
	printf("system status: %d\n", WIFEXITED(r) ? WEXITSTATUS(r) : -1);

	printf("parent end: %lu %s\n", churn(4), keep);
	free(keep);
	return 5;
}
