#!/bin/bash
# sec_ctl.sh - root's ringtrace against another user's control blocks. A
# block is that user's word: root's ps, list and stat open nothing
# writable, whoever's block it is; ps names the process's user as /proc
# says, not as the block does; a block whose descriptor numbers point at a
# file the user's process holds but does not own (a root-only file passed
# in before the user was switched) makes no command open or map that file,
# and stat and record -p refuse with one line; a block others may write is
# refused.
#
# As root only (it creates a user, removed on exit): each command runs
# under strace, whose log shows every open and mapping.
#
#   tests/e2e/sec_ctl.sh [BUILD_DIR]
#
# SEC_PROGS_BUILD: the build of the programs run as the other user (the
# example server, tests/tools/ctlforge), default BUILD_DIR: a sanitized
# command can be tested against plain programs.
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup sec-ctl "${1:-build}"
PROGS=${SEC_PROGS_BUILD:-$BUILD}
case $PROGS in /*) ;; *) PROGS=$REPO/$PROGS ;; esac
LIM=30
U=""
BIN=""
STARTED=()

cleanup() {
	local p
	for p in "${STARTED[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	for p in "${STARTED[@]}"; do
		rm -f "/dev/shm/ringtrace.ctl.$p"
	done
	[ -n "$U" ] && userdel "$U" >/dev/null 2>&1
	[ -n "$BIN" ] && rm -rf "$BIN"
	rm -rf "$T"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then
	echo "ok - another user's control blocks # SKIP not root"
	echo "1 passed, 0 failed"
	exit 0
fi
begin
have "$RT" "$PROGS/examples/server" "$PROGS/tests/tools/ctlforge" "$PROGS/lib/libringtrace.so" || {
	finish "setup"
	echo "$PASSED passed, $FAILED failed"
	exit 1
}
command -v strace >/dev/null || why "strace is not installed"
command -v setpriv >/dev/null || why "setpriv is not installed"
# A name of at most 10 characters: ps prints that many.
U=rts$$
useradd -M -s /usr/sbin/nologin "$U" >/dev/null 2>&1 || { why "cannot create user $U"; U=""; }
# The other user must be able to run the programs: copies in a directory
# everyone may read.
BIN=$(mktemp -d /tmp/ringtrace-sec-bin.XXXXXX) && chmod 755 "$BIN" &&
	cp "$PROGS/examples/server" "$PROGS/tests/tools/ctlforge" "$BIN/" &&
	cp -L "$PROGS/lib/libringtrace.so" "$BIN/libringtrace.so.0" && chmod 755 "$BIN"/* ||
	why "cannot copy the programs for $U"
# A root-only file, big enough to pass for buffers by its size.
SECRET=$T/secret
head -c 1048576 /dev/zero >"$SECRET" && chmod 600 "$SECRET" || why "cannot write $SECRET"
SUM0=$(sha256sum <"$SECRET")
if [ ${#WHY[@]} -ne 0 ]; then
	finish "setup"
	echo "$PASSED passed, $FAILED failed"
	exit 1
fi

# as_user TAG CMD...: CMD as $U (real, effective and saved ids, no
# supplementary groups) in the background; its pid in TAG.pid (the
# shell execs setpriv, which execs CMD: one pid), output in TAG.out.
# Descriptors the caller opens for the shell are inherited.
as_user() {
	local tag=$1
	shift
	timeout -k 5 $LIM sh -c 'echo $$ >"$0"; u=$1; shift; exec setpriv --reuid="$u" --regid="$u" --clear-groups -- "$@"' \
		"$tag.pid" "$U" "$@" >"$tag.out" 2>"$tag.err" &
}

# started TAG: PID is the pid of TAG once its control block is there (20 s
# at most), or "" after a diagnostic.
started() {
	local i
	PID=""
	for ((i = 0; i < 400; i++)); do
		[ -s "$1.pid" ] && PID=$(cat "$1.pid")
		if [ -n "$PID" ] && [ -e "/dev/shm/ringtrace.ctl.$PID" ] && { [ "$1" = srv ] || grep -q '^ready' "$1.out"; }; then
			STARTED+=("$PID")
			return
		fi
		sleep 0.05
	done
	PID=""
	why "$1 did not publish its control block as $U"
	show "$1.err" 3
}

# traced TAG ARGS...: ringtrace ARGS as root, status in RC and output in
# TAG.out/TAG.err; then again under strace, every open and mapping in
# TAG.st. Two runs because LeakSanitizer cannot work under ptrace: the
# first keeps the caller's ASAN_OPTIONS, the second has leaks unchecked.
traced() {
	local tag=$1
	shift
	timeout -k 5 $LIM "$RT" "$@" >"$tag.out" 2>"$tag.err"
	RC=$?
	ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0" timeout -k 5 $LIM \
		strace -f -y -e trace=open,openat,mmap -o "$tag.st" "$RT" "$@" >/dev/null 2>&1
}

# no_write_open TAG WHAT: TAG.st shows no open for writing of a control
# block, of a process's descriptor or of the root-only file.
no_write_open() {
	local bad
	bad=$(grep -E '(^|[^a-z])open(at)?\(' "$1.st" | grep -E 'O_RDWR|O_WRONLY' |
		grep -E 'ringtrace\.ctl\.|/proc/|"fd/|memfd:|'"$SECRET" | head -n 3)
	[ -z "$bad" ] || why "$2 opened for writing: $bad"
}

# no_shared_write TAG WHAT: TAG.st shows no shared mapping with write access.
no_shared_write() {
	local bad
	bad=$(grep -E 'mmap\(' "$1.st" | grep 'MAP_SHARED' | grep 'PROT_WRITE' | head -n 3)
	[ -z "$bad" ] || why "$2 mapped shared memory writable: $bad"
}

# untouched_secret TAG WHAT: TAG.st shows no open (whatever the mode) and
# no mapping of the root-only file, nor of descriptor 5.
untouched_secret() {
	local bad
	bad=$(grep -E "$SECRET|\"(/proc/[0-9]+/)?fd/5\"" "$1.st" | head -n 3)
	[ -z "$bad" ] || why "$2 touched the root-only file: $bad"
}

# one_line TAG WORD WHAT: failed (1..127, not a timeout) with one line on
# stderr that says WORD.
one_line() {
	[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && [ "$RC" -lt 128 ] || why "$3: status $RC, want 1..127 except 124"
	[ "$(wc -l <"$1.err")" = 1 ] || { why "$3: $(wc -l <"$1.err") lines on stderr, want 1"; show "$1.err" 3; }
	grep -qiF -- "$2" "$1.err" || why "$3: the message does not say '$2': $(head -c 300 "$1.err")"
}

# ps_user TAG PID: the USER column of PID's row in TAG.out.
ps_user() { awk -v p="$2" '$1 == p { print $2 }' "$1.out"; }

# ---- 1. a real program of the other user -----------------------------------
begin
as_user srv env LD_LIBRARY_PATH="$BIN" "$BIN/server"
started srv
SPID=$PID
if [ -n "$SPID" ]; then
	"$RT" on "$SPID" >on.out 2>on.err || { why "root's 'ringtrace on $SPID' failed"; show on.err 2; }
	traced ps1 ps
	eq "ps status" "$RC" 0
	eq "ps: user of $SPID" "$(ps_user ps1 "$SPID")" "$U"
	no_write_open ps1 "ps"
	no_shared_write ps1 "ps"
	traced ls1 list "$SPID"
	eq "list status" "$RC" 0
	grep -q "^ringtrace .*, process $SPID (server), tracing on$" ls1.out || why "list: $(head -n 1 ls1.out)"
	no_write_open ls1 "list"
	no_shared_write ls1 "list"
	traced st1 stat "$SPID"
	eq "stat status" "$RC" 0
	grep -q "^process $SPID (server): tracing on, " st1.out || why "stat: $(head -n 1 st1.out) $(head -c 200 st1.err)"
	no_write_open st1 "stat"
	no_shared_write st1 "stat"
	"$RT" off "$SPID" >off.out 2>off.err || { why "root's 'ringtrace off $SPID' failed"; show off.err 2; }
fi
finish "another user's program: root's ps, list and stat open and map nothing writable, ps names its user"

# ---- 2. a forged block: claims root, its buffers a root-only file --------------
begin
as_user forge "$BIN/ctlforge" --fd 5 --uid-field 0 5<"$SECRET"
started forge
FPID=$PID
if [ -n "$FPID" ]; then
	traced ps2 ps
	eq "ps status" "$RC" 0
	eq "ps: user of $FPID (its block says root)" "$(ps_user ps2 "$FPID")" "$U"
	no_write_open ps2 "ps"
	no_shared_write ps2 "ps"
	untouched_secret ps2 "ps"
	traced st2 stat "$FPID"
	one_line st2 "refused" "stat of the forged block"
	no_write_open st2 "stat"
	no_shared_write st2 "stat"
	untouched_secret st2 "stat"
	traced ls2 list "$FPID"
	eq "list status (the block itself is readable)" "$RC" 0
	no_write_open ls2 "list"
	no_shared_write ls2 "list"
	untouched_secret ls2 "list"
	traced rec2 record -p "$FPID" -o "$T/rec2.t"
	[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && [ "$RC" -lt 128 ] || why "record -p: status $RC, want 1..127 except 124"
	grep -qF "refused" rec2.err || why "record -p: the message does not say 'refused': $(head -c 300 rec2.err)"
	untouched_secret rec2 "record -p"
	eq "the root-only file" "$(sha256sum <"$SECRET")" "$SUM0"
fi
finish "forged block claiming root, its buffers a root-only file: ps names the real user, nothing opens the file, stat and record -p refuse"

# ---- 3. a block others may write ------------------------------------------------
begin
as_user open "$BIN/ctlforge" --mode 0666
started open
OPID=$PID
if [ -n "$OPID" ]; then
	traced ls3 list "$OPID"
	one_line ls3 "writable by other users" "list of a block writable by everyone"
	no_write_open ls3 "list"
	traced st3 stat "$OPID"
	one_line st3 "writable by other users" "stat of a block writable by everyone"
	traced ps3 ps
	eq "ps status" "$RC" 0
	[ -z "$(ps_user ps3 "$OPID")" ] || why "ps lists the block writable by everyone: $(awk -v p="$OPID" '$1 == p' ps3.out)"
	no_write_open ps3 "ps"
fi
finish "a control block writable by other users is refused and not listed"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
