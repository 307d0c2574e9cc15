/*
 * registry.c - which events exist in the traced process, with which ids.
 *
 * Every object (program, library, dlopen'ed plugin) that declares
 * tracepoints has a section "ringtrace_events" of descriptor pointers; its
 * constructors call ringtrace__register_section() and its destructors
 * ringtrace__unregister_section() (once per translation unit, so sections
 * are reference counted). Events are keyed by "provider:name": the same
 * name with the same signature in several objects shares one entry and one
 * id; the same name with another signature is refused with a message naming
 * both definitions and stays disabled, and the program runs on.
 *
 * Ids are never reused within a process: an event whose object was unloaded
 * keeps its id, so records already in the buffers still decode.
 *
 * Runs at load/unload time, at attach and for control commands, under one
 * mutex; the tracepoint fast path never comes here. Entries are appended
 * to the registry log of the control block (what `ringtrace list` reads)
 * and of the attached ring region (what the recorder turns into CTF
 * metadata).
 *
 * Which events write: a descriptor is enabled when tracing is on, a region
 * is attached, and the event is selected. Selection starts as "all" and is
 * changed by rules (`ringtrace enable/disable PATTERN`, or the recorder's
 * -e patterns), applied in order, so events registered later (dlopen) get
 * the same answer as those already there.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringtrace/ringtrace-abi.h>
#include <ringtrace/ringtrace-api.h>

#include "ctl/ctl.h"
#include "lib/registry.h"
#include "lib/stack.h"
#include "lib/trigger.h"
#include "ringbuf/rb.h"

struct reg_event {
	struct reg_event *next;      /* hash chain */
	char *provider, *name, *signature, *origin;
	char *ring_sig;              /* the signature with the stack suffix */
	uint32_t id;
	int stack;                   /* declared with a stack */
	/* Its first definition captures no stack (RINGTRACE__EVF_NO_STACK,
	 * the allocation tracer's frees): bare in a region with stacks
	 * (ring_suffix()), until it is `suffixed`. */
	int nostack;
	int suffixed;                /* its definitions have RINGTRACE__EVF_SUFFIX, for good */
	int selected;                /* matches the recording's patterns */
	struct ringtrace_event_desc **descs;
	size_t ndesc, cap;
};

struct reg_section {
	struct reg_section *next;
	struct ringtrace_event_desc *const *start, *const *stop;
	int refs;
};

#define NBUCKET 256

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct reg_event *buckets[NBUCKET];
static struct reg_section *sections;
static uint32_t next_id = RINGTRACE__ID_FIRST_USER;
static struct ringtrace__rb *attached;
static int tracing_on;
static struct ctl_block *ctl;

/* Selection rules, oldest first; a rule for a pattern replaces an older
 * one for the same pattern, so toggling never grows the list. */
#define RULES_MAX 256
struct rule {
	char *pat;
	int on;
};
static struct rule rules[RULES_MAX];
static unsigned nrules;
static int default_on = 1;

/* Messages produced before the recorder is attached. */
#define PENDING_MAX 16
static char *pending[PENDING_MAX];
static unsigned npending;

static ringtrace_log_fn log_fn;

void ringtrace_set_log_callback(ringtrace_log_fn fn)
{
	__atomic_store_n(&log_fn, fn, __ATOMIC_RELEASE);
}

void reg_lock(void)
{
	pthread_mutex_lock(&lock);
}

void reg_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

static unsigned hash2(const char *a, const char *b)
{
	unsigned h = 2166136261u;
	for (; *a; a++)
		h = (h ^ (unsigned char)*a) * 16777619u;
	h = (h ^ ':') * 16777619u;
	for (; *b; b++)
		h = (h ^ (unsigned char)*b) * 16777619u;
	return h % NBUCKET;
}

/* Append one entry to a registry log (lock held). Offsets as validated
 * when the log was attached; only this process appends. */
static void log_append_to(char *log, uint64_t size, uint64_t *usedp, uint32_t *dropped, uint32_t kind,
			  uint32_t id, const char *const *strs, int nstr)
{
	size_t len = 16;
	for (int i = 0; i < nstr; i++)
		len += strlen(strs[i]) + 1;
	len = (len + 7) & ~(size_t)7;
	uint64_t used = __atomic_load_n(usedp, __ATOMIC_RELAXED);
	if (used > size || len > size - used) {
		__atomic_fetch_add(dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	char *p = log + used;
	uint32_t w[4] = { (uint32_t)len, kind, id, 0 };
	memset(p, 0, len);
	memcpy(p, w, sizeof(w));
	size_t off = 16;
	for (int i = 0; i < nstr; i++) {
		size_t n = strlen(strs[i]) + 1;
		memcpy(p + off, strs[i], n);
		off += n;
	}
	/* Pairs with the reader's acquire load: the entry is complete. */
	__atomic_store_n(usedp, used + len, __ATOMIC_RELEASE);
}

static void log_ring(uint32_t kind, uint32_t id, const char *const *strs, int nstr)
{
	struct ringtrace__shm_header *h = attached->hdr;
	log_append_to((char *)h + attached->reg_off, attached->reg_size, &h->reg_used, &h->reg_dropped, kind,
		      id, strs, nstr);
}

static void log_ctl(uint32_t kind, uint32_t id, const char *const *strs, int nstr)
{
	log_append_to((char *)ctl + CTL_REG_OFF, CTL_REG_SIZE, &ctl->reg_used, &ctl->reg_dropped, kind, id,
		      strs, nstr);
}

static void ctl_mark(const struct reg_event *e)
{
	if (ctl && e->id < CTL_MAX_IDS)
		__atomic_store_n((uint8_t *)ctl + CTL_EN_OFF + e->id,
				 e->selected ? CTL_EV_ENABLED : CTL_EV_DISABLED, __ATOMIC_RELEASE);
}

/* The fields every event with a stack ends with (ringtrace-abi.h). */
#define STACK_SUFFIX "u32 stack_id;x64 stack[u8]"

static char *with_stack(const char *sig)
{
	char *r;
	if (asprintf(&r, "%s%s" STACK_SUFFIX, sig, *sig ? ";" : "") < 0)
		return NULL;
	return r;
}

/*
 * Whether the records of an event not declared with a stack end with the
 * stack suffix in the attached region: in a region with stacks, yes,
 * unless the event captures none (`nostack`) and never had the suffix:
 * those stay bare (5 bytes less each, and the inline path). The decision
 * holds for good once taken for a region with stacks: an event with the
 * suffix gets RINGTRACE__EVF_SUFFIX on every definition, here, before its
 * signature is logged and before the region is published (reg_tracing())
 * or the definition's id (register_desc()), and keeps it: a probe still
 * writing into an older region where the event was logged with the
 * suffix must keep writing it. An event bare once is bare in every
 * region. Seq_cst: ordered before the stores that publish.
 */
static int ring_suffix(struct reg_event *e)
{
	if (!attached->stacks || e->stack)
		return 0;
	if (e->nostack && !e->suffixed)
		return 0;
	if (!e->suffixed) {
		e->suffixed = 1;
		for (size_t i = 0; i < e->ndesc; i++)
			__atomic_fetch_or(&e->descs[i]->flags, RINGTRACE__EVF_SUFFIX, __ATOMIC_SEQ_CST);
	}
	return 1;
}

static void log_event(struct reg_event *e, int to_ring, int to_ctl)
{
	const char *s[4] = { e->provider, e->name, e->signature, e->origin };
	if (to_ring && attached) {
		/* A region where every event carries a stack: the probes'
		 * slow path appends it (probe.c), the recorder must know. */
		const char *r[4] = { e->provider, e->name, e->ring_sig, e->origin };
		log_ring(1, e->id, ring_suffix(e) ? r : s, 4);
	}
	if (to_ctl && ctl) {
		log_ctl(1, e->id, s, 4);
		__atomic_store_n(&ctl->nevents, ctl->nevents + 1, __ATOMIC_RELAXED);
		ctl_mark(e);
	}
}

static void emit_message(char *msg)
{
	ringtrace_log_fn fn = __atomic_load_n(&log_fn, __ATOMIC_ACQUIRE);
	if (fn)
		fn(RINGTRACE_LOG_WARN, msg);
	const char *s[1] = { msg };
	if (ctl)
		log_ctl(2, 0, s, 1);
	if (attached) {
		log_ring(2, 0, s, 1);
		free(msg);
	} else if (npending < PENDING_MAX) {
		pending[npending++] = msg;
	} else {
		free(msg);
	}
}

void reg_message(const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r >= 0)
		emit_message(msg);
}

static int selected(const char *provider, const char *name)
{
	char full[512];
	snprintf(full, sizeof(full), "%s:%s", provider, name);
	int on = default_on;
	for (unsigned i = 0; i < nrules; i++)
		if (fnmatch(rules[i].pat, full, 0) == 0)
			on = rules[i].on;
	return on;
}

static void add_rule(const char *pat, int on)
{
	for (unsigned i = 0; i < nrules; i++) {
		if (!strcmp(rules[i].pat, pat)) {
			char *p = rules[i].pat;
			memmove(&rules[i], &rules[i + 1], (nrules - i - 1) * sizeof(rules[0]));
			rules[nrules - 1].pat = p;
			rules[nrules - 1].on = on;
			return;
		}
	}
	char *p = strdup(pat);
	if (!p)
		return;
	if (nrules == RULES_MAX) {
		/* The oldest rule matters least: drop it. */
		free(rules[0].pat);
		memmove(&rules[0], &rules[1], (RULES_MAX - 1) * sizeof(rules[0]));
		nrules--;
	}
	rules[nrules].pat = p;
	rules[nrules].on = on;
	nrules++;
}

static void set_enabled(struct reg_event *e)
{
	int on = tracing_on && attached && e->selected;
	for (size_t i = 0; i < e->ndesc; i++)
		__atomic_store_n(&e->descs[i]->enabled, on, __ATOMIC_RELEASE);
}

static const char *object_of(const void *addr)
{
	Dl_info info;
	if (dladdr(addr, &info) && info.dli_fname && *info.dli_fname)
		return info.dli_fname;
	return "?";
}

static struct reg_event *find(const char *provider, const char *name, unsigned b)
{
	for (struct reg_event *e = buckets[b]; e; e = e->next)
		if (!strcmp(e->provider, provider) && !strcmp(e->name, name))
			return e;
	return NULL;
}

static int stack_events;             /* an event declared with a stack exists */

static void register_desc(struct ringtrace_event_desc *d)
{
	if (d->abi != RINGTRACE_ABI_VERSION) {
		reg_message("ringtrace: event %s:%s in %s was built for ABI %u, this library speaks %u: not recorded",
			    d->provider, d->name, object_of(d), d->abi, RINGTRACE_ABI_VERSION);
		return;
	}
	if (!d->provider || !d->name || !d->signature)
		return;
	unsigned b = hash2(d->provider, d->name);
	struct reg_event *e = find(d->provider, d->name, b);
	/* A declaration with a stack has the stack's fields in its signature:
	 * the same event declared with and without one is a conflict. */
	int stack = (d->flags & RINGTRACE__EVF_STACK) != 0;
	char *sig = stack ? with_stack(d->signature) : strdup(d->signature);
	if (!sig)
		return;
	if (e && strcmp(e->signature, sig) != 0) {
		reg_message("ringtrace: event %s:%s refused: fields \"%s\" at %s:%u in %s differ from \"%s\" at %s; this definition is not recorded",
			    d->provider, d->name, sig, d->file ? d->file : "?", d->line,
			    object_of(d), e->signature, e->origin);
		free(sig);
		return;
	}
	if (e) {
		free(sig);
	} else {
		e = calloc(1, sizeof(*e));
		if (!e) {
			free(sig);
			return;
		}
		e->provider = strdup(d->provider);
		e->name = strdup(d->name);
		e->signature = sig;
		e->stack = stack;
		e->nostack = (__atomic_load_n(&d->flags, __ATOMIC_RELAXED) & RINGTRACE__EVF_NO_STACK) != 0;
		e->ring_sig = stack ? strdup(sig) : with_stack(sig);
		if (asprintf(&e->origin, "%s:%u in %s", d->file ? d->file : "?", d->line, object_of(d)) < 0)
			e->origin = NULL;
		if (!e->provider || !e->name || !e->ring_sig || !e->origin) {
			free(e->provider);
			free(e->name);
			free(e->signature);
			free(e->ring_sig);
			free(e->origin);
			free(e);
			return;
		}
		e->id = next_id++;
		e->next = buckets[b];
		buckets[b] = e;
		e->selected = selected(e->provider, e->name);
		log_event(e, 1, 1);
	}
	if (e->ndesc == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 4;
		struct ringtrace_event_desc **nd = realloc(e->descs, cap * sizeof(*nd));
		if (!nd)
			return;
		e->descs = nd;
		e->cap = cap;
	}
	e->descs[e->ndesc++] = d;
	/* Its records as the event's others (ring_suffix()): with the
	 * suffix, or without any stack. Before the id. */
	if (e->suffixed)
		__atomic_fetch_or(&d->flags, RINGTRACE__EVF_SUFFIX, __ATOMIC_SEQ_CST);
	else if (e->nostack)
		__atomic_fetch_or(&d->flags, RINGTRACE__EVF_NO_STACK, __ATOMIC_SEQ_CST);
	d->id = e->id;
	if (stack) {
		__atomic_store_n(&stack_events, 1, __ATOMIC_RELAXED);
		if (attached)
			stack_unwind_prepare();
	}
	trigger_match(d, e->id, e->provider, e->name, e->signature);
	__atomic_store_n(&d->enabled, tracing_on && attached && e->selected, __ATOMIC_RELEASE);
}

static void unregister_desc(struct ringtrace_event_desc *d)
{
	if (!d->id)
		return;
	__atomic_store_n(&d->enabled, 0, __ATOMIC_RELEASE);
	struct reg_event *e = find(d->provider, d->name, hash2(d->provider, d->name));
	if (!e)
		return;
	for (size_t i = 0; i < e->ndesc; i++) {
		if (e->descs[i] == d) {
			e->descs[i] = e->descs[--e->ndesc];
			break;
		}
	}
}

void ringtrace__register_section(struct ringtrace_event_desc *const *start,
				 struct ringtrace_event_desc *const *stop)
{
	if (!start || !stop || stop <= start)
		return;
	ringtrace__tls.busy++; /* our allocations are not the program's */
	pthread_mutex_lock(&lock);
	struct reg_section *s;
	for (s = sections; s; s = s->next)
		if (s->start == start)
			break;
	if (s) {
		s->refs++;
	} else if ((s = calloc(1, sizeof(*s)))) {
		s->start = start;
		s->stop = stop;
		s->refs = 1;
		s->next = sections;
		sections = s;
		for (struct ringtrace_event_desc *const *p = start; p < stop; p++)
			if (*p)
				register_desc(*p);
		/* Usually a dlopen: log what it loaded, so that its frames
		 * symbolise (the lock keeps `attached` mapped). */
		stack_log_maps(attached, 0);
	}
	pthread_mutex_unlock(&lock);
	ringtrace__tls.busy--;
}

void ringtrace__unregister_section(struct ringtrace_event_desc *const *start,
				   struct ringtrace_event_desc *const *stop)
{
	if (!start || !stop || stop <= start)
		return;
	ringtrace__tls.busy++;
	pthread_mutex_lock(&lock);
	for (struct reg_section **pp = &sections; *pp; pp = &(*pp)->next) {
		struct reg_section *s = *pp;
		if (s->start != start)
			continue;
		if (--s->refs == 0) {
			for (struct ringtrace_event_desc *const *p = start; p < stop; p++)
				if (*p)
					unregister_desc(*p);
			*pp = s->next;
			free(s);
		}
		break;
	}
	pthread_mutex_unlock(&lock);
	ringtrace__tls.busy--;
}

/* Every event in id order, so that logs list events as they were assigned. */
static void log_all(int to_ring, int to_ctl)
{
	for (uint32_t id = RINGTRACE__ID_FIRST_USER; id < next_id; id++)
		for (unsigned b = 0; b < NBUCKET; b++)
			for (struct reg_event *e = buckets[b]; e; e = e->next)
				if (e->id == id)
					log_event(e, to_ring, to_ctl);
}

static void enable_all(void)
{
	for (unsigned b = 0; b < NBUCKET; b++)
		for (struct reg_event *e = buckets[b]; e; e = e->next)
			set_enabled(e);
}

static void reselect_all(void)
{
	for (unsigned b = 0; b < NBUCKET; b++)
		for (struct reg_event *e = buckets[b]; e; e = e->next) {
			e->selected = selected(e->provider, e->name);
			ctl_mark(e);
			set_enabled(e);
		}
}

void reg_set_ctl(struct ctl_block *c)
{
	pthread_mutex_lock(&lock);
	ctl = c;
	log_all(0, 1);
	/* Messages are kept for the recorder until it attaches: copy them. */
	for (unsigned i = 0; i < npending; i++) {
		const char *s[1] = { pending[i] };
		log_ctl(2, 0, s, 1);
	}
	pthread_mutex_unlock(&lock);
}

void reg_select_patterns(const char *pat, size_t size)
{
	pthread_mutex_lock(&lock);
	const char *end = pat + size;
	if (*pat) {
		default_on = 0;
		while (pat < end && *pat) {
			size_t n = strnlen(pat, (size_t)(end - pat));
			if (n == (size_t)(end - pat))
				break;
			add_rule(pat, 1);
			pat += n + 1;
		}
	}
	reselect_all();
	pthread_mutex_unlock(&lock);
}

int reg_rule(const char *pat, int on)
{
	int matched = 0;
	char full[512];
	pthread_mutex_lock(&lock);
	add_rule(pat, on);
	for (unsigned b = 0; b < NBUCKET; b++)
		for (struct reg_event *e = buckets[b]; e; e = e->next) {
			snprintf(full, sizeof(full), "%s:%s", e->provider, e->name);
			if (fnmatch(pat, full, 0) == 0)
				matched++;
		}
	reselect_all();
	pthread_mutex_unlock(&lock);
	return matched;
}

void reg_attach(struct ringtrace__rb *rb)
{
	pthread_mutex_lock(&lock);
	attached = rb;
	if (rb && __atomic_load_n(&rb->hdr->reg_used, __ATOMIC_ACQUIRE) == 0) {
		/* A new region: its log starts with the internal records. */
		const char *thr[4] = { "ringtrace", "thread", "u32 tid", "ringtrace" };
		log_ring(1, RINGTRACE__ID_THREAD, thr, 4);
		const char *name[4] = { "ringtrace", "thread_name", "u32 tid;string comm", "ringtrace" };
		log_ring(1, RINGTRACE__ID_THREAD_NAME, name, 4);
		log_all(1, 0);
		for (unsigned i = 0; i < npending; i++) {
			const char *s[1] = { pending[i] };
			log_ring(2, 0, s, 1);
		}
	}
	for (unsigned i = 0; i < npending; i++)
		free(pending[i]);
	npending = 0;
	if (!rb) {
		tracing_on = 0;
		__atomic_store_n(&ringtrace__rb_current, NULL, __ATOMIC_RELEASE);
		enable_all();
	}
	pthread_mutex_unlock(&lock);
}

void reg_tracing(int on)
{
	pthread_mutex_lock(&lock);
	tracing_on = on && attached;
	if (tracing_on) {
		/* Release pairs with the acquire load in ringtrace__reserve(): a
		 * probe that sees the region sees it initialised. The region
		 * first, then the descriptors. */
		__atomic_store_n(&ringtrace__rb_current, attached, __ATOMIC_RELEASE);
		enable_all();
	} else {
		enable_all();
		__atomic_store_n(&ringtrace__rb_current, NULL, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
}

int reg_has_stack_events(void)
{
	return __atomic_load_n(&stack_events, __ATOMIC_RELAXED);
}

void reg_retrigger(void)
{
	pthread_mutex_lock(&lock);
	for (unsigned b = 0; b < NBUCKET; b++)
		for (struct reg_event *e = buckets[b]; e; e = e->next)
			for (size_t i = 0; i < e->ndesc; i++)
				trigger_match(e->descs[i], e->id, e->provider, e->name, e->signature);
	pthread_mutex_unlock(&lock);
}

void reg_detach_after_fork(void)
{
	/* Only the forking thread exists and the lock is held by it (the
	 * prepare handler): walk without locking. */
	__atomic_store_n(&ringtrace__rb_current, NULL, __ATOMIC_RELEASE);
	attached = NULL;
	tracing_on = 0;
	ctl = NULL;
	enable_all();
}
