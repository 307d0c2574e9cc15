# Real programs under the allocation tracer (tests/e2e/mem_real.sh): the
# test's own programs, tests/e2e/mem_progs/ -> $(O)/tests/mem/ (built by
# tests-build), and the Debian packages of the real ones it traces
# (sqlite3; gcc and python3 are in the Makefile's list) and of the
# allocator one of them links with (jemalloc).
#
# Built without the sanitizers, in every build directory: they are data
# for the test, not code under test, and an ASan runtime must come first
# in the program, where the preloaded tracer would be.
DEB_PKGS += sqlite3 libjemalloc-dev

MR_DIR   := $(O)/tests/mem
MR_WARN  := -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror)
MR_PROGS := $(MR_DIR)/cxx_containers $(MR_DIR)/jemalloc_sizes $(MR_DIR)/fork_exec \
            $(MR_DIR)/follow_tree

$(MR_DIR)/cxx_containers: tests/e2e/mem_progs/cxx_containers.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O2 -g $(MR_WARN) -pthread -o $@ $<

# jemalloc's malloc is the program's: the tracer's RTLD_NEXT lookups find
# it before glibc's.
$(MR_DIR)/jemalloc_sizes: tests/e2e/mem_progs/jemalloc_sizes.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(MR_WARN) -o $@ $< -ljemalloc

$(MR_DIR)/fork_exec: tests/e2e/mem_progs/fork_exec.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(MR_WARN) -o $@ $<

# A process tree for tests/e2e/follow.sh (--follow-fork, --follow-exec).
$(MR_DIR)/follow_tree: tests/e2e/mem_progs/follow_tree.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(MR_WARN) -o $@ $<

.PHONY: mem-real-progs
mem-real-progs: $(MR_PROGS)
tests-build: mem-real-progs
