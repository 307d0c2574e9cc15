#!/bin/bash
# End-to-end tests of `ringtrace mount DIR` (docs/mount.md) with the
# kernel's FUSE: the example server is driven and read only with cat, echo,
# ls and dd through the mount, and every file is checked against the
# `ringtrace` command that prints or does the same (list, stat --json,
# show's line format, stackmap, --stat, --bin). Then errors as errno, a
# second user (root's mount refuses them other users' processes; their
# own mount shows only theirs), processes coming and going, a daemonised
# mount stopped by fusermount3 -u, and a lazy unmount while a reader is
# blocked in trace_pipe. A machine without FUSE gets one line naming what
# is missing.
#
#   tests/e2e/mount.sh [BUILD_DIR]      (default: build)
#
# Needs root (mounting for every user, the second user); otherwise skipped.
# Every program runs under `timeout`; the trap unmounts, stops the
# programs and removes the user and the directories.
set -u
export CI=true LC_ALL=C
exec </dev/null
ulimit -c 0

REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup mount "${1:-build}"
LIM=300                         # seconds any background program may run
CMD=20                          # seconds any one command may take
U=""
BIN=""
MNT=""
UMNT=""
DMNT=""
STARTED=()

cleanup() {
	local m p
	# Unconditionally: a server that died leaves a mount that
	# mountpoint(1) cannot stat.
	for m in "$UMNT" "$DMNT" "$MNT"; do
		[ -n "$m" ] && umount -l "$m" 2>/dev/null
	done
	for p in $(jobs -p); do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${STARTED[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	for p in "${STARTED[@]}"; do
		rm -f "/dev/shm/ringtrace.ctl.$p"
	done
	[ -n "$U" ] && userdel "$U" >/dev/null 2>&1
	[ -n "$BIN" ] && rm -rf "$BIN"
	cd / && rm -rf "$T"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then
	echo "ok - ringtrace mount # SKIP not root"
	echo "1 passed, 0 failed"
	exit 0
fi

# ---- set-up ---------------------------------------------------------------
begin
have "$RT" "$BUILD/examples/server" "$PROGS/stacks" "$BUILD/lib/libringtrace.so" || {
	finish "setup"
	echo "$PASSED passed, $FAILED failed"
	exit 1
}
[ -c /dev/fuse ] || why "/dev/fuse is missing"
command -v fusermount3 >/dev/null || why "fusermount3 is not installed (fuse3)"
command -v setpriv >/dev/null || why "setpriv is not installed"
U=rtm$$
useradd -M -s /usr/sbin/nologin "$U" >/dev/null 2>&1 || { why "cannot create user $U"; U=""; }
# Programs every user may run, under a name no other program has (the
# by-name link needs a name one process has).
chmod 755 "$T"
BIN=$(mktemp -d /tmp/ringtrace-mount-bin.XXXXXX) && chmod 755 "$BIN" &&
	cp "$BUILD/examples/server" "$BIN/rtmsrv" && cp "$PROGS/stacks" "$BIN/rtmstk" &&
	cp -L "$BUILD/lib/libringtrace.so" "$BIN/libringtrace.so.0" && chmod 755 "$BIN"/* ||
	why "cannot copy the programs"
MNT=$T/mnt
UMNT=$T/umnt
DMNT=$T/dmnt
mkdir -p "$MNT" "$UMNT" "$DMNT" && chmod 755 "$MNT" "$DMNT" || why "cannot make the mount points"
if [ ${#WHY[@]} -ne 0 ]; then
	finish "setup"
	echo "$PASSED passed, $FAILED failed"
	exit 1
fi

# start TAG PROG ARGS...: PROG (root's) in the background; its pid in PID
# once its control block is there.
# (The shell execs the program: the pid it writes is the program's.)
start() {
	local tag=$1 i
	shift
	rm -f "$tag.pid"
	timeout -k 5 $LIM sh -c 'echo $$ >"$0"; exec "$@"' "$tag.pid" env LD_LIBRARY_PATH="$BIN" "$@" \
		>"$tag.out" 2>&1 &
	for ((i = 0; i < 400; i++)); do
		[ -s "$tag.pid" ] && break
		sleep 0.05
	done
	PID=$(cat "$tag.pid" 2>/dev/null)
	STARTED+=("$PID")
	ready "$PID"
}

# bg TAG SECONDS CMD...: CMD in the background under timeout, its own pid
# (not timeout's) in BG, its output in TAG.out and TAG.err.
bg() {
	local tag=$1 lim=$2 i
	shift 2
	rm -f "$tag.pid"
	timeout -k 5 "$lim" sh -c 'echo $$ >"$0"; exec "$@"' "$tag.pid" "$@" >"$tag.out" 2>"$tag.err" &
	BGJOB=$!
	for ((i = 0; i < 400; i++)); do
		[ -s "$tag.pid" ] && break
		sleep 0.05
	done
	BG=$(cat "$tag.pid" 2>/dev/null)
}

# tm ARGS...: a command on the mount, bounded.
tm() { timeout -k 5 $CMD "$@"; }

# as_user CMD...: CMD as $U (no supplementary groups), bounded.
as_user() {
	timeout -k 5 $CMD setpriv --reuid="$U" --regid="$U" --clear-groups -- "$@"
}

# wait_for CMD...: until CMD succeeds (20 s at most).
wait_for() {
	local i
	for ((i = 0; i < 400; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# Lines without their timestamps: each open calibrates the clock anew, as
# each `show` does, so the same event can print a few hundred ns apart.
untimed() { sed -E 's/ [0-9]+\.[0-9]{9}: / TIME: /' "$@"; }

# The dump line of an event of the server, as `ringtrace show` prints it.
LINE_RE='^ *rtmsrv-[0-9]+ +\[[0-9]{3}\] [0-9]+\.[0-9]{9}: (app|db):[a-z_]+: '

# ---- no FUSE --------------------------------------------------------------
begin
RINGTRACE_FUSE_DEVICE=$T/no-such-device tm "$RT" mount -f "$T/umnt" >nofuse.out 2>nofuse.err && why "mounted without FUSE"
eq "message lines" "$(wc -l <nofuse.err)" 1
grep -q "^ringtrace mount: $T/no-such-device is missing: " nofuse.err || { why "no message naming the device"; show nofuse.err; }
mountpoint -q "$T/umnt" && why "mounted anyway"
tm "$RT" mount -f "$T/no-dir" >nodir.out 2>nodir.err && why "mounted on a missing directory"
grep -q "^ringtrace mount: cannot mount on '$T/no-dir': No such file or directory$" nodir.err || show nodir.err
finish "without FUSE, or without a directory: one line naming what is missing"

# ---- mount ----------------------------------------------------------------
begin
start srv "$BIN/rtmsrv"
SRV=$PID
timeout -k 5 $LIM "$RT" mount -f "$MNT" >mnt.out 2>mnt.err &
MNTPID=$!
wait_for mountpoint -q "$MNT" || { why "not mounted"; show mnt.err; }
wait_for test -d "$MNT/$SRV" || why "no directory $SRV"
ls "$MNT" >ls.out 2>&1
grep -qx "$SRV" ls.out || { why "ls does not show $SRV"; show ls.out; }
grep -qx "by-name" ls.out || why "ls does not show by-name"
eq "by-name link" "$(readlink "$MNT/by-name/rtmsrv")" "../$SRV"
ls "$MNT/by-name/rtmsrv/" >lsn.out 2>&1
grep -qx "trace_pipe" lsn.out || { why "by-name/rtmsrv/ is not the process directory"; show lsn.out; }
ls "$MNT/$SRV" >lsp.out
for f in tracing_on info set_event buffer_size_kb buffer_mode overflow reset trace trace_pipe \
	snapshot_enabled snapshot snapshot_pipe stack_map stack_map_stat stack_map_bin events per_cpu; do
	grep -qx "$f" lsp.out || why "no $f in $SRV/"
done
ls "$MNT/$SRV/events" >lse.out
eq "providers" "$(sort lse.out | tr '\n' ' ')" "app db enable "
ls "$MNT/$SRV/events/app" >lsa.out
eq "app events" "$(sort lsa.out | tr '\n' ' ')" "enable heartbeat request_begin request_end "
eq "per_cpu/cpu0" "$(ls "$MNT/$SRV/per_cpu/cpu0")" "stats"
finish "mount: one directory per process, by-name link, the tracefs files"

# ---- info, tracing_on, events, set_event -------------------------------------
begin
tm cat "$MNT/$SRV/info" >info.out 2>&1
tm "$RT" list "$SRV" >list.out 2>&1
cmp -s info.out list.out || { why "info differs from ringtrace list:"; show info.out 3; show list.out 3; }
tm dd if="$MNT/$SRV/info" bs=7 status=none >info.dd 2>&1
cmp -s info.dd list.out || { why "dd bs=7 of info differs"; show info.dd 3; }
eq "tracing_on" "$(tm cat "$MNT/$SRV/tracing_on")" 0
tm bash -c "echo 1 > '$MNT/$SRV/tracing_on'" 2>on.err || { why "echo 1 > tracing_on failed"; show on.err; }
eq "tracing_on after echo 1" "$(tm cat "$MNT/$SRV/tracing_on")" 1
tm "$RT" stat "$SRV" | head -n 1 | grep -q "tracing on" || why "ringtrace stat does not say tracing on"
tm bash -c "echo 0 > '$MNT/$SRV/events/db/enable'" 2>en.err || { why "echo 0 > events/db/enable failed"; show en.err; }
tm "$RT" list "$SRV" | grep -q '^db:query .* disabled ' || why "db:query still enabled"
eq "events/db/query/enable" "$(tm cat "$MNT/$SRV/events/db/query/enable")" 0
eq "events/app/enable" "$(tm cat "$MNT/$SRV/events/app/enable")" 1
eq "events/enable (mixed)" "$(tm cat "$MNT/$SRV/events/enable")" X
eq "events/app/heartbeat/id" "$(tm cat "$MNT/$SRV/events/app/heartbeat/id")" \
	"$(tm "$RT" list "$SRV" | sed -n 's/^app:heartbeat  *id \([0-9]*\) .*/\1/p')"
want=$(tm "$RT" list "$SRV" | awk '$4 == "enabled" { print $1 }' | sort)
eq "set_event = the enabled events" "$(tm cat "$MNT/$SRV/set_event" | sort)" "$want"
tm bash -c "echo 'app:heartbeat' > '$MNT/$SRV/set_event'" || why "echo > set_event failed"
eq "set_event after >" "$(tm cat "$MNT/$SRV/set_event")" "app:heartbeat"
tm bash -c "echo 'db:*' >> '$MNT/$SRV/set_event'" || why "echo >> set_event failed"
eq "set_event after >>" "$(tm cat "$MNT/$SRV/set_event" | sort | tr '\n' ' ')" "app:heartbeat db:query "
tm bash -c "echo '!db:query' >> '$MNT/$SRV/set_event'" || why "echo '!db:query' >> set_event failed"
eq "set_event after !" "$(tm cat "$MNT/$SRV/set_event")" "app:heartbeat"
tm "$RT" list "$SRV" | awk '$4 == "enabled" { print $1 }' >en.list
eq "ringtrace list after set_event" "$(cat en.list)" "app:heartbeat"
tm bash -c "echo '*:*' > '$MNT/$SRV/set_event'" || why "echo '*:*' > set_event failed"
eq "events/enable" "$(tm cat "$MNT/$SRV/events/enable")" 1
finish "info = ringtrace list; tracing_on, events/*/enable, set_event (>, >>, !) as ftrace's"

# ---- trace_pipe, trace ---------------------------------------------------------
begin
tm head -n 40 "$MNT/$SRV/trace_pipe" >pipe.out 2>pipe.err
eq "trace_pipe lines" "$(wc -l <pipe.out)" 40
bad=$(grep -Ev "$LINE_RE" pipe.out | head -n 2)
[ -z "$bad" ] || why "trace_pipe line not in show's format: $bad"
# show prints the same lines (its reader's place is free again).
timeout -s INT 3 "$RT" show "$SRV" >show.out 2>show.err
[ -s show.out ] || { why "ringtrace show printed nothing"; show show.err; }
bad=$(grep -Ev "$LINE_RE" show.out | head -n 2)
[ -z "$bad" ] || why "show line not matched: $bad"
# trace: tracing pauses while it is read, and it reads the same twice.
tm cat "$MNT/$SRV/trace" >tr1.out 2>tr1.err || { why "cat trace failed"; show tr1.err; }
eq "tracing_on after trace" "$(tm cat "$MNT/$SRV/tracing_on")" 1
tm bash -c "echo 0 > '$MNT/$SRV/tracing_on'"
# An event a thread reserved before tracing went off commits when the
# thread runs again (a loaded machine may keep it off its CPU a while):
# the buffers are read once the written count stands still.
written() { tm "$RT" stat --json "$SRV" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["written"])'; }
still() { local a b; a=$(written); sleep 0.2; b=$(written); [ -n "$a" ] && [ "$a" = "$b" ]; }
for ((i = 0; i < 20; i++)); do still && break; done
[ "$i" -lt 20 ] || why "events still being written 20 rounds after tracing_on=0"
tm cat "$MNT/$SRV/trace" >tr2.out
tm dd if="$MNT/$SRV/trace" bs=4096 status=none >tr3.out
[ -s tr2.out ] || why "trace is empty"
if ! cmp -s <(untimed tr2.out) <(untimed tr3.out); then
	# What differs, and the counters now. Seen once: two events of two
	# CPUs swapped, their order taken from ns that each read's clock
	# calibration rounded differently (the merge now uses the raw clock).
	why "trace read twice differs (it consumed): $(wc -l <tr2.out) then $(wc -l <tr3.out) lines"
	diff <(untimed tr2.out) <(untimed tr3.out) | head -n 6 >tr.diff
	show tr.diff 6
	why "stat now: $(tm "$RT" stat --json "$SRV" | head -c 400)"
fi
bad=$(grep -Ev "$LINE_RE" tr2.out | head -n 2)
[ -z "$bad" ] || why "trace line not matched: $bad"
inbuf=$(tm "$RT" stat --json "$SRV" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["in_buffer"])')
eq "trace lines = stat's in_buffer" "$(wc -l <tr2.out)" "$inbuf"
# trace_pipe then hands out the same events, consuming them.
tm head -n "$(wc -l <tr2.out)" "$MNT/$SRV/trace_pipe" >tp2.out 2>tp2.err
cmp -s <(untimed tr2.out) <(untimed tp2.out) || { why "trace_pipe after trace differs:"; show tp2.out 2; }
tm bash -c "echo > '$MNT/$SRV/trace'" || why "echo > trace failed"
eq "trace after echo > trace" "$(tm cat "$MNT/$SRV/trace" | wc -l)" 0
finish "trace_pipe consumes in show's format; trace pauses tracing, reads the same twice, = stat's in_buffer and what trace_pipe then takes; echo > trace empties"

# ---- overflow, per_cpu, reset, buffer_size_kb, buffer_mode ----------------------
begin
tm bash -c "echo 1 > '$MNT/$SRV/tracing_on'"
wait_for sh -c "\"$RT\" stat --json $SRV | grep -q '\"written\":[1-9]'" || why "nothing written"
tm bash -c "echo 0 > '$MNT/$SRV/tracing_on'"
tm "$RT" stat --json "$SRV" >stat.json
python3 - "$MNT/$SRV" stat.json >cmpstat.out 2>&1 <<'EOF' || { why "counters differ:"; show cmpstat.out 6; }
import json, sys
d, st = sys.argv[1], json.load(open(sys.argv[2]))
def parse(path):
    return {k: int(v) for k, v in (l.split(": ") for l in open(path).read().splitlines())}
keys = {"in_buffer": "in_buffer", "written": "written", "lost_full": "lost_full",
        "lost_overwrite": "lost_overwrite", "lost_too_big": "lost_too_big",
        "lost_no_rseq": "lost_no_rseq", "bytes": "bytes", "subbuffers_read": "subbuffers_read",
        "events_read": "events_read"}
bad = 0
for c in st["cpus"]:
    got = parse("%s/per_cpu/cpu%d/stats" % (d, c["cpu"]))
    for k in keys:
        if got[k] != c[k]:
            print("cpu%d %s: file %d, stat %d" % (c["cpu"], k, got[k], c[k])); bad = 1
got = parse(d + "/overflow")
for k in keys:
    if got[k] != st["total"][k]:
        print("overflow %s: file %d, stat %d" % (k, got[k], st["total"][k])); bad = 1
sys.exit(bad)
EOF
tm bash -c "echo 1 > '$MNT/$SRV/reset'" || why "echo 1 > reset failed"
eq "in_buffer after reset" "$(sed -n 's/^in_buffer: //p' "$MNT/$SRV/overflow")" 0
tm bash -c "echo 1 > '$MNT/$SRV/tracing_on'"
tm bash -c "echo 1024 > '$MNT/$SRV/buffer_size_kb'" 2>bs.err && why "buffer_size_kb written while tracing is on"
grep -q "Device or resource busy" bs.err || { why "no EBUSY"; show bs.err; }
tm bash -c "echo overwrite > '$MNT/$SRV/buffer_mode'" 2>bm.err && why "buffer_mode written while tracing is on"
grep -q "Device or resource busy" bm.err || { why "no EBUSY"; show bm.err; }
tm bash -c "echo 0 > '$MNT/$SRV/tracing_on'"
tm bash -c "echo 1000 > '$MNT/$SRV/buffer_size_kb'" 2>bs2.err && why "1000 KiB accepted"
grep -q "Invalid argument" bs2.err || { why "no EINVAL"; show bs2.err; }
tm bash -c "echo 1024 > '$MNT/$SRV/buffer_size_kb'" 2>bs3.err || { why "buffer_size_kb refused while off"; show bs3.err; }
tm bash -c "echo overwrite > '$MNT/$SRV/buffer_mode'" 2>bm3.err || { why "buffer_mode refused while off"; show bm3.err; }
tm bash -c "echo sideways > '$MNT/$SRV/buffer_mode'" 2>/dev/null && why "bad mode accepted"
tm bash -c "echo 1 > '$MNT/$SRV/tracing_on'"
eq "buffer_size_kb" "$(tm cat "$MNT/$SRV/buffer_size_kb")" 1024
eq "buffer_mode" "$(tm cat "$MNT/$SRV/buffer_mode")" overwrite
tm "$RT" stat "$SRV" | head -n 1 | grep -q "overwrite mode" || why "ringtrace stat does not say overwrite mode"
finish "overflow and per_cpu/cpuN/stats = stat --json; reset; buffer_size_kb and buffer_mode EBUSY while on, EINVAL on bad values"

# ---- snapshots -------------------------------------------------------------------
begin
eq "snapshot_enabled" "$(tm cat "$MNT/$SRV/snapshot_enabled")" 0
tm bash -c "echo 1 > '$MNT/$SRV/snapshot_enabled'" 2>se.err || { why "echo 1 > snapshot_enabled failed"; show se.err; }
eq "snapshot_enabled after 1" "$(tm cat "$MNT/$SRV/snapshot_enabled")" 1
wait_for sh -c "\"$RT\" stat --json $SRV | grep -q '\"in_buffer\":[1-9]'" || why "nothing in the buffers"
# A reader of the live buffers: the swap is refused.
bg cat1 $CMD cat "$MNT/$SRV/trace_pipe"
CATP=$BG
wait_for sh -c "ls -l /proc/$CATP/fd 2>/dev/null | grep -q trace_pipe" || why "cat trace_pipe did not open it"
tm bash -c "echo 1 > '$MNT/$SRV/snapshot'" 2>sb.err && why "snapshot taken while trace_pipe reads"
grep -q "Device or resource busy" sb.err || { why "no EBUSY"; show sb.err; }
kill "$CATP" 2>/dev/null
wait "$BGJOB" 2>/dev/null
tm bash -c "echo 1 > '$MNT/$SRV/snapshot'" 2>s1.err || { why "echo 1 > snapshot failed"; show s1.err; }
tm cat "$MNT/$SRV/snapshot" >snap1.out
tm cat "$MNT/$SRV/snapshot" >snap2.out
[ -s snap1.out ] || why "the snapshot is empty"
bad=$(grep -Ev "$LINE_RE" snap1.out | head -n 2)
[ -z "$bad" ] || why "snapshot line not matched: $bad"
cmp -s <(untimed snap1.out) <(untimed snap2.out) || why "snapshot read twice differs"
tm cat "$MNT/$SRV/snapshot_pipe" >snapp.out
cmp -s <(untimed snap1.out) <(untimed snapp.out) || why "snapshot_pipe differs from snapshot"
eq "snapshot_pipe again (consumed)" "$(tm cat "$MNT/$SRV/snapshot_pipe" | wc -l)" 0
tm bash -c "echo 1 > '$MNT/$SRV/snapshot'" 2>s2.err || { why "second snapshot failed"; show s2.err; }
[ -s "$MNT/$SRV/snapshot" ] 2>/dev/null
tm cat "$MNT/$SRV/snapshot" | head -n 1 | grep -Eq "$LINE_RE" || why "second snapshot empty"
tm bash -c "echo 0 > '$MNT/$SRV/snapshot'" || why "echo 0 > snapshot failed"
eq "snapshot_enabled after echo 0 > snapshot" "$(tm cat "$MNT/$SRV/snapshot_enabled")" 0
tm cat "$MNT/$SRV/snapshot" "$MNT/$SRV/snapshot_pipe" >snap0.out 2>snap0.err || { why "reading no snapshot failed"; show snap0.err; }
[ -s snap0.out ] && why "no snapshot held, yet snapshot or snapshot_pipe has text"
tm bash -c "echo 3 > '$MNT/$SRV/snapshot'" 2>/dev/null && why "echo 3 > snapshot accepted"
finish "snapshot_enabled, snapshot (EBUSY while trace_pipe reads; reads the same twice), snapshot_pipe consumes"

# ---- stack map ---------------------------------------------------------------------
begin
start stk "$BIN/rtmstk" 1 0 60000
STK=$PID
wait_for test -d "$MNT/$STK" || why "no directory $STK"
tm bash -c "echo 1 > '$MNT/$STK/tracing_on'"
wait_for sh -c "\"$RT\" stackmap $STK --stat 2>/dev/null | grep -q '^entries: [1-9]'" || why "no stack in the map"
tm bash -c "echo 0 > '$MNT/$STK/stack_map'" 2>smr.err && why "stack map reset while tracing is on"
grep -q "Device or resource busy" smr.err || { why "no EBUSY"; show smr.err; }
tm bash -c "echo 0 > '$MNT/$STK/tracing_on'"
tm cat "$MNT/$STK/stack_map" >sm.out
tm "$RT" stackmap "$STK" >sm.cmd 2>&1
[ -s sm.cmd ] && cmp -s sm.out sm.cmd || { why "stack_map differs from stackmap PID"; show sm.out 3; show sm.cmd 3; }
tm cat "$MNT/$STK/stack_map_stat" >sms.out
tm "$RT" stackmap "$STK" --stat >sms.cmd 2>&1
cmp -s sms.out sms.cmd || { why "stack_map_stat differs from --stat"; show sms.out 3; show sms.cmd 3; }
tm dd if="$MNT/$STK/stack_map_bin" bs=1000 status=none >smb.out
tm "$RT" stackmap "$STK" --bin smb.cmd >/dev/null 2>&1
[ -s smb.cmd ] && cmp -s smb.out smb.cmd || why "stack_map_bin differs from --bin"
tm bash -c "echo nonsense > '$MNT/$STK/stack_map'" 2>/dev/null && why "echo nonsense > stack_map accepted"
tm bash -c "echo reset > '$MNT/$STK/stack_map'" 2>smr2.err || { why "reset refused while off"; show smr2.err; }
tm "$RT" stackmap "$STK" --stat | grep -q '^entries: 0 /' || why "map not empty after reset"
finish "stack_map, stack_map_stat, stack_map_bin = stackmap PID, --stat, --bin; reset EBUSY while on"

# ---- another user --------------------------------------------------------------------
begin
as_user cat "$MNT/$SRV/tracing_on" >u1.out 2>u1.err && why "another user read root's process"
grep -q "Permission denied" u1.err || { why "no EACCES"; show u1.err; }
as_user bash -c "echo 1 > '$MNT/$SRV/tracing_on'" 2>u2.err && why "another user wrote root's process"
# Their own program: theirs to drive through root's mount.
start usrv setpriv --reuid="$U" --regid="$U" --clear-groups -- "$BIN/rtmsrv"
USRV=$PID
wait_for test -d "$MNT/$USRV" || why "no directory for $U's process"
eq "owner of $U's directory" "$(stat -c %U "$MNT/$USRV")" "$U"
as_user bash -c "echo 1 > '$MNT/$USRV/tracing_on'" 2>u3.err || { why "$U cannot switch its own process on"; show u3.err; }
eq "$U's tracing_on" "$(as_user cat "$MNT/$USRV/tracing_on")" 1
finish "another user: root's processes refused (EACCES), its own driven through root's mount"

# Their own mount shows their processes only (libfuse opens /dev/fuse as
# the user before it turns to fusermount3: a device only root may open,
# as in some containers, is a one-line refusal instead).
begin
chown "$U" "$UMNT"
if ! as_user test -r /dev/fuse -a -w /dev/fuse; then
	as_user "$RT" mount -f "$UMNT" >umnt.out 2>umnt.err && why "mounted with /dev/fuse closed to $U"
	eq "message lines" "$(wc -l <umnt.err)" 1
	grep -q "^ringtrace mount: cannot open /dev/fuse: Permission denied" umnt.err || show umnt.err
	finish "another user's mount: /dev/fuse closed to them, one line says so"
else
timeout -k 5 $LIM setpriv --reuid="$U" --regid="$U" --clear-groups -- "$RT" mount -f "$UMNT" >umnt.out 2>umnt.err &
UMNTPID=$!
wait_for mountpoint -q "$UMNT" || { why "$U could not mount"; show umnt.err; }
wait_for as_user test -d "$UMNT/$USRV" || why "$U's mount does not show its process"
as_user ls "$UMNT" >uls.out 2>&1
grep -qx "$SRV" uls.out && why "$U's mount shows root's process"
eq "$U's mount through its tracing_on" "$(as_user cat "$UMNT/$USRV/tracing_on")" 1
as_user fusermount3 -u "$UMNT" 2>uu.err || { why "$U cannot unmount"; show uu.err; }
wait "$UMNTPID" || why "$U's mount did not exit cleanly"
finish "another user's own mount shows only its processes"
fi

# ---- processes come and go; ESRCH ------------------------------------------------------
begin
start srv2 "$BIN/rtmsrv"
SRV2=$PID
wait_for test -d "$MNT/$SRV2" || why "a process started after the mount does not appear"
[ -L "$MNT/by-name/rtmsrv" ] && why "by-name/rtmsrv shown while two processes have that name"
exec 3>"$MNT/$SRV2/tracing_on"
kill -TERM "$SRV2"
wait_for sh -c "! kill -0 $SRV2 2>/dev/null" || why "$SRV2 did not exit"
echo 1 >&3 2>esrch.err && why "write to an exited process accepted"
exec 3>&-
grep -q "No such process" esrch.err || { why "no ESRCH"; show esrch.err; }
wait_for sh -c "! ls '$MNT' | grep -qx '$SRV2'" || why "the exited process's directory stays"
[ -e "$MNT/$SRV2/tracing_on" ] && why "$SRV2/tracing_on still there"
finish "processes appear and disappear live; a file of an exited process answers ESRCH"

# ---- daemon; unmount with a reader blocked in trace_pipe --------------------------------
begin
tm "$RT" mount "$DMNT" >dm.out 2>dm.err || { why "daemon mount failed"; show dm.err; }
mountpoint -q "$DMNT" || why "daemon: not mounted"
DPID=$(pgrep -f "ringtrace mount $DMNT\$" | head -n 1)
[ -n "$DPID" ] || why "no daemon process"
tm cat "$DMNT/$SRV/tracing_on" >/dev/null || why "daemon mount unreadable"
fusermount3 -u "$DMNT" 2>du.err || { why "fusermount3 -u failed"; show du.err; }
[ -n "$DPID" ] && { wait_for sh -c "! kill -0 $DPID 2>/dev/null" || why "the daemon did not exit"; }
# A signal stops the server too, a reader blocked in trace_pipe or not.
tm bash -c "echo 0 > '$MNT/$SRV/events/enable'; echo 1 > '$MNT/$SRV/tracing_on'"
bg dmf $CMD "$RT" mount -f "$DMNT"
DPID=$BG
DJOB=$BGJOB
wait_for mountpoint -q "$DMNT" || { why "foreground mount failed"; show dmf.err; }
bg blk0 $CMD cat "$DMNT/$SRV/trace_pipe"
wait_for sh -c "ls -l /proc/$BG/fd 2>/dev/null | grep -q trace_pipe" || why "cat trace_pipe did not open it"
kill -TERM "$DPID"
# The reader's read ends: with the end of the file once the server has
# it, or ECONNABORTED if the signal came before it reached a worker.
wait "$BGJOB"
[ $? -ge 124 ] && why "blocked cat was not ended by SIGTERM to the server"
wait "$DJOB"
eq "server's status after SIGTERM" "$?" 0
mountpoint -q "$DMNT" && why "still mounted after SIGTERM"
# Nothing arrives: every event off, tracing on.
tm bash -c "echo 0 > '$MNT/$SRV/events/enable'; echo 1 > '$MNT/$SRV/tracing_on'"
bg blk 60 cat "$MNT/$SRV/trace_pipe"
CATP=$BG
wait_for sh -c "ls -l /proc/$CATP/fd 2>/dev/null | grep -q trace_pipe" || why "cat trace_pipe did not open it"
kill -0 "$CATP" 2>/dev/null || why "cat trace_pipe did not block"
umount "$MNT" 2>um.err && why "umount succeeded with a reader (the kernel refuses)"
umount -l "$MNT" 2>um2.err || { why "umount -l failed"; show um2.err; }
wait "$BGJOB"
eq "blocked cat's status after the unmount" "$?" 0
wait "$MNTPID"
st=$?
eq "mount's status" "$st" 0
[ "$st" = 0 ] || show mnt.err
mountpoint -q "$MNT" && why "still mounted"
finish "daemon stopped by fusermount3 -u, a server by SIGTERM; a lazy unmount ends a blocked trace_pipe read and the server"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
