#!/bin/bash
# live_latency.sh - what live control costs and how fast it acts:
#
#   (a) enable latency: how soon after `ringtrace enable PID EVENT` returns
#       the event is in the program's buffers (median and worst of
#       LIVE_TRIALS trials);
#   (b) the cost of a disabled tracepoint in a program whose tracing is off
#       and whose control thread runs (the normal case since live control),
#       next to the same program with RINGTRACE_CONTROL=0.
#
#   bench/live_latency.sh [BUILD_DIR]      (default: build)
#
# Environment: LIVE_TRIALS (default 100), LIVE_PERIOD_NS (the traced
# program's tick period, default 5000), LIVE_CPU (the CPU the traced
# program spins on, default 1), BENCH_ITERS (loop length of (b), default
# 10000000), LIVE_ROUNDS (alternating runs of (b) per variant, default 3).
#
# (a), method. bench/live_latency.c is built twice: live_latency_prog, a
# program linked with libringtrace.so whose main thread, pinned to
# LIVE_CPU, fires lat:tick { seq, ns } every LIVE_PERIOD_NS (ns is its
# CLOCK_MONOTONIC reading just before the tracepoint); and live_latency,
# linked with libringtrace-core.a, which maps the program's control block
# and buffers as ctl_client.c does (looking only, never their reader). The
# program gets 16 MiB buffers, lat:tick disabled, tracing on. Each trial:
# `ringtrace disable`, wait until no write position moves for 2 ms, note
# the positions; t_cmd; fork+exec `ringtrace enable PID lat:tick`; t_ret
# right after waitpid; then walk the records written after the noted
# positions, polling without sleeping, to the first tick. The event's time
# is its own record timestamp (TSC, converted to CLOCK_MONOTONIC with a
# calibration taken over the whole run, the way the recorder calibrates),
# so every figure is a difference of CLOCK_MONOTONIC times and no polling
# interval enters it. This is more precise than polling `ringtrace stat`
# (each poll is an exec of a few hundred microseconds). The headline
# figure, live_enable_latency, is max(0, event - t_ret): the program sets
# the event's flag before it answers, so the first tick usually precedes
# the return (0); it is positive only when the program's thread had not run
# (or not reached its next tick) by the time enable returned. The signed
# value, the exec-to-event time and the command's own duration are printed
# too (info lines). The resolution is LIVE_PERIOD_NS.
#
# (b), method. bench_tp (bench/build.sh) runs the interleaved empty and
# disabled loops of bench/harness.h, as bench/run.sh measures its disabled
# figure, pinned to CPU 0, tracing off; LIVE_ROUNDS runs with the control
# thread (checked: a thread named ringtrace-ctl exists) alternate with
# LIVE_ROUNDS runs with RINGTRACE_CONTROL=0 (checked: none). Figure: the
# median over the runs of each run's median.
#
# Prints `result NAME VALUE` lines (live_enable_latency_median_us,
# live_enable_latency_worst_us, live_disabled_ns and more) and readable
# lines; nothing is asserted: exit 0 whenever it ran, 1 if it could not
# build or start what it needs. The traced program spins one CPU for the
# length of (a) (a few seconds). The machine's load is printed: figures
# taken on a busy machine (other builds, tests) have long tails.
set -u
export LC_ALL=C
exec </dev/null

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
TRIALS=${LIVE_TRIALS:-100}
PERIOD=${LIVE_PERIOD_NS:-5000}
LCPU=${LIVE_CPU:-1}
ITERS=${BENCH_ITERS:-10000000}
ROUNDS=${LIVE_ROUNDS:-3}
RT=$BUILD/bin/ringtrace
OUT=$BUILD/bench
PROG=$OUT/live_latency_prog
CTL=$OUT/live_latency
TP=$OUT/bench_tp

note() { echo "live_latency: $*" >&2; }

[ -x "$RT" ] && [ -f "$BUILD/lib/libringtrace.so" ] && [ -f "$BUILD/lib/libringtrace-core.a" ] || {
	note "$BUILD has no ringtrace build (make O=$BUILD tests-build)"
	exit 1
}
mkdir -p "$OUT" || exit 1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/live-latency.XXXXXX") || exit 1
# Background jobs still running are `timeout` processes: TERM stops their
# program too.
cleanup() {
	local p
	for p in $(jobs -p); do
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- build ----------------------------------------------------------------------
CFLAGS=(-O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes)
"${CC:-gcc}" "${CFLAGS[@]}" -I"$ROOT/include" -I"$ROOT/src" -DLIVE_LATENCY_PROG -o "$PROG" \
	"$ROOT/bench/live_latency.c" -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lringtrace -lpthread ||
	{ note "cannot build $PROG"; exit 1; }
"${CC:-gcc}" "${CFLAGS[@]}" -I"$ROOT/include" -I"$ROOT/src" -o "$CTL" "$ROOT/bench/live_latency.c" \
	"$BUILD/lib/libringtrace-core.a" -lpthread || { note "cannot build $CTL"; exit 1; }
# bench_tp as bench/run.sh builds it (bench_lttng may fail: not needed here).
rm -f "$TP"
"$ROOT/bench/build.sh" "$BUILD" >"$TMP/build.log" 2>&1
[ -x "$TP" ] || { cat "$TMP/build.log" >&2; note "cannot build $TP"; exit 1; }

. "$ROOT/bench/machine.sh"

echo "info host $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "info clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
echo "info load_before $(busy_pct)% of all CPUs busy during 1 s; loadavg $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- (a) enable latency -------------------------------------------------------------
echo "== (a) ringtrace enable -> first event in the buffer ($TRIALS trials, tick every $PERIOD ns on CPU $LCPU)"
have_a=0
timeout -k 5 600 "$PROG" "$PERIOD" 540 "$LCPU" >"$TMP/prog.out" 2>"$TMP/prog.err" &
PPID_A=$!
for _ in $(seq 200); do
	grep -q ready "$TMP/prog.out" && [ -e "/dev/shm/ringtrace.ctl.$(awk '/ready/ { print $3 }' "$TMP/prog.out")" ] && break
	sleep 0.05
done
P=$(awk '/ready/ { print $3 }' "$TMP/prog.out")
if [ -z "$P" ]; then
	note "the traced program did not start: $(cat "$TMP/prog.err")"
elif ! timeout 30 "$RT" buffer-size "$P" 16M >/dev/null ||
	! timeout 30 "$RT" disable "$P" 'lat:tick' >/dev/null ||
	! timeout 30 "$RT" on "$P" >/dev/null; then
	note "cannot set the traced program up"
else
	timeout -k 5 300 "$CTL" "$P" "$RT" "$TRIALS" >"$TMP/a.out" 2>"$TMP/a.err"
	rc=$?
	timeout 30 "$RT" stat "$P" >"$TMP/stat.out" 2>&1
	timeout 30 "$RT" off "$P" >/dev/null 2>&1
	if [ $rc = 0 ]; then
		have_a=1
		grep '^result ' "$TMP/a.out"
		grep '^info ' "$TMP/a.out"
		awk '$1 == "total" { print "info buffers after the run: written " $3 ", lost-full " $4 }' "$TMP/stat.out"
	else
		note "live_latency exited $rc: $(head -3 "$TMP/a.err")"
	fi
fi
kill -TERM "$PPID_A" 2>/dev/null
wait "$PPID_A" 2>/dev/null
[ -s "$TMP/prog.out" ] && sed -n 's/^live_latency_prog: done, /info traced program: /p' "$TMP/prog.out"

# ---- (b) disabled tracepoint, control thread or not -----------------------------------------
echo "== (b) disabled tracepoint, tracing off: control thread running vs RINGTRACE_CONTROL=0 ($ROUNDS runs each, $ITERS iterations)"
# tp_run LABEL [ENV...]: one bench_tp run of the empty and disabled loops;
# appends its result lines to $TMP/b.out, and whether a ringtrace-ctl
# thread was seen to $TMP/ctl.LABEL.
tp_run() {
	local label=$1 pid seen=no
	shift
	env "$@" timeout -k 5 120 "$TP" empty,disabled --iters "$ITERS" --cpu 0 \
		--label "${label}_empty,${label}_disabled" >"$TMP/tp.out" 2>"$TMP/tp.err" &
	pid=$!
	# timeout's child is bench_tp; look for its control thread while it runs.
	for _ in $(seq 100); do
		local c
		c=$(pgrep -P "$pid" | head -1)
		if [ -n "$c" ]; then
			grep -qx ringtrace-ctl /proc/"$c"/task/*/comm 2>/dev/null && { seen=yes; break; }
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	wait "$pid"
	grep '^result ' "$TMP/tp.out" >>"$TMP/b.out"
	echo "$seen" >>"$TMP/ctl.$label"
	grep -v '^$' "$TMP/tp.err" | sed "s/^/live_latency: bench_tp ($label): /" >&2
}
: >"$TMP/b.out"
for ((r = 0; r < ROUNDS; r++)); do
	tp_run ctl
	tp_run noctl RINGTRACE_CONTROL=0
done
# med LABEL: median over the runs of the figure LABEL.
med() {
	awk -v k="$1" '$2 == k { print $3 }' "$TMP/b.out" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
have_b=0
if [ -s "$TMP/b.out" ]; then
	have_b=1
	d_ctl=$(med ctl_disabled)
	e_ctl=$(med ctl_empty)
	d_no=$(med noctl_disabled)
	e_no=$(med noctl_empty)
	echo "result live_disabled_ns $d_ctl"
	echo "result live_disabled_empty_ns $e_ctl"
	echo "result live_disabled_noctl_ns $d_no"
	echo "result live_disabled_noctl_empty_ns $e_no"
	echo "info control thread seen: with control: $(sort -u "$TMP/ctl.ctl" | tr '\n' ' ')/ RINGTRACE_CONTROL=0: $(sort -u "$TMP/ctl.noctl" | tr '\n' ' ')"
	echo "info runs: $(awk '$2 ~ /_disabled$/ { printf "%s=%s ", $2, $3 }' "$TMP/b.out")"
fi
echo "info load_after $(busy_pct)% of all CPUs busy during 1 s; loadavg $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- summary --------------------------------------------------------------------------------
echo
echo "==== live control ===="
if [ $have_a = 1 ]; then
	awk '
	$1 == "result" { v[$2] = $3 }
	END {
		printf "ringtrace enable -> event in the buffer (%s trials):\n", "'"$TRIALS"'"
		printf "  waited after enable returned    median %8.1f us   worst %9.1f us\n", v["live_enable_latency_median_us"], v["live_enable_latency_worst_us"]
		printf "  event time - enable returned    median %8.1f us   worst %9.1f us   (< 0: already there)\n", v["live_enable_event_minus_return_median_us"], v["live_enable_event_minus_return_worst_us"]
		printf "  exec of enable -> event         median %8.1f us   worst %9.1f us\n", v["live_enable_cmd_to_event_median_us"], v["live_enable_cmd_to_event_worst_us"]
		printf "  ringtrace enable, exec to exit  median %8.1f us   worst %9.1f us\n", v["live_enable_cmd_duration_median_us"], v["live_enable_cmd_duration_worst_us"]
	}' "$TMP/a.out"
else
	echo "ringtrace enable latency: n/a (see the messages above)"
fi
if [ $have_b = 1 ]; then
	awk -v d="$d_ctl" -v e="$e_ctl" -v dn="$d_no" -v en="$e_no" 'BEGIN {
		print "disabled tracepoint, tracing off (ns per loop iteration, median of runs):"
		printf "  control thread running          disabled %.3f   empty loop %.3f   difference %+.3f\n", d, e, d - e
		printf "  RINGTRACE_CONTROL=0             disabled %.3f   empty loop %.3f   difference %+.3f\n", dn, en, dn - en
		printf "  control thread - none           %+.3f ns\n", d - dn
	}'
else
	echo "disabled tracepoint: n/a"
fi
exit 0
