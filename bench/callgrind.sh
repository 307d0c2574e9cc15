#!/bin/bash
# callgrind.sh - instructions per tracepoint, counted by callgrind: figures
# that do not drift with the machine's load, for comparing one change of the
# hot path with the next. Prints `result cg_* VALUE` lines; asserts nothing.
#
#   bench/callgrind.sh BUILD_DIR
#
# Method: each loop of bench_tp runs twice under callgrind, with N1 and N2
# iterations; (Ir(N2) - Ir(N1)) / (N2 - N1) is the instructions per
# iteration, start-up and exit cancelling out. The empty loop's figure is
# subtracted to give instructions per tracepoint.
#
# Caveat printed with the figures: valgrind does not implement rseq, so under
# it glibc registers no rseq area and libringtrace takes its atomic (cmpxchg)
# fallback; the enabled counts are those of the fallback path, not of the
# rseq fast path that the timed figures of bench/run.sh measure. The disabled
# count is exactly the one the program runs natively.
set -u

BUILD=${1:?usage: callgrind.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N1=${CG_N1:-100000}
N2=${CG_N2:-300000}

note() { echo "callgrind: $*" >&2; }

"$ROOT/scripts/deps.sh" valgrind || { note "valgrind missing: no instruction counts"; exit 1; }
mkdir -p "$BUILD/bench" || exit 1
BUILD=$(cd "$BUILD" && pwd)
RT=$BUILD/bin/ringtrace
TP=$BUILD/bench/bench_tp
TL=$BUILD/bench/bench_lttng
if [ ! -x "$TP" ] || [ ! -x "$TL" ]; then
	"$ROOT/bench/build.sh" "$BUILD"
fi
TMP=$(mktemp -d "$BUILD/bench/callgrind.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

# ir RECORD(0|1) PROGRAM MODE N: total instructions of one run.
k=0
ir() {
	local rec=$1 prog=$2 mode=$3 n=$4 f
	k=$((k + 1))
	f=$TMP/cg.$k
	local cmd=(valgrind --tool=callgrind --callgrind-out-file="$f"
		   "$prog" "$mode" --iters "$n" --runs 1 --no-warmup)
	if [ "$rec" = 1 ]; then
		"$RT" record -o "$TMP/trace.$k" --mode overwrite -- "${cmd[@]}" \
			>"$TMP/out.$k" 2>"$TMP/err.$k"
	else
		"${cmd[@]}" >"$TMP/out.$k" 2>"$TMP/err.$k"
	fi
	rm -rf "$TMP/trace.$k"
	grep -h '^info ' "$TMP/out.$k" | sort -u >>"$TMP/info"
	if [ -f "$f" ]; then
		grep -E '^(summary|totals):' "$f" | head -1 | awk '{ print $2 }'
	else
		note "$prog $mode under callgrind failed: $(tail -3 "$TMP/err.$k" | tr '\n' ' ')"
	fi
}

# per_iter RECORD PROGRAM MODE: prints the instructions per iteration.
per_iter() {
	local a b
	a=$(ir "$1" "$2" "$3" "$N1")
	b=$(ir "$1" "$2" "$3" "$N2")
	if [ -n "$a" ] && [ -n "$b" ]; then
		awk -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" 'BEGIN { printf "%.2f\n", (b - a) / (n2 - n1) }'
	fi
}

empty=""
if [ -x "$TP" ]; then
	empty=$(per_iter 0 "$TP" empty)
	dis=$(per_iter 0 "$TP" disabled)
	if [ -x "$RT" ]; then
		en=$(per_iter 1 "$TP" enabled)
		st=$(per_iter 1 "$TP" str16)
	else
		note "$RT missing: no enabled counts"
		en="" st=""
	fi
	echo "result cg_empty_loop_instr_per_iter ${empty:-n/a}"
	for pair in "disabled:$dis" "enabled:$en" "str16:$st"; do
		name=${pair%%:*} v=${pair#*:}
		if [ -n "$v" ] && [ -n "$empty" ]; then
			awk -v v="$v" -v e="$empty" -v n="$name" \
			    'BEGIN { printf "result cg_%s_instr %.2f per_iter=%.2f\n", n, v - e, v }'
		else
			echo "result cg_${name}_instr n/a"
		fi
	done
	if [ -s "$TMP/info" ]; then
		sort -u "$TMP/info" | sed 's/^info /info cg_/'
	fi
else
	note "$TP missing: no ringtrace counts"
fi
if [ -x "$TL" ]; then
	# LTTng's disabled tracepoint (no session: nothing to set up).
	le=$(per_iter 0 "$TL" empty)
	ld=$(per_iter 0 "$TL" disabled)
	if [ -n "$le" ] && [ -n "$ld" ]; then
		awk -v v="$ld" -v e="$le" 'BEGIN { printf "result cg_lttng_disabled_instr %.2f per_iter=%.2f\n", v - e, v }'
	fi
fi
echo "info cg_note valgrind has no rseq: the enabled counts are of libringtrace's atomic fallback path"
exit 0
