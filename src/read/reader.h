/*
 * reader.h - read a CTF 1.8 trace directory (as ringtrace writes it, or any
 * trace the TSDL parser accepts) as one time-ordered sequence of items.
 *
 * Input is untrusted: every failure is an error code plus a message, never a
 * crash, an endless loop or unbounded memory. The reader does not print.
 *
 * Items come out sorted by time across all stream files (a k-way merge;
 * items of one file keep their file order). Items without time (a stream
 * with no clock) come last, file by file in strcmp order of the names, as
 * babeltrace2 prints them. An error in one stream file
 * stops that file only: the items of the other files are still delivered,
 * and rd_trace_next() reports the error after the last readable item.
 */
#ifndef RINGTRACE_READ_READER_H
#define RINGTRACE_READ_READER_H

#include <stddef.h>
#include <stdint.h>

#include "read/decode.h"
#include "read/tsdl.h"

enum rd_item_kind {
	RD_ITEM_EVENT = 1,
	RD_ITEM_LOST_EVENTS,         /* events_discarded grew */
	RD_ITEM_LOST_PACKETS,        /* packet_seq_num skipped */
};

struct rd_item {
	int kind;                    /* enum rd_item_kind */
	int64_t ns;                  /* ns from the epoch: the event, or the start of a loss */
	int ns_ok;                   /* 0 if the clock value does not convert, or
				      * the stream has no clock (no time at all) */
	uint64_t cycles;             /* raw clock value of `ns` */
	uint32_t cpu;                /* cpu_id (or stream_instance_id, or file index) */
	unsigned stream;             /* index of the stream file */
	const char *stream_name;     /* its file name */

	/* RD_ITEM_EVENT */
	const struct rd_event_class *ec;
	const struct rd_value *fields;   /* payload struct, or NULL; valid until the next call */
	/* The stream's event.context (LTTng puts vtid, procname... there) and
	 * the event class's own context: structs or NULL, valid as `fields`. */
	const struct rd_value *common_context;
	const struct rd_value *context;
	uint32_t tid;                /* thread of the event, 0 if unknown */
	const char *comm;            /* its name from the env, or NULL */

	/* RD_ITEM_LOST_* */
	uint64_t count;
	int has_begin;               /* 0: lost before `end_ns` (start of the stream) */
	int64_t end_ns;
	int end_ok;
};

struct rd_mem_stream {
	const char *name;
	const void *data;
	size_t size;
};

struct rd_trace;

/*
 * Open the trace in `dir`: parse `metadata`, open every other regular file
 * whose name does not start with '.' as a stream (rd_trace_entry()); the
 * entries that cannot be streams are listed by rd_trace_skipped(). Returns 0, or a negative
 * errno with a message in `err` (no such directory, no metadata, metadata
 * error with its line, too many files...).
 */
int rd_trace_open(const char *dir, struct rd_trace **ret, char *err, size_t errlen);

/*
 * What entry `name` of the trace directory open in `dfd` is to the
 * readers: 1 a stream file (a regular file, or a link to one), 0 no stream
 * and no matter (`metadata`, a name starting with '.', the directories
 * `stacks`, `mem` and `children` a recording writes and LTTng's `index`),
 * or -1 an entry where a stream file should be that cannot be one (a FIFO,
 * a socket, another directory, a link loop...), with the reason in
 * *ret_why. Never opens it.
 */
int rd_trace_entry(int dfd, const char *name, const char **ret_why);

/* "a FIFO", "a directory"... for the st_mode of a file. */
const char *rd_file_kind(unsigned mode);

/*
 * The entries rd_trace_open() left out because rd_trace_entry() refused
 * them, as "NAME: why, not a stream file" (commands warn with them).
 */
size_t rd_trace_n_skipped(const struct rd_trace *t);
const char *rd_trace_skipped(const struct rd_trace *t, size_t i);

/* The same from memory (tests, fuzzing). The buffers must outlive the trace. */
int rd_trace_open_mem(const char *metadata, size_t len, const struct rd_mem_stream *streams,
		      size_t n, struct rd_trace **ret, char *err, size_t errlen);

/* The same with a model parsed beforehand, which the trace borrows (fuzzing). */
int rd_trace_open_model(const struct rd_meta *m, const struct rd_mem_stream *streams, size_t n,
			struct rd_trace **ret, char *err, size_t errlen);

/*
 * The next item: 1, or 0 at the end, or a negative errno once every
 * readable item has been delivered and some stream file was bad
 * (rd_trace_errmsg says which and why).
 */
int rd_trace_next(struct rd_trace *t, struct rd_item *ret);
const char *rd_trace_errmsg(const struct rd_trace *t);
const struct rd_meta *rd_trace_meta(const struct rd_trace *t);
void rd_trace_close(struct rd_trace *t);

/*
 * Nanoseconds from the clock's origin (the epoch for ringtrace) of a clock
 * value, computed exactly as babeltrace2 2.0.4 does; 0 or -ERANGE.
 */
int rd_clock_ns(const struct rd_clock *c, uint64_t value, int64_t *ret_ns);

/* Thread name of `tid` from the env (rd_meta_thread_names()) or, failing
 * that, its ringtrace:thread_name record read so far; or NULL. */
const char *rd_trace_comm(const struct rd_trace *t, uint32_t tid);

/*
 * Parse "tid=comm,tid=comm" with %XX-encoded comms into a sorted table;
 * malformed entries are skipped. Exposed for tests.
 */
struct rd_thread_name {
	uint32_t tid;
	char comm[64];
};
int rd_parse_thread_names(const char *s, struct rd_thread_name **ret, size_t *ret_n);

/*
 * The thread names of a trace's env, sorted by tid (malloc'ed): one key
 * per thread, `thread_name_<tid> = "comm"` (since a program with hundreds
 * of threads made the single list longer than readers take), and the
 * single list `thread_names` of older traces; a key of its own wins over
 * the list. 0 or -ENOMEM.
 */
#define RD_THREAD_NAME_KEY "thread_name_"
int rd_meta_thread_names(const struct rd_meta *m, struct rd_thread_name **ret, size_t *ret_n);

#endif /* RINGTRACE_READ_READER_H */
