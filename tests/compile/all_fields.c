/*
 * all_fields.c - first translation unit of the header compile test: every
 * field kind declared and fired (all_fields.h). Also compiled as C++ through
 * all_fields.cpp.
 */
#include "all_fields.h"

/* A second declaration site of its own, besides those shared with tu2. */
RINGTRACE_EVENT(cmp, tu1_only, RINGTRACE_STRING(msg));

void all_fields_tu1(uint32_t n, const char *s, const struct all_fields_req *r);

void all_fields_tu1(uint32_t n, const char *s, const struct all_fields_req *r)
{
	all_fields_fire(n, s, r);
	ringtrace_tracepoint(cmp, tu1_only, s);
}
