#!/bin/bash
# convert_chrome.sh - `ringtrace convert --to chrome` and `--folded`, end to
# end, on traces recorded here: the example (begin/end pairs as slices),
# a multi-threaded program, the allocation pattern of memprog under
# `record --mem --stacks` (heap counters against `ringtrace report`, folded
# stacks by events and by bytes), a trace with losses, a trace damaged
# midway (what was read, as valid JSON, status 1), bad arguments, and a
# 2M-event trace converted in bounded memory. The JSON is checked by
# tests/e2e/chrome_check.py against the Trace Event Format's rules and
# against `ringtrace dump` and `ringtrace report` of the same trace.
#
#   tests/e2e/convert_chrome.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
ulimit -c 0
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup convert "${1:-build}"
MP=$PROGS/memprog
export RINGTRACE_MALLOC_LIB=$BUILD/lib/libringtrace-malloc.so
CHECK="python3 $REPO/tests/e2e/chrome_check.py"
LIM=120
trap 'cd / && rm -rf "$T"' EXIT

# rec DIR RECORD-ARGS...: `ringtrace record -o DIR`, status in RC.
rec() {
	local d=$1
	shift
	rm -rf "$d"
	{ timeout -k 5 $LIM "$RT" record -o "$d" "$@" >"$d.out" 2>"$d.err"; } 2>/dev/null
	RC=$?
	[ "$RC" = 0 ] || { why "record $*: status $RC"; show "$d.err"; }
}

# conv DIR ARGS...: `ringtrace convert DIR ARGS...`, status in CRC, stderr
# in DIR.cerr.
conv() {
	local d=$1
	shift
	{ timeout -k 5 $LIM "$RT" convert "$d" "$@" >"$d.cout" 2>"$d.cerr"; } 2>/dev/null
	CRC=$?
}

# The events of `ringtrace dump DIR` (loss lines start with "ringtrace: ")
# and the events they say were lost.
dump_events() { "$RT" dump "$1" 2>/dev/null | grep -vc '^ringtrace: '; }
dump_lost() { "$RT" dump "$1" 2>/dev/null | sed -n 's/^ringtrace: \([0-9]*\) events\{0,1\} lost .*/\1/p' |
	awk '{s += $1} END {print s + 0}'; }

# chrome_ok DIR NAME CHECK-ARGS...: convert DIR to DIR.json, status 0,
# nothing on stderr, and the checker passes.
chrome_ok() {
	local d=$1
	shift
	conv "$d" --to chrome -o "$d.json"
	eq "convert status" "$CRC" 0
	eq "convert stderr" "$(cat "$d.cerr")" ""
	$CHECK chrome "$d.json" "$@" >"$d.chk" 2>&1 || show "$d.chk" 8
}

# report_total DIR KEY: totals.KEY of `ringtrace report DIR --json`.
report_total() {
	"$RT" report "$1" --json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"][sys.argv[1]])' "$2"
}

# ---- the example: begin/end pairs, three workers -----------------------------

begin
if have "$RT" "$DEMO"; then
	rec demo -- "$DEMO" 500
	n=$(dump_events demo)
	pairs=$("$RT" dump demo | grep -c ' demo:request_begin:')
	chrome_ok demo --events "$n" --slices "$pairs" --no-heap
	python3 - demo.json <<'EOF' >demo.py.out 2>&1 || show demo.py.out
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
names = {(e["name"], e["ph"]) for e in ev}
assert ("demo:request", "B") in names and ("demo:request", "E") in names, names
assert ("demo:batch", "i") in names and ("demo:config", "i") in names, names
assert not any(e["name"].startswith("ringtrace:thread") for e in ev), "thread records shown"
b = next(e for e in ev if e["ph"] == "B")
assert b["cat"] == "demo" and b["args"]["path"].startswith("/item/"), b
e = next(e for e in ev if e["ph"] == "E")
assert "status" in e["args"] and isinstance(e["args"]["ms"], float), e
c = next(e for e in ev if e["name"] == "demo:config")
assert c["args"]["p"].startswith("0x") and c["args"]["tag"] == [100, 101, 109, 111], c
assert d["displayTimeUnit"] == "ns" and d["otherData"]["complete"] is True
assert d["otherData"]["procname"] == "demo"
first = min(e["ts"] for e in ev if e["ph"] != "M")
assert 0 <= first < 1000, first
EOF
fi
finish "chrome: the example (slices from request_begin/_end, instants, args, metadata)"

begin
if have "$RT" "$DEMO"; then
	conv demo --to chrome
	eq "status" "$CRC" 0
	cmp -s demo.cout demo.json || why "the JSON on standard output differs from -o's"
fi
finish "chrome: standard output without -o"

begin
if have "$RT" "$PROGS/kinds"; then
	rec kinds -- "$PROGS/kinds"
	chrome_ok kinds --events "$(dump_events kinds)" --no-heap
	python3 - kinds.json <<'EOF' >kinds.py.out 2>&1 || show kinds.py.out
import json, sys
a = {e["name"]: e.get("args") for e in json.load(open(sys.argv[1]))["traceEvents"]}
assert a["kinds:ints"]["d"] == -2**63 and a["kinds:ints"]["h"] == 2**64 - 1, a["kinds:ints"]
assert a["kinds:hex"]["c"] == "0xdeadbeef", a["kinds:hex"]
f = a["kinds:floats"]
assert (f["pinf"], f["ninf"], f["nan"], f["pi"]) == ("inf", "-inf", "nan", 3.141592653589793), f
s = a["kinds:strs"]
assert s["esc"] == 'q"b\\t\tn\n' and s["raw"] == "caf\u00e9 \u00ff\u00fe", s
assert a["kinds:arrs"]["none"] == [] and a["kinds:arrs"]["sv"] == [-1, 0, 32767], a["kinds:arrs"]
EOF
fi
finish "chrome: every field kind as strict JSON (edge integers, non-finite floats, escapes, non-UTF-8)"

# ---- several threads ------------------------------------------------------------

begin
if have "$RT" "$PROGS/threads"; then
	rec thr --buffer-size 1M --subbuffers 64 -- "$PROGS/threads" 4 3000
	chrome_ok thr --events "$(dump_events thr)" --no-heap
	grep -q '"threads": 5' thr.chk || { why "not 5 threads"; show thr.chk; }
fi
finish "chrome: 5 threads, their names, per-thread order"

# ---- allocations: heap counters, folded stacks -----------------------------------

begin
if have "$RT" "$MP" "$RINGTRACE_MALLOC_LIB"; then
	rec mem --mem --stacks -- "$MP" pattern
	leaked=$(report_total mem leaked_bytes)
	peak=$(report_total mem peak_requested)
	[ -n "$leaked" ] && [ -n "$peak" ] || why "no report totals"
	chrome_ok mem --events "$(dump_events mem)" --leaked "${leaked:-x}" --peak "${peak:-x}"
	grep -q '"mapped pages"' mem.chk || why "no mapped pages counter"
fi
finish "chrome: heap counters of memprog end at the report's leaked bytes, peak at its peak"

begin
if [ -d mem ]; then
	conv mem --folded -o mem.folded
	eq "status" "$CRC" 0
	eq "stderr" "$(cat mem.cerr)" ""
	# Frees carry no stack (stack_id 0xffffffff, depth 0): not folded.
	nst=$("$RT" dump mem | grep ' stack_id=' | grep -vc ' stack_id=4294967295 stack=\[\]')
	$CHECK folded mem.folded --sum "$nst" >mem.fchk 2>&1 || show mem.fchk
	grep -Eq ';alloc24 100$' mem.folded || { why "no '...;alloc24 100' line"; show mem.folded; }
	grep -Eq ';free_all24 [0-9]+$' mem.folded && why "a '...;free_all24' line: frees have no stack"
	grep -q 'libringtrace-malloc' mem.folded && why "frames of libringtrace-malloc.so left"
	grep -Eq '^(_start|__clone3?|start_thread);' mem.folded || why "not root first"
fi
finish "folded: one line per stack, counts add up to the events with stacks, tracer frames dropped"

begin
if [ -d mem ]; then
	conv mem --folded --weight bytes -o mem.bytes
	eq "status" "$CRC" 0
	req=$(report_total mem bytes_requested)
	$CHECK folded mem.bytes --sum "${req:-x}" >mem.bchk 2>&1 || show mem.bchk
	grep -Eq ';alloc24 2400$' mem.bytes || { why "no '...;alloc24 2400' line"; show mem.bytes; }
	# Per function, the lines whose last frame it is add up to the
	# report's bytes requested there (--by function: the call site's).
	"$RT" report mem --by function --top 0 --json >mem.rows.json 2>/dev/null
	python3 - mem.bytes mem.rows.json <<'EOF' >mem.rows.out 2>&1 || show mem.rows.out
import collections, json, sys
leaf = collections.Counter()
for line in open(sys.argv[1]):
    stack, n = line.rsplit(" ", 1)
    leaf[stack.split(";")[-1]] += int(n)
rows = json.load(open(sys.argv[2]))["rows"]
bad = [(r["name"], r["bytes_requested"], leaf.get(r["name"], 0)) for r in rows
       if leaf.get(r["name"], 0) != r["bytes_requested"]]
assert not bad, "function, report, folded: %r" % bad
assert sum(leaf.values()) == sum(r["bytes_requested"] for r in rows)
EOF
	conv mem --folded --weight bytes
	cmp -s mem.cout mem.bytes || why "standard output differs from -o's"
fi
finish "folded --weight bytes: adds up to the report's bytes requested"

begin
if have "$RT" "$DEMO"; then
	rec dstk --stacks -- "$DEMO" 100
	conv dstk --folded -o dstk.folded
	eq "status" "$CRC" 0
	$CHECK folded dstk.folded --sum "$("$RT" dump dstk | grep -c ' stack_id=')" >dstk.fchk 2>&1 || show dstk.fchk
	grep -q 'run_worker' dstk.folded || why "no run_worker frame"
	conv dstk --folded --weight bytes -o dstk.bytes
	eq "--weight bytes without allocations: status" "$CRC" 1
	eq "--weight bytes without allocations: stderr lines" "$(wc -l <dstk.cerr)" 1
	[ -e dstk.bytes ] && why "output file left behind"
fi
finish "folded: tracepoint stacks; --weight bytes without allocation events is an error"

# ---- losses and damage ------------------------------------------------------------

begin
if have "$RT" "$PROGS/busy"; then
	rec lossy --buffer-size 64K --subbuffers 4 -- "$PROGS/busy" 200000 stop
	lost=$(dump_lost lossy)
	[ "${lost:-0}" -gt 0 ] || why "no events lost (the test needs some)"
	chrome_ok lossy --events "$(dump_events lossy)" --lost "$lost" --no-heap
fi
finish "chrome: lost events as process-wide instants with their count"

begin
if have "$RT" "$DEMO"; then
	rec dmg --buffer-size 64K --subbuffers 8 -- "$DEMO" 2000
	f=$(ls -S dmg | grep -v '^metadata$' | head -n 1)
	cut_midway "dmg/$f"
	n=$(dump_events dmg)
	conv dmg --to chrome -o dmg.json
	eq "status" "$CRC" 1
	eq "stderr lines" "$(wc -l <dmg.cerr)" 1
	$CHECK chrome dmg.json --events "$n" >dmg.chk 2>&1 || show dmg.chk
	[ "$n" -gt 100 ] || why "only $n events before the damage"
	grep -q '"complete": *false' dmg.json || why "otherData.complete is not false"
fi
finish "chrome: a trace damaged midway gives the events before it, valid JSON, status 1"

# ---- bad input ----------------------------------------------------------------------

# bad STATUS ARGS...: one line on stderr, that status, nothing on stdout.
bad() {
	local want=$1
	shift
	{ timeout -k 5 30 "$RT" convert "$@" >bad.out 2>bad.err; } 2>/dev/null
	local got=$?
	[ "$got" = "$want" ] || why "convert $*: status $got, want $want"
	[ "$(wc -l <bad.err)" = 1 ] || why "convert $*: $(wc -l <bad.err) lines on stderr"
	[ -s bad.out ] && why "convert $*: output on stdout"
}
begin
if have "$RT"; then
	mkdir -p notatrace
	bad 2
	bad 2 demo
	bad 2 demo --to
	bad 2 demo --to xml -o x.json
	bad 2 demo --to chrome --folded
	bad 2 demo --folded --weight kilos
	bad 2 demo --to chrome --weight bytes
	bad 2 demo --to sqlite
	bad 2 demo other --folded
	bad 2 demo --frobnicate
	bad 1 nosuchdir --to chrome -o x.json
	bad 1 notatrace --to chrome -o x.json
	bad 1 demo --to chrome -o nosuchdir/x.json
	bad 1 demo --folded
	[ -e x.json ] && why "x.json created"
fi
finish "bad arguments and input: one line, status 2 (usage) or 1"

# ---- bounded memory -----------------------------------------------------------------

# rss DIR: RSS = the highest resident set of converting DIR to /dev/null,
# in KiB; the status in CRC.
rss() {
	{ /usr/bin/time -f '%M' -o "$1.rss" timeout -k 5 300 "$RT" convert "$1" --to chrome -o /dev/null \
		2>"$1.cerr"; } 2>/dev/null
	CRC=$?
	RSS=$(tail -n 1 "$1.rss")
	eq "convert $1: status" "$CRC" 0
}
begin
if have "$RT" "$PROGS/busy" /usr/bin/time; then
	rec small --buffer-size 32M -- "$PROGS/busy" 200000
	rec huge --buffer-size 32M -- "$PROGS/busy" 2000000
	eq "events of the huge trace" "$(dump_events huge)" 2000000
	rss small
	a=$RSS
	rss huge
	b=$RSS
	if [ -n "$a" ] && [ -n "$b" ]; then
		[ "$b" -lt 65536 ] || why "2M events: max RSS $b KiB (at most 64 MiB)"
		[ "$b" -lt $((2 * a + 4096)) ] || why "max RSS $a KiB for 200k events, $b KiB for 2M: it grows"
	else
		why "no RSS measured ('$a', '$b')"
	fi
	rm -rf small huge
fi
finish "chrome: 2M events convert in bounded memory"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
