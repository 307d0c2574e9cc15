# The programs of tests/e2e/mem_exec.sh: a library whose constructor
# allocates before the allocation tracer's, and a program linked with it
# ($(O)/tests/mem/, built by tests-build, without the sanitizers: data
# for the test, as in mk/mem_real.mk).
ME_DIR  := $(O)/tests/mem
ME_WARN := -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror)

$(ME_DIR)/libearly.so: tests/e2e/mem_progs/early_lib.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -fPIC -shared $(ME_WARN) -o $@ $<

$(ME_DIR)/early_prog: tests/e2e/mem_progs/early_prog.c $(ME_DIR)/libearly.so
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(ME_WARN) -o $@ $< -L$(ME_DIR) -learly -Wl,-rpath,'$$ORIGIN'

.PHONY: mem-exec-progs
mem-exec-progs: $(ME_DIR)/early_prog
tests-build: mem-exec-progs
