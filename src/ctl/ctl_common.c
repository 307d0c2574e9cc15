/*
 * ctl_common.c - what both the program and the controllers check.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* The fields of /proc/PID/stat after the name, in buf; NULL if none. The
 * name may hold spaces and parentheses: the rest starts after the last ')'. */
static const char *proc_stat(pid_t pid, char *buf, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p + 2 : NULL;
}

uint64_t ctl_proc_start_time(pid_t pid)
{
	char buf[1024];
	const char *p = proc_stat(pid, buf, sizeof(buf));
	if (!p)
		return 0;
	/* p is at field 3 (state); start time is field 22. */
	for (int field = 3; field < 22 && *p; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

int ctl_proc_state(pid_t pid)
{
	char buf[1024];
	const char *p = proc_stat(pid, buf, sizeof(buf));
	return p ? *p : 0;
}

pid_t ctl_proc_ppid(pid_t pid)
{
	char buf[1024];
	const char *p = proc_stat(pid, buf, sizeof(buf));
	/* p is at field 3 (state, one letter), then the parent. */
	if (!p || !p[0] || p[1] != ' ')
		return -1;
	char *end;
	long v = strtol(p + 2, &end, 10);
	return end == p + 2 || *end != ' ' || v < 0 || v > INT_MAX ? -1 : (pid_t)v;
}

long ctl_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *timeout)
{
	return syscall(SYS_futex, uaddr, op, val, timeout, NULL, 0);
}
