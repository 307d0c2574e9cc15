#!/bin/bash
# convert_sqlite.sh - `ringtrace convert DIR --to sqlite -o FILE`, end to
# end: an allocation trace (memprog pattern under record --mem --stacks),
# a plain one (the demo) and one with losses (busy, 64K overwrite buffer)
# are converted, then the queries of docs/convert.md ("SQLite"), run as
# written there with python3's sqlite3 module, must give exactly the
# numbers of `ringtrace report --json --top 0` (by call site and by
# function: allocations, failed, frees, bytes, leaks; totals; errors; the
# stack of the biggest leak; also on tests/tools/mem_trace_gen's trace,
# which holds the errors a real program cannot make), the event counts of `ringtrace dump`, its
# threads and losses, and the frames of `ringtrace stackmap --json`. Bad
# input (no such trace, not a trace, an output that cannot be created, a
# directory as output, a trace damaged midway) gives one line and a
# non-zero status; an existing output is replaced; no temporary is left.
#
#   tests/e2e/convert_sqlite.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
ulimit -c 0
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup convert-sqlite "${1:-build}"
LIM=120
cleanup() { cd / && rm -rf "$T"; }
trap cleanup EXIT

# rec DIR RECORD-ARGS...: `ringtrace record -o DIR`, status in RC.
rec() {
	local d=$1
	shift
	rm -rf "$d"
	{ timeout -k 5 $LIM "$RT" record -o "$d" "$@" >"$d.out" 2>"$d.err"; } 2>/dev/null
	RC=$?
}

# conv DIR DB: `ringtrace convert DIR --to sqlite -o DB`, status in CRC,
# stderr in DB.err.
conv() {
	{ timeout -k 5 $LIM "$RT" convert "$1" --to sqlite -o "$2" >"$2.out" 2>"$2.err"; } 2>/dev/null
	CRC=$?
}

# one_line FILE: FILE holds exactly one line, "ringtrace convert: ...".
one_line() {
	eq "lines on stderr" "$(wc -l <"$1")" 1
	grep -q '^ringtrace convert: ' "$1" || why "stderr does not start with 'ringtrace convert: ': $(head -c 200 "$1")"
}

# The checker: python3 check.py MODE DB DOC ARGS..., one "PASS name" or
# "FAIL name: why" line per check.
cat >check.py <<'EOF'
import json, re, sqlite3, subprocess, sys
from collections import Counter

mode, db, doc = sys.argv[1:4]
rt = sys.argv[4]
trace = sys.argv[5]

def queries(path):
    """The named queries of the SQLite section of docs/convert.md."""
    text = open(path).read()
    sec = text.split("## SQLite (`--to sqlite`)", 1)[1]
    out = {}
    for block in re.findall(r"```sql\n(.*?)```", sec, re.S):
        m = re.match(r"-- name: (\S+)\n", block)
        if m:
            out[m.group(1)] = block[m.end():]
    return out

Q = queries(doc)
con = sqlite3.connect(db)
con.row_factory = sqlite3.Row
results = []

def check(name, fails):
    results.append((name, fails))

def run(name):
    return [dict(r) for r in con.execute(Q[name])]

def sh(*args):
    return subprocess.run([rt] + list(args), capture_output=True, text=True, timeout=120).stdout

def dump_lines():
    return sh("dump", trace).splitlines()

LINE = re.compile(r"^\s*(.*)-(\d+|\?)\s+\[(\d+)\] \S+: (\S+):(?: |$)")

def events_check(lines):
    fails = []
    want = Counter()
    for l in lines:
        m = LINE.match(l)
        if m:
            want[m.group(4)] += 1
    got = {r["name"]: r["events"] for r in con.execute("SELECT name, events FROM event_classes")}
    for n, c in want.items():
        if got.get(n) != c:
            fails.append("%s: event_classes.events %s, dump %d" % (n, got.get(n), c))
    for r in con.execute("SELECT name, table_name, events FROM event_classes"):
        # A class without events has no table (table_name NULL).
        if r["table_name"] is None:
            c = 0
        else:
            (c,) = con.execute('SELECT count(*) FROM "%s"' % r["table_name"]).fetchone()
        if c != r["events"] or c != want.get(r["name"], 0):
            fails.append("%s: %d rows in %s, dump %d" % (r["name"], c, r["table_name"], want.get(r["name"], 0)))
    rate = Counter()
    for r in run("event-rate"):
        if r["second"] < 0:
            fails.append("event-rate: second %s" % r["second"])
        rate[r["name"]] += r["events"]
    if dict(rate) != dict(want):
        fails.append("event-rate sums %s, dump %s" % (dict(rate), dict(want)))
    if not want:
        fails.append("no event in the dump")
    check("event counts per table, event_classes and the event-rate query equal the dump's", fails)

    fails = []
    dthreads = set()
    for l in lines:
        m = LINE.match(l)
        if m and m.group(2) != "?":
            dthreads.add((int(m.group(2)), m.group(1).strip()))
    rows = set((r["tid"], r["comm"] or "<...>") for r in con.execute("SELECT tid, comm FROM threads WHERE events > 0"))
    if rows != dthreads:
        fails.append("threads %s, dump %s" % (sorted(rows), sorted(dthreads)))
    check("threads with events equal the dump's comm-tid pairs", fails)

def losses_check(lines, want_some):
    fails = []
    lost = Counter()
    for l in lines:
        m = re.match(r"^ringtrace: (\d+) (events?|packets?) lost on cpu (\d+)", l)
        if m:
            lost[("events" if m.group(2).startswith("event") else "packets", int(m.group(3)))] += int(m.group(1))
    got = Counter()
    for r in con.execute("SELECT kind, cpu, count FROM lost"):
        got[(r["kind"], r["cpu"])] += r["count"]
    if got != lost:
        fails.append("lost table %s, dump %s" % (dict(got), dict(lost)))
    if want_some and not got:
        fails.append("the lost table is empty")
    if not want_some and got:
        fails.append("losses in a trace without any")
    (ev,) = con.execute("SELECT value FROM metadata WHERE key = 'convert.lost_events'").fetchone()
    if ev != sum(v for k, v in lost.items() if k[0] == "events"):
        fails.append("metadata convert.lost_events %s" % ev)
    check("lost table equals the dump's loss lines" + (" (non-empty)" if want_some else " (empty)"), fails)

def report(*args):
    return json.loads(sh("report", trace, "--json", "--top", "0", *args))

KEYS = ["allocations", "failed", "frees", "bytes_requested", "bytes_allocated", "leaked_bytes", "leaked_blocks"]

def rows_equal(name, got, want, key):
    fails = []
    g = {r[key]: r for r in got}
    w = {r[key]: r for r in want}
    if set(g) != set(w):
        fails.append("keys only in the database: %s; only in the report: %s" %
                     (sorted(set(g) - set(w))[:5], sorted(set(w) - set(g))[:5]))
    for k in set(g) & set(w):
        for f in KEYS:
            if g[k][f] != w[k][f]:
                fails.append("%s %s: %s, report %s" % (k, f, g[k][f], w[k][f]))
    check(name, fails)

def mem_checks():
    rep = report()
    rows = run("report-rows")
    for r in rows:
        r["site"] = "0x%x" % r["site"]
    rows_equal("report-rows query = report --by callsite rows (%d sites)" % len(rows), rows, rep["rows"], "site")
    fails = [("site 0x%x named '%s', report '%s'" % (int(r["site"], 16), r["name"], w["name"]))
             for r in rows for w in rep["rows"] if w["site"] == r["site"] and w["name"] != r["name"]]
    check("sites.name = the report's site names", fails)

    fq = Q["report-rows"].replace("SELECT s.site, s.name,", "SELECT coalesce(s.function, s.name) AS name,") \
                         .replace("GROUP BY s.site", "GROUP BY coalesce(s.function, s.name)")
    frows = [dict(r) for r in con.execute(fq)]
    rows_equal("report-rows by coalesce(function, name) = report --by function rows (%d)" % len(frows),
               frows, report("--by", "function")["rows"], "name")

    fails = []
    t = run("totals")[0]
    for k in KEYS + ["cross_cpu_frees", "cross_thread_frees", "errors"]:
        if t[k] != rep["totals"][k]:
            fails.append("%s: %s, report %s" % (k, t[k], rep["totals"][k]))
    if not t["allocations"] or not t["errors"] or (mode == "mem" and not t["leaked_blocks"]):
        fails.append("the pattern should give allocations, leaks and errors: %s" % t)
    check("totals query = report totals (%d allocations, %d leaked, %d errors)" %
          (t["allocations"], t["leaked_blocks"], t["errors"]), fails)

    fails = []
    top = run("top-sites")
    byname = {w["name"]: w for w in rep["rows"]}
    wtop = sorted(rep["rows"], key=lambda w: (-w["bytes_requested"], -w["allocations"]))[:10]
    if [r["bytes"] for r in top] != [w["bytes_requested"] for w in wtop]:
        fails.append("bytes %s, report %s" % ([r["bytes"] for r in top], [w["bytes_requested"] for w in wtop]))
    for r in top:
        w = byname.get(r["name"])
        if not w or (w["allocations"], w["bytes_requested"]) != (r["allocations"], r["bytes"]):
            fails.append("%s: %s/%s, report %s" % (r["name"], r["allocations"], r["bytes"], w))
    check("top-sites query = the report's biggest rows", fails)

    fails = []
    leaks = set((r["name"], r["blocks"], r["bytes"]) for r in run("leaks"))
    wl = set((w["name"], w["leaked_blocks"], w["leaked_bytes"]) for w in rep["rows"] if w["leaked_blocks"])
    if leaks != wl or (mode == "mem" and not leaks):
        fails.append("leaks %s, report %s" % (sorted(leaks), sorted(wl)))
    check("leaks query = the report's leaking sites (%d)" % len(leaks), fails)

    fails = []
    rate = run("alloc-rate")
    if sum(r["allocations"] for r in rate) != t["allocations"] or any(r["second"] < 0 for r in rate):
        fails.append("alloc-rate %s" % rate)
    check("alloc-rate query sums to the allocations", fails)

    fails = []
    want = Counter()
    for e in rep["errors"]:
        want[e["kind"]] += e["count"]
    got = Counter({r[0]: r[1] for r in con.execute("SELECT kind, count(*) FROM errors GROUP BY kind")})
    if got != want:
        fails.append("errors %s, report %s" % (dict(got), dict(want)))
    if mode == "synthetic" and len(want) < 4:
        fails.append("the synthetic trace should hold 4 kinds of error: %s" % dict(want))
    check("errors by kind = the report's", fails)

    if mode == "synthetic":
        return

    fails = []
    smap = json.loads(sh("stackmap", trace, "--json"))["stacks"]
    dbst = {r["stack_id"]: r for r in con.execute("SELECT * FROM stacks")}
    if len(smap) != len(dbst) or not smap:
        fails.append("%d stacks, stackmap %d" % (len(dbst), len(smap)))
    nfun = 0
    for s in smap:
        fr = [dict(r) for r in con.execute("SELECT * FROM frames WHERE stack_id = ? ORDER BY level", (s["stack_id"],))]
        d = dbst.get(s["stack_id"])
        if not d or d["depth"] != s["depth"] or len(fr) != s["depth"]:
            fails.append("stack %d: depth %s/%d frames, stackmap %d" % (s["stack_id"], d and d["depth"], len(fr), s["depth"]))
            continue
        for f, w in zip(fr, s["frames"]):
            if "0x%x" % f["ip"] != w["addr"]:
                fails.append("stack %d level %d: ip 0x%x, stackmap %s" % (s["stack_id"], f["level"], f["ip"], w["addr"]))
            wf = w.get("sym", "").rsplit("+", 1)[0] if "sym" in w else None
            if wf != f["function"]:
                fails.append("stack %d level %d: function %s, stackmap %s" % (s["stack_id"], f["level"], f["function"], wf))
            nfun += f["function"] is not None
    if not nfun:
        fails.append("no frame symbolised")
    check("stacks and frames = stackmap --json (%d stacks, %d named frames)" % (len(smap), nfun), fails)

    fails = []
    srep = report("--by", "stack")
    big = sorted((r for r in srep["rows"] if r["leaked_bytes"]), key=lambda r: (-r["leaked_bytes"], r["stack_id"]))
    got = run("biggest-leak-stack")
    if not big or not got:
        fails.append("no leak by stack (report %d rows, query %d)" % (len(big), len(got)))
    else:
        sid = big[0]["stack_id"]
        s = [x for x in smap if x["stack_id"] == sid]
        (skip,) = con.execute("SELECT tracer_frames FROM stacks WHERE stack_id = ?", (sid,)).fetchone()
        want_ips = [f["addr"] for f in s[0]["frames"]][skip:] if s else None
        if ["0x%x" % r["ip"] for r in got] != want_ips:
            fails.append("frames %s, stackmap's stack %d from level %d: %s" %
                         (["0x%x" % r["ip"] for r in got], sid, skip, want_ips))
        # The capture passes the tracer's frames (tracer_frames 0 then);
        # stacks of older traces have them, and skip them by that column.
        if any((r["object"] or "").endswith("libringtrace-malloc.so") for r in got):
            fails.append("the tracer's frames are not left out (tracer_frames %d)" % skip)
    check("biggest-leak-stack query = the stack of the report's biggest leak", fails)

    fails = []
    meta = dict(con.execute("SELECT key, value FROM metadata"))
    if meta.get("procname") != "memprog" or not isinstance(meta.get("vpid"), int) or "hostname" not in meta:
        fails.append("metadata %s" % {k: meta.get(k) for k in ("procname", "vpid", "hostname")})
    check("metadata holds the env block", fails)

lines = dump_lines()
if mode in ("mem", "synthetic"):
    mem_checks()
    events_check(lines)
elif mode == "plain":
    events_check(lines)
    losses_check(lines, False)
    (n,) = con.execute("SELECT count(*) FROM allocations").fetchone()
    check("a trace without mem events has no allocations", [] if n == 0 else ["%d allocations" % n])
elif mode == "lossy":
    events_check(lines)
    losses_check(lines, True)
for name, fails in results:
    print(("PASS " + name) if not fails else ("FAIL " + name + ": " + " | ".join(fails[:8])))
EOF

# pycheck MODE DB TRACE: the checker's lines as ok / not ok.
pycheck() {
	local l
	python3 check.py "$1" "$2" "$REPO/docs/convert.md" "$RT" "$3" >"$2.py" 2>"$2.pyerr"
	[ -s "$2.py" ] || { notok "checker ran on $2" "$(tail -n 5 "$2.pyerr")"; return; }
	while IFS= read -r l; do
		case $l in
		PASS\ *) ok "$1: ${l#PASS }" ;;
		FAIL\ *) notok "$1: ${l#FAIL }" "${l#*: }" ;;
		esac
	done <"$2.py"
	[ -s "$2.pyerr" ] && notok "$1: checker errors" "$(tail -n 5 "$2.pyerr")"
}

# ---- an allocation trace ----------------------------------------------------------
begin
have "$PROGS/memprog" "$BUILD/lib/libringtrace-malloc.so" && {
	rec mem --mem --stacks -- "$PROGS/memprog" pattern
	eq "record status" "$RC" 0
	conv mem mem.db
	eq "convert status" "$CRC" 0
	[ -s mem.db.err ] && show mem.db.err
	[ -s mem.db ] || why "no mem.db"
	compgen -G '.mem.db.*.tmp' >/dev/null && why "a temporary .mem.db.*.tmp left behind"
}
finish "memprog pattern under record --mem --stacks converts"
[ -s mem.db ] && pycheck mem mem.db mem

# ---- allocation errors (tests/tools/mem_trace_gen) -----------------------------------------
begin
have "$BUILD/tests/tools/mem_trace_gen" && {
	rm -rf synth
	"$BUILD/tests/tools/mem_trace_gen" synth >synth.out 2>&1 || why "mem_trace_gen failed: $(tail -n 1 synth.out)"
	conv synth synth.db
	eq "convert status" "$CRC" 0
	[ -s synth.db.err ] && show synth.db.err
}
finish "a synthetic allocation trace with realloc errors, double and mismatched frees converts"
[ -s synth.db ] && pycheck synthetic synth.db synth

# ---- a plain trace -------------------------------------------------------------------
begin
have "$DEMO" && {
	rec demo -- "$DEMO" 300
	eq "record status" "$RC" 0
	conv demo demo.db
	eq "convert status" "$CRC" 0
	[ -s demo.db.err ] && show demo.db.err
}
finish "the demo converts"
[ -s demo.db ] && pycheck plain demo.db demo

# ---- losses ---------------------------------------------------------------------------
begin
have "$PROGS/busy" && {
	rec lossy --mode overwrite --buffer-size 64K --subbuffers 4 -- "$PROGS/busy" 200000 stop
	eq "record status" "$RC" 0
	grep -q ' [1-9][0-9]* lost' lossy.err || why "the recording lost nothing: $(tail -n 1 lossy.err)"
	conv lossy lossy.db
	eq "convert status" "$CRC" 0
}
finish "a trace with losses (busy, 64K overwrite buffer) converts"
[ -s lossy.db ] && pycheck lossy lossy.db lossy

# ---- outputs ---------------------------------------------------------------------------
begin
if [ -s demo.db ]; then
	echo junk >old.db
	conv demo old.db
	eq "status over an existing file" "$CRC" 0
	eq "tables of the replaced file" "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM event_classes").fetchone()[0] > 0)' old.db 2>&1)" True
	compgen -G '.old.db.*.tmp' >/dev/null && why "a temporary .old.db.*.tmp left behind"
else
	why "no demo trace"
fi
finish "an existing output file is replaced"

# ---- bad input ------------------------------------------------------------------------
begin
conv nosuchdir bad1.db
eq "status" "$CRC" 1
one_line bad1.db.err
[ -e bad1.db ] || compgen -G '.bad1.db.*.tmp' >/dev/null && why "an output was created"
finish "no such trace directory: one line, status 1, no file"

begin
mkdir -p empty
conv empty bad2.db
eq "status" "$CRC" 1
one_line bad2.db.err
[ -e bad2.db ] || [ -e bad2.db.tmp ] && why "an output was created"
finish "a directory without metadata: one line, status 1, no file"

begin
{ timeout -k 5 $LIM "$RT" convert demo --to sqlite -o nodir/x.db >out.txt 2>err.txt; } 2>/dev/null
eq "status" "$?" 1
one_line err.txt
[ -e nodir ] && why "nodir was created"
finish "an output in a missing directory: one line, status 1"

begin
mkdir -p adir
{ timeout -k 5 $LIM "$RT" convert demo --to sqlite -o adir >out.txt 2>err.txt; } 2>/dev/null
eq "status" "$?" 1
one_line err.txt
[ -e adir.tmp ] && why "adir.tmp left behind"
finish "a directory as the output: one line, status 1"

begin
if [ "$(id -u)" != 0 ]; then
	mkdir -p ro && chmod 555 ro
	{ timeout -k 5 $LIM "$RT" convert demo --to sqlite -o ro/x.db >out.txt 2>err.txt; } 2>/dev/null
	eq "status" "$?" 1
	one_line err.txt
	chmod 755 ro
	finish "an unwritable output directory: one line, status 1"
else
	ok "an unwritable output directory: skipped (root writes anywhere)"
fi

begin
if [ -d lossy ]; then
	rm -rf cut && cp -r lossy cut
	f=$(ls -S cut | grep -v metadata | grep -v '^stacks$' | head -n 1)
	cut_midway "cut/$f"
	conv cut cut.db
	eq "status" "$CRC" 1
	one_line cut.db.err
	n_all=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT value FROM metadata WHERE key=\"convert.events\"").fetchone()[0])' lossy.db 2>&1)
	n_cut=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT value FROM metadata WHERE key=\"convert.events\"").fetchone()[0])' cut.db 2>&1)
	[ "$n_cut" -gt 0 ] 2>/dev/null && [ "$n_cut" -lt "$n_all" ] 2>/dev/null ||
		why "events: damaged $n_cut, whole $n_all"
else
	why "no lossy trace"
fi
finish "a trace damaged midway: the events before it, one line, status 1"

# ---- size -------------------------------------------------------------------------------
begin
have "$PROGS/memprog" && {
	rec big --mem -- "$PROGS/memprog" spin 500000
	eq "record status" "$RC" 0
	s=$(date +%s%N)
	conv big big.db
	e=$(date +%s%N)
	eq "convert status" "$CRC" 0
	n=$(python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute("SELECT value FROM metadata WHERE key=\"convert.events\"").fetchone()[0], c.execute("SELECT count(*) FROM allocations").fetchone()[0])' big.db 2>&1)
	echo "# big trace: events, allocations = $n; converted in $(((e - s) / 1000000)) ms"
	[ $(((e - s) / 1000000)) -lt 60000 ] || why "took $(((e - s) / 1000000)) ms"
}
finish "a trace of a million events converts (time printed)"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
