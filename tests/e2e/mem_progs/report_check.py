"""report_check.py - reads the JSON of `ringtrace report DIR --json --top 0`
for tests/e2e/mem_real.sh and checks the relations its numbers must keep
whatever the program did:

  - leaked_blocks == allocations - frees (a free is counted only for a
    block seen allocated, and every allocation seen is alive until then);
  - frees <= allocations, munmaps <= mmaps, lost_events == 0;
  - bytes_allocated >= bytes_requested, leaked bytes <= requested bytes;
  - with --top 0 the rows (call sites, stacks or functions) add up to the
    totals: allocations, failed, frees, bytes, leaks, cross-CPU and
    cross-thread frees;
  - no errors (each one is printed with its call sites).

Prints one line per broken relation (nothing when all hold) and writes the
facts the script asserts on to FACTS:

  total KEY VALUE                  every number of "totals"
  families F1,F2,...               allocation families seen in the rows
  row NAME<TAB>allocations=N frees=N failed=N families=F1,F2

  python3 report_check.py REPORT.json FACTS
"""
import json
import sys

SUMMED = ("allocations", "failed", "frees", "bytes_requested", "bytes_allocated",
          "leaked_bytes", "leaked_blocks", "cross_cpu_frees", "cross_thread_frees")


def problems(d):
    t = d["totals"]
    rows = d["rows"]
    if t["allocations"] <= 0:
        yield "no allocation in the trace"
    if t["leaked_blocks"] != t["allocations"] - t["frees"]:
        yield "leaked_blocks %d != allocations %d - frees %d" % (
            t["leaked_blocks"], t["allocations"], t["frees"])
    if t["frees"] > t["allocations"]:
        yield "frees %d > allocations %d" % (t["frees"], t["allocations"])
    if t["munmaps"] > t["mmaps"]:
        yield "munmaps %d > mmaps %d" % (t["munmaps"], t["mmaps"])
    if t["lost_events"] != 0:
        yield "%d events lost" % t["lost_events"]
    if t["bytes_allocated"] < t["bytes_requested"]:
        yield "bytes_allocated %d < bytes_requested %d" % (t["bytes_allocated"], t["bytes_requested"])
    if t["leaked_bytes"] > t["bytes_requested"]:
        yield "leaked_bytes %d > bytes_requested %d" % (t["leaked_bytes"], t["bytes_requested"])
    if t["peak_requested"] < t["leaked_bytes"]:
        yield "peak_requested %d < leaked_bytes %d" % (t["peak_requested"], t["leaked_bytes"])
    for k in SUMMED:
        s = sum(r[k] for r in rows)
        if s != t[k]:
            yield "rows add up to %s %d, totals say %d" % (k, s, t[k])
    errs = d.get("errors", [])
    if t["errors"] != sum(e.get("count", 0) for e in errs):
        yield "totals errors %d, the error list counts %d" % (
            t["errors"], sum(e.get("count", 0) for e in errs))
    for e in errs:
        where = "; ".join("%s %s" % (k, e[k]) for k in (
            "alloc_family", "alloc_site", "free_family", "free_site", "again_site") if e.get(k))
        yield "error: %s x%d, first %s: %s" % (e.get("kind"), e.get("count", 0), e.get("ptr"), where[:400])


def main():
    d = json.load(open(sys.argv[1]))
    for p in problems(d):
        print(p)
    fams = set()
    with open(sys.argv[2], "w") as f:
        for k, v in d["totals"].items():
            f.write("total %s %s\n" % (k, v))
        for r in d["rows"]:
            rf = [x for x in r.get("families", "").split(",") if x]
            fams.update(rf)
            f.write("row %s\tallocations=%d frees=%d failed=%d families=%s\n" % (
                r["name"], r["allocations"], r["frees"], r["failed"], ",".join(rf)))
        f.write("families %s\n" % ",".join(sorted(fams)))


main()
