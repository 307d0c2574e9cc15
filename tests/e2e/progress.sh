#!/bin/bash
# progress.sh - the status line of a recording (src/cli/progress.c), on a
# real terminal made by script(1): drawn in place ("\r" ... erase to the
# end of the line) while the program runs, with the figures of the
# recording (events, bytes, lost by cause, the fullest buffer), erased
# before the summary; cut to the terminal's width; never written to a
# pipe or file unless --progress asks (then plain lines), never with
# --quiet; plain lines on TERM=dumb; the program's own output unchanged;
# the flight recorder's line counts events committed and snapshots.
#
#   tests/e2e/progress.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup progress "${1:-build}"
trap 'rm -rf "$T"' EXIT

BUSY=$PROGS/busy
ESC=$'\033'
CR=$'\r'

# on_tty FILE COMMAND: run COMMAND (a shell line) on a terminal, its
# terminal output (stdout and stderr together) into FILE.
on_tty() {
	local out=$1
	shift
	timeout 60 script -qfec "$*" /dev/null >"$out" 2>&1
}

# 1. On a terminal: 200000 events, at least 64 KiB lost while busy stops
# the recorder, then a second of quiet so a round shows the final figures.
begin
if have "$BUSY"; then
	on_tty tty.txt "stty cols 200; '$RT' record -o '$T/t1' --buffer-size 64K -- sh -c '$BUSY 200000 stop; sleep 1.2'"
	grep -q "ringtrace: [0-9]*\.[0-9] s | .* events/s | .* events, .* written | lost full [0-9]" tty.txt ||
		{ why "no status line with lost full"; show tty.txt 8; }
	grep -q "${CR}ringtrace: .*${ESC}\[K" tty.txt || why "the line is not redrawn in place"
	# Erased before the summary: the summary follows "\r ESC[K".
	grep -q "${ESC}\[Kringtrace record: [0-9]* events recorded" tty.txt ||
		{ why "the summary is not preceded by the erase"; show tty.txt 3; }
	grep -q "wrote 200000" tty.txt || why "the program's output is missing"
	# Rounds after the program's burst show every event taken.
	taken=$(grep -o "[0-9]* events recorded" tty.txt | head -n 1 | cut -d' ' -f1)
	[ -n "$taken" ] && [ "$taken" -gt 0 ] || why "no events recorded"
fi
finish "a terminal: the status line redrawn in place with events, bytes, lost by cause and fullest buffer, erased before the summary"

# 2. The width: a 50-column terminal gets no line longer than 50 columns.
begin
on_tty narrow.txt "stty cols 50; '$RT' record -o '$T/t2' -- sleep 0.8"
grep -q "ringtrace: 0\.[0-9] s" narrow.txt || { why "no status line"; show narrow.txt; }
long=$(tr '\r' '\n' <narrow.txt | sed "s/${ESC}\[K//g" | awk 'length($0) > 50' | grep -c "events/s\|ringtrace: [0-9]")
eq "status lines longer than 50 columns" "$long" 0
finish "a narrow terminal: the line is cut to its width (read at each draw)"

# 3. Not a terminal: nothing; --progress: plain lines, one a second.
begin
timeout 60 "$RT" record -o "$T/t3" -- sh -c 'echo hello; sleep 1.3; echo bye' >pipe.out 2>pipe.err
grep -q "events/s" pipe.err && why "a status line went to a pipe"
eq "program output through a pipe" "$(cat pipe.out)" "$(printf 'hello\nbye')"
timeout 60 "$RT" record --progress -o "$T/t4" -- sleep 2.3 2>forced.err >/dev/null
n=$(grep -c "^ringtrace: [0-9]*\.[0-9] s | " forced.err)
[ "$n" -ge 1 ] && [ "$n" -le 3 ] || { why "--progress to a file: $n plain lines, want 1 to 3"; show forced.err; }
grep -q "$ESC\|$CR" forced.err && why "--progress to a file wrote terminal controls"
finish "a pipe or file gets no status line; --progress gives plain lines, one a second"

# 4. --quiet on a terminal; TERM=dumb gets plain lines.
begin
on_tty quiet.txt "'$RT' record -q -o '$T/t5' -- sleep 0.8"
grep -q "events/s" quiet.txt && { why "--quiet drew the line"; show quiet.txt; }
grep -q "ringtrace record: 0 events recorded" quiet.txt || why "--quiet lost the summary"
on_tty dumb.txt "TERM=dumb '$RT' record -o '$T/t6' -- sleep 1.3"
grep -q "events/s" dumb.txt || { why "TERM=dumb: no status"; show dumb.txt; }
grep -q "$ESC" dumb.txt && why "TERM=dumb got escape sequences"
finish "--quiet: no status line on a terminal; TERM=dumb: plain lines without escapes"

# 5. ringtrace mem: the line while recording, the report intact after it.
begin
if have "$PROGS/memprog"; then
	on_tty mem.txt "'$RT' mem -o '$T/m1' -- sh -c '$PROGS/memprog pattern >/dev/null; sleep 0.8'"
	grep -q "${CR}ringtrace: .*events/s" mem.txt || { why "mem: no status line"; show mem.txt; }
	grep -q "^ringtrace: " <(tr '\r' '\n' <mem.txt | sed "s/${ESC}\[K//g" | grep -A1 "TOTAL\|allocations") &&
		why "mem: a status line inside the report"
	grep -q "${ESC}\[K" mem.txt && ! tr '\r' '\n' <mem.txt | grep -q "events recorded" && why "mem: no summary"
fi
finish "ringtrace mem: the status line while recording, erased before the report"

# 6. The flight recorder: what the program committed and the snapshots
# written (20 snapshots, 50 ms apart: over a second).
begin
if have "$PROGS/flightprog"; then
	on_tty flight.txt "stty cols 200; '$RT' record --flight-recorder --snapshot-on 'fl:req if status >= 500' -o '$T/f1' -- '$PROGS/flightprog' statuses 20000"
	grep -q "ringtrace: [0-9.]* s | .* events/s | [1-9][0-9.]* [kM]* *events | [1-9][0-9]* snapshots* | " flight.txt ||
		{ why "no status line with events and snapshots"; show flight.txt 4; }
	ls -d "$T"/f1/snapshot-* >/dev/null 2>&1 || why "no snapshot written"
fi
finish "the flight recorder: the status line counts the program's events and the snapshots written"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
