#!/bin/bash
# mem_agg.sh - the allocation tracer's aggregate mode end to end: `record
# --mem --aggregate` keeps counters per call site (per stack with --stacks)
# in shared memory instead of events; the report made from them matches the
# known pattern of tests/e2e/progs/memprog.c exactly (the same figures as
# the event trace, but for what counters cannot tell: cross-thread frees,
# the sites of frees, double frees apart from unknown frees, pages);
# `ringtrace top PID` shows a running program's live heap; the counters'
# size does not grow with the run; two threads over more and fewer rows
# than their caches hold (tests/e2e/progs/memways.c) count every row and
# the peaks exactly; a forked child does not count into its
# parent's counters; the trace directory stays a valid CTF trace; bad input.
#
#   tests/e2e/mem_agg.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup mem_agg "${1:-build}"
PB=${MEM_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
MP=$PB/tests/e2e/memprog
MC=$PB/tests/e2e/memcxx
MEMLIB=$PB/lib/libringtrace-malloc.so
export RINGTRACE_MALLOC_LIB=$MEMLIB
HOLD_PID=
trap '[ -n "$HOLD_PID" ] && kill -USR2 "$HOLD_PID" 2>/dev/null; rm -rf "$T"' EXIT

. "$REPO/tests/e2e/mem_lib.sh"

# total JSON KEY...: the totals named, space-separated.
total() {
	python3 - "$@" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(" ".join(str(t[k]).lower() if isinstance(t[k], bool) else str(t[k]) for k in sys.argv[2:]))
EOF
}

# ---- the known pattern, from counters ---------------------------------------
begin
if have "$RT" "$MP" "$MEMLIB"; then
	"$MP" pattern >plain.out 2>plain.err
	plain_status=$?
	"$RT" record --mem --aggregate -o a1 -- "$MP" pattern >a1.out 2>a1.err
	eq "status traced" "$?" "$plain_status"
	eq "output traced" "$(cat a1.out)" "$(cat plain.out)"
	[ -s a1/mem/aggregate.bin ] || why "no a1/mem/aggregate.bin"
	"$RT" report a1 --by function --top 0 --json >a1.json 2>a1.rerr || { why "report failed"; show a1.rerr; }
	eq "alloc24" "$(row a1.json alloc24)" "100 100 2400 0 0 0 0 malloc"
	eq "calloc_leak3" "$(row a1.json calloc_leak3)" "10 7 1000 300 3 0 0 calloc"
	eq "realloc_grow" "$(row a1.json realloc_grow)" "5 4 496 256 1 0 0 realloc"
	eq "aligned_all" "$(row a1.json aligned_all)" "8 8 4712 0 0 0 0 posix_memalign,aligned_alloc,memalign,valloc"
	eq "on_usr1 (signal handler)" "$(row a1.json on_usr1)" "5 5 385 0 0 0 0 malloc"
	eq "double_free48" "$(row a1.json double_free48)" "1 1 48 0 0 0 0 malloc"
	if grep -q '^pinned 2$' a1.out; then
		eq "xalloc40" "$(row a1.json xalloc40)" "50 50 2000 0 0 50 0 malloc"
	else
		eq "xalloc40" "$(row a1.json xalloc40 | cut -d' ' -f1-5,7-)" "50 50 2000 0 0 0 malloc"
	fi
	# Pages are not counted in this mode (docs/mem.md).
	eq "pages" "$(row a1.json pages)" "rows:0"
	# The double free and the free of a pointer never allocated: two
	# frees of blocks not known alive.
	eq "unknown frees" "$(python3 -c 'import json,sys; print(sum(e["count"] for e in json.load(open(sys.argv[1]))["errors"] if e["kind"] == "free of an unknown pointer"))' a1.json)" 2
	eq "aggregate, leaked = allocations - frees, untracked" \
		"$(total a1.json aggregate untracked_blocks)" "true 0"
	python3 - a1.json >a1.inv <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t["leaked_blocks"] == t["allocations"] - t["frees"], t["peak_requested"] >= t["leaked_bytes"] > 0)
EOF
	eq "leaked = allocations - frees, peak >= leaked > 0" "$(cat a1.inv)" "True True"
	# No event per call: the trace holds no mem:* event.
	n=$("$RT" dump a1 2>/dev/null | grep -c ': mem:')
	eq "mem events in the trace" "$n" 0
	"$RT" check a1 >a1.check 2>&1 || { why "ringtrace check a1 failed"; show a1.check; }
	if command -v babeltrace2 >/dev/null; then
		babeltrace2 a1 >/dev/null 2>a1.bt || { why "babeltrace2 cannot read a1"; show a1.bt; }
	fi
	"$RT" report a1 >a1.txt 2>&1 || { why "text report failed"; show a1.txt; }
	grep -q "aggregate mode" a1.txt || why "the text report does not say it comes from counters"
fi
finish "record --mem --aggregate: counters per call site match the known pattern exactly; no events; a valid trace"

# ---- C++ and stacks ----------------------------------------------------------
begin
if have "$RT" "$MC" "$MEMLIB"; then
	"$MC" >plainc.out 2>&1
	plain_status=$?
	"$RT" record --mem --aggregate --stacks -o c1 -- "$MC" >c1.out 2>c1.err
	eq "status traced" "$?" "$plain_status"
	eq "output traced" "$(cat c1.out)" "$(cat plainc.out)"
	"$RT" report c1 --by stack --top 0 --json >c1.json 2>c1.rerr || { why "report --by stack failed"; show c1.rerr; }
	python3 - c1.json >c1.facts <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
fams = set()
for r in d["rows"]:
    fams.update(f for f in r["families"].split(",") if f)
mism = sum(e["count"] for e in d["errors"] if e["kind"] == "mismatched free")
print(",".join(sorted(fams & {"new", "new[]"})), mism, len(d["rows"]) > 3,
      all("stack_id" in r for r in d["rows"]))
EOF
	eq "families new, new[]; the mismatched delete; rows by stack" "$(cat c1.facts)" "new,new[] 1 True True"
	"$RT" report c1 --by stack >c1.txt 2>&1 || why "text report --by stack failed"
	# The program's frames, not the tracer's, under each stack.
	grep -q "memcxx.cc" c1.txt || why "no frame of memcxx.cc in the stacks"
	grep -q "memtrace.c" c1.txt && why "frames of the tracer in the printed stacks"
fi
finish "--aggregate --stacks on C++: counters per stack, new and new[], the mismatched delete, program frames only"

# ---- ringtrace top on a running program ----------------------------------------
begin
if have "$RT" "$MP" "$MEMLIB"; then
	# On one CPU: the blocks are freed after a wait for a signal, and a
	# program woken on the other CPU would free them all cross-CPU.
	taskset -c 0 "$RT" record --mem --aggregate -o h1 -- "$MP" hold 100 1000 >h1.out 2>h1.err &
	rec=$!
	HOLD_PID=$(holding h1.out)
	if [ -z "$HOLD_PID" ]; then
		why "the program never said it holds its blocks"
		show h1.err
	else
		"$RT" top "$HOLD_PID" -n 1 >top.out 2>top.err
		eq "top status" "$?" 0
		line=$(grep 'hold_blocks' top.out)
		read -r live blocks peak allocs frees _ <<<"$line"
		eq "top: hold_blocks live blocks peak allocs frees" "$live $blocks $peak $allocs $frees" \
			"100000 100 100000 100 0"
		head -1 top.out | grep -q "pid $HOLD_PID" || why "top's first line does not name pid $HOLD_PID"
		kill -USR2 "$HOLD_PID"
		HOLD_PID=
	fi
	wait "$rec"
	eq "record status" "$?" 0
	"$RT" report h1 --by function --top 0 --json >h1.json 2>h1.rerr || { why "report failed"; show h1.rerr; }
	eq "after the release: hold_blocks" "$(row h1.json hold_blocks)" "100 100 100000 0 0 0 0 malloc"
	python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; sys.exit(0 if t["peak_requested"] >= 100000 else 1)' h1.json ||
		why "the peak is below the 100000 bytes held"
fi
finish "ringtrace top PID: the live heap of a running program by call site; the report after it released"

# ---- a thread's caches: many rows, few rows, two threads ---------------------
# tests/e2e/progs/memways.c: two threads going round 12 sites (more than a
# thread's ways) and 3 (fewer), leaking 5 blocks each as they end; then
# the main thread keeps 240 blocks of 1024 bytes while it goes round the
# 12 sites again. Every row exact, per call site and per stack; the
# per-row peak of the kept site while the program holds them (`top`);
# the heap's peak exactly the kept blocks above what stays alive at exit
# (the threads' last sums were in the header before the main thread took
# the peak).
MW=$PB/tests/e2e/memways
R=500
# ways_rows JSON: one line per site, "NAME allocs frees bytes leaked_bytes
# leaked_blocks" (a site's stacks added up), then "peak-leaked N".
ways_rows() {
	python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = {}
for r in d["rows"]:
    if r["name"].startswith("ways_"):
        a = rows.setdefault(r["name"], [0, 0, 0, 0, 0])
        for i, k in enumerate(("allocations", "frees", "bytes_requested", "leaked_bytes", "leaked_blocks")):
            a[i] += r[k]
for n in sorted(rows):
    print(n, *rows[n])
t = d["totals"]
print("peak-leaked", t["peak_requested"] - t["leaked_bytes"])
EOF
}
ways_want() {
	local i j n
	for i in $(seq 0 11); do
		n=$((2 * R + 20))
		echo "ways_m$i $n $n $((n * 16 * (i + 1))) 0 0"
	done
	for j in 0 1 2; do
		n=$((4 * R))
		echo "ways_f$j $n $n $((n * 1000 * (j + 1))) 0 0"
	done
	echo "ways_keep1024 240 240 245760 0 0"
	echo "ways_leak100 10 0 1000 1000 10"
	echo "peak-leaked 245760"
}
begin
if have "$RT" "$MW" "$MEMLIB"; then
	ways_want | sort >w_want
	timeout 60 "$RT" record --mem --aggregate -o w1 -- "$MW" $R hold >w1.out 2>w1.err &
	rec=$!
	HOLD_PID=$(holding w1.out)
	if [ -z "$HOLD_PID" ]; then
		why "memways never said it holds its blocks"
		show w1.err
	else
		timeout 20 "$RT" top "$HOLD_PID" -n 1 >w1.top 2>w1.toperr
		eq "top status" "$?" 0
		read -r live blocks peak allocs frees _ <<<"$(grep ' ways_keep1024' w1.top)"
		eq "top: ways_keep1024 live blocks peak allocs frees" "$live $blocks $peak $allocs $frees" \
			"245760 240 245760 240 0"
		kill -USR2 "$HOLD_PID"
		HOLD_PID=
	fi
	wait "$rec"
	eq "record status (by call site)" "$?" 0
	"$RT" report w1 --by function --top 0 --json >w1.json 2>w1.rerr || { why "report w1 failed"; show w1.rerr; }
	ways_rows w1.json | sort >w1.got
	eq "rows and heap peak by call site" "$(cat w1.got)" "$(cat w_want)"
	timeout 60 "$RT" record --mem --aggregate --stacks -o w2 -- "$MW" $R >w2.out 2>w2.err
	eq "record status (by stack)" "$?" 0
	"$RT" report w2 --by function --top 0 --json >w2.json 2>w2.rerr || { why "report w2 failed"; show w2.rerr; }
	ways_rows w2.json | sort >w2.got
	eq "rows and heap peak by stack" "$(cat w2.got)" "$(cat w_want)"
fi
finish "two threads over more and fewer rows than their caches: every row exact, the row's and the heap's peak"

# ---- bounded memory ----------------------------------------------------------
begin
if have "$RT" "$MP" "$MEMLIB"; then
	"$RT" record --mem --aggregate -o s1 -- "$MP" spin 10000 >/dev/null 2>s1.err || why "spin 10000 failed"
	"$RT" record --mem --aggregate -o s2 -- "$MP" spin 1000000 >/dev/null 2>s2.err || why "spin 1000000 failed"
	a=$(stat -c %s s1/mem/aggregate.bin 2>/dev/null) b=$(stat -c %s s2/mem/aggregate.bin 2>/dev/null)
	eq "counters' size, 10k and 1M pairs" "$a" "$b"
	ka=$(du -k s2/mem/aggregate.bin | cut -f1)
	[ "${ka:-999999}" -le 256 ] || why "the counters of 1M pairs take $ka KiB on disk"
	"$RT" report s2 --json --top 0 >s2.json 2>&1 || why "report s2 failed"
	eq "allocations and frees of 1M pairs (at least)" \
		"$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; print(t["allocations"] >= 1000000, t["frees"] >= 1000000, t["untracked_blocks"])' s2.json)" \
		"True True 0"
fi
finish "the counters' size is the same for 10k and 1M allocations (bounded memory, sparse on disk)"

# ---- a program that forks ----------------------------------------------------
FE=$PB/tests/mem/fork_exec
begin
if [ -x "$FE" ] && have "$RT" "$MEMLIB"; then
	"$FE" >fe_plain.out 2>&1
	plain_status=$?
	"$RT" record --mem --aggregate -o f1 -- "$FE" >f1.out 2>f1.err
	eq "status traced" "$?" "$plain_status"
	eq "output traced" "$(sort f1.out)" "$(sort fe_plain.out)"
	"$RT" report f1 --by function --json --top 0 >f1.json 2>&1 || why "report f1 failed"
	# The reference: the event trace, where a forked child stops tracing.
	"$RT" record --mem -o f2 -- "$FE" >/dev/null 2>f2.err
	eq "status traced with events" "$?" "$plain_status"
	"$RT" report f2 --by function --json --top 0 >f2.json 2>&1 || why "report f2 failed"
	eq "churn (the parent's rounds only)" "$(row f1.json churn)" "$(row f2.json churn)"
	python3 - f1.json >f1.inv <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t["errors"], t["leaked_blocks"] == t["allocations"] - t["frees"])
EOF
	eq "errors, leaked = allocations - frees" "$(cat f1.inv)" "0 True"
fi
finish "a forked child does not count into its parent's counters; output and status unchanged"

# ---- bad input ---------------------------------------------------------------
begin
if have "$RT"; then
	"$RT" record -p 1 --aggregate >b1.out 2>&1
	eq "record -p --aggregate: status" "$?" 2
	eq "record -p --aggregate: lines" "$(wc -l <b1.out)" 1
	"$RT" record --mem --aggregate --flight-recorder -o b2 -- true >b2.out 2>&1
	eq "--aggregate --flight-recorder: status" "$?" 2
	eq "--aggregate --flight-recorder: lines" "$(wc -l <b2.out)" 1
	"$RT" top $$ -n 1 >b3.out 2>&1
	eq "top of a program without counters: status" "$?" 1
	eq "top of a program without counters: lines" "$(wc -l <b3.out)" 1
	"$RT" top >b4.out 2>&1
	eq "top without a pid" "$?" 2
	"$RT" top 1 -d nope >b5.out 2>&1
	eq "top -d nope" "$?" 2
	if [ -d a1 ]; then
		cp -r a1 dmg
		printf 'garbage' | dd of=dmg/mem/aggregate.bin bs=1 seek=0 conv=notrunc 2>/dev/null
		"$RT" report dmg >b6.out 2>b6.err
		eq "damaged counters: status" "$?" 1
		grep -q "damaged" b6.err || why "no word of the damaged counters: $(head -c 200 b6.err)"
		truncate -s 10 dmg/mem/aggregate.bin
		"$RT" report dmg >b7.out 2>b7.err
		eq "counters cut short: status" "$?" 1
	fi
fi
finish "bad input: one line and a non-zero status"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
