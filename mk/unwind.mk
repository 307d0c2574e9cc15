# The unwind tables' verification on real programs (tests/e2e/unwind_verify.sh):
# programs of the hard cases (uw_stress; uw_coro: makecontext coroutines),
# built like a distribution's (optimised, no frame pointers), not
# instrumented (data for the test, as mem_real.mk's).
UW_DIR := $(O)/tests/unwind

$(UW_DIR)/uw_stress: tests/e2e/unwind_progs/uw_stress.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O2 -g -fomit-frame-pointer -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) \
		-pthread -o $@ $< -ldl

$(UW_DIR)/uw_coro: tests/e2e/unwind_progs/uw_coro.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -fomit-frame-pointer -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -o $@ $<

tests-build: $(UW_DIR)/uw_stress $(UW_DIR)/uw_coro
