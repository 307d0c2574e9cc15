/*
 * mem_agg_io.h - the allocation tracer's counters (aggregate mode,
 * src/mem/mem_agg.h) as the ringtrace command creates, saves and reads
 * them. Errors are printed by the create and save functions (they run in
 * `record`); the loaders return NULL and leave the message to the caller.
 */
#ifndef RINGTRACE_CLI_MEM_AGG_IO_H
#define RINGTRACE_CLI_MEM_AGG_IO_H

#include <stddef.h>

/* The file in a trace directory (in a directory of its own: every file
 * at the top but metadata is a stream to CTF readers). */
#define AGG_DIR  "mem"
#define AGG_FILE AGG_DIR "/aggregate.bin"
/* Keys in the block: 2^15 (4 MiB, touched only as keys come). */
#define AGG_BITS 15

/* A memfd holding a fresh block (close-on-exec; the recorder clears it for
 * the program), or -1. */
int agg_create(int by_stack);

/* Copy the block of FD into DIR/mem/aggregate.bin (DIR open as dfd, its
 * name for messages) and close FD: 0 (also when the program never
 * attached, said on stderr), -1 on error. */
int agg_save(int fd, int dfd, const char *dir);

/* DIR/mem/aggregate.bin as a validated block (malloc'ed, its full size),
 * or NULL with errno ENOENT (no such file, ERR empty) or another errno and
 * one line in ERR (not a regular file, damaged, unreadable). Never blocks:
 * a FIFO in its place is refused, not opened for reading. */
void *agg_load(const char *dir, size_t *ret_size, char *err, size_t errlen);

/* The block of a running program, mapped read-only (munmap it), found
 * among its descriptors; NULL and a message in ERR. */
void *agg_attach_pid(int pid, size_t *ret_size, char *err, size_t errlen);

#endif /* RINGTRACE_CLI_MEM_AGG_IO_H */
