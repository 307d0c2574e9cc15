#!/bin/bash
# mem_lib.sh - reading `ringtrace report --json`, for the allocation
# tracer's end-to-end scripts (mem.sh, mem_agg.sh).

# row JSON NAME: the report row NAME as "allocs frees requested
# leaked_bytes leaked_blocks xcpu xthread families" ("rows:N" unless
# exactly one row has that name).
row() {
	python3 - "$1" "$2" <<'PYEOF'
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["name"] == sys.argv[2]]
if len(rows) != 1:
    print("rows:%d" % len(rows))
else:
    r = rows[0]
    print(r["allocations"], r["frees"], r["bytes_requested"], r["leaked_bytes"], r["leaked_blocks"],
          r["cross_cpu_frees"], r["cross_thread_frees"], r["families"])
PYEOF
}
