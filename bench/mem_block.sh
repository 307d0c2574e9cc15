#!/bin/bash
# mem_block.sh - what losing nothing costs: `ringtrace record --mem`, whose
# writers wait for room when a buffer is full (the default), against
# `--mem --drop`, whose writers drop the event, in the same run, on an
# allocation-bound program and a real one. Figures are printed, never
# asserted.
#
#   bench/mem_block.sh [BUILD_DIR]      (default: build)
#
# Workloads:
#  pairs2  bench/mem_pairs.c with 2 threads, MB_PAIRS malloc/free pairs
#          EACH (default 4000000: 16 M calls), as fast as they can: on 2
#          CPUs the recorder shares them with the program, and in dropping
#          mode it falls behind.
#  cc1     GCC's compiler proper at -O1 on the file bench/mem.sh generates
#          (its gen_big_c, MB_FUNCS functions, default 300), run directly
#          with the command line `gcc -###` prints (bench/mem.sh says why).
# Tools, each on every workload, interleaved round by round:
#  untraced    the reference of the ratios
#  block       ringtrace record --mem (writers wait for room, 1 s at most)
#  drop        ringtrace record --mem --drop
#  heaptrack   heaptrack -o TMP/ht (pairs2 only, and only if installed;
#              MB_HEAPTRACK=0 skips it)
#  block64k, drop64k   (pairs2 only) the same two with --buffer-size 64K:
#              a recorder that cannot keep up, whatever the machine's load
#
# Method: wall time of the whole command, MB_RUNS rounds (default 3) after
# one untimed warm-up; medians with [min-max]. Per traced run, from the
# recorder's summary: events recorded, lost, and for `block` the writers'
# waits (how many, and the time spent waiting in all, summed over
# threads: it can exceed the wall time's growth, since the threads wait
# in parallel). Output: `result mem_block_WORKLOAD_TOOL MEDIAN_S key=value`
# lines, then a table.
set -u
export LC_ALL=C
exec </dev/null

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
RT=$BUILD/bin/ringtrace
export RINGTRACE_MALLOC_LIB=${RINGTRACE_MALLOC_LIB:-$BUILD/lib/libringtrace-malloc.so}
RUNS=${MB_RUNS:-3}
PAIRS=${MB_PAIRS:-4000000}
FUNCS=${MB_FUNCS:-300}
note() { echo "bench/mem_block: $*" >&2; }
[ -x "$RT" ] && [ -f "$RINGTRACE_MALLOC_LIB" ] || { note "$RT or $RINGTRACE_MALLOC_LIB missing (run make)"; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-memblock.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

# ---- workloads ---------------------------------------------------------------------
WLS=()
if gcc -O2 -std=gnu11 -D_GNU_SOURCE -o "$TMP/mem_pairs" "$ROOT/bench/mem_pairs.c" -lpthread; then
	WLS+=(pairs2)
else
	note "cannot build mem_pairs: no pairs figures"
fi
# cc1, with bench/mem.sh's generated file: its generator, not a copy.
CC1=()
if eval "$(sed -n '/^gen_big_c() {$/,/^}$/p' "$ROOT/bench/mem.sh")" && declare -F gen_big_c >/dev/null &&
	gen_big_c "$FUNCS" >"$TMP/big.c" && gcc -O1 -c "$TMP/big.c" -o "$TMP/big.o" 2>/dev/null; then
	line=$(gcc -### -O1 -c "$TMP/big.c" -o "$TMP/big.o" 2>&1 | grep -m1 '/cc1" \|/cc1 ')
	if [ -n "$line" ]; then
		eval "CC1=($line)"
		for i in "${!CC1[@]}"; do
			[ "${CC1[$i]}" = -o ] && CC1[i+1]=$TMP/big.s
		done
		WLS+=(cc1)
	else
		note "no cc1 in the output of gcc -###: no cc1 figures"
	fi
else
	note "no generated C file (bench/mem.sh's gen_big_c): no cc1 figures"
fi
wl_cmd() {
	case $1 in
	pairs2) WCMD=("$TMP/mem_pairs" 2 "$PAIRS") ;;
	cc1) WCMD=("${CC1[@]}") ;;
	esac
}
tools_of() {
	case $1 in
	pairs2) echo "untraced block drop block64k drop64k$([ "${MB_HEAPTRACK:-1}" != 0 ] && command -v heaptrack >/dev/null && echo ' heaptrack')" ;;
	cc1) echo "untraced block drop" ;;
	esac
}

# run WORKLOAD TOOL: one timed run; appends "WALL_S EVENTS LOST WAITS WAIT_MS"
# to TMP/WORKLOAD.TOOL.
run() {
	local w=$1 t=$2 t0 t1 ev=- lost=- waits=- wms=-
	wl_cmd "$w"
	rm -rf "$TMP/tr" "$TMP"/ht.*
	t0=$(date +%s%N)
	case $t in
	untraced) "${WCMD[@]}" >/dev/null 2>"$TMP/err" ;;
	block) "$RT" record --mem -q -o "$TMP/tr" -- "${WCMD[@]}" >/dev/null 2>"$TMP/err" ;;
	drop) "$RT" record --mem --drop -q -o "$TMP/tr" -- "${WCMD[@]}" >/dev/null 2>"$TMP/err" ;;
	block64k) "$RT" record --mem --buffer-size 64K -q -o "$TMP/tr" -- "${WCMD[@]}" >/dev/null 2>"$TMP/err" ;;
	drop64k) "$RT" record --mem --drop --buffer-size 64K -q -o "$TMP/tr" -- "${WCMD[@]}" >/dev/null 2>"$TMP/err" ;;
	heaptrack) heaptrack -o "$TMP/ht" "${WCMD[@]}" >/dev/null 2>"$TMP/err" ;;
	esac
	local rc=$?
	t1=$(date +%s%N)
	[ $rc = 0 ] || note "$w $t: exit status $rc ($(tail -1 "$TMP/err"))"
	if [ "$t" != untraced ] && [ "$t" != heaptrack ]; then
		read -r ev lost < <(sed -n 's/.* \([0-9]*\) events recorded, \([0-9]*\) lost .*/\1 \2/p' "$TMP/err")
		read -r waits wms < <(sed -n 's/.*writers waited for room \([0-9]*\) times, \([0-9.]*\) ms in all.*/\1 \2/p' "$TMP/err")
		: "${waits:=0}" "${wms:=0}"
	fi
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') ${ev:--} ${lost:--} ${waits:--} ${wms:--}" >>"$TMP/$w.$t"
}

echo "info mem_block_cpu $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
echo "info mem_block_load $(cut -d' ' -f1-3 /proc/loadavg) (load average before)"
for w in "${WLS[@]}"; do
	for t in $(tools_of "$w"); do run "$w" "$t"; done # warm-up
	for t in $(tools_of "$w"); do : >"$TMP/$w.$t"; done
done
for ((r = 0; r < RUNS; r++)); do
	for w in "${WLS[@]}"; do
		for t in $(tools_of "$w"); do run "$w" "$t"; done
	done
done

# median FILE COLUMN
median() { awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
for w in "${WLS[@]}"; do
	base=$(median "$TMP/$w.untraced" 1)
	for t in $(tools_of "$w"); do
		f=$TMP/$w.$t
		m=$(median "$f" 1)
		echo "result mem_block_${w}_$t $m min=$(sort -g "$f" | head -1 | cut -d' ' -f1) max=$(sort -g "$f" | tail -1 | cut -d' ' -f1)" \
			"ratio=$(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.2f", a / b }')" \
			"events=$(median "$f" 2) lost=$(median "$f" 3) lost_max=$(awk '{ print $3 }' "$f" | sort -g | tail -1)" \
			"waits=$(median "$f" 4) wait_ms=$(median "$f" 5)"
	done
done | tee "$TMP/results"
echo "info mem_block_load_after $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "Losing nothing (bench/mem_block.sh): median of $RUNS rounds; pairs2 = 2 threads x $PAIRS malloc/free pairs, cc1 -O1 on $FUNCS generated functions"
printf '  %-8s %-10s %8s %-17s %7s %10s %10s %10s %8s %10s\n' workload tool "wall s" "[min-max]" "x untr." events lost "lost max" waits "wait ms"
awk '{
	split($2, n, "_"); w = n[3]; t = n[4]
	for (i = 4; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	printf "  %-8s %-10s %8s %-17s %7s %10s %10s %10s %8s %10s\n", w, t, $3, "[" v["min"] "-" v["max"] "]", v["ratio"] "x", v["events"], v["lost"], v["lost_max"], v["waits"], v["wait_ms"]
}' "$TMP/results"
echo "  (events, lost, waits, wait ms: medians of each column on its own, lost max the worst run;"
echo "   wait ms sums every thread's waits)"
