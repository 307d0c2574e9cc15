#!/bin/bash
# mem_sample.sh - Poisson byte sampling in the allocation tracer end to
# end (RINGTRACE_MEM_SAMPLE=BYTES in the environment of `ringtrace record
# --mem`, which passes it to the program): on tests/e2e/progs/memsample.c,
# which allocates 100 MB from one call site in blocks freed at once and
# keeps 50 MB alive from another, at a fixed seed and a mean of 256 KiB,
# the estimates a consumer computes as docs/mem.md says
# (tests/e2e/mem_sample_est.py) are within 15% of the truth; only a
# sample of the allocations is recorded, every recorded free is of a
# sampled block, runs with one seed repeat and another seed differs;
# threads, frees in another thread, a followed fork; every allocation
# family through the sampled paths (a mean of 1 byte); the aggregate mode
# (exact per call site, estimates in their rows); bad values record
# nothing and say why in the trace; the variable unset records every call.
#
#   tests/e2e/mem_sample.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup mem_sample "${1:-build}"
PB=${MEM_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
MS=$PB/tests/e2e/memsample
MEMLIB=$PB/lib/libringtrace-malloc.so
EST=$REPO/tests/e2e/mem_sample_est.py
export RINGTRACE_MALLOC_LIB=$MEMLIB
unset RINGTRACE_MEM_SAMPLE RINGTRACE_MEM_SAMPLE_SEED
trap 'rm -rf "$T"' EXIT

# val FILE KEY: the value of "KEY value" in FILE (0 when absent).
val() {
	awk -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' "$1"
}

# body FILE: the program's output without its sites (addresses vary).
body() { grep -v '^site_' "$1"; }

# near WHAT GOT WANT PCT: GOT within PCT% of WANT.
near() {
	python3 -c 'import sys; g, w, p = map(float, sys.argv[1:]); sys.exit(0 if abs(g - w) <= w * p / 100 else 1)' \
		"$2" "$3" "$4" || why "$1: estimated $2, true $3: more than $4% off"
}

# rec DIR MODE [record options...]: the program under `record --mem`
# (with the environment of the caller), its output in DIR.out, the
# recorder's in DIR.err, the dump in DIR.dump, the estimates in DIR.est.
rec() {
	local d=$1 mode=$2
	shift 2
	timeout 120 "$RT" record --mem "$@" -o "$d" -- "$MS" "$mode" >"$d.out" 2>"$d.err"
	echo $? >"$d.status"
	"$RT" dump "$d" >"$d.dump" 2>/dev/null
	python3 "$EST" events "$d.dump" "$d.out" >"$d.est"
}

# ---- one thread: the estimates at 256 KiB ---------------------------------------
begin
if have "$RT" "$MS" "$MEMLIB"; then
	"$MS" one >plain.out 2>plain.err
	eq "status untraced" "$?" 0
	RINGTRACE_MEM_SAMPLE=262144 RINGTRACE_MEM_SAMPLE_SEED=1 rec s1 one
	eq "status traced" "$(cat s1.status)" 0
	eq "output traced" "$(body s1.out)" "$(body plain.out)"
	eq "mem:sampling events" "$(grep -c ': mem:sampling: ' s1.dump)" 1
	grep -q ': mem:sampling: mean=262144 seed=1 capacity=[0-9]* status=0 fixed_seed=1$' s1.dump ||
		{ why "no mem:sampling with mean 262144, seed 1, status 0"; show s1.dump 2; }
	calls=$(($(val s1.out churn_n) + $(val s1.out keep_n) + 64))
	allocs=$(val s1.est allocs)
	[ "$allocs" -gt 100 ] && [ $((allocs * 50)) -lt "$calls" ] ||
		why "$allocs allocation events for $calls allocations: not a sample (1/50 or less expected at 256 KiB)"
	near "churn bytes allocated" "$(val s1.est churn_alloc_bytes)" "$(val s1.out churn_bytes)" 15
	near "churn allocations" "$(val s1.est churn_alloc_n)" "$(val s1.out churn_n)" 15
	near "kept bytes allocated" "$(val s1.est keep_alloc_bytes)" "$(val s1.out keep_bytes)" 15
	near "kept bytes alive at exit" "$(val s1.est keep_inuse_bytes)" "$(val s1.out live_keep_bytes)" 15
	eq "churn bytes alive at exit" "$(val s1.est churn_inuse_bytes)" 0
	# Every free recorded is of a sampled block alive; each sampled churn
	# block's free is recorded.
	eq "frees of blocks not sampled (unknown)" "$(val s1.est unknown_frees)" 0
	[ "$(val s1.est frees)" -ge "$(val s1.est churn_samples)" ] ||
		why "$(val s1.est frees) frees recorded for $(val s1.est churn_samples) sampled churn blocks"
	eq "untracked" "$(val s1.est untracked)" 0
	grep -v -e '^ringtrace record: ' s1.err >s1.noise
	[ -s s1.noise ] && { why "output on stderr"; show s1.noise; }
fi
finish "sampling at 256 KiB: 100 MB churned and 50 MB kept estimated within 15%, frees matched, a sample recorded"

begin
if [ -s s1.dump ]; then
	sizes() { grep -o ': mem:[a-z_]*alloc[a-z_]*: .*size=[0-9]*' "$1" | sed 's/.*size=//' | md5sum; }
	RINGTRACE_MEM_SAMPLE=256K RINGTRACE_MEM_SAMPLE_SEED=1 rec s1b one
	grep -q ': mem:sampling: mean=262144 seed=1 ' s1b.dump || why "256K is not a mean of 262144"
	eq "the same seed: the same samples" "$(sizes s1b.dump)" "$(sizes s1.dump)"
	RINGTRACE_MEM_SAMPLE=262144 RINGTRACE_MEM_SAMPLE_SEED=0x2 rec s1c one
	grep -q ': mem:sampling: mean=262144 seed=2 ' s1c.dump || why "seed 0x2 is not 2"
	[ "$(sizes s1c.dump)" != "$(sizes s1.dump)" ] || why "seeds 1 and 2 gave the same samples"
	near "churn bytes, seed 2" "$(val s1c.est churn_alloc_bytes)" "$(val s1c.out churn_bytes)" 15
	near "kept bytes, seed 2" "$(val s1c.est keep_inuse_bytes)" "$(val s1c.out live_keep_bytes)" 15
	# No seed given: one drawn, said in the trace, still a sample.
	RINGTRACE_MEM_SAMPLE=262144 rec s1d one
	grep -q ': mem:sampling: mean=262144 seed=[0-9]* capacity=[0-9]* status=0 fixed_seed=0$' s1d.dump ||
		{ why "no mem:sampling with fixed_seed=0 without a seed"; show s1d.dump 2; }
	eq "no seed: unknown frees" "$(val s1d.est unknown_frees)" 0
fi
finish "sampling: a seed repeats its samples, another seed differs, no seed draws one; 256K means 262144"

# ---- threads, frees in another thread --------------------------------------------
begin
if have "$MS"; then
	RINGTRACE_MEM_SAMPLE=262144 RINGTRACE_MEM_SAMPLE_SEED=1 rec s2 threads
	eq "status traced" "$(cat s2.status)" 0
	near "churn bytes, 2 threads" "$(val s2.est churn_alloc_bytes)" "$(val s2.out churn_bytes)" 15
	near "kept bytes, 2 threads" "$(val s2.est keep_alloc_bytes)" "$(val s2.out keep_bytes)" 15
	# Half of the kept blocks freed by main: 25 MB alive, ~100 samples.
	near "kept bytes alive after main freed half" "$(val s2.est keep_inuse_bytes)" "$(val s2.out live_keep_bytes)" 20
	eq "unknown frees" "$(val s2.est unknown_frees)" 0
	# Both threads sampled (their own draws); main recorded the frees of
	# the kept blocks they sampled.
	n=$(grep ': mem:alloc: ' s2.dump | awk '{ print $1 }' | sort -u | wc -l)
	[ "$n" -ge 2 ] || why "samples from $n threads, want two"
	main=$(grep -m1 ': mem:sampling: ' s2.dump | awk '{ print $1 }')
	n=$(grep ': mem:free: ' s2.dump | awk -v m="$main" '$1 == m' | wc -l)
	[ "$n" -gt 10 ] || why "$n frees recorded in main (of blocks the threads sampled), want more than 10"
	RINGTRACE_MEM_SAMPLE=262144 RINGTRACE_MEM_SAMPLE_SEED=1 rec s2b threads
	eq "threads: the same seed, the same estimates" "$(grep _bytes s2b.est)" "$(grep _bytes s2.est)"
fi
finish "sampling with two threads: estimates within 15% (20% for the 25 MB alive), frees from another thread matched, repeatable"

# ---- a followed fork ------------------------------------------------------------------
begin
if have "$MS"; then
	RINGTRACE_MEM_SAMPLE=262144 RINGTRACE_MEM_SAMPLE_SEED=1 rec s3 fork --follow-fork
	eq "status traced" "$(cat s3.status)" 0
	child=$(ls -d s3/children/*-memsample 2>/dev/null | head -1)
	if [ -z "$child" ]; then
		why "no child trace"
		show s3.err
	else
		"$RT" dump "$child" >c.dump 2>/dev/null
		python3 "$EST" events c.dump s3.out >c.est
		grep -q ': mem:sampling: mean=262144 seed=[0-9]* capacity=[0-9]* status=0 fixed_seed=1$' c.dump ||
			{ why "no mem:sampling in the child's trace"; show c.dump 2; }
		pseed=$(sed -n 's/.*: mem:sampling: mean=[0-9]* seed=\([0-9]*\) .*/\1/p' s3.dump)
		cseed=$(sed -n 's/.*: mem:sampling: mean=[0-9]* seed=\([0-9]*\) .*/\1/p' c.dump)
		[ -n "$cseed" ] && [ "$cseed" != "$pseed" ] || why "the child samples with the parent's seed ($cseed)"
		near "child's churn" "$(val c.est churn_alloc_bytes)" 50000000 20
		near "parent's churn" "$(val s3.est churn_alloc_bytes)" 50000000 20
		eq "parent: unknown frees" "$(val s3.est unknown_frees)" 0
		# The child's unknown frees are blocks the parent sampled before
		# the fork (its trace starts there, docs/mem.md), nothing else.
		python3 - s3.dump c.dump >c.check <<'EOF'
import re, sys
par = {m.group(1) for m in re.finditer(r": mem:alloc: ptr=(0x[0-9a-f]+)", open(sys.argv[1]).read())}
own, bad, inherited = set(), 0, 0
for line in open(sys.argv[2]):
    m = re.search(r": mem:(alloc|free): ptr=(0x[0-9a-f]+)", line)
    if not m:
        continue
    if m.group(1) == "alloc":
        own.add(m.group(2))
    elif m.group(2) in own:
        own.discard(m.group(2))
    elif m.group(2) in par:
        inherited += 1
    else:
        bad += 1
print(bad, inherited > 0)
EOF
		eq "child: frees neither its samples nor the parent's, parent's seen" "$(cat c.check)" "0 True"
	fi
fi
finish "sampling and a followed fork: the child announces its own draw, its frees are of sampled blocks"

# ---- aggregate mode -----------------------------------------------------------------------
begin
if have "$MS"; then
	RINGTRACE_MEM_SAMPLE=262144 RINGTRACE_MEM_SAMPLE_SEED=1 \
		timeout 120 "$RT" record --mem --aggregate -o a1 -- "$MS" one >a1.out 2>a1.err
	eq "status traced" "$?" 0
	eq "output traced" "$(body a1.out)" "$(body plain.out)"
	python3 "$EST" agg a1/mem/aggregate.bin a1.out >a1.est 2>a1.perr || show a1.perr
	eq "mean, seed, status in the header" "$(val a1.est mean) $(val a1.est seed) $(val a1.est status)" "262144 1 0"
	# Exact, every allocation, per call site.
	eq "churn exact" "$(val a1.est churn_exact_allocs) $(val a1.est churn_exact_bytes)" \
		"$(val a1.out churn_n) $(val a1.out churn_bytes)"
	eq "keep exact" "$(val a1.est keep_exact_allocs) $(val a1.est keep_exact_bytes)" \
		"$(val a1.out keep_n) $(val a1.out keep_bytes)"
	eq "grow exact (64 reallocs)" "$(val a1.est grow_exact_allocs)" 64
	# Estimated, the same samples as the event log at the same seed.
	near "churn bytes (estimate row)" "$(val a1.est churn_alloc_bytes)" "$(val a1.out churn_bytes)" 15
	near "kept bytes alive (estimate row)" "$(val a1.est keep_inuse_bytes)" "$(val a1.out live_keep_bytes)" 15
	near "the heap alive (header)" "$(val a1.est heap_live_est)" "$(val a1.out live_keep_bytes)" 15
	eq "churn alive (estimate row)" "$(val a1.est churn_inuse_bytes)" 0
	eq "samples as in the event log" "$(val a1.est churn_samples) $(val a1.est keep_samples)" \
		"$(val s1.est churn_samples) $(val s1.est keep_samples)"
	eq "untracked, unknown frees" "$(val a1.est untracked) $(val a1.est unknown_frees)" "0 0"
	eq "mem events in the trace" "$("$RT" dump a1 2>/dev/null | grep -c ': mem:')" 0
	RINGTRACE_MEM_SAMPLE=262144 RINGTRACE_MEM_SAMPLE_SEED=1 \
		timeout 120 "$RT" record --mem --aggregate --stacks -o a2 -- "$MS" threads >a2.out 2>a2.err
	eq "status traced, stacks, threads" "$?" 0
	python3 "$EST" agg a2/mem/aggregate.bin a2.out >a2.est 2>a2.perr || show a2.perr
	eq "churn exact, threads" "$(val a2.est churn_exact_allocs) $(val a2.est churn_exact_bytes)" \
		"$(val a2.out churn_n) $(val a2.out churn_bytes)"
	near "bytes allocated (stack rows)" "$(val a2.est stack_alloc_bytes)" \
		$(($(val a2.out churn_bytes) + $(val a2.out keep_bytes))) 15
	near "bytes alive (stack rows)" "$(val a2.est stack_inuse_bytes)" "$(val a2.out live_keep_bytes)" 20
fi
finish "sampling in aggregate mode: exact counts per call site, estimates within 15% in their rows, with stacks and threads"

# The exact rows against the full counters of the same program: per call
# site the same allocations, bytes requested and bytes usable (the
# allocator's figure, which the sampled mode reads from the block's own
# header when the allocator is glibc's), every C family, a signal
# handler's allocations; more call sites than a thread's 8 ways.
begin
MP=$PB/tests/e2e/memprog
if have "$MP"; then
	exact_rows() {
		python3 -c '
import json, sys
for r in sorted(json.load(open(sys.argv[1]))["rows"], key=lambda r: r["name"]):
    if not r.get("estimate"):
        n = r["name"][:-8] if r["name"].endswith(" (exact)") else r["name"]
        print(n, r["allocations"], r["bytes_requested"], r["bytes_allocated"], r["families"])' "$1"
	}
	timeout 120 "$RT" record --mem --aggregate -o xf -- "$MP" pattern >xf.out 2>&1
	RINGTRACE_MEM_SAMPLE=512K timeout 120 "$RT" record --mem --aggregate -o xs -- "$MP" pattern >xs.out 2>&1
	"$RT" report xf --top 0 --json >xf.json 2>/dev/null
	"$RT" report xs --top 0 --json >xs.json 2>/dev/null
	exact_rows xf.json >xf.rows
	exact_rows xs.json >xs.rows
	[ "$(wc -l <xf.rows)" -ge 10 ] || { why "few rows in the full counters"; show xf.out; }
	grep -q '(exact)' xs.json || why "no exact rows in the sampled counters"
	if ! cmp -s xf.rows xs.rows; then
		why "exact rows differ from the full counters' rows:"
		while IFS= read -r l; do why "$l"; done < <(diff xf.rows xs.rows | head -n 6)
	fi
fi
finish "sampling in aggregate mode: the exact rows are the full counters' allocations, bytes requested and usable, per call site"

# A followed fork under --aggregate: the child counts into a block of its
# own, and the parent's sampled blocks it frees (half of the kept ones)
# are not its own: its estimate of its heap is that of its churn (all
# freed), never below zero (they were subtracted from it, with rows of the
# parent's block: a heap of -9 MB, wrapped).
begin
if have "$MS"; then
	RINGTRACE_MEM_SAMPLE=262144 RINGTRACE_MEM_SAMPLE_SEED=1 \
		timeout 120 "$RT" record --mem --aggregate --follow-fork -o af -- "$MS" fork >af.out 2>af.err
	eq "status traced" "$?" 0
	cb=$(ls -d af/children/*/mem/aggregate.bin 2>/dev/null | head -1)
	if [ -z "$cb" ]; then
		why "no counters of the child"; show af.err
	else
		python3 "$EST" agg "$cb" af.out >af.cest 2>af.perr || show af.perr
		near "child's churn (estimate row)" "$(val af.cest churn_alloc_bytes)" 50000000 20
		eq "child's heap alive (estimate), unknown frees" "$(val af.cest heap_live_est) $(val af.cest unknown_frees)" "0 0"
		"$RT" report "$(dirname "$(dirname "$cb")")" >af.rep 2>&1
		peak=$(sed -n 's/^  peak heap *\([0-9]*\) bytes requested.*/\1/p' af.rep)
		[ -n "$peak" ] && [ "${#peak}" -le 12 ] || { why "child's peak heap: '$peak'"; show af.rep 8; }
	fi
fi
finish "sampling in aggregate mode, a followed fork: the child's counters leave the parent's sampled blocks out"

# ---- every family through the sampled paths ------------------------------------------------
# At a mean of 1 byte an allocation of s bytes is sampled with probability
# 1 - exp(-s): every block of the known patterns of mem.sh (malloc, calloc,
# realloc, the aligned ones, pages, C++ new/new[]/aligned/nothrow and their
# deletes, a signal handler, frees in another thread) goes through the
# sampled paths, and the report's rows are those of the full trace.
begin
MP=$PB/tests/e2e/memprog
MC=$PB/tests/e2e/memcxx
if have "$MP" "$MC"; then
	rows() {
		python3 -c '
import json, sys
for r in sorted(json.load(open(sys.argv[1]))["rows"], key=lambda r: r["name"]):
    print(r["name"], r["allocations"], r["frees"], r["bytes_requested"], r["leaked_bytes"], r["leaked_blocks"], r["families"])' "$1"
	}
	for p in "$MP pattern" "$MC"; do
		n=$(basename "${p%% *}")
		timeout 120 "$RT" record --mem -o "$n.full" -- $p >"$n.full.out" 2>&1
		RINGTRACE_MEM_SAMPLE=1 RINGTRACE_MEM_SAMPLE_SEED=3 timeout 120 "$RT" record --mem -o "$n.s1" -- $p >"$n.s1.out" 2>&1
		"$RT" report "$n.full" --by function --top 0 --json >"$n.full.json" 2>/dev/null
		"$RT" report "$n.s1" --by function --top 0 --json >"$n.s1.json" 2>/dev/null
		rows "$n.full.json" >"$n.full.rows"
		rows "$n.s1.json" >"$n.s1.rows"
		[ "$(wc -l <"$n.full.rows")" -ge 5 ] || { why "$n: few rows in the full trace"; show "$n.full.out"; }
		if ! cmp -s "$n.full.rows" "$n.s1.rows"; then
			why "$n: rows sampled at a mean of 1 byte differ from the full trace's:"
			while IFS= read -r l; do why "$l"; done < <(diff "$n.full.rows" "$n.s1.rows" | head -n 6)
		fi
		grep -q ': mem:sampling: mean=1 ' <("$RT" dump "$n.s1" 2>/dev/null) || why "$n: no mem:sampling in the sampled trace"
	done
fi
finish "a mean of 1 byte samples every block of mem.sh's patterns (C and C++ families): the full trace's rows"

# ---- the set of sampled blocks full ------------------------------------------------------
begin
if have "$MS"; then
	# A mean of 1 byte samples every allocation; a set of 16 entries
	# cannot hold the 1545 kept blocks.
	RINGTRACE_MEM_SAMPLE=1 RINGTRACE_MEM_SAMPLE_SEED=1 RINGTRACE_MEM_SAMPLE_BLOCKS=16 rec f1 one
	eq "status traced" "$(cat f1.status)" 0
	grep -q ': mem:sampling: mean=1 seed=1 capacity=16 ' f1.dump || { why "no mem:sampling with capacity 16"; show f1.dump 2; }
	u=$(val f1.est untracked)
	[ "$u" -ge 1500 ] || why "$u mem:untracked events, want at least 1500 of the 1545 kept blocks"
	# Allocated totals whole, the untracked blocks out of the in-use ones,
	# and no free recorded for a block the set did not hold.
	near "kept: allocated, exact at a mean of 1" "$(val f1.est keep_alloc_bytes)" "$(val f1.out keep_bytes)" 0.01
	near "churn: allocations, exact at a mean of 1" "$(val f1.est churn_alloc_n)" "$(val f1.out churn_n)" 0.01
	eq "unknown frees" "$(val f1.est unknown_frees)" 0
	n=$(val f1.est keep_inuse_n)
	[ "$n" -le 16 ] || why "$n kept blocks alive in the estimate, the set holds 16"
	RINGTRACE_MEM_SAMPLE=1 RINGTRACE_MEM_SAMPLE_SEED=1 RINGTRACE_MEM_SAMPLE_BLOCKS=16 \
		timeout 120 "$RT" record --mem --aggregate -o fa -- "$MS" one >fa.out 2>fa.err
	python3 "$EST" agg fa/mem/aggregate.bin fa.out >fa.est 2>fa.perr || show fa.perr
	u=$(val fa.est untracked)
	[ "$u" -ge 1500 ] || why "aggregate: untracked $u, want at least 1500"
	near "aggregate: kept bytes allocated (estimate row)" "$(val fa.est keep_alloc_bytes)" "$(val fa.out keep_bytes)" 0.01
	n=$(val fa.est keep_inuse_n)
	python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 16 else 1)' "$n" ||
		why "aggregate: $n kept blocks alive in the estimate, the set holds 16"
fi
finish "the set of sampled blocks full: each sample it cannot hold counted (mem:untracked, untracked), allocated totals whole"

# ---- bad values, and the variable unset -----------------------------------------------------
begin
if have "$MS"; then
	i=0
	for v in 0 -1 abc 12Q '' 99999999999999999999999 2048G 1099511627777 256K:22 ' 1'; do
		i=$((i + 1))
		want=22
		case $v in 99999999999999999999999 | 2048G | 1099511627777) want=34 ;; esac
		RINGTRACE_MEM_SAMPLE=$v rec b$i one
		eq "'$v': status" "$(cat b$i.status)" 0
		eq "'$v': output" "$(body b$i.out)" "$(body plain.out)"
		grep -q ": mem:sampling: mean=0 seed=0 capacity=0 status=$want fixed_seed=0\$" b$i.dump ||
			{ why "'$v': no mem:sampling with status $want"; show b$i.dump 2; }
		eq "'$v': allocation events" "$(grep -c ': mem:[a-z_]*alloc' b$i.dump)" 0
		grep -v -e '^ringtrace record: ' b$i.err >b$i.noise
		[ -s b$i.noise ] && { why "'$v': output on stderr"; show b$i.noise; }
	done
	RINGTRACE_MEM_SAMPLE=262144 RINGTRACE_MEM_SAMPLE_SEED=1x rec bs one
	grep -q ': mem:sampling: mean=0 .* status=22 ' bs.dump || why "a bad seed is not refused"
	eq "bad seed: allocation events" "$(grep -c ': mem:[a-z_]*alloc' bs.dump)" 0
	RINGTRACE_MEM_SAMPLE=0 timeout 120 "$RT" record --mem --aggregate -o ab -- "$MS" one >ab.out 2>ab.err
	python3 "$EST" agg ab/mem/aggregate.bin ab.out >ab.est
	eq "aggregate, bad value: status, rows" "$(val ab.est status) $(val ab.est churn_exact_allocs)" "22 0"
fi
finish "bad RINGTRACE_MEM_SAMPLE (0, negative, garbage, overflow, bad seed): nothing recorded, the trace says why, nothing printed"

begin
if have "$MS"; then
	rec u1 one
	eq "status" "$(cat u1.status)" 0
	eq "unset: mem:sampling events" "$(grep -c ': mem:sampling' u1.dump)" 0
	eq "unset: every allocation recorded" "$(val u1.est churn_samples) $(val u1.est keep_samples)" \
		"$(val u1.out churn_n) $(val u1.out keep_n)"
	eq "unset: exact" "$(val u1.est churn_alloc_bytes) $(val u1.est keep_inuse_bytes)" \
		"$(val u1.out churn_bytes) $(val u1.out live_keep_bytes)"
fi
finish "RINGTRACE_MEM_SAMPLE unset: every call recorded, no mem:sampling"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
