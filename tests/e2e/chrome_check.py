#!/usr/bin/env python3
"""chrome_check.py - check the output of `ringtrace convert`.

  chrome_check.py chrome FILE.json [--events N] [--lost N] [--slices N]
                  [--leaked N] [--peak N] [--no-heap]
  chrome_check.py folded FILE [--sum N]

chrome: the file is strict JSON (UTF-8, no NaN or Infinity) in the JSON
object form of the Trace Event Format (Chrome's "Trace Event Format"
document, which the Perfetto UI and chrome://tracing follow):
{"traceEvents": [...], "displayTimeUnit": "ns"|"ms", ...}. Every event has
the keys its phase needs: name, ph, ts (a number, microseconds), pid and tid
(integers); instants ("i"/"I") a scope "s" of g, p or t; counters ("C") an
"args" object of numbers; metadata ("M") process_name/thread_name with
args.name. Per thread, the thread-scoped events (i with s=t, B, E) come
with non-decreasing timestamps, and B/E nest: each E closes the innermost
open B of its thread, with the same name (ringtrace's convention). Every
tid of a thread-scoped event has a thread_name, the pid a process_name.
The options compare with other figures: N events of the trace (instants,
begins and ends not of category "ringtrace"), N events lost, N slices (B),
the heap counter's last and highest value ("heap requested").

folded: every line is "frame;...;frame COUNT" (^[^ ]+( [0-9]+)$), no line
twice, and the counts add up to --sum.

Prints one "problem: ..." line per problem (at most 20) and a summary;
exit status 0 when there is none, 1 otherwise.
"""
import json
import re
import sys


def fail_const(name):
    raise ValueError("non-standard JSON constant %s" % name)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_chrome(path, opts):
    problems = []

    def problem(msg):
        problems.append(msg)

    raw = open(path, "rb").read()
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=fail_const)
    except (UnicodeDecodeError, ValueError) as e:
        return ["not valid JSON: %s" % e], {}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not the JSON object format: no traceEvents array"], {}
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        problem("displayTimeUnit %r" % doc.get("displayTimeUnit"))

    last_ts = {}          # (pid, tid) -> ts of its last thread-scoped event
    open_slices = {}      # (pid, tid) -> [names]
    thread_names = set()  # (pid, tid)
    process_names = set()
    tids = set()
    pids = set()
    counters = {}         # name -> [values of its first series]
    n_events = n_slices = n_lost = n_meta = 0
    for k, e in enumerate(doc["traceEvents"]):
        where = "event %d" % k
        if not isinstance(e, dict):
            problem("%s: not an object" % where)
            continue
        ph = e.get("ph")
        if not isinstance(ph, str) or len(ph) != 1:
            problem("%s: bad ph %r" % (where, ph))
            continue
        if not isinstance(e.get("name"), str):
            problem("%s: no name" % where)
        if not is_int(e.get("pid")):
            problem("%s: no integer pid" % where)
        if ph == "M":
            n_meta += 1
            args = e.get("args")
            if not isinstance(args, dict) or not isinstance(args.get("name"), str):
                problem("%s: metadata without args.name" % where)
                continue
            if e.get("name") == "thread_name":
                if not is_int(e.get("tid")):
                    problem("%s: thread_name without tid" % where)
                thread_names.add((e.get("pid"), e.get("tid")))
            elif e.get("name") == "process_name":
                process_names.add(e.get("pid"))
            continue
        if not is_num(e.get("ts")):
            problem("%s: no numeric ts" % where)
            continue
        if not is_int(e.get("tid")):
            problem("%s: no integer tid" % where)
            continue
        if "args" in e and not isinstance(e["args"], dict):
            problem("%s: args is not an object" % where)
        key = (e["pid"], e["tid"])
        pids.add(e["pid"])
        if ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args or not all(is_num(v) for v in args.values()):
                problem("%s: counter without numeric args" % where)
                continue
            counters.setdefault(e["name"], []).append(list(args.values())[0])
            continue
        if ph in ("i", "I"):
            s = e.get("s")
            if s not in ("g", "p", "t"):
                problem("%s: instant without a scope s (got %r)" % (where, s))
                continue
            if s != "t":
                if e.get("cat") == "ringtrace" and e["name"].startswith("lost"):
                    n_lost += e.get("args", {}).get("count", 0)
                continue
        elif ph not in ("B", "E"):
            problem("%s: unexpected phase %r" % (where, ph))
            continue
        # Thread-scoped: i (s=t), B, E.
        tids.add(key)
        if e.get("cat") != "ringtrace":
            n_events += 1
        if key in last_ts and e["ts"] < last_ts[key]:
            problem("%s: ts %r before %r on thread %r" % (where, e["ts"], last_ts[key], key))
        last_ts[key] = e["ts"]
        st = open_slices.setdefault(key, [])
        if ph == "B":
            n_slices += 1
            st.append(e["name"])
        elif ph == "E":
            if not st:
                problem("%s: E with no open B on thread %r" % (where, key))
            elif st[-1] != e["name"]:
                problem("%s: E %r closes B %r" % (where, e["name"], st[-1]))
            else:
                st.pop()
    for key in sorted(tids):
        if key not in thread_names:
            problem("thread %r has no thread_name" % (key,))
    for pid in sorted(pids):
        if pid not in process_names:
            problem("pid %r has no process_name" % pid)

    def want(name, got):
        if opts.get(name) is not None and int(opts[name]) != got:
            problem("%s: got %d, want %s" % (name, got, opts[name]))

    want("events", n_events)
    want("lost", n_lost)
    want("slices", n_slices)
    heap = counters.get("heap requested", [])
    if opts.get("leaked") is not None or opts.get("peak") is not None:
        if not heap:
            problem("no 'heap requested' counter")
        else:
            want("leaked", heap[-1])
            want("peak", max(heap))
    if opts.get("no_heap") and counters:
        problem("counters in a trace without allocations: %s" % sorted(counters))
    summary = {"events": n_events, "slices": n_slices, "lost": n_lost, "threads": len(tids),
               "metadata": n_meta, "counters": {k: len(v) for k, v in counters.items()}}
    return problems, summary


LINE = re.compile(r"^[^ ]+( [0-9]+)$")


def check_folded(path, opts):
    problems = []
    total = 0
    seen = set()
    n = 0
    for k, line in enumerate(open(path, "rb").read().decode("utf-8").split("\n")[:-1]):
        n += 1
        if not LINE.match(line):
            problems.append("line %d does not match: %r" % (k + 1, line[:200]))
            continue
        stack, count = line.rsplit(" ", 1)
        if stack in seen:
            problems.append("line %d: stack twice: %r" % (k + 1, stack[:200]))
        seen.add(stack)
        total += int(count)
    if opts.get("sum") is not None and int(opts["sum"]) != total:
        problems.append("sum: got %d, want %s" % (total, opts["sum"]))
    if n == 0:
        problems.append("no lines")
    return problems, {"lines": n, "sum": total}


def main(argv):
    if len(argv) < 3 or argv[1] not in ("chrome", "folded"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    opts = {}
    i = 3
    while i < len(argv):
        a = argv[i]
        if a == "--no-heap":
            opts["no_heap"] = True
            i += 1
            continue
        if not a.startswith("--") or i + 1 >= len(argv):
            print("chrome_check.py: bad argument %r" % a, file=sys.stderr)
            return 2
        opts[a[2:]] = argv[i + 1]
        i += 2
    check = check_chrome if argv[1] == "chrome" else check_folded
    problems, summary = check(argv[2], opts)
    for p in problems[:20]:
        print("problem: %s" % p)
    if len(problems) > 20:
        print("problem: ... and %d more" % (len(problems) - 20))
    print("summary: %s" % json.dumps(summary, sort_keys=True))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
