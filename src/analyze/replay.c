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
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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
	case RP_END_UNTRACKED: return "untracked";
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
	{ "mem:munmap", RP_MUNMAP },   { "mem:mremap", RP_MREMAP },         { "mem:sampling", RP_SAMPLING },
	{ "mem:untracked", RP_UNTRACKED },
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
	c->mean = member_index(ft, "mean");
	/* A class of that name without the fields its kind needs is not
	 * ours: every kind has ptr and site, all but free a size, the two
	 * that move a block its old_ptr, the two of malloc-like blocks a
	 * family. */
	int k = c->kind;
	if ((k == RP_SAMPLING && c->mean < 0) || (k == RP_UNTRACKED && c->ptr < 0)) {
		c->kind = RP_NONE;
		return;
	}
	if (k != RP_NONE && k != RP_SAMPLING && k != RP_UNTRACKED &&
	    (c->ptr < 0 || c->site < 0 || (k != RP_FREE && c->size < 0) ||
	     ((k == RP_REALLOC || k == RP_MREMAP) && c->old_ptr < 0) ||
	     ((k == RP_ALLOC || k == RP_REALLOC) && c->family < 0)))
		c->kind = RP_NONE;
}

/* ---- blocks ---------------------------------------------------------------- */

/* What the env says: a forked child's trace; losses without a time
 * (docs/trace-format.md, "Loss accounting"). */
static void env_read(struct replay *rp, const struct rd_meta *m)
{
	const struct rd_env *f = rd_meta_env(m, "ringtrace_follow");
	rp->forked = f && f->str && !strcmp(f->str, "fork");
	/* A trace without the program's beginning: a snapshot or overwrite
	 * mode keeps its last packets only, an attached recording starts
	 * late. What came before it is unknown. */
	const struct rd_env *mode = rd_meta_env(m, "ringtrace_mode"), *snap = rd_meta_env(m, "ringtrace_snapshot"),
			    *att = rd_meta_env(m, "ringtrace_attached");
	rp->no_start = (mode && mode->str && !strcmp(mode->str, "overwrite")) || (snap && !snap->str && snap->num > 0) ||
		       (att && !att->str && att->num > 0);
	for (size_t i = 0; i < m->n_env; i++) {
		const struct rd_env *e = &m->env[i];
		unsigned long long cpu;
		int end = 0;
		if (e->str || e->num <= 0 || sscanf(e->key, "ringtrace_stream_%llu_%n", &cpu, &end) != 1 || !end)
			continue;
		const char *cause = e->key + end;
		if (!strcmp(cause, "discarded_after") || !strcmp(cause, "lost_unwritten") ||
		    !strcmp(cause, "lost_crash")) {
			rp->env_lost += (uint64_t)e->num;
			replay_loss(rp, 0, 0, 0, 0);
		}
	}
}

int replay_init(struct replay *rp, const struct rd_meta *meta, unsigned flags, const struct replay_ops *ops,
		void *arg)
{
	static const struct replay_ops none;
	memset(rp, 0, sizeof(*rp));
	rp->ops = ops ? ops : &none;
	rp->arg = arg;
	rp->flags = flags;
	rp->meta = meta;
	if (meta)
		env_read(rp, meta);
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

/* The block of address ptr, entered in the map if new (contents zero;
 * *ret_created set), in one probe of the map: every allocation asks. NULL
 * when out of memory (rp->oom set). */
static struct replay_block *blk_put(struct replay *rp, uint64_t ptr, int *ret_created)
{
	uint64_t *i = u64map_put(&rp->idx, ptr, ret_created);
	if (!i) {
		rp->oom = 1;
		return NULL;
	}
	if (!*ret_created)
		return &rp->blk[*i];
	size_t slot;
	if (rp->free_head) {
		slot = rp->free_head - 1;
		rp->free_head = (size_t)rp->blk[slot].user;
	} else {
		if (rp->nblk == rp->capblk) {
			size_t cap = rp->capblk ? rp->capblk * 2 : 1024;
			struct replay_block *v = realloc(rp->blk, cap * sizeof(*v));
			if (!v) {
				u64map_del(&rp->idx, ptr);
				rp->oom = 1;
				return NULL;
			}
			rp->blk = v;
			rp->capblk = cap;
		}
		slot = rp->nblk++;
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

/* w = 1 / (1 - exp(-size / mean)) as a double (1 without sampling); a
 * sample of 0 bytes stands for `mean` allocations, as the tracer counts it
 * (memsample_weight, src/mem/memsample.c). */
static double weight(uint64_t mean, uint64_t size)
{
	if (!mean)
		return 1;
	double q = -expm1(-(double)size / (double)mean);
	return q > 0 ? 1 / q : (double)mean;
}

uint64_t replay_weight(uint64_t mean, uint64_t size)
{
	return (uint64_t)llround(weight(mean, size) * (double)REPLAY_W_ONE);
}

const char *replay_sample_text(const struct replay *rp, char *buf, size_t len)
{
	if (!rp->sample_mean) {
		snprintf(buf, len, "%s", "");
		return buf;
	}
	uint64_t m = rp->sample_mean;
	const char *u = "bytes";
	if (!(m % (1u << 30)))
		m >>= 30, u = "GiB";
	else if (!(m % (1u << 20)))
		m >>= 20, u = "MiB";
	else if (!(m % (1u << 10)))
		m >>= 10, u = "KiB";
	snprintf(buf, len, "estimated from a sample of one allocation per %llu %s on average", (unsigned long long)m, u);
	return buf;
}

void replay_loss(struct replay *rp, int has_begin, int64_t begin_ns, int has_end, int64_t end_ns)
{
	/* The beginning is not kept: a window is registered when the
	 * replay reaches it, so every one registered began before the
	 * event being replayed (or has no time, and may be anywhere). */
	(void)has_begin;
	(void)begin_ns;
	int64_t end = has_end ? end_ns : INT64_MAX;
	if (!rp->losses || end > rp->loss_end)
		rp->loss_end = end;
	rp->losses++;
}

/* Did a loss window that began before now end at or after time t (ok:
 * t is a time)? */
static int lost_since(const struct replay *rp, int ok, int64_t t)
{
	return rp->losses && (!ok || rp->loss_end >= t);
}

/* The same for an error: a trace without the program's beginning may
 * have lost anything before its first packets, which the reader tells
 * only when it reaches them (a loss without a beginning comes at its
 * end). */
static int err_lost_since(const struct replay *rp, int ok, int64_t t)
{
	return rp->no_start || lost_since(rp, ok, t);
}

int replay_leak_possible(const struct replay *rp, const struct replay_block *b)
{
	return lost_since(rp, b->ns_ok, b->ns);
}

int replay_finish(struct replay *rp)
{
	if (!rp->ops->leak)
		return 0;
	for (size_t i = 0; i < rp->nblk; i++) {
		const struct replay_block *b = &rp->blk[i];
		if (!b->live)
			continue;
		int k = rp->ops->leak(rp->arg, b, replay_leak_possible(rp, b));
		if (k < 0)
			return k;
	}
	return 0;
}

static int error(struct replay *rp, const struct replay_event *ev, int kind, uint64_t ptr, unsigned call,
		 const struct replay_block *b)
{
	struct replay_error e = { kind, ptr, call, b, 0, 0 };
	switch (kind) {
	case RP_E_UNKNOWN:
	case RP_E_REALLOC_UNKNOWN:
		/* Its allocation may be among the lost, or the parent's. */
		e.possible = rp->no_start || rp->losses > 0;
		e.inherited = (uint8_t)rp->forked;
		break;
	case RP_E_DOUBLE:
	case RP_E_REALLOC_FREED:
		/* Allocated again between the two, and that lost. */
		e.possible = (uint8_t)err_lost_since(rp, b->end_ns_ok && ev->ns_ok, b->end_ns);
		break;
	case RP_E_MISMATCH:
		/* Freed and allocated by another family since, both lost. */
		e.possible = (uint8_t)err_lost_since(rp, b->ns_ok && ev->ns_ok, b->ns);
		break;
	}
	return rp->ops->error ? rp->ops->error(rp->arg, ev, &e) : 0;
}

/* Block b (alive) ends by `end` at `site`. */
static int end_block(struct replay *rp, const struct replay_event *ev, struct replay_block *b, unsigned end,
		     uint64_t site)
{
	rp->live_n--;
	rp->live_req -= b->size;
	rp->live_usable -= b->usable;
	rp->w_live_n -= b->wn;
	rp->w_live_req -= b->wsize;
	rp->w_live_usable -= b->wusable;
	if (mem_alloc_class(b->fam) == MEM_C_PAGES)
		rp->live_pages -= b->size;
	b->live = 0;
	b->end = (uint8_t)end;
	b->end_site = site;
	b->end_ns = ev->ns;
	b->end_ns_ok = ev->ns_ok;
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
	int created;
	struct replay_block *b = blk_put(rp, ptr, &created);
	if (!b)
		return 0;
	if (b->live) {
		/* Handed out again without a free we saw: the old block is
		 * gone. Its slot is the new block's (end_block keeps a
		 * reused block's slot). */
		int k = end_block(rp, ev, b, RP_END_REUSED, 0);
		if (k < 0)
			return k;
	}
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
	/* Samples weigh w; every call of the mmap family is in the trace. */
	double w = mem_alloc_class(fam) == MEM_C_PAGES ? 1 : weight(rp->sample_mean, size);
	b->wn = (uint64_t)llround(w * (double)REPLAY_W_ONE);
	b->wsize = w == 1 ? size : (uint64_t)llround(w * (double)size);
	b->wusable = w == 1 ? b->usable : (uint64_t)llround(w * (double)b->usable);
	rp->w_live_n += b->wn;
	rp->w_live_req += b->wsize;
	rp->w_live_usable += b->wusable;
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
	if (!b && rp->sample_mean) {
		/* Not an error that a sample can show (replay.h). */
		rp->unmatched++;
		return 0;
	}
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
	case RP_SAMPLING:
		/* Once per process, before its first sample; a followed
		 * child's is in its own trace. */
		rp->sample_mean = ev->size;
		return 0;
	case RP_UNTRACKED: {
		struct replay_block *b = blk_get(rp, ev->ptr);
		rp->untracked++;
		return b && b->live ? end_block(rp, ev, b, RP_END_UNTRACKED, 0) : 0;
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
	if (it->kind == RD_ITEM_LOST_EVENTS || it->kind == RD_ITEM_LOST_PACKETS) {
		replay_loss(rp, it->has_begin && it->ns_ok, it->ns, it->end_ok, it->end_ns);
		return 0;
	}
	if (it->kind != RD_ITEM_EVENT || !it->fields)
		return 0;
	return replay_item_of(rp, it, replay_item_class(rp, it));
}

int replay_item_of(struct replay *rp, const struct rd_item *it, const struct replay_class *c)
{
	if (it->kind != RD_ITEM_EVENT || !it->fields || !c || c->kind == RP_NONE)
		return 0;
	const struct rd_value *f = it->fields;
	struct replay_event ev = {
		.kind = c->kind,
		.ptr = fval(f, c->ptr),
		.old_ptr = fval(f, c->old_ptr),
		.site = fval(f, c->site),
		.size = fval(f, c->kind == RP_SAMPLING ? c->mean : c->size),
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
