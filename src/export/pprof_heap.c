/*
 * pprof_heap.c - the allocation profile of pprof.h: Go's heap-profile
 * conventions (sample types, period) over per-stack totals.
 *
 * Called once per conversion by `ringtrace convert --to pprof` with the
 * totals of an allocation trace, whoever computed them (a replay of the
 * trace's mem:* events); it knows nothing of traces. Cost: one
 * pprof_add_sample() per stack.
 */
#include <errno.h>

#include "export/pprof.h"

int pprof_heap_profile(struct pprof *p, const struct pprof_heap_stack *v, size_t n, int64_t period)
{
	static const char *const types[][2] = {
		{ "alloc_objects", "count" },
		{ "alloc_space", "bytes" },
		{ "inuse_objects", "count" },
		{ "inuse_space", "bytes" },
	};
	if (!p || (n && !v) || period < 1)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		int r = pprof_add_sample_type(p, types[i][0], types[i][1]);
		if (r < 0)
			return r;
		if ((size_t)r != i)
			return -EBUSY; /* types were there before: the values would not line up */
	}
	int r = pprof_set_period(p, "space", "bytes", period);
	for (size_t i = 0; !r && i < n; i++) {
		int64_t vals[4] = { v[i].alloc_objects, v[i].alloc_bytes, v[i].inuse_objects, v[i].inuse_bytes };
		r = pprof_add_sample(p, v[i].addrs, v[i].n, vals, NULL, 0);
	}
	return r;
}
