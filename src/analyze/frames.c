/*
 * frames.c - the tracer's frames trimmed from the stacks of an allocation
 * trace, and the symboliser of a trace's objects (frames.h). Called by the
 * report (src/cli/cmd_report.c, report_html.c) and the converters
 * (src/cli/cmd_convert.c, convert_sqlite.c) once per stack or call site
 * they print, after the replay.
 */
#include <string.h>

#include "analyze/frames.h"
#include "stackmap/stack_files.h"
#include "sym/symbolize.h"

#define TRACER_LIB "libringtrace-malloc.so"

struct sym_ctx *frames_symbolizer(const struct stack_files *sf, const char *debug_dir)
{
	struct sym_ctx *ctx = NULL;
	if (!sf->nmaps || sym_ctx_new(debug_dir, &ctx) < 0)
		return NULL;
	for (size_t i = 0; i < sf->nmaps; i++) {
		const struct rt_map *m = &sf->maps[i];
		/* An object that cannot be loaded still names its
		 * addresses (sym_add_mapping keeps it): nothing to do. */
		if (m->start < m->end)
			(void)sym_add_mapping(ctx, m->path, m->build_id[0] ? m->build_id : NULL, m->bias, m->start,
					      m->end);
	}
	return ctx;
}

int frames_tracer_object(const char *object)
{
	if (!object)
		return 0;
	const char *base = strrchr(object, '/');
	base = base ? base + 1 : object;
	/* libringtrace-malloc.so, and its versioned names. */
	return !strncmp(base, TRACER_LIB, strlen(TRACER_LIB));
}

int frames_tracer_frame(struct sym_ctx *ctx, uint64_t ip)
{
	struct sym_result s;
	/* A return address: its call is at ip - 1. */
	if (!ctx || !ip || sym_resolve(ctx, ip - 1, &s) < 0)
		return 0;
	return frames_tracer_object(s.object);
}

uint32_t frames_first(struct sym_ctx *ctx, const uint64_t *ips, uint32_t depth)
{
	uint32_t first = 0;
	for (uint32_t i = 0; i < depth && i < FRAMES_OWN_MAX; i++)
		if (frames_tracer_frame(ctx, ips[i]))
			first = i + 1;
	return first < depth ? first : depth ? depth - 1 : 0;
}
