#!/bin/bash
# End-to-end tests of live control: programs that run on their own
# (examples/server) found, switched and read through `ringtrace ps`, `list`,
# `enable`/`disable`, `on`/`off`, `stat`, `reset`, `buffer-size`,
# `record -p` and `show`, plus bad input, damaged control blocks, another
# user's programs and programs that die.
#
#   tests/e2e/live.sh [BUILD_DIR]      (default: build; e.g. build-asan)
#
# Style of tests/e2e/run.sh: "ok - NAME" or "not ok - NAME" (with a few
# "    # " diagnostic lines) per check, then "N passed, M failed"; exit status
# 0 only when nothing failed. Non-interactive (stdin is /dev/null), every
# program under `timeout`, every background process killed at exit. No check
# depends on timing: a recording is stopped once the server has printed
# enough heartbeats after the recorder said it attached (so it holds events
# fired after the attach), and the exact counts come from stopping the
# writers first (off, or every event disabled). The one bound (an enabled
# event shows in `show` within 5 s) is a bound, not a measurement.
#
# Needs root for the permission check (it creates the users ringtrace-test
# and ringtrace-test2 if missing and keeps them); without root that check is
# skipped. E2E_KEEP=1 keeps the temporary directory (its name goes to
# stderr).
set -u
export CI=true LC_ALL=C
exec </dev/null
ulimit -c 0

REPO=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$REPO/$BUILD ;; esac
RT=$BUILD/bin/ringtrace
SERVER=$BUILD/examples/server
LIM=60                          # seconds any command run in the background may run
SRVLIM=900                      # seconds a server may run (always stopped before)
CMDLIM=20                       # seconds any one command may take
SHM=/dev/shm
BLOCK=$SHM/ringtrace.ctl.

STARTED=()                      # pids of the traced programs we started
FAKES=()                        # control blocks we forged
PERMDIR=""

TMPROOT=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-live.XXXXXX") || exit 1

# Background jobs still running are `timeout` processes: TERM makes them
# stop their program (and KILL it 5 s later).
cleanup() {
	local p
	for p in $(jobs -p); do
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	for p in "${FAKES[@]}"; do
		rm -f "$p"
	done
	[ -n "$PERMDIR" ] && rm -rf "$PERMDIR"
	cd / && { [ -n "${E2E_KEEP:-}" ] && echo "kept $TMPROOT" >&2 || rm -rf "$TMPROOT"; }
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- reporting: tests/e2e/harness.sh -------------------------------------

. "$REPO/tests/e2e/harness.sh"

# ---- running things -------------------------------------------------------

# rt TAG ARGS...: one ringtrace command into TAG.out/TAG.err, status in RC.
rt() {
	local tag=$1
	shift
	{ timeout -k 5 $CMDLIM "$RT" "$@" >"$tag.out" 2>"$tag.err"; } 2>/dev/null
	RC=$?
}

# one_line TAG WORD: the command failed with status 1..127 (not timeout's
# 124) and exactly one line on stderr that contains WORD, nothing on stdout.
fails_one_line() {
	local tag=$1 word=$2 what=$3
	[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && [ "$RC" -lt 128 ] || why "$what: status $RC, want 1..127 except 124"
	[ "$(wc -l <"$tag.err")" = 1 ] || { why "$what: $(wc -l <"$tag.err") lines on stderr, want 1"; show "$tag.err" 3; }
	[ -z "$word" ] || grep -qiF -- "$word" "$tag.err" || why "$what: the message does not say '$word': $(head -c 300 "$tag.err")"
	[ ! -s "$tag.out" ] || why "$what: output on stdout: $(head -c 200 "$tag.out")"
}

# bgstart TAG CMD...: CMD in the background under timeout (BGLIM seconds,
# default LIM), output into TAG.out/TAG.err. BGJOB is the timeout process (`wait $BGJOB` gives CMD's
# status), BGPID the command's own pid (empty if it never started).
bgstart() {
	local tag=$1 i
	shift
	rm -f "$tag.pid"
	timeout -k 5 "${BGLIM:-$LIM}" sh -c 'echo $$ >"$0"; exec "$@"' "$tag.pid" "$@" >"$tag.out" 2>"$tag.err" &
	BGJOB=$!
	BGPID=""
	for ((i = 0; i < 400; i++)); do
		[ -s "$tag.pid" ] && { BGPID=$(cat "$tag.pid"); break; }
		sleep 0.05
	done
}

# sig SIGNAL PID NAME: signal PID only if it still runs the program NAME
# (a pid that has exited may belong to someone else by now).
sig() {
	[ -n "$2" ] && [ "$(cat "/proc/$2/comm" 2>/dev/null)" = "$3" ] && kill -"$1" "$2" 2>/dev/null
}

# wait_for FILE ERE [TENTHS]: poll (default at most 20 s) until a line of
# FILE matches.
wait_for() {
	local i n=$((${3:-200} * 2))
	for ((i = 0; i < n; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# wait_file PATH: poll (at most 20 s) until it exists.
wait_file() {
	local i
	for ((i = 0; i < 400; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# start_server TAG [SECONDS]: examples/server in the background; SPID,
# SJOB; waits until its control block exists. Status 1 if it does not.
start_server() {
	local tag=$1
	BGLIM=$SRVLIM bgstart "$tag" "$SERVER" ${2:+"$2"}
	SPID=$BGPID
	SJOB=$BGJOB
	if [ -z "$SPID" ]; then
		why "$tag: the server did not start"
		show "$tag.err"
		return 1
	fi
	STARTED+=("$SPID")
	if ! wait_file "$BLOCK$SPID"; then
		why "$tag: no control block $BLOCK$SPID"
		return 1
	fi
	return 0
}

# stop_server TAG: SIGINT, wait; status in SRC; checks its output
# (heartbeats 1..N in order, then "server: done after N heartbeats").
stop_server() {
	local tag=$1 r
	sig INT "$SPID" server
	{ wait "$SJOB"; } 2>/dev/null
	SRC=$?
	eq "$tag: server exit status" "$SRC" 0
	r=$(server_output "$tag.out") || why "$tag: server output: $r"
}

# server_output FILE: heartbeat lines numbered 1..N with nothing between,
# the last line "server: done after N heartbeats".
server_output() {
	awk '
		$0 ~ /^heartbeat [0-9]+$/ && !done { if ($2 != n + 1) { printf "line %d: %s after heartbeat %d\n", NR, $0, n; bad = 1; exit 1 } n = $2; next }
		$0 ~ /^server: done after [0-9]+ heartbeats$/ && !done { if ($4 != n) { printf "final line says %s, last heartbeat %d\n", $4, n; bad = 1; exit 1 } done = 1; next }
		{ printf "line %d unexpected: %.80s\n", NR, $0; bad = 1; exit 1 }
		END { if (!bad && !done) { printf "no final line (last heartbeat %d)\n", n; exit 1 } }' "$1"
}

# beats FILE: the last heartbeat number the server printed.
beats() { awk '$1 == "heartbeat" { n = $2 } END { print n + 0 }' "$1"; }

# wait_beats FILE N: poll (at most 30 s) until heartbeat N is printed.
wait_beats() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ "$(beats "$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# rec_live TAG PID SERVER_OUT N: `ringtrace record -p PID -o TAG`, stopped by
# SIGINT once the server has printed N heartbeats after the recorder said
# it attached (heartbeat h+2 is fired after heartbeat h+1 is printed, so
# N >= 2 means at least one heartbeat was fired while recording). Status in
# RC, messages in TAG.rec.err.
rec_live() {
	local tag=$1 pid=$2 sout=$3 n=$4 h
	bgstart "$tag.rec" "$RT" record -p "$pid" -o "$tag"
	local job=$BGJOB rp=$BGPID
	if [ -n "$rp" ] && wait_for "$tag.rec.err" '^ringtrace record: attached to '; then
		h=$(beats "$sout")
		wait_beats "$sout" $((h + n)) || why "$tag: the server printed no heartbeat after $h"
	else
		why "$tag: record -p did not attach"
		show "$tag.rec.err" 3
	fi
	sig INT "$rp" ringtrace
	{ wait "$job"; } 2>/dev/null
	RC=$?
}

# dump DIR: ringtrace dump DIR into DIR.dump/DIR.dumperr; status in DRC.
dump() {
	timeout -k 5 $LIM "$RT" dump "$1" >"$1.dump" 2>"$1.dumperr"
	DRC=$?
}

# ev_count FILE NAME: lines of event NAME (provider:name) in dump output.
ev_count() { awk -v e="$2:" '$4 == e' "$1" | wc -l; }

# user_count FILE: event lines (not the `ringtrace: ... lost` ones).
user_count() { awk 'NF >= 4 && $1 != "ringtrace:" && $4 ~ /^[a-z_]+:[a-z_]+:$/' "$1" | wc -l; }

# ids FILE EVENT: per worker, the ids of EVENT are distinct and
# consecutive; prints the problem and fails otherwise.
ids() {
	awk -v ev="$2:" '$4 == ev {
		w = ""; id = ""
		if (match($0, / worker=[0-9]+/)) w = substr($0, RSTART + 8, RLENGTH - 8)
		if (match($0, / id=[0-9]+/)) id = substr($0, RSTART + 4, RLENGTH - 4) + 0
		if (w == "" || id == "") { printf "unparsable line: %.120s\n", $0; bad = 1; exit 1 }
		if ((w, id) in seen) { printf "worker %s id %s twice\n", w, id; bad = 1; exit 1 }
		seen[w, id] = 1; n[w]++
		if (!(w in lo) || id < lo[w]) lo[w] = id
		if (!(w in hi) || id > hi[w]) hi[w] = id
	}
	END {
		if (bad) exit 1
		for (w in n) if (hi[w] - lo[w] + 1 != n[w]) { printf "worker %s: %d ids in %d..%d (gaps)\n", w, n[w], lo[w], hi[w]; exit 1 }
	}' "$1"
}

# check_ids FILE: request_begin and request_end ids per worker distinct and
# consecutive.
check_ids() {
	local r e
	for e in app:request_begin app:request_end; do
		r=$(ids "$1" "$e") || why "$1: $e: $r"
	done
}

# The summary line of `ringtrace record`; sets S_EVENTS S_LOST, or fails.
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
	return 0
}

# sj PID: `ringtrace stat --json PID`, parsed: J_TRACING (on/off),
# J_WRITTEN, J_INBUF, J_READ (events read), J_LOST (all causes), J_NCPUS
# (CPUs listed: 0 without buffers); J_TRACING=error if it did not parse.
sj() {
	rt sj stat --json "$1"
	[ "$RC" = 0 ] || { why "stat --json $1: status $RC"; show sj.err 2; }
	eval "$(python3 -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    t = d["total"]
    lost = t["lost_full"] + t["lost_overwrite"] + t["lost_too_big"] + t["lost_no_rseq"]
    print("J_TRACING=%s J_WRITTEN=%d J_INBUF=%d J_READ=%d J_LOST=%d J_NCPUS=%d" % (
        "on" if d["tracing"] is True else "off" if d["tracing"] is False else "error",
        t["written"], t["in_buffer"], t["events_read"], lost, len(d["cpus"])))
except Exception as e:
    print("J_TRACING=error J_WRITTEN=x J_INBUF=x J_READ=x J_LOST=x J_NCPUS=x")
' sj.out 2>/dev/null || echo 'J_TRACING=error J_WRITTEN=x J_INBUF=x J_READ=x J_LOST=x J_NCPUS=x')"
	[ "$J_TRACING" != error ] || { why "stat --json did not parse"; show sj.out 2; }
}

# ---- the tests ------------------------------------------------------------

# 1. enable/disable change what is recorded.
t_rules() {
	local name="enable/disable: record -p holds no db:query after disable 'db:*', some after enable"
	begin
	have "$SERVER" "$RT" && start_server srv || { finish "$name"; return; }
	rt dis disable "$SPID" 'db:*'
	eq "disable status" "$RC" 0
	eq "disable output" "$(cat dis.out)" "disabled 1 event in process $SPID"
	rt ls list "$SPID"
	grep -qE '^db:query +id [0-9]+ +disabled ' ls.out || why "list does not show db:query disabled: $(grep db:query ls.out)"
	grep -qE '^app:request_begin +id [0-9]+ +enabled ' ls.out || why "list does not show app:request_begin enabled"

	rec_live r1 "$SPID" srv.out 5
	eq "record -p status" "$RC" 0
	summary r1.rec.err
	dump r1
	eq "dump status" "$DRC" 0
	[ "$(ev_count r1.dump app:request_begin)" -gt 0 ] || why "r1: no app:request_begin"
	[ "$(ev_count r1.dump app:heartbeat)" -gt 0 ] || why "r1: no app:heartbeat"
	eq "r1: db:query events" "$(ev_count r1.dump db:query)" 0
	check_ids r1.dump
	# It switched tracing on, so it left it off and freed the buffers.
	sj "$SPID"
	eq "after record -p: tracing" "$J_TRACING" off
	eq "after record -p: CPUs with buffers" "$J_NCPUS" 0

	rt en enable "$SPID" 'db:*'
	eq "enable status" "$RC" 0
	eq "enable output" "$(cat en.out)" "enabled 1 event in process $SPID"
	rec_live r2 "$SPID" srv.out 5
	eq "record -p status" "$RC" 0
	dump r2
	eq "dump status" "$DRC" 0
	[ "$(ev_count r2.dump db:query)" -gt 0 ] || why "r2: no db:query after enable 'db:*'"
	[ "$(ev_count r2.dump app:request_begin)" -gt 0 ] || why "r2: no app:request_begin"
	check_ids r2.dump
	finish "$name"

	# The bound: after `enable` returns, show prints a db:query within 5 s.
	name="enable/disable: a db:query shows in 'show' within 5 s of enable returning"
	begin
	rt dis2 disable "$SPID" 'db:*'
	eq "disable status" "$RC" 0
	bgstart show "$RT" show "$SPID"
	local sjob=$BGJOB spid=$BGPID ms=""
	if wait_for show.out ' app:request_begin: ' 100; then
		grep -q ' db:query: ' show.out && why "db:query shown while disabled"
		rt en2 enable "$SPID" 'db:*'
		local t0 t1 i found=0
		t0=$(date +%s%N)
		eq "enable status" "$RC" 0
		for ((i = 0; i < 400; i++)); do
			grep -q ' db:query: ' show.out && { found=1; break; }
			sleep 0.05
		done
		t1=$(date +%s%N)
		ms=$(((t1 - t0) / 1000000))
		if [ $found = 0 ]; then
			why "no db:query within 20 s of enable"
		elif [ $ms -gt 5000 ]; then
			why "db:query shown $ms ms after enable returned (bound: 5000)"
		fi
	else
		why "show printed no app:request_begin within 10 s"
		show show.err 3
	fi
	sig INT "$spid" ringtrace
	{ wait "$sjob"; } 2>/dev/null
	eq "show status" "$?" 0
	check_ids show.out
	stop_server srv
	finish "$name"
	[ -n "$ms" ] && echo "    # db:query shown $ms ms after enable returned"
}

# 2. stat agrees with the trace.
t_stat() {
	local name="stat --json: written equals the events record -p reads; afterwards in_buffer 0, events_read equal"
	begin
	have "$SERVER" "$RT" && start_server srv || { finish "$name"; return; }
	rt on on "$SPID"
	eq "on status" "$RC" 0
	wait_beats srv.out $(($(beats srv.out) + 3)) || why "no heartbeats"
	# Stop the writers for good: no event enabled, and `off` waits for a
	# grace period, so nothing is being written any more; `on` again keeps
	# the same buffers (record -p then leaves tracing as it found it).
	rt dis disable "$SPID" '*'
	eq "disable '*'" "$(cat dis.out)" "disabled 4 events in process $SPID"
	rt off off "$SPID"
	eq "off status" "$RC" 0
	rt on2 on "$SPID"
	eq "on status" "$RC" 0
	sj "$SPID"
	local w=$J_WRITTEN
	eq "tracing" "$J_TRACING" on
	[ "$w" -gt 0 ] 2>/dev/null || why "written is '$w', want > 0"
	eq "in_buffer before recording (= written: nothing read, nothing lost)" "$J_INBUF" "$w"
	eq "events_read before recording" "$J_READ" 0
	eq "lost" "$J_LOST" 0
	rec_live tr "$SPID" srv.out 2
	eq "record -p status" "$RC" 0
	summary tr.rec.err && {
		eq "events recorded (summary) vs stat written" "$S_EVENTS" "$w"
		eq "lost (summary)" "$S_LOST" 0
	}
	dump tr
	eq "dump status" "$DRC" 0
	eq "events in the trace vs stat written" "$(user_count tr.dump)" "$w"
	check_ids tr.dump
	sj "$SPID"
	eq "after: tracing (left as found)" "$J_TRACING" on
	eq "after: written" "$J_WRITTEN" "$w"
	eq "after: in_buffer" "$J_INBUF" 0
	eq "after: events_read" "$J_READ" "$w"
	rt off2 off "$SPID"
	stop_server srv
	finish "$name"
}

# 3. record -p attaches and detaches 100 times; the program does not notice.
t_cycles() {
	local name="record -p 100 times: every trace decodes; the server's output, status and memory unchanged"
	local n=${LIVE_CYCLES:-100}
	begin
	have "$SERVER" "$RT" && start_server srv || { finish "$name"; return; }
	wait_beats srv.out 1
	local before after i bad=0 r
	snap() {
		echo "rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$SPID/status") size=$(awk '/^VmSize:/ { print $2 }' "/proc/$SPID/status") fds=$(ls "/proc/$SPID/fd" | wc -l) maps=$(wc -l <"/proc/$SPID/maps")"
	}
	# The first session sets up stack capture once (libunwind's unwind
	# tables and its address-validation pipe): a one-time cost, so the
	# comparison starts after one cycle.
	rec_live c "$SPID" srv.out 2
	rm -rf c
	before=$(snap)
	cp "/proc/$SPID/maps" maps.before
	for ((i = 1; i <= n; i++)); do
		local w0=${#WHY[@]}
		rec_live c "$SPID" srv.out 2
		[ "$RC" = 0 ] || why "cycle $i: record -p status $RC"
		summary c.rec.err && { [ "$S_EVENTS" -gt 0 ] || why "cycle $i: 0 events recorded"; }
		dump c
		[ "$DRC" = 0 ] || { why "cycle $i: dump status $DRC"; show c.dumperr 2; }
		[ "$(ev_count c.dump app:heartbeat)" -gt 0 ] || why "cycle $i: no heartbeat in the trace"
		[ "$(user_count c.dump)" -gt 0 ] || why "cycle $i: no events"
		check_ids c.dump
		[ ${#WHY[@]} -eq "$w0" ] || { bad=$((bad + 1)); [ $bad -ge 3 ] && { why "(stopped after 3 failed cycles)"; break; }; }
		rm -rf c c.dump c.dumperr
	done
	after=$(snap)
	cp "/proc/$SPID/maps" maps.after
	local k
	# Under a sanitizer (LIVE_SANITIZER=1) the sanitizer's own allocator
	# maps memory as the program runs: only sizes and descriptors compare.
	local keys="size fds maps"
	[ -n "${LIVE_SANITIZER:-}" ] && keys="size fds"
	for k in $keys; do
		eq "$k before/after ($before / $after)" "$(echo "$after" | sed "s/.*$k=\([0-9]*\).*/\1/")" "$(echo "$before" | sed "s/.*$k=\([0-9]*\).*/\1/")"
	done
	if [ -z "${LIVE_SANITIZER:-}" ]; then
		local rss0 rss1
		rss0=$(echo "$before" | sed 's/.*rss=\([0-9]*\).*/\1/')
		rss1=$(echo "$after" | sed 's/.*rss=\([0-9]*\).*/\1/')
		[ $((rss1 - rss0)) -le 2048 ] || why "VmRSS grew by $((rss1 - rss0)) KiB (slack 2048)"
		cmp -s maps.before maps.after || why "maps differ: $(diff maps.before maps.after | grep '^[<>]' | head -3 | tr '\n' ' ')"
	fi
	sj "$SPID"
	eq "after: tracing" "$J_TRACING" off
	eq "after: CPUs with buffers" "$J_NCPUS" 0
	stop_server srv
	finish "$name"
}

# 4. show prints events live; readers exclude each other; reset refused while one reads.
t_show() {
	local name="show: prints events live, ids per worker consecutive, SIGINT ends it with status 0"
	begin
	have "$SERVER" "$RT" && start_server srv || { finish "$name"; return; }
	bgstart show "$RT" show "$SPID"
	local sjob=$BGJOB spid=$BGPID
	if wait_for show.out ' app:request_begin: ' 100; then
		# More than a first round: a heartbeat fired after the first
		# event was shown (bounded wait, 30 s).
		local h
		h=$(beats srv.out)
		wait_for show.out " app:heartbeat: n=$((h + 2))\$" 300 || why "show printed no heartbeat $((h + 2))"
		[ "$(ev_count show.out app:request_begin)" -gt 1 ] || why "show printed $(ev_count show.out app:request_begin) app:request_begin"
		# While it reads: a second reader and reset are refused.
		rt rec2 record -p "$SPID" -o second
		fails_one_line rec2 "already being read" "second reader (record -p)"
		[ ! -e second ] || why "record -p that was refused left 'second' behind"
		rt reset reset "$SPID"
		fails_one_line reset "reading the buffers" "reset while show reads"
	else
		why "show printed no app:request_begin within 10 s"
		show show.err 3
	fi
	sig INT "$spid" ringtrace
	{ wait "$sjob"; } 2>/dev/null
	eq "show status" "$?" 0
	check_ids show.out
	local badl
	badl=$(grep -vE '^ +server-[0-9]+ +\[[0-9]{3}\] [0-9]+\.[0-9]{9}: (app|db):[a-z_]+: ' show.out | grep -v '^ringtrace: ' | head -2)
	[ -z "$badl" ] || why "lines not in dump's format: $badl"
	sj "$SPID"
	eq "after show: tracing" "$J_TRACING" off
	eq "after show: CPUs with buffers" "$J_NCPUS" 0
	stop_server srv
	finish "$name"
}

# 5. Another user's program: refused, with one line; root may.
t_perm() {
	local name="another user's program: refused with 'permission denied'; its owner and root may"
	begin
	if [ "$(id -u)" != 0 ]; then
		echo "ok - $name # SKIP not root"
		PASSED=$((PASSED + 1))
		return
	fi
	have "$SERVER" "$RT" || { finish "$name"; return; }
	local u
	for u in ringtrace-test ringtrace-test2; do
		id -u "$u" >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$u" >/dev/null 2>&1 ||
			why "cannot create user $u"
	done
	[ ${#WHY[@]} -eq 0 ] || { finish "$name"; return; }
	local srv=$SERVER prt=$RT envs=()
	# The users must be able to run the binaries; otherwise copies.
	if [ -n "${LIVE_COPY:-}" ] || ! runuser -u ringtrace-test -- sh -c 'test -x "$0" && test -r "$1" && test -x "$2"' \
		"$SERVER" "$BUILD/lib/libringtrace.so" "$RT" 2>/dev/null; then
		PERMDIR=$(mktemp -d /tmp/ringtrace-live-perm.XXXXXX) && chmod 755 "$PERMDIR" &&
			cp "$SERVER" "$RT" "$PERMDIR/" && cp -L "$BUILD/lib/libringtrace.so" "$PERMDIR/libringtrace.so.0" ||
			{ why "cannot copy the binaries for the test users"; finish "$name"; return; }
		srv=$PERMDIR/server
		prt=$PERMDIR/ringtrace
		envs=(LD_LIBRARY_PATH="$PERMDIR")
	fi
	# runuser may fork: the shell prints its pid before it becomes the server.
	timeout -k 5 $SRVLIM env "${envs[@]}" runuser -u ringtrace-test -- sh -c 'echo $$; exec "$0"' "$srv" >srv.out 2>srv.err &
	local job=$!
	local pid=""
	wait_for srv.out '^[0-9]+$' && pid=$(head -n 1 srv.out)
	if [ -z "$pid" ] || ! wait_file "$BLOCK$pid"; then
		why "the server did not start as ringtrace-test"
		show srv.err 3
		kill -TERM "$job" 2>/dev/null
		{ wait "$job"; } 2>/dev/null
		finish "$name"
		return
	fi
	STARTED+=("$pid")
	eq "owner of the control block" "$(stat -c %U "$BLOCK$pid")" ringtrace-test
	local cmd
	local args=()
	for cmd in list on stat "enable PID app:*" "record -p PID -o other" "show"; do
		read -ra args <<<"${cmd//PID/$pid}"
		[ "${#args[@]}" = 1 ] && args+=("$pid")
		{ timeout -k 5 $CMDLIM env "${envs[@]}" runuser -u ringtrace-test2 -- "$prt" "${args[@]}" >p.out 2>p.err; } 2>/dev/null
		RC=$?
		fails_one_line p "permission denied" "ringtrace ${args[*]} as ringtrace-test2"
	done
	{ timeout -k 5 $CMDLIM env "${envs[@]}" runuser -u ringtrace-test2 -- "$prt" ps >p.out 2>p.err; } 2>/dev/null
	eq "ps as ringtrace-test2: status" "$?" 0
	[ -z "$(awk -v p="$pid" '$1 == p' p.out)" ] || why "ps as ringtrace-test2 lists the other user's process"
	{ timeout -k 5 $CMDLIM env "${envs[@]}" runuser -u ringtrace-test -- "$prt" list "$pid" >p.out 2>p.err; } 2>/dev/null
	eq "list as the owner: status" "$?" 0
	grep -q "^ringtrace .*, process $pid (server), tracing off$" p.out || why "list as the owner: $(head -n 1 p.out)"
	rt rl list "$pid"
	eq "list as root: status" "$RC" 0
	grep -q "^ringtrace .*, process $pid (server), tracing off$" rl.out || why "list as root: $(head -n 1 rl.out)"
	rt ron on "$pid"
	eq "on as root: status" "$RC" 0
	sj "$pid"
	eq "tracing after root's on" "$J_TRACING" on
	rt roff off "$pid"
	eq "off as root: status" "$RC" 0
	sig INT "$pid" server
	{ wait "$job"; } 2>/dev/null
	eq "server exit status" "$?" 0
	local r
	r=$(tail -n +2 srv.out | server_output /dev/stdin) || why "server output: $r"
	[ ! -e "$BLOCK$pid" ] || why "control block left after the server exited"
	finish "$name"
}

# 6. A program killed with SIGKILL leaves a block; ps ignores it, ps --clean removes it.
t_stale() {
	local name="SIGKILL'ed program: ps does not list it, ps --clean removes its control block"
	begin
	have "$SERVER" "$RT" && start_server srv || { finish "$name"; return; }
	sig KILL "$SPID" server
	{ wait "$SJOB"; } 2>/dev/null
	eq "server status" "$?" 137
	[ -e "$BLOCK$SPID" ] || why "no control block left (the test needs a stale one)"
	rt ps ps
	eq "ps status" "$RC" 0
	[ -z "$(awk -v p="$SPID" '$1 == p' ps.out)" ] || why "ps lists the dead process: $(awk -v p="$SPID" '$1 == p' ps.out)"
	rt ls list "$SPID"
	fails_one_line ls "" "list of the dead process"
	rt clean ps --clean
	eq "ps --clean status" "$RC" 0
	grep -qxF "removed $BLOCK$SPID (process $SPID is gone)" clean.out || { why "ps --clean did not say it removed $BLOCK$SPID"; show clean.out 3; }
	tail -n 1 clean.out | grep -qE '^[0-9]+ stale control blocks? removed$' || why "last line: $(tail -n 1 clean.out)"
	[ ! -e "$BLOCK$SPID" ] || why "$BLOCK$SPID still exists"
	finish "$name"
}

# 7. list --json.
t_json() {
	local name="list --json: valid JSON with the server's 4 events, their fields and origins"
	begin
	have "$SERVER" "$RT" && start_server srv || { finish "$name"; return; }
	rt js list --json "$SPID"
	eq "status" "$RC" 0
	python3 -m json.tool js.out >/dev/null 2>js.tool || { why "python3 -m json.tool rejects it"; show js.tool 2; }
	local r
	r=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
bad = []
for k, t in (("ringtrace_version", str), ("pid", int), ("name", str), ("tracing", bool), ("events", list)):
    if not isinstance(d.get(k), t):
        bad.append("key %s missing or not %s" % (k, t.__name__))
if d.get("pid") != pid: bad.append("pid %r" % d.get("pid"))
if d.get("name") != "server": bad.append("name %r" % d.get("name"))
if d.get("tracing") is not False: bad.append("tracing %r" % d.get("tracing"))
want = {"app:request_begin": [("worker", "u32"), ("id", "u64"), ("path", "string")],
        "app:request_end": [("worker", "u32"), ("id", "u64"), ("status", "s32")],
        "db:query": [("id", "u64"), ("sql", "string")],
        "app:heartbeat": [("n", "u32")]}
got = {}
for e in d.get("events", []):
    for k in ("provider", "name", "id", "enabled", "signature", "fields", "defined_at"):
        if k not in e: bad.append("event without %s: %r" % (k, e))
    full = "%s:%s" % (e.get("provider"), e.get("name"))
    got[full] = [(f.get("name"), f.get("type")) for f in e.get("fields", [])]
    if e.get("enabled") is not True: bad.append("%s not enabled" % full)
    if "examples/server.c:" not in str(e.get("defined_at")): bad.append("%s defined_at %r" % (full, e.get("defined_at")))
if got != want: bad.append("events %r" % got)
ids = [e.get("id") for e in d.get("events", [])]
if len(set(ids)) != len(ids): bad.append("ids not distinct: %r" % ids)
print("; ".join(bad))
sys.exit(1 if bad else 0)
' js.out "$SPID" 2>&1) || why "${r:-python3 failed}"
	stop_server srv
	finish "$name"
}

# 8. Bad input: unknown pid, a program without ringtrace, malformed
# patterns, damaged control blocks, a program that exits meanwhile.
t_bad() {
	local name pid=999999 cmd args=()
	while [ -d "/proc/$pid" ]; do pid=$((pid - 1)); done
	name="bad input: a pid that does not exist: status 1, one line"
	begin
	have "$RT" || { finish "$name"; return; }
	for cmd in list stat on off reset "enable PID app:*" "disable PID app:*" "buffer-size PID 1M" "record -p PID -o none" show; do
		read -ra args <<<"${cmd//PID/$pid}"
		[ "${#args[@]}" = 1 ] && args+=("$pid")
		rt bad "${args[@]}"
		fails_one_line bad "no process $pid" "${args[*]}"
	done
	[ ! -e none ] || why "record -p left 'none' behind"
	finish "$name"

	name="bad input: a program without libringtrace: status 1, one line saying so"
	begin
	bgstart sleep sleep 30
	local spid=$BGPID sjob=$BGJOB
	for cmd in list stat on "enable PID app:*" "record -p PID -o none" show; do
		read -ra args <<<"${cmd//PID/$spid}"
		[ "${#args[@]}" = 1 ] && args+=("$spid")
		rt bad "${args[@]}"
		fails_one_line bad "does not use libringtrace" "${args[*]}"
	done
	finish "$name"

	name="bad input: malformed patterns: status 2, one line"
	begin
	have "$SERVER" && start_server srv || { finish "$name"; return; }
	local pat
	for pat in '' 'app request' 'app:[abc' 'nocolon' 'app:*' ; do
		rt bad enable "$SPID" "$pat"
		if [ "$pat" = 'app:*' ]; then
			eq "enable 'app:*' (a valid one, as a control) status" "$RC" 0
			continue
		fi
		eq "enable '$pat': status" "$RC" 2
		eq "enable '$pat': lines on stderr" "$(wc -l <bad.err)" 1
		grep -q "malformed pattern" bad.err || why "enable '$pat': $(head -c 200 bad.err)"
	done
	rt bad disable "$SPID" 'db:query' 'x y'
	eq "disable with one bad pattern among good ones: status" "$RC" 2
	rt ls list "$SPID"
	grep -qE '^db:query +id [0-9]+ +enabled ' ls.out || why "a refused command changed the rules: $(grep db:query ls.out)"
	finish "$name"

	# Forged blocks for the live sleep process: never a crash, one line.
	name="bad input: damaged control blocks (wrong magic, wrong size, wrong pid, symlink): status 1, one line, no crash"
	begin
	local size fake=$BLOCK$spid what
	size=$(stat -c %s "$BLOCK$SPID")
	FAKES+=("$fake")
	for what in magic size pid pidpatched symlink; do
		rm -f "$fake"
		case $what in
		magic) head -c "$size" /dev/zero | tr '\0' '\253' >"$fake" ;;
		size) head -c 100 /dev/zero | tr '\0' '\253' >"$fake" ;;
		pid) cp "$BLOCK$SPID" "$fake" ;;
		pidpatched)
			# The right pid too: the start time and the mappings still tell.
			cp "$BLOCK$SPID" "$fake"
			printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $((spid & 255)) $((spid >> 8 & 255)) $((spid >> 16 & 255)) $((spid >> 24 & 255)))" |
				dd of="$fake" bs=1 seek=24 conv=notrunc status=none
			;;
		symlink) ln -s /etc/passwd "$fake" ;;
		esac
		[ "$what" = symlink ] || chmod 600 "$fake"
		for cmd in list stat on "enable PID app:*" "record -p PID -o none" show; do
			read -ra args <<<"${cmd//PID/$spid}"
			[ "${#args[@]}" = 1 ] && args+=("$spid")
			rt bad "${args[@]}"
			fails_one_line bad "" "$what: ${args[*]}"
		done
		[ ! -e none ] || why "$what: record -p left 'none' behind"
		rt ps ps
		eq "$what: ps status" "$RC" 0
		[ -z "$(awk -v p="$spid" '$1 == p' ps.out)" ] || why "$what: ps lists the forged block"
		[ "$(grep -cF "$fake" ps.err)" -le 1 ] || why "$what: ps printed $(grep -cF "$fake" ps.err) lines about it on stderr"
		[ "$what" = symlink ] || [ -f "$fake" ] || why "$what: something removed the forged block"
	done
	rm -f "$fake"
	[ "$(cat /proc/$spid/comm 2>/dev/null)" = sleep ] || why "the sleep process is gone"
	eq "/etc/passwd still a file" "$(stat -c %F /etc/passwd)" "regular file"
	sig TERM "$spid" sleep
	{ wait "$sjob"; } 2>/dev/null
	stop_server srv
	finish "$name"

	# Commands racing with the program's exit.
	name="bad input: stat/list/on racing with the program's exit: status 0 or 1 with one line, no crash, no hang"
	begin
	local round n rc total=0 bad=0
	for round in 1 2 3 4 5; do
		start_server race$round 0.5 || break
		n=0
		while kill -0 "$SPID" 2>/dev/null && [ $total -lt 5000 ]; do
			for cmd in stat list on; do
				{ timeout -k 2 10 "$RT" $cmd "$SPID" >race.out 2>race.err; } 2>/dev/null
				rc=$?
				total=$((total + 1))
				if [ $rc -gt 1 ]; then
					why "round $round: $cmd $SPID: status $rc$([ $rc = 124 ] && echo ' (hung)'): $(head -c 200 race.err)"
					bad=$((bad + 1))
				elif [ $rc = 1 ] && [ "$(wc -l <race.err)" != 1 ]; then
					why "round $round: $cmd $SPID: status 1 with $(wc -l <race.err) lines on stderr"
					bad=$((bad + 1))
				elif [ $rc = 0 ] && [ "$(wc -l <race.err)" -gt 1 ]; then
					why "round $round: $cmd $SPID: status 0 with $(wc -l <race.err) lines on stderr"
					bad=$((bad + 1))
				fi
			done
			n=$((n + 1))
			[ $bad -ge 5 ] && break 2
		done
		# And a few times after it has exited.
		{ wait "$SJOB"; } 2>/dev/null
		eq "round $round: server status" "$?" 0
		for cmd in stat list on; do
			{ timeout -k 2 10 "$RT" $cmd "$SPID" >race.out 2>race.err; } 2>/dev/null
			rc=$?
			[ $rc = 1 ] && [ "$(wc -l <race.err)" = 1 ] || why "round $round: $cmd after exit: status $rc, $(wc -l <race.err) lines"
		done
		[ ! -e "$BLOCK$SPID" ] || why "round $round: control block left after a normal exit"
	done
	finish "$name"
	echo "    # $total commands raced with 5 exits"
}

# 9. buffer-size: refused while on, taken by the next on.
t_bufsize() {
	local name="buffer-size: refused while tracing is on, accepted while off, used by the next on"
	begin
	have "$SERVER" "$RT" && start_server srv || { finish "$name"; return; }
	rt on on "$SPID"
	eq "on status" "$RC" 0
	rt ps ps
	local b1 b2
	b1=$(ps_kib ps.out "$SPID")
	rt bs buffer-size "$SPID" 1M
	fails_one_line bs "tracing is on" "buffer-size while on"
	rt off off "$SPID"
	eq "off status" "$RC" 0
	rt bs buffer-size "$SPID" 3M
	eq "buffer-size 3M (not a power of two): status" "$RC" 2
	rt bs buffer-size "$SPID" 4K --subbuffers 4
	fails_one_line bs "invalid size" "buffer-size 4K --subbuffers 4 (1 KiB sub-buffers)"
	rt bs buffer-size "$SPID" 1M --subbuffers 4 --mode overwrite
	eq "buffer-size status" "$RC" 0
	eq "buffer-size output" "$(cat bs.out)" "process $SPID: 1.0 MiB per CPU in 4 sub-buffers, overwrite mode, from the next 'ringtrace on'"
	rt on on "$SPID"
	eq "on status" "$RC" 0
	rt st stat "$SPID"
	eq "stat status" "$RC" 0
	grep -q "^process $SPID (server): tracing on, overwrite mode, 4 x 256.0 KiB sub-buffers per CPU$" st.out ||
		why "stat header: $(head -n 1 st.out)"
	rt ps ps
	b2=$(ps_kib ps.out "$SPID")
	[ "$b1" -gt 0 ] && [ "$b2" -gt 0 ] && [ "$b2" -lt "$b1" ] 2>/dev/null ||
		why "ps BUFFERS: $b1 KiB with the default size, $b2 KiB with 1M per CPU (want smaller)"
	rt off off "$SPID"
	stop_server srv
	finish "$name"
}

# ps_kib FILE PID: the BUFFERS column of `ringtrace ps` for PID, in KiB
# (0 for "-").
ps_kib() {
	awk -v p="$2" '$1 == p {
		v = $6; u = $7; k = 0
		if (u == "KiB") k = v; else if (u == "MiB") k = v * 1024; else if (u == "GiB") k = v * 1048576; else if (u == "B") k = v / 1024
		printf "%d", k }' "$1"
}

# 10. reset empties the buffers.
t_reset() {
	local name="reset: empties the buffers while tracing is on (no event from before it is read) and while off (counters 0)"
	begin
	have "$SERVER" "$RT" && start_server srv || { finish "$name"; return; }
	rt on on "$SPID"
	eq "on status" "$RC" 0
	wait_beats srv.out $(($(beats srv.out) + 2))
	local i w1
	for ((i = 0; i < 100; i++)); do
		sj "$SPID"
		[ "$J_INBUF" -gt 0 ] 2>/dev/null && break
		sleep 0.1
	done
	[ "$J_INBUF" -gt 0 ] 2>/dev/null || why "in_buffer stays '$J_INBUF' with tracing on"
	w1=$J_WRITTEN
	local h0
	h0=$(beats srv.out)
	rt reset reset "$SPID"
	eq "reset status" "$RC" 0
	eq "reset output" "$(cat reset.out)" "buffers of process $SPID emptied"
	sj "$SPID"
	eq "after reset: tracing" "$J_TRACING" on
	[ "$J_INBUF" -le "$J_WRITTEN" ] 2>/dev/null || why "after reset: in_buffer $J_INBUF > written $J_WRITTEN"
	eq "after reset: in_buffer (= written since the reset: nothing read)" "$J_INBUF" "$J_WRITTEN"
	echo "written before reset $w1, written right after $J_WRITTEN" >counts.txt
	# Heartbeats fired after the reset returned, then stop the writers and
	# read everything.
	wait_beats srv.out $(($(beats srv.out) + 2)) || why "no heartbeats"
	rt dis disable "$SPID" '*'
	rt off off "$SPID"
	rt on on "$SPID"
	sj "$SPID"
	local w3=$J_WRITTEN
	eq "in_buffer before recording" "$J_INBUF" "$w3"
	rec_live tr "$SPID" srv.out 2
	eq "record -p status" "$RC" 0
	dump tr
	eq "dump status" "$DRC" 0
	eq "events in the trace vs written since the reset" "$(user_count tr.dump)" "$w3"
	local hb
	hb=$(awk '$4 == "app:heartbeat:" { sub(/^n=/, "", $5); print $5 }' tr.dump | sort -n)
	[ -n "$hb" ] || why "no heartbeat recorded after the reset"
	[ "$(echo "$hb" | head -n 1)" -gt "$h0" ] 2>/dev/null || why "heartbeat $(echo "$hb" | head -n 1) from before the reset (heartbeat $h0 was printed before it)"
	check_ids tr.dump
	# Off: reset leaves empty buffers and counters at 0.
	rt off off "$SPID"
	rt reset reset "$SPID"
	eq "reset while off: status" "$RC" 0
	sj "$SPID"
	eq "after reset while off: tracing" "$J_TRACING" off
	eq "after reset while off: written" "$J_WRITTEN" 0
	eq "after reset while off: in_buffer" "$J_INBUF" 0
	[ "$J_NCPUS" -gt 0 ] 2>/dev/null || why "after reset while off: no buffers"
	stop_server srv
	finish "$name"
}

# 11. Nothing of ours is left in /dev/shm.
t_left() {
	local name="no control block of a process this test started is left in $SHM"
	begin
	local p
	for p in "${STARTED[@]}"; do
		if [ -d "/proc/$p" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = server ]; then
			why "process $p still runs"
		elif [ -e "$BLOCK$p" ]; then
			why "left behind: $BLOCK$p"
			rm -f "$BLOCK$p"
		fi
	done
	for p in "${FAKES[@]}"; do
		[ ! -e "$p" ] || why "forged block left: $p"
	done
	finish "$name"
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
command -v python3 >/dev/null || notok "python3 available" "the JSON checks need python3"
for t in ${LIVE_TESTS:-t_rules t_stat t_cycles t_show t_perm t_stale t_json t_bad t_bufsize t_reset t_left}; do
	run $t
done

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
