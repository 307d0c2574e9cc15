#!/bin/bash
# errors.sh - every error names its subject: each command run on a missing
# path, a file where a trace directory is expected, a pid that does not
# exist, a program name nothing has, an unwritable output, a bad option
# value. The command must fail (non-zero status, no hang), print its
# message on one line that starts with "ringtrace CMD: " (or "ringtrace
# record: " for mem, which records through it), and the line must name
# the path, pid, name or option it is about; some check the whole wording.
#
#   tests/e2e/errors.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup errors "${1:-build}"
trap 'rm -rf "$T"' EXIT

NOPID=999999
while kill -0 "$NOPID" 2>/dev/null; do NOPID=$((NOPID + 1)); done
NOPATH=$T/missing/trace
mkdir empty
echo junk >afile

# fails PREFIX SUBJECT CMD ARGS...: the command fails, its first line on
# standard error starts with PREFIX and contains SUBJECT.
fails() {
	local prefix=$1 subject=$2
	shift 2
	timeout 30 "$RT" "$@" >out.txt 2>err.txt
	local rc=$?
	[ "$rc" != 0 ] && [ "$rc" != 124 ] || why "ringtrace $*: exit $rc"
	local line
	line=$(head -n 1 err.txt)
	[[ $line == "$prefix"* ]] || why "ringtrace $*: '$line' does not start with '$prefix'"
	[[ $line == *"$subject"* ]] || why "ringtrace $*: '$line' does not name '$subject'"
}

# says LINE CMD ARGS...: the first line on standard error is LINE.
says() {
	local want=$1
	shift
	timeout 30 "$RT" "$@" >out.txt 2>err.txt
	eq "ringtrace $*" "$(head -n 1 err.txt)" "$want"
}

begin
for c in dump check report; do
	fails "ringtrace $c: " "$NOPATH" $c "$NOPATH"
	fails "ringtrace $c: " "$T/empty" $c "$T/empty"
	fails "ringtrace $c: " "$T/afile" $c "$T/afile"
done
fails "ringtrace convert: " "$NOPATH" convert "$NOPATH" --to chrome
fails "ringtrace convert: " "$NOPATH" convert "$NOPATH" --to sqlite -o "$T/o.db"
fails "ringtrace convert: " "$NOPATH" convert "$NOPATH" --folded
fails "ringtrace convert: " "$T/empty" convert "$T/empty" --to chrome
fails "ringtrace stackmap: " "$NOPATH" stackmap "$NOPATH"
fails "ringtrace stackmap: " "$T/empty" stackmap "$T/empty"
fails "ringtrace stackmap: " "$NOPATH" stackmap --from-bin "$NOPATH"
fails "ringtrace stackmap: " "$T/afile" stackmap --from-bin "$T/afile"
fails "ringtrace recover: " "$T/afile" recover "$T/afile"
finish "trace paths: missing, empty, a file: every message names the path"

begin
says "ringtrace stackmap: cannot open trace '$NOPATH': No such file or directory" stackmap "$NOPATH"
says "ringtrace stackmap: cannot open trace '$T/afile': Not a directory" stackmap "$T/afile"
says "ringtrace dump: one trace directory only: 'a' and 'b'" dump a b
says "ringtrace check: one trace directory only: 'a' and 'b' (try 'ringtrace check --help')" check a b
finish "a path is not taken for a program name; two directories are both named"

begin
for c in list on off stat reset show snapshot-enable snapshot-disable snapshot recover stackmap top; do
	fails "ringtrace $c: " "$NOPID" $c "$NOPID"
done
fails "ringtrace enable: " "$NOPID" enable "$NOPID" 'a:*'
fails "ringtrace disable: " "$NOPID" disable "$NOPID" 'a:*'
fails "ringtrace buffer-size: " "$NOPID" buffer-size "$NOPID" 4M
fails "ringtrace stackmap: " "$NOPID" stackmap --reset "$NOPID"
fails "ringtrace record: " "$NOPID" record -p "$NOPID" -o "$T/rp"
for c in list on stat snapshot; do
	fails "ringtrace $c: " "no-such-program-xyz" $c no-such-program-xyz
done
says "ringtrace top: no process $NOPID" top "$NOPID"
finish "pids and names that are not there: every message names them"

begin
mkdir -p tr && "$RT" record -o tr/t -- "$DEMO" 3 >/dev/null 2>&1 || why "cannot record the demo"
says "ringtrace report: cannot write '$NOPATH/r.txt': its directory '$NOPATH' cannot be opened: No such file or directory" \
	report tr/t -o "$NOPATH/r.txt"
fails "ringtrace convert: " "$NOPATH/c.json" convert tr/t --to chrome -o "$NOPATH/c.json"
fails "ringtrace convert: " "$NOPATH/c.db" convert tr/t --to sqlite -o "$NOPATH/c.db"
says "ringtrace record: output directory '$NOPATH' cannot be created: No such file or directory" \
	record -o "$NOPATH" -- "$DEMO" 1
says "ringtrace record: output directory '$NOPATH' cannot be created: No such file or directory" \
	mem -o "$NOPATH" -- /bin/true
fails "ringtrace record: " "/nonexistent/prog" record -o "$T/rx" -- /nonexistent/prog
RINGTRACE_MALLOC_LIB=$T/nolib.so fails "ringtrace record: " "$T/nolib.so" record --mem -o "$T/rm" -- /bin/true
finish "outputs that cannot be written, a program or preload library that is not there: named"

begin
fails "ringtrace report: " "--top" report tr/t --top x
fails "ringtrace report: " "--by" report tr/t --by nothing
fails "ringtrace convert: " "--to" convert tr/t --to nothing -o x
fails "ringtrace convert: " "--weight" convert tr/t --folded --weight nothing
fails "ringtrace check: " "-n" check -n
fails "ringtrace top: " "-d" top 1 -d 0
fails "ringtrace buffer-size: " "4X" buffer-size 1 4X
fails "ringtrace stackmap: " "--top" stackmap tr/t --top x
fails "ringtrace dump: " "--bogus" dump --bogus
fails "ringtrace ps: " "--bogus" ps --bogus
fails "ringtrace: " "bogus" bogus
finish "bad options and values: every message names the option or value"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
