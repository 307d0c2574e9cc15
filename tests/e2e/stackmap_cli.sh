#!/bin/bash
# stackmap_cli.sh - `ringtrace stackmap`.
#
# --from-bin: files in the binary layout written here by an independent
# writer (python3 struct, both byte orders) are read back as text, JSON,
# top N, folded stacks and binary.
#
# TRACE_DIR: trace directories written by $BUILD/tests/stackfiles_gen
# (tests/e2e/stackfiles_gen.c: known stacks of its own functions, its own
# loaded objects, saved with stack_files_write) are printed symbolised in
# every output form; copies with a missing or damaged file check that the
# command says so in one line, or falls back to addresses.
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
# verdict NAME: passes when the command list just before it succeeded (a
# condition joined with && cannot be given to check as arguments).
verdict() { if [ $? = 0 ]; then ok "$1"; else no "$1"; fi; }
# fails_cleanly RC: exit status 1, one line on stderr (err), nothing on
# stdout (out).
fails_cleanly() { [ "$1" = 1 ] && [ "$(wc -l <err)" = 1 ] && [ ! -s out ]; }

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
# Folded: a stack never referenced is left out, identical lines merge.
write('zero.bin', '<', [(1, 0, [1, 2]), (2, 5, [3, 4]), (3, 7, [3, 4])])
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
	check "damaged file ($b): exit 1, one line" fails_cleanly $rc
done
"$RT" stackmap --from-bin /nonexistent >out 2>err
check "missing file: exit 1, one line" fails_cleanly $?
"$RT" stackmap --from-bin le.bin --top 0 >/dev/null 2>err
check "bad --top: exit 2" [ $? = 2 ]
"$RT" stackmap --from-bin zero.bin --folded >zero.folded
check "folded: a stack with ref 0 is left out, identical lines merge (counts summed)" \
	[ "$(cat zero.folded)" = "0x4;0x3 12" ]

# ---- trace directories ----------------------------------------------------
GEN=$BUILD/tests/stackfiles_gen
if [ ! -x "$GEN" ]; then
	no "trace directories: $GEN missing (make tests-build?)"
	echo "$P passed, $F failed"
	exit 1
fi
"$GEN" gen >gen.out 2>gen.err
[ $? = 0 ] && [ -s gen/trace/stacks/stackmap.bin ]
verdict "stackfiles_gen writes a trace with stacks"
D=gen/trace
FAKE_OFF=$(sed -n 's/^fake_offset //p' gen.out)

"$RT" stackmap $D >dir.txt 2>dir.err
rc=$?
sed -n 's/^stack_id //p' dir.txt >dir.ids
printf '%s\n' '1 [ref 3, depth 4]' '2 [ref 2, depth 4]' '3 [ref 1, depth 3]' '4 [ref 4, depth 2]' >want.ids
[ $rc = 0 ] && [ ! -s dir.err ] && cmp -s dir.ids want.ids
verdict "DIR: text lists the 4 stacks by id with ref and depth"
check "DIR: text names the generator's functions (function+0xoff/0xsize)" \
	grep -q '^  \[0\] stackfiles_gen_leaf+0x1/0x[0-9a-f]*$' dir.txt
check "DIR: text frames of a caller resolve to it" \
	grep -q '^  \[2\] stackfiles_gen_root+0x[0-9a-f]*/0x[0-9a-f]*$' dir.txt
check "DIR: an address in no object stays an address" grep -qx '  \[0\] 0x42' dir.txt

"$RT" stackmap $D --stat >dir.stat
printf '%s\n' 'entries: 4 / 1024' 'table_size: 2048' 'successes: 10' 'drops: 0' 'success_rate: 100%' >want.stat
check "DIR: --stat prints the saved counters" cmp -s dir.stat want.stat

"$RT" stackmap $D --folded >dir.folded
printf '%s\n' 'main;stackfiles_gen_root;stackfiles_gen_middle;stackfiles_gen_leaf 5' \
	"main;stackfiles_gen_root;fake_lib_1.so+$FAKE_OFF 1" 'main;0x42 4' >want.folded
check "DIR: --folded root first, names without offsets, object+offset, merged counts" \
	cmp -s dir.folded want.folded
[ -n "$FAKE_OFF" ] || no "stackfiles_gen printed no fake_offset"

"$RT" stackmap $D --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = {x["stack_id"]: x for x in d["stacks"]}
assert sorted(s) == [1, 2, 3, 4]
assert s[1]["frames"][0]["sym"].startswith("stackfiles_gen_leaf+0x1/")
assert s[4]["frames"][0] == {"addr": "0x42"}
assert all(len(x["frames"]) == x["depth"] for x in s.values())' 2>/dev/null
check "DIR: --json parses, symbols where known, addresses as strings" [ $? = 0 ]

"$RT" stackmap $D --top 1 >dir.top
[ "$(grep -c '^stack_id' dir.top)" = 1 ] && grep -qx 'stack_id 4 \[ref 4, depth 2\]' dir.top
verdict "DIR: --top 1 is the most referenced stack"

"$RT" stackmap $D --bin dir.bin && "$RT" stackmap --from-bin dir.bin >dir.frombin &&
	"$RT" stackmap $D --no-symbols >dir.nosym &&
	cmp -s dir.frombin dir.nosym && cmp -s dir.bin $D/stacks/stackmap.bin
verdict "DIR: --bin round-trips through --from-bin (= --no-symbols text)"
check "DIR: --no-symbols prints addresses only" \
	[ "$(grep -c '^  \[[0-9]*\] 0x[0-9a-f]*$' dir.nosym)" = 13 ]

cp -r $D nomaps && rm nomaps/stacks/maps
"$RT" stackmap nomaps >nomaps.txt 2>nomaps.err
rc=$?
[ $rc = 0 ] && [ ! -s nomaps.err ] && cmp -s nomaps.txt dir.nosym
verdict "DIR: a missing maps file prints addresses, exit 0"
cp -r $D nostat && rm nostat/stacks/stackmap.stat
"$RT" stackmap nostat --stat >nostat.txt 2>&1
[ $? = 0 ] && grep -qx 'stacks: 4' nostat.txt && grep -q '^counters: unknown' nostat.txt
verdict "DIR: a missing stackmap.stat: --stat counts stacks, counters unknown"

# Damaged copies: name, file, how.
damage() {
	rm -rf "$1" && cp -r $D "$1" || return 1
	local f=$1/stacks/$2
	case $3 in
	half) # mid-line: a maps file cut just after a line is a valid shorter list
		local n=$(($(wc -c <"$f") / 2))
		[ "$(head -c $n "$f" | tail -c 1 | od -An -tx1 | tr -d ' \n')" = 0a ] && n=$((n - 1))
		head -c $n "$f" >x && mv x "$f" ;;
	cut) head -c $(($(wc -c <"$f") - 1)) "$f" >x && mv x "$f" ;;
	empty) : >"$f" ;;
	garbage) head -c 4096 /dev/urandom >"$f" ;;
	text) printf 'hello\nworld\n' >"$f" ;;
	esac
}
for d in bin:stackmap.bin:half bin:stackmap.bin:cut bin:stackmap.bin:empty bin:stackmap.bin:garbage \
	maps:maps:half maps:maps:cut maps:maps:garbage maps:maps:text \
	stat:stackmap.stat:cut stat:stackmap.stat:garbage stat:stackmap.stat:text; do
	IFS=: read -r _ file how <<<"$d"
	damage bad $file $how
	for mode in "" --folded; do
		"$RT" stackmap bad $mode >out 2>err
		rc=$?
		check "DIR: damaged $file ($how) ${mode:-text}: exit 1, one line, no output" \
			fails_cleanly $rc
	done
done

mkdir -p nostacks && echo '/* CTF 1.8 */' >nostacks/metadata
"$RT" stackmap nostacks >out 2>err
rc=$?
fails_cleanly $rc &&
	[ "$(cat err)" = "ringtrace stackmap: 'nostacks' has no stacks (record with --stacks, or events declared with a stack)" ]
verdict "DIR without stacks/: exit 1 and the one-line hint"

"$RT" stackmap $D --debug-dir no/such/dir >out 2>err
check "bad --debug-dir: exit 1, one line" fails_cleanly $?
"$RT" stackmap $D --debug-dir . >out 2>err
[ $? = 0 ] && cmp -s out dir.txt
verdict "--debug-dir (an existing directory) is accepted, same output"

# ---- running programs (the names below match none) ------------------------
"$RT" stackmap ringtrace-no-such-program-$$ >out 2>err
check "a target that is no directory and no program: exit 1, one line" fails_cleanly $?
"$RT" stackmap --reset ringtrace-no-such-program-$$ >out 2>err
check "--reset of no program: exit 1, one line" fails_cleanly $?
"$RT" stackmap --reset 1 --json >out 2>err
check "--reset takes no output option: exit 2" [ $? = 2 ]
"$RT" stackmap $D --from-bin le.bin >out 2>err
check "a trace and --from-bin together: exit 2" [ $? = 2 ]
echo "$P passed, $F failed"
[ $F = 0 ]
