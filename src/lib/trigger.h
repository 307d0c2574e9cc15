/*
 * trigger.h - snapshots triggered by an event: `--snapshot-on
 * provider:event [if FIELD OP VALUE]` with a minimum interval between two
 * triggered snapshots (docs/design.md section 8).
 *
 * The condition is evaluated in the probe of the event, at its commit
 * (ringtrace__trigger, called only for events the registry marked with
 * RINGTRACE__EVF_TRIGGER): it reads the field from the record just
 * written, and when it holds and the interval has passed it posts a
 * snapshot request, as ringtrace_snapshot() does. Nothing is written by
 * the program's thread; the watcher takes the snapshot.
 *
 * Configuration (trigger_set) and matching of events (trigger_match, from
 * the registry, under its lock) happen outside probes; the probe side
 * reads a table published with release stores and never locks.
 */
#ifndef RINGTRACE_LIB_TRIGGER_H
#define RINGTRACE_LIB_TRIGGER_H

#include <stdint.h>

#include <ringtrace/ringtrace-abi.h>

#include "common/trigger_parse.h"

/*
 * Parse "provider:event [if FIELD OP VALUE]" (trigger_parse.h) and arm
 * it with a minimum interval, in place of any earlier trigger; "" disarms. Events already registered are
 * matched at once (the caller holds no registry lock). 0, or -EINVAL with
 * a message in err.
 */
int trigger_set(const char *text, uint64_t min_interval_ms, char *err, size_t errlen);

/* Registry hook: does this new event (id, provider:name, signature) match
 * the trigger? Marks the descriptor's flags. Under the registry lock. */
void trigger_match(struct ringtrace_event_desc *d, uint32_t id, const char *provider, const char *name,
		   const char *signature);

/* The trigger's text, for the control block (empty when disarmed). */
const char *trigger_text(void);

#endif /* RINGTRACE_LIB_TRIGGER_H */
