#!/bin/bash
# record_rate.sh - how fast `ringtrace record` gets events to disk, and how
# many bytes an event takes there. Prints `result NAME VALUE ...` lines (read
# by bench/run.sh) and notes on stderr; asserts nothing.
#
#   bench/record_rate.sh BUILD_DIR [SECONDS]
#
# needs BUILD_DIR/bin/ringtrace and BUILD_DIR/bench/bench_tp (run.sh builds
# it). Two runs, both in discard mode with the default buffers:
# 1. rate: one writer thread pinned to CPU 0 fires the two-u32 event as fast
#    as it can for SECONDS (default 2) while the recorder, pinned to CPU 1,
#    consumes and writes to a directory on the build's file system. Figures:
#    events recorded per second of the writer's loop, events lost (from the
#    recorder's summary line), the recorder's wall time from start to its
#    exit (which includes saving what was still buffered), bytes per event,
#    and, when events were lost, in how many bursts (from the packets'
#    events_discarded counts; needs python3).
# 2. paced: the same, with the writer held to BENCH_PACED_RATE events per
#    second (default 20 M, the target): whether the recorder keeps up with a
#    program at that rate, losing nothing (the first run's writer may fire
#    faster than any recorder writes).
# 3. size: exactly 1 M events, counted again with babeltrace2 (when it is
#    installed) and compared with the recorder's count, so that the bytes per
#    event figure rests on a trace that a CTF reader accepts; the same method
#    as for LTTng in bench/lttng/lttng-bench.sh.
# Traces are removed afterwards.
set -u

BUILD=${1:?usage: record_rate.sh BUILD_DIR [SECONDS]}
SECS=${2:-2}
RT=$BUILD/bin/ringtrace
TP=$BUILD/bench/bench_tp
COUNT=1000000

note() { echo "record_rate: $*" >&2; }

for f in "$RT" "$TP"; do
	if [ ! -x "$f" ]; then
		note "$f is missing (build it first: make, then bench/run.sh)"
		exit 1
	fi
done
mkdir -p "$BUILD/bench" || exit 1
TMP=$(mktemp -d "$BUILD/bench/rate.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

# summary FILE WORD: the number before WORD in the recorder's summary line
# "ringtrace record: N events recorded, L lost (...), B bytes written to D".
summary() {
	grep -E '^ringtrace record: [0-9]+ events recorded' "$1" | tail -1 |
		grep -oE "[0-9]+ $2" | head -1 | grep -oE '^[0-9]+'
}

# dir_bytes DIR: bytes in the trace directory (all files), and in its
# stream files alone.
dir_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
stream_bytes() { find "$1" -type f -name 'stream_*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

# ---- 1. rate --------------------------------------------------------------
t0=$(date +%s%N)
taskset -c 1 "$RT" record -o "$TMP/rate" --mode discard -- "$TP" burst "$SECS" --cpu 0 \
	>"$TMP/rate.out" 2>"$TMP/rate.err"
rc=$?
t1=$(date +%s%N)
cat "$TMP/rate.out"
grep -v -e '^ringtrace record: recording ' -e '^ringtrace record: clock ' "$TMP/rate.err" | sed 's/^/record_rate: rate run: /' >&2
rec=$(summary "$TMP/rate.err" 'events recorded')
lost=$(summary "$TMP/rate.err" lost)
written=$(summary "$TMP/rate.err" 'bytes written')
fired=$(awk '$1 == "result" && $2 == "burst_events" { print $3 }' "$TMP/rate.out")
secs=$(awk '$1 == "result" && $2 == "burst_seconds" { print $3 }' "$TMP/rate.out")
if [ $rc -ne 0 ] || [ -z "$rec" ] || [ -z "$secs" ]; then
	note "rate run failed (exit $rc); recorder said: $(tr '\n' ' ' <"$TMP/rate.err")"
	exit 1
fi
db=$(dir_bytes "$TMP/rate")
awk -v r="$rec" -v l="$lost" -v f="$fired" -v s="$secs" -v w="$written" -v d="$db" \
    -v wall="$(( (t1 - t0) / 1000000 ))" 'BEGIN {
	printf "result record_rate %.0f recorded=%d fired=%d lost=%d writer_s=%.3f recorder_wall_ms=%d\n",
	       r / s, r, f, l, s, wall
	printf "result record_lost %d\n", l
	printf "result record_bytes_per_event %.3f dir_bytes=%d reported_bytes_written=%d\n",
	       (r > 0 ? d / r : 0), d, w
}'
# Where the losses happened: the events_discarded field (a running count) of
# each packet of each stream, read from the packet headers (design.md
# section 3: 84 bytes, timestamp_begin at 32, content_size in bits at 48,
# events_discarded at 72), native byte order. A loss in one burst points at
# the recorder stalling, losses spread out at the recorder being too slow.
if [ "${lost:-0}" -gt 0 ] && command -v python3 >/dev/null; then
	python3 - "$TMP/rate" <<'PY' || note "cannot read the packet headers of the rate trace"
import glob, struct, sys
bursts = []
for path in sorted(glob.glob(sys.argv[1] + "/stream_*")):
    data = open(path, "rb").read()
    off, prev, t0 = 0, 0, None
    while off + 84 <= len(data):
        if struct.unpack_from("<I", data, off)[0] != 0xC1FC1FC1:
            break
        tsb, _, content, _, seq, disc = struct.unpack_from("<QQQQQQ", data, off + 32)
        t0 = tsb if t0 is None else t0
        if disc > prev:
            bursts.append((disc - prev, tsb - t0, seq, path.rsplit("/", 1)[1]))
            prev = disc
        if content < 84 * 8 or off + content // 8 > len(data):
            break
        off += content // 8
if bursts:
    big = max(bursts)
    print("result record_loss_bursts %d largest=%d packet=%d stream=%s ticks_from_start=%d"
          % (len(bursts), big[0], big[2], big[3], big[1]))
PY
fi
rm -rf "$TMP/rate"

# ---- 2. paced -----------------------------------------------------------------
PACED=${BENCH_PACED_RATE:-20000000}
taskset -c 1 "$RT" record -o "$TMP/paced" --mode discard -- "$TP" burst "$SECS" --rate "$PACED" --cpu 0 \
	>"$TMP/paced.out" 2>"$TMP/paced.err"
rc=$?
rec=$(summary "$TMP/paced.err" 'events recorded')
lost=$(summary "$TMP/paced.err" lost)
fired=$(awk '$1 == "result" && $2 == "burst_events" { print $3 }' "$TMP/paced.out")
secs=$(awk '$1 == "result" && $2 == "burst_seconds" { print $3 }' "$TMP/paced.out")
if [ $rc -ne 0 ] || [ -z "$rec" ] || [ -z "$secs" ]; then
	note "paced run failed (exit $rc); recorder said: $(tr '\n' ' ' <"$TMP/paced.err")"
else
	awk -v r="$rec" -v l="$lost" -v f="$fired" -v s="$secs" -v p="$PACED" 'BEGIN {
		printf "result record_paced_rate %.0f recorded=%d fired=%d lost=%d writer_s=%.3f asked=%d\n",
		       r / s, r, f, l, s, p
		printf "result record_paced_lost %d\n", l
	}'
fi
rm -rf "$TMP/paced"

# ---- 3. size ----------------------------------------------------------------
taskset -c 1 "$RT" record -o "$TMP/size" --mode discard -- "$TP" count "$COUNT" --cpu 0 \
	>/dev/null 2>"$TMP/size.err"
rc=$?
rec=$(summary "$TMP/size.err" 'events recorded')
lost=$(summary "$TMP/size.err" lost)
if [ $rc -ne 0 ] || [ -z "$rec" ]; then
	note "size run failed (exit $rc); recorder said: $(tr '\n' ' ' <"$TMP/size.err")"
	exit 1
fi
db=$(dir_bytes "$TMP/size")
sb=$(stream_bytes "$TMP/size")
n=""
if command -v babeltrace2 >/dev/null; then
	n=$(babeltrace2 "$TMP/size" 2>"$TMP/bt.err" | grep -c ' bench:two_ints: ')
	if [ -s "$TMP/bt.err" ]; then
		note "babeltrace2 on the 1 M-event trace said: $(head -c 600 "$TMP/bt.err" | tr '\n' ' ')"
	fi
	echo "result ringtrace_babeltrace2_events $n recorder_count=$rec fired=$COUNT lost=$lost"
	if [ "$n" != "$COUNT" ]; then
		note "babeltrace2 read $n bench:two_ints events, $COUNT were fired and $lost reported lost"
	fi
else
	note "babeltrace2 not installed: bytes per event use the recorder's count"
fi
# Divide by the bench events a reader finds (babeltrace2), else (no
# babeltrace2, or it read nothing) by the recorder's count, which may include
# ringtrace:thread records.
src=babeltrace2
if [ -z "$n" ] || [ "$n" = 0 ]; then
	n=$rec
	src=recorder
fi
awk -v n="$n" -v d="$db" -v s="$sb" -v c="$COUNT" -v src="$src" 'BEGIN {
	if (n > 0)
		printf "result ringtrace_bytes_per_event %.2f streams_only=%.2f dir_bytes=%d events=%d counted_by=%s fired=%d\n",
		       d / n, s / n, d, n, src, c
}'
exit 0
