/*
 * describe.c - what the traced program tells about itself: the event
 * classes it appends to its registry (one entry per event, read each
 * round from where the last round stopped; every entry validated), the
 * lines it leaves there for the user, and the names of its threads from
 * /proc (every 50 ms). They become the trace's metadata (writer.c).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctf/metadata.h"
#include "session/session_int.h"

static struct sess_event *sess_event_by_id(struct sess *r, uint32_t id)
{
	for (size_t i = 0; i < r->nevents; i++)
		if (r->events[i].id == id)
			return &r->events[i];
	return NULL;
}

static void sess_add_event(struct sess *r, uint32_t id, const char *provider, const char *name,
		      const char *signature)
{
	struct sig_field fields[SIG_FIELDS_MAX];
	size_t n;
	if (id == 0 || sess_event_by_id(r, id))
		return;
	if (sig_parse(signature, fields, SIG_FIELDS_MAX, &n) < 0) {
		sess_log(SESS_SRC_RECORD, "event %s:%s has fields ringtrace cannot describe (\"%s\"); its records are dropped from the trace\n",
			provider, name, signature);
		return;
	}
	if (r->nevents == r->cap_events) {
		size_t cap = r->cap_events ? r->cap_events * 2 : 32;
		struct sess_event *ne = realloc(r->events, cap * sizeof(*ne));
		if (!ne)
			return;
		r->events = ne;
		r->cap_events = cap;
	}
	struct sess_event *e = &r->events[r->nevents];
	e->id = id;
	e->provider = strdup(provider);
	e->name = strdup(name);
	e->signature = strdup(signature);
	e->fields = malloc((n ? n : 1) * sizeof(*fields));
	if (!e->provider || !e->name || !e->signature || !e->fields) {
		free(e->provider);
		free(e->name);
		free(e->signature);
		free(e->fields);
		return;
	}
	memcpy(e->fields, fields, n * sizeof(*fields));
	e->nfields = n;
	r->nevents++;
	r->reg_changed = 1;
}

/* Read the entries the program appended since last time. */
void sess_read_registry(struct sess *r)
{
	struct ringtrace__shm_header *h = r->rb->hdr;
	uint64_t used = __atomic_load_n(&h->reg_used, __ATOMIC_ACQUIRE);
	/* Only the offsets validated at open (the program could change the
	 * header's copies). */
	if (used > r->rb->reg_size)
		used = r->rb->reg_size;
	const char *base = (const char *)h + r->rb->reg_off;
	struct ctl_log_entry e;
	int k;
	while ((k = ctl_log_next(base, used, &r->reg_pos, &e)) > 0) {
		if (e.kind == 1 && e.n == 4)
			sess_add_event(r, e.id, e.s[0], e.s[1], e.s[2]);
		else if (e.kind == 2 && e.n >= 1)
			sess_log(SESS_SRC_PROGRAM, "%s", e.s[0]);
	}
	if (k < 0) {
		sess_log(SESS_SRC_RECORD, "the event registry of process %d is damaged; later events are not described\n",
			 (int)r->child);
		r->reg_pos = used;
	}
}

int sess_payload_size(void *arg, uint32_t id, const char *payload, size_t avail, size_t *ret)
{
	struct sess_event *e = sess_event_by_id(arg, id);
	if (!e)
		return -EBADMSG;
	return sig_record_size(e->fields, e->nfields, payload, avail, ret);
}

/* ---- threads ----------------------------------------------------------- */

void sess_scan_threads(struct sess *r)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)r->child);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		unsigned long tid = strtoul(e->d_name, &end, 10);
		if (*end || tid == 0 || tid > UINT32_MAX)
			continue;
		char cpath[96], comm[64] = "";
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%lu/comm", (int)r->child, tid);
		FILE *f = fopen(cpath, "re");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		if (!comm[0])
			continue;
		struct sess_thread *t = NULL;
		for (size_t i = 0; i < r->nthreads; i++)
			if (r->threads[i].tid == tid)
				t = &r->threads[i];
		if (!t) {
			if (r->nthreads == r->cap_threads) {
				size_t cap = r->cap_threads ? r->cap_threads * 2 : 16;
				struct sess_thread *nt = realloc(r->threads, cap * sizeof(*nt));
				if (!nt)
					break;
				r->threads = nt;
				r->cap_threads = cap;
			}
			t = &r->threads[r->nthreads++];
			t->tid = (uint32_t)tid;
		}
		snprintf(t->comm, sizeof(t->comm), "%s", comm);
	}
	closedir(d);
}

/* The env's thread names: one key each (thread_name_<tid>). */
struct ctf_thread_name *sess_thread_names(const struct sess *r)
{
	struct ctf_thread_name *v = calloc(r->nthreads ? r->nthreads : 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nthreads; i++) {
		v[i].tid = r->threads[i].tid;
		v[i].comm = r->threads[i].comm;
	}
	return v;
}

