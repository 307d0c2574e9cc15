#!/bin/bash
# readers.sh - the readers (check, dump, report, convert) on traces that are
# odd but real, or planted with things that must not hang them:
#   - a FIFO, a directory, a socket or a symbolic link loop where a stream
#     file would be: `check` reports each as a problem, `dump` warns;
#   - DIR/mem/aggregate.bin as a FIFO: `report` fails with one line, at once;
#   - `report` on a trace cut short with no allocation events (a qsort of
#     nothing, undefined behaviour that UBSan stops on, in the ASan build);
#   - a program with 300 named threads: every reader reads its trace and
#     shows the names, and so does babeltrace2 when installed;
#   - a trace from before per-thread env keys, with all names in one long
#     thread_names literal, still reads;
#   - `convert --to sqlite` of a trace with 20,000 event classes ends (it
#     took hours when each class cost time in proportion to all others).
#
#   tests/e2e/readers.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
ulimit -c 0
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup readers "${1:-build}"
LIM=60
cleanup() { cd / && rm -rf "$T"; }
trap cleanup EXIT

# run OUT CMD...: CMD under timeout, stdout in OUT, stderr in OUT.err,
# status in RC (124 when it had to be stopped).
run() {
	local out=$1
	shift
	{ timeout -k 5 $LIM "$@" >"$out" 2>"$out.err"; } 2>/dev/null
	RC=$?
}

# ---- a plain trace ------------------------------------------------------------

begin
if have "$RT" "$DEMO"; then
	run plain.rec "$RT" record -o plain -- "$DEMO"
	eq "record status" "$RC" 0
	# The demo's events land on the CPUs it ran on: any stream file.
	ls plain/stream_[0-9]* >/dev/null 2>&1 || why "no stream file in plain/"
fi
finish "a plain trace of the demo"

# ---- stream entries that are no stream files --------------------------------

# plant KIND DIR: put a KIND (fifo, dir, socket, loop) named stream_99 in DIR.
plant() {
	case $1 in
	fifo) mkfifo "$2/stream_99" ;;
	dir) mkdir "$2/stream_99" ;;
	socket) python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$2/stream_99" ;;
	loop) ln -s stream_99 "$2/stream_99" ;;
	esac
}
declare -A KIND_TEXT=([fifo]="a FIFO" [dir]="a directory" [socket]="a socket" [loop]="a symbolic link loop")
for kind in fifo dir socket loop; do
	begin
	rm -rf "e_$kind"
	cp -r plain "e_$kind" && plant "$kind" "e_$kind"
	run "e_$kind.chk" "$RT" check "e_$kind"
	eq "check status" "$RC" 1
	grep -qx "e_$kind/stream_99: not a stream file: ${KIND_TEXT[$kind]}" "e_$kind.chk" ||
		{ why "check names no problem in stream_99"; show "e_$kind.chk"; }
	tail -n 1 "e_$kind.chk" | grep -q ', 1 problems$' || { why "check: not 1 problem"; show "e_$kind.chk"; }
	run "e_$kind.dump" "$RT" dump "e_$kind"
	eq "dump status" "$RC" 0
	grep -q "warning: e_$kind/stream_99: ${KIND_TEXT[$kind]}, not a stream file" "e_$kind.dump.err" ||
		{ why "dump gave no warning"; show "e_$kind.dump.err"; }
	[ "$(wc -l <"e_$kind.dump")" = "$(timeout $LIM "$RT" dump plain | wc -l)" ] ||
		why "dump did not print every event of the other streams"
	finish "a stream entry that is $kind: check reports a problem, dump warns"
done

begin
rm -rf e_index
cp -r plain e_index && mkdir e_index/index && : >e_index/index/stream_0.idx
run e_index.chk "$RT" check e_index
eq "check status" "$RC" 0
run e_index.dump "$RT" dump e_index
eq "dump status" "$RC" 0
eq "dump stderr" "$(cat e_index.dump.err)" ""
finish "LTTng's index/ directory in a trace: no problem, no warning"

# ---- DIR/mem/aggregate.bin as a FIFO ----------------------------------------

begin
rm -rf aggfifo
cp -r plain aggfifo && mkdir aggfifo/mem && mkfifo aggfifo/mem/aggregate.bin
run aggfifo.rep "$RT" report aggfifo
[ "$RC" != 0 ] && [ "$RC" != 124 ] || why "report status $RC (124: it blocked)"
grep -qx "ringtrace report: cannot read 'aggfifo/mem/aggregate.bin': not a regular file" aggfifo.rep.err ||
	{ why "no clear message"; show aggfifo.rep.err; }
finish "report with a FIFO as mem/aggregate.bin: fails at once with one line"

begin
rm -f bin.fifo
mkfifo bin.fifo
run binfifo "$RT" stackmap --from-bin bin.fifo
[ "$RC" != 0 ] && [ "$RC" != 124 ] || why "stackmap status $RC (124: it blocked)"
grep -qx "ringtrace stackmap: 'bin.fifo' is not a regular file of at most 1 GiB" binfifo.err ||
	{ why "no clear message"; show binfifo.err; }
finish "stackmap --from-bin with a FIFO: fails at once with one line"

begin
rm -rf mdfifo
cp -r plain mdfifo && rm mdfifo/metadata && mkfifo mdfifo/metadata
for cmd in dump check report "convert --to sqlite -o mdfifo.db"; do
	# shellcheck disable=SC2086
	run mdfifo.out "$RT" $cmd mdfifo
	[ "$RC" != 0 ] && [ "$RC" != 124 ] || why "$cmd: status $RC (124: it blocked)"
	grep -q "metadata.* not a regular file" mdfifo.out.err || { why "$cmd: no clear message"; show mdfifo.out.err; }
done
finish "a FIFO as metadata: every reader fails at once with one line"

# ---- report on a cut trace without allocation events --------------------------

begin
rm -rf cut
# The biggest stream (the CPU the demo ran on most).
cp -r plain cut && truncate -s 50000 "cut/$(cd cut && ls -S stream_[0-9]* | head -1)"
run cut.rep "$RT" report cut
eq "report status" "$RC" 1
if grep -q "runtime error\|ERROR: AddressSanitizer" cut.rep.err; then
	why "sanitizer report"
	show cut.rep.err
fi
grep -q "truncated packet" cut.rep.err || { why "no read error named"; show cut.rep.err; }
finish "report on a cut trace with no allocation events: a read error, no undefined behaviour"

# ---- 300 named threads ---------------------------------------------------------

LTN=$PROGS/longer-thread-name-prog

# names_seen PREFIX FILE: how many distinct PREFIX<i> FILE shows.
names_seen() { grep -o "$1[0-9]*" "$2" | sort -u | wc -l; }

# readers_ok DIR PREFIX: dump, check, report --html and convert (chrome,
# sqlite) of DIR succeed and show the name PREFIX<i> of each of the 300
# threads.
readers_ok() {
	local d=$1 pre=$2
	run "$d.dump" "$RT" dump "$d"
	eq "dump status" "$RC" 0
	[ "$RC" = 0 ] || show "$d.dump.err"
	eq "ltn:hello events in dump" "$(grep -c ' ltn:hello: ' "$d.dump")" 300
	eq "each event under its thread's name" \
		"$(sed -n "s/^ *$pre\\([0-9]*\\)-[0-9]* .* ltn:hello: i=\\([0-9]*\\)\$/\\1 \\2/p" "$d.dump" |
			awk '$1 == $2' | wc -l)" 300
	run "$d.chk" "$RT" check "$d"
	eq "check status" "$RC" 0
	[ "$RC" = 0 ] || show "$d.chk"
	run "$d.rep" "$RT" report --html -o "$d.html" "$d"
	eq "report status" "$RC" 0
	[ "$RC" = 0 ] || show "$d.rep.err"
	run "$d.conv" "$RT" convert "$d" --to chrome -o "$d.json"
	eq "convert chrome status" "$RC" 0
	eq "thread names in the Chrome trace" "$(names_seen "$pre" "$d.json")" 300
	run "$d.conv" "$RT" convert "$d" --to sqlite -o "$d.db"
	eq "convert sqlite status" "$RC" 0
	[ "$RC" = 0 ] || show "$d.conv.err"
	if command -v sqlite3 >/dev/null; then
		eq "named threads with one event in the db" \
			"$(sqlite3 "$d.db" "SELECT count(*) FROM threads WHERE comm LIKE '$pre%' AND events = 1")" 300
	fi
}

begin
if have "$RT" "$LTN"; then
	rm -rf ltn
	run ltn.rec "$RT" record -o ltn -- "$LTN" 300
	eq "record status" "$RC" 0
	# The writer: a key per thread, and no literal near the old 4 KiB.
	eq "env keys thread_name_<tid> naming longer-thr-*" \
		"$(grep -c '^	thread_name_[0-9]* = "longer-thr-[0-9]*";$' ltn/metadata)" 300
	[ "$(awk '{ if (length($0) > m) m = length($0) } END { print m }' ltn/metadata)" -lt 1024 ] ||
		why "a metadata line of 1 KiB or more"
	readers_ok ltn longer-thr-
	if command -v babeltrace2 >/dev/null; then
		{ timeout -k 5 $LIM babeltrace2 ltn >ltn.bt 2>ltn.bt.err; } 2>/dev/null
		eq "babeltrace2 status" "$?" 0
		eq "ltn:hello events in babeltrace2" "$(grep -c 'ltn:hello:' ltn.bt)" 300
		{ RINGTRACE=$RT timeout -k 5 $LIM sh "$REPO/tests/e2e/compare_babeltrace.sh" ltn >ltn.cmp 2>&1; } 2>/dev/null ||
			{ why "dump and babeltrace2 differ"; show ltn.cmp; }
	fi
fi
finish "300 named threads: every reader reads the trace and names each thread"

# The same trace as older versions wrote it: every name in one literal of
# about 6 KiB, thread_names = "tid=comm,...", and no thread_name_<tid>
# keys. The names in it differ from those of the threads' records
# (legacy-thr-<i>), so that the readers are seen to take them from it.
begin
if [ -f ltn/metadata ]; then
	rm -rf ltn_old
	cp -r ltn ltn_old
	python3 - ltn_old/metadata <<'PY' || why "rewriting the metadata failed"
import re, sys
p = sys.argv[1]
text = open(p).read()
keys = re.findall(r'^\tthread_name_(\d+) = "([^"]*)";\n', text, re.M)
text = re.sub(r'^\tthread_name_\d+ = "[^"]*";\n', '', text, flags=re.M)
one = ",".join("%s=%s" % (tid, comm.replace("longer-", "legacy-")) for tid, comm in keys)
assert len(one) > 4096, len(one)
text = text.replace("env {\n", 'env {\n\tthread_names = "%s";\n' % one, 1)
open(p, "w").write(text)
PY
	grep -q 'thread_name_[0-9]' ltn_old/metadata && why "thread_name_<tid> keys left"
	readers_ok ltn_old legacy-thr-
fi
finish "a trace with all thread names in one 6 KiB literal (older versions) still reads"

# ---- many event classes ------------------------------------------------------------

# gen_classes DIR N EVENTS: a ctf_gen trace with N more classes (gen:c<k>)
# and EVENTS events cycling over all classes.
gen_classes() {
	rm -rf "$1"
	"$CTFGEN" --classes "$2" --events "$3" --cpus 1 "$1" >"$1.gen" 2>&1 || why "ctf_gen failed"
}

# The bound is a hang guard, not a timing: the old code needed hours.
begin
if have "$CTFGEN" && command -v sqlite3 >/dev/null; then
	# 20,000 classes with one event each (and the 7 fixed classes: the
	# events cycle over all, ringtrace:thread aside).
	gen_classes many 20000 20007
	{ timeout -k 5 120 "$RT" convert many --to sqlite -o many.db >many.conv 2>&1; } 2>/dev/null
	eq "convert status (124: still running after 120 s)" "$?" 0
	if [ -f many.db ]; then
		eq "event_classes rows" "$(sqlite3 many.db "SELECT count(*) FROM event_classes")" 20007
		eq "tables gen:c*" "$(sqlite3 many.db "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name GLOB 'ev_gen_c*'")" 20000
		eq "classes with one event" "$(sqlite3 many.db "SELECT count(*) FROM event_classes WHERE name LIKE 'gen:c%' AND events = 1")" 20000
		eq "a row of the last class" "$(sqlite3 many.db "SELECT n FROM ev_gen_c19999")" 20006
		eq "events in all" "$(sqlite3 many.db "SELECT sum(events) FROM event_classes")" \
			"$(timeout $LIM "$RT" dump many | wc -l)"
	fi
fi
finish "convert --to sqlite: 20,000 event classes with events, a table each"

begin
if have "$CTFGEN" && command -v sqlite3 >/dev/null; then
	# 100,000 classes, 1,000 events: the classes without events cost
	# no table.
	gen_classes most 100000 1000
	{ timeout -k 5 120 "$RT" convert most --to sqlite -o most.db >most.conv 2>&1; } 2>/dev/null
	eq "convert status (124: still running after 120 s)" "$?" 0
	if [ -f most.db ]; then
		eq "event_classes rows" "$(sqlite3 most.db "SELECT count(*) FROM event_classes")" 100007
		eq "classes with a table" "$(sqlite3 most.db "SELECT count(*) FROM event_classes WHERE table_name IS NOT NULL")" \
			"$(sqlite3 most.db "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name GLOB 'ev_*'")"
		eq "classes with events, without" \
			"$(sqlite3 most.db "SELECT sum(events > 0), sum(events = 0 AND table_name IS NULL) FROM event_classes")" "1000|99007"
	fi
fi
finish "convert --to sqlite: 100,000 event classes, 1,000 events"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
