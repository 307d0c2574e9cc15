/*
 * stack.h - stacks captured inside the traced program, for events that
 * carry one (ringtrace-abi.h, ringtrace__rb.stacks).
 *
 * A region with a stack area (rb.h) holds the stack map and the log of
 * loaded objects. stack_attach() opens them for a region the library is
 * about to publish; from then on a probe's slow path (probe.c) calls
 * rb_stack_capture() to turn the calling thread's stack into an id, and
 * the inline path of an event whose suffix carries a captured stack calls
 * the ABI's ringtrace__reserve_stack() (here), which captures in its own
 * frame. stack_log_maps() appends the objects loaded since the last
 * call to the log (at attach, and after dlopen: the registry calls it when
 * an object with tracepoints appears, the control thread when the loader's
 * counters moved).
 *
 * Who calls: stack_attach/stack_detach/stack_log_maps from normal code
 * (constructor, control thread, a dlopen's constructor), never from a
 * probe. rb_stack_capture from any probe, signal handlers included.
 */
#ifndef RINGTRACE_LIB_STACK_H
#define RINGTRACE_LIB_STACK_H

#include <ringtrace/ringtrace-abi.h>

/* 0 (also when the region has no stack area), or a negative errno: the
 * region is then used without stacks (ids read RINGTRACE__STACK_NONE). */
int stack_attach(struct ringtrace__rb *rb);

/* Load libunwind for captures (idempotent; not from a probe). Called
 * when stacks become possible: a region with `stacks`, or an event
 * declared with a stack registered while a region is attached. */
void stack_unwind_prepare(void);

/* Whether stacks can be captured (stack_unwind_prepare() ran): only then
 * is the log of loaded objects worth keeping up to date between dlopens. */
int stack_capturing(void);

/* Free what stack_attach() allocated; only once no probe can hold rb. */
void stack_detach(struct ringtrace__rb *rb);

/* Log the objects loaded since the last call, if the loader's counters
 * moved (or always, with force). */
void stack_log_maps(struct ringtrace__rb *rb, int force);

/*
 * The calling thread's stack as an id of the region's stack map (depth 0),
 * or RINGTRACE__STACK_NONE with the addresses in ips[STACKMAP_MAX_DEPTH]
 * and their number in *ret_depth (0 when nothing could be captured).
 * From probes only: the runtime's slow path (probe.c) calls it for the
 * stack suffix of an event (ringtrace__reserve_stack(), the inline path's,
 * captures with the same code in its own frame).
 */
uint32_t rb_stack_capture(struct ringtrace__rb *rb, uint64_t *ips, uint32_t *ret_depth);

#endif /* RINGTRACE_LIB_STACK_H */
