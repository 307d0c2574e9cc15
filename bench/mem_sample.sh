#!/bin/bash
# mem_sample.sh - what Poisson byte sampling (RINGTRACE_MEM_SAMPLE, set
# in the environment of `ringtrace record --mem`, docs/mem.md "Sampling")
# costs against the untraced program, the full event log and the full
# counters, in one run, with heaptrack beside them. Figures are printed,
# never asserted.
#
#   bench/mem_sample.sh [BUILD_DIR]      (default: build)
#
# Workloads (the same as bench/mem.sh):
#  cc1     GCC's cc1 at -O1 on the C file bench/mem.sh generates
#          (its gen_big_c, MEM_FUNCS functions, default 300), run directly
#          with the command line `gcc -###` prints
#  pairs2  bench/mem_pairs.c, 2 threads making MEM_PAIRS malloc/free
#          pairs each (default 10000000)
# Tools:
#  untraced     the reference of the ratios
#  heaptrack    heaptrack -o TMP/ht (when installed; MEM_HEAPTRACK=0: not run)
#  preload      libringtrace-malloc.so in LD_PRELOAD without a recorder:
#               the wrappers' own cost (interposition, the checks), the
#               floor of every mode below
#  mem          record --mem (every call, event log)
#  sample       record --mem with RINGTRACE_MEM_SAMPLE=MEM_SAMPLE (default 512K)
#  aggregate    record --mem --aggregate (every call, counters)
#  aggsample    record --mem --aggregate with RINGTRACE_MEM_SAMPLE
# Targets (issue: production heap profiling): --aggregate sampled <= 1.03x
# on cc1 and <= 1.2x on 2-thread pairs; event log sampled <= 1.05x on cc1.
#
# Method: wall time of the whole command, MEM_RUNS rounds (default 3),
# each round running every workload under every tool in turn (the drift
# of a shared machine falls on all alike); medians with min and max. Also
# the CPU time (user + system, /usr/bin/time) of the whole command, the
# recorder's and heaptrack's own processes included: on a machine shared
# with other work it moves less than the wall time. For pairs, the
# program's own ns per call (its timed loop, one thread's calls). One
# untimed warm-up per workload. The ratio of the fastest runs (min x) is
# printed beside the medians': on a machine shared with other work, the
# other work only ever adds time, and with 2 CPUs a two-thread workload's
# median can double. Output: `result mem_sample_WL_TOOL
# MEDIAN_S ratio=R min=A max=B min_ratio=M cpu=C cpu_ratio=R ns_call=N events=E`
# lines, then a table.
set -u
export LC_ALL=C
exec </dev/null

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
RUNS=${MEM_RUNS:-3}
PAIRS=${MEM_PAIRS:-10000000}
FUNCS=${MEM_FUNCS:-300}
SAMPLE=${MEM_SAMPLE:-512K}
OUT=${MEM_OUT:-$BUILD/bench}
RT=$BUILD/bin/ringtrace

note() { echo "bench: mem_sample: $*" >&2; }

for n in "$RUNS" "$PAIRS" "$FUNCS"; do
	case $n in '' | *[!0-9]* | 0) note "MEM_RUNS, MEM_PAIRS and MEM_FUNCS are positive integers"; exit 2 ;; esac
done
[ -x "$RT" ] || { note "$RT is missing (run make)"; exit 2; }
mkdir -p "$OUT" || exit 1
TMP=$(mktemp -d "$OUT/mem_sample.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

# The generated file of bench/mem.sh, by its own function: the same cc1
# input for both scripts.
eval "$(sed -n '/^gen_big_c() {$/,/^}$/p' "$ROOT/bench/mem.sh")"
if ! declare -F gen_big_c >/dev/null; then
	note "no gen_big_c in bench/mem.sh: no cc1 figures"
fi

WLS=()
CC1=()
if declare -F gen_big_c >/dev/null; then
	gen_big_c "$FUNCS" >"$TMP/big.c"
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
fi
PROG=$TMP/mem_pairs
if gcc -O2 -g -std=gnu11 -D_GNU_SOURCE -o "$PROG" "$ROOT/bench/mem_pairs.c" -lpthread; then
	WLS+=(pairs2)
else
	note "cannot build mem_pairs: no pairs figures"
fi

TOOLS=(untraced)
if [ "${MEM_HEAPTRACK:-1}" != 0 ] && command -v heaptrack >/dev/null; then
	TOOLS+=(heaptrack)
fi
TOOLS+=(preload mem sample aggregate aggsample)
MEMLIB=${RINGTRACE_MALLOC_LIB:-$BUILD/lib/libringtrace-malloc.so}

wl_cmd() {
	case $1 in
	cc1) WCMD=("${CC1[@]}") ;;
	pairs2) WCMD=("$PROG" 2 "$PAIRS") ;;
	esac
}

. "$ROOT/bench/machine.sh"
echo "info mem_sample_machine $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
echo "info mem_sample_busy_before $(busy_pct)% busy; top: $(top_procs)"

: >"$TMP/runs"
one() {
	local wl=$1 tool=$2 r=$3 t0 t1 rc ev=- cpu ns
	local TM=(/usr/bin/time -f '%U %S' -o "$TMP/time")
	wl_cmd "$wl"
	t0=$EPOCHREALTIME
	case $tool in
	untraced)  "${TM[@]}" "${WCMD[@]}" ;;
	heaptrack) "${TM[@]}" heaptrack -o "$TMP/ht.$r" "${WCMD[@]}" ;;
	preload)   LD_PRELOAD=$MEMLIB "${TM[@]}" "${WCMD[@]}" ;;
	mem)       "${TM[@]}" "$RT" record --mem -o "$TMP/rt.$r" -- "${WCMD[@]}" ;;
	sample)    RINGTRACE_MEM_SAMPLE=$SAMPLE "${TM[@]}" "$RT" record --mem -o "$TMP/rt.$r" -- "${WCMD[@]}" ;;
	aggregate) "${TM[@]}" "$RT" record --mem --aggregate -o "$TMP/rt.$r" -- "${WCMD[@]}" ;;
	aggsample) RINGTRACE_MEM_SAMPLE=$SAMPLE "${TM[@]}" "$RT" record --mem --aggregate -o "$TMP/rt.$r" -- "${WCMD[@]}" ;;
	esac >"$TMP/out" 2>"$TMP/err"
	rc=$?
	t1=$EPOCHREALTIME
	cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$TMP/time" 2>/dev/null)
	ns=$(sed -n 's/^mem_pairs: .* ns_per_call=\([0-9.]*\).*/\1/p' "$TMP/err" | head -1)
	if [ $rc -ne 0 ]; then
		note "$wl under $tool, round $r: exit status $rc: $(grep -v '^ringtrace record: ' "$TMP/err" | head -3 | tr '\n' ' ')"
		rm -rf "$TMP/ht.$r".* "$TMP/rt.$r"
		return
	fi
	ev=$(sed -n 's/^ringtrace record: \([0-9]*\) events recorded.*/\1/p' "$TMP/err" | tail -1)
	rm -rf "$TMP/ht.$r".* "$TMP/rt.$r"
	awk -v a="$t0" -v b="$t1" -v w="$wl" -v t="$tool" -v r="$r" -v e="${ev:--}" -v c="${cpu:--}" -v n="${ns:--}" \
		'BEGIN { printf "%s %s %s %.3f %s %s %s\n", w, t, r, b - a, e, c, n }' >>"$TMP/runs"
	echo "  $wl $tool round $r: $(tail -1 "$TMP/runs" | cut -d' ' -f4) s, cpu ${cpu:-?} s${ns:+, $ns ns/call}" >&2
}

for wl in "${WLS[@]}"; do
	wl_cmd "$wl"
	"${WCMD[@]}" >/dev/null 2>&1 || note "warm-up of $wl failed"
done
for r in $(seq "$RUNS"); do
	for wl in "${WLS[@]}"; do
		for tool in "${TOOLS[@]}"; do
			one "$wl" "$tool" "$r"
		done
	done
done
echo "info mem_sample_busy_after $(busy_pct)% busy; top: $(top_procs)"

awk -v wls="${WLS[*]}" -v tools="${TOOLS[*]}" -v sample="$SAMPLE" '
function med(s,   a, n, i, j, x) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) {
		x = a[i]
		for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--)
			a[j + 1] = a[j]
		a[j + 1] = x
	}
	lo = a[1]; hi = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	k = $1 SUBSEP $2; wall[k] = wall[k] " " $4; if ($5 != "-") ev[k] = $5
	if ($6 != "-") cpu[k] = cpu[k] " " $6
	if ($7 != "-") ns[k] = ns[k] " " $7
}
END {
	nw = split(wls, W, " "); nt = split(tools, T, " ")
	name["untraced"] = "untraced"; name["heaptrack"] = "heaptrack"; name["preload"] = "preloaded, no recorder"
	name["mem"] = "record --mem"; name["sample"] = "record --mem, sample " sample
	name["aggregate"] = "--mem --aggregate"; name["aggsample"] = "--aggregate, sample " sample
	lim["cc1", "sample"] = 1.05; lim["cc1", "aggsample"] = 1.03; lim["pairs2", "aggsample"] = 1.2
	for (i = 1; i <= nw; i++) {
		u = W[i] SUBSEP "untraced"
		uw = (u in wall) ? med(wall[u]) : 0
		umin = (u in wall) ? lo : 0
		uc = (u in cpu) ? med(cpu[u]) : 0
		for (j = 1; j <= nt; j++) {
			k = W[i] SUBSEP T[j]
			if (!(k in wall)) continue
			w = med(wall[k]); wlo = lo; whi = hi
			r = uw > 0 ? w / uw : 0
			rmin = umin > 0 ? wlo / umin : 0
			c = (k in cpu) ? med(cpu[k]) : 0
			cr = uc > 0 ? c / uc : 0
			n = (k in ns) ? med(ns[k]) : "-"
			printf "result mem_sample_%s_%s %.3f ratio=%.3f min=%.2f max=%.2f min_ratio=%.3f cpu=%.2f cpu_ratio=%.3f ns_call=%s events=%s\n", W[i], T[j], w, r, wlo, whi, rmin, c, cr, n, (k in ev) ? ev[k] : "-"
			t = ((W[i], T[j]) in lim) ? sprintf("<= %.2fx %s", lim[W[i], T[j]], r <= lim[W[i], T[j]] ? "met" : "NOT MET") : ""
			row[++nr] = sprintf("  %-7s %-30s %8.2f  [%.2f-%.2f]  %6.3fx  %6.3fx  %6.2f  %6.3fx  %7s  %-15s %s", W[i], name[T[j]], w, wlo, whi, r, rmin, c, cr, n, t, (k in ev) ? ev[k] : "")
		}
	}
	print ""
	printf "  %-7s %-30s %8s  %-11s  %7s  %7s  %6s  %7s  %7s  %-15s %s\n", "wl", "tool", "wall s", "[min-max]", "x untr.", "min x", "cpu s", "x untr.", "ns/call", "target (wall)", "events"
	for (i = 1; i <= nr; i++) print row[i]
}' "$TMP/runs"
exit 0
