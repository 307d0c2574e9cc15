/*
 * stack_live.c - see stack_live.h.
 *
 * The map is read in place, through the program's region mapped from
 * /proc/PID/fd/N (ctl_ring_open validates the region; stackmap_open_view and
 * maplog_copy validate the stack area): the program may be hostile or may
 * exit meanwhile, the mapping stays valid either way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/stack_live.h"
#include "ctl/ctl_client.h"
#include "stackmap/maplog.h"

#define PFX "ringtrace stackmap: "

struct live {
	struct ctl_handle h;
	struct ctl_ring ring;
	struct stackmap map;
	void *log;
	size_t log_size;
};

static int live_open(const char *target, int mode, struct live *l)
{
	char err[512];
	pid_t pid;
	if (ctl_resolve(target, &pid, err, sizeof(err)) < 0 || ctl_open(pid, &l->h, mode, err, sizeof(err)) < 0) {
		fprintf(stderr, PFX "%s\n", err);
		return -1;
	}
	if (l->h.b->session == CTL_SESSION_NONE) {
		fprintf(stderr, PFX "%s (pid %d) has no buffers, so no stack map: tracing was never switched on\n",
			target, (int)pid);
		ctl_close(&l->h);
		return -1;
	}
	if (ctl_ring_open(&l->h, &l->ring, err, sizeof(err)) < 0) {
		fprintf(stderr, PFX "%s\n", err);
		ctl_close(&l->h);
		return -1;
	}
	void *mem;
	size_t size;
	int r = rb_stack_area(l->ring.rb, &l->log, &l->log_size, &mem, &size);
	if (r == 0)
		r = stackmap_open_view(mem, size, &l->map);
	if (r < 0) {
		fprintf(stderr, PFX "pid %d: %s\n", (int)pid,
			r == -ENOENT ? "its buffers have no stack map (started by an older ringtrace?)"
				     : "its stack map is damaged");
		ctl_ring_close(&l->ring);
		ctl_close(&l->h);
		return -1;
	}
	return 0;
}

static void live_close(struct live *l)
{
	ctl_ring_close(&l->ring);
	ctl_close(&l->h);
}

int stack_live_load(const char *target, struct stack_files *ret)
{
	struct live l;
	if (live_open(target, CTL_OPEN_READ, &l) < 0)
		return -1;
	struct rt_map *maps = NULL;
	size_t nmaps = 0;
	if (maplog_copy(l.log, l.log_size, &maps, &nmaps) < 0)
		fprintf(stderr, PFX "pid %d: its list of loaded objects is damaged: frames print as addresses\n",
			(int)l.h.pid);
	int r = stack_files_from_map(&l.map, maps, nmaps, ret);
	free(maps);
	if (r < 0)
		fprintf(stderr, PFX "pid %d: cannot read its stack map: %s\n", (int)l.h.pid, strerror(-r));
	live_close(&l);
	return r < 0 ? -1 : 0;
}

int stack_live_reset(const char *target)
{
	struct live l;
	if (live_open(target, CTL_OPEN_WRITE, &l) < 0)
		return -1;
	/* Ids already in the buffers would name other stacks after a reset:
	 * only while tracing is off. A switch-on racing with us is safe
	 * (inserts fail during the reset, their events carry full stacks). */
	int on = __atomic_load_n(&l.h.b->tracing, __ATOMIC_ACQUIRE) != 0;
	int r = stackmap_reset(&l.map, on);
	if (r == -EBUSY)
		fprintf(stderr, PFX "pid %d: %s (EBUSY)\n", (int)l.h.pid,
			on ? "tracing is on: switch it off first ('ringtrace off')"
			   : "another reset of its stack map is running");
	else if (r < 0)
		fprintf(stderr, PFX "pid %d: reset failed: %s\n", (int)l.h.pid, strerror(-r));
	live_close(&l);
	return r < 0 ? -1 : 0;
}
