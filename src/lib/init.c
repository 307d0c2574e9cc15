/*
 * init.c - libringtrace start-up: attach to the recorder's region.
 *
 * `ringtrace record` starts the program with RINGTRACE_SHM naming its
 * region: a path, or "fd:N" for an inherited descriptor. The library's constructor (which runs before those of the objects
 * that use it) maps and validates it, chooses rseq or the atomic fallback,
 * publishes the registry and turns the selected events on. Without the
 * variable nothing happens: every tracepoint stays one load and a branch.
 *
 * The variable is removed from the environment so that programs this one
 * executes are not attached to the same buffers; a forked child turns
 * tracing off in itself (its parent owns the session).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/registry.h"
#include "ringbuf/rb.h"

static void *region;
static uint64_t region_size;

static int rseq_usable(const struct ringtrace__rb *rb)
{
#if RINGTRACE__RSEQ
	const char *no = getenv("RINGTRACE_NO_RSEQ");
	if (no && *no && strcmp(no, "0") != 0)
		return 0;
	/* The critical sections read the clock with rdtsc, and commit with
	 * one 16-byte store, which x86 makes atomic only on AVX processors
	 * (a reader could otherwise see the byte count before the event
	 * count). */
	if (!rb->clock_tsc || __rseq_size < 20)
		return 0;
	/* We run from a constructor, possibly before libgcc's own: its CPU
	 * model must be filled in first or every feature reads as absent. */
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx"))
		return 0;
	return ringtrace__rseq_cpu() >= 0;
#else
	(void)rb;
	return 0;
#endif
}

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
	reg_detach_after_fork();
	reg_unlock();
}

__attribute__((constructor(101))) static void ringtrace_init(void)
{
	const char *env = getenv("RINGTRACE_SHM");
	if (!env || !*env)
		return;
	char *path = strdup(env);
	unsetenv("RINGTRACE_SHM");
	if (!path)
		return;
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
			close((int)fd);
		}
	} else {
		r = rb_shm_map(path, &region, &region_size);
	}
	if (r == 0) {
		r = rb_view_open(region, region_size, &rb);
		if (r < 0) {
			munmap(region, region_size);
			region = NULL;
		}
	}
	if (r < 0) {
		reg_message("ringtrace: cannot attach to '%s': %s; tracing stays off", path, strerror(-r));
		free(path);
		return;
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
		region = NULL;
		return;
	}
	rb->use_rseq = rseq_usable(rb);
	rb->hdr->use_rseq = (uint32_t)rb->use_rseq;
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	reg_attach(rb);
}
