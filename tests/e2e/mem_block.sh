#!/bin/bash
# mem_block.sh - an allocation trace loses nothing by default: a writer
# that finds its buffer full waits for room (a bounded wait), and the
# waits are counted (docs/mem.md, "Lost events"; docs/design.md,
# "Blocking mode"):
#   1. two threads of malloc/free pairs at full speed
#      (tests/e2e/progs/mempairs.c: no leak, no error) under the default
#      `record --mem`, then with 64 KiB buffers: 0 lost, and the report is
#      exact: worker() made 2 x PAIRS allocations and as many frees, no
#      leak, no error; with 64 KiB buffers the writers did wait, and the
#      env says how long;
#   2. the same with --drop and 64 KiB buffers: events are lost, and
#      recorded + lost is exactly what the lossless run recorded;
#   3. the recorder stopped with SIGSTOP while the program runs: the
#      program still finishes (each wait is bounded, and once one timed
#      out its CPU drops without waiting until the recorder moves again);
#      the waits, the timeouts and the drops are counted, the timeouts at
#      most one per thread and CPU;
#   4. a child followed with --follow-fork waits too (its own buffers);
#      --blocking-timeout with overwrite mode or a bad value is refused,
#      plain record drops unless asked.
#
#   tests/e2e/mem_block.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup memblock "${1:-build}"
REC=
trap '[ -n "$REC" ] && kill -CONT $REC 2>/dev/null; cd / && rm -rf "$T"' EXIT
PB=${MEM_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
export RINGTRACE_MALLOC_LIB=$PB/lib/libringtrace-malloc.so
PAIRS=${MEM_BLOCK_PAIRS:-400000}
TO=180

# jq_ JSON EXPR: a Python expression on the report `r` (the JSON object).
jq_() {
	python3 - "$1" "$2" <<'PYEOF' 2>&1
import json, sys
r = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))
PYEOF
}

# env_ DIR KEY: an integer of the trace's env.
env_() {
	sed -n "s/^[[:space:]]*$2 = \\([0-9-]*\\);/\\1/p" "$1/metadata"
}

# recorded DIR.out: "RECORDED LOST" from the recorder's summary line.
recorded() {
	sed -n 's/.* \([0-9]*\) events recorded, \([0-9]*\) lost .*/\1 \2/p' "$1"
}

# ---- 1. nothing lost by default --------------------------------------------

# exact NAME DIR: the report of DIR is that of mempairs 2 $PAIRS, exactly.
exact() {
	timeout $TO "$RT" report "$2" --by function --json --top 0 >"$2.json" 2>"$2.err" || { why "$1: report failed"; show "$2.err"; return; }
	eq "$1: lost errors" "$(jq_ "$2.json" '"%d %d" % (r["totals"]["lost_events"], r["totals"]["errors"])')" "0 0"
	eq "$1: worker allocations frees leaked" \
		"$(jq_ "$2.json" '" ".join("%d %d %d" % (x["allocations"], x["frees"], x["leaked_blocks"]) for x in r["rows"] if x["name"] == "worker")')" \
		"$((2 * PAIRS)) $((2 * PAIRS)) 0"
}

begin
if have "$RT" "$PB/tests/e2e/mempairs"; then
	timeout -k 5 $TO "$RT" record --mem -o def.t -- "$PB/tests/e2e/mempairs" 2 $PAIRS >def.out 2>&1 ||
		{ why "record failed"; show def.out; }
	eq "default: lost" "$(recorded def.out | cut -d' ' -f2)" 0
	eq "default: blocking timeout in the env" "$(env_ def.t ringtrace_blocking_timeout_us)" 1000000
	exact default def.t
fi
finish "record --mem: two threads of malloc/free pairs at full speed lose nothing, the report is exact"

begin
if have "$RT" "$PB/tests/e2e/mempairs"; then
	timeout -k 5 $TO "$RT" record --mem --buffer-size 64K -o small.t -- "$PB/tests/e2e/mempairs" 2 $PAIRS >small.out 2>&1 ||
		{ why "record failed"; show small.out; }
	eq "64K: lost" "$(recorded small.out | cut -d' ' -f2)" 0
	exact 64K small.t
	waits=$(env_ small.t ringtrace_blocked_events)
	ns=$(env_ small.t ringtrace_blocked_ns)
	[ "${waits:-0}" -gt 0 ] && [ "${ns:-0}" -gt 0 ] || why "64K buffers: no wait counted (events $waits, ns $ns)"
	eq "64K: timeouts" "$(env_ small.t ringtrace_blocked_timeouts)" 0
	grep -q "^ringtrace record: writers waited for room $waits times, [0-9.]* ms in all (blocking timeout 1000.000 ms); 0 events dropped after the whole wait$" small.out ||
		{ why "no summary line of the waits"; show small.out; }
	echo "# 64K buffers: $waits waits, $ns ns in all"
fi
finish "record --mem with 64 KiB buffers: the writers wait, nothing is lost, the waits are counted"

# ---- 2. --drop: lost, and accounted exactly ---------------------------------------

begin
if [ -s def.out ]; then
	want=$(recorded def.out | cut -d' ' -f1)
	lost=0
	# A run that lost nothing proves nothing: tried again (twice at most).
	for try in 1 2 3; do
		rm -rf drop.t
		timeout -k 5 $TO "$RT" record --mem --drop --buffer-size 64K -o drop.t -- "$PB/tests/e2e/mempairs" 2 $PAIRS >drop.out 2>&1 ||
			{ why "record --drop failed"; show drop.out; break; }
		read -r got lost < <(recorded drop.out)
		[ "${lost:-0}" -gt 0 ] && break
	done
	if [ "${lost:-0}" -gt 0 ]; then
		eq "--drop: recorded + lost" "$((got + lost))" "$want"
		eq "--drop: env lost_full" "$(env_ drop.t ringtrace_lost_full)" "$lost"
		eq "--drop: blocking timeout, waits" "$(env_ drop.t ringtrace_blocking_timeout_us) $(env_ drop.t ringtrace_blocked_events)" "0 0"
		echo "# --drop: $lost of $want lost"
	else
		why "--drop with 64 KiB buffers lost nothing in 3 runs"
	fi
fi
finish "record --mem --drop: events are lost, recorded + lost is exactly what was written"

# ---- 3. a stopped recorder: the program runs on ------------------------------------

begin
if have "$RT" "$PB/tests/e2e/mempairs"; then
	"$RT" record --mem --buffer-size 64K --blocking-timeout 200000 -o stop.t -- \
		"$PB/tests/e2e/mempairs" 2 $((PAIRS * 5)) >stop.out 2>&1 &
	REC=$!
	CH=
	for ((i = 0; i < 400; i++)); do
		CH=$(pgrep -P $REC | head -n 1)
		[ -n "$CH" ] && break
		sleep 0.05
	done
	kill -STOP $REC
	# The program finishes while its recorder is stopped: a zombie (its
	# parent cannot reap it). 120 s at most, far more than it needs.
	state=
	for ((i = 0; i < 2400 && ${#CH}; i++)); do
		state=$(sed -n 's/^[0-9]* (.*) \(.\) .*/\1/p' /proc/$CH/stat 2>/dev/null)
		[ "$state" = Z ] && break
		sleep 0.05
	done
	kill -CONT $REC
	timeout -k 5 $TO tail --pid=$REC -f /dev/null
	wait $REC
	status=$?
	REC=
	[ -n "$CH" ] || why "the program never started"
	eq "the program's state while the recorder is stopped" "$state" Z
	eq "record status" "$status" 0
	waits=$(env_ stop.t ringtrace_blocked_events)
	touts=$(env_ stop.t ringtrace_blocked_timeouts)
	ns=$(env_ stop.t ringtrace_blocked_ns)
	full=$(env_ stop.t ringtrace_lost_full)
	[ "${touts:-0}" -ge 1 ] || why "no timed-out wait counted"
	[ "${waits:-0}" -ge "${touts:-0}" ] || why "fewer waits ($waits) than timeouts ($touts)"
	# Each timed-out wait lasted the whole timeout.
	[ "${ns:-0}" -ge $((${touts:-0} * 200000000)) ] || why "waited $ns ns for $touts timeouts of 200 ms"
	# Once a wait timed out on a CPU, its writers drop at once until the
	# recorder moves: one timeout per thread and CPU at most.
	[ "${touts:-0}" -le $((2 * $(nproc))) ] || why "$touts timeouts: more than one per thread and CPU"
	[ "${full:-0}" -gt "${touts:-0}" ] || why "lost_full $full: the drops while stopped are not counted"
	read -r got lost < <(recorded stop.out)
	eq "stopped: recorded + lost" "$((got + lost))" "$((4 * PAIRS * 5 + $(recorded def.out | cut -d' ' -f1) - 4 * PAIRS))"
	echo "# stopped recorder: $waits waits ($touts timed out, $ns ns), $full lost"
fi
finish "a recorder stopped with SIGSTOP: the program finishes, the waits, timeouts and drops are counted"

# ---- 4. options ------------------------------------------------------------------

begin
if have "$RT" "$PB/tests/e2e/forkfree"; then
	# A forked child records into buffers of its own: they wait too.
	timeout -k 5 $TO "$RT" record --mem --follow-fork -o ff.t -- "$PB/tests/e2e/forkfree" >ff.out 2>&1 || { why "record failed"; show ff.out; }
	eq "followed child: blocking timeout" "$(env_ ff.t/children/*-forkfree ringtrace_blocking_timeout_us)" 1000000
	timeout -k 5 $TO "$RT" record --mem --drop --follow-fork -o ffd.t -- "$PB/tests/e2e/forkfree" >ffd.out 2>&1 || { why "record failed"; show ffd.out; }
	eq "followed child with --drop: blocking timeout" "$(env_ ffd.t/children/*-forkfree ringtrace_blocking_timeout_us)" 0
fi
finish "--follow-fork: a child's buffers wait as the program's do"

begin
if have "$RT"; then
	timeout 20 "$RT" record --mode overwrite --blocking-timeout 1000 -o ow.t -- true >ow.out 2>&1 && why "overwrite mode with --blocking-timeout accepted"
	grep -q 'overwrite mode never waits' ow.out || { why "overwrite: no reason given"; show ow.out; }
	timeout 20 "$RT" record --blocking-timeout 1x -o bad.t -- true >bad.out 2>&1 && why "--blocking-timeout 1x accepted"
	grep -q "^ringtrace record: bad --blocking-timeout '1x'" bad.out || { why "no line for a bad value"; show bad.out; }
	timeout 20 "$RT" record --blocking-timeout 100000 -o tp.t -- "$DEMO" 3 >tp.out 2>&1 || { why "record --blocking-timeout failed"; show tp.out; }
	eq "plain record with --blocking-timeout: env" "$(env_ tp.t ringtrace_blocking_timeout_us)" 100000
	timeout 20 "$RT" record -o tp0.t -- "$DEMO" 3 >tp0.out 2>&1 || { why "record failed"; show tp0.out; }
	eq "plain record: drops by default" "$(env_ tp0.t ringtrace_blocking_timeout_us)" 0
fi
finish "--blocking-timeout: refused with overwrite mode or a bad value; plain record drops unless asked"

# ringtrace mem waits by default and drops with --drop, as record --mem.
begin
if have "$PB/tests/e2e/memprog"; then
	timeout 60 "$RT" mem -q -o m.t -- "$PB/tests/e2e/memprog" pattern >m.out 2>&1 || { why "mem failed"; show m.out; }
	eq "mem: blocking timeout" "$(env_ m.t ringtrace_blocking_timeout_us)" 1000000
	timeout 60 "$RT" mem -q --drop -o md.t -- "$PB/tests/e2e/memprog" pattern >md.out 2>&1 || { why "mem --drop failed"; show md.out; }
	eq "mem --drop: blocking timeout" "$(env_ md.t ringtrace_blocking_timeout_us)" 0
fi
finish "ringtrace mem: waits for room by default, --drop drops"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
