/*
 * check_trace.h - validate the stream files of a CTF 1.8 trace packet by
 * packet (the engine of `ringtrace check`).
 *
 * Unlike the reader (reader.h), which stops a file at its first error and
 * merges the files by time, the checker walks each file alone, at the raw
 * level, and reports every problem it can still see with its position:
 * packet framing (magic, uuid, stream class, packet_size/content_size
 * against the headers and the file), timestamps (monotonic within a packet
 * and across the packets of a file, within timestamp_begin..timestamp_end),
 * packet_seq_num continuity, events_discarded never going down, and every
 * event decoded in full (id known, size within content_size). What the
 * trace's env says about the recording (ringtrace_attached, the overwrite
 * mode, losses counted by the recorder) decides which sequence gaps are
 * accounted for; its per-stream counts (ringtrace_stream_N_*) must add
 * up with the events and losses found (docs/trace-format.md).
 *
 * Input is hostile: sizes are checked against the file before use, memory
 * is capped (one packet of at most RD_PACKET_MAX bytes, capped value
 * pools), and each packet and event consumes at least one byte, so no file
 * can crash the checker or make it loop. One thread; the checker prints
 * nothing, problems go to a callback.
 */
#ifndef RINGTRACE_READ_CHECK_TRACE_H
#define RINGTRACE_READ_CHECK_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "read/tsdl.h"

struct rd_check_problem {
	const char *file;            /* stream file name (as passed in) */
	uint64_t offset;             /* byte offset in the file */
	int has_packet;              /* 0: a problem of the whole file */
	uint64_t packet;             /* index of the packet in the file, from 0 */
	const char *what;            /* one line, no newline */
};

typedef void (*rd_check_report_fn)(void *ctx, const struct rd_check_problem *p);

struct rd_check_totals {
	uint64_t streams;            /* files checked */
	uint64_t packets;            /* packets whose header could be read */
	uint64_t events;             /* events decoded, ringtrace's own records excluded */
	uint64_t lost;               /* per events_discarded, and the env's ringtrace_stream_N_lost_* */
	uint64_t problems;
};

struct rd_check;

/*
 * A checker for the trace described by `m` (borrowed: it must outlive the
 * checker). Problems go to `fn` as they are found. 0 or -ENOMEM.
 */
int rd_check_new(const struct rd_meta *m, rd_check_report_fn fn, void *ctx, struct rd_check **ret);
void rd_check_free(struct rd_check *c);

/*
 * Check one stream file, read with pread from `fd` (not closed), or from
 * `mem` when fd < 0; `size` bytes. `name` is kept until rd_check_finish().
 * Problems are reported, not returned: 0, or -ENOMEM when the checker could
 * not go on (also reported as a problem of the file).
 */
int rd_check_file(struct rd_check *c, const char *name, int fd, const void *mem, uint64_t size);

/* Report a problem found outside the checker (a file that cannot be opened). */
void rd_check_report(struct rd_check *c, const char *file, const char *what);

/* The checks that need every file (two files claiming one stream); call once, last. */
void rd_check_finish(struct rd_check *c);

void rd_check_get_totals(const struct rd_check *c, struct rd_check_totals *ret);

#endif /* RINGTRACE_READ_CHECK_TRACE_H */
