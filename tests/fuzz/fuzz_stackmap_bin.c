/*
 * fuzz_stackmap_bin.c - libFuzzer target for what the stack map reads from
 * outside: the FSMB v2 binary export (a file from anywhere, of either byte
 * order) and a map's memory (a shared-memory region another process can
 * scribble over).
 *
 * Byte 0 of the input picks what the rest is:
 *   0: a binary export: stackmap_read_bin / stackmap_load_bin, then the
 *      stacks printed as text and JSON, sorted, and written back (the
 *      rewrite must read back to the same stacks);
 *   1: a whole map block: stackmap_open on the raw bytes;
 *   2: a map header laid over a valid map: stackmap_open, and if it
 *      validates, every operation on the map;
 *   3: a valid header, the bytes laid over the CPU counters and the table
 *      (first half) and the pool (second half): every operation on the
 *      map, which must stay within it whatever its contents.
 *
 *   make CC=clang build-fuzz/fuzz_stackmap_bin
 *   build-fuzz/fuzz_stackmap_bin -max_total_time=60 /tmp/fz-stackmap
 *   (seeds: "\x00" + a file written by stackmap_write_bin)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stackmap/stackmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BITS 10
#define NCPU 2

static FILE *devnull;
static unsigned char *block;     /* a valid map's block, 64-byte aligned */
static size_t block_size;

static int sym(void *arg, uint64_t addr, char *buf, size_t len)
{
	(void)arg;
	if (addr & 1)
		return 0;
	snprintf(buf, len, "f\"%llx\\+0x1/0x2", (unsigned long long)(addr & 0xfff));
	return 1;
}

static int check_same(void *arg, const struct stackmap_stack *s)
{
	struct stackmap_stack **next = arg;
	const struct stackmap_stack *want = (*next)++;
	if (s->id != want->id || s->depth != want->depth ||
	    (s->ref != want->ref && !(want->ref > UINT32_MAX && s->ref == UINT32_MAX)) ||
	    memcmp(s->ips, want->ips, s->depth * sizeof(s->ips[0])))
		abort();
	return 0;
}

static void fuzz_bin(const uint8_t *data, size_t size)
{
	struct stackmap_stack *s;
	size_t n;
	struct stackmap_bin_info info;
	int r = stackmap_load_bin(data, size, &s, &n, &info);
	if (r < 0) {
		/* The walker must agree with the loader. */
		if (stackmap_read_bin(data, size, NULL, NULL, NULL) != r && r != -ENOMEM)
			abort();
		return;
	}
	if (n != info.nstacks)
		abort();
	stackmap_print_text(devnull, s, n, sym, NULL);
	stackmap_print_json(devnull, s, n, sym, NULL);

	/* Written back in this machine's order, it reads back the same. */
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		abort();
	if (stackmap_print_bin(f, s, n) < 0)
		abort();
	fclose(f);
	struct stackmap_stack *next = s;
	struct stackmap_bin_info again;
	if (stackmap_read_bin(out, len, check_same, &next, &again) != 0 || again.swapped ||
	    again.nstacks != n || (!info.swapped && len != size))
		abort();
	free(out);

	stackmap_sort_by_ref(s, n);
	for (size_t i = 1; i < n; i++)
		if (s[i - 1].ref < s[i].ref)
			abort();
	free(s);
}

static int count_one(void *arg, const struct stackmap_stack *s)
{
	if (s->depth > STACKMAP_MAX_DEPTH || s->id == 0)
		abort();
	(*(size_t *)arg)++;
	return 0;
}

/* Everything a process may do with a validated map. */
static void exercise(struct stackmap *m)
{
	struct stackmap_stat st;
	if (stackmap_stat(m, &st) < 0 || st.entries > st.max_entries || st.success_rate > 100)
		abort();
	size_t n = 0;
	stackmap_for_each(m, count_one, &n);
	if (n > m->max)
		abort();
	struct stackmap_stack s;
	for (uint32_t id = 0; id < 4; id++)
		stackmap_lookup(m, id, &s);
	uint64_t ips[STACKMAP_MAX_DEPTH];
	for (uint32_t i = 0; i < STACKMAP_MAX_DEPTH; i++)
		ips[i] = 0x400000 + i * 8;
	for (uint32_t d = 0; d <= STACKMAP_MAX_DEPTH; d += 16) {
		uint32_t id = 0;
		int r = stackmap_get_id(m, ips, d, d, &id);
		if (r >= 0 && (id == 0 || id > m->max))
			abort();
	}
	stackmap_write_text(m, devnull, sym, NULL);
	stackmap_write_stat(m, devnull);
	stackmap_write_bin(m, devnull);
	/* Timeout 0: a damaged in-flight count must not make it wait. */
	stackmap_reset_timeout(m, 0, 0);
	stackmap_for_each(m, count_one, &n);
}

static void fresh_block(void)
{
	memset(block, 0, block_size);
	if (stackmap_init(block, block_size, BITS, NCPU, 0x1234) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		block_size = stackmap_size(BITS, NCPU);
		block = aligned_alloc(64, (block_size + 63) & ~(size_t)63);
		if (!devnull || !block)
			abort();
	}
	if (size < 1)
		return 0;
	int mode = data[0] & 3;
	data++;
	size--;
	struct stackmap m;

	switch (mode) {
	case 0:
		fuzz_bin(data, size);
		break;
	case 1: {
		unsigned char *copy = aligned_alloc(64, (size + 64) & ~(size_t)63);
		if (!copy)
			abort();
		memcpy(copy, data, size);
		if (stackmap_open(copy, size, &m) == 0)
			exercise(&m); /* only with -max_len beyond a map's size */
		free(copy);
		break;
	}
	case 2: {
		fresh_block();
		size_t n = size < sizeof(struct stackmap_header) ? size : sizeof(struct stackmap_header);
		memcpy(block, data, n);
		if (stackmap_open(block, block_size, &m) == 0)
			exercise(&m);
		break;
	}
	case 3: {
		fresh_block();
		if (stackmap_open(block, block_size, &m) < 0)
			abort();
		const struct stackmap_header *h = (const void *)block;
		size_t half = size / 2;
		size_t a = half < h->pool_off - h->cpu_off ? half : h->pool_off - h->cpu_off;
		size_t b = size - half < block_size - h->pool_off ? size - half : block_size - h->pool_off;
		memcpy(block + h->cpu_off, data, a);
		memcpy(block + h->pool_off, data + half, b);
		exercise(&m);
		break;
	}
	}
	return 0;
}
