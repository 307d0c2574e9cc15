#!/bin/bash
# mem_exec.sh - the program behind a wrapper: `ringtrace mem` and `record
# --mem` follow the traced process through its own execs (same pid) and
# report the program that finally ran (a shell script's `exec "$@"`, `sh
# -c 'exec ...'`, env, two levels of them, python3 through a shim script),
# its output and status unchanged; children a wrapper forks stay untraced;
# a tracepoint program behind such a wrapper keeps its events; and the
# allocations made before the tracer's constructors (a library's
# constructor) are in the report.
#
#   tests/e2e/mem_exec.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup mem_exec "${1:-build}"
PB=${MEM_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
MP=$PB/tests/e2e/memprog
EP=$PB/tests/mem/early_prog
MEMLIB=$PB/lib/libringtrace-malloc.so
export RINGTRACE_MALLOC_LIB=$MEMLIB
TO=120
trap 'rm -rf "$T"' EXIT

. "$REPO/tests/e2e/mem_lib.sh"

printf '#!/bin/sh\nexec "$@"\n' >wrap
printf '#!/bin/sh\nexec "$@"\n' >wrap2
chmod +x wrap wrap2

# The known pattern's rows (tests/e2e/mem.sh) in a report, by function.
pattern_rows() {
	"$RT" report "$1" --by function --top 0 --json >"$1.json" 2>"$1.rerr" || { why "report $1 failed"; show "$1.rerr"; return; }
	eq "$1: alloc24" "$(row "$1.json" alloc24)" "100 100 2400 0 0 0 0 malloc"
	eq "$1: calloc_leak3" "$(row "$1.json" calloc_leak3)" "10 7 1000 300 3 0 0 calloc"
	eq "$1: realloc_grow" "$(row "$1.json" realloc_grow)" "5 4 496 256 1 0 0 realloc"
}

# ---- ringtrace mem behind wrappers ------------------------------------------
plain_status=0
if have "$RT" "$MP" "$MEMLIB"; then
	timeout $TO "$MP" pattern >plain.out 2>/dev/null
	plain_status=$?
fi
# check NAME DIR CMD...: ringtrace mem -o DIR -- CMD: output and status as
# the program's alone, the report printed is the pattern's, DIR/execs names
# memprog last.
check_mem() {
	local name=$1 dir=$2
	shift 2
	begin
	if have "$RT" "$MP" "$MEMLIB"; then
		timeout $TO "$RT" mem -q -o "$dir" -- "$@" >"$dir.out" 2>"$dir.err"
		eq "status" "$?" "$plain_status"
		# The program's output comes first, the report after it.
		eq "output" "$(head -n "$(wc -l <plain.out)" "$dir.out")" "$(cat plain.out)"
		grep -Eq '^ +100 +100 +2400 .*alloc24' "$dir.out" || { why "the printed report has no alloc24 row"; show "$dir.out" 3; }
		eq "last image" "$(tail -n 1 "$dir/execs" 2>/dev/null | cut -d' ' -f2)" "memprog"
		pattern_rows "$dir"
		grep -q "the program executed 'memprog'" "$dir.err" || { why "no line naming the program reported"; show "$dir.err"; }
	fi
	finish "$name"
}
check_mem "ringtrace mem -- ./wrap PROG: PROG's allocations are reported, output and status unchanged" w1 ./wrap "$MP" pattern
check_mem "ringtrace mem -- sh -c 'exec PROG': PROG is reported" w2 sh -c "exec '$MP' pattern"
check_mem "ringtrace mem -- env PROG: PROG is reported" w3 env "$MP" pattern
check_mem "ringtrace mem -- ./wrap ./wrap2 env PROG (wrappers two levels deep): PROG is reported" w4 ./wrap ./wrap2 env "$MP" pattern

begin
if have "$RT" "$MP"; then
	eq "images" "$(cut -d' ' -f2 w4/execs | tr '\n' ' ')" "wrap2 env memprog "
	# The first program's own report is still there on request.
	"$RT" report w4 --first-image --by function --json >w4f.json 2>/dev/null
	eq "first image has no alloc24" "$(row w4f.json alloc24)" "rows:0"
fi
finish "each image's allocations are kept apart (DIR/execs lists them); report --first-image reports the wrapper"

# ---- record --mem too --------------------------------------------------------
begin
if have "$RT" "$MP" "$MEMLIB"; then
	timeout $TO "$RT" record --mem -o r1 -- ./wrap "$MP" pattern >r1.out 2>r1.err
	eq "status" "$?" "$plain_status"
	eq "output" "$(cat r1.out)" "$(cat plain.out)"
	pattern_rows r1
fi
finish "record --mem -- ./wrap PROG, then report DIR: PROG's allocations"

# ---- python3 through a shim script ---------------------------------------------
begin
PY=$(command -v python3)
if have "$RT" "$MEMLIB" "$PY"; then
	mkdir shim
	printf '#!/bin/sh\n# a version manager'"'"'s shim\nexec "%s" "$@"\n' "$PY" >shim/python3
	chmod +x shim/python3
	code='import sys; keep = [bytearray(123457) for _ in range(3)]; print("py ok", len(keep)); sys.exit(4)'
	PATH=$T/shim:$PATH timeout $TO "$RT" mem -q -o py -- python3 -c "$code" >py.out 2>py.err
	eq "status" "$?" 4
	eq "output" "$(head -n 1 py.out)" "py ok 3"
	eq "last image" "$(tail -n 1 py/execs 2>/dev/null | cut -d' ' -f2)" "python3"
	"$RT" report py --json >py.json 2>/dev/null
	# The interpreter's own allocations (thousands at start-up) and the
	# three blocks of the script, which the shell never makes.
	python3 - py.json >py.chk <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t["allocations"] > 1000, t["bytes_requested"] >= 3 * 123457)
EOF
	eq "python3's allocations" "$(cat py.chk)" "True True"
fi
finish "ringtrace mem -- python3 through a shim script: the interpreter is reported"

# ---- forked children stay untouched ----------------------------------------------
begin
if have "$RT" "$MP" "$EP" "$MEMLIB"; then
	# The shell forks memprog (not its last command), a shell printing its
	# LD_PRELOAD and whether it has a control block (libringtrace's, which
	# a program that does not use it must not get), then executes
	# early_prog in its own process.
	script="'$MP' pattern >/dev/null 2>&1; sh -c 'echo pre=[\$LD_PRELOAD] ctl=\$(ls /dev/shm/ringtrace.ctl.\$\$ 2>/dev/null | wc -l)'; exec '$EP'"
	env -u LD_PRELOAD timeout $TO sh -c "$script" >fk.plain 2>/dev/null
	fk_status=$?
	timeout $TO "$RT" mem -q -o fk -- sh -c "$script" >fk.out 2>fk.err
	eq "status" "$?" "$fk_status"
	eq "output" "$(head -n 2 fk.out)" "$(cat fk.plain)"
	eq "traces" "$(cd fk/children 2>/dev/null && ls | sed 's/^[0-9]*-//' | tr '\n' ' ')" "early_prog "
	"$RT" report fk --by function --top 0 --json >fk.json 2>/dev/null
	eq "the executed program's main" "$(row fk.json main)" "1 1 77 0 0 0 0 malloc"
	eq "the forked memprog is not traced" "$(row fk.json alloc24)" "rows:0"
	"$RT" report fk --first-image --by function --top 0 --json >fk1.json 2>/dev/null
	eq "nor in the shell's trace" "$(row fk1.json alloc24)" "rows:0"
fi
finish "a wrapper's forked children stay untraced and without the preload; its own exec is followed"

# ---- a tracepoint program behind a wrapper -----------------------------------------
begin
if have "$RT" "$PROGS/kinds" "$MEMLIB"; then
	timeout $TO "$RT" record --mem -o k1 -- env "$PROGS/kinds" >k1.out 2>k1.err
	eq "status" "$?" 0
	eq "output" "$(cat k1.out)" "kinds 6"
	d=$(ls -d k1/children/*-kinds 2>/dev/null | head -n 1)
	if [ -n "$d" ]; then
		"$RT" dump "$d" >k1.dump 2>&1
		eq "kinds events" "$(grep -c 'kinds:' k1.dump)" 6
	else
		why "no trace of kinds in k1/children"
		show k1.err
	fi
fi
finish "record --mem -- env TRACEPOINT_PROGRAM: its events are in the trace of its image"

# ---- allocations before the tracer's constructors -------------------------------------
begin
if have "$RT" "$EP" "$MEMLIB"; then
	timeout $TO "$RT" record --mem -o e1 -- "$EP" >e1.out 2>e1.err
	eq "status" "$?" 0
	eq "output" "$(cat e1.out)" "early ok"
	"$RT" report e1 --by function --top 0 --json >e1.json 2>/dev/null
	eq "the constructor's block" "$(row e1.json early_lib_init)" "1 0 4242 4242 1 0 0 malloc"
	eq "main's block" "$(row e1.json main)" "1 1 77 0 0 0 0 malloc"
fi
finish "record --mem: a block a library's constructor allocates before ours run is in the report"

# ---- --aggregate with --follow-fork and --follow-exec ------------------------------------
begin
FT=$PB/tests/mem/follow_tree
if have "$RT" "$FT" "$MEMLIB"; then
	timeout $TO "$FT" >ft.plain 2>/dev/null
	ft_status=$?
	timeout $TO "$RT" record --mem --aggregate --follow-fork --follow-exec -o ag -- "$FT" >ag.out 2>ag.err
	eq "status" "$?" "$ft_status"
	eq "output" "$(cat ag.out)" "$(cat ft.plain)"
	[ -f ag/mem/aggregate.bin ] || { why "no ag/mem/aggregate.bin"; show ag.err; }
	"$RT" report ag --by function --top 0 --json >ag.json 2>/dev/null
	eq "parent" "$(row ag.json parent_work)" "100 100 102450 0 0 0 0 malloc"
	# Each followed process's counters in its own directory, by
	# function (follow_tree.c says who allocates what).
	got=""
	for d in ag/children/*; do
		[ -f "$d/mem/aggregate.bin" ] || { why "no $d/mem/aggregate.bin"; continue; }
		"$RT" report "$d" --first-image --by function --top 0 --json >"$d.json" 2>/dev/null
		for f in child_work grandchild_work exec_work quick_work.isra.0 quick_work; do
			r=$(row "$d.json" $f)
			[ "$r" = "rows:0" ] || got+="$f:$(cut -d' ' -f1-2 <<<"$r" | tr ' ' /) "
		done
	done
	eq "children" "$(tr ' ' '\n' <<<"$got" | sed 's/\.isra\.0//' | sort | tr '\n' ' ')" \
		" child_work:120/100 exec_work:37/30 grandchild_work:33/33 quick_work:5/0 "
fi
finish "record --mem --aggregate --follow-fork --follow-exec: each followed process's counters saved in its own trace directory"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
