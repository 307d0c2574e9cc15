/*
 * rb_block.h - blocking mode of the writer's slow path (rb_block.c): the
 * wait for room in a full buffer, and the consumer's wake. Internal to
 * src/ringbuf.
 */
#ifndef RINGTRACE_RB_BLOCK_H
#define RINGTRACE_RB_BLOCK_H

#include <stdint.h>

#include <ringtrace/ringtrace-abi.h>

/* One reservation's wait, zeroed before its first attempt. */
struct rb_block {
	uint64_t start;              /* CLOCK_MONOTONIC of the first wait, 0: none */
	struct ringtrace__rb_percpu *cpu; /* where it started (its counters) */
	int timed_out;
};

/* Whether a writer that found pc's buffer full may wait for room (the
 * cases where it never does are listed in rb_block.c). */
int rb_block_may_wait(const struct ringtrace__rb *rb, const struct ringtrace__rb_percpu *pc);

/*
 * One round of the wait for room in slot(next) of pc, whose state word the
 * caller loaded as `st`: sleeps a slice at most. 0: try the reservation
 * again; -ETIMEDOUT: drop the event (the timeout ran out).
 */
int rb_block_wait(struct ringtrace__rb *rb, struct ringtrace__rb_percpu *pc, uint64_t st, uint64_t next,
		  struct rb_block *b);

/* After the reservation, done or dropped: count the wait, if any. */
void rb_block_done(struct ringtrace__rb *rb, struct rb_block *b);

/* The consumer handed a sub-buffer of this CPU back: wake its waiters. */
void rb_block_wake(struct ringtrace__rb_cpu *ctl);

/* Wake the consumer if it sleeps (rb_write.c). */
void rb_wake_reader(struct ringtrace__rb *rb);

#endif
