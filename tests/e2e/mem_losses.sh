#!/bin/bash
# mem_losses.sh - a report never presents as fact what a loss of events
# may have caused, and a forked child's frees of its parent's blocks are
# no errors (docs/mem.md, "Lost events" and "Children"):
#   1. a synthetic trace with a known loss window (tests/tools/mem_trace_gen
#      --losses: 3 events discarded between the end of its first packet
#      and the end of its second): each leak and error is certain or
#      possible exactly as the rule says, in the JSON, the text and the
#      HTML report, with the totals;
#   2. a real lossy recording: two threads of malloc/free pairs
#      (tests/e2e/progs/mempairs.c, which leaks nothing and makes no
#      error) under `record --mem --drop` with 64 KiB buffers (without
#      --drop the writers wait and nothing is lost): events are lost,
#      and no leak in worker() and no error is presented as certain;
#   3. forked children: the synthetic child trace (mem_trace_gen --fork)
#      and a real one (tests/e2e/progs/forkfree.c under --follow-fork):
#      frees and reallocs of blocks the child never allocated are counted
#      as inherited, not as errors; a double free in the child stays one.
#
#   tests/e2e/mem_losses.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup memlosses "${1:-build}"
trap 'cd / && rm -rf "$T"' EXIT
PB=${MEM_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
export RINGTRACE_MALLOC_LIB=$PB/lib/libringtrace-malloc.so
GEN=$BUILD/tests/tools/mem_trace_gen
TO=120

# jq_ JSON EXPR: a Python expression on the report `r` (the JSON object).
jq_() {
	python3 - "$1" "$2" <<'PYEOF' 2>&1
import json, re, sys
r = json.load(open(sys.argv[1]))
def fn(s):
    # a site's function: "site_unk_late+0x1 (file:line)" -> site_unk_late
    return re.sub(r"\+0x.*", "", s)
print(eval(sys.argv[2]))
PYEOF
}

# ---- 1. a known loss window -------------------------------------------------

begin
if have "$RT" "$GEN"; then
	"$GEN" "$T/loss.t" --losses >"$T/gen.out" 2>&1 || { why "mem_trace_gen --losses failed"; show "$T/gen.out"; }
	timeout $TO "$RT" report "$T/loss.t" --json --top 0 >"$T/loss.json" 2>"$T/loss.err" || { why "report --json failed"; show "$T/loss.err"; }
	eq "totals: lost leaked_blocks leaked_blocks_possible leaked_bytes leaked_bytes_possible errors errors_possible" \
		"$(jq_ "$T/loss.json" '" ".join(str(r["totals"][k]) for k in ("lost_events", "leaked_blocks", "leaked_blocks_possible", "leaked_bytes", "leaked_bytes_possible", "errors", "errors_possible"))')" \
		"3 2 1 300 200 6 3"
	# Leaks: the block allocated before the loss window is possible, the
	# one after it certain.
	eq "rows with leaks: name leaked possible" \
		"$(jq_ "$T/loss.json" '"; ".join("%s %d %d" % (fn(x["name"]), x["leaked_blocks"], x["leaked_blocks_possible"]) for x in r["rows"] if x["leaked_blocks"])')" \
		"site_leak_early 1 1; site_leak_late 1 0"
	# Errors: an unknown free before the window is certain, after it
	# possible; a double free or mismatch whose block's life crosses the
	# window possible, one after it certain.
	eq "errors: kind site possible" \
		"$(jq_ "$T/loss.json" '"; ".join(sorted("%s %s %s" % (e["kind"], fn(e["again_site"] or e["free_site"]), e["possible"]) for e in r["errors"]))')" \
		"double free site_df2_again False; double free site_df_again True; free of an unknown pointer site_unk_early False; free of an unknown pointer site_unk_late True; mismatched free site_mm2_free False; mismatched free site_mm_free True"
fi
finish "a known loss window: leaks and errors certain or possible exactly as the rule says (JSON), with the totals"

begin
if [ -s "$T/loss.t/stream_0" ]; then
	timeout $TO "$RT" report "$T/loss.t" --top 0 >"$T/loss.txt" 2>&1 || { why "report failed"; show "$T/loss.txt"; }
	grep -q '^  leaked at exit       300 bytes in 2 blocks: 100 bytes in 1 blocks certain, 200 bytes in 1 blocks possible (events lost after their allocation)$' "$T/loss.txt" ||
		{ why "totals: no certain/possible leaks line"; show "$T/loss.txt" 40; }
	grep -q '^  errors               6: 3 certain, 3 possible (events lost)$' "$T/loss.txt" || why "totals: no certain/possible errors line"
	# Each leak under its own heading.
	sed -n '/^Leaks:/,/^$/p' "$T/loss.txt" >"$T/certain.txt"
	sed -n '/^Possible leaks:/,/^$/p' "$T/loss.txt" >"$T/possible.txt"
	grep -q 'site_leak_late' "$T/certain.txt" && ! grep -q 'site_leak_early' "$T/certain.txt" || { why "certain leaks:"; show "$T/certain.txt"; }
	grep -q 'site_leak_early' "$T/possible.txt" && ! grep -q 'site_leak_late' "$T/possible.txt" || { why "possible leaks:"; show "$T/possible.txt"; }
	# An error line says "possible (events lost)" when it is, only then.
	for s in site_unk_late site_df_again site_mm_free; do
		grep -q "^    1x possible (events lost), first 0x[0-9a-f]*: .*$s+" "$T/loss.txt" || why "the error at $s is not marked possible"
	done
	for s in site_unk_early site_df2_again site_mm2_free; do
		grep -q "^    1x, first 0x[0-9a-f]*: .*$s+" "$T/loss.txt" || why "the error at $s is not shown as certain"
	done
	timeout $TO "$RT" report "$T/loss.t" --html -o "$T/loss.html" >"$T/html.err" 2>&1 || { why "report --html failed"; show "$T/html.err"; }
	grep -q '<tr><td>errors</td><td>6: 3 certain, 3 possible (events lost)</td></tr>' "$T/loss.html" || why "HTML totals: no certain/possible errors"
	grep -q '<tr><td>leaked at exit</td><td>300 bytes in 2 blocks: 100 bytes in 1 blocks certain, 200 bytes in 1 blocks possible' "$T/loss.html" || why "HTML totals: no certain/possible leaks"
	eq "HTML error rows marked possible" "$(grep -c '<tr><td>[a-z ]* <span class="possible">possible (events lost)</span></td>' "$T/loss.html")" 3
	grep -q '<td class="n">200 <span class="possible">(200 possible)</span></td><td class="n">1 <span class="possible">(1 possible)</span></td>' "$T/loss.html" ||
		why "HTML rows: the possible leak of site_leak_early is not marked"
fi
finish "a known loss window: the text and HTML report show certain and possible leaks and errors apart"

# ---- 2. a real lossy recording ------------------------------------------------

begin
if have "$RT" "$PB/tests/e2e/mempairs"; then
	lost=0
	# Small buffers and two threads at full speed lose events on any
	# machine; a run that lost none is tried again (twice at most).
	for try in 1 2 3; do
		rm -rf "$T/pairs.t"
		timeout -k 5 $TO "$RT" record --mem --drop --stacks --buffer-size 64K -o "$T/pairs.t" -- "$PB/tests/e2e/mempairs" 2 300000 \
			>"$T/pairs.out" 2>&1 || { why "record failed"; show "$T/pairs.out"; break; }
		timeout $TO "$RT" report "$T/pairs.t" --by function --json --top 0 >"$T/pairs.json" 2>"$T/pairs.err" || { why "report failed"; show "$T/pairs.err"; break; }
		lost=$(jq_ "$T/pairs.json" 'r["totals"]["lost_events"]')
		[ "$lost" -gt 0 ] 2>/dev/null && break
	done
	if [ "$lost" -gt 0 ] 2>/dev/null; then
		# The program leaks nothing and makes no error: whatever the
		# report finds in worker() and every error comes of the loss.
		eq "worker: leaked blocks not possible (certain)" \
			"$(jq_ "$T/pairs.json" 'sum(x["leaked_blocks"] - x["leaked_blocks_possible"] for x in r["rows"] if x["name"] == "worker")')" 0
		eq "errors not possible (certain)" "$(jq_ "$T/pairs.json" 'r["totals"]["errors"] - r["totals"]["errors_possible"]')" 0
		eq "error entries marked certain" "$(jq_ "$T/pairs.json" 'sum(1 for e in r["errors"] if not e["possible"])')" 0
		timeout $TO "$RT" report "$T/pairs.t" --top 0 >"$T/pairs.txt" 2>&1
		grep -q '^  errors  .*: 0 certain, ' "$T/pairs.txt" || { why "text totals: errors not all possible"; show "$T/pairs.txt" 40; }
		sed -n '/^Leaks:/,/^$/p' "$T/pairs.txt" | grep -q 'worker' && why "text: a leak in worker() under 'Leaks:' (certain)"
		echo "# lost $lost events; worker: $(jq_ "$T/pairs.json" '[(x["leaked_blocks"], x["leaked_blocks_possible"]) for x in r["rows"] if x["name"] == "worker"]') leaked (possible), errors $(jq_ "$T/pairs.json" 'r["totals"]["errors"]')"
	else
		why "no event lost in 3 runs with 64 KiB buffers: nothing to check"
	fi
fi
finish "a lossy recording of two threads of malloc/free pairs: no leak of theirs and no error presented as certain"

# ---- 3. forked children ---------------------------------------------------------

begin
if have "$RT" "$GEN"; then
	"$GEN" "$T/fork.t" --fork >"$T/genf.out" 2>&1 || { why "mem_trace_gen --fork failed"; show "$T/genf.out"; }
	timeout $TO "$RT" report "$T/fork.t" --json >"$T/fork.json" 2>"$T/fork.err" || { why "report failed"; show "$T/fork.err"; }
	eq "inherited_frees errors" "$(jq_ "$T/fork.json" '"%d %d" % (r["totals"]["inherited_frees"], r["totals"]["errors"])')" "2 1"
	eq "errors" "$(jq_ "$T/fork.json" '[(e["kind"], fn(e["again_site"])) for e in r["errors"]]')" "[('double free', 'site_df_again')]"
	timeout $TO "$RT" report "$T/fork.t" >"$T/fork.txt" 2>&1
	grep -q '^  inherited frees      2 (blocks of the parent, allocated before the fork)$' "$T/fork.txt" || { why "text: no inherited frees line"; show "$T/fork.txt" 20; }
	# The same trace without the env's ringtrace_follow is no child's:
	# the two frees are errors again.
	"$GEN" "$T/nofork.t" --fork >/dev/null 2>&1
	sed -i 's/ringtrace_follow = "fork"/ringtrace_follow = ""/' "$T/nofork.t/metadata"
	timeout $TO "$RT" report "$T/nofork.t" --json >"$T/nofork.json" 2>&1
	eq "not a child: inherited_frees errors" "$(jq_ "$T/nofork.json" '"%d %d" % (r["totals"]["inherited_frees"], r["totals"]["errors"])')" "0 3"
fi
finish "a forked child's trace (synthetic): frees and reallocs of pointers it never allocated are inherited, not errors"

begin
if have "$RT" "$PB/tests/e2e/forkfree"; then
	timeout -k 5 $TO "$RT" record --mem --follow-fork -o "$T/ff.t" -- "$PB/tests/e2e/forkfree" >"$T/ff.out" 2>&1 || { why "record failed"; show "$T/ff.out"; }
	child=$(ls -d "$T"/ff.t/children/*-forkfree 2>/dev/null | head -n 1)
	if [ -z "$child" ]; then
		why "no child trace in ff.t/children"
		show "$T/ff.out"
	else
		timeout $TO "$RT" report "$child" --json >"$T/ffc.json" 2>"$T/ffc.err" || { why "report failed"; show "$T/ffc.err"; }
		eq "child: inherited_frees errors allocations frees leaked_blocks" \
			"$(jq_ "$T/ffc.json" '" ".join(str(r["totals"][k]) for k in ("inherited_frees", "errors", "allocations", "frees", "leaked_blocks"))')" "4 0 2 2 0"
		timeout $TO "$RT" report "$T/ff.t" --json >"$T/ffp.json" 2>&1
		eq "parent: inherited_frees errors leaked_blocks" \
			"$(jq_ "$T/ffp.json" '" ".join(str(r["totals"][k]) for k in ("inherited_frees", "errors", "leaked_blocks"))')" "0 0 0"
	fi
fi
finish "a real forked child (--follow-fork) freeing and reallocating its parent's blocks: 4 inherited frees, no error"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
