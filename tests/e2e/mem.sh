#!/bin/bash
# mem.sh - the allocation tracer end to end: `record --mem` on programs that
# were not rebuilt (tests/e2e/progs/memprog.c, memcxx.cc), and a report
# whose numbers match the known pattern exactly: counts and sizes per call
# site, leaks, fragmentation, cross-thread and cross-CPU frees, a double
# free, a free of an unknown pointer, a mismatched delete, allocation in a
# signal handler, a static constructor, aligned and nothrow new; stacks;
# `ringtrace mem`; the traced program's output and status unchanged; bad
# input.
#
#   tests/e2e/mem.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup mem "${1:-build}"
# The traced programs and the preloaded library may come from another
# build than the command (MEM_PROGS_BUILD): a sanitizer's runtime must be
# the first library of a program, so the ASan pass checks its command
# (the report is a hostile-input reader) on the plain build's programs.
PB=${MEM_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
MP=$PB/tests/e2e/memprog
MC=$PB/tests/e2e/memcxx
MEMLIB=$PB/lib/libringtrace-malloc.so
export RINGTRACE_MALLOC_LIB=$MEMLIB
trap 'rm -rf "$T"' EXIT

. "$REPO/tests/e2e/mem_lib.sh"

# errs JSON: the errors as "kind|count|alloc_site|free_site|again_site",
# sites cut to their function.
errs() {
	python3 - "$1" <<'EOF'
import json, sys
for e in json.load(open(sys.argv[1]))["errors"]:
    f = lambda s: s.split("+")[0]
    print("%s|%d|%s|%s|%s" % (e["kind"], e["count"], f(e["alloc_site"]), f(e["free_site"]), f(e["again_site"])))
EOF
}

# ---- the known pattern, exactly ---------------------------------------------
begin
if have "$RT" "$MP" "$MEMLIB"; then
	"$MP" pattern >plain.out 2>plain.err
	plain_status=$?
	"$RT" record --mem -o p1 -- "$MP" pattern >p1.out 2>p1.err
	eq "status traced" "$?" "$plain_status"
	eq "output traced" "$(cat p1.out)" "$(cat plain.out)"
	"$RT" report p1 --by function --top 0 --json >p1.json 2>p1.rerr || { why "report failed"; show p1.rerr; }
	eq "alloc24" "$(row p1.json alloc24)" "100 100 2400 0 0 0 0 malloc"
	eq "calloc_leak3" "$(row p1.json calloc_leak3)" "10 7 1000 300 3 0 0 calloc"
	eq "realloc_grow" "$(row p1.json realloc_grow)" "5 4 496 256 1 0 0 realloc"
	eq "aligned_all" "$(row p1.json aligned_all)" "8 8 4712 0 0 0 0 posix_memalign,aligned_alloc,memalign,valloc"
	eq "pages" "$(row p1.json pages)" "4 3 262144 65536 1 0 0 mmap"
	eq "on_usr1 (signal handler)" "$(row p1.json on_usr1)" "5 5 385 0 0 0 0 malloc"
	# Freed on another thread, pinned to the other CPU when it could be.
	if grep -q '^pinned 2$' p1.out; then
		eq "xalloc40" "$(row p1.json xalloc40)" "50 50 2000 0 0 50 50 malloc"
	else
		eq "xalloc40" "$(row p1.json xalloc40 | cut -d' ' -f1-5,7-)" "50 50 2000 0 0 50 malloc"
	fi
	eq "double_free48" "$(row p1.json double_free48)" "1 1 48 0 0 0 0 malloc"
	eq "errors" "$(errs p1.json | sort | tr '\n' ';')" \
		"double free|1|double_free48|double_free48|double_free48;free of an unknown pointer|1||free_unknown|;"
	# Every block is either freed or alive at exit.
	python3 - p1.json >p1.inv <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t["leaked_blocks"] == t["allocations"] - t["frees"], t["lost_events"], t["errors"])
EOF
	eq "leaked = allocations - frees, lost, errors" "$(cat p1.inv)" "True 0 2"
fi
finish "record --mem: the report's call sites match a known pattern exactly (counts, sizes, leaks, errors, cross-thread)"

begin
if [ -f p1.json ]; then
	"$RT" report p1 --top 0 >p1.txt 2>&1 || why "text report failed"
	grep -Eq '^ +10 +7 +1000 +1040 +3\.85 +300 +3 .* calloc_leak3\+0x[0-9a-f]+ \(tests/e2e/progs/memprog\.c:[0-9]+\) \[calloc\]$' p1.txt ||
		{ why "no symbolised calloc_leak3 row (function+offset, file:line)"; show p1.txt 30; }
	grep -q '^  300 bytes in 3 blocks allocated at calloc_leak3+' p1.txt || why "calloc_leak3's leak is not listed"
	grep -q 'double free: 1' p1.txt || why "no double free in the text report"
	# --sort and --top: the most allocations first.
	"$RT" report p1 --sort allocs --top 1 >p1.top 2>&1
	grep -A1 '^ *ALLOCS' p1.top | tail -n 1 | grep -q 'alloc24+' || { why "--sort allocs --top 1 is not alloc24"; show p1.top 4; }
	eq "rows with --top 1" "$(grep -c '^ *[0-9]' <(sed -n '/^By call site/,/^$/p' p1.top))" 1
	# The trace alone is enough: moved elsewhere, the same report.
	mkdir moved && cp -r p1 moved/p1
	(cd moved && "$RT" report p1 --top 0 >../p1.moved 2>&1)
	eq "report of the moved trace" "$(sed 1d p1.moved | md5sum)" "$(sed 1d p1.txt | md5sum)"
fi
finish "report text: symbolised sites (function+offset, file:line), leaks, --sort, --top; needs only the trace"

# ---- stacks -----------------------------------------------------------------
begin
if have "$RT" "$MP"; then
	"$RT" record --mem --stacks -o p2 -- "$MP" pattern >p2.out 2>p2.err
	eq "status traced with stacks" "$?" 0
	eq "output traced with stacks" "$(cat p2.out)" "$(cat plain.out)"
	"$RT" report p2 --by function --top 0 --json >p2.json 2>&1 || why "report failed"
	eq "calloc_leak3 with stacks" "$(row p2.json calloc_leak3)" "10 7 1000 300 3 0 0 calloc"
	"$RT" report p2 --by stack --top 0 >p2.txt 2>&1 || why "--by stack failed"
	# The leak's stack starts at the program's call, not in the tracer.
	grep -A2 '^  300 bytes in 3 blocks allocated at calloc_leak3' p2.txt >p2.leak
	sed -n 2p p2.leak | grep -q '^      calloc_leak3+' || { why "the leak's stack does not start at calloc_leak3"; show p2.leak; }
	sed -n 3p p2.leak | grep -q '^      main+' || { why "calloc_leak3's caller is not main"; show p2.leak; }
	grep -q 'memtrace\.c' p2.txt && why "the tracer's own frames are in the stacks"
	"$RT" report p1 --by stack >nostk.out 2>&1
	eq "--by stack without stacks: status" "$?" 2
	eq "--by stack without stacks: lines" "$(wc -l <nostk.out)" 1
fi
finish "record --mem --stacks: the same figures, leaks with their stacks from the program's call"

# A free's stack is read by no report: not captured (the event carries
# no stack fields), unless RINGTRACE_MEM_FREE_STACKS=1 asks for it; the first
# frames of an allocation's stack are the program's, not the tracer's.
begin
if have "$RT" "$MP" && [ -d p2 ]; then
	"$RT" dump p2 >p2.dump 2>&1 || why "dump failed"
	nfree=$(grep -c ' mem:free: ' p2.dump)
	[ "$nfree" -gt 0 ] || why "no free events"
	eq "frees without stack fields" "$(grep ' mem:free: ' p2.dump | grep -c 'stack')" 0
	eq "allocations with a stack id" "$(grep ' mem:alloc: ' p2.dump | grep -c 'stack_id=4294967295')" 0
	RINGTRACE_MEM_FREE_STACKS=1 "$RT" record --mem --stacks -o p3 -- "$MP" pattern >p3.out 2>p3.err
	eq "status with free stacks" "$?" 0
	eq "output with free stacks" "$(cat p3.out)" "$(cat plain.out)"
	"$RT" dump p3 >p3.dump 2>&1 || why "dump failed"
	eq "frees with a stack when asked" "$(grep ' mem:free: ' p3.dump | grep -c 'stack_id=4294967295')" 0
	"$RT" report p3 --by function --top 0 --json >p3.json 2>&1 || why "report failed"
	eq "the same figures with free stacks" "$(row p3.json calloc_leak3)" "10 7 1000 300 3 0 0 calloc"
	"$RT" stackmap p2 >p2.map 2>&1 || why "stackmap failed"
	grep -q '\[0\] \(malloc\|calloc\|realloc\|free\|rec_alloc\|ringtrace__[a-z_]*\)+' p2.map &&
		{ why "a stack starts in the tracer's frames"; show p2.map; }
fi
finish "record --mem --stacks: frees carry no stack unless RINGTRACE_MEM_FREE_STACKS=1; stacks start at the program"

# ---- C++ ----------------------------------------------------------------------
begin
if have "$RT" "$MC"; then
	"$MC" >cx.plain 2>&1
	"$RT" record --mem --stacks -o c1 -- "$MC" >c1.out 2>c1.err
	eq "status traced" "$?" 0
	eq "output traced" "$(cat c1.out)" "$(cat cx.plain)"
	"$RT" report c1 --by function --top 0 --json >c1.json 2>&1 || why "report failed"
	eq "arrays_and_objects()" "$(row c1.json 'arrays_and_objects()' | cut -d' ' -f1,2,4-)" "30 30 0 0 0 0 new,new[]"
	eq "aligned_lines()" "$(row c1.json 'aligned_lines()' | cut -d' ' -f1-5)" "3 3 192 0 0"
	eq "nothrow_array()" "$(row c1.json 'nothrow_array()' | cut -d' ' -f1-5,8)" "1 1 100 0 0 new[]"
	# The static constructor ran before main: its block is a leak.
	eq "make_static()" "$(row c1.json 'make_static()' | cut -d' ' -f1-5,8)" "1 0 24 24 1 new"
	eq "__cxa_allocate_exception" "$(row c1.json '__cxa_allocate_exception' | cut -d' ' -f1,2)" "1 1"
	eq "errors" "$(errs c1.json | cut -d'|' -f1-4 | tr '\n' ';')" "mismatched free|1|mismatch_new_array()|main;"
	python3 - c1.json >c1.inv <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t["leaked_blocks"] == t["allocations"] - t["frees"], t["lost_events"], t["allocations"] > 4000)
EOF
	eq "leaked = allocations - frees, lost, 4000 strings seen" "$(cat c1.inv)" "True 0 True"
fi
finish "C++: new/new[]/aligned/nothrow, a static constructor, an exception, threads; one mismatched delete found"

# ---- ringtrace mem, tracing off, bad input -----------------------------------
begin
if have "$RT" "$MP"; then
	"$RT" mem -o m1 -- "$MP" pattern >m1.out 2>m1.err
	eq "ringtrace mem status" "$?" 0
	head -n 3 m1.out | grep -q '^done ' || { why "the program's output is not first"; show m1.out; }
	grep -q '^Allocation report of m1' m1.out || { why "no report after the program"; show m1.out; }
	[ -d m1/stacks ] || why "ringtrace mem recorded no stacks"
	# Preloaded without a recorder, the wrappers only pass calls on.
	LD_PRELOAD=$MEMLIB "$MP" pattern >off.out 2>&1
	eq "preloaded, tracing off: status" "$?" "$plain_status"
	eq "preloaded, tracing off: output" "$(grep -v 'invalid pointer\|double free' off.out)" "$(cat plain.out)"
	LD_PRELOAD=$MEMLIB "$MC" >offc.out 2>&1
	eq "preloaded C++, tracing off" "$(cat offc.out)" "$(cat cx.plain)"
fi
finish "ringtrace mem prints the report after the program's output; preloaded with tracing off, programs run as before"

begin
if have "$RT" "$MP"; then
	"$RT" report /nonexistent >b1.out 2>&1
	eq "report of a missing dir: status" "$?" 2
	eq "report of a missing dir: lines" "$(wc -l <b1.out)" 1
	"$RT" record -o plain -- "$BUILD/examples/demo" >/dev/null 2>&1
	"$RT" report plain >b2.out 2>&1
	eq "report of a trace without allocations: status" "$?" 1
	eq "report of a trace without allocations: lines" "$(wc -l <b2.out)" 1
	"$RT" report p1 --sort nope >b3.out 2>&1
	eq "bad --sort" "$?" 2
	"$RT" report p1 --by nope >b4.out 2>&1
	eq "bad --by" "$?" 2
	RINGTRACE_MALLOC_LIB=/nonexistent/lib.so "$RT" record --mem -o b5 -- "$MP" pattern >b5.out 2>&1
	eq "missing tracer library: status" "$?" 2
	eq "missing tracer library: lines" "$(wc -l <b5.out)" 1
	[ -e b5 ] && why "a directory was left for a refused --mem"
	"$RT" mem >b6.out 2>&1
	eq "mem without a program" "$?" 2
	"$RT" record -p 1 --mem >b7.out 2>&1
	eq "record -p --mem" "$?" 2
fi
finish "bad input: one line and a non-zero status"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
