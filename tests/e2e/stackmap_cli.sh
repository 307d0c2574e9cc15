#!/bin/bash
# stackmap_cli.sh - `ringtrace stackmap --from-bin`: files in the binary
# layout written here by an independent writer (python3 struct, both byte
# orders) are read back as text, JSON, top N, folded stacks and binary.
#
#   tests/e2e/stackmap_cli.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$REPO/$BUILD ;; esac
RT=$BUILD/bin/ringtrace
T=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-smcli.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
P=0 F=0
ok() { echo "ok - $1"; P=$((P + 1)); }
no() { echo "not ok - $1"; F=$((F + 1)); [ -n "${2:-}" ] && echo "$2" | sed 's/^/    # /'; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else no "$name"; fi; }

python3 - <<'PY' || exit 1
import struct, random
def write(path, e, stacks):
    with open(path, 'wb') as f:
        f.write(struct.pack(e + 'IIII', 0x464D5342, 2, len(stacks), 0))
        for sid, ref, ips in stacks:
            f.write(struct.pack(e + 'IIII', sid, len(ips), ref, 0))
            for ip in ips:
                f.write(struct.pack(e + 'Q', ip))
random.seed(7)
st = [(i, random.randint(1, 1000), [random.randrange(1 << 47) for _ in range(random.randint(1, 64))])
      for i in range(1, 201)]
write('le.bin', '<', st)
write('be.bin', '>', st)
with open('expect.txt', 'w') as f:
    for sid, ref, ips in st:
        f.write('stack_id %d [ref %d, depth %d]\n' % (sid, ref, len(ips)))
        for k, ip in enumerate(ips):
            f.write('  [%d] 0x%x\n' % (k, ip))
        f.write('\n')
with open('folded.txt', 'w') as f:
    for sid, ref, ips in st:
        f.write(';'.join('0x%x' % ip for ip in reversed(ips)) + ' %d\n' % ref)
top = sorted(st, key=lambda s: (-s[1], s[0]))[:5]
open('top.txt', 'w').write(''.join('%d %d\n' % (s[0], s[1]) for s in top))
open('refs.txt', 'w').write('%d\n' % sum(s[1] for s in st))
data = open('le.bin', 'rb').read()
open('trunc.bin', 'wb').write(data[:len(data) // 2])
bad = bytearray(data); bad[16 + 4:16 + 8] = struct.pack('<I', 65); open('deep.bin', 'wb').write(bad)
bad = bytearray(data); bad[4:8] = struct.pack('<I', 7); open('version.bin', 'wb').write(bad)
PY

for o in le be; do
	"$RT" stackmap --from-bin $o.bin >$o.txt 2>$o.err
	check "text from the $o file equals the writer's stacks" cmp -s $o.txt expect.txt
	"$RT" stackmap --from-bin $o.bin --folded >$o.folded
	check "folded stacks from the $o file (root first, count = ref)" cmp -s $o.folded folded.txt
	"$RT" stackmap --from-bin $o.bin --top 5 | sed -n 's/^stack_id \([0-9]*\) \[ref \([0-9]*\),.*/\1 \2/p' >$o.top
	check "top 5 by reference count from the $o file" cmp -s $o.top top.txt
	"$RT" stackmap --from-bin $o.bin --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert len(d["stacks"]) == 200
assert all(len(s["frames"]) == s["depth"] for s in d["stacks"])' 2>/dev/null
	check "JSON from the $o file parses, 200 stacks" [ $? = 0 ]
done
"$RT" stackmap --from-bin be.bin --stat >stat.txt
check "--stat counts stacks and references, says the byte order" \
	grep -qx "references: $(cat refs.txt)" stat.txt
"$RT" stackmap --from-bin be.bin --bin native.bin
check "--bin rewrites a big-endian file in this machine's order byte for byte" cmp -s native.bin le.bin
for b in trunc deep version; do
	"$RT" stackmap --from-bin $b.bin >out 2>err
	rc=$?
	check "damaged file ($b): exit 1, one line" [ $rc = 1 ] && [ "$(wc -l <err)" = 1 ] && [ ! -s out ]
done
"$RT" stackmap --from-bin /nonexistent >/dev/null 2>err
check "missing file: exit 1, one line" [ $? = 1 ] && [ "$(wc -l <err)" = 1 ]
"$RT" stackmap --from-bin le.bin --top 0 >/dev/null 2>err
check "bad --top: exit 2" [ $? = 2 ]
echo "$P passed, $F failed"
[ $F = 0 ]
