/*
 * convert.h - the output formats of `ringtrace convert` that live in files
 * of their own (cmd_convert.c parses the command line and dispatches).
 */
#ifndef RINGTRACE_CLI_CONVERT_H
#define RINGTRACE_CLI_CONVERT_H

/*
 * `ringtrace convert DIR --to sqlite -o OUT`: write the trace in DIR as an
 * SQLite database at OUT. Prints its own errors (one line each) and
 * returns the process exit status.
 */
int convert_sqlite(const char *dir, const char *out, unsigned out_flags);

/*
 * `ringtrace convert DIR --to pprof -o OUT`: a pprof profile of the
 * trace's stacks (convert_pprof.c): allocations for a --mem trace, else
 * events per stack. debug_dir may be NULL. Prints its own errors (one
 * line each) and returns the process exit status.
 */
int convert_pprof(const char *dir, const char *out, unsigned out_flags, const char *debug_dir);

#endif /* RINGTRACE_CLI_CONVERT_H */
