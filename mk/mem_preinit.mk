# The programs of tests/e2e/mem_preinit.sh: a program linked with a
# library that needs another, each with a constructor that allocates
# ($(O)/tests/mem/, built by tests-build, without the sanitizers: data
# for the test, as in mk/mem_exec.mk).
PI_DIR  := $(O)/tests/mem
PI_WARN := -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror)

$(PI_DIR)/libpreinit_dep.so: tests/e2e/mem_progs/preinit_dep.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -fPIC -shared $(PI_WARN) -Wl,-soname,libpreinit_dep.so -o $@ $<

$(PI_DIR)/libpreinit.so: tests/e2e/mem_progs/preinit_lib.c $(PI_DIR)/libpreinit_dep.so
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -fPIC -shared $(PI_WARN) -Wl,-soname,libpreinit.so -o $@ $< \
		-L$(PI_DIR) -lpreinit_dep -Wl,-rpath,'$$ORIGIN'

$(PI_DIR)/preinit_prog: tests/e2e/mem_progs/preinit_prog.c $(PI_DIR)/libpreinit.so
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g $(PI_WARN) -o $@ $< -L$(PI_DIR) -lpreinit -Wl,-rpath,'$$ORIGIN'

.PHONY: mem-preinit-progs
mem-preinit-progs: $(PI_DIR)/preinit_prog
tests-build: mem-preinit-progs

# Two libraries with events, one declared with a stack, and a program
# linked with both: built as the tests' tracepoint programs are (the test
# flags, linked to libringtrace; the library by name: this file is read
# before the Makefile sets LIBSO).
$(PI_DIR)/libpreinit_tp_%.so: tests/e2e/mem_progs/preinit_tp_%.c $(O)/lib/libringtrace.so include/ringtrace/*.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared -Wl,-soname,$(notdir $@) -o $@ $< $(LDFLAGS) $(APP_LINK)

$(PI_DIR)/preinit_tp: tests/e2e/mem_progs/preinit_tp.c $(PI_DIR)/libpreinit_tp_plain.so $(PI_DIR)/libpreinit_tp_stack.so
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) -L$(PI_DIR) -lpreinit_tp_plain -lpreinit_tp_stack \
		-Wl,-rpath,'$$ORIGIN' $(APP_LINK)

mem-preinit-progs: $(PI_DIR)/preinit_tp
