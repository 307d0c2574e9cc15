/*
 * stackmap.h - a lock-free map that stores each distinct stack trace once
 * and names it with a 4-byte id (MISSION.md section 3, the ftrace
 * stackmap). docs/stackmap.md describes the layout and the protocol.
 *
 * Who writes, who reads: any thread of the traced program calls
 * stackmap_get_id() (also from signal handlers); the program or another
 * process that maps the same memory (the ringtrace command) reads the
 * stacks, the counters and exports them, and resets the map while tracing
 * is off. The map lives in one caller-provided block (later: the program's
 * shared-memory region): it holds offsets and indexes, never pointers, all
 * integers in native byte order, and every process builds its own view of
 * it with stackmap_open(), which validates the header.
 *
 * Load it is built for: a hit on a stack that is already stored (the common
 * case, 84-98% of calls in the RFC's figures) on every traced event, from
 * every CPU at once. A hit hashes the frames, probes a few slots (8 bytes
 * each, 8 per cache line), compares the frames once and takes one LOCKed
 * instruction: the stack's reference count. Inserts happen once per
 * distinct stack.
 *
 * The in-flight counters. Each CPU block counts the calls that entered
 * get_id and those that left; entries - exits is the number of calls in
 * flight. They are needed because a reset clears memory that a call may be
 * reading or writing: the flag alone stops new calls, but a call that read
 * the flag just before it was set could still claim a slot in the freshly
 * cleared table, write a stack into an element that is being wiped, or
 * return an id whose element is gone. Reset waits until no call is in
 * flight before it clears. The block is the one of the caller's `cpu`
 * argument, so a call's entry and exit always land in the same block.
 *
 * What they cost. A call whose thread runs on the CPU it names counts both
 * with plain adds inside restartable sequences (rseq, x86-64 with glibc
 * >= 2.35): the `l_` counters, written only by code running on that CPU, so
 * no LOCK prefix is needed. Between the entry and the read of the reset
 * flag there is no fence either: reset issues membarrier(2)
 * (MEMBARRIER_CMD_GLOBAL_EXPEDITED, which runs a full barrier on every CPU
 * running a thread of a process registered for it, as stackmap_open()
 * registers) between setting the flag and reading the counters, the
 * asymmetric form of the entry-then-flag / flag-then-entries handshake.
 * Everything else (no rseq, a thread on another CPU than it names, a
 * preempted or migrated section, TSan builds, other architectures) uses
 * the atomic counters with a seq_cst entry, as before. Drops are atomic
 * always (they are rare). So a hit is one LOCKed instruction, the reference
 * count; docs/stackmap.md has the figures.
 *
 * Guarantees: get_id takes at most STACKMAP_MAX_PROBES probes, never
 * allocates, locks, blocks or makes a system call: it is async-signal-safe
 * and wait-free. Ids are stable until the next reset and start at 1 (0 is
 * "no id"). Two calls inserting the same new stack at the same time may
 * both insert it: the stack then has two ids (at most one per racing
 * call), both valid. When the pool is exhausted, or 64 probes find neither
 * the stack nor a free slot, the call fails with -ENOSPC and counts a drop:
 * the caller records the full stack instead, nothing is lost.
 */
#ifndef RINGTRACE_STACKMAP_H
#define RINGTRACE_STACKMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define STACKMAP_MAGIC        UINT64_C(0x50414d4b43415453) /* "STACKMAP" in LE */
#define STACKMAP_VERSION      2
#define STACKMAP_MAX_DEPTH    64
#define STACKMAP_MAX_PROBES   64
#define STACKMAP_BITS_MIN     10
#define STACKMAP_BITS_MAX     18
#define STACKMAP_BITS_DEFAULT 14
#define STACKMAP_MAX_CPUS     4096
/* How long stackmap_reset() waits for calls in flight before giving up. */
#define STACKMAP_RESET_TIMEOUT_MS 5000

/* ---- layout in the block (docs/stackmap.md) ------------------------------ */

struct stackmap_header {
	/* Written once by stackmap_init(), validated by stackmap_open(). */
	uint64_t magic;              /* STACKMAP_MAGIC */
	uint32_t version;            /* STACKMAP_VERSION */
	uint32_t header_size;        /* sizeof(struct stackmap_header) */
	uint64_t total_size;         /* bytes of the whole map */
	uint64_t seed;               /* hash seed */
	uint32_t bits;               /* pool 2^bits elements, table 2^(bits+1) slots */
	uint32_t ncpus;              /* CPU blocks */
	uint32_t max_depth;          /* STACKMAP_MAX_DEPTH */
	uint32_t elem_size;          /* sizeof(struct stackmap_elem) */
	uint64_t cpu_off;            /* offsets from the start of the block */
	uint64_t table_off;
	uint64_t pool_off;
	/* 1 while a reset runs: CAS by stackmap_reset(), read by every call. */
	uint32_t resetting;
	/* 1 once a process opened the map with per-CPU (rseq) counting: from
	 * then on every reset must run membarrier() before it drains. Set by
	 * stackmap_open(), cleared only by stackmap_init(). */
	uint32_t percpu;
	/* Resets done: bumped by each, before it reopens the map (an id
	 * remembered with the epoch it was handed out in stays valid while
	 * the epoch is the same: stackmap_get_id_hint()). */
	uint64_t epoch;
	uint64_t pad1[5];
	/* Own cache line: every insert takes an element with a fetch-add here,
	 * hits never touch it. Never above the table size (one fetch-add per
	 * claimed slot), so it cannot wrap. */
	uint64_t cursor;
	uint64_t pad2[7];
};

/*
 * The hits of a CPU's calls answered by a hint (stackmap_get_id_hint()),
 * counted here rather than in the element's ref: hit[id & (STACKMAP_HITS -
 * 1)] belongs to the first id that uses it in an epoch (the map's reset
 * count), and then counts that id's hint hits on this CPU with a plain
 * add in an rseq section, which is the whole call: no entry, no exit. An
 * element's count is its ref plus its entry in every CPU's hits, and a
 * CPU's successes its exits less its drops plus its entries' counts, each
 * entry only if its epoch is the map's (the readers: read_elem(),
 * cpu_counts()). Why: with two threads taking the same
 * stack, a LOCKed add on the element's line bounced it between their
 * CPUs: 12.7% of the program's samples on bench/mem_pairs.c (2 threads,
 * --mem --stacks, perf cpu-clock), 2.8% with these entries.
 */
#define STACKMAP_HITS 8
struct stackmap_hit {
	uint32_t id;                 /* 0: free */
	uint32_t epoch;              /* low half of the epoch it counts in */
	uint64_t n;
};

/*
 * Per CPU, three cache lines, for the calls that pass this CPU number. The l_
 * counters are written only by code running on this CPU, with plain adds
 * in rseq critical sections (any process, any thread: the CPU runs one at a
 * time); the others with atomic read-modify-writes from anywhere. Calls
 * entered = l_entries + entries, left = l_exits + exits (successes and
 * drops), in flight = entered - left.
 */
struct stackmap_cpu {
	uint64_t l_entries;          /* rseq: calls that entered get_id */
	uint64_t l_exits;            /* rseq: calls that left it */
	uint64_t entries;            /* atomic: calls that entered get_id */
	uint64_t exits;              /* atomic: calls that left it */
	uint64_t drops;              /* atomic: calls that failed */
	uint64_t base_succ;          /* left - drops at the last reset */
	uint64_t base_drops;         /* drops at the last reset */
	uint64_t pad;
	struct stackmap_hit hit[STACKMAP_HITS]; /* rseq: hint hits, two lines */
};

/*
 * key 0: free. key != 0 and elem 0: claimed, element not published yet (or
 * never: the pool was exhausted). Otherwise elem holds the stack id
 * (element index + 1, low 24 bits) and the stack's depth (high 8 bits), so
 * that a probe rejects a stack of another depth without reading the
 * element.
 */
struct stackmap_slot {
	uint32_t key;
	uint32_t elem;
};
#define STACKMAP_SLOT_ID(elem)         ((elem) & 0xffffffu)
#define STACKMAP_SLOT_DEPTH(elem)      ((elem) >> 24)
#define STACKMAP_SLOT_ELEM(id, depth)  ((uint32_t)(id) | (uint32_t)(depth) << 24)

/*
 * Filled once by the call that claimed it, then read-only until reset
 * (except ref). The frames start on their own cache line (16 frames: two
 * lines); ref, which hits on every CPU bounce, shares its line only with
 * ready and depth, which hits never read.
 */
struct stackmap_elem {
	uint32_t ready;              /* 1 once filled (release), for readers */
	uint32_t depth;
	uint64_t ref;                /* successful get_id calls that returned it */
	uint64_t pad[6];
	uint64_t ips[STACKMAP_MAX_DEPTH];
};

/* ---- a process's view of a map ------------------------------------------ */

/* Built by stackmap_open() from a validated header; the hot path uses only
 * these fields, never the offsets in the shared header. */
struct stackmap {
	struct stackmap_header *hdr;
	struct stackmap_cpu *cpu;
	struct stackmap_slot *table;
	struct stackmap_elem *pool;
	uint64_t seed;
	uint32_t mask;               /* table slots - 1 */
	uint32_t max;                /* pool elements */
	uint32_t ncpus;
	uint32_t bits;
	/* 1 if calls through this view count with rseq when their thread runs
	 * on the CPU they name (stackmap_open() sets it when this process can:
	 * rseq registered, membarrier registration done); 0: atomics only. A
	 * caller may clear it after stackmap_open() (RINGTRACE_NO_RSEQ, tests),
	 * never set it. */
	uint32_t percpu;
	/* Distinct for every view this process opened: names the map an id
	 * belongs to (a region's map replaced by another's at the same
	 * address included). */
	uint32_t serial;
};

/* One stored stack, as the exports and readers hand it out (a copy). */
struct stackmap_stack {
	uint32_t id;
	uint32_t depth;
	uint64_t ref;
	uint64_t ips[STACKMAP_MAX_DEPTH];
};

/* Bytes a map needs (bits 0 means STACKMAP_BITS_DEFAULT); 0 if bits is not
 * in [10, 18] or ncpus not in [1, STACKMAP_MAX_CPUS]. */
size_t stackmap_size(uint32_t bits, uint32_t ncpus);

/*
 * Lay a map out in `mem`: size bytes, 64-byte aligned, zero-filled (a fresh
 * mapping: the pool is never touched before it is used, so its pages cost
 * nothing until then). Any seed is valid; pass a random one so that the
 * probe lengths cannot be chosen by whoever controls the addresses.
 * -EINVAL on a bad argument or a block too small or misaligned.
 */
int stackmap_init(void *mem, size_t size, uint32_t bits, uint32_t ncpus, uint64_t seed);

/*
 * Validate a map laid out by stackmap_init() (in this process or another:
 * every header field is untrusted) and fill *ret_map. Where rseq is
 * available it also registers the process for
 * MEMBARRIER_CMD_GLOBAL_EXPEDITED (a system call, once per process) and
 * marks the map as having per-CPU callers. -EINVAL if mem is
 * NULL or misaligned, -EPROTO on the right magic with an unknown version
 * or header size, -EBADMSG on anything else inconsistent (magic, sizes,
 * offsets, bits, ncpus, depth, element size, flag or cursor out of range,
 * block smaller than total_size). *ret_map is untouched on failure.
 */
int stackmap_open(void *mem, size_t size, struct stackmap *ret_map);

/*
 * The same for a process that reads, saves or resets the map and never
 * calls stackmap_get_id*() through this view (the recorder, the command
 * line): no registration, which took 10 ms of the recorder's exit
 * (strace -T, 2-CPU VM), and a view whose calls would use the atomic
 * counters. A reset from it still fences every registered caller.
 */
int stackmap_open_view(void *mem, size_t size, struct stackmap *ret_map);

/*
 * The id of the stack ips[0..depth-1], inserting it if it is new.
 * Returns 1 if this call inserted it, 0 if it was there, and on failure:
 * -ENOSPC (pool exhausted or 64 probes without success), -EAGAIN (a reset
 * runs), both counted as drops of `cpu`; -EINVAL (NULL map or ret_id, depth
 * > 64, NULL ips with depth > 0), not counted: a caller's bug, not a full
 * map. *ret_id is untouched on failure. `cpu` selects the counters; a cpu
 * beyond the map's is folded onto it (modulo). Async-signal-safe, wait-free.
 */
int stackmap_get_id(struct stackmap *map, const uint64_t *ips, uint32_t depth, uint32_t cpu,
		    uint32_t *ret_id);

/*
 * An earlier answer remembered by the caller with the stack it was for
 * (the unwinder's memo: src/lib/stack.c): the id, and the view and epoch
 * it was handed out in.
 */
struct stackmap_hint {
	uint32_t id, serial, epoch;
};

/*
 * stackmap_get_id() for a caller that may know the answer: when `known`
 * and *hint was filled by an earlier call with the very same stack in
 * this view and no reset came between, the id is taken from it (counted
 * as a hit of its stack, with no hash, probe or compare) and the return
 * is STACKMAP_FROM_HINT. Otherwise the lookup is done and *hint filled on
 * success. Other returns and contract as stackmap_get_id(), except that
 * ips may be NULL when `known` (a caller whose frames are not at hand
 * yet): a hint that cannot answer then returns -ENODATA, counted as
 * nothing, and the caller asks again with the frames (one voided by a
 * reset that ran meanwhile: -EAGAIN, a drop, as during a reset).
 */
#define STACKMAP_FROM_HINT 2
int stackmap_get_id_hint(struct stackmap *map, const uint64_t *ips, uint32_t depth, uint32_t cpu,
			 struct stackmap_hint *hint, int known, uint32_t *ret_id);

/*
 * The seeded 32-bit hash of a stack, and the slot key made from it (a hash
 * of 0 becomes 1: 0 marks a free slot). Test vector: stackmap_hash(0, NULL,
 * 0) == 0 (seed 0, empty stack), so the empty stack of a map seeded with 0
 * has key 1.
 */
uint32_t stackmap_hash(uint64_t seed, const uint64_t *ips, uint32_t depth);
uint32_t stackmap_key(uint64_t seed, const uint64_t *ips, uint32_t depth);

/*
 * Empty the map: -EBUSY if tracing_on, or if another reset runs (in any
 * process). Otherwise new calls fail at once with -EAGAIN (counted as
 * drops); reset waits with short sleeps until the calls in flight on every
 * CPU have left, clears the table, the pool cursor, the used elements and
 * the counters, and reopens the map. Ids handed out before are void. If
 * calls are still in flight after timeout_ms (a thread stopped inside
 * get_id), it reopens the map unchanged and returns -ETIMEDOUT.
 * When a process opened the map with per-CPU counting, reset needs the
 * membarrier system call: if the kernel refuses it (seccomp, a kernel
 * without it), reset reopens the map unchanged and returns its error
 * (-ENOSYS, -EPERM, -EINVAL).
 * Not async-signal-safe (it sleeps); readers must not run during a reset.
 */
int stackmap_reset(struct stackmap *map, int tracing_on);
int stackmap_reset_timeout(struct stackmap *map, int tracing_on, unsigned timeout_ms);

struct stackmap_stat {
	uint64_t entries;            /* E: elements taken from the pool */
	uint64_t max_entries;        /* MAX: 2^bits */
	uint64_t table_size;         /* T: 2 * MAX */
	uint64_t successes;          /* S: calls that returned an id */
	uint64_t drops;              /* D: calls that failed (-ENOSPC, -EAGAIN) */
	uint32_t success_rate;       /* 100 * S / (S + D) rounded down; 0 without calls */
};

/* Counters summed over the CPUs. Exact when no call is in flight; while
 * calls run, S and D may lag by the calls in flight. */
int stackmap_stat(const struct stackmap *map, struct stackmap_stat *ret);
/* The counters of one CPU. -EINVAL if cpu is beyond the map. */
int stackmap_cpu_stat(const struct stackmap *map, uint32_t cpu, uint64_t *ret_successes,
		      uint64_t *ret_drops);

/*
 * Walk the published stacks in id order. fn returns 0 to go on; anything
 * else stops the walk and is returned. Safe while get_id runs (stacks
 * published meanwhile may or may not be seen); -EBUSY while a reset runs.
 * Elements whose depth is out of range (damaged memory) are skipped.
 */
typedef int (*stackmap_iter_fn)(void *arg, const struct stackmap_stack *s);
int stackmap_for_each(const struct stackmap *map, stackmap_iter_fn fn, void *arg);

/* The stack with this id: 0, or -ENOENT if the id is not published. */
int stackmap_lookup(const struct stackmap *map, uint32_t id, struct stackmap_stack *ret);

/* A malloc'ed copy of every published stack, in id order (free() it).
 * -ENOMEM, -EBUSY. */
int stackmap_collect(const struct stackmap *map, struct stackmap_stack **ret, size_t *ret_n);

/* ---- exports (stackmap_export.c): tools side, never on a hot path -------- */

/*
 * Symbolisation hook: write "symbol+0xoff/0xsize" (NUL-terminated, at most
 * size bytes) for addr into buf and return 1, or return 0 when the address
 * is unknown: the exports then print the address itself.
 */
typedef int (*stackmap_sym_fn)(void *arg, uint64_t addr, char *buf, size_t size);

/*
 * Text export, per stack:
 *   stack_id N [ref R, depth D]
 *     [i] symbol+0xoff/0xsize        (or "  [i] 0xADDR" without a symbol)
 *   (blank line)
 * sym may be NULL. 0, or -EIO if the stream failed.
 */
int stackmap_print_text(FILE *f, const struct stackmap_stack *s, size_t n, stackmap_sym_fn sym,
			void *arg);
int stackmap_write_text(const struct stackmap *map, FILE *f, stackmap_sym_fn sym, void *arg);

/* Stat export: "entries: E / MAX", "table_size: T", "successes: S",
 * "drops: D", "success_rate: P%", one per line. */
int stackmap_print_stat(FILE *f, const struct stackmap_stat *st);
int stackmap_write_stat(const struct stackmap *map, FILE *f);

/*
 * Binary export (FSMB version 2), in native byte order:
 *   header:    u32 magic 0x464D5342, u32 version 2, u32 nstacks, u32 0
 *   per stack: u32 stack_id, u32 nr, u32 ref_count, u32 0, nr x u64 address
 * ref_count saturates at UINT32_MAX. nstacks is the number of stacks
 * published when the export starts; those are the stacks written.
 */
#define STACKMAP_BIN_MAGIC   0x464D5342u
#define STACKMAP_BIN_VERSION 2
#define STACKMAP_BIN_HDR     16
#define STACKMAP_BIN_STACK   16
int stackmap_print_bin(FILE *f, const struct stackmap_stack *s, size_t n);
int stackmap_write_bin(const struct stackmap *map, FILE *f);

/*
 * Read a binary export of either byte order (told by the magic). The input
 * is untrusted: it is checked whole (every count, nr <= 64, ids != 0, the
 * exact total size) before fn sees any stack, in file order, converted to
 * this machine's order. Returns 0, -EBADMSG (malformed), -EPROTO (unknown
 * version), or fn's non-zero return. *ret_info (optional) tells what was
 * read, filled when the input validates.
 */
struct stackmap_bin_info {
	uint32_t version;
	uint32_t nstacks;
	int swapped;                 /* written on a machine of the other byte order */
};
int stackmap_read_bin(const void *data, size_t size, stackmap_iter_fn fn, void *arg,
		      struct stackmap_bin_info *ret_info);
/* The same into a malloc'ed array (free() it); -ENOMEM on top. */
int stackmap_load_bin(const void *data, size_t size, struct stackmap_stack **ret, size_t *ret_n,
		      struct stackmap_bin_info *ret_info);

/* Most referenced first; equal counts by id. For top N: sort, keep N. */
void stackmap_sort_by_ref(struct stackmap_stack *s, size_t n);

/*
 * JSON: {"stacks":[ one object per line: {"stack_id":N,"ref":R,"depth":D,
 * "frames":[{"addr":"0x..","sym":".."},...]} ]}; "sym" only where sym()
 * names the address. Addresses are strings (JSON numbers lose 64-bit
 * precision in most readers).
 */
int stackmap_print_json(FILE *f, const struct stackmap_stack *s, size_t n, stackmap_sym_fn sym,
			void *arg);

#endif
