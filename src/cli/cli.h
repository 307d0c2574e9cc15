/*
 * cli.h - the subcommands of `ringtrace`, one file each.
 *
 * Each takes argv with argv[0] = its own name and returns the process exit
 * status. Errors are one line on stderr: "ringtrace CMD: what: why".
 */
#ifndef RINGTRACE_CLI_H
#define RINGTRACE_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

int cmd_record(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_enable(int argc, char **argv);
int cmd_disable(int argc, char **argv);
int cmd_on(int argc, char **argv);
int cmd_off(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_reset(int argc, char **argv);
int cmd_buffer_size(int argc, char **argv);
int cmd_stackmap(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_snapshot_enable(int argc, char **argv);
int cmd_snapshot_disable(int argc, char **argv);
int cmd_mem(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_mount(int argc, char **argv);

struct sess_opts;
/* `record` with options already parsed (and checked: sess_opts_finish()),
 * for commands built on it (`mem`): signals, the allocation tracer's
 * hooks, the library's messages on stderr, the status line (progress: an
 * enum progress_mode, cli/progress.h). Returns the exit status. */
int record_with_opts(struct sess_opts *o, int progress);

/* The session library's lines on stderr, "ringtrace CMD: line". */
void cli_session_log(void);
/* SIGTERM (and SIGHUP, SIGINT if asked) set cli_got_term; a program we
 * run (its pid in cli_child_pid) gets the signal too. */
void cli_catch_term(int hup, int intr);
extern volatile sig_atomic_t cli_got_term;
extern volatile sig_atomic_t cli_child_pid;

struct ctl_handle;
/* What `ringtrace list` prints (json: --json); 0, or 1 if the registry is damaged. */
int cmd_list_write(FILE *out, const struct ctl_handle *h, int json);
struct stack_files;
/* What `ringtrace stackmap PID` (what 0), `--stat` (1) or `--bin` (2) writes. 0 or -errno. */
int cmd_stackmap_write(FILE *out, struct stack_files *f, int what);

/* "2M", "512K", "1G", "4096" (KiB, MiB... accepted); -EINVAL. */
int cli_parse_size(const char *s, uint64_t *ret);
/* --sample BYTES (a mean from 1 to 2^40, as cli_parse_size reads it) and
 * --sample-seed N (64 bits, decimal or 0x hexadecimal): 0, or -1 after
 * one line naming the option and the value, "CMD: bad --sample ...". */
int cli_parse_sample(const char *cmd, const char *v, uint64_t *ret);
int cli_parse_seed(const char *cmd, const char *v, uint64_t *ret);
/* A JSON string literal, escaped. */
void cli_json_string(FILE *f, const char *s);
/* "2.0 MiB" */
const char *cli_bytes(uint64_t v, char *buf, size_t len);

#endif
