/*
 * replay.h - the one replay of a trace's allocation events (mem:*, see
 * src/mem/mem_family.h), for every view of them: the text, JSON and HTML
 * report (src/cli/cmd_report.c, report_html.c), the SQLite database
 * (src/cli/convert_sqlite.c), the Chrome heap counters and the folded
 * stacks weighted by bytes (src/cli/cmd_convert.c).
 *
 * It holds what each event class means (one table), the heap of blocks by
 * address (on util/u64map), and replay_apply(), which turns one event into
 * the calls of the consumer's callbacks: a block allocated, an allocation
 * that failed, a block ended (freed, realloc'ed, unmapped, or handed out
 * again without a free the trace saw), an error (free of an unknown
 * pointer, double free, mismatched family, realloc of a freed or unknown
 * block). The meaning of each event is decided here once; docs/mem.md
 * ("The replay") writes it down:
 *
 *  - a realloc is one event and two effects, in this order: the old block
 *    ends (end kind RP_END_REALLOC, at the realloc's site, counted as a
 *    free) and the new one is allocated (family realloc/reallocarray, at
 *    the same site). realloc(p, 0) that frees has ptr 0 and size 0: the
 *    end alone. A failed realloc (ptr 0, size > 0) is a failed allocation
 *    and leaves the old block alive. realloc(NULL, n) is an allocation.
 *  - mremap of a mapping seen made ends it (RP_END_MREMAP) and allocates
 *    the new one (family mremap); of anything else, nothing.
 *  - munmap ends a whole mapping seen made (MEM_F_MUNMAP); a file mapping
 *    or part of one is not an allocation: nothing.
 *  - free(NULL) (ptr 0) does nothing (the tracer records none).
 *  - an address allocated again while its block is alive (a free racing a
 *    moving realloc in another thread, or a lost event) ends the old block
 *    first, as RP_END_REUSED: not a free.
 *  - the family of a free must match the allocation's class
 *    (mem_alloc_class / mem_free_class); a realloc or mremap is not
 *    checked.
 *
 * Losses. A trace that lost events may show errors and leaks that the
 * program did not make: a block whose free was lost stays alive, a free
 * whose allocation was lost names an unknown pointer. The replay learns
 * the losses (replay_loss: a window of time per stream, from the
 * packets' timestamps) and marks what a loss may have caused as
 * possible, never as certain (docs/mem.md, "Lost events"):
 *  - a leak (a block alive at the end) is possible when a loss window
 *    ends at or after its allocation: its free may be among the lost;
 *  - a free or realloc of an unknown pointer is possible when a loss
 *    window began before it: its allocation may be among the lost;
 *  - a double free or realloc of a freed block, when a loss window
 *    began before it and ended at or after the first free: the block may
 *    have been allocated again in between; a mismatched free, when one
 *    ended at or after the allocation (a free and an allocation of
 *    another family lost in between).
 * Losses without a time (counted after a stream's last packet, or
 * unreadable after a crash) make everything possible; so does, for
 * errors, a trace without the program's beginning (a snapshot, overwrite
 * mode, an attached recording), whose first losses the reader delivers
 * late, at the end of their window.
 *
 * A forked child's trace (env ringtrace_follow = "fork") starts at the
 * fork: a free of a pointer it never saw allocated is taken as the free
 * of a block inherited from the parent, not as an error (the flag
 * `inherited`).
 *
 * Sampling (docs/mem.md, "Sampling"). A trace with a mem:sampling event
 * holds a Poisson sample of the allocations, one per `mean` bytes on
 * average: the replay learns the mean from that event (rp->sample_mean)
 * and gives each block a weight, w = 1 / (1 - exp(-size / mean)), the
 * number of allocations it stands for, and its bytes scaled by it
 * (replay_block wn, wsize, wusable; the w_live_* totals). Failed
 * allocations and the mmap family are every call: weight 1. A
 * mem:untracked event ends its block (RP_END_UNTRACKED: not a free, its
 * end will not be seen). A free or realloc of an address never allocated
 * is no error in a sampled trace (an allocation not sampled whose free
 * was, which a racing free can make): it is counted in rp->unmatched.
 * Without sampling every weight is 1 (wn 1 << REPLAY_W_SHIFT, the bytes
 * as they are), so a consumer can use the weighted figures always.
 *
 * One thread; built for traces of millions of events: memory is one entry
 * per address seen (REPLAY_KEEP_FREED, so that a second free finds the
 * first) or per block alive (without it), never per event.
 */
#ifndef RINGTRACE_ANALYZE_REPLAY_H
#define RINGTRACE_ANALYZE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "mem/mem_family.h"
#include "util/u64map.h"

struct rd_item;
struct rd_meta;
struct rd_type;

#define REPLAY_NO_STACK 0xffffffffu

/* What an event class means. */
enum replay_kind {
	RP_NONE,                     /* not an allocation event */
	RP_ALLOC,                    /* mem:alloc, mem:alloc_large */
	RP_FREE,                     /* mem:free */
	RP_REALLOC,                  /* mem:realloc, mem:realloc_large */
	RP_MMAP,                     /* mem:mmap (anonymous) */
	RP_MUNMAP,                   /* mem:munmap */
	RP_MREMAP,                   /* mem:mremap */
	RP_SAMPLING,                 /* mem:sampling: the trace is a sample */
	RP_UNTRACKED,                /* mem:untracked: a sample's end will not be seen */
};

/* How a block ended: enum mem_free_family (free, delete, delete[],
 * munmap), or one of these. */
enum {
	RP_END_REALLOC = MEM_F_MAX,  /* the old block of a realloc */
	RP_END_MREMAP,               /* the old mapping of an mremap */
	RP_END_REUSED,               /* its address handed out again, no free seen */
	RP_END_UNTRACKED,            /* a sample whose end the trace will not have */
	RP_END_MAX
};

enum replay_err {
	RP_E_UNKNOWN,                /* free of an address never allocated */
	RP_E_DOUBLE,                 /* free of a freed block */
	RP_E_MISMATCH,               /* free of another class (new + free...) */
	RP_E_REALLOC_FREED,          /* realloc of a freed block */
	RP_E_REALLOC_UNKNOWN,        /* realloc of an address never allocated */
	RP_E_COUNT
};

/* "double free"...: the names every output uses. */
extern const char *const replay_err_name[RP_E_COUNT];

/* "free", "delete", "delete[]", "munmap", "realloc", "mremap", "reused";
 * "?" for anything else. */
const char *replay_end_name(unsigned end);

/* Where the fields of an event class are (member indexes, -1: absent). */
struct replay_class {
	int kind;                    /* enum replay_kind */
	int ptr, old_ptr, site, size, usable, family, stack_id;
	int mean;                    /* mem:sampling */
};

/* The meaning of class `name` with payload `fields` (a struct, or NULL).
 * kind RP_NONE when the name is not an allocation event's, or the class
 * lacks a field its kind needs (a class of that name that is not ours). */
void replay_class_init(struct replay_class *c, const char *name, const struct rd_type *fields);

/* One allocation event, decoded. */
struct replay_event {
	int kind;                    /* enum replay_kind, not RP_NONE */
	uint64_t ptr, old_ptr, site, size, usable;   /* mem:sampling: size = mean */
	unsigned family;             /* enum mem_alloc_family or mem_free_family */
	uint32_t stack;              /* REPLAY_NO_STACK when has_stack is 0 */
	uint8_t has_stack;           /* the class has a stack_id field */
	uint8_t ns_ok;               /* ns is a time (rd_item.ns_ok) */
	int64_t ns;
	uint32_t cpu, tid;
};

/* Weights are fixed-point numbers of REPLAY_W_SHIFT fraction bits. */
#define REPLAY_W_SHIFT 16
#define REPLAY_W_ONE (UINT64_C(1) << REPLAY_W_SHIFT)

/* A block: alive, or (REPLAY_KEEP_FREED) ended. */
struct replay_block {
	uint64_t ptr;
	uint64_t size;               /* requested */
	uint64_t usable;             /* at least size */
	uint64_t site;
	int64_t ns;                  /* of its allocation */
	uint32_t stack;
	uint32_t tid, cpu;
	uint8_t fam;                 /* enum mem_alloc_family */
	uint8_t has_stack, ns_ok;
	uint8_t live;
	uint8_t end;                 /* ended: how (MEM_F_* or RP_END_*) */
	uint8_t end_ns_ok;           /* ended: end_ns is a time */
	uint64_t end_site;           /* ended: the site of that call */
	int64_t end_ns;              /* ended: when */
	uint64_t user;               /* the consumer's, set in its alloc callback */
	/* Sampling: the allocations it stands for (REPLAY_W_ONE: one), its
	 * bytes requested and usable scaled by that weight (rounded). */
	uint64_t wn, wsize, wusable;
};

/* An error: the call `ev` (at ev->site) named `ptr`. */
struct replay_error {
	int kind;                    /* enum replay_err */
	uint64_t ptr;
	unsigned call;               /* the call: mem_free_family, or RP_END_REALLOC */
	const struct replay_block *b;    /* the block: ended (double free, realloc of
					  * a freed block), alive (mismatch), NULL
					  * (unknown) */
	uint8_t possible;            /* a loss of events may have caused it */
	uint8_t inherited;           /* unknown pointer in a forked child: a block
				      * of its parent's, from before the fork */
};

/*
 * The consumer's callbacks (any may be NULL). When one is called, the
 * replay's live totals already include the change. A negative return
 * stops replay_apply(), which returns it. Order within one event: an
 * error comes before the effect it concerns (a mismatched free's error,
 * then the free; a realloc of an unknown block's error, then the new
 * block); an ended block before the block allocated by the same event.
 */
struct replay_ops {
	/* Block b allocated (b->user is the consumer's to set). */
	int (*alloc)(void *arg, const struct replay_event *ev, struct replay_block *b);
	/* An allocation that returned NULL: `size` bytes of `family`. */
	int (*failed)(void *arg, const struct replay_event *ev, uint64_t size, unsigned family);
	/* Block b ended by ev, b->end says how, b->end_site where. */
	int (*end)(void *arg, const struct replay_event *ev, const struct replay_block *b);
	int (*error)(void *arg, const struct replay_event *ev, const struct replay_error *e);
	/* replay_finish(): block b alive at the end of the trace; possible:
	 * a loss of events may have hidden its free. */
	int (*leak)(void *arg, const struct replay_block *b, int possible);
};

/* Keep ended blocks (one entry per address seen): needed to tell a
 * double free from a free of an unknown pointer. */
#define REPLAY_KEEP_FREED 1u

struct replay {
	const struct replay_ops *ops;
	void *arg;
	unsigned flags;
	/* The classes of the trace's metadata (replay_item), made at each
	 * class's first event. */
	const struct rd_meta *meta;
	struct replay_class *cls;
	uint8_t *cls_ready;
	/* The blocks: address -> index in blk (slots of ended blocks are
	 * reused when they are not kept). */
	struct u64map idx;
	struct replay_block *blk;
	size_t nblk, capblk;
	size_t free_head;            /* index + 1 of a reusable slot, 0: none */
	/* The heap now: blocks alive, their bytes requested and usable, and
	 * the bytes of the mappings among them. */
	uint64_t live_n, live_req, live_usable, live_pages;
	int oom;                     /* a block was not kept: figures miss it */
	/* The same, weighted: estimates of a sampled trace (w_live_n in
	 * REPLAY_W_ONE units), the figures themselves of a full one. */
	uint64_t w_live_n, w_live_req, w_live_usable;
	/* Sampling: the mean (0: every call is in the trace), the samples
	 * untracked (mem:untracked), the frees and reallocs of unknown
	 * addresses not reported as errors. */
	uint64_t sample_mean;
	uint64_t untracked, unmatched;
	/* Losses registered (replay_loss) and the latest end of their
	 * windows (INT64_MAX: one without an end). */
	uint64_t losses;
	int64_t loss_end;
	/* Events the trace's env counts as lost with no time: after a
	 * stream's last packet, or unreadable after a crash. */
	uint64_t env_lost;
	int forked;                  /* the trace of a forked child */
	int no_start;                /* a snapshot, overwrite mode, attached */
};

/* meta: the trace's, for replay_item (NULL if only replay_apply is used):
 * its env also says whether the trace is a forked child's, and the losses
 * it counts without a time (registered here, as windows without bounds).
 * 0 or -ENOMEM. */
int replay_init(struct replay *rp, const struct rd_meta *meta, unsigned flags, const struct replay_ops *ops,
		void *arg);
void replay_free(struct replay *rp);

/* The class of an event of the trace (NULL: not one of its classes). */
const struct replay_class *replay_item_class(struct replay *rp, const struct rd_item *it);

/* Replay one item of the trace: 0 when it is not an allocation event
 * (a loss item, RD_ITEM_LOST_*, is registered with replay_loss), 1 when
 * replayed, or a callback's negative return. */
int replay_item(struct replay *rp, const struct rd_item *it);

/* replay_item() of an item whose class the caller has looked up
 * (replay_item_class), to look it up once per event. */
int replay_item_of(struct replay *rp, const struct rd_item *it, const struct replay_class *c);

/* Replay one decoded event: 0, or a callback's negative return. */
int replay_apply(struct replay *rp, const struct replay_event *ev);

/*
 * A window of time in which events may have been lost: from begin_ns
 * (has_begin 0: from the start of the trace) to end_ns (has_end 0: to its
 * end). Called in time order of the windows' beginnings, as the reader
 * delivers its loss items, so that an error is judged with the losses
 * that began before it.
 */
void replay_loss(struct replay *rp, int has_begin, int64_t begin_ns, int has_end, int64_t end_ns);

/* May a loss of events have hidden the free of block b (alive)? */
int replay_leak_possible(const struct replay *rp, const struct replay_block *b);

/* The end of the trace: ops->leak for every block alive, in no order.
 * 0, or a callback's negative return. */
int replay_finish(struct replay *rp);

/* The weight of an allocation of `size` bytes in a trace sampled at one
 * per `mean` bytes (mean 0: REPLAY_W_ONE), in REPLAY_W_ONE units. */
uint64_t replay_weight(uint64_t mean, uint64_t size);

/* "estimated from a sample of one allocation per 512 KiB on average" or
 * "" (not sampled): for the consumers' headers. */
const char *replay_sample_text(const struct replay *rp, char *buf, size_t len);

/* The block at ptr, alive or (REPLAY_KEEP_FREED) ended; NULL. */
const struct replay_block *replay_find(const struct replay *rp, uint64_t ptr);

#endif /* RINGTRACE_ANALYZE_REPLAY_H */
