#!/bin/bash
# snapshot.sh - snapshots of a running program without stopping tracing:
# the swap stress (a snapshot every millisecond while writers on every CPU
# fire sequence-numbered events: none lost, none twice), `ringtrace
# snapshot` writing a trace that dump and babeltrace2 read, numbered
# snapshots, memory and descriptors of the program flat over many
# snapshots, the flight recorder (snapshots asked for by the program with
# ringtrace_snapshot(), recovery after SIGKILL, flat memory), bad input.
#
#   tests/e2e/snapshot.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup snap "${1:-build}"
WRITER=$BUILD/tests/e2e/snapwriter
STRESS=$BUILD/tests/tools/snapstress
SERVER=$BUILD/examples/server
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

# has_trigger DIR TEXT: DIR's env block names TEXT as what took it (a
# request the program made just before exiting is served from its live
# buffers, its label ending in ", at exit").
has_trigger() {
	grep -Fq "ringtrace_snapshot_trigger = \"$2\";" "$1/metadata" ||
		grep -Fq "ringtrace_snapshot_trigger = \"$2, at exit\";" "$1/metadata"
}

# snap_stat PID: virtual size, descriptors and mappings of a process.
snap_stat() {
	echo "size=$(awk '/^VmSize:/ { print $2 }' "/proc/$1/status") fds=$(ls "/proc/$1/fd" | wc -l) maps=$(wc -l <"/proc/$1/maps")"
}

# ---- the swap stress -------------------------------------------------------
begin
N=${SNAP_EVENTS:-300000}
if have "$RT" "$WRITER" "$STRESS"; then
	"$WRITER" 2 "$N" >w.out 2>&1 &
	WP=$!
	PIDS+=("$WP")
	ready $WP
	"$RT" snapshot-enable $WP >en.out 2>&1 || { why "snapshot-enable failed"; show en.out; }
	"$RT" on $WP >on.out 2>&1 || { why "on failed"; show on.out; }
	timeout 300 "$STRESS" $WP 2 "$N" 1000 >st.out 2>&1 || { why "snapstress failed"; show st.out; }
	for _ in $(seq 100); do grep -q '^done' w.out && break; sleep 0.1; done
	grep -q '^done' w.out || { why "the writers did not finish"; show w.out; }
	s=$(sed -n 's/^snapshots \([0-9]*\) .*/\1/p' st.out)
	# How many fit in the writes depends on the machine's load; the
	# property needs swaps during them, and the final one.
	[ "${s:-0}" -ge 3 ] || why "only ${s:-0} snapshots were taken during the writes"
	# For the log: the writers' slowest tracepoint calls and the swap.
	sed 's/^/    # /' w.out st.out | grep -E 'thread|swap|snapshots'
	kill $WP 2>/dev/null
	wait $WP
	eq "writer exit status" "$?" 0
fi
finish "a snapshot every millisecond under writers on every CPU: no event lost or duplicated"

# ---- ringtrace snapshot writes a trace ---------------------------------------
begin
if have "$SERVER"; then
	"$SERVER" >srv.out 2>&1 &
	SP=$!
	PIDS+=("$SP")
	ready $SP
	"$RT" snapshot $SP -o none >bad1.out 2>&1 && why "snapshot accepted before snapshot-enable"
	eq "message lines" "$(wc -l <bad1.out)" 1
	grep -q "snapshot-enable" bad1.out || show bad1.out
	[ -e none ] && why "an output directory was left for a refused snapshot"
	"$RT" snapshot-enable $SP >/dev/null 2>&1 || why "snapshot-enable failed"
	"$RT" on $SP >/dev/null 2>&1 || why "on failed"
	sleep 0.5
	"$RT" snapshot $SP -o s1 >s1.out 2>s1.err || { why "snapshot failed"; show s1.err; }
	"$RT" dump s1 >s1.dump 2>&1 || { why "dump failed"; show s1.dump; }
	c=$(grep -c 'app:request_begin' s1.dump)
	[ "$c" -gt 0 ] || { why "no request in the snapshot"; show s1.dump; }
	grep -q 'ringtrace_snapshot = 1;' s1/metadata || why "no snapshot number 1 in the env block"
	grep -q 'ringtrace_snapshot_trigger = "command";' s1/metadata || why "no trigger in the env block"
	if command -v babeltrace2 >/dev/null; then
		babeltrace2 s1 >s1.bt 2>s1.bterr || { why "babeltrace2 failed"; show s1.bterr; }
		eq "babeltrace2 app events = dump app events" "$(grep -c ' app:' s1.bt)" "$(grep -c ' app:' s1.dump)"
	fi
	# Tracing went on: the next snapshot holds later events only.
	sleep 0.3
	"$RT" snapshot $SP -o s2 >/dev/null 2>s2.err || { why "second snapshot failed"; show s2.err; }
	"$RT" dump s2 >s2.dump 2>&1
	grep -q 'ringtrace_snapshot = 2;' s2/metadata || why "second snapshot is not number 2"
	last1=$(sed -n 's/.*app:request_begin: worker=0 id=\([0-9]*\).*/\1/p' s1.dump | tail -n 1)
	first2=$(sed -n 's/.*app:request_begin: worker=0 id=\([0-9]*\).*/\1/p' s2.dump | head -n 1)
	[ -n "$last1" ] && [ -n "$first2" ] && [ "$first2" -gt "$last1" ] ||
		why "worker 0's requests: snapshot 1 ends at ${last1:-?}, snapshot 2 starts at ${first2:-?}"
	[ -n "$last1" ] && [ -n "$first2" ] && [ "$first2" -eq $((last1 + 1)) ] ||
		why "worker 0: a request between the snapshots is missing (${last1:-?} then ${first2:-?})"
fi
finish "ringtrace snapshot: a trace dump and babeltrace2 read, numbered, tracing going on between snapshots"

begin
if [ -n "${SP:-}" ]; then
	"$RT" snapshot $SP -o many --count 3 --interval 100 >many.out 2>many.err || { why "--count failed"; show many.err; }
	eq "snapshot directories" "$(ls many | tr '\n' ' ')" "snapshot-1 snapshot-2 snapshot-3 "
	for d in many/snapshot-*; do
		"$RT" dump "$d" >/dev/null 2>&1 || why "$d does not dump"
	done
fi
finish "snapshot --count 3: numbered snapshot directories"

begin
if [ -n "${SP:-}" ]; then
	# One round first: one-time set-up (stack unwinder) is not growth.
	"$RT" snapshot $SP -o warm >/dev/null 2>&1
	before=$(snap_stat $SP)
	"$RT" snapshot $SP -o flat --count 100 --interval 0 >flat.out 2>flat.err || { why "100 snapshots failed"; show flat.err; }
	after=$(snap_stat $SP)
	# A sanitizer's allocator maps memory as the program runs: there only
	# the size and the descriptors compare.
	if [ -n "${SNAP_SANITIZER:-}" ]; then
		before=${before% maps=*}
		after=${after% maps=*}
	fi
	eq "program size/fds/maps before and after 100 snapshots" "$after" "$before"
	"$RT" snapshot-disable $SP >dis.out 2>&1 || { why "snapshot-disable failed"; show dis.out; }
	"$RT" snapshot $SP -o off >off.out 2>&1 && why "snapshot accepted after snapshot-disable"
	kill $SP
	wait $SP
	eq "server exit status" "$?" 0
fi
finish "100 snapshots: the program's memory, descriptors and mappings stay the same; disable frees the spares"

# ---- the flight recorder -----------------------------------------------------
FLIGHT=$BUILD/tests/e2e/flightprog
begin
if have "$FLIGHT"; then
	"$RT" record --flight-recorder --buffer-size 256K --subbuffers 4 -o fr1 -- "$FLIGHT" errors 30000 \
		>fr1.out 2>fr1.err
	eq "program status" "$?" 0
	grep -q '^snapshot requests 3$' fr1.out || { why "the program's requests:"; show fr1.out; }
	eq "snapshot directories" "$(ls fr1 2>/dev/null | tr '\n' ' ')" "snapshot-1 snapshot-2 snapshot-3 "
	for k in 1 2 3; do
		"$RT" dump fr1/snapshot-$k >fr1.$k.dump 2>&1 || { why "snapshot-$k does not dump"; continue; }
		# Each snapshot holds the error that asked for it (usually as its
		# last event: the program pauses after asking, but a loaded
		# machine may serve the request after it went on).
		grep -q "fl:error: i=$((k * 10000 - 1))\$" fr1.$k.dump ||
			{ why "snapshot-$k lacks the error i=$((k * 10000 - 1))"; show fr1.$k.dump 2; }
		has_trigger fr1/snapshot-$k 'ringtrace_snapshot()' ||
			why "snapshot-$k: no trigger in the env block"
	done
	# Without a recorder nobody serves the request: ringtrace_snapshot() says so.
	RINGTRACE_CONTROL=1 "$FLIGHT" errors 3 >fr0.out 2>&1
	grep -q '^snapshot requests 0$' fr0.out || { why "ringtrace_snapshot() without snapshots:"; show fr0.out; }
fi
finish "flight recorder: ringtrace_snapshot() on an error path gives a snapshot holding that error"

begin
if have "$FLIGHT"; then
	"$RT" record --flight-recorder --buffer-size 256K --subbuffers 4 -o fr2 -- "$FLIGHT" kill 30000 \
		>fr2.out 2>fr2.err
	eq "status of a program killed by SIGKILL" "$?" 137
	"$RT" dump fr2/recovered >fr2.dump 2>&1 || { why "recovered trace does not dump"; show fr2.dump; }
	eq "last event recovered" "$(tail -n 1 fr2.dump | sed 's/.*: \(fl:step: i=[0-9]*\)$/\1/')" "fl:step: i=29999"
	if command -v babeltrace2 >/dev/null; then
		babeltrace2 fr2/recovered >fr2.bt 2>fr2.bterr || { why "babeltrace2 cannot read the recovered trace"; show fr2.bterr; }
	fi
	pid=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' fr2.err | head -n 1)
	[ -n "$pid" ] && [ -e "/dev/shm/ringtrace.ctl.$pid" ] && why "the killed program's control block was left"
fi
finish "flight recorder: a program killed by SIGKILL: its buffers are recovered into a trace babeltrace2 reads"

begin
if have "$FLIGHT"; then
	"$RT" record --flight-recorder -o fx -- "$FLIGHT" exitreq 5000 >fx.out 2>fx.err
	eq "status of a program that asks and exits" "$?" 3
	"$RT" dump fx/snapshot-1 >fx.dump 2>&1 || { why "no snapshot for a request made just before exit"; show fx.err; }
	eq "last event" "$(tail -n 1 fx.dump | sed 's/.*: \(fl:step: i=[0-9]*\)$/\1/')" "fl:step: i=4999"
fi
finish "flight recorder: a request made just before the program exits is served"

begin
if have "$FLIGHT"; then
	"$RT" record --flight-recorder --buffer-size 16K --subbuffers 4 -o fr3 -- "$FLIGHT" run 4000 >fr3.out 2>fr3.err &
	RP=$!
	PIDS+=("$RP")
	pid=
	for _ in $(seq 50); do pid=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' fr3.err | head -n 1); [ -n "$pid" ] && break; sleep 0.05; done
	sleep 0.5
	"$RT" snapshot "$pid" -o fr3s --count 10 --interval 200 >fr3s.out 2>&1 || { why "snapshots failed"; show fr3s.out; }
	wait $RP
	eq "program status" "$?" 0
	# From 1 s on the buffers have wrapped: the resident size stays within
	# 128 KiB (what a recycled spare may have touched) however long it runs.
	# Under a sanitizer (SNAP_SANITIZER=1) its allocator keeps freed memory
	# in quarantine: the resident size is not compared there.
	spread=$(tail -n +3 fr3.out | awk '/^rss_kb/ { if (min == "" || $2 < min) min = $2; if ($2 > max) max = $2 } END { print max - min }')
	[ -n "${SNAP_SANITIZER:-}" ] || [ "${spread:-999999}" -le 128 ] ||
		{ why "resident size moved by ${spread} KiB"; show fr3.out 8; }
	[ -d fr3 ] && why "the flight recorder wrote $(ls fr3) without a snapshot of its own"
fi
finish "flight recorder: memory stays flat over a run with 10 snapshots"

begin
if have "$FLIGHT"; then
	"$FLIGHT" errors-wait 30000 >fw.out 2>&1 &
	FP=$!
	PIDS+=("$FP")
	ready $FP
	"$RT" snapshot $FP -o fw --watch >fw.watch 2>&1 &
	WAP=$!
	PIDS+=("$WAP")
	sleep 0.2
	"$RT" on $FP >/dev/null 2>&1 || why "on failed"
	"$RT" snapshot-enable $FP >/dev/null 2>&1 || why "snapshot-enable failed"
	wait $FP
	eq "program status" "$?" 0
	wait $WAP
	eq "watcher status" "$?" 0
	grep -q '^snapshot requests 4$' fw.out || { why "requests:"; show fw.out; }
	eq "snapshot directories" "$(ls fw 2>/dev/null | tr '\n' ' ')" "snapshot-1 snapshot-2 snapshot-3 snapshot-4 "
	[ -e fw/recovered ] && why "a recovered trace for a program that exited normally"
	"$RT" dump fw/snapshot-4 >fw.dump 2>&1
	grep -q 'fl:error: i=29999$' fw.dump || { why "snapshot-4 lacks the last error"; show fw.dump 2; }
fi
finish "snapshot --watch serves a running program's ringtrace_snapshot() requests"

begin
if have "$FLIGHT"; then
	"$RT" record --flight-recorder --snapshot-on 'fl:req if status >= 500' -o tr1 -- "$FLIGHT" statuses 5000 \
		>tr1.out 2>tr1.err
	eq "program status" "$?" 0
	# 503 at i = 999, 1999, ...: five snapshots; status -1 (a signed field
	# after a string) does not match.
	eq "snapshot directories" "$(ls tr1 2>/dev/null | tr '\n' ' ')" \
		"snapshot-1 snapshot-2 snapshot-3 snapshot-4 snapshot-5 "
	for k in 1 2 3 4 5; do
		"$RT" dump tr1/snapshot-$k >tr1.$k.dump 2>&1 || { why "snapshot-$k does not dump"; continue; }
		grep -q "fl:req: path=\"/a\" i=$((k * 1000 - 1)) status=503\$" tr1.$k.dump ||
			{ why "snapshot-$k lacks the request i=$((k * 1000 - 1)) that fired it"; show tr1.$k.dump 2; }
		has_trigger tr1/snapshot-$k 'fl:req if status >= 500' ||
			why "snapshot-$k: the trigger is not in the env block"
	done
	"$RT" record --flight-recorder --snapshot-on 'fl:req if status == 503' --min-interval 60000 -o tr2 -- \
		"$FLIGHT" statuses 5000 >tr2.out 2>tr2.err
	eq "snapshots with --min-interval 60000" "$(ls tr2 2>/dev/null | tr '\n' ' ')" "snapshot-1 "
	"$RT" record --flight-recorder --snapshot-on 'fl:req if status ~ 3' -o tr3 -- "$FLIGHT" statuses 10 >tr3.out 2>&1
	eq "status of a malformed trigger" "$?" 2
	eq "message lines" "$(wc -l <tr3.out)" 1
	[ -e tr3 ] && why "a directory was created for a malformed trigger"
fi
finish "--snapshot-on 'EVENT if FIELD OP VALUE': a snapshot at each matching event, at most one per --min-interval"

begin
if have "$FLIGHT"; then
	"$FLIGHT" statuses 40000 >tl.out 2>&1 &
	LP=$!
	PIDS+=("$LP")
	ready $LP
	"$RT" on $LP >/dev/null 2>&1 || why "on failed"
	"$RT" snapshot $LP -o tl --watch >tl.watch 2>&1 &
	WLP=$!
	PIDS+=("$WLP")
	"$RT" snapshot-enable $LP --snapshot-on 'fl:req if status == 503' >tl.en 2>&1 || { why "arming failed"; show tl.en; }
	wait $LP
	wait $WLP
	eq "watcher status" "$?" 0
	n=$(ls tl 2>/dev/null | grep -c '^snapshot-')
	[ "$n" -ge 1 ] || { why "no snapshot was triggered"; show tl.watch; }
	for d in tl/snapshot-*; do
		[ -d "$d" ] || continue
		"$RT" dump "$d" >tl.dump 2>&1
		grep -q 'status=503$' tl.dump || { why "$d holds no 503"; show tl.dump 2; }
		has_trigger "$d" 'fl:req if status == 503' ||
			why "$d: not labelled with the trigger: $(grep -h ringtrace_snapshot_trigger "$d/metadata")"
	done
fi
finish "a trigger armed on a running program (snapshot-enable --snapshot-on) and served by snapshot --watch"

begin
if have "$FLIGHT" && have "$SERVER"; then
	# A program with tracing off: record -p --snapshot switches it on and
	# serves the trigger's snapshots until the program exits.
	"$FLIGHT" statuses 40000 >ra.out 2>&1 &
	AP=$!
	PIDS+=("$AP")
	ready $AP
	"$RT" record -p $AP --snapshot --snapshot-on 'fl:req if status == 503' -o ra >ra.rec 2>&1
	rs=$?
	eq "recorder status" "$rs" 0
	[ "$rs" = 0 ] || show ra.rec
	wait $AP
	eq "program status" "$?" 0
	n=$(ls ra 2>/dev/null | grep -c '^snapshot-')
	[ "$n" -ge 1 ] || { why "no snapshot was triggered"; show ra.rec; }
	for d in ra/snapshot-*; do
		[ -d "$d" ] || continue
		"$RT" dump "$d" >ra.dump 2>&1
		grep -q 'status=503$' ra.dump || { why "$d holds no 503"; show ra.dump 2; }
	done
	# Ctrl-C on a program that runs on: left as it was found (tracing
	# off, no spare buffers, discard mode, no trigger).
	"$SERVER" >rb.out 2>&1 &
	BP=$!
	PIDS+=("$BP")
	ready $BP
	"$RT" record -p $BP --snapshot --snapshot-on 'app:request_end if status >= 500' -o rb >rb.rec 2>&1 &
	RBP=$!
	PIDS+=("$RBP")
	for _ in $(seq 100); do "$RT" stat $BP 2>/dev/null | grep -q 'overwrite mode' && break; sleep 0.05; done
	"$RT" snapshot $BP -o rb1 >rb1.out 2>&1 || { why "a snapshot while record -p --snapshot runs failed"; show rb1.out; }
	# One watcher at a time: a second one would take each snapshot twice.
	timeout 10 "$RT" record -p $BP --snapshot -o rb2 >rb2.out 2>&1 && why "a second watcher accepted"
	grep -q "serves its snapshots already" rb2.out || show rb2.out
	eq "message lines (second watcher)" "$(wc -l <rb2.out)" 1
	timeout 10 "$RT" snapshot $BP --watch -o rb2w >rb2w.out 2>&1 && why "a second watcher (snapshot --watch) accepted"
	[ -e rb2w ] && why "a directory was left by a refused watcher"
	kill -INT $RBP
	wait $RBP
	eq "recorder status after Ctrl-C" "$?" 0
	"$RT" ps >rb.ps 2>&1
	grep -E "^ *$BP .* off " rb.ps >/dev/null || { why "tracing was left on"; show rb.ps; }
	"$RT" snapshot $BP -o rb3 >rb3.out 2>&1 && why "snapshots were left enabled"
	"$RT" on $BP >/dev/null 2>&1
	"$RT" stat $BP 2>&1 | grep -q 'discard mode' || why "the program was left in overwrite mode"
	"$RT" record -p $BP --snapshot --snapshot-on 'app:request_end if status >= 500' -o rb4 >rb4.out 2>&1 &
	R4=$!
	PIDS+=("$R4")
	sleep 0.3
	kill -INT $R4
	wait $R4
	eq "trigger given back (a new recorder may arm one)" "$?" 0
	kill $BP
	wait $BP
	eq "server status" "$?" 0
	"$RT" record -p 1 --snapshot-on 'a:b' >rb5.out 2>&1
	eq "status of --snapshot-on without --snapshot" "$?" 2
fi
finish "record -p PID --snapshot: the flight recorder on a running program, which is left as it was found"

begin
HOLD=$BUILD/tests/tools/ctlhold
if have "$FLIGHT" "$HOLD"; then
	# Requests made before the swap are served by it. The mailbox is held
	# (as by a slow controller) from before the program's first request
	# until its second one is posted, so the watcher's swap comes after
	# both: one snapshot holding both steps, not a second one holding
	# neither.
	rm -f go
	"$FLIGHT" pair 300 >pp.out 2>&1 &
	PP=$!
	PIDS+=("$PP")
	ready $PP
	"$RT" record -p $PP --snapshot -o pp >pp.rec 2>&1 &
	PR=$!
	PIDS+=("$PR")
	for _ in $(seq 200); do grep -q 'go to pp' pp.rec && break; sleep 0.05; done
	sleep 0.2
	"$HOLD" $PP >hold.out 2>&1 &
	HP=$!
	PIDS+=("$HP")
	for _ in $(seq 200); do grep -q held hold.out && break; sleep 0.05; done
	grep -q held hold.out || { why "the mailbox was not taken"; show hold.out; }
	touch go
	for _ in $(seq 400); do grep -q 'second request' pp.out && break; sleep 0.05; done
	kill $HP
	wait $HP
	eq "ctlhold status" "$?" 0
	eq "requests" "$(grep -o 'second request.*' pp.out)" "second request 0 0"
	wait $PR
	eq "recorder status" "$?" 0
	wait $PP
	eq "program status" "$?" 0
	eq "snapshots" "$(ls pp 2>/dev/null | tr '\n' ' ')" "snapshot-1 "
	"$RT" dump pp/snapshot-1 >pp.dump 2>&1 || why "the snapshot does not dump"
	eq "steps in the snapshot" "$(grep -o 'fl:step: .*' pp.dump | tr '\n' ' ')" "fl:step: i=1 fl:step: i=2 "
	rm -f go
fi
finish "requests made before the swap are served by it, none by an extra snapshot"

begin
if have "$SERVER"; then
	"$SERVER" >rs.out 2>&1 &
	RSP=$!
	PIDS+=("$RSP")
	ready $RSP
	"$RT" on $RSP >/dev/null 2>&1 || why "on failed"
	sleep 0.3
	# A copy of the live buffers, as a user would take it.
	fd=$(ls -l /proc/$RSP/fd | awk '/memfd:ringtrace-ring/ { print $9 }' | head -n 1)
	cp "/proc/$RSP/fd/$fd" copy.bin || why "cannot copy the buffers"
	sum=$(md5sum <copy.bin)
	"$RT" recover copy.bin -o rc1 >rc1.out 2>&1 || { why "recover FILE failed"; show rc1.out; }
	eq "the copy is left unchanged" "$(md5sum <copy.bin)" "$sum"
	"$RT" dump rc1 >rc1.dump 2>&1 || { why "recovered copy does not dump"; show rc1.dump; }
	[ "$(grep -c 'app:request_begin' rc1.dump)" -gt 0 ] || why "no request in the recovered copy"
	# A program that hangs: its buffers as they are, the program untouched.
	kill -STOP $RSP
	"$RT" recover $RSP -o rc2 >rc2.out 2>&1 || { why "recover PID failed"; show rc2.out; }
	"$RT" dump rc2 >rc2.dump 2>&1 || why "recovered buffers do not dump"
	[ "$(grep -c 'app:request_begin' rc2.dump)" -ge "$(grep -c 'app:request_begin' rc1.dump)" ] ||
		why "fewer requests from the stopped program than from the earlier copy"
	kill -CONT $RSP
	"$RT" stat $RSP >rs.stat 2>&1 || why "stat after recover failed"
	kill $RSP
	wait $RSP
	eq "server status" "$?" 0
	head -c 20000 /dev/urandom >junk.bin
	"$RT" recover junk.bin -o rc3 >rc3.out 2>&1 && why "junk accepted"
	eq "message lines (junk)" "$(wc -l <rc3.out)" 1
	[ -e rc3 ] && why "an output directory was left for junk"
fi
finish "recover: a copy of a program's buffers (left unchanged) and the buffers of a stopped program"

begin
"$RT" snapshot 999999999 >b1.out 2>&1 && why "unknown pid accepted"
eq "message lines (unknown pid)" "$(wc -l <b1.out)" 1
"$RT" snapshot >b2.out 2>&1
eq "status without a pid" "$?" 2
"$RT" snapshot 1 --count 2 >b3.out 2>&1
eq "status of --count without -o" "$?" 2
"$RT" snapshot-enable 999999999 >b4.out 2>&1 && why "snapshot-enable of an unknown pid accepted"
finish "bad input: unknown pid, missing arguments"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
