# stepcount.py - instructions of one call, counted by single-stepping in gdb
# (this machine has no hardware counters, and callgrind runs without rseq
# and without the stack ranges a thread keeps, so it cannot count the
# paths that depend on them).
#
#   RINGTRACE_NO_RSEQ=1 build/bin/ringtrace record --mem --stacks -o D -- P 1 300000000 &
#   gdb -batch -p "$(pgrep -x P)" -ex 'break malloc' -ex continue -ex continue \
#       -ex 'source bench/stepcount.py' -ex 'stepcount mp_worker'
#
# `stepcount FUNCTION [LIMIT]` steps one instruction at a time from where
# the program stopped until the innermost frame is FUNCTION again (the
# caller of the call being counted), at most LIMIT steps (default 30000),
# then prints the total and the steps per function (inlined functions
# under their own names) and per source line of ours. RINGTRACE_NO_RSEQ=1:
# a single step ends a restartable sequence (the kernel aborts it), so the
# rseq paths would retry forever; their atomic twins are counted instead.
import collections

import gdb


class StepCount(gdb.Command):
    """stepcount FUNCTION [LIMIT]: instructions until FUNCTION is the innermost frame again."""

    def __init__(self):
        super().__init__("stepcount", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        args = gdb.string_to_argv(arg)
        if not args:
            raise gdb.GdbError("usage: stepcount FUNCTION [LIMIT]")
        until = args[0]
        limit = int(args[1]) if len(args) > 1 else 30000
        by_fn = collections.Counter()
        by_line = collections.Counter()
        n = 0
        while n < limit:
            frame = gdb.selected_frame()
            name = frame.name() or "?"
            if name == until:
                break
            sal = frame.find_sal()
            path = sal.symtab.filename if sal.symtab else "?"
            by_fn[name] += 1
            if "/src/" in path or path.startswith("src/") or "/include/ringtrace/" in path:
                by_line[(path.split("/")[-1], sal.line, name)] += 1
            n += 1
            gdb.execute("stepi", to_string=True)
        print("total %d%s" % (n, " (limit reached)" if n >= limit else ""))
        for name, v in by_fn.most_common():
            print("  %6d %s" % (v, name))
        print("lines of ringtrace:")
        for (path, line, name), v in sorted(by_line.items()):
            print("  %6d %s:%d %s" % (v, path, line, name))


StepCount()
