#!/bin/bash
# snapshot.sh - what a snapshot costs (docs/design.md section 8), with
# 1 MiB and 256 MiB per-CPU buffers (the same for both: nothing is
# copied): the swap proper (publishing the spare, timed in the program),
# the registry attach before it and the grace period after it, the whole
# request's round trip as the controller sees it; and the writers'
# tracepoint latency (p99, p99.9, max) with a snapshot every millisecond
# against none. Figures are printed as `result` lines, never asserted.
#
#   bench/snapshot.sh [BUILD_DIR]        (after `make tests-build`)
#
# The writers are tests/e2e/progs/snapwriter (2 threads, one per CPU, one
# event per microsecond, every call timed); the snapshots are taken by
# tests/tools/snapstress, which reads them straight from shared memory.
# The program's buffers are in overwrite mode, as a flight recorder's.
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
RT=$BUILD/bin/ringtrace
WRITER=$BUILD/tests/e2e/snapwriter
STRESS=$BUILD/tests/tools/snapstress
N=${SNAPBENCH_EVENTS:-400000}
for f in "$RT" "$WRITER" "$STRESS"; do
	[ -x "$f" ] || { echo "bench: $f missing (make tests-build)" >&2; exit 1; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-snapbench.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
echo "info snap_load_before $(cut -d' ' -f1-3 /proc/loadavg)"

# run TAG SIZE SUBBUFFERS SNAPSHOTS(0|1)
run() {
	local tag=$1 size=$2 nsb=$3 snaps=$4
	"$WRITER" 2 "$N" >"$T/$tag.w" 2>&1 &
	local wp=$!
	sleep 0.2
	"$RT" buffer-size $wp "$size" --subbuffers "$nsb" --mode overwrite >/dev/null 2>&1 &&
		{ [ "$snaps" = 0 ] || "$RT" snapshot-enable $wp >/dev/null 2>&1; } &&
		"$RT" on $wp >/dev/null 2>&1 || { echo "bench: cannot set up $tag" >&2; kill $wp; return; }
	if [ "$snaps" = 1 ]; then
		"$STRESS" $wp 2 "$N" 1000 >"$T/$tag.s" 2>&1 || echo "bench: snapstress $tag failed" >&2
	fi
	for _ in $(seq 600); do grep -q '^done' "$T/$tag.w" && break; sleep 0.1; done
	kill $wp 2>/dev/null
	wait $wp 2>/dev/null
	if [ "$snaps" = 1 ]; then
		sed -n "s/^swap request round trip: min \([0-9.]*\) us, median \([0-9.]*\) us, max \([0-9.]*\) us/result snap_roundtrip_$tag \2 min=\1 max=\3 unit=us/p" "$T/$tag.s"
		sed -n "s/^in the program: swap min \([0-9.]*\) us, median \([0-9.]*\) us, max \([0-9.]*\) us; attach median \([0-9.]*\) us; grace period median \([0-9.]*\) us, max \([0-9.]*\) us/result snap_swap_$tag \2 min=\1 max=\3 unit=us\nresult snap_attach_$tag \4 unit=us\nresult snap_grace_$tag \5 max=\6 unit=us/p" "$T/$tag.s"
		# Overwrite mode: a snapshot delayed longer than the buffer
		# lasts loses the oldest events, counted as overwritten (lost).
		sed -n "s/^snapshots \([0-9]*\) .*missing \([0-9]*\) duplicated \([0-9]*\).* lost \([0-9]*\)/info snap_count_$tag \1 missing=\2 duplicated=\3 lost=\4/p" "$T/$tag.s"
	fi
	# The worse of the two writers.
	awk -v tag="$tag" '/^thread/ {
		for (i = 1; i < NF; i++) { if ($i == "p99_ns") p99 = $(i+1); if ($i == "p999_ns") p999 = $(i+1); if ($i == "max_ns") mx = $(i+1) }
		if (p99 > w99) w99 = p99; if (p999 > w999) w999 = p999; if (mx > wmax) wmax = mx }
		END { printf "result snap_tp_p99_%s %d p999=%d max=%d unit=ns\n", tag, w99, w999, wmax }' "$T/$tag.w"
}

run 1m 1M 8 1
run 256m 256M 64 1
run 1m_nosnap 1M 8 0
echo "info snap_load_after $(cut -d' ' -f1-3 /proc/loadavg)"
