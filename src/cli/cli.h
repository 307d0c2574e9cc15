/*
 * cli.h - the subcommands of `ringtrace`, one file each.
 *
 * Each takes argv with argv[0] = its own name and returns the process exit
 * status. Errors are one line on stderr: "ringtrace CMD: what: why".
 */
#ifndef RINGTRACE_CLI_H
#define RINGTRACE_CLI_H

int cmd_record(int argc, char **argv);
int cmd_dump(int argc, char **argv);

#endif
