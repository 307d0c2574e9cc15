/*
 * metadata.h - generate the TSDL (CTF 1.8) metadata of a ringtrace trace.
 *
 * The recorder fills a ctf_trace_desc from the region header, the clock
 * calibration, /proc and the registry, and writes the `metadata` file of the
 * trace directory with it. The exact shape is in docs/design.md (sections 3,
 * 5, 6) and docs/trace-format.md; babeltrace2 2.0.4 reads it (see
 * tests/e2e/compare_babeltrace.sh).
 *
 * Input is validated before anything is written: a bad signature, an event
 * id of 0, two events with one id, an env key that is not an identifier (or
 * that repeats a built-in key, or starts with thread_name_) or a clock
 * frequency of 0 give -EINVAL and no output. A thread without a name gets
 * no key.
 */
#ifndef RINGTRACE_CTF_METADATA_H
#define RINGTRACE_CTF_METADATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ctf_env_kv {
	const char *key;             /* a C identifier */
	const char *str;             /* string value, or NULL for `num` */
	int64_t num;
};

struct ctf_event_class {
	uint32_t id;                 /* >= 1; 1 is ringtrace:thread */
	const char *provider;
	const char *name;
	const char *signature;       /* common/sig.h */
};

struct ctf_clock_desc {
	uint64_t freq;               /* Hz, > 0 */
	int64_t offset_s;            /* seconds from the epoch to clock value 0 */
	uint64_t offset;             /* plus this many cycles */
	uint8_t uuid[16];
	const char *description;     /* NULL: none */
};

/* A thread's name, written as the env key thread_name_<tid>. */
struct ctf_thread_name {
	uint32_t tid;
	const char *comm;
};

struct ctf_trace_desc {
	uint8_t uuid[16];
	int big_endian;              /* byte_order = be (else le) */
	int natural_align;           /* integers aligned to their size (tests); 0: align = 8 */
	struct ctf_clock_desc clock;
	/* env: each NULL (or vpid < 0) is left out */
	const char *hostname;
	const char *procname;
	const char *tracer_version;  /* "MAJOR.MINOR.PATCH" */
	/* One env key per thread, thread_name_<tid> = "comm": one literal for
	 * all of them outgrew what readers take (a few hundred threads made
	 * more than 4 KiB). */
	const struct ctf_thread_name *threads;
	size_t n_threads;
	/* The single list "tid=comm,..." (comm percent-encoded) that older
	 * versions wrote; only tests write it now, to make such traces. */
	const char *thread_names;
	int64_t vpid;
	const struct ctf_env_kv *env;
	size_t n_env;
	const struct ctf_event_class *events;
	size_t n_events;
};

/* 0 if the metadata can be generated, else -EINVAL (or -ENOMEM). */
int ctf_metadata_validate(const struct ctf_trace_desc *t);

/* The metadata text in a malloc'd NUL-terminated buffer (free() it). */
int ctf_metadata_build(const struct ctf_trace_desc *t, char **ret_text, size_t *ret_len);

/* Write the metadata to `f`; -EIO if the stream reports an error. */
int ctf_metadata_write(FILE *f, const struct ctf_trace_desc *t);

/* Append `s` to `out` as the inside of a TSDL string literal (no quotes). */
struct ctf_buf;
void ctf_tsdl_escape(struct ctf_buf *out, const char *s);

/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" plus NUL. */
void ctf_uuid_format(const uint8_t uuid[16], char out[37]);

#endif /* RINGTRACE_CTF_METADATA_H */
