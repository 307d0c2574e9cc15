/*
 * all_fields_tu2.c - second translation unit with the same declarations
 * (all_fields.h): linked with all_fields.c, the static definitions must not
 * clash and each must add its own descriptor to the section.
 */
#include "all_fields.h"

void all_fields_tu2(uint32_t n, const char *s, const struct all_fields_req *r);

void all_fields_tu2(uint32_t n, const char *s, const struct all_fields_req *r)
{
	all_fields_fire(n + 1, s, r);
}
