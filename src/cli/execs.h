/*
 * execs.h - which trace of a recording is the program that finally ran.
 * A recorded program that executed others in its own process (a wrapper,
 * `sh -c 'exec PROG'`, env) leaves DIR/execs (src/session/follow.c): one
 * line per later image, "PID NAME SUBDIR", the last one the program that
 * finally ran. Used by `ringtrace report` and `ringtrace mem`.
 */
#ifndef RINGTRACE_CLI_EXECS_H
#define RINGTRACE_CLI_EXECS_H

#include <stddef.h>

/* 1 with DIR/SUBDIR of the last image in out and its name in name (out
 * and name may be the same size as the caller likes: cut to fit), 0 when
 * DIR has no execs (the trace is the program's), -1 when the list is
 * unreadable or names a directory outside DIR. */
int execs_last(const char *dir, char *out, size_t outlen, char *name, size_t namelen);

#endif
