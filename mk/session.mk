# The tool-side session library (src/session/: recording, attaching,
# following, snapshots, recovery; session.h; in TOOL_SRC with the other
# tool folders) and the snapshot watcher's side of the control block
# (src/ctl/ctl_watch.c), unit-tested by tests/unit/test_session.c.
TOOL_SRC    += src/ctl/ctl_watch.c
