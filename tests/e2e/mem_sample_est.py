#!/usr/bin/env python3
"""mem_sample_est.py - the consumer's side of a sampled allocation trace,
for tests/e2e/mem_sample.sh: the estimates per call site, computed as
docs/mem.md ("Sampling") tells consumers to, from `ringtrace dump` output
or from a mem/aggregate.bin.

  mem_sample_est.py events DUMP PROG_OUT     figures of an event trace
  mem_sample_est.py agg AGGREGATE.BIN PROG_OUT   figures of the counters

PROG_OUT is tests/e2e/progs/memsample.c's stdout (its sites). Prints
"key value" lines: per part (churn, keep, grow, other) the estimated
alloc_bytes, alloc_n, inuse_bytes, inuse_n and samples; and the trace's
mean, seed, status, allocs (alloc events), frees, unknown_frees,
untracked, failed.
"""
import math
import re
import struct
import sys
from collections import defaultdict

LINE = re.compile(r"\bmem:(\w+): (.*)$")


def sites(prog_out):
    s = {}
    for line in open(prog_out):
        k, _, v = line.strip().partition(" ")
        if k.startswith("site_"):
            s[k[5:]] = int(v, 16)
    return s


def part_of(site, s):
    best, base = "other", -1
    for name, addr in s.items():
        if addr <= site < addr + 4096 and addr > base:
            best, base = name, addr
    return best


def weight(size, mean):
    if not mean:
        return 1.0
    return 1.0 / -math.expm1(-size / mean)


def events(dump, prog_out):
    s = sites(prog_out)
    out = defaultdict(float)
    mean = None
    live = {}

    def alloc(ptr, site, size):
        w = weight(size, mean)
        p = part_of(site, s)
        live[ptr] = (p, size, w)
        out[p + "_alloc_bytes"] += size * w
        out[p + "_alloc_n"] += w
        out[p + "_samples"] += 1

    def end(ptr):
        if ptr in live:
            del live[ptr]
            out["frees"] += 1
        else:
            out["unknown_frees"] += 1

    for line in open(dump, errors="replace"):
        m = LINE.search(line)
        if not m:
            continue
        ev = m.group(1)
        f = dict(kv.split("=", 1) for kv in m.group(2).split() if "=" in kv)
        num = lambda k: int(f[k], 0)
        if ev == "sampling":
            mean = num("mean")
            out["mean"] = mean
            out["seed"] = num("seed")
            out["status"] = num("status")
            out["sampling_events"] += 1
        elif ev in ("alloc", "alloc_large"):
            out["allocs"] += 1
            if num("ptr") == 0:
                out["failed"] += 1
            else:
                alloc(num("ptr"), num("site"), num("size"))
        elif ev in ("realloc", "realloc_large"):
            out["allocs"] += 1
            if num("old_ptr"):
                end(num("old_ptr"))
            if num("ptr"):
                alloc(num("ptr"), num("site"), num("size"))
            elif num("size"):
                out["failed"] += 1
        elif ev == "free":
            end(num("ptr"))
        elif ev == "untracked":
            out["untracked"] += 1
            live.pop(num("ptr"), None)
    for p, size, w in live.values():
        out[p + "_inuse_bytes"] += size * w
        out[p + "_inuse_n"] += w
    return out


# mem_agg.h, version 1: the header, 2^key_bits slots, then the caches.
HDR = struct.Struct("<QIIQIIIIQQQ QQQQQ QQII QQQIIQQQQ")
SLOT = struct.Struct("<16Q")
CACHE = struct.Struct("<II 10Q q QQ q Q")
KEY_STACK = 1 << 63
KEY_EST = 1 << 62


def agg(path, prog_out):
    s = sites(prog_out)
    data = open(path, "rb").read()
    h = HDR.unpack_from(data, 0)
    key_bits = h[4]
    out = defaultdict(float)
    out["mean"], out["seed"], out["status"] = h[16], h[17], h[18]
    out["untracked"], out["unknown_frees"] = h[20], h[21]
    out["heap_live_est"] = h[11]
    n = 1 << key_bits
    rows = [list(SLOT.unpack_from(data, 192 + 128 * i)) for i in range(n)]
    # Fold the threads' pending sums (mem_agg.h, memagg_fold).
    base = 192 + 128 * n
    for i in range(min(h[23], 1024)):
        c = CACHE.unpack_from(data, base + 128 * i)
        if c[0] >= n:
            continue
        r = rows[c[0]]
        r[1] |= c[2]
        for ri, ci in ((2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 8), (8, 9), (10, 10), (11, 11)):
            r[ri] = (r[ri] + c[ci]) % (1 << 64)
    for r in rows:
        key = r[0]
        if key in (0, 1):
            continue
        est = bool(key & KEY_EST)
        site = key & ~KEY_EST
        p = part_of(site, s) if not site & KEY_STACK else "stack"
        if est:
            out[p + "_samples"] += r[2]
            out[p + "_alloc_bytes"] += r[5]
            out[p + "_alloc_n"] += r[12] / 65536
            out[p + "_inuse_bytes"] += r[7] - (1 << 64 if r[7] >= 1 << 63 else 0)
            out[p + "_inuse_n"] += (r[12] - r[13]) / 65536
            out["frees"] += r[4]
        else:
            out[p + "_exact_allocs"] += r[2]
            out[p + "_exact_bytes"] += r[5]
            out[p + "_exact_live"] += r[7]
            out[p + "_exact_frees"] += r[4]
    return out


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("events", "agg"):
        sys.exit(__doc__)
    out = (events if sys.argv[1] == "events" else agg)(sys.argv[2], sys.argv[3])
    for k in sorted(out):
        v = out[k]
        print(k, int(v) if float(v).is_integer() else "%.1f" % v)


if __name__ == "__main__":
    main()
