/*
 * ctl_common.c - what both the program and the controllers check.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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

uint64_t ctl_proc_start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* The name may hold spaces and parentheses: count from the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	for (int field = 2; field < 22 && *p; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

long ctl_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *timeout)
{
	return syscall(SYS_futex, uaddr, op, val, timeout, NULL, 0);
}
