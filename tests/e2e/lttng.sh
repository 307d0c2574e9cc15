#!/bin/bash
# lttng.sh - a real LTTng-UST trace, read by `ringtrace dump` and babeltrace2:
# every field of every event must be the same in both (names, times,
# payloads, and the vtid, procname, vpid, pthread_id and ip contexts that
# LTTng puts in the stream's event.context).
#
#   tests/e2e/lttng.sh [BUILD_DIR]
#
# The program, tests/e2e/lttng/lttng_prog.c with its tracepoint provider
# lttng_tp.h, is compiled here with gcc and -llttng-ust, and recorded with
# lttng-tools: lttng create --output=DIR, enable-event -u 'rtlt:*',
# add-context, start, the program, stop, destroy. The trace is then in
# DIR/ust/uid/UID/64-bit/ and tests/e2e/compare_babeltrace.sh compares it.
#
# Needs lttng-tools and liblttng-ust-dev (mk/lttng.mk adds them to
# DEB_PKGS, so `make test` installs them); without them every check is
# reported as skipped. The session daemon: one that already runs is used;
# otherwise one is started here (--no-kernel) and stopped at the end, with
# the session, and the files it leaves in /dev/shm and /var/run/lttng.
# LTTNG_HOME is the scratch directory, so nothing is written to $HOME.
# Non-interactive; every program runs under `timeout`.
set -u
export CI=true LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup lttng "${1:-build}"
export LTTNG_HOME=$T
CMP=$REPO/tests/e2e/compare_babeltrace.sh
SRC=$REPO/tests/e2e/lttng
LIM=60
SESSION=ringtrace-test-$$
SESSION_UP=0
SD_PID=""                    # the `timeout` running our session daemon
RUNDIR=/var/run/lttng
[ "$(id -u)" = 0 ] || RUNDIR=$LTTNG_HOME/.lttng
RUNDIR_BEFORE=0
[ -e "$RUNDIR" ] && RUNDIR_BEFORE=1
SHM_BEFORE=$(ls -d /dev/shm/lttng-ust-wait-* 2>/dev/null)

lt() { timeout -k 5 $LIM lttng -n "$@"; }

cleanup() {
	local f i
	if [ "$SESSION_UP" = 1 ]; then
		lt destroy "$SESSION" >/dev/null 2>&1
	fi
	if [ -n "$SD_PID" ]; then
		# timeout passes TERM on to the daemon, which stops its consumers.
		kill -TERM "$SD_PID" 2>/dev/null
		for ((i = 0; i < 200; i++)); do
			kill -0 "$SD_PID" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$SD_PID" 2>/dev/null
		wait "$SD_PID" 2>/dev/null
		for f in $(ls -d /dev/shm/lttng-ust-wait-* 2>/dev/null); do
			grep -qxF "$f" <<<"$SHM_BEFORE" || rm -f "$f"
		done
		[ "$RUNDIR_BEFORE" = 0 ] && rm -rf "$RUNDIR"
	fi
	cd / && { [ -n "${E2E_KEEP:-}" ] && echo "kept $T" >&2 || rm -rf "$T"; }
}
trap cleanup EXIT
trap 'exit 130' INT TERM

NAMES=("LTTng-UST program compiled with gcc -llttng-ust"
       "LTTng session recorded (vtid, procname, vpid, pthread_id, ip contexts)"
       "babeltrace2 reads the LTTng trace: 720 events"
       "ringtrace dump reads the LTTng trace: 720 events with their contexts"
       "every field of every event is the same in dump and babeltrace2")

# Skipped only when the LTTng packages are not installed at all.
if ! command -v lttng >/dev/null || ! command -v lttng-sessiond >/dev/null ||
	! echo '#include <lttng/tracepoint.h>' | gcc -E -x c - >/dev/null 2>&1; then
	for n in "${NAMES[@]}"; do
		echo "ok - $n # SKIP lttng-tools or liblttng-ust-dev is not installed"
		PASSED=$((PASSED + 1))
	done
	echo "$PASSED passed, $FAILED failed"
	exit 0
fi

# ---- the program ----------------------------------------------------------

begin
timeout -k 5 $LIM gcc -std=gnu11 -O2 -g -Wall -Wextra -I"$SRC" -o prog "$SRC/lttng_prog.c" \
	-llttng-ust -ldl -lpthread >gcc.out 2>&1 || { why "gcc failed"; show gcc.out; }
finish "${NAMES[0]}"

# ---- the recording ---------------------------------------------------------

# A session daemon: the one that runs, or ours. Ours is ready once the
# client can talk to it; polled, since a loaded machine starts it slowly.
sessiond_ready() {
	local i
	for ((i = 0; i < 400; i++)); do
		lt list >/dev/null 2>&1 && return 0
		[ -n "$SD_PID" ] && ! kill -0 "$SD_PID" 2>/dev/null && break
		sleep 0.05
	done
	return 1
}

begin
if [ -x prog ]; then
	if ! lt list >/dev/null 2>&1; then
		timeout -k 5 600 lttng-sessiond --no-kernel >sessiond.log 2>&1 &
		SD_PID=$!
	fi
	if ! sessiond_ready; then
		why "no LTTng session daemon answers"
		show sessiond.log
	elif lt create "$SESSION" --output="$T/lt" >lt.out 2>&1; then
		SESSION_UP=1
		{ lt enable-event -u -s "$SESSION" 'rtlt:*' &&
		  lt add-context -u -s "$SESSION" -t vtid -t procname -t vpid -t pthread_id -t ip &&
		  lt start "$SESSION"; } >>lt.out 2>&1 || { why "lttng enable-event/add-context/start failed"; show lt.out; }
		# The program waits (up to 30 s) until the daemon has registered it.
		LTTNG_UST_REGISTER_TIMEOUT=30000 timeout -k 5 $LIM ./prog >prog.out 2>&1 ||
			{ why "the program failed"; show prog.out; }
		lt stop "$SESSION" >>lt.out 2>&1 || { why "lttng stop failed"; show lt.out; }
		lt destroy "$SESSION" >>lt.out 2>&1 || { why "lttng destroy failed"; show lt.out; }
		SESSION_UP=0
	else
		why "lttng create failed"
		show lt.out
	fi
fi
TR=$T/lt/ust/uid/$(id -u)/64-bit
[ -f "$TR/metadata" ] || why "no trace in $TR"
finish "${NAMES[1]}"

# ---- reading it ------------------------------------------------------------

begin
timeout -k 5 $LIM babeltrace2 "$TR" >bt.out 2>bt.err
eq "babeltrace2 exit" "$?" 0
eq "events read by babeltrace2" "$(grep -c ' rtlt:' bt.out)" 720
finish "${NAMES[2]}"

begin
timeout -k 5 $LIM "$RT" dump "$TR" >dump.out 2>dump.err
eq "dump exit" "$?" 0
[ -s dump.err ] && show dump.err
eq "events read by dump" "$(grep -c ': rtlt:' dump.out)" 720
eq "events with their vtid and procname" "$(grep -cE ': rtlt:[a-z]+: \{vtid=[0-9]+, procname="rtlt-w[0-2]"' dump.out)" 720
eq "threads (procname and vtid pairs)" \
	"$(grep -oE '\{vtid=[0-9]+, procname="[^"]*"' dump.out | sort -u | sed 's/.*procname=//' | tr '\n' ' ')" \
	'"rtlt-w0" "rtlt-w1" "rtlt-w2" '
eq "first text event" "$(grep -m1 -oE 'rtlt:text: .*' dump.out | sed 's/{[^}]*} //')" \
	'rtlt:text: str="hello" atxt="hell" stxt="hel"'
eq "first state events" "$(grep -oE 'rtlt:state: .* st=[a-z0-9]+' dump.out | sed 's/.* st=//' | head -n 11 | tr '\n' ' ')" \
	"idle busy busy busy busy busy 6 7 8 done 10 "
finish "${NAMES[3]}"

begin
if [ -x "$CMP" ]; then
	RINGTRACE=$RT timeout -k 5 $LIM "$CMP" "$TR" >cmp.out 2>&1 || { why "compare_babeltrace.sh: exit $?"; show cmp.out 12; }
else
	why "missing $CMP"
fi
finish "${NAMES[4]}"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
