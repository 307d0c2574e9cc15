/*
 * init.c - libringtrace start-up.
 *
 * Every program publishes its control block and starts its control thread
 * (agent.c), so that `ringtrace` can switch tracing on later. When started
 * by `ringtrace record`, RINGTRACE_SHM names the recorder's region (a path,
 * or "fd:N" for an inherited descriptor): the constructor (which runs
 * before those of the objects that use the library) maps and validates it
 * and tracing starts at once. Otherwise every tracepoint stays one load and
 * a branch until somebody turns it on.
 *
 * The variable is removed from the environment so that programs this one
 * executes are not attached to the same buffers; a forked child turns
 * tracing off in itself (its parent owns the session) and publishes its
 * own control block. Under `ringtrace record --follow-fork` (the
 * RINGTRACE_FOLLOW variable) the child traces into buffers of its own
 * instead, which the recorder reads through the control block; under
 * --follow-exec so does a program a followed one executes (agent.c,
 * follow_start()).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/agent.h"
#include "lib/probe.h"
#include "lib/rcu.h"
#include "lib/registry.h"
#include "lib/stack.h"
#include "ringbuf/rb.h"

static void atfork_prepare(void)
{
	reg_lock();
}

static void atfork_parent(void)
{
	reg_unlock();
}

static void atfork_child(void)
{
	ringtrace__tls.tid = 0;
	ringtrace__tls.nest = 0;
	rcu_after_fork_child();
	probe_forget_thread();
	reg_detach_after_fork();
	reg_unlock();
	agent_after_fork_child();
}

/* The recorder's region, or NULL. */
static struct ringtrace__rb *attach_recorder(void **ret_mem, uint64_t *ret_size, int *ret_fd)
{
	const char *env = getenv("RINGTRACE_SHM");
	if (!env || !*env)
		return NULL;
	char *path = strdup(env);
	unsetenv("RINGTRACE_SHM");
	if (!path)
		return NULL;
	void *region = NULL;
	uint64_t region_size = 0;
	struct ringtrace__rb *rb = NULL;
	int r;
	if (!strncmp(path, "fd:", 3)) {
		/* An inherited descriptor of an already unlinked file: nothing
		 * is left in the file system whatever happens to the recorder. */
		char *end;
		long fd = strtol(path + 3, &end, 10);
		if (*end || fd < 0 || fd > INT32_MAX) {
			r = -EINVAL;
		} else {
			r = rb_shm_map_fd((int)fd, &region, &region_size);
			/* Kept (close-on-exec): `ringtrace stat` maps it too. */
			fcntl((int)fd, F_SETFD, FD_CLOEXEC);
			*ret_fd = (int)fd;
		}
	} else {
		r = rb_shm_map(path, &region, &region_size);
	}
	if (r == 0) {
		r = rb_view_open(region, region_size, &rb);
		if (r < 0)
			munmap(region, region_size);
	}
	if (r < 0) {
		if (*ret_fd >= 0)
			close(*ret_fd);
		*ret_fd = -1;
		/* A program exec'ed under --follow-exec may inherit the variable
		 * through a shell that kept it, without the descriptor (close on
		 * exec): it is followed in buffers of its own, quietly. */
		if (!agent_follow_exec())
			reg_message("ringtrace: cannot attach to '%s': %s; tracing stays off", path, strerror(-r));
		free(path);
		return NULL;
	}
	free(path);
	/* One process per region: a program run through an uninstrumented
	 * wrapper (sh -c, make) may pass the variable to several. The first
	 * to attach owns the region; the others stay off. */
	uint32_t none = 0;
	if (!__atomic_compare_exchange_n(&rb->hdr->attached_pid, &none, (uint32_t)getpid(), 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		munmap(region, region_size);
		rb_view_free(rb);
		if (*ret_fd >= 0)
			close(*ret_fd);
		*ret_fd = -1;
		return NULL;
	}
	rb_set_rseq(rb, agent_rseq_usable(rb));
	rb->hdr->use_rseq = (uint32_t)rb->use_rseq;
	(void)stack_attach(rb);
	*ret_mem = region;
	*ret_size = region_size;
	return rb;
}

__attribute__((constructor(101))) static void ringtrace_init(void)
{
	ringtrace__tls.busy++; /* our allocations are not the program's */
	rcu_init();
	void *mem = NULL;
	uint64_t size = 0;
	int fd = -1;
	agent_follow_init();
	struct ringtrace__rb *rb = attach_recorder(&mem, &size, &fd);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	agent_start(rb, mem, size, fd);
	ringtrace__tls.busy--;
}

__attribute__((destructor(101))) static void ringtrace_fini(void)
{
	agent_stop();
}
