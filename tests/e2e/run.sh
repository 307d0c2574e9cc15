#!/bin/bash
# End-to-end tests: real programs recorded through `ringtrace record`, traces
# read back with `ringtrace dump` and babeltrace2, and the CLI fed bad input.
#
#   tests/e2e/run.sh [BUILD_DIR]      (default: build; e.g. build-asan)
#
# Every test runs in its own directory under one temporary directory that is
# removed at the end. Prints "ok - NAME" or "not ok - NAME" (followed by a
# few "    # " diagnostic lines) per check and ends with "N passed, M
# failed"; the exit status is 0 only when nothing failed. Non-interactive
# (stdin is /dev/null), and every program runs under `timeout`, so a hang
# becomes a failure, never a stuck run. No check depends on timing.
# E2E_KEEP=1 keeps the temporary directory for a post-mortem (its name goes
# to stderr).
#
# The programs come from tests/e2e/progs/*.c (built by `make tests-build`
# into BUILD_DIR/tests/e2e/), plus BUILD_DIR/examples/demo and
# BUILD_DIR/tests/tools/ctf_gen; tests/e2e/compare_babeltrace.sh checks that
# `ringtrace dump` and babeltrace2 read the same events.
set -u
export CI=true LC_ALL=C
exec </dev/null
ulimit -c 0

REPO=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$REPO/$BUILD ;; esac
RT=$BUILD/bin/ringtrace
PROGS=$BUILD/tests/e2e
DEMO=$BUILD/examples/demo
CTFGEN=$BUILD/tests/tools/ctf_gen
CMP=$REPO/tests/e2e/compare_babeltrace.sh
SRC=$REPO/tests/e2e/progs
LIM=60                          # seconds any single program may run


TMPROOT=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-e2e.XXXXXX") || exit 1

shm_list() {
	local d
	for d in /dev/shm ${XDG_RUNTIME_DIR:+"$XDG_RUNTIME_DIR"}; do
		[ -d "$d" ] && find "$d" -maxdepth 1 \( -name 'ringtrace-*' -o -name 'ringtrace.ctl.*' \) 2>/dev/null
	done | sort -u
}
SHM_BEFORE=$(shm_list)

# Background jobs still running are `timeout` processes: TERM makes them
# stop their program (and KILL it 5 s later).
cleanup() {
	local p
	for p in $(jobs -p); do
		kill -TERM "$p" 2>/dev/null
	done
	cd / && { [ -n "${E2E_KEEP:-}" ] && echo "kept $TMPROOT" >&2 || rm -rf "$TMPROOT"; }
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- reporting: tests/e2e/harness.sh -------------------------------------

. "$REPO/tests/e2e/harness.sh"

# ---- running things -------------------------------------------------------

# The outer redirection keeps bash's own "Aborted"/"Terminated" notices for
# programs that die of a signal out of the report.

# rec TAG RECORD-ARGS...: `ringtrace record` into TAG.out/TAG.err, status in RC.
rec() {
	local tag=$1
	shift
	{ timeout -k 5 $LIM "$RT" record "$@" >"$tag.out" 2>"$tag.err"; } 2>/dev/null
	RC=$?
}

# plain TAG PROG ARGS...: the program untraced, into TAG.out/TAG.err and RC.
plain() {
	local tag=$1
	shift
	{ timeout -k 5 $LIM "$@" >"$tag.out" 2>"$tag.err"; } 2>/dev/null
	RC=$?
	# A program killed by a signal outside any recorder leaves its
	# control block behind (by design): remove it as a user would.
	[ $RC -gt 128 ] && "$RT" ps --clean >/dev/null 2>&1
	return 0
}

# bt DIR: babeltrace2 DIR into DIR.bt/DIR.bterr; status in BTRC.
bt() {
	timeout -k 5 $LIM babeltrace2 "$1" >"$1.bt" 2>"$1.bterr"
	BTRC=$?
}

# dump DIR: ringtrace dump DIR into DIR.dump/DIR.dumperr; status in DRC.
dump() {
	timeout -k 5 $LIM "$RT" dump "$1" >"$1.dump" 2>"$1.dumperr"
	DRC=$?
}

# compare DIR: compare_babeltrace.sh on DIR; adds diagnostics on failure.
compare() {
	if [ ! -x "$CMP" ]; then
		why "missing $CMP"
		return 1
	fi
	RINGTRACE=$RT timeout -k 5 $LIM "$CMP" "$1" >"$1.cmp" 2>&1
	local r=$?
	if [ $r -ne 0 ]; then
		why "compare_babeltrace.sh $1: exit $r"
		show "$1.cmp" 8
	fi
	return $r
}

# Event names of a babeltrace2 pretty output, one per line:
# "[ts] (+delta) host:proc:(pid) NAME: { ctx }, { fields }".
bt_names() { awk '{ sub(/:$/, "", $4); print $4 }' "$1"; }

# bt_count FILE NAME: events named NAME.
bt_count() { bt_names "$1" | grep -cxF -- "$2"; }

# bt_user FILE: events other than the tracer's own ringtrace:* records
# (thread switches and thread names).
bt_user() { bt_names "$1" | grep -cv '^ringtrace:'; }

# bt_field FILE NAME FIELD: the values of FIELD in events NAME, in order
# (values without spaces or commas: numbers, simple strings).
bt_field() {
	awk -v ev="$2:" -v f="$3" '$4 == ev {
		s = $0; i = index(s, " " f " = ");
		if (i == 0) next;
		s = substr(s, i + length(f) + 4);
		sub(/[,} ].*/, "", s); print s }' "$1"
}

# The summary line of `ringtrace record`; sets S_EVENTS S_LOST S_FULL
# S_OVER S_BIG S_BYTES S_DIR, or fails.
SUMMARY_RE='^ringtrace record: ([0-9]+) events recorded, ([0-9]+) lost \(([0-9]+) buffer full, ([0-9]+) overwritten, ([0-9]+) too big[^)]*\), ([0-9]+) bytes written to (.*)$'
summary() {
	local n line
	n=$(grep -cE "$SUMMARY_RE" "$1")
	if [ "$n" != 1 ]; then
		why "$1: $n summary lines, want 1"
		show "$1"
		return 1
	fi
	line=$(grep -E "$SUMMARY_RE" "$1")
	[[ $line =~ $SUMMARY_RE ]]
	S_EVENTS=${BASH_REMATCH[1]}
	S_LOST=${BASH_REMATCH[2]}
	S_FULL=${BASH_REMATCH[3]}
	S_OVER=${BASH_REMATCH[4]}
	S_BIG=${BASH_REMATCH[5]}
	S_BYTES=${BASH_REMATCH[6]}
	S_DIR=${BASH_REMATCH[7]}
	return 0
}

# Sum of the sizes of a trace's stream files.
stream_bytes() {
	local f s=0
	for f in "$1"/stream_*; do
		[ -f "$f" ] && s=$((s + $(stat -c %s "$f")))
	done
	echo $s
}

# wait_for FILE ERE: poll (at most 20 s) until a line of FILE matches.
wait_for() {
	local i
	for ((i = 0; i < 400; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# Check that the values on stdin (one per line) are exactly FIRST..LAST.
is_range() {
	sort -n | awk -v a="$1" -v b="$2" '
		{ if ($1 != a + NR - 1) { printf "value %s at rank %d, want %d\n", $1, NR, a + NR - 1; bad = 1; exit 1 } }
		END { if (!bad && NR != b - a + 1) { printf "%d values, want %d\n", NR, b - a + 1; exit 1 } }'
}

# Deterministic pseudo-random bytes: randbytes COUNT SEED.
randbytes() {
	local n=$1 s="" o i
	RANDOM=$2
	for ((i = 0; i < n; i++)); do
		printf -v o '\\%03o' $((RANDOM % 256))
		s+=$o
	done
	printf "$s"
}

# ---- the tests ------------------------------------------------------------

# The example: traced and untraced alike, and both readers agree.
t_demo() {
	begin
	have "$DEMO" "$RT" || { finish "demo: record, stdout and status unchanged"; return; }
	plain plain "$DEMO" 200
	local prc=$RC
	rec rec -o tr -- "$DEMO" 200
	eq "exit status traced vs untraced" "$RC" "$prc"
	cmp -s plain.out rec.out || { why "stdout differs traced vs untraced"; show rec.out 3; }
	summary rec.err && eq "summary directory" "$S_DIR" tr
	finish "demo: record, stdout and status unchanged"

	# The fast path really is in use where the machine allows it (a
	# silently disabled rseq path still records everything, 3x slower).
	begin
	# The kernel shows CPUID's invariant-TSC bit as nonstop_tsc; its own
	# clocksource (tsc, kvm-clock, xen...) does not matter.
	if grep -qw avx /proc/cpuinfo && grep -qw nonstop_tsc /proc/cpuinfo; then
		eq "ringtrace_rseq in the metadata" "$(sed -n 's/.*ringtrace_rseq = \([0-9]*\);.*/\1/p' tr/metadata)" 1
		eq "ringtrace_clock in the metadata" "$(sed -n 's/.*ringtrace_clock = "\([a-z]*\)";.*/\1/p' tr/metadata)" tsc
	fi
	finish "demo: recorded with the rseq fast path and the TSC clock where available"

	begin
	bt tr
	eq "babeltrace2 exit" "$BTRC" 0
	[ "$BTRC" = 0 ] || show tr.bterr
	local n r
	n=$(bt_user tr.bt)
	# demo 200: 1 config, 3 workers x 200 x (begin + end), 3 x 25 batches.
	eq "events read by babeltrace2" "$n" 1276
	eq "demo:config events" "$(bt_count tr.bt demo:config)" 1
	eq "demo:batch events" "$(bt_count tr.bt demo:batch)" 75
	r=$(bt_field tr.bt demo:request_begin id | is_range 1 600) || why "request_begin ids 1..600: $r"
	r=$(bt_field tr.bt demo:request_end id | is_range 1 600) || why "request_end ids 1..600: $r"
	# status 500 when id % 101 == 0, 404 when id % 17 == 0, else 200.
	eq "request_end status counts" "$(bt_field tr.bt demo:request_end status | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')" "200:560 404:35 500:5 "
	summary rec.err && {
		eq "events recorded (summary) vs babeltrace2" "$S_EVENTS" "$n"
		eq "lost (summary)" "$S_LOST" 0
		eq "bytes written (summary) vs stream files" "$S_BYTES" "$(stream_bytes tr)"
	}
	finish "demo: the trace holds every event with its values; summary counts match"

	begin
	compare tr
	finish "demo: ringtrace dump and babeltrace2 agree"
}

# Exit statuses pass through, signals become 128+N, output is unchanged.
t_status() {
	local args want name
	for args in "exit 0:0" "exit 3:3" "exit 255:255" "segv:139" "signal 15:143" "signal 6:134"; do
		want=${args#*:}
		args=${args%:*}
		name="record exit status: $args -> $want"
		begin
		have "$PROGS/status" || { finish "$name"; continue; }
		# Under ASan the program must die of the signal, not report it.
		ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}handle_segv=0:handle_abort=0 \
			plain plain "$PROGS/status" $args
		eq "untraced status" "$RC" "$want"
		local prc=$RC
		rm -rf tr
		ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}handle_segv=0:handle_abort=0 \
			rec rec -o tr -- "$PROGS/status" $args
		eq "record status" "$RC" "$want"
		cmp -s plain.out rec.out || { why "stdout differs traced vs untraced"; show rec.out 3; }
		summary rec.err && eq "events recorded" "$S_EVENTS" 5
		bt tr
		eq "babeltrace2 exit" "$BTRC" 0
		eq "e2e:step i values" "$(bt_field tr.bt e2e:step i | tr '\n' ' ')" "0 1 2 3 4 "
		eq "e2e:step what values" "$(bt_field tr.bt e2e:step what | sort -u)" "\"${args% *}\""
		finish "$name"
	done
}

# Without -o: a fresh directory per run, named in the output.
t_default_dir() {
	begin
	have "$PROGS/status" || { finish "default output directory is unique and printed"; return; }
	mkdir runs && cd runs || return
	local i jobs=()
	for i in 1 2 3; do
		timeout -k 5 $LIM "$RT" record -- "$PROGS/status" exit 0 >"../r$i.out" 2>"../r$i.err" &
		jobs+=($!)
	done
	for i in 0 1 2; do
		wait "${jobs[$i]}" || why "run $((i + 1)): record status $?"
	done
	cd ..
	eq "entries created in the working directory" "$(ls runs | wc -l)" 3
	local dirs=() d
	for i in 1 2 3; do
		d=$(sed -n "s/^ringtrace record: recording '.*' (pid [0-9]*) to //p" "r$i.err")
		[ -n "$d" ] || { why "run $i: no 'recording ... to DIR' line"; show "r$i.err"; continue; }
		summary "r$i.err" && eq "run $i: summary directory" "$S_DIR" "$d"
		case $d in ringtrace-status-*) ;; *) why "run $i: directory '$d' is not ringtrace-status-*" ;; esac
		[ -f "runs/$d/metadata" ] || why "run $i: runs/$d/metadata missing"
		bt "runs/$d"
		eq "run $i: babeltrace2 exit" "$BTRC" 0
		eq "run $i: events" "$(bt_count "runs/$d.bt" e2e:step)" 5
		dirs+=("$d")
	done
	eq "distinct directories" "$(printf '%s\n' "${dirs[@]}" | sort -u | wc -l)" 3
	finish "default output directory is unique and printed"
}

# kill -9 the program while it writes: everything committed is in the trace.
t_sigkill() {
	local name="SIGKILL'ed program leaves a complete, readable trace"
	begin
	have "$PROGS/seqkill" || { finish "$name"; return; }
	timeout -k 5 $LIM "$RT" record -o tr -- "$PROGS/seqkill" 50000 >rec.out 2>rec.err &
	local job=$!
	local pid=""
	if wait_for rec.out '^committed [0-9]{4,}'; then
		pid=$(awk '$1 == "pid" { print $2; exit }' rec.out)
		kill -KILL "$pid"
	else
		why "seqkill never reported 1000 events"
		show rec.err 3
		kill -TERM "$job"
	fi
	wait "$job"
	RC=$?
	eq "record status (128+SIGKILL)" "$RC" 137
	local last
	last=$(awk '$1 == "committed" { v = $2 } END { print v }' rec.out)
	bt tr
	eq "babeltrace2 exit" "$BTRC" 0
	[ "$BTRC" = 0 ] || show tr.bterr
	local vals max
	bt_field tr.bt e2e:seq n >seq.txt
	max=$(sort -n seq.txt | tail -n 1)
	if [ -z "$max" ]; then
		why "no e2e:seq events"
	else
		[ "$max" -ge "${last:-0}" ] || why "last event $max < last reported committed $last"
		vals=$(is_range 0 "$max" <seq.txt) || why "events 0..$max: $vals"
		summary rec.err && eq "events recorded" "$S_EVENTS" $((max + 1))
	fi
	finish "$name"

	begin
	compare tr
	finish "SIGKILL'ed program: ringtrace dump and babeltrace2 agree"
}

# SIGTERM to the recorder reaches the program; the trace is saved.
t_sigterm() {
	local name="SIGTERM to ringtrace record: forwarded, trace saved, status 143"
	begin
	have "$PROGS/seqkill" || { finish "$name"; return; }
	timeout -k 5 $LIM "$RT" record -o tr -- "$PROGS/seqkill" 3000 >rec.out 2>rec.err &
	local job=$!
	if wait_for rec.out '^done'; then
		local pid ppid
		pid=$(awk '$1 == "pid" { print $2; exit }' rec.out)
		ppid=$(awk '{ print $4 }' "/proc/$pid/stat" 2>/dev/null)
		if [ -n "$ppid" ] && [ "$(cat "/proc/$ppid/comm" 2>/dev/null)" = ringtrace ]; then
			kill -TERM "$ppid"
		else
			why "cannot find the recorder (parent of $pid)"
			kill -KILL "$pid"
		fi
	else
		why "seqkill never finished its loop"
		show rec.out
		kill -TERM "$job"
	fi
	wait "$job"
	RC=$?
	eq "record status" "$RC" 143
	summary rec.err && eq "events recorded" "$S_EVENTS" 3000
	bt tr
	eq "babeltrace2 exit" "$BTRC" 0
	local r
	r=$(bt_field tr.bt e2e:seq n | is_range 0 2999) || why "events 0..2999: $r"
	finish "$name"
}

# dlopen/dlclose: plugin events recorded, a shared declaration has one id.
t_dlopen() {
	local variant name
	for variant in default no-rseq; do
		name="dlopen plugin: its events recorded, dlclose survives ($variant)"
		begin
		have "$PROGS/dlplug" "$PROGS/plugin_a.so" || { finish "$name"; continue; }
		rm -rf tr
		plain plain "$PROGS/dlplug" "$PROGS/plugin_a.so"
		local prc=$RC
		if [ $variant = no-rseq ]; then
			RINGTRACE_NO_RSEQ=1 rec rec -o tr -- "$PROGS/dlplug" "$PROGS/plugin_a.so"
		else
			rec rec -o tr -- "$PROGS/dlplug" "$PROGS/plugin_a.so"
		fi
		eq "untraced status" "$prc" 0
		eq "untraced stdout" "$(cat plain.out | tr '\n' ';')" "round 1 unloaded yes;round 2 unloaded yes;"
		eq "record status" "$RC" 0
		[ "$RC" = 0 ] || show rec.err 3
		cmp -s plain.out rec.out || { why "stdout differs traced vs untraced"; show rec.out 3; }
		rseq_note $variant tr
		bt tr
		eq "babeltrace2 exit" "$BTRC" 0
		local seq
		seq=$(awk '$4 !~ /^ringtrace:/ { sub(/:$/, "", $4); s = $0; sub(/.*\}, \{ /, "", s); sub(/ \}$/, "", s); print $4, s }' tr.bt | tr '\n' ';')
		eq "events" "$seq" 'shared:ev x = 1;plugin:hello n = 1, who = "plugin_a";shared:ev x = 101;prog:after round = 1;plugin:hello n = 2, who = "plugin_a";shared:ev x = 102;prog:after round = 2;'
		finish "$name"

		begin
		if [ -f tr/metadata ]; then
			eq "declarations of shared:ev in the metadata" "$(grep -c 'name = "shared:ev";' tr/metadata)" 1
			eq "declarations of plugin:hello in the metadata" "$(grep -c 'name = "plugin:hello";' tr/metadata)" 1
		else
			why "no metadata"
		fi
		finish "dlopen plugin: one event id for one declaration in program and plugin ($variant)"
	done
}

# Two definitions of conflict:ev: the second is refused, the program runs on.
t_conflict() {
	local name="conflicting definitions: refused with both places named, program unchanged"
	begin
	have "$PROGS/conflict" "$PROGS/plugin_conflict.so" || { finish "$name"; return; }
	local l1 l2
	l1=$(grep -n 'RINGTRACE_EVENT(conflict, ev' "$SRC/conflict.c" | cut -d: -f1)
	l2=$(grep -n 'RINGTRACE_EVENT(conflict, ev' "$SRC/plugin_conflict.c" | cut -d: -f1)
	plain plain "$PROGS/conflict" "$PROGS/plugin_conflict.so"
	eq "untraced status" "$RC" 3
	rec rec -o tr -- "$PROGS/conflict" "$PROGS/plugin_conflict.so"
	eq "record status" "$RC" 3
	cmp -s plain.out rec.out || { why "stdout differs traced vs untraced"; show rec.out 3; }
	eq "stdout" "$(cat rec.out)" "sum 24"
	local msgs
	msgs=$(grep 'conflict:ev' rec.err | grep -F "/conflict.c:$l1" | grep -cF "/plugin_conflict.c:$l2")
	eq "messages naming conflict:ev, conflict.c:$l1 and plugin_conflict.c:$l2" "$msgs" 1
	[ "$msgs" = 1 ] || show rec.err
	bt tr
	eq "babeltrace2 exit" "$BTRC" 0
	eq "conflict:ev x values" "$(bt_field tr.bt conflict:ev x | tr '\n' ' ')" "7 8 9 "
	eq "user events" "$(bt_user tr.bt)" 3
	[ -f tr/metadata ] && eq "declarations of conflict:ev in the metadata" \
		"$(grep -c 'name = "conflict:ev";' tr/metadata)" 1
	finish "$name"
}

# Synthetic traces in both byte orders read the same in both readers.
t_byte_order() {
	local opts name n
	for opts in "" "--be" "--natural --gap --lost --pad" "--be --natural --gap --lost --pad"; do
		name="synthetic trace (ctf_gen ${opts:-LE}): babeltrace2 and dump agree"
		begin
		have "$CTFGEN" || { finish "$name"; continue; }
		rm -rf tr
		timeout -k 5 $LIM "$CTFGEN" $opts --events 1000 --cpus 3 tr >gen.out 2>&1 || { why "ctf_gen failed"; show gen.out; }
		bt tr
		eq "babeltrace2 exit" "$BTRC" 0
		[ "$BTRC" = 0 ] || show tr.bterr
		n=$(bt_user tr.bt)
		case $opts in
		*--lost*) [ "$n" -gt 0 ] && [ "$n" -lt 3000 ] || why "babeltrace2 read $n events, want fewer than 3000 (one packet per CPU is missing)" ;;
		*) eq "events read by babeltrace2" "$n" 3000 ;;
		esac
		compare tr
		finish "$name"
	done
}

# A trace from another tracer whose event-header `timestamp` is mapped to no
# clock (no clock block at all): babeltrace2 gives it an implicit 1 GHz
# clock, so the events have times (27-bit compact timestamps rebuilt across
# wraps, 64-bit extended ones after the --gap) and are merged across the CPU
# files by time. The trace is ctf_gen's with the clock block and every
# `map = clock...` taken out of its metadata; dump must print the events in
# the order of the clocked original.
t_unmapped_clock() {
	local opts name
	for opts in "" "--be --natural --gap --lost --pad"; do
		name="timestamps mapped to no clock (ctf_gen ${opts:-LE}): babeltrace2's implicit 1 GHz clock"
		begin
		have "$CTFGEN" || { finish "$name"; continue; }
		rm -rf orig tr
		timeout -k 5 $LIM "$CTFGEN" $opts --events 1000 --cpus 3 orig >gen.out 2>&1 || { why "ctf_gen failed"; show gen.out; }
		cp -r orig tr
		perl -0pi -e 's/\nclock \{.*?\};\n/\n/s; s/ map = clock\.[a-z]+\.value;//g' tr/metadata
		grep -qE '^clock|map = clock' tr/metadata && why "the clock is still in tr/metadata"
		compare tr
		dump tr
		eq "dump exit" "$DRC" 0
		# every event at its own time, in time order, as in the original
		awk '/\] [0-9]+\.[0-9]+: / { t = substr($0, index($0, "] ") + 2); sub(/:.*/, "", t)
			if (t == "0.000000000") z++
			gsub(/\./, "", t); t += 0
			if (n++ && t < p) b++
			p = t }
		     END { if (z) print z " events at time 0"; if (b) print b " times go backwards" }' tr.dump >tr.order
		[ -s tr.order ] && why "dump of tr: $(tr '\n' ' ' <tr.order)"
		dump orig
		eq "events in the same order as the clocked original" \
			"$(sed -E 's/[0-9]+\.[0-9]{9}/T/g' tr.dump | md5sum)" "$(sed -E 's/[0-9]+\.[0-9]{9}/T/g' orig.dump | md5sum)"
		finish "$name"
	done
}

# The same fields named ts, tsb and tse: no clock at all, so no time
# (babeltrace2 prints none, dump `?`), and each stream file comes whole, in
# the order of the file names under strcmp (stream_10 before stream_2), as
# babeltrace2 prints them; compare_babeltrace.sh checks that order.
t_no_clock() {
	local name="no clock at all: no time, files whole in babeltrace2's order"
	begin
	have "$CTFGEN" || { finish "$name"; return; }
	rm -rf tr
	timeout -k 5 $LIM "$CTFGEN" --events 100 --cpus 11 tr >gen.out 2>&1 || { why "ctf_gen failed"; show gen.out; }
	perl -0pi -e 's/\nclock \{.*?\};\n/\n/s; s/ map = clock\.[a-z]+\.value;//g;
		s/ timestamp;/ ts;/g; s/ timestamp_begin;/ tsb;/; s/ timestamp_end;/ tse;/' tr/metadata
	grep -qE '^clock|map = clock|timestamp' tr/metadata && why "a clock or a timestamp is still in tr/metadata"
	compare tr
	dump tr
	eq "dump exit" "$DRC" 0
	eq "events of dump without time" "$(grep -c '\] ?: ' tr.dump)" 1100
	eq "order of the files in dump" "$(awk '{ c = $0; sub(/^[^[]*\[/, "", c); sub(/\].*/, "", c); if (c != p) printf "%d ", c; p = c }' tr.dump)" \
		"0 1 10 2 3 4 5 6 7 8 9 "
	finish "$name"
}

# rseq_note VARIANT DIR: with the no-rseq variant, check that the session
# really ran without rseq (ringtrace_rseq = 0 in the metadata).
rseq_note() {
	[ "$1" = no-rseq ] || return 0
	grep -q 'ringtrace_rseq = 0;' "$2/metadata" 2>/dev/null ||
		why "RINGTRACE_NO_RSEQ=1 did not turn rseq off (ringtrace_rseq in $2/metadata)"
}

# Each thread's events are attributed to it; 4K sub-buffers, so packets
# switch often while threads migrate.
t_threads() {
	local variant nr name
	for variant in default no-rseq; do
		nr=""
		[ $variant = no-rseq ] && nr=1
		name="multi-thread ($variant): every dump line carries the writer's tid"
		begin
		have "$PROGS/threads" || { finish "$name"; continue; }
		rm -rf tr
		RINGTRACE_NO_RSEQ=$nr rec rec -o tr --buffer-size 1M --subbuffers 256 -- "$PROGS/threads" 4 2000
		eq "record status" "$RC" 0
		eq "stdout" "$(cat rec.out)" "threads 5 count 2000"
		rseq_note $variant tr
		summary rec.err && { eq "events recorded" "$S_EVENTS" 10000; eq "lost" "$S_LOST" 0; }
		bt tr
		eq "babeltrace2 exit" "$BTRC" 0
		paste -d' ' <(bt_field tr.bt mt:ev tid) <(bt_field tr.bt mt:ev i) | sort -u >pairs.txt
		eq "distinct (tid, i) pairs" "$(wc -l <pairs.txt)" 10000
		eq "distinct tids" "$(cut -d' ' -f1 pairs.txt | sort -u | wc -l)" 5
		dump tr
		eq "dump exit" "$DRC" 0
		local bad
		bad=$(dump_tid_mismatches tr.dump)
		[ -z "$bad" ] || { why "dump lines whose tid is not the tid field:"; why "$(echo "$bad" | head -n 5)"; }
		eq "mt:ev lines in the dump" "$(grep -c ' mt:ev: ' tr.dump)" 10000
		finish "$name"

		begin
		compare tr
		finish "multi-thread ($variant): ringtrace dump and babeltrace2 agree"
	done
}

# dump_tid_mismatches FILE: mt:ev lines of a dump whose writer tid is not
# the tid field. A dump line reads (cmd_dump.c)
#   "        comm-TID     [CPU] SECONDS.NANOS: provider:event: tid=N i=M".
dump_tid_mismatches() {
	awk '/ mt:ev: / {
		line = $0
		p = index(line, " [")
		head = substr(line, 1, p - 1)
		sub(/ +$/, "", head)
		if (!match(head, /-[0-9]+$/)) { print "no tid prefix: " line; next }
		t = substr(head, RSTART + 1)
		if (!match(line, / mt:ev: tid=[0-9]+/)) { print "no tid field: " line; next }
		f = substr(line, RSTART + 12, RLENGTH - 12)
		if (t != f) print "tid " t " != field " f ": " line
	}' "$1"
}

# Event selection with a glob.
t_select() {
	local name="event selection: -e 'demo:request_*' records only those"
	begin
	have "$DEMO" || { finish "$name"; return; }
	rec all -o all -- "$DEMO" 200
	rec sel -o sel -e 'demo:request_*' -- "$DEMO" 200
	eq "record status" "$RC" 0
	cmp -s all.out sel.out || why "stdout differs with and without -e"
	bt all
	eq "babeltrace2 exit (all events)" "$BTRC" 0
	bt sel
	eq "babeltrace2 exit" "$BTRC" 0
	bt_names all.bt | grep -v '^ringtrace:' | grep '^demo:request_' | sort | uniq -c >want.txt
	bt_names sel.bt | grep -v '^ringtrace:' | sort | uniq -c >got.txt
	[ -s want.txt ] || why "the demo fires no demo:request_* event"
	eq "events with -e" "$(bt_user sel.bt)" 1200
	cmp -s want.txt got.txt || { why "event counts with -e differ from the demo:request_* counts without:"; show got.txt 4; show want.txt 4; }
	[ "$(bt_names all.bt | grep -v '^ringtrace:' | grep -vc '^demo:request_')" -gt 0 ] ||
		why "the demo fires only demo:request_* events: the check proves nothing"
	summary sel.err && eq "events recorded" "$S_EVENTS" "$(bt_user sel.bt)"
	finish "$name"

	begin
	rec none -o none -e 'nomatch:*' -e 'demo:nothing' -- "$DEMO" 200
	eq "record status" "$RC" 0
	bt none
	eq "babeltrace2 exit" "$BTRC" 0
	eq "events" "$(bt_names none.bt | grep -cv '^ringtrace:')" 0
	summary none.err && eq "events recorded" "$S_EVENTS" 0
	finish "event selection: patterns matching nothing record nothing"

	begin
	rec two -o two -e 'demo:batch' -e 'demo:conf?g' -- "$DEMO" 200
	eq "record status" "$RC" 0
	bt two
	eq "babeltrace2 exit" "$BTRC" 0
	eq "events by name" "$(bt_names two.bt | grep -v '^ringtrace:' | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }')" \
		"demo:batch=75 demo:config=1 "
	finish "event selection: two patterns, one with '?', record the union"
}

# A burst larger than the buffer, with the recorder stopped meanwhile.
t_modes() {
	local mode name n=200000
	for mode in overwrite discard; do
		name="--mode $mode, 64K buffer: losses counted and reported, the rest readable"
		begin
		have "$PROGS/busy" || { finish "$name"; continue; }
		rm -rf tr
		rec rec -o tr --mode $mode --buffer-size 64K --subbuffers 4 -- "$PROGS/busy" $n stop
		eq "record status" "$RC" 0
		eq "stdout" "$(cat rec.out)" "wrote $n"
		bt tr
		eq "babeltrace2 exit" "$BTRC" 0
		[ "$BTRC" = 0 ] || show tr.bterr
		local got
		got=$(bt_count tr.bt e2e:busy)
		[ "$got" -gt 0 ] || why "no e2e:busy event in the trace"
		if summary rec.err; then
			[ "$S_LOST" -gt 0 ] || why "no loss reported"
			eq "recorded + lost" $((S_EVENTS + S_LOST)) $n
			eq "events recorded vs babeltrace2" "$S_EVENTS" "$got"
			eq "too big" "$S_BIG" 0
			if [ $mode = overwrite ]; then
				eq "overwritten = lost" "$S_OVER" "$S_LOST"
				local r
				r=$(bt_field tr.bt e2e:busy i | is_range $((n - got)) $((n - 1))) ||
					why "not the newest events $((n - got))..$((n - 1)): $r"
			else
				eq "buffer full = lost" "$S_FULL" "$S_LOST"
				local r
				r=$(bt_field tr.bt e2e:busy i | is_range 0 $((got - 1))) ||
					why "not the oldest events 0..$((got - 1)): $r"
				local disc
				disc=$(sed -n 's/.*Tracer discarded \([0-9]*\) events.*/\1/p' tr.bterr | awk '{ s += $1 } END { print s + 0 }')
				eq "events discarded according to babeltrace2" "$disc" "$S_LOST"
			fi
		fi
		dump tr
		eq "dump exit" "$DRC" 0
		eq "e2e:busy lines in the dump" "$(grep -c ' e2e:busy: ' tr.dump)" "$got"
		if [ $mode = discard ]; then
			eq "events lost according to the dump" \
				"$(awk '/^ringtrace: [0-9]+ events? lost/ { s += $2 } END { print s + 0 }' tr.dump)" "${S_LOST:-?}"
			timeout -k 5 $LIM babeltrace2 -c sink.utils.counter tr >counter.txt 2>&1
			local dm
			dm=$(awk '/Discarded event message/ { print $1 }' counter.txt)
			[ "${dm:-0}" -gt 0 ] || { why "babeltrace2 reports no discarded events"; show counter.txt 8; }
		else
			# Overwritten sub-buffers are not "discarded events" (as in
			# LTTng): they show as lost packets (here before the first
			# kept one) and their count is in the metadata's env.
			grep -q '^ringtrace: [0-9]* packets\? lost' tr.dump ||
				why "the dump reports no lost packets"
			eq "ringtrace_lost_overwrite in the metadata" \
				"$(sed -n 's/.*ringtrace_lost_overwrite = \([0-9]*\);.*/\1/p' tr/metadata)" "${S_OVER:-?}"
		fi
		finish "$name"

		begin
		compare tr
		finish "--mode $mode, 64K buffer: ringtrace dump and babeltrace2 agree"
	done
}

# Every field kind with edge values, read by both readers.
t_kinds() {
	local name="all field kinds with edge values: babeltrace2 reads what was written"
	begin
	have "$PROGS/kinds" || { finish "$name"; return; }
	rec rec -o tr -- "$PROGS/kinds"
	eq "record status" "$RC" 0
	eq "stdout" "$(cat rec.out)" "kinds 6"
	bt tr
	eq "babeltrace2 exit" "$BTRC" 0
	awk '$4 !~ /^ringtrace:/ { s = $0; sub(/^[^{]*\{ cpu_id = [0-9]+ \}, /, "", s); print $4 " " s }' tr.bt >got.txt
	printf '%s\n' \
		'kinds:ints: { a = -128, b = -32768, c = -2147483648, d = -9223372036854775808, e = 255, f = 65535, g = 4294967295, h = 18446744073709551615 }' \
		'kinds:hex: { a = 0xAB, b = 0xBEEF, c = 0xDEADBEEF, d = 0x123456789ABCDEF, p = 0x7F0000001000 }' \
		'kinds:floats: { nz = -0, sub = 1e-310, pinf = inf, ninf = -inf, nan = nan, pi = 3.14159 }' \
		"$(printf 'kinds:strs: { empty = "", null = "(null)", esc = "q\\"b\\\\t\\tn\\n", raw = "caf\303\251 \377\376" }')" \
		'kinds:arrs: { tag = [ [0] = 0, [1] = 0, [2] = 0, [3] = 0 ], sv = [ [0] = -1, [1] = 0, [2] = 32767 ], _none_length = 0, none = [ ], _nul_length = 0, nul = [ ], _three_length = 3, three = [ [0] = 0x1, [1] = 0xABCDEF, [2] = 0xFFFFFFFF ] }' \
		'kinds:sixteen: { f1 = 1, f2 = 2, f3 = 3, f4 = 4, f5 = 5, f6 = 6, f7 = 7, f8 = 8, f9 = 9, f10 = 10, f11 = 11, f12 = 12, f13 = 13, f14 = 14, f15 = 15, f16 = 16 }' \
		>want.txt
	if ! cmp -s got.txt want.txt; then
		why "babeltrace2 payloads differ from the values written (- want, + got):"
		while IFS= read -r l; do why "$l"; done < <(diff want.txt got.txt | grep '^[<>]' | sed 's/^</-/; s/^>/+/' | cut -c1-250)
	fi
	finish "$name"

	begin
	dump tr
	eq "dump exit" "$DRC" 0
	sed -n 's/^.*\] [0-9.]*: \(kinds:[a-z]*:\) /\1 /p' tr.dump >dgot.txt
	printf '%s\n' \
		'kinds:ints: a=-128 b=-32768 c=-2147483648 d=-9223372036854775808 e=255 f=65535 g=4294967295 h=18446744073709551615' \
		'kinds:hex: a=0xab b=0xbeef c=0xdeadbeef d=0x123456789abcdef p=0x7f0000001000' \
		'kinds:floats: nz=-0.0 sub=1e-310 pinf=inf ninf=-inf nan=nan pi=3.141592653589793' \
		"$(printf 'kinds:strs: empty="" null="(null)" esc="q\\"b\\\\t\\tn\\n" raw="caf\303\251 \\xff\\xfe"')" \
		'kinds:arrs: tag=[0, 0, 0, 0] sv=[-1, 0, 32767] none=[] nul=[] three=[0x1, 0xabcdef, 0xffffffff]' \
		'kinds:sixteen: f1=1 f2=2 f3=3 f4=4 f5=5 f6=6 f7=7 f8=8 f9=9 f10=10 f11=11 f12=12 f13=13 f14=14 f15=15 f16=16' \
		>dwant.txt
	if ! cmp -s dgot.txt dwant.txt; then
		why "dump payloads differ from the values written (- want, + got):"
		while IFS= read -r l; do why "$l"; done < <(diff dwant.txt dgot.txt | grep '^[<>]' | sed 's/^</-/; s/^>/+/' | cut -c1-250)
	fi
	finish "all field kinds with edge values: ringtrace dump reads what was written"

	begin
	compare tr
	finish "all field kinds with edge values: ringtrace dump and babeltrace2 agree"
}

# The program dies between the reservation of a record and its commit.
t_crash_inside() {
	local mode name opts
	for mode in discard overwrite; do
		name="program crashing inside a tracepoint ($mode): only committed events in a readable trace"
		begin
		have "$PROGS/crashmid" || { finish "$name"; continue; }
		rm -rf tr
		# discard: room for everything; overwrite: 8K, lapped many times.
		opts=()
		[ $mode = overwrite ] && opts=(--mode overwrite --buffer-size 8K --subbuffers 2)
		ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}handle_segv=0 \
			rec rec -o tr "${opts[@]}" -- "$PROGS/crashmid" 10000 $([ $mode = overwrite ] && echo stop)
		eq "record status (128+SIGSEGV)" "$RC" 139
		eq "stdout" "$(cat rec.out)" "wrote 10000"
		bt tr
		eq "babeltrace2 exit" "$BTRC" 0
		[ "$BTRC" = 0 ] || show tr.bterr 2
		local got r
		got=$(bt_count tr.bt e2e:seq)
		[ "$got" -gt 0 ] || why "no e2e:seq event in the trace"
		eq "e2e:crash events (never committed)" "$(bt_count tr.bt e2e:crash)" 0
		if [ $mode = discard ]; then
			r=$(bt_field tr.bt e2e:seq n | is_range 0 9999) || why "e2e:seq 0..9999: $r"
		else
			r=$(bt_field tr.bt e2e:seq n | is_range $((10000 - got)) 9999) ||
				why "e2e:seq: not the newest events $((10000 - got))..9999: $r"
		fi
		summary rec.err && {
			eq "events recorded vs babeltrace2" "$S_EVENTS" "$got"
			eq "recorded + lost" $((S_EVENTS + S_LOST)) 10000
		}
		finish "$name"
	done
}

# Events at the sub-buffer size limit: the largest fits, one byte more is
# dropped and counted as too big.
t_big() {
	local name="event size limit: the largest event fits a 4K sub-buffer, one byte more is 'too big'"
	begin
	have "$PROGS/bigev" || { finish "$name"; return; }
	# 4 sub-buffers of 4K: thread name, 3994, then 10 each open one, so the
	# writer never waits for the reader.
	rec rec -o tr --buffer-size 16K --subbuffers 4 -- "$PROGS/bigev" 3994 3995 10 100000
	eq "record status" "$RC" 0
	eq "stdout" "$(cat rec.out)" "fired 4"
	summary rec.err && {
		eq "events recorded" "$S_EVENTS" 2
		eq "lost" "$S_LOST" 2
		eq "too big" "$S_BIG" 2
	}
	bt tr
	eq "babeltrace2 exit" "$BTRC" 0
	eq "e2e:big n values" "$(bt_field tr.bt e2e:big n | tr '\n' ' ')" "3994 10 "
	eq "string lengths" "$(awk '$4 == "e2e:big:" { s = $0; sub(/.*s = "/, "", s); sub(/" }$/, "", s); printf "%d ", length(s) }' tr.bt)" "3994 10 "
	finish "$name"

	begin
	compare tr
	finish "event size limit: ringtrace dump and babeltrace2 agree"
}

# Event ids from 31 on use the extended header.
t_many_ids() {
	local name="41 events, ids past 31 (extended headers): all recorded in order"
	begin
	have "$PROGS/manyev" || { finish "$name"; return; }
	rec rec -o tr -- "$PROGS/manyev"
	eq "record status" "$RC" 0
	bt tr
	eq "babeltrace2 exit" "$BTRC" 0
	local want="" k
	for ((k = 0; k < 40; k++)); do want+=$(printf 'many:ev%02d=%d ' $k $k); done
	want+="many:ev00=100 "
	eq "events" "$(awk '$4 ~ /^many:/ { sub(/:$/, "", $4); v = $0; sub(/.*v = /, "", v); sub(/ .*/, "", v); printf "%s=%s ", $4, v }' tr.bt)" "$want"
	compare tr
	finish "$name"
}

# Long idle gaps need the extended header; the decoded times must show them.
t_gap() {
	local clock name
	for clock in default monotonic; do
		name="timestamps across 150-300 ms idle gaps decode correctly (clock $clock)"
		begin
		have "$PROGS/gap" || { finish "$name"; continue; }
		rm -rf tr
		if [ $clock = monotonic ]; then
			RINGTRACE_CLOCK=monotonic rec rec -o tr -- "$PROGS/gap"
		else
			rec rec -o tr -- "$PROGS/gap"
		fi
		eq "record status" "$RC" 0
		[ $clock = default ] || grep -q 'ringtrace_clock = "monotonic"' tr/metadata ||
			why "RINGTRACE_CLOCK=monotonic did not select the monotonic clock"
		timeout -k 5 $LIM babeltrace2 --clock-seconds tr >tr.bt 2>tr.bterr
		eq "babeltrace2 exit" "$?" 0
		eq "ticks" "$(bt_field tr.bt e2e:tick k | tr '\n' ' ')" "0 1 2 3 "
		# Each gap is at least the sleep before it (no upper bound).
		local r
		r=$(awk '$4 == "e2e:tick:" { t = substr($1, 2, length($1) - 2); ts[n++] = t }
			END { split("0.150 0.300 0.150", g, " ");
			      for (i = 1; i < n; i++) if (ts[i] - ts[i - 1] < g[i]) printf "gap %d: %.6f s, slept %s s\n", i, ts[i] - ts[i - 1], g[i] }' tr.bt)
		[ -z "$r" ] || why "$r"
		compare tr
		finish "$name"
	done
}

# A forked child does not write into its parent's buffers.
t_fork() {
	local name="fork: the child's events are not recorded, the parent's are"
	begin
	have "$PROGS/forker" || { finish "$name"; return; }
	rec rec -o tr -- "$PROGS/forker"
	eq "record status" "$RC" 0
	eq "stdout" "$(cat rec.out)" "child status 7"
	summary rec.err && { eq "events recorded" "$S_EVENTS" 3; eq "lost" "$S_LOST" 0; }
	bt tr
	eq "babeltrace2 exit" "$BTRC" 0
	eq "fork:parent steps" "$(bt_field tr.bt fork:parent step | tr '\n' ' ')" "0 1 2 "
	eq "fork:child events" "$(bt_count tr.bt fork:child)" 0
	finish "$name"
}

# Two instrumented programs started by one uninstrumented shell: the region
# is attached by exactly one of them, whose events decode cleanly, and the
# other runs untraced and unchanged.
t_two_programs() {
	local name="two programs under one shell: one attaches, the trace is clean"
	begin
	have "$PROGS/kinds" || { finish "$name"; return; }
	have "$PROGS/status" || { finish "$name"; return; }
	rec rec -o tr -- sh -c "\"$PROGS/status\" 3 >/dev/null; \"$PROGS/kinds\" >/dev/null; echo done"
	eq "record status" "$RC" 0
	eq "stdout" "$(cat rec.out)" "done"
	bt tr
	eq "babeltrace2 exit" "$BTRC" 0
	local st ki
	st=$(grep -c ' e2e:step:' tr.bt)
	ki=$(grep -c ' kinds:' tr.bt)
	[ "$st" -gt 0 ] && [ "$ki" -gt 0 ] && why "events of both programs in one trace: $st e2e:step, $ki kinds"
	[ "$st" -gt 0 ] || [ "$ki" -gt 0 ] || why "no events at all"
	dump tr
	eq "dump exit" "$DRC" 0
	compare tr
	finish "$name"
}

# Signal handlers fire events while the interrupted thread is inside one.
t_signal_handler() {
	local variant nr name
	for variant in default no-rseq; do
		nr=""
		[ $variant = no-rseq ] && nr=1
		name="events from a signal handler interrupting tracepoints ($variant): none lost or damaged"
		begin
		have "$PROGS/sigev" || { finish "$name"; continue; }
		rm -rf tr
		RINGTRACE_NO_RSEQ=$nr rec rec -o tr --buffer-size 4M --subbuffers 512 -- "$PROGS/sigev"
		eq "record status" "$RC" 0
		rseq_note $variant tr
		local k
		k=$(awk '$1 == "main" && $3 == "handler" { print $4 }' rec.out)
		[ "${k:-0}" -ge 2000 ] || why "handler ran ${k:-0} times, want >= 2000"
		summary rec.err && { eq "events recorded" "$S_EVENTS" $((20000 + ${k:-0})); eq "lost" "$S_LOST" 0; }
		bt tr
		eq "babeltrace2 exit" "$BTRC" 0
		[ "$BTRC" = 0 ] || show tr.bterr
		local r
		r=$(bt_field tr.bt sig:main i | is_range 0 19999) || why "sig:main 0..19999: $r"
		r=$(bt_field tr.bt sig:handler k | is_range 0 $((${k:-0} - 1))) || why "sig:handler 0..$((${k:-0} - 1)): $r"
		compare tr
		finish "$name"
	done
}

# Bad command lines: one line on stderr, a non-zero status, no crash, no
# directory or shared memory left behind.
t_bad_record() {
	local desc want word args
	local LONGPAT
	LONGPAT=$(printf 'x%.0s' $(seq 3000))
	echo "not a program" >notexec.txt
	mkdir -p adir full
	echo keep >full/file
	while IFS='|' read -r desc want word args; do
		[ -n "$desc" ] || continue
		begin
		rm -rf out
		eval "set -- $args"
		timeout -k 5 $LIM "$RT" record "$@" >bad.out 2>bad.err
		RC=$?
		if [ "$want" = any ]; then
			# Not 0, not a signal (128+N), not timeout's 124.
			[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && [ "$RC" -lt 128 ] || why "status $RC, want 1..127 except 124"
		else
			eq "status" "$RC" "$want"
		fi
		eq "lines on stderr" "$(wc -l <bad.err)" 1
		grep -q '^ringtrace record: ' bad.err || why "no 'ringtrace record: ' message"
		[ -z "$word" ] || grep -qF -- "$word" bad.err || why "the message does not say '$word'"
		[ ! -e out ] || why "output directory 'out' left behind"
		[ "$(ls full)" = file ] || why "the non-empty directory 'full' was changed"
		[ -z "$(ls -A | grep '^ringtrace-')" ] || why "a ringtrace-* directory was left behind"
		[ ${#WHY[@]} -eq 0 ] || show bad.err 3
		finish "record bad input: $desc"
	done <<'EOF'
program that does not exist (path)|127|./no-such-program-e2e|-o out -- ./no-such-program-e2e arg
program that does not exist (PATH lookup)|127|no-such-program-e2e|-o out -- no-such-program-e2e
program that does not exist (default directory)|127|no-such-program-e2e|-- ./no-such-program-e2e
no program|any||-o out
no program after --|any||-o out --
bad --buffer-size abc|any|abc|-o out --buffer-size abc -- /bin/true
bad --buffer-size 3M (not a power of two)|any|--buffer-size|-o out --buffer-size 3M -- /bin/true
bad --buffer-size 0|any|--buffer-size|-o out --buffer-size 0 -- /bin/true
bad --buffer-size 16K with 8 sub-buffers (2K each)|any|--buffer-size|-o out --buffer-size 16K -- /bin/true
bad --buffer-size 99999999999999999999G (overflow)|any|99999999999999999999G|-o out --buffer-size 99999999999999999999G -- /bin/true
bad --buffer-size 17179869184G (overflow after the suffix)|any|17179869184G|-o out --buffer-size 17179869184G -- /bin/true
bad --buffer-size -1|any|-1|-o out --buffer-size -1 -- /bin/true
bad --buffer-size 1T|any|1T|-o out --buffer-size 1T -- /bin/true
bad --buffer-size 64G (sub-buffers too big)|any|--buffer-size|-o out --buffer-size 64G --subbuffers 2 -- /bin/true
bad --subbuffers 3|any|3|-o out --subbuffers 3 -- /bin/true
bad --subbuffers 1|any|1|-o out --subbuffers 1 -- /bin/true
bad --subbuffers 2048|any|2048|-o out --subbuffers 2048 -- /bin/true
bad --subbuffers x|any|x|-o out --subbuffers x -- /bin/true
bad --subbuffers -4|any|-4|-o out --subbuffers -4 -- /bin/true
bad --subbuffers empty|any|--subbuffers|-o out --subbuffers '' -- /bin/true
bad --mode fast|any|fast|-o out --mode fast -- /bin/true
bad --mode empty|any|--mode|-o out --mode '' -- /bin/true
option without its value|any|--buffer-size|-o out --buffer-size
unknown option|any|--frobnicate|-o out --frobnicate 1 -- /bin/true
unclosed '[' in -e|any|demo:[abc|-o out -e 'demo:[abc' -- /bin/true
empty -e pattern|any|pattern|-o out -e '' -- /bin/true
-e patterns longer than the region holds|any|pattern|-o out -e "$LONGPAT" -- /bin/true
program that is not executable|any|notexec.txt|-o out -- ./notexec.txt
program that is a directory|any|adir|-o out -- ./adir
output directory that exists and is not empty|any|full|-o full -- /bin/true
output directory that cannot be created|any|/nonexistent-e2e/sub|-o /nonexistent-e2e/sub -- /bin/true
EOF
}

# Bad traces for `ringtrace dump`: one line on stderr, status 1.
t_bad_dump() {
	# A real trace to damage.
	local src=""
	if [ -x "$PROGS/busy" ]; then
		rec good -o good --buffer-size 64K --subbuffers 4 -- "$PROGS/busy" 3000
		[ -s good/stream_0 ] && src=good
	fi
	begin
	if [ -n "$src" ]; then
		dump good
		eq "dump of the intact trace: exit" "$DRC" 0
		eq "dump of the intact trace: stderr lines" "$(wc -l <good.dumperr)" 0
		eq "dump of the intact trace: e2e:busy lines" "$(grep -c 'e2e:busy' good.dump)" 3000
	else
		why "no trace recorded to damage"
		show good.err
	fi
	finish "dump of the intact trace used below"

	local st0=""
	[ -n "$src" ] && st0=$(cd good && ls stream_* | head -n 1)
	local cases=(missing empty file randstream randstream-magic
		cut-header cut-content cut-second-packet
		meta-brace meta-garbled meta-flipped meta-half meta-empty meta-nosig
		meta-badsize meta-badalign meta-dupid meta-stream-missing)
	local c d
	for c in "${cases[@]}"; do
		d=$c
		rm -rf "$d"
		case $c in
		missing) ;;
		empty) mkdir "$d" ;;
		file) randbytes 3000 11 >"$d" ;;
		randstream*)
			mkdir "$d"
			[ -n "$src" ] && cp good/metadata "$d/"
			randbytes 4096 12 >"$d/stream_0"
			;;
		cut-* | meta-*)
			if [ -z "$src" ]; then
				begin
				why "no trace recorded to damage"
				finish "dump bad input: $c"
				continue
			fi
			cp -r good "$d"
			;;
		esac
		local st=$d/${st0:-stream_0} md=$d/metadata p1 note=""
		case $c in
		randstream-magic) # a valid magic number, then garbage
			printf '\xc1\x1f\xfc\xc1' | dd of="$d/stream_0" conv=notrunc status=none ;;
		cut-header) truncate -s 40 "$st" ;;
		cut-content)
			p1=$(od -An -tu8 -j56 -N8 "$st" | tr -d ' ')
			truncate -s $((p1 / 8 / 2)) "$st" ;;
		cut-second-packet)
			p1=$(od -An -tu8 -j56 -N8 "$st" | tr -d ' ')
			[ $((p1 / 8)) -lt "$(stat -c %s "$st")" ] || note="the trace has a single packet"
			truncate -s $((p1 / 8 + 100)) "$st" ;;
		meta-brace) sed -i '0,/}/s/}//' "$md" ;;
		meta-garbled)
			randbytes 200 13 | dd of="$md" bs=1 seek=600 conv=notrunc status=none ;;
		meta-flipped) # every 97th byte changed (+1)
			od -An -v -tu1 "$md" | tr -s ' ' '\n' | grep -v '^$' |
				awk '{ printf "\\%03o", NR % 97 == 0 ? ($1 + 1) % 256 : $1 }' >md.esc
			printf "$(cat md.esc)" >"$md" ;;
		meta-half) truncate -s $(($(stat -c %s "$md") / 2)) "$md" ;;
		meta-empty) : >"$md" ;;
		meta-nosig) sed -i '1s|^/\* CTF 1.8|/* XYZ 9.9|' "$md" ;;
		meta-badsize) sed -i '0,/size = 64;/s//size = 4096;/' "$md" ;;
		meta-badalign) sed -i 's/align = 8;/align = 3;/' "$md" ;;
		meta-dupid) sed -i 's/\tid = 2;/\tid = 1;/' "$md" ;;
		meta-stream-missing) sed -i 's/^stream {/stream_x {/' "$md" ;;
		esac
		begin
		[ -z "$note" ] || why "$note"
		dump "$d"
		eq "status" "$DRC" 1
		eq "lines on stderr" "$(wc -l <"$d.dumperr")" 1
		grep -q '^ringtrace dump: ' "$d.dumperr" || why "no 'ringtrace dump: ' message"
		! grep -qE '(( [^:]+:){2})\1' "$d.dumperr" || why "the message repeats its context"
		[ "$DRC" = 1 ] && [ "$(wc -l <"$d.dumperr")" = 1 ] || show "$d.dumperr" 4
		finish "dump bad input: $c"
	done

	[ -n "$src" ] || return
	local size off out bad=() p1
	size=$(stat -c %s "good/$st0")
	p1=$(($(od -An -tu8 -j56 -N8 "good/$st0" | tr -d ' ') / 8))

	# Cut the stream file at many places: only a cut on a packet boundary
	# leaves a valid trace.
	begin
	rm -rf cut && cp -r good cut
	for off in 1 4 19 20 23 24 31 32 47 48 55 56 63 64 71 72 79 80 83 84 85 86 87 88 92 100 \
		500 1000 $((p1 - 1)) $p1 $((p1 + 1)) $((p1 + 84)) $((p1 + 85)) $((size - 1)); do
		[ "$off" -gt 0 ] && [ "$off" -lt "$size" ] || continue
		cp "good/$st0" "cut/$st0" && truncate -s "$off" "cut/$st0"
		dump cut
		if [ "$off" = "$p1" ]; then
			[ "$DRC" = 0 ] && [ ! -s cut.dumperr ] || why "cut at $off (a packet boundary): status $DRC, $(head -n 1 cut.dumperr)"
		else
			[ "$DRC" = 1 ] && [ "$(wc -l <cut.dumperr)" = 1 ] ||
				why "cut at $off: status $DRC, $(wc -l <cut.dumperr) lines on stderr: $(head -n 1 cut.dumperr)"
		fi
	done
	finish "dump of a stream file cut at 33 places: status 1 and one line (0 at a packet boundary)"

	# Damage one byte at a time: never a crash, and a failure is one line.
	begin
	rm -rf flip && cp -r good flip
	for off in $(seq 0 3 100) $(seq 101 7 400) $((p1 - 2)) $p1 $((p1 + 48)) $((p1 + 56)) $((p1 + 90)); do
		[ "$off" -lt "$size" ] || continue
		cp "good/$st0" "flip/$st0"
		printf '\377' | dd of="flip/$st0" bs=1 seek="$off" conv=notrunc status=none
		dump flip
		case $DRC in
		0) [ ! -s flip.dumperr ] || why "byte $off: status 0 but stderr: $(head -n 1 flip.dumperr)" ;;
		1) [ "$(wc -l <flip.dumperr)" = 1 ] || why "byte $off: status 1 with $(wc -l <flip.dumperr) lines on stderr: $(head -n 2 flip.dumperr | tr '\n' ' ')" ;;
		*) why "byte $off: status $DRC: $(head -n 2 flip.dumperr | tr '\n' ' ')" ;;
		esac
	done
	finish "dump of a stream file with one byte damaged (80 places): no crash, status 0 or 1 with one line"
}

# The shared-memory files of every run are gone.
t_shm() {
	begin
	local now new f pid
	now=$(shm_list)
	new=$(comm -13 <(echo "$SHM_BEFORE") <(echo "$now"))
	for f in $new; do
		# ringtrace-PID-* (a recorder) or ringtrace.ctl.PID (a traced
		# program): one that still runs is not one of ours.
		case $f in
		*/ringtrace.ctl.*) pid=${f##*/ringtrace.ctl.} ;;
		*) pid=${f##*/ringtrace-}; pid=${pid%%-*} ;;
		esac
		if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then
			continue
		fi
		why "left behind: $f"
		rm -f "$f"
	done
	finish "no ringtrace-* or ringtrace.ctl.* files left in /dev/shm or \$XDG_RUNTIME_DIR"
}

run() {
	local d=$TMPROOT/$1
	mkdir -p "$d" && cd "$d" || return
	"$1"
	cd "$TMPROOT" || exit 1
}

if [ ! -x "$RT" ]; then
	notok "ringtrace command built" "missing $RT (run make tests-build)"
fi
for t in t_demo t_status t_default_dir t_sigkill t_sigterm t_dlopen t_conflict \
	t_byte_order t_unmapped_clock t_no_clock t_threads t_select t_modes t_crash_inside t_kinds t_big t_many_ids t_gap t_fork t_signal_handler \
	t_two_programs t_bad_record t_bad_dump t_shm; do
	run $t
done

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
