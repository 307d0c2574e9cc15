#!/bin/bash
# unwind.sh - the stack-capture benchmark (bench/bench_unwind.c): ns per
# capture of 16 and 64 frames with the frame-pointer walk, libunwind and
# glibc's backtrace(), the first capture in a new thread, and frames right
# on a chain built without frame pointers. Figures are printed, never
# asserted; raw `result` lines go to BUILD_DIR/bench/unwind.txt too.
#
#   bench/unwind.sh BUILD_DIR [bench_unwind options]
#
# Environment: CC (compiler, default gcc). Needs libunwind-dev (headers)
# and libunwind8 (loaded at run time by src/unwind/unwind.c).
set -u

BUILD=${1:-build}
shift || true
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-gcc}
mkdir -p "$BUILD/bench" || exit 1
OUT=$(cd "$BUILD/bench" && pwd)
FLAGS="-O2 -g -std=gnu11 -D_GNU_SOURCE -I$ROOT/include -I$ROOT/src -fno-optimize-sibling-calls"

# The chain without frame pointers is its own object; the rest (the
# program and src/unwind) keeps them, as the FP walk needs.
if ! "$CC" $FLAGS -fomit-frame-pointer -DBENCH_NOFP_CHAIN -c -o "$OUT/bench_unwind_nofp.o" \
		"$ROOT/bench/bench_unwind.c" ||
	! "$CC" $FLAGS -fno-omit-frame-pointer -o "$OUT/bench_unwind" "$ROOT/bench/bench_unwind.c" \
		"$ROOT/src/unwind/unwind.c" "$ROOT/src/unwind/fast.c" "$ROOT/src/unwind/cfi.c" \
		"$ROOT/src/unwind/startup.c" "$ROOT/src/unwind/stackrange.c" \
		"$OUT/bench_unwind_nofp.o" -ldl -lpthread; then
	echo "bench: cannot build bench_unwind" >&2
	exit 1
fi
echo "info unwind_compiler $("$CC" --version | head -1)" | tee "$OUT/unwind.txt"
if command -v taskset >/dev/null; then
	taskset -c 0 "$OUT/bench_unwind" "$@" | tee -a "$OUT/unwind.txt"
else
	"$OUT/bench_unwind" "$@" | tee -a "$OUT/unwind.txt"
fi
