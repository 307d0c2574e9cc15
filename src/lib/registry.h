/*
 * registry.h - the event registry of the traced process (internal).
 */
#ifndef RINGTRACE_REGISTRY_H
#define RINGTRACE_REGISTRY_H

#include <ringtrace/ringtrace-abi.h>

/* Publish every known event into the region and turn tracing on. */
void reg_attach(struct ringtrace__rb *rb);
/* In a forked child: tracing off, without taking locks. */
void reg_detach_after_fork(void);
void reg_lock(void);
void reg_unlock(void);

/* Send one line to the log callback and, when attached, to the recorder. */
void reg_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
