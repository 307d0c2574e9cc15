#!/bin/bash
# reader_bounds.sh - the trace readers (`ringtrace dump`, `check`, `report`)
# end in bounded time on metadata whose arrays and sequences have elements
# that take no space: an array of a million empty structs, nested arrays
# of them, sequences of sequences of empty structs with lengths taken from
# the data, and an array whose size in bits overflows 64 bits. Each must
# end within the time limit (a hang is a failure, not a stuck test) with a
# non-zero status and one clear line; a trace that uses a few empty structs
# legitimately still reads and checks clean.
#
#   tests/e2e/reader_bounds.sh [BUILD_DIR]
#
# The traces are written by tests/tools/ctf_gen and damaged by rewriting
# the fields of one event class in their metadata; the stream files are
# left untouched.
set -u
export LC_ALL=C
exec </dev/null
ulimit -c 0
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup reader-bounds "${1:-build}"
LIM=30
cleanup() { cd / && rm -rf "$T"; }
trap cleanup EXIT

# redeclare SRC DST EVENT FIELDS: copy trace SRC to DST with the fields of
# the event class named EVENT replaced by FIELDS (TSDL declarations).
redeclare() {
	rm -rf "$2"
	cp -r "$1" "$2"
	python3 - "$2/metadata" "$3" "$4" <<'EOF' || why "cannot rewrite the metadata of $2"
import re, sys
path, event, fields = sys.argv[1:]
text = open(path).read()
pat = re.compile(r'(\tname = "%s";\n.*?\tfields := struct \{\n)(.*?)(\t\};)' % re.escape(event), re.S)
text, n = pat.subn(lambda m: m.group(1) + m.group(2) + '\t\t' + fields + '\n' + m.group(3), text, 1)
if n != 1:
    sys.exit('no event %s' % event)
open(path, 'w').write(text)
EOF
}

# run CMD DIR: `ringtrace CMD DIR`, status in RC, output in DIR.CMD.out/.err.
run() {
	{ timeout -k 5 $LIM "$RT" "$1" "$2" >"$2.$1.out" 2>"$2.$1.err"; } 2>/dev/null
	RC=$?
}

# hostile NAME DIR PATTERN: dump, check and report end in time, with a
# non-zero status and PATTERN in their one-line message.
hostile() {
	local name=$1 d=$2 pat=$3 cmd
	begin
	for cmd in dump check report; do
		run $cmd "$d"
		case $RC in
		0) why "$cmd: status 0" ;;
		124 | 137) why "$cmd: still running after $LIM s (killed)" ;;
		1) ;;
		*) why "$cmd: status $RC" ;;
		esac
		if [ $cmd = check ]; then
			grep -q "$pat" "$d.check.out" || { why "check: no '$pat'"; show "$d.check.out"; }
		else
			eq "$cmd: stderr lines" "$(wc -l <"$d.$cmd.err")" 1
			grep -q "^ringtrace $cmd: .*$pat" "$d.$cmd.err" || { why "$cmd: no '$pat'"; show "$d.$cmd.err"; }
		fi
	done
	finish "$name: dump, check and report end with an error"
}

if ! have "$RT" "$CTFGEN"; then
	finish "build"
	echo "$PASSED passed, $FAILED failed"
	exit 1
fi

# 20000 events of demo:empty (no fields) and thread records, in 4 KB packets;
# and every event class, for fields whose values vary.
"$CTFGEN" --cpus 1 --only 7 --events 20000 empty >gen.out 2>&1 || why "ctf_gen failed"
"$CTFGEN" --cpus 2 --events 2000 all >>gen.out 2>&1 || why "ctf_gen failed"
finish "ctf_gen writes the base traces"

BUDGET='steps per bit'

redeclare empty flat demo:empty 'struct { } _z[1000000];'
hostile "a million empty structs per event" flat "$BUDGET"

redeclare empty nested demo:empty 'struct { } _z[2000][2000];'
hostile "2000 x 2000 empty structs per event" nested "$BUDGET"

redeclare empty zarr demo:empty 'uint8_t _z[1000000][0];'
hostile "a million arrays of length 0 per event" zarr "$BUDGET"

# demo:ints ends with u8 _e, u16 _f, u32 _g, u64 _h: the added field takes
# no space, so the events keep their layout.
redeclare all seqseq demo:ints 'struct { } _z[_f][_e];'
hostile "sequences of sequences of empty structs, lengths from the data" seqseq "$BUDGET"

redeclare empty wrap demo:empty 'uint8_t _z[0x2000000000000000];'
hostile "2^61 bytes (2^64 bits) in an event of 4 bytes" wrap "past the end"

# Legitimate: two empty structs per event and a sequence of empty structs
# whose length is a small field of the event.
begin
redeclare empty few demo:empty 'struct { } _z[2];'
redeclare all few2 demo:ints 'struct { } _z[_e];'
for d in few few2; do
	run dump $d
	eq "$d: dump status" "$RC" 0
	eq "$d: dump stderr lines" "$(wc -l <$d.dump.err)" 0
	run check $d
	eq "$d: check status" "$RC" 0
	[ "$RC" = 0 ] || show $d.check.out
done
eq "events with z = [{}, {}]" "$(grep -c 'demo:empty: .*z=\[{}, {}\]' few.dump.out)" 20000
eq "events printed" "$(wc -l <few2.dump.out)" "$(timeout -k 5 $LIM "$RT" dump all | wc -l)"
finish "a few empty structs per event: dump and check read the trace"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
