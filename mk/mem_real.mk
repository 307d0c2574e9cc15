# Real programs under the allocation tracer (tests/e2e/mem_real.sh and
# tests/e2e/mem_more.sh): the tests' own programs, tests/e2e/mem_progs/ ->
# $(O)/tests/mem/ (built by tests-build), and the Debian packages of the
# real ones they trace (sqlite3; gcc and python3 are in the Makefile's
# list) and of the allocators some of them link with (jemalloc, and
# gperftools' tcmalloc).
#
# Built without the sanitizers, in every build directory: they are data
# for the test, not code under test, and an ASan runtime must come first
# in the program, where the preloaded tracer would be.
DEB_PKGS += sqlite3 libjemalloc-dev libgoogle-perftools-dev

MR_DIR   := $(O)/tests/mem
MR_WARN  := -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror)
MR_PROGS := $(MR_DIR)/cxx_containers $(MR_DIR)/jemalloc_sizes $(MR_DIR)/fork_exec \
            $(MR_DIR)/follow_tree $(MR_DIR)/tcmalloc_sizes $(MR_DIR)/dl_alloc \
            $(MR_DIR)/dl_alloc_lib.so

$(MR_DIR)/cxx_containers: tests/e2e/mem_progs/cxx_containers.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O2 -g $(MR_WARN) -pthread -o $@ $<

# jemalloc's malloc is the program's: the tracer's RTLD_NEXT lookups find
# it before glibc's.
$(MR_DIR)/jemalloc_sizes: tests/e2e/mem_progs/jemalloc_sizes.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(MR_WARN) -o $@ $< -ljemalloc

# tcmalloc's malloc and its own C++ operators new and delete are the
# program's (libtcmalloc.so comes before libstdc++ in the search order).
$(MR_DIR)/tcmalloc_sizes: tests/e2e/mem_progs/tcmalloc_sizes.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(MR_WARN) -o $@ $< -ltcmalloc

# A program that dlopen()s a library which allocates, then dlclose()s it
# (tests/e2e/mem_more.sh); the library is linked with nothing of ours.
$(MR_DIR)/dl_alloc: tests/e2e/mem_progs/dl_alloc.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(MR_WARN) -o $@ $< -ldl

$(MR_DIR)/dl_alloc_lib.so: tests/e2e/mem_progs/dl_alloc_lib.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -fPIC -shared $(MR_WARN) -o $@ $<

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
