# work.py - a Python workload for tests/e2e/mem_real.sh: dicts, lists,
# strings, tuples and small objects made, sorted, searched and dropped.
# Its output depends only on its argument (N records; string hashing is
# never iterated in hash order), so a traced run prints the same bytes.
import sys


class Rec:
    __slots__ = ("key", "vals", "tags")

    def __init__(self, i):
        self.key = "k%d" % i
        self.vals = [i, str(i) * (i % 7), {"x": i % 13, "y": [i % 5] * (i % 4)}]
        self.tags = tuple("t%d" % (i % m) for m in (3, 5, 11))


def main(n):
    recs = {}
    for i in range(n):
        r = Rec(i)
        recs[r.key] = r
    order = sorted(recs.values(), key=lambda r: (r.vals[2]["x"], -r.vals[0]))
    words = " ".join(r.key + ":" + "/".join(r.tags) for r in order[: n // 4]).split()
    counts = {}
    for w in words:
        counts[w[:3]] = counts.get(w[:3], 0) + 1
    for i in range(0, n, 3):
        del recs["k%d" % i]
    total = sum(len(r.vals[1]) + len(r.vals[2]["y"]) for r in recs.values())
    print(len(recs), order[0].key, order[-1].key, total)
    print(sorted(counts.items())[:8])
    print(max(len(w) for w in words), "".join(sorted(set("".join(words))))[:40])


main(int(sys.argv[1]) if len(sys.argv) > 1 else 100000)
