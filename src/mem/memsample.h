/*
 * memsample.h - Poisson byte sampling inside libringtrace-malloc.so
 * (memsample.c), called by the wrappers of memtrace.c on every allocation
 * and free when RINGTRACE_MEM_SAMPLE is set (docs/mem.md, "Sampling").
 *
 * The inline parts run on every call of the program: a thread-local
 * countdown (memsample_pick) and an 8 KiB filter of the sampled blocks
 * (memsample_maybe). The rest runs once per sample, per thread start or
 * at start-up. Nothing here locks, prints or allocates after
 * memsample_init().
 */
#ifndef RINGTRACE_MEM_MEMSAMPLE_H
#define RINGTRACE_MEM_MEMSAMPLE_H

#include <stddef.h>
#include <stdint.h>

enum memsample_mode {
	MEMSAMPLE_OFF = 0,          /* every call recorded (the variable unset) */
	MEMSAMPLE_ON,               /* a Poisson sample of the bytes allocated */
	MEMSAMPLE_BAD,              /* bad RINGTRACE_MEM_SAMPLE: nothing recorded */
};

/* Set once by memsample_init(), before main; read by every call. */
extern int memsample_mode;
extern uint64_t memsample_mean;       /* mean bytes between samples (MEMSAMPLE_ON) */
extern uint64_t memsample_seed;       /* the seed the threads' generators derive from */
extern int memsample_status;          /* 0, or EINVAL / ERANGE (MEMSAMPLE_BAD) */
extern int memsample_fixed_seed;      /* 1: RINGTRACE_MEM_SAMPLE_SEED gave the seed */
extern uint64_t memsample_capacity;   /* entries of the set of sampled blocks */

/* Bytes this thread may still allocate before its next sample; 0 in a
 * thread that has not drawn yet. */
extern __thread int64_t memsample_left __attribute__((tls_model("initial-exec")));

/* Read RINGTRACE_MEM_SAMPLE and RINGTRACE_MEM_SAMPLE_SEED and map the set
 * (from the library's constructor). Sets memsample_mode. */
void memsample_init(void);

/* The countdown crossed (or the thread's first allocation): 1 if this
 * allocation of SIZE bytes is sampled. Draws the next countdown. */
int memsample_slow(size_t size);

/* 1 if this allocation of SIZE bytes is sampled (MEMSAMPLE_ON only). */
static inline int memsample_pick(size_t size)
{
	int64_t left = memsample_left - (int64_t)size;
	if (__builtin_expect(size < INT64_MAX && left > 0, 1)) {
		memsample_left = left;
		return 0;
	}
	return memsample_slow(size);
}

/* The set of sampled blocks alive. A filter of 2^13 counters answers
 * most frees (of blocks never sampled) with one load; the table behind it
 * is fixed-size open addressing, claimed by CAS. */
#define MEMSAMPLE_FILTER_BITS 13
extern uint8_t memsample_filter[1u << MEMSAMPLE_FILTER_BITS];

static inline unsigned memsample_filter_of(uintptr_t p)
{
	return (unsigned)(((uint64_t)p * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - MEMSAMPLE_FILTER_BITS));
}

/* 0 when P is certainly not a sampled block alive. */
static inline int memsample_maybe(const void *p)
{
	/* Relaxed: the program orders a block's free after its allocation
	 * returned, and the count was raised before that (memsample_insert). */
	return __atomic_load_n(&memsample_filter[memsample_filter_of((uintptr_t)p)], __ATOMIC_RELAXED) != 0;
}

/* Remember sampled block P with INFO (the caller's: aggregate mode keeps
 * its row there). 0, or -ENOSPC when 64 probes found no room: the block
 * is then not remembered (counted by the caller). */
int memsample_insert(uintptr_t p, uint64_t info);

/* Forget P: 1 and its info if it was a sampled block alive, else 0. */
int memsample_take(uintptr_t p, uint64_t *ret_info);

/* Forget every sampled block (a forked child that counts into a block
 * of its own: the infos it inherited name the parent's rows). Only while
 * one thread runs. */
void memsample_forget_all(void);

/* The weight of a sample of SIZE bytes: 1 / (1 - exp(-SIZE / mean)), the
 * number of allocations of that size it stands for (MEMSAMPLE_ON). */
double memsample_weight(uint64_t size);

#endif /* RINGTRACE_MEM_MEMSAMPLE_H */
