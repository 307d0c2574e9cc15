/*
 * cfi.h - the compact unwind table of one loaded object: DWARF call frame
 * information (.eh_frame, found through .eh_frame_hdr) turned into one
 * 8-byte row per code range, each saying how to step out of a frame in
 * three loads: the CFA is rsp+N or rbp+N, the return address is at CFA-8,
 * rbp is unchanged or saved at CFA+M. A range whose rules say more than
 * that (expressions, a CFA in another register, a return address stored
 * elsewhere, signal frames) is marked CFI_BAD: the fast walk hands such a
 * stack to libunwind. A range where the return address is undefined is
 * CFI_END (the outermost frame, _start or a thread's clone).
 *
 * Who calls it: src/unwind/fast.c, outside the capture path (when the
 * loaded objects are listed), inside the dl_iterate_phdr callback, so the
 * object cannot be unmapped while its .eh_frame is read. It allocates
 * with mmap only (no malloc under the loader's lock) and reads nothing
 * outside the object's segment that holds .eh_frame_hdr.
 */
#ifndef RINGTRACE_UNWIND_CFI_H
#define RINGTRACE_UNWIND_CFI_H

#include <stddef.h>
#include <stdint.h>

#define CFI_STD  0u                  /* cfa = (rsp|rbp) + off, ra at cfa-8 */
#define CFI_END  1u                  /* return address undefined: last frame */
#define CFI_BAD  2u                  /* rules the fast walk does not follow */
#define CFI_NONE 3u                  /* no FDE covers this address */

/*
 * info: bits 0-1 kind, bit 2 CFA from rbp (else rsp), bit 3 rbp saved,
 * bits 4-11 rbp's slot from the CFA in 8-byte words (signed), bits 12-31
 * the CFA offset in bytes (unsigned, < 1 MiB).
 */
#define CFI_KIND(i)      ((i) & 3u)
#define CFI_CFA_RBP(i)   ((i) >> 2 & 1u)
#define CFI_RBP_SAVED(i) ((i) >> 3 & 1u)
#define CFI_RBP_OFF(i)   ((intptr_t)(int8_t)(uint8_t)((i) >> 4) * 8)
#define CFI_CFA_OFF(i)   ((uintptr_t)((i) >> 12))
#define CFI_CFA_OFF_MAX  ((1u << 20) - 1)

struct cfi_row {
	uint32_t off;                /* first byte of the range, from cfi_table.lo */
	uint32_t info;
};

/* One object's table, in its own anonymous mapping (rows follow). Immutable
 * once built. */
/* Code bytes per entry of the block index. */
#define CFI_BLOCK_SHIFT 8

struct cfi_table {
	uintptr_t lo, hi;            /* executable range covered */
	size_t map_size;             /* bytes of the mapping, for munmap */
	uint32_t n;                  /* rows */
	uint32_t bad_rows;           /* rows of kind CFI_BAD (statistics) */
	/* block[b]: the last row starting at or before lo + (b << SHIFT),
	 * for b in [0, nblocks]: a lookup searches only the rows between two
	 * neighbours (a few, in one or two cache lines) instead of the whole
	 * table (cc1: 613 k rows, 20 dependent loads, most missing the
	 * caches). After the rows, in the same mapping. */
	const uint32_t *block;
	uint32_t nblocks;
	struct cfi_row rows[];
};

/*
 * Build the table of the object whose .eh_frame_hdr is at hdr (hdr_len
 * bytes) and whose executable code spans [lo, hi). seg_lo/seg_hi bound
 * every read of .eh_frame (the loaded segment that holds it). Returns 0
 * and *ret (munmap with cfi_table_free), or -EINVAL (a header or table we
 * do not read), -ENOMEM, -E2BIG (code range over 4 GiB).
 */
int cfi_table_build(const uint8_t *hdr, size_t hdr_len, uintptr_t seg_lo, uintptr_t seg_hi,
		    uintptr_t lo, uintptr_t hi, struct cfi_table **ret);
void cfi_table_free(struct cfi_table *t);

/* The info of the row that covers addr, CFI_NONE outside the table.
 * Async-signal-safe (reads the table only). */
static inline uint32_t cfi_table_find(const struct cfi_table *t, uintptr_t addr)
{
	if (addr < t->lo || addr >= t->hi || t->n == 0)
		return CFI_NONE;
	uint32_t off = (uint32_t)(addr - t->lo);
	uint32_t b = off >> CFI_BLOCK_SHIFT;
	uint32_t lo = t->block[b], n = t->block[b + 1] - lo + 1;
	/* The last row with rows[i].off <= off, in [lo, lo + n). */
	while (n > 1) {
		uint32_t half = n / 2;
		if (t->rows[lo + half].off <= off)
			lo += half;
		n -= half;
	}
	return t->rows[lo].off <= off ? t->rows[lo].info : CFI_NONE;
}

#endif
