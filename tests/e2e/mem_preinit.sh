#!/bin/bash
# mem_preinit.sh - the allocations made before main by the constructors
# of the program's libraries (those ld.so runs after libringtrace's) and
# of the program are all in the report when stacks are captured: under
# `record --mem --stacks` and `ringtrace mem` (stacks by default) as under
# `record --mem`. Registering the unwind tables used to pin every loaded
# object with dlopen, which ran those constructors inside libringtrace's
# own, where their allocations were taken for the tracer's. And a plain
# `record` of a program whose library declaring an event with a stack is
# initialised before another library with events: the first
# registration sets up stack capture under the registry's lock, and
# running the second constructor there deadlocked.
#
#   tests/e2e/mem_preinit.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup mem_preinit "${1:-build}"
PB=${MEM_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
PP=$PB/tests/mem/preinit_prog
MEMLIB=$PB/lib/libringtrace-malloc.so
export RINGTRACE_MALLOC_LIB=$MEMLIB
TO=120
trap 'rm -rf "$T"' EXIT

. "$REPO/tests/e2e/mem_lib.sh"

# rows JSON: the constructors' and main's rows, "allocs frees requested
# leaked_bytes leaked_blocks families" each (cross-CPU frees left out:
# the scheduler decides them).
rows() {
	local f
	for f in preinit_dep_init preinit_lib_init preinit_prog_init main; do
		printf '%s: %s\n' "$f" "$(row "$1" "$f" | cut -d' ' -f1-5,8)"
	done
}
want="preinit_dep_init: 4 1 2006 1506 3 malloc
preinit_lib_init: 7 0 7021 7021 7 malloc
preinit_prog_init: 3 0 6003 6003 3 malloc
main: 1 1 77 0 0 malloc"

# totals JSON: "allocations frees reallocs".
totals() {
	python3 - "$1" <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t["allocations"], t["frees"], t["reallocs"])
PYEOF
}

# check NAME DIR CMD...: CMD records into DIR; output and status are the
# program's; every constructor's blocks are in the report.
check() {
	local name=$1 dir=$2
	shift 2
	begin
	if have "$RT" "$PP" "$MEMLIB"; then
		timeout $TO "$@" >"$dir.out" 2>"$dir.err"
		eq "status" "$?" 0
		eq "output" "$(head -n 1 "$dir.out")" "preinit ok"
		if "$RT" report "$dir" --by function --top 0 --json >"$dir.json" 2>"$dir.rerr"; then
			eq "rows" "$(rows "$dir.json")" "$want"
			totals "$dir.json" >"$dir.tot"
		else
			why "report $dir failed"
			show "$dir.rerr"
		fi
	fi
	finish "$name"
}

check "record --mem: every constructor's allocations are in the report" \
	r0 "$RT" record -q --mem -o r0 -- "$PP"
check "record --mem --stacks: the allocations of the libraries' constructors run after libringtrace's are in the report" \
	r1 "$RT" record -q --mem --stacks -o r1 -- "$PP"
check "ringtrace mem (stacks by default): the same allocations are in the report" \
	m1 "$RT" mem -q -o m1 -- "$PP"

begin
if [ -s r0.tot ] && [ -s r1.tot ] && [ -s m1.tot ]; then
	eq "record --mem --stacks" "$(cat r1.tot)" "$(cat r0.tot)"
	eq "ringtrace mem" "$(cat m1.tot)" "$(cat r0.tot)"
else
	why "missing totals (see the checks above)"
fi
finish "the totals (allocations, frees, reallocs) with stacks are those without"

# A real program: ls's allocations with stacks are the same as without.
begin
if have "$RT" "$MEMLIB"; then
	mkdir lsdir && touch lsdir/a lsdir/b
	for s in plain stacks; do
		opt=; [ $s = stacks ] && opt=--stacks
		timeout $TO "$RT" record -q --mem $opt -o ls_$s -- ls lsdir >ls_$s.out 2>ls_$s.err
		eq "ls $s status" "$?" 0
		eq "ls $s output" "$(cat ls_$s.out | tr '\n' ' ')" "a b "
		"$RT" report ls_$s --json >ls_$s.json 2>/dev/null && totals ls_$s.json >ls_$s.tot
	done
	[ -s ls_plain.tot ] || why "no report of ls without stacks"
	eq "ls with stacks" "$(cat ls_stacks.tot 2>/dev/null)" "$(cat ls_plain.tot 2>/dev/null)"
fi
finish "record --mem --stacks -- ls: as many allocations, frees and reallocs as without stacks"

begin
TP=$PB/tests/mem/preinit_tp
if have "$RT" "$TP"; then
	timeout $TO "$RT" record -q -o tp -- "$TP" >tp.out 2>tp.err
	eq "status" "$?" 0
	eq "output" "$(cat tp.out)" "tp ok"
	"$RT" dump tp >tp.dump 2>&1
	eq "the event with a stack" "$(grep -c 'pre_stk:ev: n=1 stack_id=[0-9]' tp.dump)" 1
	eq "with a stack id" "$(grep -c 'stack_id=4294967295' tp.dump)" 0
	eq "the other library's event" "$(grep -c 'pre_plain:ev: n=2' tp.dump)" 1
fi
finish "record: a library whose event has a stack set up before another library's constructor ran (no deadlock)"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
