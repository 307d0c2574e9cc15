/*
 * rb.h - the ring buffer seen from outside the fast path: creating and
 * validating a shared-memory region, the process-local view both sides
 * build from it, the writer's slow path and the consumer.
 *
 * The fast path (reserve/commit) is inline in <ringtrace/ringtrace-abi.h>;
 * the layout and the protocol are in docs/design.md.
 */
#ifndef RINGTRACE_RB_H
#define RINGTRACE_RB_H

#include <stddef.h>
#include <stdint.h>

#include <ringtrace/ringtrace-abi.h>

#define RB_SB_MIN_SHIFT   12   /* 4 KiB */
#define RB_SB_MAX_SHIFT   22   /* 4 MiB */
#define RB_NSB_MIN_SHIFT  1
#define RB_NSB_MAX_SHIFT  10
#define RB_MAX_CPUS       4096
#define RB_DEFAULT_SB     (256u * 1024)
#define RB_DEFAULT_NSB    8
#define RB_DEFAULT_REG    (256u * 1024)
#define RB_BLOCK_MAX_US   60000000u   /* the longest wait for room: 1 minute */

struct rb_params {
	uint32_t ncpus;
	uint64_t sb_size;            /* power of two */
	uint32_t nsb;                /* power of two */
	uint32_t mode;               /* RINGTRACE__MODE_* */
	uint32_t clock;              /* RINGTRACE__CLOCK_* */
	uint64_t reg_size;
	uint8_t uuid[16];
	char patterns[sizeof(((struct ringtrace__shm_header *)0)->patterns)];
	/* The stack area: 0 for none, else the stack map's pool is 2^stack_bits
	 * (STACKMAP_BITS_MIN..MAX); `stacks` 1: every event carries a stack. */
	uint32_t stack_bits;
	uint32_t stacks;
	/* How long a writer waits for room in a full buffer, in microseconds
	 * (0: it drops the event at once; at most RB_BLOCK_MAX_US). Discard
	 * mode only: overwrite mode never waits. */
	uint32_t block_us;
};

/* Whether the inline fast path may run (ringtrace-abi.h): set use_rseq
 * only through this. */
static inline void rb_set_rseq(struct ringtrace__rb *rb, int on)
{
	rb->use_rseq = on;
	/* With stacks too: the events that carry the suffix have a flag
	 * that keeps them off the inline path (RINGTRACE__EVF_SUFFIX). */
	rb->fast_any = (uint32_t)on;
	/* Never for another clock: objects of ABI 3 read the TSC inside
	 * the section whenever this is set, and never with stacks: they do
	 * not read the flags. */
	rb->fast = (uint32_t)(on && !rb->stacks && rb->clock_tsc);
}

/*
 * The stack area of a region opened with rb_view_open(): the loaded-object
 * log (maplog.h) and the stack map (stackmap.h) that follows it. -ENOENT
 * if the region has none.
 */
int rb_stack_area(const struct ringtrace__rb *rb, void **ret_log, size_t *ret_log_size, void **ret_map,
		  size_t *ret_map_size);

/* Bytes a region with these parameters needs; -EINVAL if out of range. */
int rb_region_size(const struct rb_params *p, uint64_t *ret_size);

/* Lay a region out in `mem` (size bytes, zeroed). */
int rb_region_init(void *mem, uint64_t size, const struct rb_params *p);

/*
 * Validate a mapped region (every field is untrusted) and build the
 * process-local view. Returns 0 or -EBADMSG / -EPROTO / -ENOMEM.
 */
int rb_view_open(void *mem, uint64_t size, struct ringtrace__rb **ret_rb);
void rb_view_free(struct ringtrace__rb *rb);

/* Create the region file (mode 0600, O_EXCL) in dir, size it, map it, lay it
 * out. *ret_path gets a malloc'ed path; *ret_fd (if ret_fd) the open
 * descriptor (close-on-exec). */
int rb_shm_create(const char *dir, const struct rb_params *p, char **ret_path, int *ret_fd,
		  void **ret_mem, uint64_t *ret_size);
/* Map an existing region file read-write (size from fstat): by path, or by
 * an open descriptor (which stays open). Our user's 0600 regular files only. */
int rb_shm_map(const char *path, void **ret_mem, uint64_t *ret_size);
int rb_shm_map_fd(int fd, void **ret_mem, uint64_t *ret_size);
/* Where regions live: $XDG_RUNTIME_DIR if usable, else /dev/shm. */
const char *rb_shm_dir(void);

/* Number of CPU ids the kernel may hand out (possible CPUs). */
uint32_t rb_possible_cpus(void);

/* ---- writer side, used by the library -------------------------------- */

/* Events of one CPU lost in the buffer, by every cause, overwriting
 * included: what a packet's events_discarded says (a running total). An
 * overwritten sub-buffer also shows as a gap in packet_seq_num, as in
 * LTTng, but only this count says how many events it held. */
uint64_t rb_cpu_discarded(const struct ringtrace__rb_cpu *ctl);

/* Events the program tried to write on one CPU (nsb sub-buffers): those
 * committed in its sub-buffers plus those dropped before they were
 * written. Final once no writer runs; the trace of that CPU then holds
 * written == events + events_discarded (+ what the consumer lost). */
uint64_t rb_cpu_written(const struct ringtrace__rb_percpu *pc, uint32_t nsb);

/*
 * The slow path's reservation (src/lib/probe.c calls it when the inline
 * fast path cannot reserve): room for a record of event c->id with
 * `payload` bytes of fields on the calling thread's CPU, opening the next
 * sub-buffer if the open one is full; c->rb and c->id set by the caller.
 * `writer` (nonzero, below 2^22) is the tag the CPU's state word keeps: a
 * thread record carrying it goes before the event when another writer
 * wrote last, and after every packet header. Returns 1 with c filled (the
 * caller writes the fields and the header, then commits c->len bytes with
 * ringtrace__commit() or rb_commit()), or 0 when the event was dropped;
 * the drop is counted by cause unless RB_RES_INTERNAL (the tracer's own
 * records, which never wait either). When the buffer is full the call may
 * wait for room, a bounded time, if the region asks for it (rb_block.c),
 * unless RB_RES_NOWAIT: the caller knows its context must not wait.
 */
#define RB_RES_INTERNAL 1u
#define RB_RES_NOWAIT   2u
int rb_reserve(struct ringtrace__wctx *c, uint32_t payload, uint32_t writer, unsigned flags);

/* Commit `bytes` of a reservation (and `events` user events) from any
 * thread: in place with rseq when still on c->cpu, else atomically. */
void rb_commit(struct ringtrace__wctx *c, uint32_t bytes, uint32_t events);

/* Close every open sub-buffer so that a reader can take it. Only when no
 * writer can run (tracing off, grace period passed). */
void rb_flush_quiescent(struct ringtrace__rb *rb);

/* ---- consumer ----------------------------------------------------------- */

struct rb_reader;

/* Walks the records of a packet whose tail may be unwritten: returns the
 * size of the record's payload starting at `payload` (at most avail bytes),
 * or a negative errno if the bytes are not a valid record of event `id`. */
typedef int (*rb_payload_size_fn)(void *arg, uint32_t id, const char *payload, size_t avail,
				  size_t *ret_size);

/* The records of a packet (or a copy of a sub-buffer) of `avail` bytes,
 * walked from after its header to the first one never written (a zero
 * header) or that does not decode (fn, NULL: none decodes): returns the
 * bytes kept, and the user events among them in *ret_events (may be
 * NULL). Reads only p[0..avail). */
size_t rb_walk_records(const char *p, size_t avail, rb_payload_size_fn fn, void *arg, uint64_t *ret_events);

struct rb_packet {
	const char *data;            /* packet bytes, header included */
	size_t len;                  /* content bytes (what goes to disk) */
	uint64_t events;             /* user events (thread records excluded) */
	uint32_t cpu;
	int salvaged;                /* cut at the first unwritten record */
};

int rb_reader_new(struct ringtrace__rb *rb, struct rb_reader **ret);
/* A reader of a region that was written (and maybe read) before: start at
 * the oldest sub-buffer of each CPU that nobody has taken yet. */
void rb_reader_seek_oldest(struct rb_reader *r);
void rb_reader_free(struct rb_reader *r);

/*
 * Take the oldest complete sub-buffer of `cpu`. Returns 1 with *pkt filled
 * (valid until rb_reader_put), 0 when none is ready. In overwrite mode the
 * packet is a private copy, claimed from the writers.
 */
int rb_reader_get(struct rb_reader *r, uint32_t cpu, struct rb_packet *pkt);
/* Hand the sub-buffer back to the writers (discard mode: zeroed first). */
void rb_reader_put(struct rb_reader *r, uint32_t cpu);

/*
 * Only when no writer can run any more (the program exited): take what is
 * left of `cpu`, including the open sub-buffer and sub-buffers with records
 * that were reserved but never written, cut at the first such record.
 * Returns 1 with *pkt (a private copy), 0 when nothing is left.
 */
int rb_reader_salvage(struct rb_reader *r, uint32_t cpu, rb_payload_size_fn fn, void *arg,
		      uint64_t end_ts, struct rb_packet *pkt);

/*
 * While writers run: a private copy of the sub-buffer the reader would take
 * next (usually the open one), cut at the first record not written yet.
 * Nothing is taken: the same records come again, with more, from the next
 * peek and finally from rb_reader_get(). Returns 1 with *pkt, or 0.
 */
int rb_reader_peek(struct rb_reader *r, uint32_t cpu, rb_payload_size_fn fn, void *arg, uint64_t end_ts,
		   struct rb_packet *pkt);

/* Counters of the consumer. */
struct rb_reader_stats {
	uint64_t packets;
	uint64_t events;
	uint64_t bytes;
	uint64_t torn;               /* overwrite mode: copies lost to a writer */
	uint64_t corrupt;            /* sub-buffers that failed validation */
	uint64_t corrupt_events;     /* committed events in those sub-buffers */
	uint64_t crash_lost;         /* salvage: committed events that could not be kept */
};
void rb_reader_stats(const struct rb_reader *r, struct rb_reader_stats *ret);

/* Committed events of `cpu` the consumer could not hand out (corrupt_events
 * and crash_lost of that CPU). */
uint64_t rb_reader_cpu_lost(const struct rb_reader *r, uint32_t cpu);

/* Ask writers to wake us when they close a sub-buffer, then sleep at most
 * timeout_ms. */
void rb_reader_wait(struct rb_reader *r, int timeout_ms);

#endif
