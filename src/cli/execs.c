/*
 * execs.c - the last image of a recorded program (execs.h): read from
 * DIR/execs, written by the recorder when the program executed others in
 * its own process. Called once per report, on a file of a few lines.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/execs.h"

int execs_last(const char *dir, char *out, size_t outlen, char *name, size_t namelen)
{
	char path[4096], line[4096], sub[4096] = "", comm[64] = "";
	snprintf(path, sizeof(path), "%s/execs", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : -1;
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		int pid;
		char c[64], s[4096];
		if (sscanf(line, "%d %63s %4095s", &pid, c, s) != 3)
			continue;
		snprintf(comm, sizeof(comm), "%s", c);
		snprintf(sub, sizeof(sub), "%s", s);
		n++;
	}
	fclose(f);
	if (!n)
		return 0;
	/* Only a directory below DIR's children: the file is data. */
	if (strncmp(sub, "children/", 9) || strstr(sub, "..") || strchr(sub + 9, '/'))
		return -1;
	if ((size_t)snprintf(out, outlen, "%s/%s", dir, sub) >= outlen)
		return -1;
	snprintf(name, namelen, "%s", comm);
	return 1;
}
