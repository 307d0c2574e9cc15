#!/bin/bash
# sec_follow.sh - the follow channel of `ringtrace record --follow-fork/
# --follow-exec` under load and under attack: every child of a fork burst
# is traced (or named in the summary) and leaves nothing in /dev/shm; a
# process outside the traced program (another user's, or root's own) that
# sends to the recorder's socket is never recorded, is counted once in the
# summary, and cannot keep a recording alive by flooding it; an orphan of
# the traced tree (its parent gone before it spoke) is still followed.
#
# Needs root for the second user (useradd, removed at the end); those
# checks are skipped otherwise.
#
#   tests/e2e/sec_follow.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup sec-follow "${1:-build}"
BURST=$BUILD/tests/e2e/burst
FORKER=$BUILD/tests/e2e/forker
TO=60
USER2=
BG=()

cleanup() {
	local p
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "$USER2" ] && userdel "$USER2" 2>/dev/null
	cd / && rm -rf "$T"
}
trap cleanup EXIT

# ctl_of PROG: the control blocks in /dev/shm whose program is PROG (the
# block holds its executable's path; other tests' blocks do not name it).
ctl_of() { grep -lF -- "$1" /dev/shm/ringtrace.ctl.* 2>/dev/null; }

# sock_of PID: the abstract name the recorder PID listens on for notices
# (it is in /proc/net/unix for everyone to read); waits up to 20 s.
sock_of() {
	local i n
	for ((i = 0; i < 400; i++)); do
		n=$(grep -o "@ringtrace-follow-$1-[0-9a-f]*" /proc/net/unix | head -n 1)
		[ -n "$n" ] && { echo "${n#@}"; return 0; }
		sleep 0.05
	done
	return 1
}

# start_rec TAG: `record --follow-fork` of a shell that waits for the file
# TAG.go, in the background; REC is the recorder's pid, TPID that of the
# timeout running it, NAME its socket's name.
start_rec() {
	timeout $TO "$RT" record --follow-fork -o "$T/$1.t" -- \
		bash -c 'while [ ! -e "$1" ]; do sleep 0.05; done' _ "$T/$1.go" >"$T/$1.out" 2>"$T/$1.err" &
	TPID=$!
	BG+=("$TPID")
	REC=
	local i
	for ((i = 0; i < 400; i++)); do
		REC=$(pgrep -P "$TPID" -x ringtrace) && break
		sleep 0.05
	done
	NAME=$(sock_of "$REC") || why "no follow socket for recorder '$REC'"
}

# ---- 1. a fork burst: every child traced, nothing left in /dev/shm ----------
begin
if have "$RT" "$BURST"; then
	before=$(ctl_of "$BURST" | wc -l)
	timeout $TO "$RT" record --follow-fork -o "$T/burst.t" -- "$BURST" 200 >"$T/burst.out" 2>"$T/burst.err"
	eq "exit status" "$?" 0
	eq "output" "$(cat "$T/burst.out")" "200 children"
	traced=$(ls "$T/burst.t/children" 2>/dev/null | wc -l)
	# Those the recorder could not follow are named in its summary.
	named=$(sed -n 's/.*could not follow [0-9]* process.*: //p' "$T/burst.err" | tr ' ' '\n' | grep -c '^[0-9][0-9]*$')
	eq "children traced ($traced) + named as not followed ($named)" "$((traced + named))" 200
	eq "children's summary lines" "$(grep -c 'bytes written to .*/children/' "$T/burst.err")" "$traced"
	# Children leave with _exit(): nobody but the recorder or the child
	# itself removes their control blocks.
	left=$(ctl_of "$BURST" | wc -l)
	eq "control blocks of the burst left in /dev/shm" "$((left - before))" 0
	[ "$traced" -lt 200 ] && show "$T/burst.err" 3
fi
finish "--follow-fork on 200 children forked at once: each traced (or named in the summary), no control block left"

# ---- 2. another user's process on root's follow socket -----------------------
begin
if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null || ! command -v runuser >/dev/null; then
	echo "ok - another user's process is refused by root's recorder # SKIP needs root, useradd and runuser"
	PASSED=$((PASSED + 1))
elif have "$RT" "$FORKER"; then
	USER2=rtfollow$$
	useradd -M -N -s /bin/sh "$USER2" 2>"$T/useradd.err" || { why "useradd failed"; show "$T/useradd.err"; USER2=; }
	start_rec foreign
	if [ -n "$USER2" ] && [ -n "$NAME" ]; then
		# Its own constructor asks (--follow-exec style), then its child
		# asks (fork): two notices, from outside root's program.
		(cd / && timeout $TO runuser -u "$USER2" -- env \
			RINGTRACE_FOLLOW="fork=1 exec=1 sb=262144 nsb=8 mode=0 stacks=0 bits=0 sock=$NAME" \
			"$FORKER") >"$T/u2.out" 2>&1
		eq "the other user's program's status" "$?" 0
		eq "its output" "$(cat "$T/u2.out")" "child status 7"
	fi
	touch "$T/foreign.go"
	wait "$TPID"
	eq "recorder's status" "$?" 0
	c=$(ls "$T/foreign.t/children" 2>/dev/null)
	[ -n "$c" ] && why "the other user's processes were recorded into root's trace: $(echo $c)"
	eq "refusal line" "$(grep -c 'refused [0-9]* follow notice' "$T/foreign.err")" 1
	grep -q 'refused 2 follow notices from processes outside the traced program' "$T/foreign.err" ||
		{ why "no count of the two refused notices:"; show "$T/foreign.err"; }
	grep -q 'cannot follow' "$T/foreign.err" && { why "a message per notice:"; show "$T/foreign.err"; }
fi
finish "another user's process with root's follow socket is not recorded; the refusals are counted once"

# ---- 3. a flood of forged notices cannot keep a recording alive -------------
begin
if have "$RT"; then
	start_rec flood
	if [ -n "$NAME" ]; then
		# One every 2 ms until killed, from a process that is not part
		# of the program (root's, like the recorder). (On the old code a
		# notice every 5 ms kept a recording alive: each one made a
		# session whose end restarted the recorder's last wait.)
		# (A connection with the notice, as the library sends it; a
		# datagram where the recorder takes datagrams, as it once did.)
		timeout $TO python3 -c '
import socket, sys, time
addr = "\0" + sys.argv[1]
msg = b"RTFOLLOW1 fork 1"
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
d.setblocking(False)
n = 0
while True:
    try:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        c.settimeout(0.5)
        try:
            c.connect(addr)
            c.send(msg)
        except OSError:
            d.sendto(msg, addr)
        finally:
            c.close()
        n += 1
        if n == 200:
            print("flooding", flush=True)
    except OSError:
        pass
    time.sleep(0.002)' "$NAME" >"$T/flood.py" 2>&1 &
		FL=$!
		BG+=("$FL")
		for ((i = 0; i < 400; i++)); do grep -qs flooding "$T/flood.py" && break; sleep 0.05; done
		grep -qs flooding "$T/flood.py" || why "the flood did not start"
	fi
	# The program ends now; the flood goes on.
	touch "$T/flood.go"
	wait "$TPID"
	rc=$?
	[ "$rc" = 124 ] && why "the recording was kept alive by the flood until timeout ($TO s) killed it"
	eq "recorder's status" "$rc" 0
	kill -0 "${FL:-0}" 2>/dev/null || why "the flood had stopped before the recording ended"
	[ -n "${FL:-}" ] && kill "$FL" 2>/dev/null
	[ "$(grep -c 'refused' "$T/flood.err")" -le 1 ] || why "more than one refusal line"
	grep -q 'refused [0-9]* follow notices from processes outside' "$T/flood.err" ||
		{ why "no count of the refused notices:"; show "$T/flood.err"; }
	eq "messages per notice" "$(grep -c 'cannot follow' "$T/flood.err")" 0
	[ "$(wc -l <"$T/flood.err")" -le 5 ] || { why "more than 5 lines on stderr:"; show "$T/flood.err"; }
	[ -e "$T/flood.t/children" ] && why "children traced from forged notices: $(ls "$T/flood.t/children" | head -3)"
fi
finish "a flood of forged notices: the recording ends with its program, one line counts them"

# ---- 4. an orphan of the traced tree is still followed ----------------------
begin
if have "$RT" "$FORKER"; then
	# The middle shell exits; the orphan waits until it is gone (its
	# parent is then the recorder, a subreaper), then becomes forker.
	# The top shell waits on the fifo the orphan holds open. The orphan
	# drops RINGTRACE_SHM: bash does not load libringtrace, so the first
	# instrumented program to start would take the top region instead of
	# being followed (whether it can depends on the descriptor number the
	# recorder's region happens to get).
	mkfifo "$T/orphan.fifo"
	timeout $TO "$RT" record --follow-fork --follow-exec -o "$T/orphan.t" -- bash -c '
		( m=$BASHPID; ( while kill -0 $m 2>/dev/null; do sleep 0.01; done; exec 3>"$1"; unset RINGTRACE_SHM; exec "$2" >/dev/null ) & )
		cat "$1"' _ "$T/orphan.fifo" "$FORKER" >"$T/orphan.out" 2>"$T/orphan.err"
	eq "exit status" "$?" 0
	n=$(ls "$T/orphan.t/children" 2>/dev/null | grep -c -- '-forker')
	eq "traces of forker and its child" "$n" 2
	grep -q 'refused' "$T/orphan.err" && { why "the orphan was refused:"; show "$T/orphan.err"; }
fi
finish "an orphan of the traced tree (its parent exited first) is followed"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
