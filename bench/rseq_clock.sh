#!/bin/bash
# rseq_clock.sh - A/B in one run: the enabled two-u32 tracepoint on the
# CLOCK_MONOTONIC clock, through the atomic fallback (what every event took
# before rseq worked with a clock other than the TSC; RINGTRACE_NO_RSEQ=1
# forces it) and through the rseq path that reads the clock before its
# critical section; the rseq path on the TSC as a reference. Each row is a
# median of runs of bench_tp under `ringtrace record --mode overwrite`
# (recorder pinned to CPU 1, the 1-thread loop pinned to CPU 0), each
# interleaved in the same process with an rdtsc loop and a clock_gettime
# loop; the variants alternate, round after round, so that the machine's
# drift falls on all of them alike. Every row names the clock and the path
# the session used (bench_tp's "info ringtrace_session" line).
#
#   bench/rseq_clock.sh [BUILD_DIR]     (after `make`)
#
# Environment: BENCH_ITERS (loop length, default 10000000), BENCH_ROUNDS
# (default 3), BENCH_OLD=BUILD_DIR of an older checkout (built with make and
# bench/build.sh): its bench_tp under its own recorder on the monotonic
# clock, as one more variant ("old-mono"). Figures are reported, never
# asserted.
set -u
exec </dev/null
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ITERS=${BENCH_ITERS:-10000000}
ROUNDS=${BENCH_ROUNDS:-3}
"$ROOT/bench/build.sh" "$BUILD" || exit 1
BUILD=$(cd "$BUILD" && pwd)
RT=$BUILD/bin/ringtrace
TP=$BUILD/bench/bench_tp
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-rseq-clock.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
RES=$TMP/results

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs;" \
	"clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null);" \
	"commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"

OLD=${BENCH_OLD:-}
[ -z "$OLD" ] || [ -x "$OLD/bench/bench_tp" ] || { echo "rseq_clock: no $OLD/bench/bench_tp" >&2; exit 1; }
VARIANTS="mono-atomic mono-rseq tsc-rseq${OLD:+ old-mono}"

# run VARIANT CLOCK NORSEQ MODES: one recording; result lines tagged.
run() {
	local var=$1 clock=$2 norseq=$3 modes=$4 labels rt=$RT tp=$TP
	[ "$var" = old-mono ] && rt=$OLD/bin/ringtrace tp=$OLD/bench/bench_tp
	labels=$(echo "$modes" | tr ',' '\n' | sed "s/^/$var:/" | paste -sd,)
	rm -rf "$TMP/trace"
	RINGTRACE_CLOCK=$clock RINGTRACE_NO_RSEQ=$norseq taskset -c 1 "$rt" record -o "$TMP/trace" \
		--mode overwrite -- "$tp" "$modes" --iters "$ITERS" --label "$labels" >"$TMP/out" 2>"$TMP/err"
	sed -n "s/^info ringtrace_session /session $var /p" "$TMP/out" >>"$RES"
	grep '^result ' "$TMP/out" >>"$RES"
}

for ((i = 0; i < ROUNDS; i++)); do
	for spec in "mono-atomic monotonic 1" "mono-rseq monotonic 0" "tsc-rseq tsc 0" ${OLD:+"old-mono monotonic 0"}; do
		set -- $spec
		run "$1" "$2" "$3" enabled,rdtsc,clock_gettime
		run "$1" "$2" "$3" enabled2
	done
done

# The median over rounds of each figure, then one row per variant.
awk '
$1 == "session" { s[$2] = $0; sub(/^session [^ ]* /, "", s[$2]) }
$1 == "result" { split($2, a, ":"); k = a[1] SUBSEP a[2]; n[k]++; x[k, n[k]] = $3 }
function med(k,   m, i, j, t, y) {
	m = n[k]
	if (!m) return -1
	for (i = 1; i <= m; i++) y[i] = x[k, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (y[j] < y[i]) { t = y[i]; y[i] = y[j]; y[j] = t }
	return m % 2 ? y[(m + 1) / 2] : (y[m / 2] + y[m / 2 + 1]) / 2
}
END {
	printf "%-12s %-72s %9s %9s %8s %9s %9s\n", "variant", "session (clock, path)", "1t ns", "2t ns", "x rdtsc", "x clk_get", "vs atomic"
	nv = split("'"$VARIANTS"'", vs, " ")
	base = med("mono-atomic" SUBSEP "enabled")
	for (i = 1; i <= nv; i++) {
		v = vs[i]
		e = med(v SUBSEP "enabled"); e2 = med(v SUBSEP "enabled2")
		r = med(v SUBSEP "rdtsc"); c = med(v SUBSEP "clock_gettime")
		printf "%-12s %-72s %9.2f %9.2f %8.2f %9.2f %9.2f\n", v, s[v], e, e2, e / r, e / c, e / base
	}
	printf "rdtsc %.2f ns, clock_gettime(CLOCK_MONOTONIC) %.2f ns (medians over every run)\n",
		med("mono-rseq" SUBSEP "rdtsc"), med("mono-rseq" SUBSEP "clock_gettime")
	printf "%d rounds x %s iterations; each figure a median of rounds, each round a median of 5 runs\n", '"$ROUNDS"', '"$ITERS"'
}' "$RES"
