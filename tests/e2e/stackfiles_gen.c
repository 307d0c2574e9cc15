/*
 * stackfiles_gen.c - writes OUT/trace/ (a metadata file and stacks/) for
 * tests/e2e/stackmap_cli.sh: a stack map of known stacks made of this
 * program's own code addresses, and this program's loaded objects, saved
 * with stack_files_write() as `ringtrace record` saves a trace's stacks.
 *
 *   stackfiles_gen OUT
 *
 * The stacks, in id order (ref = get_id calls):
 *   1  leaf+1, middle, root, main           ref 3
 *   2  leaf+2, middle, root, main           ref 2  (folds with 1: same functions)
 *   3  FAKE+0x123, root, main               ref 1  (an object with no file)
 *   4  0x42, main                           ref 4  (in no object)
 * where middle, root and main are return addresses taken by the callee,
 * so that every frame lies inside the function it names whatever the
 * compiler's layout. FAKE is a made-up object "/nonexistent/fake lib;1.so"
 * (a space and a semicolon the folded output must not pass through) at
 * FAKE_START, load bias FAKE_BIAS. Every call goes through a volatile
 * pointer: no inlining, no specialised clone under another symbol name.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "stackmap/stack_files.h"
#include "stackmap/stackmap.h"
#include "sym/maps.h"

#define FAKE_START UINT64_C(0x10000000)
#define FAKE_BIAS  UINT64_C(0x0ffff000)
#define MAX_MAPS   512

struct chain {
	uint64_t leaf, in_middle, in_root, in_main;
};

void stackfiles_gen_leaf(struct chain *c);
void stackfiles_gen_middle(struct chain *c);
void stackfiles_gen_root(struct chain *c);

static void (*volatile p_leaf)(struct chain *) = stackfiles_gen_leaf;
static void (*volatile p_middle)(struct chain *) = stackfiles_gen_middle;
static void (*volatile p_root)(struct chain *) = stackfiles_gen_root;

void stackfiles_gen_leaf(struct chain *c)
{
	c->leaf = (uint64_t)(uintptr_t)p_leaf;
	c->in_middle = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

void stackfiles_gen_middle(struct chain *c)
{
	p_leaf(c);
	c->in_root = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

void stackfiles_gen_root(struct chain *c)
{
	p_middle(c);
	c->in_main = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static int get(struct stackmap *m, const uint64_t *ips, uint32_t depth, int times)
{
	for (int i = 0; i < times; i++) {
		uint32_t id;
		if (stackmap_get_id(m, ips, depth, 0, &id) < 0)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: stackfiles_gen OUT\n");
		return 2;
	}
	struct chain c = { 0 };
	p_root(&c);

	size_t size = stackmap_size(10, 1);
	void *mem = aligned_alloc(64, (size + 63) & ~(size_t)63);
	struct stackmap m;
	if (!mem) {
		fprintf(stderr, "stackfiles_gen: out of memory\n");
		return 1;
	}
	memset(mem, 0, size);
	if (stackmap_init(mem, size, 10, 1, 0x5eed) < 0 || stackmap_open(mem, size, &m) < 0) {
		fprintf(stderr, "stackfiles_gen: cannot make a stack map\n");
		return 1;
	}
	uint64_t s1[] = { c.leaf + 1, c.in_middle, c.in_root, c.in_main };
	uint64_t s2[] = { c.leaf + 2, c.in_middle, c.in_root, c.in_main };
	uint64_t s3[] = { FAKE_START + 0x123, c.in_root, c.in_main };
	uint64_t s4[] = { 0x42, c.in_main };
	if (get(&m, s1, 4, 3) || get(&m, s2, 4, 2) || get(&m, s3, 3, 1) || get(&m, s4, 2, 4)) {
		fprintf(stderr, "stackfiles_gen: stackmap_get_id failed\n");
		return 1;
	}

	static struct rt_map maps[MAX_MAPS + 1];
	size_t n = 0;
	int r = rt_maps_snapshot(maps, MAX_MAPS, &n, NULL);
	if (r == -ENOSPC)
		n = MAX_MAPS;
	else if (r < 0) {
		fprintf(stderr, "stackfiles_gen: rt_maps_snapshot: %s\n", strerror(-r));
		return 1;
	}
	struct rt_map *fake = &maps[n++];
	memset(fake, 0, sizeof(*fake));
	fake->start = FAKE_START;
	fake->end = FAKE_START + 0x1000;
	fake->bias = FAKE_BIAS;
	snprintf(fake->path, sizeof(fake->path), "/nonexistent/fake lib;1.so");

	char dir[4096], meta[4200];
	snprintf(dir, sizeof(dir), "%s/trace", argv[1]);
	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	FILE *f;
	if ((mkdir(argv[1], 0777) < 0 && errno != EEXIST) || (mkdir(dir, 0777) < 0 && errno != EEXIST) ||
	    !(f = fopen(meta, "w"))) {
		fprintf(stderr, "stackfiles_gen: cannot create '%s': %s\n", dir, strerror(errno));
		return 1;
	}
	fputs("/* CTF 1.8 */\n", f);
	fclose(f);
	r = stack_files_write(dir, &m, maps, n);
	if (r < 0) {
		fprintf(stderr, "stackfiles_gen: stack_files_write '%s': %s\n", dir, strerror(-r));
		return 1;
	}
	/* What the test compares with: the object offset of stack 3's frame. */
	printf("fake_offset 0x%llx\n", (unsigned long long)(FAKE_START + 0x123 - FAKE_BIAS));
	free(mem);
	return 0;
}
