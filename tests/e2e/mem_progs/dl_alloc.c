/*
 * dl_alloc.c - allocations made by a library that is dlopen()ed and
 * dlclose()d before the program ends, for tests/e2e/mem_more.sh.
 *
 *   dl_alloc LIB [HOLD_MS]
 *
 * dlopen()s LIB (tests/e2e/mem_progs/dl_alloc_lib.c), calls its
 * dl_lib_alloc(), which mallocs 10 blocks of 48, 96, ... 480 bytes; frees
 * the 5 blocks of even index here (48 + 144 + 240 + 336 + 432 = 1200
 * bytes) and keeps the 5 others (1440 bytes, alive at exit: leaks);
 * waits HOLD_MS milliseconds (default 0) and dlclose()s LIB, which is
 * then unloaded; then allocates and frees some more (the heap goes on
 * after the library is gone) and exits 0. The report must still name
 * dl_lib_alloc as the site of the 10 blocks: the library's code is no
 * longer mapped, only the trace's record of it (stacks/maps) can.
 *
 * Output: "loaded", "blocks 10", "unloaded" (dlopen with RTLD_NOLOAD
 * fails after the dlclose), "done SUM".
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBLK 10

static void *leaked[NBLK];

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: dl_alloc LIB [HOLD_MS]\n");
		return 2;
	}
	long hold = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dl_alloc: %s\n", dlerror());
		return 1;
	}
	int (*fn)(void **) = (int (*)(void **))dlsym(h, "dl_lib_alloc");
	if (!fn) {
		fprintf(stderr, "dl_alloc: %s\n", dlerror());
		return 1;
	}
	printf("loaded\n");
	void *blk[NBLK];
	int n = fn(blk);
	printf("blocks %d\n", n);
	if (n != NBLK)
		return 1;
	unsigned long sum = 0;
	for (int i = 0; i < NBLK; i++) {
		unsigned char *p = blk[i];
		size_t len = 48 * (size_t)(i + 1);
		if (p[0] != (unsigned char)i || p[len - 1] != (unsigned char)~i)
			return 1;
		sum += len;
		if (i % 2 == 0)
			free(p);
		else
			leaked[i] = p;
	}
	if (hold > 0) {
		struct timespec d = { hold / 1000, (hold % 1000) * 1000000L };
		while (nanosleep(&d, &d) < 0 && errno == EINTR)
			;
	}
	if (dlclose(h) != 0) {
		fprintf(stderr, "dl_alloc: %s\n", dlerror());
		return 1;
	}
	/* Gone: not loaded any more. */
	void *again = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
	printf("%s\n", again ? "still loaded" : "unloaded");
	if (again)
		dlclose(again);
	for (int i = 0; i < 100; i++) {
		char *s = malloc(64);
		if (!s)
			return 1;
		snprintf(s, 64, "after %d", i);
		sum += strlen(s);
		free(s);
	}
	printf("done %lu\n", sum);
	return 0;
}
