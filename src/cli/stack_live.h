/*
 * stack_live.h - the stack map of a running program, for
 * `ringtrace stackmap PID` and `ringtrace stackmap --reset PID`.
 *
 * The map lives in the program's ring-buffer region (a memfd the command
 * maps through /proc/PID/fd/N): it exists while the program has buffers
 * (tracing on, or off with its buffers kept).
 */
#ifndef RINGTRACE_STACK_LIVE_H
#define RINGTRACE_STACK_LIVE_H

#include "stackmap/stack_files.h"

/*
 * Copy the stack map and the loaded-object list of the program named by
 * `target` (pid, or name when one process matches). Prints its own
 * one-line error (prefixed "ringtrace stackmap: ") and returns -1 on
 * failure; 0 on success, then free with stack_files_free().
 */
int stack_live_load(const char *target, struct stack_files *ret);

/*
 * Empty the program's stack map. Refused (printed, -1) while tracing is
 * on or while another reset runs (EBUSY). 0 on success.
 */
int stack_live_reset(const char *target);

#endif /* RINGTRACE_STACK_LIVE_H */
