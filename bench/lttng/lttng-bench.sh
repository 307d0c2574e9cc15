#!/bin/bash
# lttng-bench.sh - time the loops of bench/harness.h with LTTng-UST 2.13, the
# peer ringtrace is compared against. Prints `result lttng_* ...` lines (the
# same format as bench_tp) on stdout and notes on stderr; asserts nothing.
#
#   bench/lttng/lttng-bench.sh BENCH_LTTNG_BINARY WORK_DIR [ITERS]
#
# What it sets up, so that the figures compare with ringtrace's:
# - a session daemon: the running one if there is one, otherwise
#   `lttng-sessiond --daemonize --no-kernel` started on CPU 1 (so its consumer
#   daemon shares CPU 1 with nothing measured) and stopped again on exit;
# - one user-space channel per session, per-process buffers (like ringtrace's
#   one region per recorded program), 8 sub-buffers of 256 KiB per CPU
#   (ringtrace's default), no context fields, event rule `bench:*`;
# - "enabled" figures in a snapshot session, whose channel is in overwrite
#   mode and which nobody reads while the program runs (ringtrace's figures
#   come from `ringtrace record --mode overwrite`, which does not read either);
# - one figure in discard mode with the consumer daemon reading, labelled so;
# - bytes per event on disk: 1 M events in discard mode, events counted with
#   babeltrace2, divided into the size of the trace directory.
# Every session it creates and every trace it writes is removed on exit.
set -u

BIN=${1:?usage: lttng-bench.sh BENCH_LTTNG WORK_DIR [ITERS]}
WORK=${2:?usage: lttng-bench.sh BENCH_LTTNG WORK_DIR [ITERS]}
ITERS=${3:-10000000}
SUBBUF=256K
NSUBBUF=8
COUNT_EVENTS=1000000

note() { echo "lttng-bench: $*" >&2; }

# Never let a `lttng` command spawn a session daemon behind our back: the
# one this script starts is the only one it stops.
lt() { lttng --no-sessiond "$@"; }

# alive PID: the process exists and is not a zombie (a daemon whose parent
# is a container's init can stay a zombie for a while after it exits).
alive() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# The pid of a live session daemon of this user, if any.
running_sessiond() {
	local p
	for p in $(pgrep -u "$(id -u)" -x lttng-sessiond); do
		if alive "$p"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

for tool in lttng lttng-sessiond babeltrace2; do
	if ! command -v "$tool" >/dev/null; then
		note "$tool not found: no LTTng figures (install lttng-tools babeltrace2)"
		exit 1
	fi
done

mkdir -p "$WORK" || exit 1
TMP=$(mktemp -d "$WORK/lttng.XXXXXX") || exit 1
SESSION=""
STARTED_PID=""

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [ -n "$SESSION" ]; then
		lt destroy "$SESSION" >/dev/null 2>&1
		SESSION=""
	fi
	if [ -n "$STARTED_PID" ]; then
		kill -TERM "$STARTED_PID" 2>/dev/null
		for _ in $(seq 50); do
			alive "$STARTED_PID" || break
			sleep 0.1
		done
		if alive "$STARTED_PID"; then
			note "session daemon $STARTED_PID still running after 5 s; killing it"
			kill -KILL "$STARTED_PID" 2>/dev/null
		fi
		note "stopped the session daemon it started (pid $STARTED_PID)"
		STARTED_PID=""
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- session daemon -------------------------------------------------------
if [ "$(id -u)" = 0 ]; then
	PIDFILE=/var/run/lttng/lttng-sessiond.pid
else
	PIDFILE=$HOME/.lttng/lttng-sessiond.pid
fi
if pid=$(running_sessiond); then
	note "using the session daemon already running (pid $pid); left running"
else
	# Started with its consumer on CPU 1: the measured threads run on CPU 0
	# (and 1 for the two-thread case, in overwrite mode where nothing reads).
	if ! taskset -c 1 lttng-sessiond --daemonize --no-kernel >/dev/null 2>"$TMP/sessiond.err"; then
		note "cannot start lttng-sessiond: $(cat "$TMP/sessiond.err")"
		exit 1
	fi
	if [ -s "$PIDFILE" ] && alive "$(cat "$PIDFILE")"; then
		STARTED_PID=$(cat "$PIDFILE")
	else
		STARTED_PID=$(running_sessiond)
	fi
	if [ -z "$STARTED_PID" ]; then
		note "lttng-sessiond --daemonize returned but no session daemon is running"
		exit 1
	fi
	note "started lttng-sessiond --daemonize --no-kernel on CPU 1 (pid $STARTED_PID)"
fi

# create_session NAME MODE(snapshot|discard) OUTDIR
create_session() {
	local name=$1 mode=$2 out=$3 snap="" loss=--discard
	if [ "$mode" = snapshot ]; then
		snap=--snapshot
		loss=--overwrite
	fi
	lt create "$name" $snap --output "$out" >"$TMP/lttng.log" 2>&1 &&
	SESSION=$name &&
	lt enable-channel -u --session "$name" --buffers-pid --subbuf-size "$SUBBUF" \
		--num-subbuf "$NSUBBUF" $loss bench >>"$TMP/lttng.log" 2>&1 &&
	lt enable-event -u --session "$name" -c bench 'bench:*' >>"$TMP/lttng.log" 2>&1 &&
	lt start "$name" >>"$TMP/lttng.log" 2>&1 && return 0
	note "cannot set up LTTng session $name: $(tr '\n' ' ' <"$TMP/lttng.log")"
	return 1
}

# stop_session: stop (which flushes) and destroy the current session.
stop_session() {
	lt stop "$SESSION" >/dev/null 2>&1
	lt destroy "$SESSION" >/dev/null 2>&1
	SESSION=""
}

# lost_from_index DIR: events discarded by the tracer, summed over streams:
# the events_discarded field (a running count) of the last packet of each
# stream, read from the CTF index files LTTng writes next to the streams
# (big-endian: u32 magic, u32 major, u32 minor, u32 entry size, then entries
# whose 6th u64 is events_discarded). `lttng stop` does not report losses of
# per-process buffers once the process has exited.
lost_from_index() {
	local f size len hex total=0
	while IFS= read -r f; do
		size=$(stat -c %s "$f")
		[ "$size" -ge 16 ] || continue
		len=$((16#$(od -An -tx1 -j 12 -N 4 "$f" | tr -d ' \n')))
		if [ "$len" -lt 48 ] || [ "$size" -lt $((16 + len)) ]; then
			continue
		fi
		hex=$(od -An -tx1 -j $((size - len + 40)) -N 8 "$f" | tr -d ' \n')
		total=$((total + 16#$hex))
	done < <(find "$1" -name '*.idx')
	echo "$total"
}

# ---- disabled: no session enables the events --------------------------------
"$BIN" empty,disabled --iters "$ITERS" --label lttng_empty,lttng_disabled

# ---- enabled, overwrite (snapshot session, nothing reads) --------------------
if create_session "rtbench-snap-$$" snapshot "$TMP/snap"; then
	echo "info lttng_channel snapshot session, overwrite mode, per-process buffers," \
	     "$NSUBBUF x $SUBBUF per CPU, consumer not reading"
	"$BIN" enabled,rdtsc --iters "$ITERS" --label lttng_enabled_1t,lttng_enabled_1t_rdtsc
	"$BIN" enabled2 --iters "$ITERS" --label lttng_enabled_2t
	"$BIN" str16,rdtsc --iters "$ITERS" --label lttng_str16,lttng_str16_rdtsc
	stop_session
fi

# ---- enabled, discard mode, consumer reading ---------------------------------
if create_session "rtbench-disc-$$" discard "$TMP/disc"; then
	"$BIN" enabled,rdtsc --iters "$ITERS" --label lttng_enabled_1t_discard,lttng_enabled_1t_discard_rdtsc
	stop_session
	echo "result lttng_discard_lost $(lost_from_index "$TMP/disc")"
	rm -rf "$TMP/disc"
fi

# ---- bytes per event on disk ---------------------------------------------------
if create_session "rtbench-size-$$" discard "$TMP/size"; then
	"$BIN" count "$COUNT_EVENTS"
	stop_session
	n=$(babeltrace2 "$TMP/size" 2>/dev/null | grep -c ' bench:two_ints: ')
	total=$(du -sb "$TMP/size" | cut -f1)
	streams=$(find "$TMP/size" -type f ! -name metadata ! -name '*.idx' -printf '%s\n' |
		  awk '{ s += $1 } END { print s + 0 }')
	if [ "${n:-0}" -gt 0 ]; then
		echo "result lttng_events_on_disk $n fired=$COUNT_EVENTS"
		awk -v t="$total" -v s="$streams" -v n="$n" 'BEGIN {
			printf "result lttng_bytes_per_event %.2f streams_only=%.2f dir_bytes=%d\n", t / n, s / n, t }'
	else
		note "babeltrace2 found no bench:two_ints event in the LTTng trace"
	fi
fi
exit 0
