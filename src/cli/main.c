/*
 * main.c - the `ringtrace` command: dispatches to one file per subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} cmds[] = {
	{ "record", cmd_record, "run a program with tracing on and write a CTF trace" },
	{ "dump", cmd_dump, "print the events of a trace, sorted by time" },
	{ "ps", cmd_ps, "list running programs that can be traced" },
	{ "list", cmd_list, "list a running program's events" },
	{ "enable", cmd_enable, "enable events of a running program (globs)" },
	{ "disable", cmd_disable, "disable events of a running program (globs)" },
	{ "on", cmd_on, "switch tracing on in a running program" },
	{ "off", cmd_off, "switch tracing off in a running program" },
	{ "stat", cmd_stat, "buffer statistics of a running program" },
	{ "reset", cmd_reset, "empty a running program's buffers" },
	{ "buffer-size", cmd_buffer_size, "resize a running program's buffers (tracing off)" },
	{ "show", cmd_show, "print a running program's events as they come" },
	{ "snapshot-enable", cmd_snapshot_enable, "allocate spare buffers for snapshots in a running program" },
	{ "snapshot-disable", cmd_snapshot_disable, "free a running program's spare buffers" },
	{ "snapshot", cmd_snapshot, "write a running program's buffers as a trace; tracing goes on" },
	{ "recover", cmd_recover, "write what a program's buffers (or a copy of them) hold as a trace" },
	{ "mem", cmd_mem, "record a program's allocations with stacks and print the report" },
	{ "top", cmd_top, "the live heap of a program recorded with --mem --aggregate, by stack or site" },
	{ "report", cmd_report, "allocation report of a trace: call sites, leaks, errors" },
	{ "convert", cmd_convert, "a trace as Chrome trace-event JSON (Perfetto), SQLite, or folded stacks" },
	{ "check", cmd_check, "validate a trace: packets, timestamps, sequence numbers, losses" },
	{ "stackmap", cmd_stackmap, "print the stacks of a trace or a running program; reset a program's map" },
	{ "mount", cmd_mount, "mount a tracefs-like file system of every traceable program on a directory" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ringtrace COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-16s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\n'ringtrace COMMAND --help' describes each command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ringtrace %s\n", RINGTRACE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "ringtrace: unknown command '%s' (try 'ringtrace --help')\n", argv[1]);
	return 2;
}
