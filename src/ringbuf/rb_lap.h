/*
 * rb_lap.h - position arithmetic shared by the writer's slow path and the
 * consumer (internal).
 *
 * A position is 42 bits and wraps; a slot's lap is position / buffer size.
 * Owner words carry the lap only as a 16-bit tag, good for telling laps
 * apart; byte counts are always derived from the full position, never from
 * the tag (a tag wraps long before the 42-bit position does).
 */
#ifndef RINGTRACE_RB_LAP_H
#define RINGTRACE_RB_LAP_H

#include "ringbuf/rb.h"

#define RB_OWN_ZEROING (UINT64_C(1) << 47)  /* owner st bit: being zeroed */

/* Tags are modulo 2^16, or modulo the laps in 2^42 positions if fewer. */
static inline uint32_t rb_lap_mask(const struct ringtrace__rb *rb)
{
	uint32_t bits = RINGTRACE__POS_BITS - rb->sb_shift - rb->nsb_shift;
	return bits >= 16 ? 0xffffu : (1u << bits) - 1;
}

static inline uint32_t rb_lap_tag(const struct ringtrace__rb *rb, uint64_t pos)
{
	return (uint32_t)(pos >> (rb->sb_shift + rb->nsb_shift)) & rb_lap_mask(rb);
}

static inline uint32_t rb_slot_of(const struct ringtrace__rb *rb, uint64_t pos)
{
	return (uint32_t)(pos >> rb->sb_shift) & ((1u << rb->nsb_shift) - 1);
}

/*
 * Bytes committed in the lap of slot s that holds position `pos` (any
 * position inside it): at most sb_size for a lap in progress, sb_size once
 * complete, more if the slot has moved on to a later lap. Cumulative counts
 * are compared modulo the bytes one slot sees in 2^42 positions.
 */
static inline uint64_t rb_lap_committed(const struct ringtrace__rb *rb,
					const struct ringtrace__rb_slot *s, uint64_t pos)
{
	/* Acquire pairs with each commit's release (the rseq store or the
	 * remote xadd): a complete count means complete bytes. */
	uint64_t b = __atomic_load_n(&s->local_bytes, __ATOMIC_ACQUIRE) +
		     __atomic_load_n(&s->remote_bytes, __ATOMIC_ACQUIRE);
	uint64_t m = (UINT64_C(1) << (RINGTRACE__POS_BITS - rb->nsb_shift)) - 1;
	uint64_t laps_before = (pos & RINGTRACE__POS_MASK) >> (rb->sb_shift + rb->nsb_shift);
	return (b - (laps_before << rb->sb_shift)) & m;
}

/* Cumulative user events committed in slot s (final once its lap is). */
static inline uint64_t rb_slot_events(const struct ringtrace__rb_slot *s)
{
	return __atomic_load_n(&s->local_events, __ATOMIC_ACQUIRE) +
	       __atomic_load_n(&s->remote_events, __ATOMIC_ACQUIRE);
}

/* Events of a lap whose owner word says it began at cumulative count `base`. */
static inline uint64_t rb_lap_events(const struct ringtrace__rb_slot *s, uint64_t owner)
{
	return (rb_slot_events(s) - RINGTRACE__OWN_BASE(owner)) & ((UINT64_C(1) << 46) - 1);
}

#endif
