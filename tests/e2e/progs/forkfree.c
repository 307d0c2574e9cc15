/*
 * forkfree - a forked child frees what its parent allocated before the
 * fork: the parent makes 3 blocks (100, 200 and 300 bytes), forks; the
 * child frees the three, reallocs a fourth block of the parent's (400
 * bytes) to 500 and frees it, makes one block of its own (64 bytes) and
 * frees it; the parent waits for it, then frees its own copies. For
 * tests/e2e/mem_losses.sh (record --mem --follow-fork): the child's trace
 * starts at the fork, so the four frees of inherited blocks are no
 * errors.
 *
 *   forkfree
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	static const size_t size[4] = { 100, 200, 300, 400 };
	void *b[4];
	for (int i = 0; i < 4; i++)
		if (!(b[i] = malloc(size[i])))
			return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (int i = 0; i < 3; i++)
			free(b[i]);
		void *r = realloc(b[3], 500);
		free(r);
		void *own = malloc(64);
		*(volatile char *)own = 1;
		free(own);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	for (int i = 0; i < 4; i++)
		free(b[i]);
	return 0;
}
