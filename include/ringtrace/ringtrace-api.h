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

#ifdef __cplusplus
}
#endif

#endif
