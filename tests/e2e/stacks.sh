#!/bin/bash
# stacks.sh - stacks captured at tracepoints, end to end: events declared
# with a stack, `record --stacks`, the map saved into the trace (every id
# resolves, symbolised), exhaustion of a small map (full stacks, nothing
# lost), a capture in a signal handler, and the map of a live program
# (`stackmap PID`, `--reset` refused while tracing is on).
#
#   tests/e2e/stacks.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup stacks "${1:-build}"
PROG=$BUILD/tests/e2e/stacks
LIVE_PID=
cleanup() {
	[ -n "$LIVE_PID" ] && kill "$LIVE_PID" 2>/dev/null && wait "$LIVE_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# ids FILE PATTERN: the distinct stack ids of the dump lines matching.
ids() { grep -E "$2" "$1" | sed -n 's/.*stack_id=\([0-9]*\).*/\1/p' | sort -u; }

# ---- events declared with a stack ------------------------------------------
begin
N=50
if have "$RT" "$PROG"; then
	"$RT" record -o t1 -- "$PROG" $N >out1 2>err1 || { why "record failed"; show err1; }
	"$RT" dump t1 >dump1 2>&1 || { why "dump failed"; show dump1; }
	[ -d t1/stacks ] || why "no t1/stacks directory"
	eq "stk:alloc events with a stack id" "$(grep -c 'stk:alloc:.*stack_id=' dump1)" $((3 * N + 1))
	eq "stk:plain events with a stack id" "$(grep -c 'stk:plain:.*stack_id=' dump1)" 0
	eq "stk:plain events" "$(grep -c 'stk:plain:' dump1)" $N
	# One id per call path, the same for all N events of a path.
	eq "distinct ids" "$(ids dump1 'stk:alloc: n=[0-9]+ ' | wc -l)" 4
	eq "empty inline stacks" "$(grep 'stk:alloc:' dump1 | grep -vc 'stack=\[\]')" 0
	grep -q "^successes: $((3 * N + 1))$" t1/stacks/stackmap.stat || { why "stat:"; show t1/stacks/stackmap.stat 6; }
	grep -q "^entries: 4 / 16384$" t1/stacks/stackmap.stat || { why "stat entries:"; show t1/stacks/stackmap.stat 6; }
	grep -q " $PROG\$" t1/stacks/maps || { why "the program is not in the maps"; show t1/stacks/maps; }
	grep -q "libc.so.6\$" t1/stacks/maps || why "libc is not in the maps"
fi
finish "events declared with a stack carry one id per call path; the map is saved in the trace"

begin
if [ -d t1 ] && command -v babeltrace2 >/dev/null; then
	babeltrace2 t1 >bt1 2>bterr1 || { why "babeltrace2 failed"; show bterr1; }
	eq "babeltrace2 events with stack_id" "$(grep -c 'stk:alloc: .*stack_id = ' bt1)" $((3 * N + 1))
else
	why "no trace or no babeltrace2"
fi
finish "babeltrace2 reads a trace with stacks (stacks/ is skipped)"

# ---- the map resolves, symbolised ------------------------------------------
begin
if [ -d t1 ]; then
	"$RT" stackmap t1 --folded >fold1 2>ferr1 || { why "stackmap --folded failed"; show ferr1; }
	grep -Eq "(^|;)main;path_a;leaf $N\$" fold1 || { why "no 'main;path_a;leaf $N'"; show fold1 6; }
	grep -Eq "(^|;)main;path_b;leaf $N\$" fold1 || why "no 'main;path_b;leaf $N'"
	grep -Eq "(^|;)main;path_c $N\$" fold1 || why "no 'main;path_c $N'"
	# The handler's stack goes through the signal frame back to main.
	grep -Eq "main;.*on_usr1;path_c 1\$" fold1 || { why "no 'main;...;on_usr1;path_c 1'"; show fold1 6; }
	"$RT" stackmap t1 >text1 2>&1 || why "stackmap text failed"
	grep -Eq '^  \[0\] leaf\+0x[0-9a-f]+/0x[0-9a-f]+' text1 || { why "text frames:"; show text1 8; }
fi
finish "every stack id of the trace resolves to symbols, in the signal handler too"

# ---- the tracepoints' captures checked against libunwind -------------------
# An event declared with a stack is captured on the probe's inline path
# (ringtrace__reserve_stack(), whose own frame is the only one of ours
# left to skip); verification mode compares each capture the tables
# answered with libunwind's from the same frame.
begin
RINGTRACE_UNWIND_VERIFY=1 RINGTRACE_UNWIND_STATS="$T/v.stats" "$RT" record -o t8 -- "$PROG" $N >out8 2>err8 ||
	{ why "record failed"; show err8; }
line=$(grep '^unwind ' "$T/v.stats" 2>/dev/null | head -n 1)
echo "# verify: $line"
vval() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
eq "verification on" "$(vval verify)" 1
eq "mismatches with libunwind" "$(vval mismatches)" 0
[ "$(vval verified)" -ge $((3 * N)) ] 2>/dev/null || why "only $(vval verified) captures verified (want >= $((3 * N)))"
"$RT" stackmap t8 --folded >fold8 2>&1
grep -Eq "(^|;)main;path_a;leaf $N\$" fold8 || { why "no 'main;path_a;leaf $N'"; show fold8 6; }
finish "tracepoint captures = libunwind's (verification mode), the probe's frame and ours skipped"

# ---- captures in signal handlers that interrupt malloc ---------------------
begin
timeout 120 "$RT" record -o t6 -- "$PROG" storm >out6 2>err6 || { why "record failed or hung"; show err6; }
k=$(sed -n 's/^storm handled //p' out6)
[ "${k:-0}" -gt 0 ] || { why "no signal handled"; show out6; }
"$RT" dump t6 >dump6 2>&1
eq "handler events" "$(grep -c 'stk:alloc: n=[0-9]* stack_id' dump6)" $((k + 1))
eq "events without a stack" "$(grep -c 'stack_id=4294967295 stack=\[\]' dump6)" 0
"$RT" stackmap t6 --folded >fold6 2>&1
grep -Eq "(^|;)on_usr2;path_c [0-9]+\$" fold6 || { why "no handler stack ending in on_usr2;path_c"; show fold6; }
grep -Eq "storm_worker;path_a;leaf 1\$" fold6 || { why "no normal stack of the worker"; show fold6; }
finish "captures in a signal handler that interrupts malloc: no deadlock, every event has a stack"

# ---- record --stacks --------------------------------------------------------
begin
"$RT" record --stacks -o t2 -- "$PROG" 10 >out2 2>err2 || { why "record --stacks failed"; show err2; }
"$RT" dump t2 >dump2 2>&1
eq "stk:plain events with a stack id" "$(grep -c 'stk:plain:.*stack_id=' dump2)" 10
"$RT" stackmap t2 --folded >fold2 2>&1
grep -Eq "(^|;)main 10\$" fold2 || { why "no 'main 10' for the plain events"; show fold2 6; }
finish "record --stacks gives every event a stack"

# ---- a dlopen'ed (and dlclose'd) object -----------------------------------
begin
if have "$BUILD/tests/e2e/dlplug" "$BUILD/tests/e2e/plugin_a.so"; then
	"$RT" record --stacks -o t7 -- "$BUILD/tests/e2e/dlplug" "$BUILD/tests/e2e/plugin_a.so" >out7 2>err7 ||
		{ why "record failed"; show err7; }
	grep -q "plugin_a.so\$" t7/stacks/maps || { why "plugin_a.so is not in the maps"; show t7/stacks/maps; }
	"$RT" stackmap t7 --folded >fold7 2>&1
	grep -Eq "(^|;)main;plugin_a_hello [0-9]+\$" fold7 || { why "no 'main;plugin_a_hello'"; show fold7; }
fi
finish "stacks through a dlopen'ed object resolve after it was unloaded"

# ---- exhaustion: a pool of 2^10, 5000 distinct stacks ----------------------
begin
"$RT" record --stack-bits 10 -o t3 -- "$PROG" 1 5000 >out3 2>err3 || { why "record failed"; show err3; }
"$RT" dump t3 >dump3 2>&1
drops=$(sed -n 's/^drops: //p' t3/stacks/stackmap.stat)
full=$(grep -c 'stack_id=4294967295 stack=\[0x' dump3)
eq "events with a full stack = drops" "$full" "$drops"
[ "${drops:-0}" -ge 3900 ] || why "drops $drops, want >= 3900 (5000 stacks into 1024 elements)"
eq "stk:alloc events" "$(grep -c 'stk:alloc:' dump3)" $((3 + 5000 + 1))
eq "events without any stack" "$(grep 'stk:alloc:' dump3 | grep -c 'stack_id=4294967295 stack=\[\]')" 0
grep -q "0 lost" err3 || { why "events were lost"; show err3; }
grep -q "^entries: 1024 / 1024$" t3/stacks/stackmap.stat || show t3/stacks/stackmap.stat 6
finish "an exhausted map: drops counted, each such event carries its full stack, nothing lost"

# ---- a live program ---------------------------------------------------------
begin
"$PROG" 1 0 20000 >out4 2>&1 &
LIVE_PID=$!
sleep 0.3
"$RT" on $LIVE_PID >on4 2>&1 || { why "on failed"; show on4; }
sleep 0.3
"$RT" stackmap $LIVE_PID --stat >st4 2>&1 || { why "stackmap PID --stat failed"; show st4; }
e=$(sed -n 's/^entries: \([0-9]*\) .*/\1/p' st4)
[ "${e:-0}" -ge 1 ] || { why "live map has no entry"; show st4 6; }
"$RT" stackmap $LIVE_PID --folded >fold4 2>&1
grep -Eq "main;path_a;leaf [0-9]+\$" fold4 || { why "live folded:"; show fold4; }
"$RT" stackmap --reset $LIVE_PID >rs4 2>&1 && why "reset accepted while tracing is on"
grep -q "EBUSY" rs4 || { why "no EBUSY message"; show rs4; }
eq "message lines" "$(wc -l <rs4)" 1
"$RT" off $LIVE_PID >/dev/null 2>&1
"$RT" stackmap --reset $LIVE_PID >rs5 2>&1 || { why "reset refused while off"; show rs5; }
"$RT" stackmap $LIVE_PID --stat >st5 2>&1
grep -q "^entries: 0 / 16384$" st5 || { why "after reset:"; show st5 6; }
"$RT" record -p $LIVE_PID -o t4 >rec4 2>&1 &
RP=$!
sleep 0.5
kill -INT $RP
wait $RP || { why "record -p failed"; show rec4; }
"$RT" stackmap t4 --folded >fold5 2>&1
grep -Eq "main;path_a;leaf [0-9]+\$" fold5 || { why "record -p stacks:"; show fold5; }
kill $LIVE_PID 2>/dev/null
wait $LIVE_PID 2>/dev/null
LIVE_PID=
finish "a live program's map: stackmap PID, reset refused while on (EBUSY) and done while off, record -p saves it"

begin
"$RT" stackmap 999999999 >bad1 2>&1 && why "unknown pid accepted"
eq "message lines" "$(wc -l <bad1)" 1
"$RT" record --stack-bits 9 -o t5 -- "$PROG" 1 >bad2 2>&1 && why "--stack-bits 9 accepted"
grep -q "bad --stack-bits" bad2 || show bad2
[ -e t5 ] && why "t5 created for a bad option"
finish "bad input: unknown pid, --stack-bits out of range"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
