/*
 * registry.h - the event registry of the traced process (internal).
 */
#ifndef RINGTRACE_REGISTRY_H
#define RINGTRACE_REGISTRY_H

#include <stddef.h>

#include <ringtrace/ringtrace-abi.h>

struct ctl_block;

/* Publish every known event (and every later one) into the control block. */
void reg_set_ctl(struct ctl_block *ctl);
/* Make `rb` the region events go to (NULL: none, tracing off); a region
 * with an empty registry log gets every known event. Does not turn
 * tracing on. */
void reg_attach(struct ringtrace__rb *rb);
/* The global switch: descriptors enabled (selected events) or all off. */
void reg_tracing(int on);
/* The recorder's -e patterns (NUL-separated, empty list = all): only
 * these events are selected. */
void reg_select_patterns(const char *patterns, size_t size);
/* Add a selection rule; returns how many events the pattern matches now. */
int reg_rule(const char *pattern, int on);
/* In a forked child: tracing off, without taking locks. */
void reg_detach_after_fork(void);
/* Mark again every descriptor for the current snapshot trigger
 * (trigger.h): clears RINGTRACE__EVF_TRIGGER, then trigger_match(). */
void reg_retrigger(void);
/* Whether an event declared with a stack is registered. */
int reg_has_stack_events(void);
void reg_lock(void);
void reg_unlock(void);

/* Send one line to the log callback, the control block and, when
 * attached, to the recorder. */
void reg_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
