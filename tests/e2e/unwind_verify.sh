#!/bin/bash
# unwind_verify.sh - the unwind tables (src/unwind/fast.c, the default
# stack capture) give libunwind's stacks on real programs: each program
# runs under `ringtrace record --mem --stacks` with
# RINGTRACE_UNWIND_VERIFY=1, which makes every capture the tables answer
# run libunwind too and count the differences, and RINGTRACE_UNWIND_STATS,
# where the traced process writes its counters at exit. Required: 0
# mismatches, and most captures answered (and so checked) by the tables.
#
# The programs: gcc's cc1 on a generated file, python3 with every object
# through malloc, sqlite3, uw_stress (tests/e2e/unwind_progs/):
# exceptions through several frames, allocations in signal handlers,
# dlopen/dlclose of a library that allocates, threads started and ended;
# and uw_coro: allocations in makecontext coroutines.
#
#   tests/e2e/unwind_verify.sh [BUILD_DIR]
#
# UW_PROGS_BUILD=DIR takes the preloaded library and uw_stress from
# another build than the command (an ASan command traces plain programs).
set -u
export LC_ALL=C PYTHONHASHSEED=0
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup unwind "${1:-build}"
trap 'rm -rf "$T"' EXIT
PB=${UW_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
export RINGTRACE_MALLOC_LIB=$PB/lib/libringtrace-malloc.so
SRC=$REPO/tests/e2e/mem_progs
TO=300
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)

# verified TAG MIN PROGRAM ARGS...: traced with verification into TAG.t;
# its counters in TAG.stats. Fails on a mismatch, on fewer than MIN
# captures checked, or when the tables answered less than 90 %.
verified() {
	local tag=$1 min=$2
	shift 2
	rm -f "$T/$tag.stats"
	(cd "$T" && RINGTRACE_UNWIND_VERIFY=1 RINGTRACE_UNWIND_STATS="$T/$tag.stats" \
		timeout $TO "$RT" record --mem --stacks -o "$T/$tag.t" -- "$@"; exit) \
		>"$T/$tag.out" 2>"$T/$tag.err"
	local rc=$?
	eq "exit status" "$rc" 0
	[ $rc = 0 ] || show "$T/$tag.err"
	if [ ! -s "$T/$tag.stats" ]; then
		why "no counters written (RINGTRACE_UNWIND_STATS)"
		return
	fi
	local line
	line=$(grep '^unwind ' "$T/$tag.stats" | head -n 1)
	echo "# $tag: $line"
	grep '^mismatch ' "$T/$tag.stats" | while IFS= read -r l; do echo "# $tag: $l"; done
	val() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
	eq "verification on" "$(val verify)" 1
	eq "mismatches with libunwind" "$(val mismatches)" 0
	local v c
	v=$(val verified)
	c=$(val captures)
	[ "${v:-0}" -ge "$min" ] 2>/dev/null || why "only ${v:-0} captures verified (want >= $min)"
	[ $((${v:-0} * 10)) -ge $((${c:-1} * 9)) ] || why "the tables answered ${v:-0} of ${c:-0} captures"
	[ "$(grep -c '^unwind ' "$T/$tag.stats")" = 1 ] || why "counters of more than one process"
	rm -rf "$T/$tag.t"
}

begin
CC1=$(gcc -print-prog-name=cc1 2>/dev/null)
if have "$CC1"; then
	awk -v n=60 -f "$SRC/gen_big.awk" >"$T/big.c"
	line=$(cd "$T" && gcc -### -S -O1 big.c -o big.s 2>&1 | grep -E "^ [^ ]*/cc1 ")
	set -f
	eval "cc1_cmd=($line)"
	set +f
	verified cc1 100000 "${cc1_cmd[@]}"
	[ -s "$T/big.s" ] || why "no assembly written"
fi
finish "unwind tables = libunwind on every allocation of gcc's cc1"

begin
if have "$PY"; then
	PYTHONMALLOC=malloc verified py 100000 "$PY" "$SRC/work.py" 20000
	eq "python output lines" "$(wc -l <"$T/py.out")" 3
fi
finish "unwind tables = libunwind on every allocation of python3 (every object through malloc)"

begin
if have "$(command -v sqlite3 || echo sqlite3)"; then
	verified sql 10000 sqlite3 db ".read $SRC/workload.sql"
	[ "$(wc -l <"$T/sql.out")" -ge 30 ] || { why "short output"; show "$T/sql.out"; }
fi
finish "unwind tables = libunwind on every allocation of sqlite3"

begin
if have "$PB/tests/unwind/uw_stress" "$PB/tests/mem/dl_alloc_lib.so"; then
	verified stress 10000 "$PB/tests/unwind/uw_stress" "$PB/tests/mem/dl_alloc_lib.so" 20
	printf 'caught 1000\ndl 200\nsignals yes\ndone\n' >"$T/stress.want"
	cmp -s "$T/stress.want" "$T/stress.out" || { why "unexpected output:"; show "$T/stress.out"; }
fi
finish "unwind tables = libunwind with exceptions, allocating signal handlers, dlopen/dlclose, threads coming and going"

begin
if have "$PB/tests/unwind/uw_coro"; then
	verified coro 4000 "$PB/tests/unwind/uw_coro" 100
	eq "coroutine output" "$(cat "$T/coro.out")" "allocations 4000"
	eq "frames without an FDE left to libunwind" \
		"$(grep '^unwind ' "$T/coro.stats" | tr ' ' '\n' | sed -n 's/^fb_no_fde=//p')" 0
	# Halfway, the program puts other files (its parent's maps,
	# /dev/null) in place of the tracer's kept /proc/self/maps descriptor:
	# the stack ranges must still come from this process's maps (a range
	# asked of another file, or none, makes the walk give up: fb_stack),
	# the replaced one stays the program's (never closed by the tracer),
	# and the tracer keeps one descriptor, no more. It keeps one where the
	# kernel answers PROCMAP_QUERY (Linux 6.11).
	verified corofd 4000 "$PB/tests/unwind/uw_coro" 100 fds
	kv=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')
	want=0
	[ "$kv" -ge 6011 ] && want=1
	eq "coroutine output, descriptors replaced halfway" "$(tr '\n' ' ' <"$T/corofd.out")" \
		"allocations 4000 replaced $want maps open $want "
	for c in fb_no_fde fb_stack; do
		eq "$c with descriptors closed halfway" \
			"$(grep '^unwind ' "$T/corofd.stats" | tr ' ' '\n' | sed -n "s/^$c=//p")" 0
	done
fi
finish "unwind tables = libunwind in makecontext coroutines (the stack ends at __start_context, as libunwind's)"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
