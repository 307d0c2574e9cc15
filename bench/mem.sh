#!/bin/bash
# mem.sh - what the allocation tracer (`ringtrace record --mem`, the
# preloaded libringtrace-malloc.so) costs a real program and an
# allocation-bound one, against heaptrack on the same runs: wall time
# against the untraced run, ns per call, bytes per event on disk. Figures
# are printed, never asserted.
#
#   bench/mem.sh [BUILD_DIR]            (default: build)
#   bench/mem.sh --summary RESULTS      the table of a results file
#
# Workloads:
#  cc1     GCC's compiler proper, cc1, at -O1 on a C file generated here
#          (MEM_FUNCS functions of loops, switches, struct accesses and
#          calls, about 41 lines each; 300: 12.6k lines, 4.5-6 s
#          untraced on the project's VMs, 2.3 M allocations and 4.5 M
#          calls to the allocation functions in all). cc1 is run
#          directly, with the command line `gcc -### -O1 -c` prints (its
#          -o turned into a file of ours), for every tool: neither
#          tracer follows `gcc` into cc1. heaptrack and
#          libringtrace-malloc.so both take themselves out of LD_PRELOAD
#          at start-up, so the gcc driver would be traced and cc1 and as
#          would not. The script checks this each time (a `gcc -wrapper`
#          under `ringtrace record --mem` prints the LD_PRELOAD that cc1
#          starts with) and says what it found above the table.
#  pairs1  bench/mem_pairs.c: 1 thread making MEM_PAIRS malloc/free pairs
#  pairs2  the same with 2 threads, MEM_PAIRS pairs EACH (twice the calls
#          of pairs1 in about the same untraced time on 2 CPUs). Sizes
#          1..4096 from a fixed-seed generator, 64 live blocks per thread
#          (mem_pairs.c says why).
#
# Tools, each on every workload:
#  untraced    the reference of the ratios
#  heaptrack   heaptrack -o TMP/ht.N (its .zst removed once measured)
#  mem         ringtrace record --mem -o TMP/rt.N
#  stacks      ringtrace record --mem --stacks (the unwind tables, the
#              default; their counters: info mem_unwind_WORKLOAD)
#  stackslu    the same with RINGTRACE_UNWIND=libunwind (the capture of
#              before the tables, in the same rounds)
#  aggregate   ringtrace record --mem --aggregate (counters per call site);
#              "n/a (not built)" when the recorder refuses the option
#  aggstacks   ringtrace record --mem --aggregate --stacks (counters per
#              stack)
# A tool that is missing or refuses its options gets n/a and the reason;
# the script still exits 0.
#
# Method. Wall time of the whole command (start-up, the tracer's flush at
# exit and heaptrack's compression included), MEM_RUNS rounds (default 3),
# each round running every workload under every tool in turn, so that the
# machine's drift (20-50% between runs on these shared 2-CPU VMs) falls on
# all alike; figures are medians over the rounds, with min and max. After
# one untimed warm-up of each workload. Nothing is pinned: on 2 CPUs the
# tracer's own thread (the recorder, heaptrack_interpret and its
# compressor) has to run beside the workload, and the scheduler places it
# for every tool alike; taskset made the untraced cc1 no steadier here
# (4.8-6.2 s unpinned, 5.5-7.7 s on CPU 0, alternating runs).
#  ns/call (pairs): the program's own timing of its loop (not start-up)
#    divided by the calls made by one thread: what a call costs the
#    thread that makes it; +ns/call is that minus the untraced figure.
#  events: ringtrace, the recorder's "N events recorded" (one event per
#    call); heaptrack, its "allocations" x 2 - "leaked allocations"
#    (frees of NULL are not counted); untraced pairs, the calls made.
#  bytes on disk: ringtrace, `du -sb` of the trace directory (streams,
#    metadata, stack map); heaptrack, its .zst file. Per event: / events.
#  lost: the recorder's lost events (discard mode, the default: a
#    recorder that falls behind drops events, which makes a run cheaper).
#
# Output: `result mem_WORKLOAD_TOOL MEDIAN_S key=value...` and
# `info mem_* ...` lines (kept in OUT/mem.txt), then the table. bench/run.sh
# keeps the result lines and prints the table with --summary.
#
# Environment: MEM_TOOLS (the tools to run, default all),
# MEM_WORKLOADS (default "cc1 pairs1 pairs2"), MEM_RUNS (rounds, default 3), MEM_PAIRS (pairs per thread,
# default 10000000), MEM_FUNCS (functions in the generated file, default
# 300), MEM_OUT (where mem_pairs, the results and the temporary directory
# go; default BUILD_DIR/bench), MEM_WAIT_IDLE=SECONDS (first wait up to
# that long for an idle machine), CC (compiler of mem_pairs, default gcc;
# the cc1 workload is always gcc's). About 5 minutes with the defaults.
# The CPU use of other processes before and after the runs is printed: a
# run on a busy machine is flagged.
set -u
export LC_ALL=C
exec </dev/null

ROOT=$(cd "$(dirname "$0")/.." && pwd)

# ---- the table ---------------------------------------------------------------------
# summary FILE: the table from the result lines of FILE.
summary() {
	awk '
	function has(k) { return (k in v) && v[k] != "n/a" && v[k] != "" }
	function opt(k, name) {
		if (match(line[k], " " name "=[^ ]+"))
			return substr(line[k], RSTART + length(name) + 2, RLENGTH - length(name) - 2)
		return ""
	}
	function num(s) { return s != "" && s != "n/a" }
	function human(b) {
		if (!num(b)) return "n/a"
		b += 0
		if (b >= 1e9) return sprintf("%.2f GB", b / 1e9)
		if (b >= 1e6) return sprintf("%.1f MB", b / 1e6)
		if (b >= 1e3) return sprintf("%.1f kB", b / 1e3)
		return b " B"
	}
	# The target (or earlier figure) of a row, and whether this run meets it.
	function target(w, t,   lim, r) {
		lim = ""
		if (w == "cc1" && t == "mem") lim = 1.05
		if (w == "cc1" && t == "stacks") lim = 1.25
		if (w == "pairs1" && t == "stacks") lim = 2.5
		if (w == "pairs2" && t == "stacks") lim = 3
		if (w == "pairs2" && (t == "aggregate" || t == "aggstacks")) lim = 1.1
		if (w == "cc1" && t == "aggstacks") lim = 1.1
		if (t == "heaptrack" && w == "cc1") return "earlier 1.57x"
		if (t == "heaptrack" && w == "pairs1") return "earlier 3.9x"
		if (t == "heaptrack" && w == "pairs2") return "earlier 9.4x"
		if (lim == "") return ""
		r = opt("mem_" w "_" t, "ratio")
		return sprintf("<= %sx %s", lim, num(r) ? (r + 0 <= lim ? "met" : "NOT MET") : "")
	}
	$1 == "result" { v[$2] = $3; line[$2] = $0 }
	$1 == "info"   { k = $2; $1 = ""; $2 = ""; sub(/^  */, ""); info[k] = $0 }
	END {
		if (!("mem_cc1_untraced" in v) && !("mem_pairs1_untraced" in v))
			exit
		nw = split("cc1 pairs1 pairs2", wl, " ")
		nt = split("untraced heaptrack mem stacks stackslu aggregate aggstacks", tl, " ")
		wname["cc1"] = "cc1"; wname["pairs1"] = "pairs, 1 thread"; wname["pairs2"] = "pairs, 2 threads"
		tname["untraced"] = "untraced"; tname["heaptrack"] = "heaptrack"
		tname["mem"] = "record --mem"; tname["stacks"] = "record --mem --stacks"
		tname["stackslu"] = "--stacks, libunwind"
		tname["aggregate"] = "record --mem --aggregate"
		tname["aggstacks"] = "--aggregate --stacks"
		printf "Allocation tracing (bench/mem.sh): wall time against the untraced run, median of %s rounds\n", info["mem_runs"]
		printf "  cc1:   %s\n", info["mem_cc1"]
		printf "         %s\n", info["mem_preload_cc1"]
		printf "  pairs: %s\n", info["mem_pairs"]
		printf "  %s\n", info["mem_versions"]
		print ""
		h = "  %-16s %-25s %8s %-15s %7s %-17s %8s %9s\n"
		printf h, "workload", "tool", "wall s", "[min-max]", "x untr.", "target", "ns/call", "+ns/call"
		for (i = 1; i <= nw; i++) {
			for (j = 1; j <= nt; j++) {
				k = "mem_" wl[i] "_" tl[j]
				if (!(k in v))
					continue
				if (!has(k)) {
					printf "  %-16s %-25s %s%s\n", j == 1 || !shown[i] ? wname[wl[i]] : "", tname[tl[j]],
						"n/a", ("mem_why_" tl[j] in info) ? " (" info["mem_why_" tl[j]] ")" : ""
					shown[i] = 1
					continue
				}
				nc = opt(k, "ns_call"); na = opt(k, "ns_added")
				printf h, !shown[i] ? wname[wl[i]] : "", tname[tl[j]], sprintf("%.2f", v[k]),
					"[" opt(k, "min") "-" opt(k, "max") "]", opt(k, "ratio"), target(wl[i], tl[j]),
					num(nc) ? nc : "", num(na) && tl[j] != "untraced" ? sprintf("%+.1f", na) : ""
				shown[i] = 1
			}
		}
		print ""
		print "  On disk (median over the rounds; events: one per call for ringtrace, calls for heaptrack)"
		h = "  %-16s %-25s %12s %10s %9s %10s\n"
		printf h, "workload", "tool", "events", "on disk", "B/event", "lost (max)"
		for (i = 1; i <= nw; i++) {
			s = 0
			for (j = 2; j <= nt; j++) {
				k = "mem_" wl[i] "_" tl[j]
				if (!has(k))
					continue
				printf h, !s ? wname[wl[i]] : "", tname[tl[j]], opt(k, "events"), human(opt(k, "bytes")),
					opt(k, "bpe"), tl[j] == "heaptrack" ? "" : opt(k, "lost")
				s = 1
			}
			k = "mem_" wl[i] "_untraced"
			if (s && num(opt(k, "events")))
				printf h, "", "(calls made)", opt(k, "events"), "", "", ""
		}
		print ""
		for (i = 1; i <= nw; i++)
			if (("mem_unwind_" wl[i]) in info)
				printf "  unwind tables, %s: %s\n", wname[wl[i]], info["mem_unwind_" wl[i]]
		print "  Targets (reported, not asserted): record --mem <= 1.05x on cc1; --stacks <= 1.25x on cc1,"
		print "  <= 2.5x on 1-thread and <= 3x on 2-thread pairs; --aggregate <= 1.1x on 2-thread pairs; --aggregate --stacks"
		print "  <= 1.1x on cc1 (and on 2-thread pairs, an older target). heaptrack measured"
		print "  earlier (docs/hot-path-notes.md): 1.57x on cc1, 3.9x / 9.4x on 1- / 2-thread pairs."
		for (i = 1; i <= nw; i++)
			for (j = 3; j <= nt; j++)
				if (opt("mem_" wl[i] "_" tl[j], "lost") + 0 > 0)
					printf "  NOTE: %s under %s lost events (discard mode, buffers full): its time and bytes are for fewer events than calls\n",
						wname[wl[i]], tname[tl[j]]
		for (k in info)
			if (k ~ /^mem_warning/)
				printf "  WARNING: %s\n", info[k]
		printf "  machine: before: %s\n           after:  %s\n", info["mem_busy_before"], info["mem_busy_after"]
		if ("mem_latency" in info)
			printf "  load latency (dependent loads, random lines, 4 KiB pages; bench/memlat.c): %s\n", info["mem_latency"]
		if (info["mem_busy_before"] + 0 > 10 || info["mem_busy_after"] + 0 > 10)
			print "  WARNING: other processes were using the CPUs: the timings are not comparable"
	}' "$1"
}

if [ "${1:-}" = --summary ]; then
	[ -r "${2:-}" ] || { echo "usage: bench/mem.sh --summary RESULTS_FILE" >&2; exit 2; }
	summary "$2"
	exit 0
fi

BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
RUNS=${MEM_RUNS:-3}
PAIRS=${MEM_PAIRS:-10000000}
FUNCS=${MEM_FUNCS:-300}
OUT=${MEM_OUT:-$BUILD/bench}
CC=${CC:-gcc}
RT=$BUILD/bin/ringtrace

note() { echo "bench: mem: $*" >&2; }

for n in "$RUNS" "$PAIRS" "$FUNCS"; do
	case $n in '' | *[!0-9]* | 0) note "MEM_RUNS, MEM_PAIRS and MEM_FUNCS are positive integers"; exit 2 ;; esac
done
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
PROG=$OUT/mem_pairs
RESF=$OUT/mem.txt
TMP=$(mktemp -d "$OUT/mem.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

: >"$RESF"
out() { tee -a "$RESF"; }

# ---- the generated C file --------------------------------------------------------------
# gen_big_c NFUNCS: on stdout, a translation unit of NFUNCS functions, the
# same for the same NFUNCS (fixed-seed LCG). Every function is extern
# (nothing is dropped as unused) and calls two earlier ones (the call
# graph is not trivial); cc1's time goes into the optimisers, which
# allocate much of their data with malloc (bitmaps, hash tables, vectors).
gen_big_c() {
	awk -v n="$1" '
	function rnd(m) { seed = (seed * 1103515245 + 12345) % 2147483648; return int(seed / 65536) % m }
	BEGIN {
		seed = 42
		print "/* generated by bench/mem.sh (gen_big_c " n "): a large translation unit for cc1 */"
		print "#include <stddef.h>"
		print "struct node { int key; long val; struct node *next; unsigned char tag[8]; };"
		print "struct pair { struct node *a, *b; double w; };"
		print "extern int ext_sink(long);"
		print "static inline int clampi(int x, int lo, int hi) { return x < lo ? lo : x > hi ? hi : x; }"
		for (i = 0; i < n; i++) {
			printf "int f%d(struct node *p, int n);\nint f%d(struct node *p, int n)\n{\n", i, i
			printf "\tint a = %d, b = n * %d, c = 0;\n", rnd(1000), rnd(50) + 1
			printf "\tlong acc = %dL;\n\tstruct pair pr = { p, p ? p->next : NULL, %d.%d };\n", rnd(100000), rnd(100), rnd(100)
			printf "\tint buf[%d];\n", 8 + rnd(24)
			printf "\tfor (int i = 0; i < (int)(sizeof(buf) / sizeof(buf[0])); i++)\n\t\tbuf[i] = (i * %d + n) ^ a;\n", rnd(97) + 1
			printf "\twhile (p && c < n) {\n"
			printf "\t\tif (p->key %% %d == %d) {\n\t\t\tacc += p->val * %d - buf[c & 7];\n", rnd(7) + 2, rnd(2), rnd(31) + 1
			printf "\t\t\tp->tag[c & 7] = (unsigned char)acc;\n\t\t} else if (p->key > %d) {\n", rnd(5000)
			printf "\t\t\tacc ^= (long)p->key << %d;\n\t\t} else {\n\t\t\tacc -= clampi(p->key, %d, %d);\n\t\t}\n", rnd(16), -rnd(100), rnd(100)
			printf "\t\tp = p->next;\n\t\tc++;\n\t}\n"
			printf "\tswitch ((int)(acc & 7)) {\n"
			for (k = 0; k < 6; k++)
				printf "\tcase %d: b += a * %d + (int)pr.w; a ^= b >> %d; break;\n", k, rnd(1000), rnd(8) + 1
			printf "\tdefault: b -= n;\n\t}\n"
			if (i > 0)
				printf "\tif (n > %d)\n\t\tacc += f%d(pr.b, n - 1) + f%d(pr.a, n / 2);\n", rnd(10), i - 1, rnd(i)
			printf "\tfor (int j = 0; j < n %% %d; j++) {\n\t\tdouble d = pr.w * j + %d.5;\n", rnd(13) + 3, rnd(9)
			printf "\t\tif (d > %d.0)\n\t\t\tacc += (long)d;\n\t\telse\n\t\t\tacc -= ext_sink(acc + j);\n\t}\n", rnd(300)
			printf "\treturn (int)(acc + a + b + c + buf[n & 7]);\n}\n\n"
		}
	}'
}

# ---- the tools ---------------------------------------------------------------------------
# Each tool that is available goes into TOOLS; the others get a reason
# (info mem_why_TOOL) and an n/a row.
TOOLS=(untraced)
declare -A WHY=()
if command -v heaptrack >/dev/null; then
	TOOLS+=(heaptrack)
else
	WHY[heaptrack]="heaptrack is not installed"
fi
# probe TOOL OPTIONS...: `ringtrace record OPTIONS -- true` must succeed.
TRUE=true
[ -x /bin/true ] && TRUE=/bin/true
probe() {
	local tool=$1 err
	shift
	if [ ! -x "$RT" ]; then
		WHY[$tool]="$RT is missing (run make)"
		return
	fi
	if "$RT" record "$@" -o "$TMP/probe" -- "$TRUE" >/dev/null 2>"$TMP/probe.err"; then
		TOOLS+=("$tool")
	else
		err=$(grep -v -e '^ringtrace record: recording ' -e '^ringtrace record: clock ' "$TMP/probe.err" | head -1)
		case $err in
		*"unknown option"* | *"unrecognized option"* | *"invalid option"*)
			if [ "$tool" = aggregate ] || [ "$tool" = aggstacks ]; then
				WHY[$tool]="not built"
			else
				WHY[$tool]="not built: $err"
			fi ;;
		*) WHY[$tool]="record $* fails: ${err:-exit status not 0}" ;;
		esac
	fi
	rm -rf "$TMP/probe" "$TMP/probe.err"
}
probe mem --mem
probe stacks --mem --stacks
[ -z "${WHY[stacks]:-}" ] && TOOLS+=(stackslu) || WHY[stackslu]=${WHY[stacks]}
probe aggregate --mem --aggregate
probe aggstacks --mem --aggregate --stacks
for t in heaptrack mem stacks aggregate aggstacks; do
	[ -n "${WHY[$t]:-}" ] && note "$t: n/a (${WHY[$t]})"
done
# MEM_TOOLS: only these (untraced always: the ratios need it).
if [ -n "${MEM_TOOLS:-}" ]; then
	keep=(untraced)
	for t in "${TOOLS[@]}"; do
		case " $MEM_TOOLS " in *" $t "*) [ "$t" != untraced ] && keep+=("$t") ;; esac
	done
	TOOLS=("${keep[@]}")
fi

# ---- the workloads ---------------------------------------------------------------------------
WLS=()

# cc1: its command line from the driver.
CC1=()
gen_big_c "$FUNCS" >"$TMP/big.c"
if ! gcc -O1 -c "$TMP/big.c" -o "$TMP/big.o" 2>"$TMP/gcc.err"; then
	note "gcc -O1 -c fails on the generated file: no cc1 figures ($(head -3 "$TMP/gcc.err" | tr '\n' ' '))"
else
	line=$(gcc -### -O1 -c "$TMP/big.c" -o "$TMP/big.o" 2>&1 | grep -m1 '/cc1" \|/cc1 ')
	if [ -n "$line" ]; then
		# The driver quotes each argument it prints ("-O1") or not (paths).
		eval "CC1=($line)"
		# Its output, a temporary .s of the driver's, becomes ours.
		for i in "${!CC1[@]}"; do
			[ "${CC1[$i]}" = -o ] && CC1[i+1]=$TMP/big.s
		done
		WLS+=(cc1)
	else
		note "no cc1 in the output of gcc -###: no cc1 figures"
	fi
fi

CFLAGS=(-O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes)
if "$CC" "${CFLAGS[@]}" -o "$PROG" "$ROOT/bench/mem_pairs.c" -lpthread; then
	WLS+=(pairs1 pairs2)
else
	note "cannot build mem_pairs (compiler output above): no pairs figures"
fi
# The latency of loads that miss the caches (bench/memlat.c says why);
# none from an earlier build if this one fails.
rm -f "$OUT/memlat"
"$CC" "${CFLAGS[@]}" -o "$OUT/memlat" "$ROOT/bench/memlat.c" ||
	note "cannot build memlat (compiler output above): no latency figures"

# wl_cmd WORKLOAD: the workload's command line into WCMD. The tracers
# run it directly: a shell in between would be traced instead (both take
# themselves out of LD_PRELOAD for the programs it starts).
wl_cmd() {
	case $1 in
	cc1) WCMD=("${CC1[@]}") ;;
	pairs1) WCMD=("$PROG" 1 "$PAIRS") ;;
	pairs2) WCMD=("$PROG" 2 "$PAIRS") ;;
	esac
}

# What else the machine does, before and after the runs, when this
# script runs nothing.
. "$ROOT/bench/machine.sh"
# MEM_WAIT_IDLE=SECONDS: first wait up to that long for the machine to be
# idle (under 10% busy).
if [ "${MEM_WAIT_IDLE:-0}" -gt 0 ] 2>/dev/null; then
	end=$((SECONDS + MEM_WAIT_IDLE))
	while [ "$(busy_pct)" -gt 10 ] && [ $SECONDS -lt $end ]; do
		sleep 4
	done
fi

{
	echo "info mem_runs $RUNS"
	echo "info mem_cc1 $(gcc -dumpfullversion 2>/dev/null) cc1 -O1 on a generated file of $FUNCS functions ($(wc -l <"$TMP/big.c") lines), cc1 run directly (gcc -### command line)"
	echo "info mem_pairs bench/mem_pairs.c: $PAIRS malloc/free pairs per thread (pairs2: $((2 * PAIRS)) in all), sizes 1..4096, 64 live blocks per thread"
	echo "info mem_versions $(heaptrack --version 2>/dev/null | head -1 || true); $("$RT" --version 2>/dev/null | head -1 || true); $(ldd --version 2>/dev/null | head -1 | sed 's/^ldd //')"
	echo "info mem_busy_before $(busy_pct)% of all CPUs busy during 1 s before the runs; top: $(top_procs)"
	[ -x "$OUT/memlat" ] && echo "info mem_latency $("$OUT/memlat" 1024 4096 16384 65536 |
		awk '{ printf "%s%s MiB %s ns", (NR > 1 ? ", " : ""), $1 / 1024, $2 }')"
	for t in "${!WHY[@]}"; do
		echo "info mem_why_$t ${WHY[$t]}"
	done
} | out

# ---- does LD_PRELOAD reach cc1 under `ringtrace record --mem -- gcc`? ------------------------
# A -wrapper that the driver runs in place of cc1 reports cc1's
# LD_PRELOAD and whether the library is mapped in it (the wrapper shell
# has the environment cc1 gets, and execs it).
if [ -n "${CC1[*]}" ] && [ -x "$RT" ] && [ -z "${WHY[mem]:-}" ]; then
	cat >"$TMP/wrap.sh" <<EOF
#!/bin/sh
case \${1##*/} in
cc1) echo "cc1 LD_PRELOAD=\${LD_PRELOAD-(unset)} mapped=\$(grep -c libringtrace-malloc /proc/\$\$/maps)" >>"$TMP/preload.log" ;;
esac
exec "\$@"
EOF
	chmod +x "$TMP/wrap.sh"
	echo 'int main(void) { return 0; }' >"$TMP/tiny.c"
	"$RT" record --mem -o "$TMP/wrapped" -- gcc -wrapper "$TMP/wrap.sh" -O1 -c "$TMP/tiny.c" -o "$TMP/tiny.o" \
		>/dev/null 2>"$TMP/wrapped.err" || note "record --mem -- gcc -wrapper: $(tr '\n' ' ' <"$TMP/wrapped.err")"
	l=$(head -1 "$TMP/preload.log" 2>/dev/null)
	case $l in
	"") msg="not checked: the gcc -wrapper run failed" ;;
	*"LD_PRELOAD=(unset)"* | *" mapped=0") msg="under 'record --mem -- gcc' cc1 would be untraced: ${l#cc1 } (the library takes itself out of LD_PRELOAD)" ;;
	*) msg="under 'record --mem -- gcc' cc1 starts preloaded: ${l#cc1 }; still run directly, as heaptrack needs" ;;
	esac
	echo "info mem_preload_cc1 $msg" | out
	rm -rf "$TMP/wrapped" "$TMP/wrapped.err" "$TMP/preload.log" "$TMP"/tiny.*
fi

# ---- the runs --------------------------------------------------------------------------------
# One line per run in TMP/runs: WORKLOAD TOOL ROUND WALL_S NS_CALL EVENTS BYTES LOST ("-": none).
: >"$TMP/runs"
now() { echo "$EPOCHREALTIME"; }

# one WORKLOAD TOOL ROUND: runs it once, appends its line.
one() {
	local wl=$1 tool=$2 r=$3 t0 t1 rc wall nscall ev="-" bytes="-" lost="-" f rec a lk
	wl_cmd "$wl"
	t0=$(now)
	case $tool in
	untraced)  "${WCMD[@]}" ;;
	heaptrack) heaptrack -o "$TMP/ht.$r" "${WCMD[@]}" ;;
	mem)       "$RT" record --mem -o "$TMP/rt.$r" -- "${WCMD[@]}" ;;
	stacks)    RINGTRACE_UNWIND_STATS=$TMP/uw.$wl "$RT" record --mem --stacks -o "$TMP/rt.$r" -- "${WCMD[@]}" ;;
	stackslu)  RINGTRACE_UNWIND=libunwind "$RT" record --mem --stacks -o "$TMP/rt.$r" -- "${WCMD[@]}" ;;
	aggregate) "$RT" record --mem --aggregate -o "$TMP/rt.$r" -- "${WCMD[@]}" ;;
	aggstacks) "$RT" record --mem --aggregate --stacks -o "$TMP/rt.$r" -- "${WCMD[@]}" ;;
	esac >"$TMP/out" 2>"$TMP/err"
	rc=$?
	t1=$(now)
	if [ $rc -ne 0 ]; then
		note "$wl under $tool, round $r: exit status $rc: $(grep -v -e '^ringtrace record: recording' -e '^ringtrace record: clock ' "$TMP/err" | head -5 | tr '\n' ' ')"
		rm -rf "$TMP/ht.$r".* "$TMP/rt.$r"
		return
	fi
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	nscall=$(sed -n 's/^mem_pairs: .* ns_per_call=\([0-9.]*\).*/\1/p' "$TMP/err" | head -1)
	case $tool in
	untraced)
		ev=$(sed -n 's/^mem_pairs: .* calls=\([0-9]*\).*/\1/p' "$TMP/err" | head -1) ;;
	heaptrack)
		a=$(cat "$TMP/out" "$TMP/err" | sed -n 's/^[[:space:]]*allocations:[[:space:]]*\([0-9]*\).*/\1/p' | head -1)
		lk=$(cat "$TMP/out" "$TMP/err" | sed -n 's/^[[:space:]]*leaked allocations:[[:space:]]*\([0-9]*\).*/\1/p' | head -1)
		[ -n "$a" ] && ev=$((2 * a - ${lk:-0}))
		for f in "$TMP/ht.$r".*; do
			[ -f "$f" ] && bytes=$(stat -c %s "$f")
		done
		rm -f "$TMP/ht.$r".* ;;
	*)
		rec=$(sed -n 's/^ringtrace record: \([0-9]*\) events recorded, \([0-9]*\) lost.*/\1 \2/p' "$TMP/err" | tail -1)
		if [ -n "$rec" ]; then
			ev=${rec% *}
			lost=${rec#* }
		else
			note "$wl under $tool, round $r: no recorder summary: $(tr '\n' ' ' <"$TMP/err" | cut -c1-300)"
		fi
		grep -q 'INCOMPLETE' "$TMP/err" &&
			echo "info mem_warning_${wl}_${tool}_$r the trace of round $r is INCOMPLETE" | out
		[ -d "$TMP/rt.$r" ] && bytes=$(du -sb "$TMP/rt.$r" | cut -f1)
		rm -rf "$TMP/rt.$r" ;;
	esac
	echo "$wl $tool $r $wall ${nscall:--} ${ev:--} ${bytes:--} ${lost:--}" >>"$TMP/runs"
	echo "  $wl $tool round $r: ${wall} s${nscall:+, $nscall ns/call}${ev:+, $ev events}" >&2
}

if [ -n "${MEM_WORKLOADS:-}" ]; then
	keep=()
	for wl in "${WLS[@]}"; do
		case " $MEM_WORKLOADS " in *" $wl "*) keep+=("$wl") ;; esac
	done
	WLS=("${keep[@]}")
fi
if [ ${#WLS[@]} -gt 0 ]; then
	echo "== warm-up: each workload once, untraced" >&2
	for wl in "${WLS[@]}"; do
		wl_cmd "$wl"
		"${WCMD[@]}" >/dev/null 2>&1 || note "warm-up of $wl failed"
	done
	echo "== $RUNS rounds of: ${WLS[*]} under ${TOOLS[*]}" >&2
	for r in $(seq "$RUNS"); do
		for wl in "${WLS[@]}"; do
			for tool in "${TOOLS[@]}"; do
				one "$wl" "$tool" "$r"
			done
		done
	done
fi
# The unwind tables' counters of the last round of each workload
# (RINGTRACE_UNWIND_STATS, written by the traced process at exit).
for wl in "${WLS[@]}"; do
	[ -s "$TMP/uw.$wl" ] || continue
	tail -n 1 "$TMP/uw.$wl" | awk -v wl="$wl" '{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		look = v["cache_hits"] + v["cache_misses"]
		printf "info mem_unwind_%s captures %d, %.2f%% answered by the tables; frames %.1f per stack, %.1f%% from the memo; %.1f%% of captures the frames of an earlier walk (the stack id from its note), %.1f%% found so at their first state (%.1f%% of them whole, from their frame: rt_unwind_again); rows from the cache %.2f%% of %d lookups (%.2f per capture); fallbacks %d\n",
			wl, v["captures"], v["captures"] ? 100 * v["fast"] / v["captures"] : 0,
			v["fast"] ? v["frames"] / v["fast"] : 0, v["frames"] ? 100 * v["memo_frames"] / v["frames"] : 0,
			v["captures"] ? 100 * v["noted"] / v["captures"] : 0,
			v["captures"] ? 100 * v["repeats"] / v["captures"] : 0,
			v["repeats"] ? 100 * v["again"] / v["repeats"] : 0,
			look ? 100 * v["cache_hits"] / look : 0, look, v["captures"] ? look / v["captures"] : 0, v["captures"] - v["fast"]
	}' | out
done
echo "info mem_busy_after $(busy_pct)% of all CPUs busy during 1 s after the runs; top: $(top_procs)" | out

# ---- medians -----------------------------------------------------------------------------------
# Every workload gets a row per tool: the medians, or n/a when the tool is
# missing or none of its runs succeeded.
awk -v wls="${WLS[*]}" -v tools="untraced heaptrack mem stacks stackslu aggregate aggstacks" '
function med(s,   a, n, i, j, x) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) {
		x = a[i]
		for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--)
			a[j + 1] = a[j]
		a[j + 1] = x
	}
	if (n == 0) return "n/a"
	lo = a[1]; hi = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function col(k, c, v) { if (v != "-") s[k, c] = s[k, c] " " v }
{
	k = $1 SUBSEP $2
	n[k]++
	col(k, "wall", $4); col(k, "ns", $5); col(k, "ev", $6); col(k, "bytes", $7); col(k, "lost", $8)
	if ($6 != "-" && $7 != "-" && $6 > 0) col(k, "bpe", $7 / $6)
}
END {
	nw = split(wls, W, " "); nt = split(tools, T, " ")
	for (i = 1; i <= nw; i++) {
		u = W[i] SUBSEP "untraced"
		uw = (u in n) ? med(s[u, "wall"]) : "n/a"
		un = (s[u, "ns"] != "") ? med(s[u, "ns"]) : "n/a"
		for (j = 1; j <= nt; j++) {
			k = W[i] SUBSEP T[j]
			if (!(k in n)) {
				printf "result mem_%s_%s n/a\n", W[i], T[j]
				continue
			}
			w = med(s[k, "wall"]); wmin = lo; wmax = hi
			ns = (s[k, "ns"] != "") ? med(s[k, "ns"]) : "n/a"
			lost = "n/a"
			if (s[k, "lost"] != "") { med(s[k, "lost"]); lost = hi }
			printf("result mem_%s_%s %.3f min=%.2f max=%.2f runs=%d ratio=%s ns_call=%s ns_added=%s events=%s bytes=%s bpe=%s lost=%s\n",
				W[i], T[j], w, wmin, wmax, n[k],
				uw != "n/a" && uw > 0 ? sprintf("%.2f", w / uw) : "n/a",
				ns != "n/a" ? sprintf("%.1f", ns) : "n/a",
				ns != "n/a" && un != "n/a" ? sprintf("%.1f", ns - un) : "n/a",
				s[k, "ev"] != "" ? sprintf("%d", med(s[k, "ev"])) : "n/a",
				s[k, "bytes"] != "" ? sprintf("%d", med(s[k, "bytes"])) : "n/a",
				s[k, "bpe"] != "" ? sprintf("%.2f", med(s[k, "bpe"])) : "n/a", lost)
		}
	}
}' "$TMP/runs" | out

echo
summary "$RESF"
exit 0
