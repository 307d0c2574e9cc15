# The tool-side session library (src/session/: recording, attaching,
# following, snapshots, recovery) and the snapshot watcher's side of the
# control block: in the core archive, unit-tested by tests/unit/test_session.c.
TOOL_SRC += $(wildcard src/session/*.c) src/ctl/ctl_watch.c
