#!/bin/bash
# build.sh - build the benchmark programs into BUILD_DIR/bench/:
#   bench_tp     ringtrace tracepoints (needs include/ringtrace/ringtrace.h
#                and BUILD_DIR/lib/libringtrace.so, built by `make`)
#   bench_lttng  the same loops with LTTng-UST (needs liblttng-ust-dev)
#
#   bench/build.sh BUILD_DIR
#
# Built with the project's compiler and optimisation (CC, default gcc; -O2),
# loops aligned (see CFLAGS),
# linked as the issue says programs link: -Iinclude -L$BUILD/lib
# -Wl,-rpath,$BUILD/lib -lringtrace -lpthread. Each program that cannot be
# built is reported on stderr; the exit status is the number of failures.
set -u

BUILD=${1:?usage: build.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$BUILD/bench" || exit 2
BUILD=$(cd "$BUILD" && pwd)
CC=${CC:-gcc}
# -falign-loops=32: each timed loop (a few instructions) then lies in one
# 32-byte block. Without it the empty or the disabled loop may happen to end
# in a macro-fused compare-and-branch across a 32-byte boundary, which Intel
# CPUs with the JCC-erratum microcode cannot run from the uop cache: one
# extra cycle per iteration that depends on code layout, not on the
# tracepoint (seen here: disabled 1.3 ns vs empty 0.7 ns, or equal, from one
# unrelated header edit to the next).
CFLAGS=(-O2 -g -falign-loops=32 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes
	-Wmissing-prototypes)
fail=0

note() { echo "bench/build: $*" >&2; }

if [ ! -f "$ROOT/include/ringtrace/ringtrace.h" ]; then
	note "include/ringtrace/ringtrace.h does not exist yet: no ringtrace figures"
	fail=$((fail + 1))
elif [ ! -f "$BUILD/lib/libringtrace.so" ]; then
	note "$BUILD/lib/libringtrace.so is missing (run make): no ringtrace figures"
	fail=$((fail + 1))
elif ! "$CC" "${CFLAGS[@]}" -I"$ROOT/include" -o "$BUILD/bench/bench_tp" "$ROOT/bench/bench_tp.c" \
		-L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lringtrace -lpthread; then
	note "cannot build bench_tp (compiler output above)"
	fail=$((fail + 1))
fi

if ! "$CC" "${CFLAGS[@]}" -I"$ROOT/bench/lttng" -o "$BUILD/bench/bench_lttng" \
		"$ROOT/bench/lttng/bench_lttng.c" "$ROOT/bench/lttng/tp.c" -llttng-ust -ldl -lpthread; then
	note "cannot build bench_lttng (is liblttng-ust-dev installed?)"
	fail=$((fail + 1))
fi
exit $fail
