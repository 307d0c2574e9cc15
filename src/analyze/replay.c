/*
 * replay.c - the replay of allocation events (replay.h): the meaning of
 * each mem:* event class, the blocks by address, and replay_apply(), whose
 * callbacks feed the report, its HTML page, the SQLite database, the
 * Chrome heap counters and the folded stacks by bytes.
 *
 * Called once per event of the trace, in time order, by the command's
 * readers (one thread). The blocks are a dense array indexed through a
 * u64map from address to slot: a lookup is one probe sequence of the map,
 * and a slot moves only when the array grows (callbacks get a pointer
 * valid during the call).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/replay.h"
#include "read/decode.h"
#include "read/format.h"
#include "read/reader.h"
#include "read/tsdl.h"

const char *const replay_err_name[RP_E_COUNT] = {
	"free of an unknown pointer", "double free", "mismatched free", "realloc of a freed block",
	"realloc of an unknown pointer",
};

const char *replay_end_name(unsigned end)
{
	switch (end) {
	case RP_END_REALLOC: return "realloc";
	case RP_END_MREMAP: return "mremap";
	case RP_END_REUSED: return "reused";
	default: return mem_free_name(end);
	}
}

/* ---- event classes -------------------------------------------------------- */

static const struct {
	const char *name;
	int kind;
} class_names[] = {
	{ "mem:alloc", RP_ALLOC },     { "mem:alloc_large", RP_ALLOC },     { "mem:free", RP_FREE },
	{ "mem:realloc", RP_REALLOC }, { "mem:realloc_large", RP_REALLOC }, { "mem:mmap", RP_MMAP },
	{ "mem:munmap", RP_MUNMAP },   { "mem:mremap", RP_MREMAP },
};

static int member_index(const struct rd_type *ft, const char *name)
{
	for (uint32_t i = 0; ft && i < ft->n_members; i++)
		if (ft->members[i].name && !strcmp(rd_display_name(ft->members[i].name), name))
			return (int)i;
	return -1;
}

void replay_class_init(struct replay_class *c, const char *name, const struct rd_type *fields)
{
	const struct rd_type *ft = fields && fields->kind == RD_STRUCT ? fields : NULL;
	c->kind = RP_NONE;
	for (size_t i = 0; name && i < sizeof(class_names) / sizeof(class_names[0]); i++)
		if (!strcmp(name, class_names[i].name))
			c->kind = class_names[i].kind;
	c->ptr = member_index(ft, "ptr");
	c->old_ptr = member_index(ft, "old_ptr");
	c->site = member_index(ft, "site");
	c->size = member_index(ft, "size");
	c->usable = member_index(ft, "usable");
	c->family = member_index(ft, "family");
	c->stack_id = member_index(ft, "stack_id");
	/* A class of that name without the fields its kind needs is not
	 * ours: every kind has ptr and site, all but free a size, the two
	 * that move a block its old_ptr, the two of malloc-like blocks a
	 * family. */
	int k = c->kind;
	if (k != RP_NONE &&
	    (c->ptr < 0 || c->site < 0 || (k != RP_FREE && c->size < 0) ||
	     ((k == RP_REALLOC || k == RP_MREMAP) && c->old_ptr < 0) ||
	     ((k == RP_ALLOC || k == RP_REALLOC) && c->family < 0)))
		c->kind = RP_NONE;
}

/* ---- blocks ---------------------------------------------------------------- */

int replay_init(struct replay *rp, const struct rd_meta *meta, unsigned flags, const struct replay_ops *ops,
		void *arg)
{
	static const struct replay_ops none;
	memset(rp, 0, sizeof(*rp));
	rp->ops = ops ? ops : &none;
	rp->arg = arg;
	rp->flags = flags;
	rp->meta = meta;
	if (meta && meta->n_events) {
		rp->cls = calloc(meta->n_events, sizeof(*rp->cls));
		rp->cls_ready = calloc(meta->n_events, 1);
		if (!rp->cls || !rp->cls_ready) {
			replay_free(rp);
			return -ENOMEM;
		}
	}
	return 0;
}

void replay_free(struct replay *rp)
{
	if (!rp)
		return;
	free(rp->cls);
	free(rp->cls_ready);
	free(rp->blk);
	u64map_free(&rp->idx);
	rp->cls = NULL;
	rp->cls_ready = NULL;
	rp->blk = NULL;
	rp->nblk = rp->capblk = 0;
	rp->free_head = 0;
}

static struct replay_block *blk_get(const struct replay *rp, uint64_t ptr)
{
	const uint64_t *i = u64map_get(&rp->idx, ptr);
	return i ? &rp->blk[*i] : NULL;
}

const struct replay_block *replay_find(const struct replay *rp, uint64_t ptr)
{
	return blk_get(rp, ptr);
}

/* The slot of a new address (entered in the map, contents zero), or NULL
 * when out of memory (rp->oom set). */
static struct replay_block *blk_new(struct replay *rp, uint64_t ptr)
{
	size_t slot;
	if (rp->free_head) {
		slot = rp->free_head - 1;
		rp->free_head = (size_t)rp->blk[slot].user;
	} else {
		if (rp->nblk == rp->capblk) {
			size_t cap = rp->capblk ? rp->capblk * 2 : 1024;
			struct replay_block *v = realloc(rp->blk, cap * sizeof(*v));
			if (!v) {
				rp->oom = 1;
				return NULL;
			}
			rp->blk = v;
			rp->capblk = cap;
		}
		slot = rp->nblk++;
	}
	uint64_t *i = u64map_put(&rp->idx, ptr, NULL);
	if (!i) {
		/* Back on the list of reusable slots. */
		rp->blk[slot].user = rp->free_head;
		rp->free_head = slot + 1;
		rp->oom = 1;
		return NULL;
	}
	*i = slot;
	memset(&rp->blk[slot], 0, sizeof(rp->blk[slot]));
	rp->blk[slot].ptr = ptr;
	return &rp->blk[slot];
}

/* Forget an ended block (ended blocks not kept). */
static void blk_drop(struct replay *rp, struct replay_block *b)
{
	size_t slot = (size_t)(b - rp->blk);
	u64map_del(&rp->idx, b->ptr);
	b->user = rp->free_head;
	rp->free_head = slot + 1;
}

/* ---- the replay ------------------------------------------------------------ */

static int error(struct replay *rp, const struct replay_event *ev, int kind, uint64_t ptr, unsigned call,
		 const struct replay_block *b)
{
	struct replay_error e = { kind, ptr, call, b };
	return rp->ops->error ? rp->ops->error(rp->arg, ev, &e) : 0;
}

/* Block b (alive) ends by `end` at `site`. */
static int end_block(struct replay *rp, const struct replay_event *ev, struct replay_block *b, unsigned end,
		     uint64_t site)
{
	rp->live_n--;
	rp->live_req -= b->size;
	rp->live_usable -= b->usable;
	if (mem_alloc_class(b->fam) == MEM_C_PAGES)
		rp->live_pages -= b->size;
	b->live = 0;
	b->end = (uint8_t)end;
	b->end_site = site;
	int k = rp->ops->end ? rp->ops->end(rp->arg, ev, b) : 0;
	if (!(rp->flags & REPLAY_KEEP_FREED) && end != RP_END_REUSED)
		blk_drop(rp, b);
	return k;
}

static int alloc_block(struct replay *rp, const struct replay_event *ev, uint64_t ptr, uint64_t size,
		       uint64_t usable, unsigned fam)
{
	if (!ptr)
		return rp->ops->failed ? rp->ops->failed(rp->arg, ev, size, fam) : 0;
	struct replay_block *b = blk_get(rp, ptr);
	if (b && b->live) {
		/* Handed out again without a free we saw: the old block is
		 * gone. Its slot is the new block's. */
		int k = end_block(rp, ev, b, RP_END_REUSED, 0);
		if (k < 0)
			return k;
		b = blk_get(rp, ptr);
	}
	if (!b && !(b = blk_new(rp, ptr)))
		return 0;
	memset(b, 0, sizeof(*b));
	b->ptr = ptr;
	b->size = size;
	b->usable = usable < size ? size : usable;
	b->site = ev->site;
	b->ns = ev->ns;
	b->ns_ok = ev->ns_ok;
	b->stack = ev->stack;
	b->has_stack = ev->has_stack;
	b->tid = ev->tid;
	b->cpu = ev->cpu;
	b->fam = (uint8_t)fam;
	b->live = 1;
	rp->live_n++;
	rp->live_req += size;
	rp->live_usable += b->usable;
	if (mem_alloc_class(fam) == MEM_C_PAGES)
		rp->live_pages += size;
	return rp->ops->alloc ? rp->ops->alloc(rp->arg, ev, b) : 0;
}

/* A free of ptr by `call` (mem_free_family or RP_END_REALLOC). */
static int free_block(struct replay *rp, const struct replay_event *ev, uint64_t ptr, unsigned call)
{
	int re = call == RP_END_REALLOC;
	struct replay_block *b = blk_get(rp, ptr);
	if (!b)
		return error(rp, ev, re ? RP_E_REALLOC_UNKNOWN : RP_E_UNKNOWN, ptr, call, NULL);
	if (!b->live)
		return error(rp, ev, re ? RP_E_REALLOC_FREED : RP_E_DOUBLE, ptr, call, b);
	if (!re && mem_alloc_class(b->fam) != mem_free_class(call)) {
		int k = error(rp, ev, RP_E_MISMATCH, ptr, call, b);
		if (k < 0)
			return k;
	}
	return end_block(rp, ev, b, call, ev->site);
}

int replay_apply(struct replay *rp, const struct replay_event *ev)
{
	int k = 0;
	switch (ev->kind) {
	case RP_ALLOC:
		return alloc_block(rp, ev, ev->ptr, ev->size, ev->usable, ev->family);
	case RP_FREE:
		return ev->ptr ? free_block(rp, ev, ev->ptr, ev->family) : 0;
	case RP_REALLOC:
		if (!ev->ptr && ev->size) /* failed: the old block stays */
			return alloc_block(rp, ev, 0, ev->size, 0, ev->family);
		if (ev->old_ptr)
			k = free_block(rp, ev, ev->old_ptr, RP_END_REALLOC);
		if (k >= 0 && ev->ptr)
			k = alloc_block(rp, ev, ev->ptr, ev->size, ev->usable, ev->family);
		return k;
	case RP_MMAP:
		return alloc_block(rp, ev, ev->ptr, ev->size, ev->size, MEM_A_MMAP);
	case RP_MUNMAP: {
		/* Only a whole mapping seen made: file mappings and partial
		 * unmaps are not allocations. */
		struct replay_block *b = blk_get(rp, ev->ptr);
		if (b && b->live && mem_alloc_class(b->fam) == MEM_C_PAGES && b->size == ev->size)
			return end_block(rp, ev, b, MEM_F_MUNMAP, ev->site);
		return 0;
	}
	case RP_MREMAP: {
		struct replay_block *b = blk_get(rp, ev->old_ptr);
		if (!b || !b->live || mem_alloc_class(b->fam) != MEM_C_PAGES)
			return 0;
		k = end_block(rp, ev, b, RP_END_MREMAP, ev->site);
		if (k >= 0)
			k = alloc_block(rp, ev, ev->ptr, ev->size, ev->size, MEM_A_MREMAP);
		return k;
	}
	}
	return 0;
}

/* ---- events of a trace -------------------------------------------------------- */

const struct replay_class *replay_item_class(struct replay *rp, const struct rd_item *it)
{
	const struct rd_meta *m = rp->meta;
	if (!m || !it->ec || it->ec < m->events || it->ec >= m->events + m->n_events)
		return NULL;
	size_t i = (size_t)(it->ec - m->events);
	if (!rp->cls_ready[i]) {
		replay_class_init(&rp->cls[i], it->ec->name, it->ec->fields);
		rp->cls_ready[i] = 1;
	}
	return &rp->cls[i];
}

static uint64_t fval(const struct rd_value *f, int i)
{
	return i >= 0 && (uint32_t)i < f->sub.n ? f->sub.v[i].u : 0;
}

int replay_item(struct replay *rp, const struct rd_item *it)
{
	if (it->kind != RD_ITEM_EVENT || !it->fields)
		return 0;
	const struct replay_class *c = replay_item_class(rp, it);
	if (!c || c->kind == RP_NONE)
		return 0;
	const struct rd_value *f = it->fields;
	struct replay_event ev = {
		.kind = c->kind,
		.ptr = fval(f, c->ptr),
		.old_ptr = fval(f, c->old_ptr),
		.site = fval(f, c->site),
		.size = fval(f, c->size),
		.usable = fval(f, c->usable),
		.family = (unsigned)fval(f, c->family),
		.stack = c->stack_id >= 0 ? (uint32_t)fval(f, c->stack_id) : REPLAY_NO_STACK,
		.has_stack = c->stack_id >= 0,
		.ns_ok = (uint8_t)(it->ns_ok != 0),
		.ns = it->ns,
		.cpu = it->cpu,
		.tid = it->tid,
	};
	int k = replay_apply(rp, &ev);
	return k < 0 ? k : 1;
}
