/*
 * frames.h - the program's part of the stacks of an allocation trace, and
 * the symboliser of a trace's objects: one rule for every view of the
 * stacks (the text, JSON and HTML report, `convert --folded`, the SQLite
 * database's stacks.skip).
 *
 * A stack is captured inside the allocation tracer's wrapper
 * (libringtrace-malloc.so), so its first frames are the tracer's own; a
 * C++ operator new has the runtime's frame between two of ours (malloc
 * <- libstdc++'s operator new <- ours <- the program). The program's part
 * starts after the last of the tracer's frames among the first
 * FRAMES_OWN_MAX.
 *
 * Tool side, one thread (a sym_ctx is not thread-safe); a lookup per
 * frame looked at, at most FRAMES_OWN_MAX per stack.
 */
#ifndef RINGTRACE_ANALYZE_FRAMES_H
#define RINGTRACE_ANALYZE_FRAMES_H

#include <stdint.h>

struct stack_files;
struct sym_ctx;

/* How deep the tracer's frames may be found. */
#define FRAMES_OWN_MAX 8

/*
 * A symboliser holding the objects of the trace's maps (TRACE/stacks/maps,
 * read into sf), with the separate debug files of debug_dir (absolute, or
 * NULL). NULL when the trace has no objects or the symboliser cannot be
 * made: the callers then print addresses. Free with sym_ctx_free().
 */
struct sym_ctx *frames_symbolizer(const struct stack_files *sf, const char *debug_dir);

/* Is `object` (a path, or NULL) the allocation tracer's library? */
int frames_tracer_object(const char *object);

/* Is return address ip a frame of the allocation tracer? 0 when ctx is
 * NULL or ip unknown. */
int frames_tracer_frame(struct sym_ctx *ctx, uint64_t ip);

/*
 * Index of the first frame of ips[0..depth) that is the program's: after
 * the last of the tracer's among the first FRAMES_OWN_MAX; the last frame
 * when all of them are the tracer's (a stack is never trimmed to
 * nothing); 0 for an empty stack.
 */
uint32_t frames_first(struct sym_ctx *ctx, const uint64_t *ips, uint32_t depth);

#endif /* RINGTRACE_ANALYZE_FRAMES_H */
