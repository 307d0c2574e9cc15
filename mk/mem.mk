# The allocation tracer: libringtrace-malloc.so, loaded with LD_PRELOAD by
# `ringtrace record --mem` (src/mem/memtrace.c). It links with
# libringtrace.so, found next to it ($ORIGIN), so that a program with its
# own tracepoints shares one library and one set of buffers.
MEMLIB := $(O)/lib/libringtrace-malloc.so
all: $(MEMLIB)

# -fexceptions: a std::bad_alloc from the real operator new unwinds through
# the wrappers. Frame pointers: stacks captured in the wrappers walk them.
$(MEMLIB): src/mem/memtrace.c src/mem/memagg.c src/mem/memsample.c src/mem/memagg.h src/mem/mem_agg.h \
		src/mem/mem_family.h src/mem/memsample.h $(O)/lib/libringtrace.so include/ringtrace/*.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fexceptions -fno-omit-frame-pointer -fvisibility=hidden -shared \
	    -o $@ src/mem/memtrace.c src/mem/memagg.c src/mem/memsample.c $(LDFLAGS) -L$(O)/lib -Wl,-rpath,'$$ORIGIN' -lringtrace -ldl $(LDLIBS)

# The test programs of the allocation tracer are ordinary programs: not
# linked with libringtrace (the tracer needs no rebuild).
$(O)/tests/e2e/memprog: tests/e2e/progs/memprog.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) -lpthread

# Known totals per call site for the sampling test (tests/e2e/mem_sample.sh).
$(O)/tests/e2e/memsample: tests/e2e/progs/memsample.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) -lpthread

$(O)/tests/e2e/memcxx: tests/e2e/progs/memcxx.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(filter-out -std=gnu11 -Wstrict-prototypes -Wmissing-prototypes,$(CFLAGS)) \
	    -std=gnu++17 -o $@ $< $(LDFLAGS) -lpthread
tests-build: $(O)/tests/e2e/memcxx

# The aggregate mode's counters under threads (tests/stress/stress_memagg.c):
# memagg.c compiled in, as the preloaded library has it. Libraries named by
# path: LIBSO and CORE_A are defined after this file is included, and a
# prerequisite is expanded when its rule is read.
$(O)/tests/stress_memagg: tests/stress/stress_memagg.c src/mem/memagg.c src/mem/memsample.c src/mem/memagg.h \
		src/mem/mem_agg.h src/mem/memsample.h \
		$(O)/lib/libringtrace-core.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ tests/stress/stress_memagg.c src/mem/memagg.c src/mem/memsample.c $(O)/lib/libringtrace-core.a $(LDFLAGS) \
	    $(TOOL_LIBS) $(LIB_LIBS) $(LDLIBS)

# The unit test of the sampling arithmetic and set compiles memsample.c in.
$(O)/tests/test_memsample: src/mem/memsample.c src/mem/memsample.h

# The unit test of the aggregate mode's counting compiles memagg.c and
# memsample.c in.
$(O)/tests/test_memagg: src/mem/memagg.c src/mem/memsample.c src/mem/memagg.h src/mem/mem_agg.h src/mem/memsample.h
