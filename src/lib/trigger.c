/*
 * trigger.c - see trigger.h. The syntax is common/trigger_parse.c, shared
 * with the command; this file is the runtime's side only.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sig.h"
#include "common/trigger_parse.h"
#include "lib/agent.h"
#include "lib/rcu.h"
#include "lib/registry.h"
#include "lib/trigger.h"

#define TRIG_EVENTS 16               /* events one pattern may match */

struct trig_event {
	uint32_t id;
	uint32_t field;              /* index of the condition's field */
	size_t nfields;
	struct sig_field f[SIG_FIELDS_MAX];
};

struct trig {
	struct trigger_spec s;       /* what was armed (trigger_parse.h) */
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
	return t ? t->s.text : "";
}

/* Does event provider:name with this signature match t? Fills e. */
static int matches(const struct trig *t, const char *provider, const char *name, const char *signature,
		   struct trig_event *e)
{
	char full[2 * TRIGGER_TEXT];
	snprintf(full, sizeof(full), "%s:%s", provider, name);
	if (fnmatch(t->s.pattern, full, 0) != 0)
		return 0;
	if (t->s.op == TRIG_OP_NONE)
		return 1;
	if (sig_parse(signature, e->f, SIG_FIELDS_MAX, &e->nfields) < 0)
		return 0;
	for (size_t i = 0; i < e->nfields; i++) {
		const struct sig_field *f = &e->f[i];
		if (strcmp(f->name, t->s.field))
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
				    t->s.text, TRIG_EVENTS, provider, name);
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

int trigger_set(const char *text, uint64_t min_interval_ms, char *err, size_t errlen)
{
	struct trig *t = NULL;
	if (text && *text) {
		t = calloc(1, sizeof(*t));
		if (!t) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if (trigger_parse(text, &t->s, err, errlen) < 0) {
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
	if (t->s.op != TRIG_OP_NONE) {
		int64_t v;
		if (field_value(e, rb, payload, cpu, &v) < 0)
			return;
		const struct sig_field *f = &e->f[e->field];
		int lt, eq = v == t->s.value;
		if (f->is_signed)
			lt = v < t->s.value;
		else
			lt = (uint64_t)v < (uint64_t)t->s.value;
		int ok = t->s.op == TRIG_OP_EQ ? eq : t->s.op == TRIG_OP_NE ? !eq : t->s.op == TRIG_OP_LT ? lt :
			 t->s.op == TRIG_OP_LE ? lt || eq : t->s.op == TRIG_OP_GT ? !lt && !eq : !lt;
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
