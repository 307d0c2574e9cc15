#!/bin/bash
# pprof.sh - `ringtrace convert --to pprof`, end to end, read back by a real
# consumer: Debian's pprof, built here from its packaged source (offline)
# once per build directory. Checked: the events profile of a program with
# stacks (functions, counts per stack, the event label, the program's build
# id), every event with --stacks, the allocation profile of memprog's known
# pattern (alloc/inuse objects and bytes per function, totals against
# `ringtrace report`) with and without --stacks, empty traces (a valid empty
# profile, and a line saying so), a damaged trace, and bad arguments (one
# line each).
#
#   tests/e2e/pprof.sh [BUILD_DIR]        (MEM_PROGS_BUILD: see below)
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup pprof "${1:-build}"
PROG=$PROGS/stacks
# The allocation tracer's programs and library may come from another build
# than the command (MEM_PROGS_BUILD, as in mem.sh): under ASan the command
# is checked, on the plain build's traced programs.
PB=${MEM_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
MP=$PB/tests/e2e/memprog
export RINGTRACE_MALLOC_LIB=$PB/lib/libringtrace-malloc.so
LIM=120
trap 'cd / && rm -rf "$T"' EXIT

# Debian's pprof, built once into the build directory (Go's cache there
# too, so that nothing outside it is written, removed once built).
PPROF=$BUILD/tests/pprof/pprof
if [ ! -x "$PPROF" ]; then
	mkdir -p "$BUILD/tests/pprof"
	if command -v go >/dev/null && [ -d /usr/share/gocode/src/github.com/google/pprof ]; then
		(cd /usr/share/gocode/src && GO111MODULE=off GOPATH=/usr/share/gocode \
			GOCACHE="$BUILD/tests/pprof/gocache" timeout 900 go build -o "$PPROF.tmp" \
			github.com/google/pprof) >"$T/gobuild.log" 2>&1 && mv "$PPROF.tmp" "$PPROF"
		rm -rf "$BUILD/tests/pprof/gocache" "$PPROF.tmp"
	fi
fi
export PPROF_TMPDIR=$T HOME=$T

# pp ARGS... PROFILE: pprof with our symbols only (it must not look up
# any itself), its output in $T/pp.out.
pp() { timeout -k 5 $LIM "$PPROF" -symbolize=none "$@" >"$T/pp.out" 2>"$T/pp.err"; }

# flat FUNCTION: its flat value in pp.out (a -top listing); "" if absent.
flat() { awk -v f="$1" '$NF == f && $1 ~ /^[0-9]/ { print $1; exit }' "$T/pp.out"; }
cum() { awk -v f="$1" '$NF == f && $1 ~ /^[0-9]/ { print $4; exit }' "$T/pp.out"; }

# conv DIR ARGS...: `ringtrace convert DIR ARGS...`, status in CRC, stderr
# in DIR.cerr.
conv() {
	local d=$1
	shift
	timeout -k 5 $LIM "$RT" convert "$d" "$@" >"$d.cout" 2>"$d.cerr"
	CRC=$?
}

begin
[ -x "$PPROF" ] || { why "could not build pprof (golang-go and golang-github-google-pprof-dev: make deps)"; show "$T/gobuild.log"; }
finish "Debian's pprof builds offline from its packaged source"
[ -x "$PPROF" ] || { echo "$PASSED passed, $((FAILED + 1)) failed"; exit 1; }

# ---- events per stack ------------------------------------------------------
N=50
begin
if have "$PROG"; then
	timeout -k 5 $LIM "$RT" record -o t1 -- "$PROG" $N >t1.out 2>t1.err || { why "record failed"; show t1.err; }
	conv t1 --to pprof -o t1.pb.gz
	eq "convert status" "$CRC" 0
	eq "convert stderr" "$(cat t1.cerr)" ""
	pp -top -nodefraction=0 t1.pb.gz || { why "pprof -top failed"; show "$T/pp.err"; }
	grep -q '^Type: events$' "$T/pp.out" || { why "no 'Type: events'"; show "$T/pp.out"; }
	# stk:alloc N times from each of path_a->leaf, path_b->leaf and
	# path_c, once more from path_c in a signal handler.
	eq "leaf flat" "$(flat leaf)" $((2 * N))
	eq "path_c flat" "$(flat path_c)" $((N + 1))
	eq "path_a cum" "$(cum path_a)" $N
	eq "path_b cum" "$(cum path_b)" $N
	eq "main cum" "$(cum main)" $((3 * N + 1))
	grep -q "Total samples = $((3 * N + 1)) *\$" "$T/pp.out" || why "total is not $((3 * N + 1))"
	# The program's mapping carries its build id, as the trace has it.
	id=$(awk -v p="$PROG" '$NF == p { print $3; exit }' t1/stacks/maps)
	[ -n "$id" ] && grep -q "^Build ID: $id\$" "$T/pp.out" || { why "build id '$id' not shown"; show "$T/pp.out" 8; }
	# The event counts without stacks (stk:plain) are said in a comment.
	grep -q "^[0-9]* of [0-9]* events had no stack" "$T/pp.out" || { why "no comment on events without a stack"; show "$T/pp.out" 8; }
fi
finish "events profile: pprof -top shows each function's events and the program's build id"

begin
if [ -f t1.pb.gz ]; then
	pp -traces t1.pb.gz || { why "pprof -traces failed"; show "$T/pp.err"; }
	# Each trace: the label, then the count on the leaf's line, then the
	# callers, one per line. Flattened to "count leaf;caller;..." lines.
	awk '/^-----/ { if (t != "") print t; t = ""; next }
	     /event:/ { ev = $2; next }
	     NF == 2 && $1 ~ /^[0-9]+$/ { t = ev " " $1 " " $2; next }
	     NF == 1 && t != "" { t = t ";" $1 }
	     END { if (t != "") print t }' "$T/pp.out" >traces1
	grep -q "^stk:alloc $N leaf;path_a;main;" traces1 || { why "no '$N leaf;path_a;main'"; show traces1 6; }
	grep -q "^stk:alloc $N leaf;path_b;main;" traces1 || why "no '$N leaf;path_b;main'"
	grep -q "^stk:alloc $N path_c;main;" traces1 || why "no '$N path_c;main'"
	grep -q "^stk:alloc 1 path_c;on_usr1;" traces1 || { why "no '1 path_c;on_usr1' (the signal handler)"; show traces1 6; }
	eq "traces" "$(wc -l <traces1)" 4
	# The same stacks and counts as the folded output.
	conv t1 --folded -o t1.folded
	eq "folded total" "$(awk '{ s += $NF } END { print s }' t1.folded)" $((3 * N + 1))
else
	why "no t1.pb.gz"
fi
finish "events profile: pprof -traces shows one sample per stack with its count and event label"

begin
if have "$PROG"; then
	timeout -k 5 $LIM "$RT" record --stacks -o t2 -- "$PROG" 10 >t2.out 2>t2.err || { why "record failed"; show t2.err; }
	conv t2 --to pprof -o t2.pb.gz
	eq "convert status" "$CRC" 0
	pp -top -nodefraction=0 -tagfocus=event=stk:plain t2.pb.gz || { why "pprof failed"; show "$T/pp.err"; }
	eq "stk:plain events in main" "$(flat main)" 10
	pp -top -nodefraction=0 -tagfocus=event=stk:alloc t2.pb.gz
	eq "stk:alloc events on leaf" "$(flat leaf)" 20
fi
finish "events profile of record --stacks: every event, told apart by the event label"

# ---- allocations -----------------------------------------------------------
# memprog pattern: alloc24 100 x 24 B all freed; calloc_leak3 10 x 100 B,
# 3 left; realloc_grow 5 reallocs (496 B), one 256-B block left.
check_alloc() {
	local d=$1
	conv "$d" --to pprof -o "$d.pb.gz"
	eq "convert status" "$CRC" 0
	eq "convert stderr" "$(cat "$d.cerr")" ""
	pp -top -nodefraction=0 -sample_index=alloc_objects "$d.pb.gz" || { why "pprof failed"; show "$T/pp.err"; }
	eq "alloc24 objects" "$(flat alloc24)" 100
	eq "calloc_leak3 objects" "$(flat calloc_leak3)" 10
	eq "realloc_grow objects" "$(flat realloc_grow)" 5
	pp -top -nodefraction=0 -sample_index=alloc_space -unit=B "$d.pb.gz"
	eq "alloc24 bytes" "$(flat alloc24)" 2400B
	eq "calloc_leak3 bytes" "$(flat calloc_leak3)" 1000B
	eq "realloc_grow bytes" "$(flat realloc_grow)" 496B
	pp -top -nodefraction=0 -sample_index=inuse_objects "$d.pb.gz"
	eq "alloc24 live" "$(flat alloc24)" ""
	eq "calloc_leak3 live" "$(flat calloc_leak3)" 3
	eq "realloc_grow live" "$(flat realloc_grow)" 1
	# What is live at the end is what the report says leaked.
	"$RT" report "$d" >"$d.report" 2>&1
	local blocks bytes
	read -r bytes blocks < <(sed -n 's/^ *leaked at exit *\([0-9]*\) bytes in \([0-9]*\) blocks.*/\1 \2/p' "$d.report")
	grep -q "Total samples = ${blocks:-x} *\$" "$T/pp.out" || { why "inuse_objects total is not the report's ${blocks:-?}"; show "$T/pp.out" 3; }
	pp -top -sample_index=inuse_space -unit=B "$d.pb.gz"
	grep -q "Total samples = ${bytes:-x}B *\$" "$T/pp.out" || { why "inuse_space total is not the report's ${bytes:-?}"; show "$T/pp.out" 3; }
	grep -q '^Type: inuse_space$' "$T/pp.out" || why "inuse_space is not the default"
}

begin
if have "$MP" "$RINGTRACE_MALLOC_LIB"; then
	timeout -k 5 $LIM "$RT" record --mem --stacks -o m1 -- "$MP" pattern >m1.out 2>m1.err || { why "record failed"; show m1.err; }
	check_alloc m1
	pp -traces -sample_index=alloc_objects m1.pb.gz
	grep -A2 -E '^ +100 +alloc24$' "$T/pp.out" | grep -q '^ *main$' || { why "no trace alloc24 <- main"; show "$T/pp.out"; }
	# The tracer's own frames are not in the stacks: no location is in its
	# mapping (pprof lists the mappings that locations use).
	pp -raw m1.pb.gz
	grep -q '^Mappings' "$T/pp.out" || { why "no mappings in pprof -raw"; show "$T/pp.out"; }
	! grep -q 'libringtrace-malloc' "$T/pp.out" || why "the tracer's frames are in the profile"
	grep -Eq "^1: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ $MP [0-9a-f]{40} \[FN\]\[FL\]\[LN\]" "$T/pp.out" ||
		{ why "the program is not the first mapping, with its build id and symbols"; show "$T/pp.out"; }
fi
finish "allocation profile (--mem --stacks): objects and bytes, allocated and live, per function; totals as the report's"

begin
if have "$MP" "$RINGTRACE_MALLOC_LIB"; then
	timeout -k 5 $LIM "$RT" record --mem -o m2 -- "$MP" pattern >m2.out 2>m2.err || { why "record failed"; show m2.err; }
	check_alloc m2
fi
finish "allocation profile without --stacks: each call site as its own one-frame stack"

# ---- empty traces ------------------------------------------------------------
begin
timeout -k 5 $LIM "$RT" record -o e1 -- /bin/true >e1.out 2>&1
conv e1 --to pprof -o e1.pb.gz
eq "status" "$CRC" 0
eq "stderr lines" "$(wc -l <e1.cerr)" 1
grep -q "e1 has no events with a stack.*wrote an empty profile to 'e1.pb.gz'" e1.cerr || { why "message:"; show e1.cerr; }
pp -top e1.pb.gz || { why "pprof cannot read the empty profile"; show "$T/pp.err"; }
grep -q 'of 0 total' "$T/pp.out" || { why "not empty"; show "$T/pp.out"; }
if have "$MP" "$RINGTRACE_MALLOC_LIB"; then
	timeout -k 5 $LIM "$RT" record --mem --stacks -o e2 -- "$MP" >e2.out 2>&1
	conv e2 --to pprof -o e2.pb.gz
	eq "status" "$CRC" 0
	grep -q "e2 has no allocations: wrote an empty profile" e2.cerr || { why "message:"; show e2.cerr; }
	pp -top e2.pb.gz || { why "pprof cannot read the empty allocation profile"; show "$T/pp.err"; }
	grep -q '^Type: inuse_space$' "$T/pp.out" || why "no inuse_space type in the empty allocation profile"
fi
finish "empty traces: a valid empty profile, and a line saying so"

# ---- a trace damaged midway ------------------------------------------------
begin
if have "$PROG"; then
	timeout -k 5 $LIM "$RT" record -o d1 -- "$PROG" 20000 >d1.out 2>d1.err || { why "record failed"; show d1.err; }
	s=$(ls -S d1/stream_* 2>/dev/null | head -n 1)
	[ -n "$s" ] && cut_midway "$s" || why "no stream to damage"
	conv d1 --to pprof -o d1.pb.gz
	eq "status" "$CRC" 1
	eq "stderr lines" "$(wc -l <d1.cerr)" 1
	grep -q "the profile covers the events before it" d1.cerr || { why "message:"; show d1.cerr; }
	pp -top d1.pb.gz || { why "pprof cannot read the profile"; show "$T/pp.err"; }
	total=$(sed -n 's/.*Total samples = \([0-9]*\).*/\1/p' "$T/pp.out")
	[ "${total:-0}" -gt 0 ] && [ "${total:-0}" -lt 60001 ] || { why "total '$total': want some of the 60001 events"; show "$T/pp.out"; }
fi
finish "a trace damaged midway: the profile of the events before the damage, one line, status 1"

# ---- bad arguments -------------------------------------------------------------
# one_line WHAT WANT-STATUS PATTERN: the last conv failed with WANT-STATUS and
# one line on stderr matching PATTERN.
one_line() {
	eq "$1: status" "$CRC" "$2"
	eq "$1: stderr lines" "$(wc -l <t1.cerr)" 1
	grep -q "^ringtrace convert: .*$3" t1.cerr || { why "$1:"; show t1.cerr; }
}
begin
if [ -d t1 ]; then
	conv t1 --to pprof
	one_line "no -o" 2 "needs -o FILE"
	conv t1 --to pprof -o -
	one_line "-o -" 2 "needs -o FILE"
	conv t1 --to pprof -o "$T/no/such/dir/x.pb.gz"
	one_line "unwritable path" 1 "cannot create '$T/no/such/dir/x.pb.gz'"
	[ ! -e "$T/no" ] || why "something was created"
	# root writes anywhere: a read-only file system path instead.
	conv t1 --to pprof -o /proc/x.pb.gz
	one_line "read-only place" 1 "cannot create '/proc/x.pb.gz'"
	conv t1 --to pprof -o t1.pb.gz --debug-dir "$T/no-such-dir"
	one_line "--debug-dir" 1 "cannot use --debug-dir '$T/no-such-dir': No such file or directory"
	conv t1 --to pprof -o t1.pb.gz --debug-dir .
	eq "--debug-dir .: status" "$CRC" 0
	conv t1 --to pprof -o t1.pb.gz --weight bytes
	one_line "--weight" 2 "--weight goes with --folded"
	conv "$T/none" --to pprof -o x.pb.gz
	eq "not a trace: status" "$CRC" 1
	eq "not a trace: stderr lines" "$(wc -l <"$T/none.cerr")" 1
	[ ! -e x.pb.gz ] || why "a profile was written for no trace"
	# Stack ids without their map.
	cp -r t1 t3 && rm -rf t3/stacks
	conv t3 --to pprof -o t3.pb.gz
	eq "no stacks/: status" "$CRC" 1
	grep -q "t3/stacks: missing" t3.cerr || { why "no stacks/:"; show t3.cerr; }
fi
finish "bad arguments and outputs: one line each, non-zero status, nothing written"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
