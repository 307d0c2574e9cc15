/*
 * trigger.c - see trigger.h.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sig.h"
#include "lib/agent.h"
#include "lib/rcu.h"
#include "lib/registry.h"
#include "lib/trigger.h"

#define TRIG_EVENTS 16               /* events one pattern may match */

enum { OP_NONE, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };

struct trig_event {
	uint32_t id;
	uint32_t field;              /* index of the condition's field */
	size_t nfields;
	struct sig_field f[SIG_FIELDS_MAX];
};

struct trig {
	char text[TRIGGER_TEXT];
	char pattern[TRIGGER_TEXT];
	char field[SIG_NAME_MAX];
	int op;
	int64_t value;
	uint64_t interval_ns;
	uint64_t last_ns;            /* CAS by the probe that fires */
	uint32_t nev;                /* release-stored after ev[nev-1] is filled */
	int overflow;                /* more events matched than TRIG_EVENTS */
	struct trig_event ev[TRIG_EVENTS];
};

/* Published with release, read by probes with acquire; replaced only by
 * trigger_set(), which frees the old one after a grace period. */
static struct trig *current;

const char *trigger_text(void)
{
	struct trig *t = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
	return t ? t->text : "";
}

static int parse_op(const char *s, int *op)
{
	static const struct { const char *s; int op; } ops[] = {
		{ "==", OP_EQ }, { "!=", OP_NE }, { "<=", OP_LE }, { ">=", OP_GE }, { "<", OP_LT }, { ">", OP_GT },
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(s, ops[i].s)) {
			*op = ops[i].op;
			return 0;
		}
	return -EINVAL;
}

static int parse(const char *text, struct trig *t, char *err, size_t errlen)
{
	char buf[TRIGGER_TEXT], pat[TRIGGER_TEXT], kw[8], field[SIG_NAME_MAX], op[4], val[32], extra[2];
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

/* Does event provider:name with this signature match t? Fills e. */
static int matches(const struct trig *t, const char *provider, const char *name, const char *signature,
		   struct trig_event *e)
{
	char full[2 * TRIGGER_TEXT];
	snprintf(full, sizeof(full), "%s:%s", provider, name);
	if (fnmatch(t->pattern, full, 0) != 0)
		return 0;
	if (t->op == OP_NONE)
		return 1;
	if (sig_parse(signature, e->f, SIG_FIELDS_MAX, &e->nfields) < 0)
		return 0;
	for (size_t i = 0; i < e->nfields; i++) {
		const struct sig_field *f = &e->f[i];
		if (strcmp(f->name, t->field))
			continue;
		/* Only a scalar integer can be compared. */
		if (f->array != SIG_SCALAR || f->kind == SIG_STRING || f->kind == SIG_FLOAT)
			return 0;
		e->field = (uint32_t)i;
		return 1;
	}
	return 0;
}

static int match_id(uint32_t id, const char *provider, const char *name, const char *signature)
{
	struct trig *t = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
	if (!t)
		return 0;
	uint32_t n = t->nev;
	for (uint32_t i = 0; i < n; i++)
		if (t->ev[i].id == id)
			return 1;
	if (n == TRIG_EVENTS) {
		static struct trig_event scratch; /* under the registry lock */
		if (!t->overflow && matches(t, provider, name, signature, &scratch)) {
			t->overflow = 1;
			reg_message("ringtrace: trigger '%s' matches more than %d events: %s:%s is not watched",
				    t->text, TRIG_EVENTS, provider, name);
		}
		return 0;
	}
	if (!matches(t, provider, name, signature, &t->ev[n]))
		return 0;
	t->ev[n].id = id;
	/* The entry is complete before a probe can see it. */
	__atomic_store_n(&t->nev, n + 1, __ATOMIC_RELEASE);
	return 1;
}

void trigger_match(struct ringtrace_event_desc *d, uint32_t id, const char *provider, const char *name,
		   const char *signature)
{
	/* One store of the final value: a probe never sees the bit dropped
	 * for an event that stays watched. */
	if (match_id(id, provider, name, signature))
		__atomic_fetch_or(&d->flags, RINGTRACE__EVF_TRIGGER, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&d->flags, ~RINGTRACE__EVF_TRIGGER, __ATOMIC_RELEASE);
}

int trigger_check(const char *text, char *err, size_t errlen)
{
	struct trig *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int r = parse(text, t, err, errlen);
	free(t);
	return r;
}

int trigger_set(const char *text, uint64_t min_interval_ms, char *err, size_t errlen)
{
	struct trig *t = NULL;
	if (text && *text) {
		t = calloc(1, sizeof(*t));
		if (!t) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if (parse(text, t, err, errlen) < 0) {
			free(t);
			return -EINVAL;
		}
		t->interval_ns = min_interval_ms * 1000000u;
	}
	struct trig *old = __atomic_exchange_n(&current, t, __ATOMIC_ACQ_REL);
	/* Re-mark every descriptor: clear the old trigger's, set the new. */
	reg_retrigger();
	if (old) {
		/* A probe may still be reading the old one. */
		if (rcu_synchronize(2000) == 0)
			free(old);
	}
	return 0;
}

/* Read the condition's field from the record just written. */
static int field_value(const struct trig_event *e, const struct ringtrace__rb *rb, const char *payload,
		       uint32_t cpu, int64_t *ret)
{
	const char *data = rb->cpu[cpu].data;
	uint64_t in = (uint64_t)(payload - data) & rb->sb_mask;
	size_t avail = (size_t)(rb->sb_mask + 1 - in), off;
	if (sig_record_size(e->f, e->field, payload, avail, &off) < 0)
		return -1;
	const struct sig_field *f = &e->f[e->field];
	size_t sz = f->bits / 8u;
	if (off + sz > avail)
		return -1;
	uint64_t u = 0;
	memcpy(&u, payload + off, sz); /* little-endian: low bytes first */
	if (f->is_signed && sz < 8 && (u >> (sz * 8 - 1)) & 1)
		u |= ~UINT64_C(0) << (sz * 8);
	*ret = (int64_t)u;
	return 0;
}

void ringtrace__trigger(struct ringtrace__rb *rb, const char *payload, uint32_t id, uint32_t cpu)
{
	const struct trig *t = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
	if (!t)
		return;
	uint32_t n = __atomic_load_n(&t->nev, __ATOMIC_ACQUIRE);
	const struct trig_event *e = NULL;
	for (uint32_t i = 0; i < n && !e; i++)
		if (t->ev[i].id == id)
			e = &t->ev[i];
	if (!e)
		return;
	if (t->op != OP_NONE) {
		int64_t v;
		if (field_value(e, rb, payload, cpu, &v) < 0)
			return;
		const struct sig_field *f = &e->f[e->field];
		int lt, eq = v == t->value;
		if (f->is_signed)
			lt = v < t->value;
		else
			lt = (uint64_t)v < (uint64_t)t->value;
		int ok = t->op == OP_EQ ? eq : t->op == OP_NE ? !eq : t->op == OP_LT ? lt :
			 t->op == OP_LE ? lt || eq : t->op == OP_GT ? !lt && !eq : !lt;
		if (!ok)
			return;
	}
	uint64_t now = ringtrace__clock_monotonic();
	uint64_t last = __atomic_load_n(&((struct trig *)t)->last_ns, __ATOMIC_RELAXED);
	if (last && now - last < t->interval_ns)
		return;
	/* One firing per interval, whichever thread wins. */
	if (!__atomic_compare_exchange_n(&((struct trig *)t)->last_ns, &last, now ? now : 1, 0, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return;
	agent_request_snapshot(1);
}
