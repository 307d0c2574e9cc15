# ringtrace build.  GNU Make.
#
#   make              library, command, examples        (build/)
#   make test         install missing Debian packages, build, run every test
#   make run          install, build, record the example and dump it
#   make bench        run the benchmarks (figures printed, nothing asserted)
#   make install PREFIX=/usr/local
#
# Variables: CC (gcc or clang), SAN=address|thread (sanitizer build into
# build-$(SAN)/), WERROR=1 (warnings are errors; CI sets it), O=DIR (build dir).

# The fragments in mk/ define rules before `all`: keep `make` = `make all`.
.DEFAULT_GOAL := all

# make predefines CC=cc; the project's default is gcc.
ifeq ($(origin CC),default)
  CC := gcc
endif
ifeq ($(origin CXX),default)
  CXX := g++
endif
PREFIX  ?= /usr/local
VERSION := 0.1.0

ifeq ($(SAN),address)
  O       ?= build-asan
  SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else ifeq ($(SAN),thread)
  O       ?= build-tsan
  SANFLAGS := -fsanitize=thread
else
  O       ?= build
  SANFLAGS :=
endif

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wno-unused-parameter -Wformat=2 -Wundef
ifeq ($(WERROR),1)
  WARN  += -Werror
endif

CPPFLAGS := -Iinclude -Isrc -D_GNU_SOURCE -DRINGTRACE_VERSION='"$(VERSION)"'
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -fPIC $(WARN) $(SANFLAGS)
LDFLAGS  += $(SANFLAGS)
LDLIBS   := -lpthread

# Sources by folder (docs/design.md, "Module map", says what each may call).
#
# Code that runs inside the traced program (fragments add): the runtime
# proper, src/lib/, and the layers under it that the command shares (the
# ring buffer, the shared-memory layouts of the stack map and the control
# block, the clock, signatures).
LIB_SRC   := $(wildcard src/lib/*.c src/ringbuf/*.c src/common/*.c) src/stackmap/stackmap.c \
             src/ctl/ctl_common.c
# Everything else the command needs (exports print; the library never does).
TOOL_SRC  := $(wildcard src/util/*.c src/ctf/*.c src/read/*.c) src/stackmap/stackmap_export.c \
             src/ctl/ctl_client.c
# Tool-side libraries of their own folders.
TOOL_SRC  += $(wildcard src/analyze/*.c src/session/*.c src/export/*.c)
CLI_SRC   := $(wildcard src/cli/*.c)
# Code only the tests link (encoders of traces the recorder never writes).
TEST_SRC  := $(wildcard tests/support/*.c)
# Libraries the shared library and the command link with (fragments add).
LIB_LIBS  :=
TOOL_LIBS :=
# Debian packages the build needs; fragments add theirs.
DEB_PKGS := gcc g++ clang libclang-rt-14-dev make pkg-config libcmocka-dev \
            babeltrace2 python3

# Subsystems with their own sources, libraries and packages (mk/*.mk)
# append to LIB_SRC, TOOL_SRC, LIB_LIBS, TOOL_LIBS and DEB_PKGS here.
include $(sort $(wildcard mk/*.mk))
# A tool folder named both above and by a fragment counts once.
TOOL_SRC  := $(sort $(TOOL_SRC))

LIB_OBJ   := $(LIB_SRC:%.c=$(O)/obj/%.o)
TOOL_OBJ  := $(TOOL_SRC:%.c=$(O)/obj/%.o)
# The runtime proper, by folder: linked into libringtrace.so, never into
# the command. The base is what of the program's side the command links.
RT_OBJ    := $(filter $(O)/obj/src/lib/%,$(LIB_OBJ))
BASE_OBJ  := $(filter-out $(O)/obj/src/lib/%,$(LIB_OBJ))
CLI_OBJ   := $(CLI_SRC:%.c=$(O)/obj/%.o)
TEST_OBJ  := $(TEST_SRC:%.c=$(O)/obj/%.o)

LIBSO     := $(O)/lib/libringtrace.so
RT_A      := $(O)/lib/libringtrace-rt.a
BASE_A    := $(O)/lib/libringtrace-base.a
TOOL_A    := $(O)/lib/libringtrace-tool.a
# All three, for the tests, which reach into every layer.
CORE_A    := $(O)/lib/libringtrace-core.a
TEST_A    := $(O)/lib/libringtrace-test.a
CLI       := $(O)/bin/ringtrace

EXAMPLES  := $(patsubst examples/%.c,$(O)/examples/%,$(wildcard examples/*.c))
UNIT      := $(patsubst tests/unit/%.c,$(O)/tests/%,$(wildcard tests/unit/test_*.c))
STRESS    := $(patsubst tests/stress/%.c,$(O)/tests/%,$(wildcard tests/stress/*.c))
E2E_PROGS := $(patsubst tests/e2e/progs/%.c,$(O)/tests/e2e/%,$(filter-out tests/e2e/progs/plugin%.c,$(wildcard tests/e2e/progs/*.c)))
E2E_PLUG  := $(patsubst tests/e2e/progs/%.c,$(O)/tests/e2e/%.so,$(wildcard tests/e2e/progs/plugin*.c))
TOOLS     := $(patsubst tests/tools/%.c,$(O)/tests/tools/%,$(wildcard tests/tools/*.c))
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)

.PHONY: all test run bench install clean deps check-unit check-e2e check-stress
all: $(LIBSO) $(CLI) $(EXAMPLES) $(RT_A)

$(O)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# The library exports only what the version script lists, and its own
# references bind locally.
$(LIB_OBJ): CFLAGS += -fvisibility=hidden

$(LIBSO): $(LIB_OBJ) src/lib/libringtrace.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(LIB_OBJ) $(LDFLAGS) -Wl,--version-script=src/lib/libringtrace.map \
	    -Wl,-soname,libringtrace.so.0 $(LIB_LIBS) $(LDLIBS)
	ln -sf libringtrace.so $(O)/lib/libringtrace.so.0

$(RT_A): $(RT_OBJ)
$(BASE_A): $(BASE_OBJ)
$(TOOL_A): $(TOOL_OBJ)
$(CORE_A): $(LIB_OBJ) $(TOOL_OBJ)
$(RT_A) $(BASE_A) $(TOOL_A) $(CORE_A):
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(TEST_A): $(TEST_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# Tests include their support code as "support/x.h".
$(TEST_OBJ) $(UNIT) $(STRESS) $(TOOLS): private CPPFLAGS += -Itests

# The command links the tool archive and the base, not the runtime: a
# reference to src/lib from the command fails here (and
# tests/e2e/layers.sh checks the result).
$(CLI): $(CLI_OBJ) $(TOOL_A) $(BASE_A)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(CLI_OBJ) $(TOOL_A) $(BASE_A) $(LDFLAGS) $(TOOL_LIBS) $(LIB_LIBS) $(LDLIBS)

# Programs that use tracepoints link to the shared library, as users do.
APP_LINK = -L$(O)/lib -Wl,-rpath,$(abspath $(O)/lib) -lringtrace $(LDLIBS)

$(O)/examples/%: examples/%.c $(LIBSO) include/ringtrace/*.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) $(APP_LINK)

$(O)/tests/e2e/%: tests/e2e/progs/%.c $(LIBSO) include/ringtrace/*.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) $(APP_LINK) -ldl

$(O)/tests/e2e/%.so: tests/e2e/progs/%.c $(LIBSO) include/ringtrace/*.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared -o $@ $< $(LDFLAGS) $(APP_LINK)

$(O)/tests/test_%: tests/unit/test_%.c $(TEST_A) $(CORE_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(TEST_A) $(CORE_A) $(LDFLAGS) -lcmocka $(TOOL_LIBS) $(LIB_LIBS) $(LDLIBS)

$(O)/tests/%: tests/stress/%.c $(TEST_A) $(CORE_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(TEST_A) $(CORE_A) $(LDFLAGS) $(TOOL_LIBS) $(LIB_LIBS) $(LDLIBS)

$(O)/tests/tools/%: tests/tools/%.c $(TEST_A) $(CORE_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(TEST_A) $(CORE_A) $(LDFLAGS) $(TOOL_LIBS) $(LIB_LIBS) $(LDLIBS)

# libFuzzer targets: clang only, each parser compiled in with the sanitizers.
FUZZ_FLAGS := -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer -g -O1 -std=gnu11
FUZZ_BASE := $(wildcard src/common/*.c) src/stackmap/stackmap.c src/stackmap/maplog.c src/ctl/ctl_common.c \
             src/ringbuf/rb_shm.c
# The parsers and what they call: not the session library (it needs the
# whole ring buffer and the runtime's layouts), nor the profile writer.
FUZZ_TOOL := $(filter-out src/session/% src/export/%,$(TOOL_SRC))
build-fuzz/%: tests/fuzz/%.c $(FUZZ_TOOL) $(FUZZ_BASE) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	clang $(CPPFLAGS) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_TOOL) $(FUZZ_BASE) $(TOOL_LIBS) -ldl -lpthread

tests-build: all $(UNIT) $(STRESS) $(E2E_PROGS) $(E2E_PLUG) $(TOOLS)
.PHONY: tests-build

# --- set-up on a fresh Debian 12 machine ---------------------------------
deps:
	@./scripts/deps.sh $(DEB_PKGS)

test: deps
	./scripts/test.sh

run: deps all
	./scripts/run-example.sh $(O)

bench: deps all $(O)/tests/e2e/snapwriter $(O)/tests/tools/snapstress
	./bench/run.sh $(O)

clean:
	rm -rf build build-asan build-tsan build-clang build-fuzz

-include $(shell find $(O)/obj -name '*.d' 2>/dev/null)
