/*
 * mix.h - the 64-bit finaliser of MurmurHash3 (fmix64): spreads every bit
 * of a key over the whole word. Shared by both sides: the allocation
 * tracer's tables (src/mem) and the tool's hash maps (src/util/u64map.h).
 */
#ifndef RINGTRACE_COMMON_MIX_H
#define RINGTRACE_COMMON_MIX_H

#include <stdint.h>

static inline uint64_t rt_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x;
}

#endif /* RINGTRACE_COMMON_MIX_H */
