#!/bin/bash
# mem_sample_cli.sh - allocation sampling through the command line and its
# consumers: `record --mem --sample BYTES --sample-seed N` and `mem
# --sample` on tests/e2e/progs/memsample.c (100 MB allocated from one call
# site in blocks freed at once, 50 MB kept alive from another), at a mean
# of 256 KiB and seed 1: `ringtrace report --json` and Debian's pprof
# (-raw, -top) show each figure within 15% of the truth, say they are
# estimates and at what rate; the report of a sampled aggregate block
# shows the exact per-site counts exactly and the estimate rows scaled,
# symbolised; SQLite's weight column and the Chrome heap counter
# estimate the same; `ringtrace top` marks its rows exact and estimate;
# a sampled trace with no allocations converts to a valid
# empty profile that still names its rate; bad values and -p are refused
# with one line, status 2, nothing recorded.
#
#   tests/e2e/mem_sample_cli.sh [BUILD_DIR]     (MEM_PROGS_BUILD: as mem.sh)
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup mem_sample_cli "${1:-build}"
PB=${MEM_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
MS=$PB/tests/e2e/memsample
export RINGTRACE_MALLOC_LIB=$PB/lib/libringtrace-malloc.so
unset RINGTRACE_MEM_SAMPLE RINGTRACE_MEM_SAMPLE_SEED
LIM=120
trap 'cd / && rm -rf "$T"' EXIT
# Debian's pprof, as tests/e2e/pprof.sh builds it (once per build dir).
PPROF=$PB/tests/pprof/pprof
[ -x "$PPROF" ] || PPROF=$BUILD/tests/pprof/pprof
export PPROF_TMPDIR=$T HOME=$T

# val FILE KEY: the value of "KEY value" in FILE (the program's output).
val() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# near WHAT GOT WANT: GOT within 15% of WANT.
near() {
	python3 -c 'import sys; g, w = map(float, sys.argv[1:]); sys.exit(0 if w > 0 and abs(g - w) <= w * 0.15 else 1)' \
		"$2" "$3" || why "$1: estimated '$2', true $3: more than 15% off"
}

# row FILE FUNCTION KEY [ESTIMATE]: KEY of the report's JSON row whose name
# starts with FUNCTION+ (and whose "estimate" is ESTIMATE when given).
row() {
	python3 - "$@" <<'EOF'
import json, sys
f, fn, key = sys.argv[1:4]
est = sys.argv[4] if len(sys.argv) > 4 else None
for r in json.load(open(f))["rows"]:
    if r["name"].startswith(fn + "+") and (est is None or str(r.get("estimate")).lower() == est):
        print(r[key])
        break
EOF
}
tot() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["totals"][sys.argv[2]])' "$1" "$2"; }

# raw PROFILE FUNCTION INDEX: the sum of sample value INDEX (0
# alloc_objects .. 3 inuse_space) over the samples whose leaf is FUNCTION,
# from `pprof -raw`.
raw() {
	timeout -k 5 $LIM "$PPROF" -symbolize=none -raw "$1" >"$T/raw.out" 2>"$T/raw.err" || { echo "pprof-failed"; return; }
	python3 - "$T/raw.out" "$2" "$3" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
fn, idx = sys.argv[2], int(sys.argv[3])
loc, samples, sec = {}, [], None
for l in lines:
    if l in ("Samples:", "Locations", "Mappings"):
        sec = l
        continue
    if sec == "Samples:":
        m = re.match(r"^\s*([0-9 ]+):\s*([0-9 ]*)$", l)
        if m:
            samples.append((list(map(int, m.group(1).split())), m.group(2).split()))
    elif sec == "Locations":
        m = re.match(r"^\s*(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", l)
        if m:
            loc[m.group(1)] = m.group(2)
print(sum(v[idx] for v, locs in samples if locs and loc.get(locs[0]) == fn))
EOF
}

# ---- bad values: one line naming the option and the value, status 2 --------------
begin
if have "$MS" "$RINGTRACE_MALLOC_LIB"; then
	for v in 0 -1 -262144 abc 12Q 1.5K 99999999999999999999 2T ''; do
		timeout -k 5 $LIM "$RT" record --mem --sample "$v" -o bad -- "$MS" one >bad.out 2>bad.err
		eq "record --sample '$v': status" "$?" 2
		eq "record --sample '$v': message" "$(cat bad.err)" \
			"ringtrace record: bad --sample '$v' (mean bytes between samples, 1 to 1024G, such as 512K)"
		[ -e bad ] && why "record --sample '$v' recorded"
		timeout -k 5 $LIM "$RT" mem --sample "$v" -o bad -- "$MS" one >bad.out 2>bad.err
		eq "mem --sample '$v': status" "$?" 2
		eq "mem --sample '$v': message" "$(cat bad.err)" \
			"ringtrace mem: bad --sample '$v' (mean bytes between samples, 1 to 1024G, such as 512K)"
		[ -e bad ] && why "mem --sample '$v' recorded"
		rm -rf bad
	done
	for v in x -1 0x 18446744073709551616 1e3; do
		timeout -k 5 $LIM "$RT" record --mem --sample 1K --sample-seed "$v" -o bad -- "$MS" one >bad.out 2>bad.err
		eq "--sample-seed '$v': status" "$?" 2
		eq "--sample-seed '$v': message" "$(cat bad.err)" \
			"ringtrace record: bad --sample-seed '$v' (a 64-bit number, decimal or 0x hexadecimal)"
	done
	timeout -k 5 $LIM "$RT" record -p 1 --sample 512K -o bad >bad.out 2>bad.err
	eq "-p --sample: status" "$?" 2
	eq "-p --sample: lines" "$(wc -l <bad.err)" 1
	grep -q "^ringtrace record: --sample cannot apply with -p" bad.err || { why "-p --sample:"; show bad.err; }
	timeout -k 5 $LIM "$RT" record --sample 512K -o bad -- "$MS" one >bad.out 2>bad.err
	eq "--sample without --mem: status" "$?" 2
	grep -q "^ringtrace record: --sample and --sample-seed sample allocations: they go with --mem$" bad.err ||
		{ why "--sample without --mem:"; show bad.err; }
	[ -e bad ] && why "a refused option recorded"
fi
finish "bad --sample/--sample-seed values, -p, no --mem: one line naming the option and value, status 2, nothing recorded"

# ---- the event log at 256 KiB: report and pprof within 15% ---------------------------
begin
if have "$MS" "$RINGTRACE_MALLOC_LIB"; then
	timeout -k 5 $LIM "$RT" record -q --mem --stacks --sample 256K --sample-seed 1 -o s1 -- "$MS" one >s1.out 2>s1.err
	eq "record status" "$?" 0
	"$RT" dump s1 2>/dev/null | grep -q ': mem:sampling: mean=262144 seed=1 ' ||
		why "the option did not reach the program (no mem:sampling with mean 262144, seed 1)"
	timeout -k 5 $LIM "$RT" report --json s1 >s1.json 2>s1.rerr || { why "report --json failed"; show s1.rerr; }
	eq "sampled, mean" "$(tot s1.json sampled) $(tot s1.json sample_mean)" "True 262144"
	eq "errors, unmatched frees" "$(tot s1.json errors) $(tot s1.json unmatched_frees)" "0 0"
	near "churn bytes allocated (report)" "$(row s1.json churn_alloc bytes_requested)" "$(val s1.out churn_bytes)"
	near "churn allocations (report)" "$(row s1.json churn_alloc allocations)" "$(val s1.out churn_n)"
	near "churn frees (report)" "$(row s1.json churn_alloc frees)" "$(val s1.out churn_n)"
	near "kept bytes allocated (report)" "$(row s1.json keep_alloc bytes_requested)" "$(val s1.out keep_bytes)"
	near "kept bytes alive (report)" "$(row s1.json keep_alloc leaked_bytes)" "$(val s1.out live_keep_bytes)"
	near "kept blocks alive (report)" "$(row s1.json keep_alloc leaked_blocks)" "$(val s1.out keep_n)"
	eq "churn bytes alive (report)" "$(row s1.json churn_alloc leaked_bytes)" 0
	timeout -k 5 $LIM "$RT" report s1 >s1.txt 2>&1
	grep -q '^SAMPLED: .*estimated from a sample of one allocation per 256 KiB on average' s1.txt ||
		{ why "the text report does not say it estimates, nor the rate"; show s1.txt 5; }
	timeout -k 5 $LIM "$RT" report --html -o s1.html s1 >/dev/null 2>&1
	grep -q '<p class="warn" id="sampled">Sampled: .*estimated from a sample of one allocation per 256 KiB' s1.html ||
		why "the HTML report does not say it estimates, nor the rate"
fi
finish "record --mem --sample 256K --sample-seed 1: report --json within 15% per site; JSON, text and HTML say sampled and the rate"

begin
if [ ! -x "$PPROF" ]; then
	why "no pprof in $PPROF (tests/e2e/pprof.sh builds it)"
elif have "$MS"; then
	timeout -k 5 $LIM "$RT" convert s1 --to pprof -o s1.pb.gz >s1.cout 2>s1.cerr
	eq "convert status" "$?" 0
	near "churn alloc_space (pprof)" "$(raw s1.pb.gz churn_alloc 1)" "$(val s1.out churn_bytes)"
	near "churn alloc_objects (pprof)" "$(raw s1.pb.gz churn_alloc 0)" "$(val s1.out churn_n)"
	near "kept alloc_space (pprof)" "$(raw s1.pb.gz keep_alloc 1)" "$(val s1.out keep_bytes)"
	near "kept inuse_space (pprof)" "$(raw s1.pb.gz keep_alloc 3)" "$(val s1.out live_keep_bytes)"
	near "kept inuse_objects (pprof)" "$(raw s1.pb.gz keep_alloc 2)" "$(val s1.out keep_n)"
	eq "churn inuse_space (pprof)" "$(raw s1.pb.gz churn_alloc 3)" 0
	grep -q '^Period: 262144$' "$T/raw.out" || { why "the period is not the sampling mean"; show "$T/raw.out" 6; }
	grep -q '^Comment: sampled: one allocation per 262144 bytes' "$T/raw.out" || why "no comment with the rate"
	# -top of the kept bytes: keep_alloc's flat, in bytes.
	timeout -k 5 $LIM "$PPROF" -symbolize=none -top -nodefraction=0 -unit=B -sample_index=inuse_space s1.pb.gz \
		>"$T/top.out" 2>"$T/top.err" || { why "pprof -top failed"; show "$T/top.err"; }
	near "kept inuse_space (pprof -top)" \
		"$(awk '$NF == "keep_alloc" { sub(/B$/, "", $1); print $1; exit }' "$T/top.out")" "$(val s1.out live_keep_bytes)"
fi
finish "pprof -raw/-top of the sampled trace: the four types scaled within 15%, the period and comment give the rate"

# ---- SQLite and Chrome: the weights and the estimated heap ---------------------------------
begin
if have "$MS"; then
	timeout -k 5 $LIM "$RT" convert s1 --to sqlite -o s1.db >s1.qout 2>s1.qerr || { why "convert --to sqlite failed"; show s1.qerr; }
	q() { python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' s1.db "$1"; }
	near "kept bytes allocated (SQLite, sum(size * weight))" \
		"$(q "SELECT sum(a.size * a.weight) FROM allocations a JOIN sites s USING (site) WHERE s.function = 'keep_alloc'")" \
		"$(val s1.out keep_bytes)"
	near "kept bytes alive (SQLite)" \
		"$(q "SELECT sum(a.size * a.weight) FROM allocations a JOIN sites s USING (site) WHERE s.function = 'keep_alloc' AND a.ts_free IS NULL")" \
		"$(val s1.out live_keep_bytes)"
	timeout -k 5 $LIM "$RT" convert s1 --to chrome -o s1.chrome.json >/dev/null 2>s1.cherr || { why "convert --to chrome failed"; show s1.cherr; }
	near "heap at exit (Chrome counter)" "$(python3 -c '
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "C" and e.get("name") == "heap requested"]
print(list(ev[-1]["args"].values())[0])' s1.chrome.json)" "$(val s1.out live_keep_bytes)"
fi
finish "SQLite (a weight per row) and the Chrome heap counter of the sampled trace: within 15%"

# ---- the aggregate block: exact rows exact, estimate rows scaled -----------------------
begin
if have "$MS" "$RINGTRACE_MALLOC_LIB"; then
	timeout -k 5 $LIM "$RT" record -q --mem --aggregate --sample 256K --sample-seed 1 -o a1 -- "$MS" one >a1.out 2>a1.err
	eq "record status" "$?" 0
	timeout -k 5 $LIM "$RT" report --json a1 >a1.json 2>a1.rerr || { why "report --json failed"; show a1.rerr; }
	eq "exact churn allocations" "$(row a1.json churn_alloc allocations false)" "$(val a1.out churn_n)"
	eq "exact churn bytes" "$(row a1.json churn_alloc bytes_requested false)" "$(val a1.out churn_bytes)"
	eq "exact kept allocations" "$(row a1.json keep_alloc allocations false)" "$(val a1.out keep_n)"
	near "estimated churn allocations" "$(row a1.json churn_alloc allocations true)" "$(val a1.out churn_n)"
	near "estimated kept bytes alive" "$(row a1.json keep_alloc leaked_bytes true)" "$(val a1.out live_keep_bytes)"
	near "estimated kept bytes alive (total)" "$(tot a1.json leaked_bytes)" "$(val a1.out live_keep_bytes)"
	timeout -k 5 $LIM "$RT" report a1 >a1.txt 2>&1
	grep -q '^ *[0-9]* .* keep_alloc+0x[0-9a-f]* (.*) (estimate) \[malloc\]$' a1.txt ||
		{ why "no symbolised estimate row of keep_alloc"; show a1.txt 30; }
	grep -q '^ *[0-9]* .* churn_alloc+0x[0-9a-f]* (.*) (exact) \[malloc\]$' a1.txt ||
		{ why "no exact row of churn_alloc"; show a1.txt 30; }
	grep -q '^SAMPLED: ' a1.txt || why "the aggregate report does not say it is sampled"
fi
finish "report of a sampled aggregate block: exact per-site counts exact, estimate rows scaled and symbolised"

# ---- ringtrace top of a sampled program ------------------------------------------------------
begin
MP=$PB/tests/e2e/memprog
if have "$MP" "$RINGTRACE_MALLOC_LIB"; then
	# A mean of 1 byte samples every block (weight 1): the estimate rows
	# are then the exact figures. memprog hold: 100 blocks of 1000 bytes
	# held until SIGUSR2 (as in mem_agg.sh, on one CPU).
	taskset -c 0 "$RT" record -q --mem --aggregate --sample 1 -o h1 -- "$MP" hold 100 1000 >h1.out 2>h1.err &
	rec=$!
	HOLD_PID=$(holding h1.out)
	if [ -z "$HOLD_PID" ]; then
		why "the program never said it holds its blocks"
		show h1.err
	else
		timeout -k 5 $LIM "$RT" top "$HOLD_PID" -n 1 >top.out 2>top.err
		eq "top status" "$?" 0
		read -r live blocks _ <<<"$(grep 'hold_blocks.* (estimate)$' top.out)"
		eq "top: hold_blocks estimate row: live blocks" "$live $blocks" "100000 100"
		read -r _ _ _ allocs frees _ <<<"$(grep 'hold_blocks.* (exact)$' top.out)"
		eq "top: hold_blocks exact row: allocs frees" "$allocs $frees" "100 0"
		grep -q '^  sampled: .*one allocation per 1 bytes on average' top.out || { why "top does not say it is sampled"; show top.out; }
		kill -USR2 "$HOLD_PID"
	fi
	wait "$rec"
fi
finish "ringtrace top of a sampled program: exact rows and estimate rows, symbolised, marked"

# ---- no allocations: a valid empty profile with the rate ----------------------------------
begin
if [ -x "$PPROF" ] && have "$MS" "$RINGTRACE_MALLOC_LIB"; then
	# At a mean of 1024G, 150 MB make no sample (probability 1e-4; the
	# seed fixes it): a sampled trace without allocations.
	timeout -k 5 $LIM "$RT" record -q --mem --sample 1024G --sample-seed 7 -o e1 -- "$MS" one >e1.out 2>&1
	eq "record status" "$?" 0
	timeout -k 5 $LIM "$RT" convert e1 --to pprof -o e1.pb.gz >e1.cout 2>e1.cerr
	eq "convert status" "$?" 0
	grep -q "e1 has no allocations: wrote an empty profile" e1.cerr || { why "message:"; show e1.cerr; }
	timeout -k 5 $LIM "$PPROF" -symbolize=none -raw e1.pb.gz >"$T/e.out" 2>"$T/e.err" ||
		{ why "pprof cannot read the empty profile"; show "$T/e.err"; }
	grep -q '^Period: 1099511627776$' "$T/e.out" || { why "the empty sampled profile does not give its rate"; show "$T/e.out" 8; }
	grep -q '^alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes$' "$T/e.out" ||
		why "not the four sample types"
fi
finish "a sampled trace without allocations: a valid empty pprof profile, with its rate"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
