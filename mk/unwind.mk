# The unwind tables' verification on real programs (tests/e2e/unwind_verify.sh):
# a program of the hard cases, built like a distribution's (optimised,
# no frame pointers), not instrumented (data for the test, as mem_real.mk's).
UW_DIR := $(O)/tests/unwind

$(UW_DIR)/uw_stress: tests/e2e/unwind_progs/uw_stress.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=gnu++17 -O2 -g -fomit-frame-pointer -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) \
		-pthread -o $@ $< -ldl

tests-build: $(UW_DIR)/uw_stress
