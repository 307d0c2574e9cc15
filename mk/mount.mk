# `ringtrace mount DIR` (src/fs/, docs/mount.md): a FUSE file system over
# the running programs, built on libfuse 3. The command links libfuse3;
# the end-to-end test (tests/e2e/mount.sh) mounts with the kernel's FUSE,
# unmounts with fusermount3 (fuse3), and makes a second user (passwd,
# util-linux's runuser).
DEB_PKGS += libfuse3-dev fuse3 passwd util-linux
FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE_LIBS   := $(shell pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)
CLI_SRC     += $(wildcard src/fs/*.c)
$(O)/obj/src/fs/%.o: CPPFLAGS += $(FUSE_CFLAGS)
$(O)/bin/ringtrace: TOOL_LIBS += $(FUSE_LIBS)
ifeq ($(FUSE_CFLAGS),)
  $(warning libfuse3-dev is not installed: 'make deps' installs it ('ringtrace mount' needs it to build))
endif
