/*
 * trigger_parse.h - the syntax of a snapshot trigger, `provider:event
 * [if FIELD OP VALUE]` (docs/design.md section 8), shared by both sides:
 * the command checks what the user typed (`record --snapshot-on`, `ctl
 * snapshot-on`) before it goes into a control block, and the runtime
 * parses what it reads there before arming it (src/lib/trigger.c). The
 * runtime's matching and evaluation stay in src/lib: the command never
 * links them.
 *
 * No allocation, no output (errors go to the caller's buffer); any thread.
 */
#ifndef RINGTRACE_TRIGGER_PARSE_H
#define RINGTRACE_TRIGGER_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "common/sig.h"

#define TRIGGER_TEXT 256

enum trigger_op { TRIG_OP_NONE, TRIG_OP_EQ, TRIG_OP_NE, TRIG_OP_LT, TRIG_OP_LE, TRIG_OP_GT, TRIG_OP_GE };

struct trigger_spec {
	char text[TRIGGER_TEXT];     /* as given */
	char pattern[TRIGGER_TEXT];  /* provider:event, fnmatch globs */
	char field[SIG_NAME_MAX];    /* the condition's field (op != NONE) */
	enum trigger_op op;
	int64_t value;
};

/*
 * Parse "provider:event [if FIELD OP VALUE]" (OP one of == != < <= > >=,
 * VALUE a decimal or 0x integer) into *ret. 0, or -EINVAL with a message
 * in err.
 */
int trigger_parse(const char *text, struct trigger_spec *ret, char *err, size_t errlen);

/* Only check the syntax of a trigger (for the command line): 0 or -EINVAL
 * with a message. */
int trigger_check(const char *text, char *err, size_t errlen);

#endif /* RINGTRACE_TRIGGER_PARSE_H */
