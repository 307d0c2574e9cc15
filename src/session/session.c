/*
 * session.c - what every session shares: its options (none for a region
 * written out), the log callback the library speaks through, and a
 * session's start and end (sess_init(), sess_cleanup(), which frees
 * whatever the mode opened). Called by every file of src/session/, from
 * the thread that owns the struct sess; the log callback from any.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "session/session_int.h"

const struct sess_opts sess_no_opts = { .sz = sizeof(struct sess_opts) };

static sess_log_fn log_fn;

sess_log_fn sess_set_log(sess_log_fn fn)
{
	/* Set before a session starts, read by its threads: they are
	 * started after it (pthread_create orders it). */
	sess_log_fn old = log_fn;
	log_fn = fn;
	return old;
}

void sess_log(enum sess_src src, const char *fmt, ...)
{
	if (!log_fn)
		return;
	char buf[1024], *line = buf;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* A longer line (a program's own message, a long path) whole. */
	if ((size_t)n >= sizeof(buf) && (line = malloc((size_t)n + 1))) {
		va_start(ap, fmt);
		vsnprintf(line, (size_t)n + 1, fmt, ap);
		va_end(ap);
	} else if (!line) {
		line = buf;
		n = (int)sizeof(buf) - 1;
	}
	if (n && line[n - 1] == '\n')
		line[n - 1] = 0;
	log_fn(src, line);
	if (line != buf)
		free(line);
}

void sess_init(struct sess *r, const struct sess_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->o = o ? o : &sess_no_opts;
	r->outdir_opt = r->o->outdir;
	r->out_flags = r->o->outdir_flags;
	r->nsb = r->o->nsb;
	r->mode = r->o->mode;
	r->run.shm_fd = -1;
	r->run.agg_fd = -1;
}

int sess_stopped(const struct sess *r)
{
	return r->o->stop && *r->o->stop;
}

uint64_t sess_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void sess_cleanup(struct sess *r)
{
	if (r->fds) {
		for (uint32_t c = 0; r->rb && c < r->rb->ncpus; c++)
			if (r->fds[c] >= 0)
				close(r->fds[c]);
		free(r->fds);
	}
	clk_watch_free(&r->watch);
	free(r->unwritten);
	free(r->disc_written);
	free(r->wrote);
	free(r->dio);
	free(r->dio_buf);
	if (r->outdir)
		disk_room_release(&r->room, r->odfd);
	rb_reader_free(r->reader);
	if (r->rb)
		rb_view_free(r->rb);
	if (r->mem)
		munmap(r->mem, r->mem_size);
	if (r->run.shm_path) {
		unlink(r->run.shm_path);
		free(r->run.shm_path);
	}
	if (r->run.shm_fd >= 0)
		close(r->run.shm_fd);
	for (size_t i = 0; i < r->nevents; i++) {
		free(r->events[i].provider);
		free(r->events[i].name);
		free(r->events[i].signature);
		free(r->events[i].fields);
	}
	free(r->events);
	free(r->threads);
	if (r->outdir)
		close(r->odfd);
	free(r->outdir);
	ctl_close(&r->live.ctl);
}

