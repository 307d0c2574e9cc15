# The tool-side session library (src/session/: recording, attaching,
# following, snapshots, recovery; session.h) and the snapshot watcher's
# side of the control block (src/ctl/ctl_watch.c), unit-tested by
# tests/unit/test_session.c.
TOOL_SRC    += src/ctl/ctl_watch.c
SESSION_SRC := $(wildcard src/session/*.c)
# Archived with the tool's objects, but kept out of TOOL_SRC: the fuzz
# targets compile TOOL_SRC (the parsers) without the ring buffer's reader,
# which the session library needs.
$(O)/lib/libringtrace-core.a: $(SESSION_SRC:%.c=$(O)/obj/%.o)
