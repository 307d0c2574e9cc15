#!/bin/bash
# stacks.sh - stacks at tracepoints, measured on a real workload: how well
# the stack map deduplicates (events, events with a stack id, unique
# stacks, dedup rate, average depth, bytes of stack data as recorded
# against full stacks inline) and what an event costs with a stack. Figures
# are printed, never asserted.
#
#   bench/stacks.sh [BUILD_DIR]            (default: build)
#   bench/stacks.sh --summary RESULTS      the summary of a results file
#
# The workload is bench/stacks_prog.c `work`: a document indexer that
# parses generated JSON documents with a recursive-descent parser, interns
# keys in a growing hash table, walks the trees and merge-sorts the
# numbers, with tracepoints at the places a program would put them (node
# allocated, key interned, table grown, arena chunk, id found, merge,
# document done): many events from call paths of varied depth, recursion
# included. Built here, with the flags of bench/build.sh, against
# BUILD_DIR/lib/libringtrace.so (`make` first).
#
# Method. The program runs pinned to CPU 0, the recorder (when there is
# one) to CPU 1, as in bench/run.sh.
#  1. Workload, STACKS_RUNS rounds, each running it untraced, under
#     `ringtrace record` and under `ringtrace record --stacks` (discard
#     mode: every event kept, losses reported). The program times its
#     processing phase alone (not start-up, not the generation of its
#     input) and counts the tracepoints it reaches; figures: the median
#     over the rounds of that time / events (min and max too), and the
#     time each tracing mode adds per event over the untraced run (medians
#     subtracted).
#  2. The first --stacks trace, read back: `ringtrace dump` (events, events
#     with a stack id, events whose stack was recorded inline because the
#     map was full) and TRACE/stacks/stackmap.bin (unique stacks and their
#     depths, layout in src/stackmap/stack_files.h). Stack data as
#     recorded: the 5-byte suffix (u32 stack_id, u8 depth) of every event,
#     plus 8 bytes per frame of an inline stack, plus stackmap.bin. Full
#     stacks inline: 5 + 8 x depth per event. The stream files of the
#     first traces with and without --stacks give bytes per event on disk.
#  3. One event in a tight loop at a fixed depth of 16 frames (the firing
#     function first, _start last; checked in the trace's map), median of
#     5 runs of STACKS_ITERS iterations: untraced (the disabled
#     tracepoint), recorded without a stack, an event declared with
#     RINGTRACE_EVENT_STACK (those two interleaved run by run in one
#     process), and the plain event under --stacks. Overwrite mode, as the
#     enabled figures of bench/run.sh.
#
# Output: `result stacks_* VALUE key=value...` and `info stacks_* ...`
# lines (kept in BUILD_DIR/bench/stacks.txt), then the summary. bench/run.sh
# keeps the result lines and prints the summary with its LTTng-UST figure
# (LTTng-UST captures no stacks: shown for scale only).
#
# Environment: STACKS_DOCS (documents, default 10000: about 1.5 M events),
# STACKS_RUNS (rounds of 1., default 5), STACKS_ITERS (loop iterations,
# default 1000000), CC (default gcc). Needs python3 for 2. (without it
# those figures are missing).
set -u
export LC_ALL=C
exec </dev/null

ROOT=$(cd "$(dirname "$0")/.." && pwd)

# ---- the summary ----------------------------------------------------------------
# summary FILE: the readable section from the result lines of FILE (this
# script's, and bench/run.sh's for the LTTng-UST and bench_tp figures).
summary() {
	awk '
	function has(k) { return (k in v) && v[k] != "n/a" && v[k] != "" }
	function f(k, fmt) { return has(k) ? sprintf(fmt, v[k]) : "n/a" }
	function opt(k, name) {
		if (match(line[k], name "=[^ ]+"))
			return substr(line[k], RSTART + length(name) + 1, RLENGTH - length(name) - 1)
		return ""
	}
	function spread(k) { return has(k) ? sprintf("  [%s-%s]", opt(k, "min"), opt(k, "max")) : "" }
	function ratio(a, b) { return (has(a) && has(b) && v[b] > 0) ? sprintf("%.1f x", v[a] / v[b]) : "n/a" }
	$1 == "result" { v[$2] = $3; line[$2] = $0 }
	$1 == "info"   { k = $2; $1 = ""; $2 = ""; sub(/^  */, ""); info[k] = $0 }
	END {
		if (!has("stacks_events") && !has("stacks_loop_stack"))
			exit
		printf "Stacks at tracepoints (bench/stacks.sh): %s\n", info["stacks_workload"]
		w = "  %-56s %s\n"
		printf w, "events recorded with --stacks", f("stacks_events", "%d") "  (lost " f("stacks_lost", "%d") \
			", trace of run " opt("stacks_lost", "run") ")"
		printf w, "  with a stack id / full stack inline (map full)", f("stacks_with_id", "%d") " / " f("stacks_inline", "%d")
		printf w, "unique stacks (map entries)", f("stacks_unique", "%d")
		printf w, "dedup rate, 1 - unique / events with an id",
			has("stacks_dedup_rate") ? sprintf("%.4f%%", 100 * v["stacks_dedup_rate"]) : "n/a"
		printf w, "average depth per event (per unique stack; max)",
			f("stacks_avg_depth", "%.2f") " (" f("stacks_avg_depth_unique", "%.2f") "; " f("stacks_max_depth", "%d") ")"
		printf w, "stack bytes as recorded: 5 B/event + inline + map file",
			f("stacks_bytes_ids", "%d") "  (map file stackmap.bin " f("stacks_bin_bytes", "%d") ")"
		printf w, "stack bytes with full stacks inline: 5 + 8 x depth",
			f("stacks_bytes_full", "%d")
		printf w, "full / as recorded", f("stacks_saving", "%.1f x") \
			(has("stacks_saving") ? sprintf("  (%.1f%% saved)", 100 * (1 - 1 / v["stacks_saving"])) : "")
		printf w, "stream bytes per event, without / with --stacks",
			f("stacks_stream_bpe_nostack", "%.2f") " / " f("stacks_stream_bpe_stacks", "%.2f")
		print "  ns per event, median [min-max]"
		printf w, "workload untraced (processing time / events)", f("stacks_work_untraced", "%.1f") spread("stacks_work_untraced")
		printf w, "workload recorded, no stacks", f("stacks_work_nostack", "%.1f") spread("stacks_work_nostack")
		printf w, "workload recorded with --stacks", f("stacks_work_stacks", "%.1f") spread("stacks_work_stacks")
		printf w, "  added per event: no stacks / --stacks",
			f("stacks_work_added_nostack", "%.1f") " / " f("stacks_work_added_stacks", "%.1f") \
			"  (" ratio("stacks_work_added_stacks", "stacks_work_added_nostack") ")"
		d = info["stacks_loop_depth"]
		printf w, "loop, one two-u32 event, " (d == "" ? "16" : d) " frames deep: untraced",
			f("stacks_loop_untraced", "%.2f") spread("stacks_loop_untraced")
		printf w, "  recorded, no stack", f("stacks_loop_nostack", "%.2f") spread("stacks_loop_nostack")
		printf w, "  recorded, event declared with a stack", f("stacks_loop_stack", "%.2f") spread("stacks_loop_stack")
		printf w, "  recorded with --stacks", f("stacks_loop_allstacks", "%.2f") spread("stacks_loop_allstacks")
		printf w, "  with a stack / without (declared; --stacks)",
			ratio("stacks_loop_stack", "stacks_loop_nostack") "; " ratio("stacks_loop_allstacks", "stacks_loop_nostack")
		if (has("lttng_enabled_1t") || has("enabled_1t"))
			printf w, "for scale, no stack, same run: LTTng-UST / ringtrace",
				f("lttng_enabled_1t", "%.2f") " / " f("enabled_1t", "%.2f") \
				" (bench_tp enabled_1t; LTTng-UST has no stack capture)"
		if (has("stacks_loop_stack") && has("lttng_enabled_1t"))
			printf w, "  ringtrace with a stack / LTTng-UST without", ratio("stacks_loop_stack", "lttng_enabled_1t")
		if ("stacks_load_before" in info)
			printf "  load average: before %s; after %s\n", info["stacks_load_before"], info["stacks_load_after"]
	}' "$1"
}

if [ "${1:-}" = --summary ]; then
	[ -r "${2:-}" ] || { echo "usage: bench/stacks.sh --summary RESULTS_FILE" >&2; exit 2; }
	summary "$2"
	exit 0
fi

BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
DOCS=${STACKS_DOCS:-10000}
RUNS=${STACKS_RUNS:-5}
ITERS=${STACKS_ITERS:-1000000}
CC=${CC:-gcc}
RT=$BUILD/bin/ringtrace

note() { echo "bench: stacks: $*" >&2; }

mkdir -p "$BUILD/bench" || exit 1
OUT=$BUILD/bench
PROG=$OUT/stacks_prog
RESF=$OUT/stacks.txt
TMP=$(mktemp -d "$OUT/stacks.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

# ---- build -------------------------------------------------------------------------
[ -x "$RT" ] && [ -f "$BUILD/lib/libringtrace.so" ] || { note "$RT or $BUILD/lib/libringtrace.so is missing (run make)"; exit 1; }
CFLAGS=(-O2 -g -falign-loops=32 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes
	-Wmissing-prototypes)
if ! "$CC" "${CFLAGS[@]}" -I"$ROOT/include" -o "$PROG" "$ROOT/bench/stacks_prog.c" \
		-L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" -lringtrace -lpthread; then
	note "cannot build stacks_prog (compiler output above)"
	exit 1
fi

# The program on CPU 0 (it pins itself), the recorder on CPU 1.
PIN=()
command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ] && PIN=(taskset -c 1)

: >"$RESF"
out() { tee -a "$RESF"; }

{
	echo "info stacks_workload bench/stacks_prog.c work: $DOCS generated JSON documents (parse, intern, walk, merge sort), 1 thread"
	echo "info stacks_compiler $("$CC" --version | head -1)"
} | out

# ---- 1. the workload, untraced / recorded / recorded with --stacks ---------------------
# work_line FILE: the program's "work ..." line, or nothing.
work_line() { grep -m1 '^work ' "$1"; }
# field LINE NAME
field() { sed -n "s/.* $2=\([0-9]*\).*/\1/p" <<<"$1"; }

# keep_trace MODE DIR LOST: 2. reads the first trace of each mode in which
# nothing was lost (on a busy machine the recorder may fall behind), else
# the first one; the others are removed as soon as they are not needed.
declare -A TRACE=() LOSSLESS=()
keep_trace() {
	if [ -n "${LOSSLESS[$1]:-}" ]; then
		rm -rf "$2"
	elif [ "$3" = 0 ]; then
		[ -n "${TRACE[$1]:-}" ] && rm -rf "${TRACE[$1]}"
		TRACE[$1]=$2
		LOSSLESS[$1]=1
	elif [ -z "${TRACE[$1]:-}" ]; then
		TRACE[$1]=$2
	else
		rm -rf "$2"
	fi
}

echo "info stacks_load_before $(cut -d' ' -f1-3 /proc/loadavg) (load average 1, 5, 15 min), $(nproc) CPUs" | out
echo "== workload: $RUNS rounds of untraced, record, record --stacks ($DOCS documents)" >&2
: >"$TMP/times"
: >"$TMP/recorder"
for r in $(seq "$RUNS"); do
	for mode in untraced nostack stacks; do
		case $mode in
		untraced) "$PROG" work "$DOCS" --cpu 0 >"$TMP/out" 2>"$TMP/err" ;;
		nostack) "${PIN[@]}" "$RT" record -o "$TMP/w.$mode.$r" -- "$PROG" work "$DOCS" --cpu 0 \
				>"$TMP/out" 2>"$TMP/err" ;;
		stacks) "${PIN[@]}" "$RT" record --stacks -o "$TMP/w.$mode.$r" -- "$PROG" work "$DOCS" --cpu 0 \
				>"$TMP/out" 2>"$TMP/err" ;;
		esac
		rc=$?
		l=$(work_line "$TMP/out")
		if [ $rc -ne 0 ] || [ -z "$l" ]; then
			note "$mode run $r failed (status $rc): $(tr '\n' ' ' <"$TMP/err")"
			continue
		fi
		echo "$mode $(field "$l" ns) $(field "$l" events)" >>"$TMP/times"
		if [ "$mode" != untraced ]; then
			rec=$(sed -n 's/^ringtrace record: \([0-9]* events recorded, [0-9]* lost\).*/\1/p' "$TMP/err")
			echo "$mode $r $rec" >>"$TMP/recorder"
			keep_trace "$mode" "$TMP/w.$mode.$r" "$(awk '{ print $4 }' <<<"$rec")"
		fi
	done
done
[ -s "$TMP/recorder" ] && sed 's/^\([a-z]*\) \([0-9]*\) /info stacks_recorder_\1_\2 /' "$TMP/recorder" | out

if command -v python3 >/dev/null; then
	python3 - "$TMP/times" <<'EOF' | out
import sys
t = {}
for l in open(sys.argv[1]):
    mode, ns, ev = l.split()
    t.setdefault(mode, []).append((int(ns), int(ev)))
def med(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
per = {}
for mode in ("untraced", "nostack", "stacks"):
    if mode not in t:
        continue
    ev = t[mode][0][1]
    if any(e != ev for _, e in t[mode]):
        print("info stacks_warning the event count differs between %s runs" % mode)
    x = [ns / e for ns, e in t[mode]]
    per[mode] = med(x)
    print("result stacks_work_%s %.2f min=%.2f max=%.2f runs=%d events=%d median_ms=%.1f"
          % (mode, per[mode], min(x), max(x), len(x), ev, med([ns for ns, _ in t[mode]]) / 1e6))
for mode in ("nostack", "stacks"):
    if mode in per and "untraced" in per:
        print("result stacks_work_added_%s %.2f" % (mode, per[mode] - per["untraced"]))
EOF
fi

# ---- 2. the --stacks trace read back ------------------------------------------------------
# stream_bytes DIR: bytes of the stream files of a trace.
stream_bytes() { cat "$1"/stream_* 2>/dev/null | wc -c; }

T1=${TRACE[stacks]:-$TMP/none}
T0=${TRACE[nostack]:-$TMP/none}
if [ -d "$T1/stacks" ] && command -v python3 >/dev/null; then
	echo "== the --stacks trace: dump and stacks/stackmap.bin" >&2
	"$RT" dump "$T1" 2>"$TMP/dumperr" | python3 -c '
import struct, sys
bin_path, stat_path, sb1, sb0, ev0 = sys.argv[1:6]
data = open(bin_path, "rb").read()
# FSMB v2 (src/stackmap/stack_files.h): a 16-byte header, then per stack
# u32 id, u32 nr, u32 ref, u32 reserved and nr u64 addresses, in the
# byte order of the writer (told by the magic).
bo = "<" if struct.unpack_from("<I", data, 0)[0] == 0x464D5342 else ">"
magic, version, n, _ = struct.unpack_from(bo + "4I", data, 0)
if magic != 0x464D5342 or version != 2:
    sys.exit("stacks.sh: %s is not a version-2 stack map" % bin_path)
depth, ref, off = {}, {}, 16
for _ in range(n):
    sid, nr, rc, _ = struct.unpack_from(bo + "4I", data, off)
    depth[sid], ref[sid] = nr, rc
    off += 16 + 8 * nr
if off != len(data):
    sys.exit("stacks.sh: %s: %d bytes, the stacks take %d" % (bin_path, len(data), off))

events = with_id = inline = frames = inline_frames = unknown = 0
for l in sys.stdin:
    events += 1
    i = l.find(" stack_id=")
    if i < 0:
        continue
    sid = int(l[i + 10:l.index(" ", i + 10)])
    if sid == 0xFFFFFFFF:
        inline += 1
        d = l.count("0x", l.index(" stack=[", i))
        inline_frames += d
        frames += d
    else:
        with_id += 1
        if sid in depth:
            frames += depth[sid]
        else:
            unknown += 1
with_stack = with_id + inline
bin_size = len(data)
recorded = 5 * with_stack + 8 * inline_frames + bin_size
full = 5 * with_stack + 8 * frames
print("result stacks_events %d" % events)
print("result stacks_with_id %d" % with_id)
print("result stacks_inline %d" % inline)
print("result stacks_unique %d" % n)
if with_id:
    print("result stacks_dedup_rate %.6f" % (1 - n / with_id))
if with_stack:
    print("result stacks_avg_depth %.3f" % (frames / with_stack))
if n:
    print("result stacks_avg_depth_unique %.3f" % (sum(depth.values()) / n))
    print("result stacks_max_depth %d" % max(depth.values()))
print("result stacks_bin_bytes %d" % bin_size)
print("result stacks_bytes_ids %d inline_frames=%d" % (recorded, inline_frames))
print("result stacks_bytes_full %d frames=%d" % (full, frames))
if recorded:
    print("result stacks_saving %.3f" % (full / recorded))
if events:
    print("result stacks_stream_bpe_stacks %.3f bytes=%s" % (int(sb1) / events, sb1))
    if int(sb0) and ev0.isdigit() and int(ev0):
        print("result stacks_stream_bpe_nostack %.3f bytes=%s events=%s" % (int(sb0) / int(ev0), sb0, ev0))
if unknown:
    print("info stacks_warning %d events name a stack id missing from stackmap.bin" % unknown)
if sum(ref.values()) != with_id:
    print("info stacks_warning the references in stackmap.bin add up to %d, events with an id: %d"
          % (sum(ref.values()), with_id))
for l in open(stat_path):
    k, _, val = l.partition(":")
    print("info stacks_stat_%s %s" % (k.strip(), val.strip()))
' "$T1/stacks/stackmap.bin" "$T1/stacks/stackmap.stat" "$(stream_bytes "$T1")" "$(stream_bytes "$T0")" \
		"$(awk -v r="${T0##*.}" '$1 == "nostack" && $2 == r { print $3 }' "$TMP/recorder")" |
		out
	[ -s "$TMP/dumperr" ] && note "dump: $(head -3 "$TMP/dumperr" | tr '\n' ' ')"
	lost=$(awk -v r="${T1##*.}" '$1 == "stacks" && $2 == r { print $6 }' "$TMP/recorder")
	echo "result stacks_lost ${lost:-n/a} run=${T1##*.}" | out
	fired=$(awk '$1 == "stacks" { print $3; exit }' "$TMP/times")
	rec=$(grep -m1 '^result stacks_events ' "$RESF" | cut -d' ' -f3)
	[ -n "$fired" ] && [ "$fired" != "$rec" ] &&
		echo "info stacks_warning the program fired $fired events, the trace holds ${rec:-none}" | out
else
	note "no --stacks trace or no python3: no dedup figures"
fi
rm -rf "$TMP"/w.*

# ---- 3. one event in a loop, 16 frames deep --------------------------------------------
echo "== loop: one event 16 frames deep, untraced / recorded / with a stack" >&2
loop() {
	local tag=$1
	shift
	"$@" >"$TMP/out" 2>"$TMP/err" || note "$tag: status $?: $(grep -v '^ringtrace record: ' "$TMP/err" | tr '\n' ' ')"
	grep '^result ' "$TMP/out" | out
	sed -n 's/^ringtrace record: \([0-9]* events recorded, [0-9]* lost\).*/info stacks_loop_recorder_'"$tag"' \1/p' \
		"$TMP/err" | out
}
LOPT=(--iters "$ITERS" --depth 16 --cpu 0)
loop untraced "$PROG" loop plain "${LOPT[@]}" --label stacks_loop_untraced
loop record env RINGTRACE_UNWIND_STATS="$TMP/uw.loop" "${PIN[@]}" "$RT" record --mode overwrite -o "$TMP/l1" -- \
	"$PROG" loop plain,stack "${LOPT[@]}" --label stacks_loop_nostack,stacks_loop_stack
# The capture's counters in that run (written by the program at exit).
if [ -s "$TMP/uw.loop" ]; then
	tail -n 1 "$TMP/uw.loop" | awk '{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "info stacks_loop_unwind captures %d, %.2f%% answered by the tables, %.1f%% of frames from the memo, %.1f%% of captures the frames of an earlier walk (the stack id from its note), %.1f%% found so at their first state (%.1f%% of them whole, from their frame: rt_unwind_again)\n",
			v["captures"], v["captures"] ? 100 * v["fast"] / v["captures"] : 0,
			v["frames"] ? 100 * v["memo_frames"] / v["frames"] : 0,
			v["captures"] ? 100 * v["noted"] / v["captures"] : 0,
			v["captures"] ? 100 * v["repeats"] / v["captures"] : 0,
			v["repeats"] ? 100 * v["again"] / v["repeats"] : 0
	}' | out
fi
loop stacks "${PIN[@]}" "$RT" record --mode overwrite --stacks -o "$TMP/l2" -- \
	"$PROG" loop plain "${LOPT[@]}" --label stacks_loop_allstacks
# The depth the loops' events were captured at, from the map of each trace.
for t in l1 l2; do
	[ -r "$TMP/$t/stacks/stackmap.bin" ] && command -v python3 >/dev/null || continue
	python3 -c '
import struct, sys
data = open(sys.argv[1], "rb").read()
bo = "<" if struct.unpack_from("<I", data, 0)[0] == 0x464D5342 else ">"
n, off, d = struct.unpack_from(bo + "I", data, 8)[0], 16, set()
for _ in range(n):
    sid, nr, rc, _ = struct.unpack_from(bo + "4I", data, off)
    if rc > 1000:
        d.add(nr)
    off += 16 + 8 * nr
print(" ".join(str(x) for x in sorted(d)))' "$TMP/$t/stacks/stackmap.bin"
done | sort -u | tr '\n' ' ' | sed 's/ $//' >"$TMP/depth"
echo "info stacks_loop_depth $(cat "$TMP/depth")" | out
[ "$(cat "$TMP/depth")" = 16 ] || note "the loops' stacks are $(cat "$TMP/depth") frames deep, not 16"
rm -rf "$TMP/l1" "$TMP/l2"

echo "info stacks_load_after $(cut -d' ' -f1-3 /proc/loadavg)" | out

echo
summary "$RESF"
