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
 * Runs at load/unload time and at attach, under one mutex; the tracepoint
 * fast path never comes here. Entries are also appended to the region's
 * registry log, which the recorder turns into CTF metadata.
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

#include "lib/registry.h"
#include "ringbuf/rb.h"

struct reg_event {
	struct reg_event *next;      /* hash chain */
	char *provider, *name, *signature, *origin;
	uint32_t id;
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

/* Append one entry to the region's registry log (lock held). */
static void log_append(uint32_t kind, uint32_t id, const char *const *strs, int nstr)
{
	struct ringtrace__shm_header *h = attached->hdr;
	size_t len = 16;
	for (int i = 0; i < nstr; i++)
		len += strlen(strs[i]) + 1;
	len = (len + 7) & ~(size_t)7;
	/* Offsets as validated at attach; only this process appends. */
	uint64_t used = __atomic_load_n(&h->reg_used, __ATOMIC_RELAXED);
	if (used > attached->reg_size || len > attached->reg_size - used) {
		__atomic_fetch_add(&h->reg_dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	char *p = (char *)h + attached->reg_off + used;
	uint32_t w[4] = { (uint32_t)len, kind, id, 0 };
	memset(p, 0, len);
	memcpy(p, w, sizeof(w));
	size_t off = 16;
	for (int i = 0; i < nstr; i++) {
		size_t n = strlen(strs[i]) + 1;
		memcpy(p + off, strs[i], n);
		off += n;
	}
	/* Pairs with the recorder's acquire load: the entry is complete. */
	__atomic_store_n(&h->reg_used, used + len, __ATOMIC_RELEASE);
}

static void log_event(const struct reg_event *e)
{
	const char *s[4] = { e->provider, e->name, e->signature, e->origin };
	log_append(1, e->id, s, 4);
}

static void emit_message(char *msg)
{
	ringtrace_log_fn fn = __atomic_load_n(&log_fn, __ATOMIC_ACQUIRE);
	if (fn)
		fn(RINGTRACE_LOG_WARN, msg);
	if (attached) {
		const char *s[1] = { msg };
		log_append(2, 0, s, 1);
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
	const char *pat = attached->hdr->patterns;
	const char *end = pat + sizeof(attached->hdr->patterns);
	char full[512];
	if (!*pat)
		return 1;
	snprintf(full, sizeof(full), "%s:%s", provider, name);
	while (pat < end && *pat) {
		size_t n = strnlen(pat, (size_t)(end - pat));
		if (n == (size_t)(end - pat))
			break;
		if (fnmatch(pat, full, 0) == 0)
			return 1;
		pat += n + 1;
	}
	return 0;
}

static void set_enabled(struct reg_event *e)
{
	int on = attached && e->selected;
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
	if (e && strcmp(e->signature, d->signature) != 0) {
		reg_message("ringtrace: event %s:%s refused: fields \"%s\" at %s:%u in %s differ from \"%s\" at %s; this definition is not recorded",
			    d->provider, d->name, d->signature, d->file ? d->file : "?", d->line,
			    object_of(d), e->signature, e->origin);
		return;
	}
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->provider = strdup(d->provider);
		e->name = strdup(d->name);
		e->signature = strdup(d->signature);
		if (asprintf(&e->origin, "%s:%u in %s", d->file ? d->file : "?", d->line, object_of(d)) < 0)
			e->origin = NULL;
		if (!e->provider || !e->name || !e->signature || !e->origin) {
			free(e->provider);
			free(e->name);
			free(e->signature);
			free(e->origin);
			free(e);
			return;
		}
		e->id = next_id++;
		e->next = buckets[b];
		buckets[b] = e;
		if (attached) {
			e->selected = selected(e->provider, e->name);
			log_event(e);
		}
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
	d->id = e->id;
	__atomic_store_n(&d->enabled, attached && e->selected, __ATOMIC_RELEASE);
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
	}
	pthread_mutex_unlock(&lock);
}

void ringtrace__unregister_section(struct ringtrace_event_desc *const *start,
				   struct ringtrace_event_desc *const *stop)
{
	if (!start || !stop || stop <= start)
		return;
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
}

void reg_attach(struct ringtrace__rb *rb)
{
	pthread_mutex_lock(&lock);
	attached = rb;
	const char *thr[4] = { "ringtrace", "thread", "u32 tid", "ringtrace" };
	log_append(1, RINGTRACE__ID_THREAD, thr, 4);
	const char *name[4] = { "ringtrace", "thread_name", "u32 tid;string comm", "ringtrace" };
	log_append(1, RINGTRACE__ID_THREAD_NAME, name, 4);
	/* In id order, so the metadata lists events as they were assigned. */
	for (uint32_t id = RINGTRACE__ID_FIRST_USER; id < next_id; id++)
		for (unsigned b = 0; b < NBUCKET; b++)
			for (struct reg_event *e = buckets[b]; e; e = e->next)
				if (e->id == id) {
					e->selected = selected(e->provider, e->name);
					log_event(e);
				}
	for (unsigned i = 0; i < npending; i++) {
		const char *s[1] = { pending[i] };
		log_append(2, 0, s, 1);
		free(pending[i]);
	}
	npending = 0;
	/* Release pairs with the acquire load in ringtrace__reserve(): a
	 * probe that sees the region sees it initialised. */
	__atomic_store_n(&ringtrace__rb_current, rb, __ATOMIC_RELEASE);
	for (unsigned b = 0; b < NBUCKET; b++)
		for (struct reg_event *e = buckets[b]; e; e = e->next)
			set_enabled(e);
	pthread_mutex_unlock(&lock);
}

void reg_detach_after_fork(void)
{
	/* Only the forking thread exists and the lock is held by it (the
	 * prepare handler): walk without locking. */
	__atomic_store_n(&ringtrace__rb_current, NULL, __ATOMIC_RELEASE);
	attached = NULL;
	for (unsigned b = 0; b < NBUCKET; b++)
		for (struct reg_event *e = buckets[b]; e; e = e->next)
			set_enabled(e);
}
