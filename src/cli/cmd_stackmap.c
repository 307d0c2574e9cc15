/*
 * cmd_stackmap.c - `ringtrace stackmap --from-bin FILE`: read a stack map
 * exported in the binary layout (either byte order) and print it as text,
 * JSON, the top N stacks by reference count, folded stacks for
 * flame-graph tools, or write it back in this machine's byte order.
 *
 * The file is untrusted (src/stackmap/stackmap_export.c validates it); the
 * binary layout has no mappings, so frames are printed as addresses.
 * Stacks of running programs and of traces are not captured yet: those
 * forms of the command say so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "stackmap/stackmap.h"

#define PFX "ringtrace stackmap: "
#define MAX_FILE (1u << 30)

static void usage(FILE *f)
{
	fprintf(f, "usage: ringtrace stackmap --from-bin FILE [--json | --stat | --folded | --top N | --bin OUT]\n"
		   "\n"
		   "  --from-bin FILE  a stack map in the binary layout (magic 0x464D5342, version 2),\n"
		   "                   written on a machine of either byte order\n"
		   "  (no option)      text: 'stack_id N [ref R, depth D]', one line per frame\n"
		   "  --json           JSON\n"
		   "  --stat           number of stacks and references\n"
		   "  --folded         'frame;frame;frame count' lines (outermost frame first)\n"
		   "  --top N          the N most referenced stacks, as text (or JSON with --json)\n"
		   "  --bin OUT        write the map again, in this machine's byte order\n");
}

static int read_file(const char *path, char **ret, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, PFX "cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_FILE) {
		fprintf(stderr, PFX "'%s' is not a regular file of at most 1 GiB\n", path);
		fclose(f);
		return -1;
	}
	size_t len = (size_t)st.st_size;
	char *buf = malloc(len ? len : 1);
	if (!buf || fread(buf, 1, len, f) != len) {
		fprintf(stderr, PFX "cannot read '%s'\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	*ret = buf;
	*ret_len = len;
	return 0;
}

static void print_folded(FILE *f, const struct stackmap_stack *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i].depth == 0)
			continue;
		/* ips[0] is the innermost frame; flame graphs read root first. */
		for (uint32_t k = s[i].depth; k-- > 0;)
			fprintf(f, "0x%llx%s", (unsigned long long)s[i].ips[k], k ? ";" : "");
		fprintf(f, " %llu\n", (unsigned long long)s[i].ref);
	}
}

int cmd_stackmap(int argc, char **argv)
{
	const char *from = NULL, *bin_out = NULL, *target = NULL;
	int json = 0, stat = 0, folded = 0;
	long top = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--stat")) {
			stat = 1;
		} else if (!strcmp(a, "--folded")) {
			folded = 1;
		} else if (!strcmp(a, "--from-bin") || !strcmp(a, "--bin") || !strcmp(a, "--top")) {
			if (!v) {
				fprintf(stderr, PFX "option '%s' needs a value\n", a);
				return 2;
			}
			i++;
			if (!strcmp(a, "--from-bin")) {
				from = v;
			} else if (!strcmp(a, "--bin")) {
				bin_out = v;
			} else {
				char *end;
				top = strtol(v, &end, 10);
				if (*end || end == v || top < 1 || top > 1000000) {
					fprintf(stderr, PFX "bad --top '%s' (a number from 1)\n", v);
					return 2;
				}
			}
		} else if (a[0] == '-') {
			fprintf(stderr, PFX "unknown option '%s' (try --help)\n", a);
			return 2;
		} else if (!target) {
			target = a;
		} else {
			fprintf(stderr, PFX "unexpected argument '%s' (try --help)\n", a);
			return 2;
		}
	}
	if (json + stat + folded + (bin_out != NULL) > 1) {
		fprintf(stderr, PFX "--json, --stat, --folded and --bin exclude each other\n");
		return 2;
	}
	if (target && !from) {
		fprintf(stderr,
			PFX "'%s': stacks are not yet captured in running programs or traces; only --from-bin FILE is read\n",
			target);
		return 1;
	}
	if (!from || target) {
		usage(stderr);
		return 2;
	}

	char *data;
	size_t len;
	if (read_file(from, &data, &len) < 0)
		return 1;
	struct stackmap_stack *s = NULL;
	size_t n = 0;
	struct stackmap_bin_info info;
	int r = stackmap_load_bin(data, len, &s, &n, &info);
	free(data);
	if (r < 0) {
		fprintf(stderr, PFX "'%s' is not a valid stack map file: %s\n", from,
			r == -EPROTO ? "unknown version" : r == -ENOMEM ? "out of memory" : "damaged or truncated");
		return 1;
	}
	int status = 0;
	if (top > 0) {
		stackmap_sort_by_ref(s, n);
		if ((size_t)top < n)
			n = (size_t)top;
	}
	if (stat) {
		uint64_t refs = 0;
		for (size_t i = 0; i < n; i++)
			refs += s[i].ref;
		printf("entries: %zu\nreferences: %llu\nbyte_order: %s\n", n, (unsigned long long)refs,
		       info.swapped ? "swapped (written on a machine of the other byte order)" : "native");
	} else if (folded) {
		print_folded(stdout, s, n);
	} else if (json) {
		r = stackmap_print_json(stdout, s, n, NULL, NULL);
	} else if (bin_out) {
		FILE *f = fopen(bin_out, "wb");
		if (!f) {
			fprintf(stderr, PFX "cannot create '%s': %s\n", bin_out, strerror(errno));
			status = 1;
		} else {
			r = stackmap_print_bin(f, s, n);
			if (fclose(f) != 0 && r == 0)
				r = -EIO;
			if (r < 0) {
				fprintf(stderr, PFX "cannot write '%s'\n", bin_out);
				status = 1;
			}
		}
	} else {
		r = stackmap_print_text(stdout, s, n, NULL, NULL);
	}
	if (fflush(stdout) != 0 || ferror(stdout) || r < 0) {
		if (!status)
			fprintf(stderr, PFX "cannot write the output\n");
		status = 1;
	}
	free(s);
	return status;
}
