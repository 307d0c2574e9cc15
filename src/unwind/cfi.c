/*
 * cfi.c - compact unwind tables from .eh_frame (see cfi.h).
 *
 * Called by fast.c once per loaded object, under the loader's lock (the
 * dl_iterate_phdr callback), so it never calls malloc: the table is an
 * anonymous mapping sized by a first pass that only counts. Tuned for the
 * whole .eh_frame of a big program at once (cc1: about 40k FDEs, a few
 * milliseconds), never on the capture path.
 *
 * The FDEs come from .eh_frame_hdr's search table, already sorted by
 * address, so the rows come out sorted. Each FDE's instructions (after
 * its CIE's initial ones) are run as the DWARF machine does, tracking
 * only what the fast walk needs: the CFA rule, and the rules of rbp (6)
 * and of the return address column. Every other register is ignored, as
 * libunwind's fast trace ignores them. A row is emitted where the location
 * advances; equal neighbours are merged; the end of an FDE that no other
 * FDE follows at once gets a CFI_NONE row. Every read is checked against
 * the segment bounds the caller gives: a corrupt .eh_frame yields CFI_BAD
 * rows or no table, never a fault.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "unwind/cfi.h"

#define REG_RBP 6
#define REG_RSP 7
#define STATE_STACK 8                /* DW_CFA_remember_state depth kept */

/* A rule of one register. */
enum { R_SAME, R_OFFSET, R_UNDEF, R_OTHER };

struct rule {
	uint8_t how;
	int64_t off;                 /* R_OFFSET: saved at CFA + off */
};

struct state {
	int cfa_reg;                 /* -1: an expression */
	int64_t cfa_off;
	struct rule rbp, ra, rsp;
};

struct rd {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t rd_u8(struct rd *r)
{
	if (r->p + 1 > r->end) {
		r->bad = 1;
		return 0;
	}
	return *r->p++;
}

static uint64_t rd_fixed(struct rd *r, size_t n)
{
	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		r->p = r->end;
		return 0;
	}
	uint64_t v = 0;
	memcpy(&v, r->p, n);         /* little-endian host */
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		uint64_t b = rd_u8(r);
		v |= (b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = 1;
	return v;
}

static int64_t rd_sleb(struct rd *r)
{
	uint64_t v = 0;
	int shift = 0;
	uint64_t b;
	do {
		b = rd_u8(r);
		if (shift < 64)
			v |= (b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !r->bad && shift < 70);
	if (shift < 64 && (b & 0x40))
		v |= ~UINT64_C(0) << shift;
	return (int64_t)v;
}

/* A DW_EH_PE_* encoded pointer; pcrel from where it is stored. Indirect
 * and datarel/textrel/funcrel are refused (the FDE fields never use them
 * in objects we read). */
static uint64_t rd_ptr(struct rd *r, uint8_t enc)
{
	if (enc == 0xff)             /* DW_EH_PE_omit */
		return 0;
	uintptr_t at = (uintptr_t)r->p;
	uint64_t v;
	switch (enc & 0x0f) {
	case 0x00: v = rd_fixed(r, 8); break;
	case 0x01: v = rd_uleb(r); break;
	case 0x02: v = rd_fixed(r, 2); break;
	case 0x03: v = rd_fixed(r, 4); break;
	case 0x04: v = rd_fixed(r, 8); break;
	case 0x09: v = (uint64_t)rd_sleb(r); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4); break;
	case 0x0c: v = rd_fixed(r, 8); break;
	default: r->bad = 1; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += at; break;
	default: r->bad = 1; break;
	}
	if (enc & 0x80)
		r->bad = 1;
	return v;
}

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	int has_z, signal;
	const uint8_t *insns, *insns_end;
};

/* The CIE at p (its length field). 0 or -1. */
static int parse_cie(const uint8_t *p, uintptr_t seg_lo, uintptr_t seg_hi, struct cie *c)
{
	struct rd r = { p, (const uint8_t *)seg_hi, 0 };
	if ((uintptr_t)p < seg_lo)
		return -1;
	uint64_t len = rd_fixed(&r, 4);
	if (len == 0xffffffff || len == 0)
		return -1;
	if (len > (uint64_t)(r.end - r.p))
		return -1;
	const uint8_t *end = r.p + len;
	r.end = end;
	if (rd_fixed(&r, 4) != 0)    /* CIE id */
		return -1;
	uint64_t version = rd_u8(&r);
	if (version != 1 && version != 3)
		return -1;
	const char *aug = (const char *)r.p;
	while (r.p < end && *r.p)
		r.p++;
	if (r.p >= end)
		return -1;
	r.p++;
	memset(c, 0, sizeof(*c));
	c->fde_enc = 0;              /* absptr */
	if (aug[0] == 'e' && aug[1] == 'h')
		return -1;           /* pre-3.0 GCC: not met in any current object */
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_u8(&r) : rd_uleb(&r);
	const uint8_t *aug_end = NULL;
	if (aug[0] == 'z') {
		c->has_z = 1;
		uint64_t alen = rd_uleb(&r);
		if (alen > (uint64_t)(end - r.p))
			return -1;
		aug_end = r.p + alen;
		for (const char *a = aug + 1; *a && !r.bad; a++) {
			switch (*a) {
			case 'R': c->fde_enc = (uint8_t)rd_u8(&r); break;
			case 'L': rd_u8(&r); break;
			case 'P': {
				uint8_t enc = (uint8_t)rd_u8(&r);
				/* Only its size matters: read it without the
				 * indirection. */
				(void)rd_ptr(&r, enc & 0x7f);
				break;
			}
			case 'S': c->signal = 1; break;
			case 'B': break;
			default: r.p = aug_end; a = "x"; break; /* unknown: skip the rest */
			}
		}
		r.p = aug_end;
	} else if (aug[0]) {
		return -1;
	}
	if (r.bad || c->code_align == 0)
		return -1;
	c->insns = r.p;
	c->insns_end = end;
	return 0;
}

/* The row info of a state. */
static uint32_t state_info(const struct state *s, int signal)
{
	if (s->ra.how == R_UNDEF)
		return CFI_END;
	if (signal || s->cfa_reg < 0 || (s->cfa_reg != REG_RSP && s->cfa_reg != REG_RBP))
		return CFI_BAD;
	if (s->ra.how != R_OFFSET || s->ra.off != -8)
		return CFI_BAD;
	if (s->rsp.how != R_SAME)
		return CFI_BAD;
	if (s->cfa_off < 8 || s->cfa_off > CFI_CFA_OFF_MAX)
		return CFI_BAD;
	uint32_t info = CFI_STD | (uint32_t)s->cfa_off << 12;
	if (s->cfa_reg == REG_RBP)
		info |= 1u << 2;
	if (s->rbp.how == R_OFFSET) {
		if ((s->rbp.off & 7) || s->rbp.off < -128 * 8 || s->rbp.off > 127 * 8)
			return CFI_BAD;
		info |= 1u << 3 | (uint32_t)(uint8_t)(int8_t)(s->rbp.off / 8) << 4;
	} else if (s->rbp.how != R_SAME && s->rbp.how != R_UNDEF) {
		return CFI_BAD;
	}
	return info;
}

struct out {
	struct cfi_table *t;         /* NULL: count only */
	uintptr_t lo, hi;
	uint32_t n;
	uint32_t cap;                /* rows the table has room for */
	int overflow;
	uint32_t bad;
	uint32_t last_info;
	uintptr_t last_end;          /* end of the previous FDE */
};

static void emit(struct out *o, uintptr_t pc, uint32_t info)
{
	if (pc < o->lo || pc >= o->hi)
		return;
	if (o->n > 0 && o->last_info == info)
		return;
	if (o->t) {
		/* Rows must rise: a second FDE for the same range (an object
		 * with overlapping FDEs) overwrites the earlier row. */
		uint32_t off = (uint32_t)(pc - o->lo);
		if (o->n > 0 && o->t->rows[o->n - 1].off >= off) {
			if (o->t->rows[o->n - 1].off > off)
				return;
			o->t->rows[o->n - 1].info = info;
			o->last_info = info;
			return;
		}
		if (o->n >= o->cap) {
			o->overflow = 1;
			return;
		}
		o->t->rows[o->n].off = off;
		o->t->rows[o->n].info = info;
	}
	if (CFI_KIND(info) == CFI_BAD)
		o->bad++;
	o->last_info = info;
	o->n++;
}

static void set_rule(struct state *s, uint64_t reg, uint64_t ra_reg, uint8_t how, int64_t off)
{
	struct rule *r = reg == REG_RBP ? &s->rbp : reg == ra_reg ? &s->ra : reg == REG_RSP ? &s->rsp : NULL;
	if (r) {
		r->how = how;
		r->off = off;
	}
}

/*
 * Run instructions [p, end) from state *s at pc; with emit_rows, emit the
 * row of each range the locations delimit (the CIE's initial instructions
 * run without). Returns
 * the pc reached; *ok is cleared on an instruction we cannot follow (the
 * rest of the FDE is then CFI_BAD).
 */
static uintptr_t run(struct out *o, const struct cie *c, const struct state *init, struct state *s,
		     const uint8_t *p, const uint8_t *end, uintptr_t pc, uintptr_t pc_end, int emit_rows,
		     int *ok)
{
	struct rd r = { p, end, 0 };
	struct state stack[STATE_STACK];
	int depth = 0;
	while (r.p < r.end && !r.bad) {
		uint8_t op = (uint8_t)rd_u8(&r);
		uint64_t reg, adv = 0;
		int64_t off;
		switch (op >> 6) {
		case 1:
			adv = (op & 0x3f) * c->code_align;
			goto advance;
		case 2:
			off = (int64_t)rd_uleb(&r) * c->data_align;
			set_rule(s, op & 0x3f, c->ra_reg, R_OFFSET, off);
			continue;
		case 3:
			reg = op & 0x3f;
			goto restore;
		default:
			break;
		}
		switch (op) {
		case 0x00:                   /* nop */
			continue;
		case 0x01:                   /* set_loc */
		{
			uintptr_t to = (uintptr_t)rd_ptr(&r, c->fde_enc);
			if (to < pc) {
				*ok = 0;
				return pc;
			}
			adv = to - pc;
			goto advance;
		}
		case 0x02: adv = rd_fixed(&r, 1) * c->code_align; goto advance;
		case 0x03: adv = rd_fixed(&r, 2) * c->code_align; goto advance;
		case 0x04: adv = rd_fixed(&r, 4) * c->code_align; goto advance;
		case 0x05:                   /* offset_extended */
			reg = rd_uleb(&r);
			off = (int64_t)rd_uleb(&r) * c->data_align;
			set_rule(s, reg, c->ra_reg, R_OFFSET, off);
			continue;
		case 0x06:                   /* restore_extended */
			reg = rd_uleb(&r);
			goto restore;
		case 0x07:                   /* undefined */
			set_rule(s, rd_uleb(&r), c->ra_reg, R_UNDEF, 0);
			continue;
		case 0x08:                   /* same_value */
			set_rule(s, rd_uleb(&r), c->ra_reg, R_SAME, 0);
			continue;
		case 0x09:                   /* register */
			reg = rd_uleb(&r);
			(void)rd_uleb(&r);
			set_rule(s, reg, c->ra_reg, R_OTHER, 0);
			continue;
		case 0x0a:                   /* remember_state */
			if (depth >= STATE_STACK) {
				*ok = 0;
				return pc;
			}
			stack[depth++] = *s;
			continue;
		case 0x0b:                   /* restore_state */
			if (depth == 0) {
				*ok = 0;
				return pc;
			}
			{
				/* The CFA is not part of the saved rules in
				 * DWARF 3+, but GCC and every unwinder restore
				 * it too; libunwind does. */
				*s = stack[--depth];
			}
			continue;
		case 0x0c:                   /* def_cfa */
			s->cfa_reg = (int)rd_uleb(&r);
			s->cfa_off = (int64_t)rd_uleb(&r);
			continue;
		case 0x0d:                   /* def_cfa_register */
			s->cfa_reg = (int)rd_uleb(&r);
			continue;
		case 0x0e:                   /* def_cfa_offset */
			s->cfa_off = (int64_t)rd_uleb(&r);
			continue;
		case 0x0f:                   /* def_cfa_expression */
		{
			uint64_t len = rd_uleb(&r);
			if (len > (uint64_t)(r.end - r.p)) {
				*ok = 0;
				return pc;
			}
			r.p += len;
			s->cfa_reg = -1;
			continue;
		}
		case 0x10:                   /* expression */
		case 0x16:                   /* val_expression */
		{
			reg = rd_uleb(&r);
			uint64_t len = rd_uleb(&r);
			if (len > (uint64_t)(r.end - r.p)) {
				*ok = 0;
				return pc;
			}
			r.p += len;
			set_rule(s, reg, c->ra_reg, R_OTHER, 0);
			continue;
		}
		case 0x11:                   /* offset_extended_sf */
			reg = rd_uleb(&r);
			off = rd_sleb(&r) * c->data_align;
			set_rule(s, reg, c->ra_reg, R_OFFSET, off);
			continue;
		case 0x12:                   /* def_cfa_sf */
			s->cfa_reg = (int)rd_uleb(&r);
			s->cfa_off = rd_sleb(&r) * c->data_align;
			continue;
		case 0x13:                   /* def_cfa_offset_sf */
			s->cfa_off = rd_sleb(&r) * c->data_align;
			continue;
		case 0x14:                   /* val_offset */
			reg = rd_uleb(&r);
			(void)rd_uleb(&r);
			set_rule(s, reg, c->ra_reg, R_OTHER, 0);
			continue;
		case 0x15:                   /* val_offset_sf */
			reg = rd_uleb(&r);
			(void)rd_sleb(&r);
			set_rule(s, reg, c->ra_reg, R_OTHER, 0);
			continue;
		case 0x2e:                   /* GNU_args_size */
			(void)rd_uleb(&r);
			continue;
		case 0x2f:                   /* GNU_negative_offset_extended */
			reg = rd_uleb(&r);
			off = -(int64_t)rd_uleb(&r) * c->data_align;
			set_rule(s, reg, c->ra_reg, R_OFFSET, off);
			continue;
		default:
			*ok = 0;
			return pc;
		}
	restore:
		if (!init) {
			*ok = 0;             /* DW_CFA_restore in a CIE */
			return pc;
		}
		if (reg == REG_RBP)
			s->rbp = init->rbp;
		else if (reg == c->ra_reg)
			s->ra = init->ra;
		else if (reg == REG_RSP)
			s->rsp = init->rsp;
		continue;
	advance:
		if (emit_rows && adv > 0) {
			/* The rules so far hold from pc to the new location. */
			emit(o, pc, state_info(s, c->signal));
			if (adv >= pc_end - pc)
				return pc_end;
		}
		pc += adv;
	}
	if (r.bad) {
		*ok = 0;
		return pc;
	}
	if (emit_rows && pc < pc_end)
		emit(o, pc, state_info(s, c->signal));
	return pc;
}

/* One FDE at p: emit its rows. Bad FDEs emit CFI_BAD over their range
 * when it can be read, nothing otherwise. */
static void do_fde(struct out *o, const uint8_t *p, uintptr_t seg_lo, uintptr_t seg_hi)
{
	struct rd r = { p, (const uint8_t *)seg_hi, 0 };
	if ((uintptr_t)p < seg_lo)
		return;
	uint64_t len = rd_fixed(&r, 4);
	if (len == 0 || len == 0xffffffff || len > (uint64_t)(r.end - r.p))
		return;
	const uint8_t *end = r.p + len;
	r.end = end;
	const uint8_t *id_at = r.p;
	uint64_t cie_off = rd_fixed(&r, 4);
	if (cie_off == 0 || cie_off > (uintptr_t)id_at - seg_lo)
		return;
	struct cie c;
	if (parse_cie(id_at - cie_off, seg_lo, seg_hi, &c) < 0)
		return;
	uintptr_t pc = (uintptr_t)rd_ptr(&r, c.fde_enc);
	uintptr_t range = (uintptr_t)rd_ptr(&r, c.fde_enc & 0x0f);
	if (c.has_z) {
		uint64_t alen = rd_uleb(&r);
		if (alen > (uint64_t)(end - r.p))
			return;
		r.p += alen;
	}
	if (r.bad || range == 0 || pc + range < pc)
		return;
	uintptr_t pc_end = pc + range;
	if (o->n > 0 && o->last_end != pc && o->last_end < pc)
		emit(o, o->last_end, CFI_NONE);
	struct state init = { .cfa_reg = REG_RSP, .cfa_off = 8 };
	init.ra.how = R_SAME;        /* until the CIE says where it is */
	int ok = 1;
	run(o, &c, NULL, &init, c.insns, c.insns_end, 0, 0, 0, &ok);
	if (!ok) {
		emit(o, pc, CFI_BAD);
	} else {
		struct state s = init;
		uintptr_t at = run(o, &c, &init, &s, r.p, end, pc, pc_end, 1, &ok);
		if (!ok && at < pc_end) {
			/* The rest of this FDE, from where the run stopped
			 * (its rows so far are right). */
			o->last_info = ~0u;
			emit(o, at, CFI_BAD);
		}
	}
	if (pc_end > o->last_end)
		o->last_end = pc_end;
}

static void do_all(struct out *o, const uint8_t *table, uint64_t count, const uint8_t *hdr,
		   uintptr_t seg_lo, uintptr_t seg_hi)
{
	for (uint64_t i = 0; i < count; i++) {
		int32_t fde_rel;
		memcpy(&fde_rel, table + i * 8 + 4, 4);
		do_fde(o, hdr + fde_rel, seg_lo, seg_hi);
	}
	if (o->n > 0 && o->last_end < o->hi)
		emit(o, o->last_end, CFI_NONE);
}

int cfi_table_build(const uint8_t *hdr, size_t hdr_len, uintptr_t seg_lo, uintptr_t seg_hi,
		    uintptr_t lo, uintptr_t hi, struct cfi_table **ret)
{
	/* version 1, eh_frame_ptr any, count udata4/sdata4 absolute, table
	 * datarel|sdata4: what every linker writes. */
	if (hdr_len < 12 || hdr[0] != 1 || (hdr[2] & 0x0f) != 0x03 || (hdr[2] & 0x70) != 0 ||
	    hdr[3] != 0x3b)
		return -EINVAL;
	if ((uintptr_t)hdr < seg_lo || (uintptr_t)hdr + hdr_len > seg_hi)
		return -EINVAL;
	if (hi - lo > UINT32_MAX)
		return -E2BIG;
	struct rd r = { hdr + 4, hdr + hdr_len, 0 };
	(void)rd_ptr(&r, hdr[1]);
	uint32_t count = (uint32_t)rd_fixed(&r, 4);
	if (r.bad || count > (uint64_t)(r.end - r.p) / 8)
		return -EINVAL;
	const uint8_t *table = r.p;

	struct out o = { .lo = lo, .hi = hi };
	do_all(&o, table, count, hdr, seg_lo, seg_hi);
	uint32_t nblocks = (uint32_t)((hi - lo + (1u << CFI_BLOCK_SHIFT) - 1) >> CFI_BLOCK_SHIFT);
	size_t rows_bytes = sizeof(struct cfi_table) + (size_t)(o.n ? o.n : 1) * sizeof(struct cfi_row);
	size_t bytes = rows_bytes + ((size_t)nblocks + 2) * sizeof(uint32_t);
	bytes = (bytes + 4095) & ~(size_t)4095;
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	struct cfi_table *t = m;
	uint32_t counted = o.n;
	memset(&o, 0, sizeof(o));
	o.t = t;
	o.lo = lo;
	o.hi = hi;
	o.cap = counted;
	do_all(&o, table, count, hdr, seg_lo, seg_hi);
	/* The second pass can only merge more (an overlapping FDE overwrites
	 * a row instead of adding one), never emit more. */
	if (o.overflow) {
		munmap(m, bytes);
		return -EINVAL;
	}
	t->lo = lo;
	t->hi = hi;
	t->map_size = bytes;
	t->n = o.n;
	t->bad_rows = o.bad;
	/* The block index: block[b] is the last row at or before block b's
	 * start (row 0 when none is: the lookup then finds no row). */
	uint32_t *block = (uint32_t *)((char *)m + rows_bytes);
	uint32_t row = 0;
	for (uint32_t b = 0; b <= nblocks; b++) {
		uint64_t start = (uint64_t)b << CFI_BLOCK_SHIFT;
		while (row + 1 < t->n && t->rows[row + 1].off <= start)
			row++;
		block[b] = row;
	}
	t->block = block;
	t->nblocks = nblocks;
	/* Read-only from now on: a stray write elsewhere cannot bend it. */
	mprotect(m, bytes, PROT_READ);
	*ret = t;
	return 0;
}

void cfi_table_free(struct cfi_table *t)
{
	if (t)
		munmap(t, t->map_size);
}
