#!/bin/bash
# report_html.sh - `ringtrace report DIR --html -o FILE.html` end to end:
# traces of tests/e2e/progs/memprog.c (pattern) and memcxx.cc recorded with
# `record --mem --stacks`, one aggregate-mode recording, and the plain
# example (examples/demo.c). Each page is checked with Python's html.parser
# (no external reference, only the tags the writer emits, so every name was
# escaped; the charts, tables and flame graphs are there; the rows, errors,
# peak and totals carry the figures of `report --json`; the event counts
# those of `ringtrace dump`), then opened in a headless Chromium: the
# screenshot is not blank, the page's script ran (it marks <body
# data-ok="1">) and logged nothing, a click on a header sorts its table.
# Bad input: --html without -o, an -o that cannot be written, --html with
# --json: one line, non-zero, no file left behind.
#
#   tests/e2e/report_html.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup report-html "${1:-build}"
PB=${MEM_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
MP=$PB/tests/e2e/memprog
MC=$PB/tests/e2e/memcxx
DEMO=$PB/examples/demo
export RINGTRACE_MALLOC_LIB=$PB/lib/libringtrace-malloc.so
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
LIM=120
cleanup() { cd / && rm -rf "$T"; }
trap cleanup EXIT

# The page checker: `page.py KIND HTML JSON_CALLSITE JSON_STACK`, KIND mem,
# agg or plain (then JSON_CALLSITE is `ringtrace dump`'s output). Prints
# one line per problem, nothing when the page is right.
cat >"$T/page.py" <<'EOF'
import html.parser, json, re, sys
from collections import Counter

kind, page = sys.argv[1], sys.argv[2]
raw = open(page, encoding="utf-8").read()
problems = []
def bad(msg):
    problems.append(msg)

ALLOWED = set("html head meta title style body h1 h2 p section table thead tbody tr th td span details "
              "summary ol li code svg line text polyline circle g rect script".split())

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []          # open elements: (tag, attrs)
        self.ids = {}
        self.tables = {}         # id -> list of rows (list of cell texts)
        self.heads = {}          # id -> header texts
        self.titles = {}         # svg id -> list of <title> texts in it
        self.points = {}         # polyline class -> number of points
        self.cell = None
        self.table = None
        self.svg = None
        self.title = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag not in ALLOWED:
            bad("unexpected tag <%s> (a name not escaped?)" % tag)
        for k, v in attrs:
            v = v or ""
            if k in ("src", "href", "xlink:href") and re.match(r"\s*(https?:|//|[a-z]+:)", v, re.I):
                bad("external reference %s=%s" % (k, v))
            if k in ("src", "href") and tag in ("script", "link", "img", "iframe"):
                bad("<%s %s=...>: the page must be one file" % (tag, k))
        if "id" in a:
            self.ids[a["id"]] = tag
        if tag == "table":
            self.table = a.get("id")
            self.tables[self.table] = []
            self.heads[self.table] = []
        elif tag == "tr" and self.table:
            self.tables[self.table].append([])
        elif tag in ("td", "th") and self.table:
            self.cell = [tag, ""]
        elif tag == "svg":
            self.svg = a.get("id")
            self.titles[self.svg] = []
        elif tag == "title" and self.svg:
            self.title = ""
        elif tag == "polyline":
            self.points[a.get("class", "")] = self.points.get(a.get("class", ""), 0) + len(a.get("points", "").split())
        if tag not in ("meta", "line", "polyline", "circle", "rect"):
            self.stack.append(tag)
    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell:
            t, text = self.cell
            if t == "th" and self.tables[self.table] and len(self.tables[self.table]) == 1:
                self.heads[self.table].append(text.strip())
            else:
                self.tables[self.table][-1].append(text.strip())
            self.cell = None
        elif tag == "table":
            self.table = None
        elif tag == "svg":
            self.svg = None
        elif tag == "title" and self.title is not None:
            self.titles[self.svg].append(self.title)
            self.title = None
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
    def handle_data(self, d):
        if self.cell:
            self.cell[1] += d
        if self.title is not None:
            self.title += d

p = Page()
p.feed(raw)
p.close()
if re.search(r"@import|url\(\s*['\"]?\s*(https?:|//)", raw, re.I):
    bad("@import or external url() in the page")
if '<script src' in raw.lower() or '<link' in raw.lower():
    bad("<script src> or <link> in the page")
if 'document.body.setAttribute(\'data-ok\'' not in raw:
    bad("no data-ok marker in the script")

def body(tid):
    rows = p.tables.get(tid)
    if rows is None:
        bad("no table #%s" % tid)
        return []
    return rows[1:]    # the first row is the header

def need(i, tag):
    if p.ids.get(i) != tag:
        bad("no <%s id=%s>" % (tag, i))

def root(svg):
    """The figures of the root frame of a flame graph."""
    for t in p.titles.get(svg, []):
        if t.startswith("all\n"):
            return int(t.split("\n")[1].split()[0])
    bad("flame graph %s has no root frame" % svg)
    return None

COLS = ["allocations", "frees", "bytes_requested", "bytes_allocated", "fragmentation_pct", "leaked_bytes",
        "leaked_blocks", "cross_cpu_frees", "cross_thread_frees"]

def same_rows(tid, rows_json):
    rows = body(tid)
    if len(rows) != len(rows_json):
        bad("#%s: %d rows, --json has %d" % (tid, len(rows), len(rows_json)))
        return
    for i, (hr, jr) in enumerate(zip(rows, rows_json)):
        want = [str(jr[c]) if c != "fragmentation_pct" else "%.2f" % jr[c] for c in COLS]
        if hr[:9] != want:
            bad("#%s row %d: %s, --json: %s" % (tid, i, hr[:9], want))
        name = hr[9]
        if not name.startswith(jr["name"] + " [") and not name.startswith(jr["name"]):
            bad("#%s row %d: name %r, --json: %r" % (tid, i, name[:80], jr["name"][:80]))
        elif "[" + jr["families"] + "]" not in name:
            bad("#%s row %d: families %r not in %r" % (tid, i, jr["families"], name[:120]))

if kind in ("mem", "agg"):
    js = json.load(open(sys.argv[3]))
    tot = js["totals"]
    for i, tag in (("totals", "section"), ("t-totals", "table"), ("t-sites", "table"), ("heap", "section"),
                   ("errors", "section"), ("flame-alloc-svg", "svg"), ("t-stacks", "table")):
        need(i, tag)
    same_rows("t-sites", js["rows"])
    if len(sys.argv) > 4:
        same_rows("t-stacks", json.load(open(sys.argv[4]))["rows"])
    kv = {r[0]: r[1] for r in p.tables.get("t-totals", []) if len(r) == 2}
    if kv.get("bytes requested") != str(tot["bytes_requested"]):
        bad("totals: bytes requested %r, --json %d" % (kv.get("bytes requested"), tot["bytes_requested"]))
    if not kv.get("peak heap", "").startswith("%d bytes requested, %d allocated" %
                                              (tot["peak_requested"], tot["peak_allocated"])):
        bad("totals: peak %r, --json %d/%d" % (kv.get("peak heap"), tot["peak_requested"], tot["peak_allocated"]))
    # The flame graph of the bytes allocated covers every allocation.
    if root("flame-alloc-svg") != tot["bytes_allocated"]:
        bad("flame-alloc root %r, --json bytes_allocated %d" % (root("flame-alloc-svg"), tot["bytes_allocated"]))
    # Errors: kind and count as --json has them.
    errs = Counter()
    for r in body("t-errors") if tot["errors"] else []:
        errs[r[0]] += int(r[1])
    want = Counter()
    for e in js["errors"]:
        want[e["kind"]] += e["count"]
    if errs != want:
        bad("errors %s, --json %s" % (dict(errs), dict(want)))
    if kind == "mem":
        need("events", "section")
        need("rate-chart", "svg")
        need("heap-chart", "svg")
        need("heap-peak", "g")
        need("flame-peak-svg", "svg")
        n = p.points.get("l-req", 0)
        if not 2 <= n <= 2000 or p.points.get("l-use", 0) != n:
            bad("heap chart: %d requested points, %d allocated (want 2..2000, equal)" % (n, p.points.get("l-use", 0)))
        # The blocks alive at the peak add up to the peak.
        if root("flame-peak-svg") != tot["peak_requested"]:
            bad("flame-peak root %r, --json peak_requested %d" % (root("flame-peak-svg"), tot["peak_requested"]))
        pk = " ".join(p.titles.get("heap-chart", []))
        if "peak: %d bytes requested, %d allocated" % (tot["peak_requested"], tot["peak_allocated"]) not in pk:
            bad("heap chart: peak marker %r" % pk[:200])
    else:
        if "heap-chart" in p.ids or "flame-peak-svg" in p.ids:
            bad("aggregate mode: a heap chart or a flame graph at the peak (counters have neither)")
else:
    need("rate-chart", "svg")
    need("t-events", "table")
    if "t-sites" in p.ids or "heap-chart" in p.ids:
        bad("a plain trace with allocation tables")
    # Counts per type as `ringtrace dump` prints the events.
    want = Counter()
    for line in open(sys.argv[3]):
        m = re.match(r"\s*\S+\s+\[\d+\]\s+[\d.]+:\s+(\S+):\s", line)
        if m:
            want[m.group(1)] += 1
    got = {r[1]: int(r[2]) for r in body("t-events")}
    if got != dict(want):
        bad("event counts %s, dump %s" % (got, dict(want)))
    if p.points.get("rate", 0) < 2:
        bad("rate chart without points")

for m in problems[:15]:
    print(m)
EOF

# The rendering checker: `png.py FILE` prints "ok" for a PNG of at least
# 640x480 that is not one colour (rows of one colour filter to the same
# bytes: a blank page has a handful of distinct rows, a page hundreds).
cat >"$T/png.py" <<'EOF'
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
if d[:8] != b"\x89PNG\r\n\x1a\n":
    print("not a PNG"); sys.exit()
pos, idat, w = 8, b"", 0
while pos < len(d):
    n, t = struct.unpack(">I4s", d[pos:pos + 8])
    c = d[pos + 8:pos + 8 + n]
    if t == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", c[:10])
    elif t == b"IDAT":
        idat += c
    pos += 12 + n
raw = zlib.decompress(idat)
bpp = {2: 3, 6: 4, 0: 1, 4: 2}.get(ctype, 4) * depth // 8
stride = 1 + w * bpp
rows = set(raw[i:i + stride] for i in range(0, len(raw), stride))
print("ok" if w >= 640 and h >= 480 and len(rows) > 50 else "blank? %dx%d, %d distinct rows" % (w, h, len(rows)))
EOF

# page KIND HTML JSON [JSON_STACKS]: the static checks.
page() {
	python3 "$T/page.py" "$@" >"$2.check" 2>&1 || why "page.py failed"
	while IFS= read -r l; do why "$l"; done <"$2.check"
}

# browse HTML: screenshot, DOM and console of the page in Chromium.
browse() {
	local h=$1
	[ -n "$CHROMIUM" ] || { why "chromium not installed (make deps installs it: mk/html.mk)"; return; }
	timeout -k 5 $LIM nice -n 19 "$CHROMIUM" --headless --disable-gpu --no-sandbox --user-data-dir="$T/chrome" \
		--no-first-run --enable-logging=stderr --v=0 --window-size=1280,2000 \
		--screenshot="$T/$h.png" "file://$T/$h" >"$h.shot.out" 2>"$h.shot.err"
	[ -s "$T/$h.png" ] || { why "no screenshot"; show "$h.shot.err"; return; }
	eq "screenshot" "$(python3 "$T/png.py" "$T/$h.png")" ok
	timeout -k 5 $LIM nice -n 19 "$CHROMIUM" --headless --disable-gpu --no-sandbox --user-data-dir="$T/chrome" \
		--no-first-run --enable-logging=stderr --v=0 --dump-dom "file://$T/$h" >"$h.dom" 2>"$h.dom.err"
	grep -q '<body data-ok="1"' "$h.dom" || why "the page's script did not run (no data-ok in the DOM)"
	if grep -h -E 'CONSOLE|Uncaught' "$h.shot.err" "$h.dom.err" | grep -F "file://$T/" >"$h.console"; then
		why "console messages from the page:"
		show "$h.console"
	fi
}

# ---- an allocation trace with stacks: memprog pattern -----------------------
begin
if have "$RT" "$MP" "$RINGTRACE_MALLOC_LIB"; then
	"$RT" record --mem --stacks -o mp -- "$MP" pattern >mp.out 2>mp.err || { why "record failed"; show mp.err; }
	"$RT" report mp --top 0 --html -o "$T/mp.html" >mp.hout 2>mp.herr
	eq "status" "$?" 0
	eq "stdout" "$(cat mp.hout)" ""
	eq "stderr" "$(cat mp.herr)" ""
	"$RT" report mp --top 0 --json >mp.json 2>/dev/null || why "report --json failed"
	"$RT" report mp --top 0 --by stack --json >mp.sjson 2>/dev/null || why "report --by stack --json failed"
	[ -s mp.html ] && page mem mp.html mp.json mp.sjson
fi
finish "memprog pattern: one self-contained page; rows, errors, peak and flame graphs as report --json has them"

begin
if [ -s mp.html ]; then
	# One known row, by function (a compiler may split a function's
	# call sites): the figures of report --json.
	"$RT" report mp --by function --top 0 --html -o "$T/mpf.html" >/dev/null 2>mpf.err || why "--by function --html failed"
	python3 - mpf.html >mp.row <<'EOF'
import re, sys, html
t = open(sys.argv[1]).read()
sites = t[t.index('id="t-sites"'):t.index('id="t-stacks"')]
for tr in re.findall(r"<tr>(.*?)</tr>", sites, re.S):
    cells = [html.unescape(re.sub("<[^>]*>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
    if cells and cells[-1] == "calloc_leak3 [calloc]":
        print(" ".join(cells[:9]))
EOF
	"$RT" report mp --by function --top 0 --json >mpf.json 2>/dev/null || why "--by function --json failed"
	want=$(python3 - mpf.json <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["name"] == "calloc_leak3":
        print(r["allocations"], r["frees"], r["bytes_requested"], r["bytes_allocated"],
              "%.2f" % r["fragmentation_pct"], r["leaked_bytes"], r["leaked_blocks"],
              r["cross_cpu_frees"], r["cross_thread_frees"])
EOF
)
	[ -n "$want" ] || why "no calloc_leak3 row in report --json"
	eq "calloc_leak3 row (HTML vs --json)" "$(cat mp.row)" "$want"
	[ -s mpf.html ] && page mem mpf.html mpf.json mp.sjson
	"$RT" report mp --top 0 >mp.txt 2>/dev/null
	"$RT" report mp --top 0 -o "$T/mp.txt2" >mp.txt2.out 2>&1
	eq "-o without --html writes the text report" "$(cmp -s mp.txt mp.txt2 && echo same)" same
	eq "stdout with -o" "$(cat mp.txt2.out)" ""
fi
finish "memprog pattern: a known function's row (--by function); -o FILE alone writes the text report"

begin
if [ -s mp.html ]; then
	browse mp.html
fi
finish "memprog pattern: Chromium renders the page, its script runs without console messages"

begin
if [ -s mp.html ] && [ -n "$CHROMIUM" ]; then
	# A click on ALLOCS, then on REQUESTED twice: the script sorts.
	sed 's|</body>|<script>(function(){var t=document.getElementById("t-sites"),h=t.tHead.rows[0].cells;function col(i){return Array.prototype.map.call(t.tBodies[0].rows,function(r){return r.cells[i].textContent;}).join(",");}h[0].click();var a=col(0);h[2].click();h[2].click();document.body.setAttribute("data-sorted",a+"/"+col(2));})();</script></body>|' \
		mp.html >sort.html
	timeout -k 5 $LIM nice -n 19 "$CHROMIUM" --headless --disable-gpu --no-sandbox --user-data-dir="$T/chrome" \
		--no-first-run --dump-dom "file://$T/sort.html" >sort.dom 2>sort.err
	got=$(sed -n 's/.*data-sorted="\([^"]*\)".*/\1/p' sort.dom | head -n 1)
	want=$(python3 - mp.json <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
a = sorted((r["allocations"] for r in rows), reverse=True)
b = sorted(r["bytes_requested"] for r in rows)
print(",".join(map(str, a)) + "/" + ",".join(map(str, b)))
EOF
)
	eq "sorted columns (ALLOCS down, REQUESTED up)" "$got" "$want"
fi
finish "memprog pattern: a click on a header sorts the table, a second click reverses it"

# ---- C++: names with templates ---------------------------------------------
begin
if have "$RT" "$MC"; then
	"$RT" record --mem --stacks -o mc -- "$MC" >mc.out 2>mc.err || { why "record failed"; show mc.err; }
	"$RT" report mc --html -o "$T/mc.html" >/dev/null 2>mc.herr
	eq "status" "$?" 0
	"$RT" report mc --json >mc.json 2>/dev/null || why "report --json failed"
	"$RT" report mc --by stack --json >mc.sjson 2>/dev/null || why "report --by stack --json failed"
	[ -s mc.html ] && page mem mc.html mc.json mc.sjson
	grep -q 'std::vector&lt;' mc.html || why "no escaped template name (std::vector&lt;) in the page"
	grep -q 'mismatched free' mc.html || why "the mismatched delete is not in the errors"
	browse mc.html
fi
finish "memcxx: template names escaped, the tables and flame graphs right, the page renders cleanly"

# ---- aggregate mode ----------------------------------------------------------
begin
if have "$RT" "$MP"; then
	"$RT" record --mem --aggregate --stacks -o ag -- "$MP" pattern >ag.out 2>ag.err || { why "record failed"; show ag.err; }
	"$RT" report ag --top 0 --html -o "$T/ag.html" >/dev/null 2>ag.herr
	eq "status" "$?" 0
	"$RT" report ag --top 0 --json >ag.json 2>/dev/null || why "report --json failed"
	"$RT" report ag --top 0 --by stack --json >ag.sjson 2>/dev/null || why "report --by stack --json failed"
	[ -s ag.html ] && page agg ag.html ag.json ag.sjson
fi
finish "aggregate mode: the counters' rows and flame graph of the bytes allocated, no heap chart"

# ---- a plain trace: events by type --------------------------------------------
begin
if have "$RT" "$DEMO"; then
	"$RT" record -o demo -- "$DEMO" >demo.out 2>demo.err || { why "record failed"; show demo.err; }
	"$RT" report demo --html -o "$T/demo.html" >/dev/null 2>demo.herr
	eq "status" "$?" 0
	eq "stderr" "$(cat demo.herr)" ""
	"$RT" dump demo >demo.dump 2>/dev/null || why "dump failed"
	[ -s demo.html ] && page plain demo.html demo.dump
	browse demo.html
fi
finish "plain trace: event rates by type (chart and counts as ringtrace dump has them), rendered cleanly"

# ---- bad input -------------------------------------------------------------------
begin
if [ -d mp ]; then
	"$RT" report mp --html >b1.out 2>b1.err
	rc=$?
	[ $rc != 0 ] || why "--html without -o: status 0"
	eq "--html without -o: stderr lines" "$(wc -l <b1.err)" 1
	eq "--html without -o: stdout" "$(cat b1.out)" ""
	"$RT" report mp --html -o "$T/no/such/dir/x.html" >b2.out 2>b2.err
	rc=$?
	[ $rc != 0 ] || why "unwritable -o: status 0"
	eq "unwritable -o: stderr lines" "$(wc -l <b2.err)" 1
	grep -q "no/such/dir/x.html" b2.err || why "unwritable -o: the message does not name the file"
	"$RT" report mp --html --json -o "$T/b3.html" >/dev/null 2>b3.err
	[ $? != 0 ] || why "--html --json: status 0"
	eq "--html --json: stderr lines" "$(wc -l <b3.err)" 1
	[ -e b3.html ] && why "--html --json left a file"
	"$RT" report "$T/nothere" --html -o "$T/b4.html" >/dev/null 2>b4.err
	[ $? != 0 ] || why "missing trace: status 0"
	eq "missing trace: stderr lines" "$(wc -l <b4.err)" 1
	[ -e b4.html ] && why "missing trace left an empty page behind"
	"$RT" report mp --html -o >/dev/null 2>b5.err
	[ $? != 0 ] || why "-o without a value: status 0"
	eq "-o without a value: stderr lines" "$(wc -l <b5.err)" 1
fi
finish "bad input: --html without -o, unwritable -o, --html --json, a missing trace: one line, non-zero, no file"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
