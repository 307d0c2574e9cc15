/*
 * trigger_parse.c - the trigger's syntax (see trigger_parse.h). Called by
 * the command on its arguments and by the runtime's control thread when a
 * trigger is armed; a few times per session.
 */
#include "common/trigger_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_op(const char *s, enum trigger_op *op)
{
	static const struct { const char *s; enum trigger_op op; } ops[] = {
		{ "==", TRIG_OP_EQ }, { "!=", TRIG_OP_NE }, { "<=", TRIG_OP_LE },
		{ ">=", TRIG_OP_GE }, { "<", TRIG_OP_LT },  { ">", TRIG_OP_GT },
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(s, ops[i].s)) {
			*op = ops[i].op;
			return 0;
		}
	return -EINVAL;
}

int trigger_parse(const char *text, struct trigger_spec *t, char *err, size_t errlen)
{
	char buf[TRIGGER_TEXT], pat[TRIGGER_TEXT], kw[8], field[SIG_NAME_MAX], op[4], val[32], extra[2];
	memset(t, 0, sizeof(*t));
	if (strlen(text) >= sizeof(buf)) {
		snprintf(err, errlen, "trigger too long");
		return -EINVAL;
	}
	snprintf(t->text, sizeof(t->text), "%s", text);
	int n = sscanf(text, "%255s %7s %63s %3s %31s %1s", pat, kw, field, op, val, extra);
	if (n != 1 && n != 5) {
		snprintf(err, errlen, "trigger '%s': want 'provider:event' or 'provider:event if FIELD OP VALUE'", text);
		return -EINVAL;
	}
	if (!strchr(pat, ':') || strlen(pat) < 3) {
		snprintf(err, errlen, "trigger '%s': the event is provider:name (globs allowed)", text);
		return -EINVAL;
	}
	snprintf(t->pattern, sizeof(t->pattern), "%s", pat);
	if (n == 1)
		return 0;
	char *end;
	errno = 0;
	long long v = strtoll(val, &end, 0);
	if (strcmp(kw, "if") || parse_op(op, &t->op) < 0 || *end || end == val || errno) {
		snprintf(err, errlen, "trigger '%s': the condition is 'if FIELD OP VALUE', OP one of == != < <= > >=, VALUE an integer",
			 text);
		return -EINVAL;
	}
	snprintf(t->field, sizeof(t->field), "%s", field);
	t->value = (int64_t)v;
	return 0;
}

int trigger_check(const char *text, char *err, size_t errlen)
{
	struct trigger_spec t;
	return trigger_parse(text, &t, err, errlen);
}
