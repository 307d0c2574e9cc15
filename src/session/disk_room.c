/*
 * disk_room.c - a hidden file holding disk blocks for the recorder's final
 * metadata (disk_room.h).
 *
 * When the stream files fill the file system, the metadata must still be
 * rewritten at the end: it names the event classes registered since the
 * last rewrite and records how many events could not be written. Writing
 * it goes through a temporary file and a rename, so it needs room for a
 * whole copy; this file holds that room until finish() frees it. One
 * allocation per metadata rewrite at most, on the recorder's thread.
 */
#include "session/disk_room.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "util/outdir.h"

#define ROOM_NAME ".room"

int disk_room_hold(struct disk_room *room, int dfd, uint64_t bytes)
{
	if (room->held && room->size >= bytes)
		return 0;
	if (!room->held) {
		int fd = outdir_create(dfd, ROOM_NAME, 0600);
		if (fd < 0)
			return fd;
		room->fd = fd;
		room->held = 1;
		room->size = 0;
	}
	/* posix_fallocate writes zeros where the file system cannot
	 * allocate: either way the blocks are ours. */
	int k = posix_fallocate(room->fd, 0, (off_t)bytes);
	if (k != 0)
		return -k;
	room->size = bytes;
	return 0;
}

void disk_room_release(struct disk_room *room, int dfd)
{
	if (!room->held)
		return;
	unlinkat(dfd, ROOM_NAME, 0);
	close(room->fd);
	room->held = 0;
	room->size = 0;
}
