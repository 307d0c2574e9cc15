/*
 * ringtrace-api.h - functions of libringtrace that a traced program may
 * call itself. Included by <ringtrace/ringtrace.h>.
 */
#ifndef RINGTRACE_API_H
#define RINGTRACE_API_H

#ifdef __cplusplus
extern "C" {
#endif

enum ringtrace_log_level {
	RINGTRACE_LOG_WARN = 1,
	RINGTRACE_LOG_INFO = 2,
};

/*
 * The library never prints. Its messages (an event refused because another
 * object defines it with other fields, ...) go to this callback, if set, and
 * to the recorder, which prints them. The callback runs in whatever thread
 * loads the object concerned, with the registry lock held: it must not load
 * or unload objects with tracepoints.
 */
typedef void (*ringtrace_log_fn)(int level, const char *msg);
__attribute__((visibility("default"))) void ringtrace_set_log_callback(ringtrace_log_fn fn);

/*
 * Ask for a snapshot of this program's trace buffers, for example on an
 * error path: whoever controls tracing (`ringtrace record
 * --flight-recorder`, or `ringtrace snapshot PID --watch`) swaps the
 * buffers and writes the events that led here, while the program runs on.
 * Only the request is made here: no lock, no allocation, one atomic
 * increment and one futex wake, so it may be called from any thread and
 * from signal handlers. Requests made while a snapshot is being taken are
 * served by one more snapshot. Returns 0 when the request was posted,
 * -ENOTSUP when snapshots are not enabled (nobody would serve it).
 */
__attribute__((visibility("default"))) int ringtrace_snapshot(void);

#ifdef __cplusplus
}
#endif

#endif
