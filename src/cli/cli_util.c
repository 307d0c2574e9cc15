/*
 * cli_util.c - small helpers shared by the subcommands.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

int cli_parse_size(const char *s, uint64_t *ret)
{
	char *end;
	if (!isdigit((unsigned char)*s))
		return -EINVAL; /* strtoull would take a sign or blanks */
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	uint64_t mul = 1;
	switch (toupper((unsigned char)*end)) {
	case 0:
		break;
	case 'K':
		mul = 1024;
		end++;
		break;
	case 'M':
		mul = 1024 * 1024;
		end++;
		break;
	case 'G':
		mul = 1024ull * 1024 * 1024;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > UINT64_MAX / mul)
		return -EINVAL;
	*ret = v * mul;
	return 0;
}

int cli_parse_sample(const char *cmd, const char *v, uint64_t *ret)
{
	/* The library's bound (src/mem/memsample.c): a larger mean samples
	 * nothing a program allocates. */
	uint64_t n;
	if (cli_parse_size(v, &n) < 0 || n == 0 || n > (UINT64_C(1) << 40)) {
		fprintf(stderr, "%s: bad --sample '%s' (mean bytes between samples, 1 to 1024G, such as 512K)\n", cmd,
			v);
		return -1;
	}
	*ret = n;
	return 0;
}

int cli_parse_seed(const char *cmd, const char *v, uint64_t *ret)
{
	int hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
	const char *d = hex ? v + 2 : v;
	char *end;
	errno = 0;
	unsigned long long n = isxdigit((unsigned char)*d) ? strtoull(d, &end, hex ? 16 : 10) : 0;
	if (!isxdigit((unsigned char)*d) || errno || *end) {
		fprintf(stderr, "%s: bad --sample-seed '%s' (a 64-bit number, decimal or 0x hexadecimal)\n", cmd, v);
		return -1;
	}
	*ret = n;
	return 0;
}

void cli_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20 || *c == 0x7f)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}

const char *cli_bytes(uint64_t v, char *buf, size_t len)
{
	if (v >= (1ull << 30) && v % (1ull << 30) == 0)
		snprintf(buf, len, "%llu GiB", (unsigned long long)(v >> 30));
	else if (v >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", (double)v / (1 << 20));
	else if (v >= 1024)
		snprintf(buf, len, "%.1f KiB", (double)v / 1024);
	else
		snprintf(buf, len, "%llu B", (unsigned long long)v);
	return buf;
}
