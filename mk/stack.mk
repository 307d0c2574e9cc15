# Stack capture (src/unwind) and symbolisation (src/sym): docs/stack-capture.md.

# Inside the traced program: the unwinders and the snapshot of loaded
# objects. libunwind is dlopen'ed at run time (src/unwind/unwind.c says
# why), so the library needs only its headers at build time, and -ldl.
LIB_SRC  += src/unwind/unwind.c src/unwind/stackrange.c src/unwind/startup.c src/unwind/fast.c src/unwind/cfi.c src/sym/maps.c src/stackmap/maplog.c
LIB_LIBS += -ldl
# In the command: offline symbolisation with libdw, C++ names demangled by
# libstdc++.
TOOL_SRC  += src/sym/symbolize.c
TOOL_SRC  += src/stackmap/stack_files.c
TOOL_LIBS += -ldw -lelf -lstdc++
DEB_PKGS  += libunwind-dev libdw-dev libelf-dev binutils

# The frame-pointer walk starts from rt_unwind()'s own frame, and goes
# through the library's frames between it and the probe (src/lib/stack.c).
$(O)/obj/src/unwind/unwind.o $(O)/obj/src/lib/stack.o $(O)/obj/src/lib/probe.o: \
	CFLAGS += -fno-omit-frame-pointer
# The stacks test program: walkable by frame pointers too (a thread's
# captures in signal handlers before its first one outside use them).
$(O)/tests/e2e/stacks: CFLAGS += -fno-omit-frame-pointer

# The unit test's call chains must keep every frame and frame pointer
# (private: not passed on to the library objects it depends on).
$(O)/tests/test_unwind: private CFLAGS += -fno-omit-frame-pointer -fno-optimize-sibling-calls

# ---- fixtures: tests/sym/ -> $(O)/tests/sym/ ------------------------------
# Programs that print their own functions, call lines and loaded objects
# (tests/unit/test_sym.c symbolises what they print), built without the
# sanitizers: they are data for the test, not code under test.
FX_DIR   := $(O)/tests/sym
FX_WARN  := -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror)
FX_CC    := $(CC) $(CPPFLAGS) -std=gnu11 $(FX_WARN) -Wl,--build-id
FX_CXX   := $(CXX) $(CPPFLAGS) -std=gnu++17 $(FX_WARN) -Wl,--build-id
STACK_FIXTURES := $(FX_DIR)/fx_g $(FX_DIR)/fx_nodebug $(FX_DIR)/fx_stripped \
                  $(FX_DIR)/fx_linked $(FX_DIR)/fx_cpp $(FX_DIR)/libfx_plugin.so \
                  $(FX_DIR)/libfx_frame_a.so $(FX_DIR)/libfx_frame_b.so

$(FX_DIR)/maps.o: src/sym/maps.c src/sym/maps.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=gnu11 $(FX_WARN) -O1 -c $< -o $@

# With debug information, unoptimised: every call on its own line.
$(FX_DIR)/fx_g: tests/sym/fx.c $(FX_DIR)/maps.o src/sym/maps.h
	$(FX_CC) -O0 -g -DFX_VARIANT='"g"' -o $@ $< $(FX_DIR)/maps.o

# Symbol table only.
$(FX_DIR)/fx_nodebug: tests/sym/fx.c $(FX_DIR)/maps.o src/sym/maps.h
	$(FX_CC) -O1 -g0 -DFX_VARIANT='"nodebug"' -o $@ $< $(FX_DIR)/maps.o

# Stripped of everything; its symbols and lines are in a separate file
# found only by build id, under $(FX_DIR)/debug (the test's debug dir).
$(FX_DIR)/fx_stripped: tests/sym/fx.c $(FX_DIR)/maps.o src/sym/maps.h
	$(FX_CC) -O0 -g -DFX_VARIANT='"stripped"' -o $@.full $< $(FX_DIR)/maps.o
	id=$$(readelf -n $@.full | sed -n 's/^ *Build ID: *//p'); \
	test -n "$$id" && d=$(FX_DIR)/debug/.build-id/$$(echo $$id | cut -c1-2) && mkdir -p $$d && \
	objcopy --only-keep-debug $@.full $$d/$$(echo $$id | cut -c3-).debug && \
	objcopy --strip-all $@.full $@ && rm -f $@.full

# Stripped, no build id: its debug file is found through .gnu_debuglink in
# .debug/ next to it, checked by CRC.
$(FX_DIR)/fx_linked: tests/sym/fx.c $(FX_DIR)/maps.o src/sym/maps.h
	$(FX_CC) -O0 -g -Wl,--build-id=none -DFX_VARIANT='"linked"' -o $@.full $< $(FX_DIR)/maps.o
	@mkdir -p $(FX_DIR)/.debug
	objcopy --only-keep-debug $@.full $(FX_DIR)/.debug/fx_linked.debug
	objcopy --strip-all --add-gnu-debuglink=$(FX_DIR)/.debug/fx_linked.debug $@.full $@
	rm -f $@.full

$(FX_DIR)/fx_cpp: tests/sym/fx_cpp.cpp $(FX_DIR)/maps.o src/sym/maps.h
	$(FX_CXX) -O0 -g -o $@ $< $(FX_DIR)/maps.o

# Loaded and unloaded in a loop by test_unwind's signal storm.
$(FX_DIR)/libfx_plugin.so: tests/sym/fx_plugin.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=gnu11 $(FX_WARN) -O1 -fPIC -shared -o $@ $<

# One code, two frame sizes (words): test_unwind's cache generation test.
FX_FRAME_WORDS_a := 40
FX_FRAME_WORDS_b := 80
$(FX_DIR)/libfx_frame_%.so: tests/sym/fx_frame.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=gnu11 $(FX_WARN) -O2 -fomit-frame-pointer -fPIC -shared \
	    -DFX_FRAME_WORDS=$(FX_FRAME_WORDS_$*) -o $@ $<

tests-build: $(STACK_FIXTURES)

# Writes trace directories with TRACE/stacks/ for tests/e2e/stackmap_cli.sh:
# stacks made of its own functions' addresses, its own loaded objects.
# Built like the tests (sanitizers included): stack_files_write is code
# under test. The core archive is named by path: CORE_A is defined after
# this fragment is included.
$(O)/tests/stackfiles_gen: tests/e2e/stackfiles_gen.c $(O)/lib/libringtrace-core.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(O)/lib/libringtrace-core.a $(LDFLAGS) $(TOOL_LIBS) $(LIB_LIBS) $(LDLIBS)

tests-build: $(O)/tests/stackfiles_gen
