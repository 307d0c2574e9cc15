/*
 * ctl_common.c - what both the program and the controllers check.
 */
#include <errno.h>
#include <string.h>

#include "ctl/ctl.h"

int ctl_pattern_valid(const char *pat)
{
	size_t n = strlen(pat);
	if (n == 0 || n > 255)
		return -EINVAL;
	int colon = 0, depth = 0;
	for (const char *c = pat; *c; c++) {
		unsigned char u = (unsigned char)*c;
		if (u <= ' ' || u >= 0x7f)
			return -EINVAL;
		if (*c == ':')
			colon++;
		else if (*c == '[')
			depth++;
		else if (*c == ']' && depth > 0)
			depth--;
		else if (*c == '\\' && !c[1])
			return -EINVAL;
	}
	/* "provider:name" or a lone glob that may cover the colon ("*"). */
	if (depth != 0 || colon > 1 || (colon == 0 && !strchr(pat, '*')))
		return -EINVAL;
	return 0;
}
