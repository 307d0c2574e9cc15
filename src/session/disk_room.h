/*
 * disk_room.h - room kept on the trace's file system for the final
 * metadata, so that a recording that fills the disk still ends with
 * metadata saying what could not be written.
 *
 * Used by the trace writer (src/session/writer.c) only, from its main thread.
 */
#ifndef RINGTRACE_SESSION_DISK_ROOM_H
#define RINGTRACE_SESSION_DISK_ROOM_H

#include <stdint.h>

/* All zero: none held. */
struct disk_room {
	int held;
	int fd;                      /* when held */
	uint64_t size;               /* bytes allocated */
};

/*
 * Hold at least `bytes` in .room of the output directory `dfd` (hidden:
 * babeltrace2 and our readers skip dot files; created as every output file
 * is, util/outdir.h). Grows an existing hold; never shrinks it. 0, or a
 * negative errno (the disk may be full already: the caller goes on).
 */
int disk_room_hold(struct disk_room *room, int dfd, uint64_t bytes);

/* Give the room back (delete .room) just before it is needed. */
void disk_room_release(struct disk_room *room, int dfd);

#endif
