#!/bin/bash
# sec_files.sh - root's ringtrace never writes through a name another user
# planted (docs/security.md, "Output files"). As root, with a second user
# made here (removed at exit):
#   - record -o into an empty directory that user owns is refused; with
#     --allow-shared-dir, symlinks planted there (stream_N, .metadata.tmp,
#     metadata, stacks) once the program runs are never followed, and
#     neither are symlinks planted in a loop while record runs;
#   - record -o naming that user's symlink to an empty directory is refused
#     and the directory stays empty;
#   - convert --to sqlite -o out.db leaves alone a symlink out.db.tmp (the
#     name it used to write through);
#   - convert (sqlite, chrome, folded), report (--html and text) and
#     stackmap --bin refuse a directory that user owns or a world-writable
#     one without the sticky bit, accept a sticky one, and with
#     --allow-shared-dir replace a planted symlink at the output name (and
#     at the temporary names of the old code) rather than follow it;
#   - mem -o and record --flight-recorder -o refuse that user's directory.
# The targets are root-owned mode-600 files with known content (and an
# empty root-owned directory): their checksums must not change.
#
#   tests/e2e/sec_files.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
ulimit -c 0
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup sec-files "${1:-build}"
MP=$BUILD/tests/e2e/memprog
export RINGTRACE_MALLOC_LIB=$BUILD/lib/libringtrace-malloc.so
TO=120
U=rtsecf$$
PLANTER=

cleanup() {
	if [ -n "$PLANTER" ]; then
		kill "$PLANTER" 2>/dev/null
		wait "$PLANTER" 2>/dev/null
	fi
	id "$U" >/dev/null 2>&1 && userdel "$U" 2>/dev/null
	cd / && rm -rf "$T"
}
trap cleanup EXIT

# stop: the result line, then exit.
stop() {
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
	exit
}

if [ "$(id -u)" != 0 ]; then
	ok "skipped: needs root (it makes a second user)"
	stop
fi
begin
have "$RT" "$DEMO" "$MP" "$RINGTRACE_MALLOC_LIB" || { finish "the programs are built"; stop; }
if ! useradd -M -N -d /nonexistent -s /usr/sbin/nologin "$U" 2>"$T/useradd.err"; then
	notok "create the second user $U" "$(cat "$T/useradd.err")"
	stop
fi
UG=$(id -g "$U")
chmod 755 "$T"

# as_u CMD...: CMD as the other user.
as_u() { timeout -k 5 $TO setpriv --reuid="$U" --regid="$UG" --clear-groups -- "$@"; }

# The targets: root-owned mode-600 files, and an empty root-owned directory.
V=$T/victims
mkdir -m 755 "$V" "$T/vdir"
NAMES="metadata_tmp metadata stacks_bin sqlite_tmp"
for n in $(seq 0 63); do NAMES="$NAMES stream_$n"; done
for w in sqlite chrome folded html text bin; do NAMES="$NAMES ${w}_out ${w}_tmp ${w}_dot"; done
for n in $NAMES; do
	printf 'victim %s: root only\n' "$n" >"$V/$n"
	chmod 600 "$V/$n"
done
(cd "$V" && sha256sum -- * >"$T/victims.sum")

# victims_intact: every target has its content, the directory is empty.
victims_intact() {
	local bad
	bad=$(cd "$V" && sha256sum --quiet -c "$T/victims.sum" 2>&1)
	[ -z "$bad" ] || why "a target was written through a planted name: $bad"
	[ -z "$(ls -A "$T/vdir")" ] || why "files were written into the target directory: $(ls -A "$T/vdir" | head -5 | tr '\n' ' ')"
}

# udir NAME: an empty directory owned by the other user.
udir() {
	mkdir -m 755 "$T/$1"
	chown "$U:$UG" "$T/$1"
}

# run NAME CMD...: CMD (under timeout), stdout and stderr in NAME.out and
# NAME.err, status in RC.
run() {
	local n=$1
	shift
	{ timeout -k 5 $TO "$@" >"$T/$n.out" 2>"$T/$n.err"; } 2>/dev/null
	RC=$?
}

# refused NAME WHAT: status non-zero and one line on stderr naming WHAT.
refused() {
	[ "$RC" -ne 0 ] || why "status 0: not refused"
	grep -q -- "$2" "$T/$1.err" || { why "no '$2' on stderr:"; show "$T/$1.err"; }
}

# ---- record -o into another user's directory -------------------------------

begin
udir a
run a1 "$RT" record -o "$T/a" -- "$DEMO"
refused a1 "owned by uid"
eq "lines on stderr" "$(wc -l <"$T/a1.err")" 1
[ -z "$(ls -A "$T/a")" ] || why "files written into the refused directory: $(ls -A "$T/a")"
finish "record -o an empty directory another user owns: refused, one line, nothing written"

# The program, started by record once the directory is opened, has the
# other user plant symlinks under the names record is about to write.
cat >"$T/plant.sh" <<EOF
#!/bin/bash
d=\$1
shift
for n in \$(seq 0 63); do
	setpriv --reuid=$U --regid=$UG --clear-groups -- ln -s "$V/stream_\$n" "\$d/stream_\$n"
done
setpriv --reuid=$U --regid=$UG --clear-groups -- ln -s "$V/metadata_tmp" "\$d/.metadata.tmp"
setpriv --reuid=$U --regid=$UG --clear-groups -- ln -sf "$V/metadata" "\$d/metadata"
setpriv --reuid=$U --regid=$UG --clear-groups -- ln -s "$T/vdir" "\$d/stacks"
exec "\$@"
EOF
chmod 755 "$T/plant.sh"

begin
udir a2
run a2 "$RT" record --allow-shared-dir --stacks -o "$T/a2" -- "$T/plant.sh" "$T/a2" "$DEMO"
victims_intact
[ -L "$T/a2/stream_0" ] || why "stream_0 is no longer the planted symlink (record should have failed to create it)"
if [ -L "$T/a2/metadata" ] || [ ! -f "$T/a2/metadata" ]; then
	why "metadata is not a regular file: the rename should have replaced the planted link"
	show "$T/a2.err"
fi
finish "record --allow-shared-dir: symlinks planted once the program runs are never followed"

# ---- the same, planted in a loop while record runs ---------------------------

begin
udir b
# Planting starts when record's first file appears (an empty directory
# is required to begin with) and goes on until told to stop.
as_u bash -c '
d=$1 v=$2
shopt -s nullglob dotglob
while f=("$d"/*); [ ${#f[@]} -eq 0 ] && [ ! -e "$d/../b.stop" ]; do :; done
while [ ! -e "$d/../b.stop" ]; do
	for n in 0 1 2 3 4 5 6 7; do ln -s "$v/stream_$n" "$d/stream_$n" 2>/dev/null; done
	ln -s "$v/metadata_tmp" "$d/.metadata.tmp" 2>/dev/null
	ln -s "$v/metadata" "$d/metadata" 2>/dev/null
	ln -s "$v/stacks_bin" "$d/stacks" 2>/dev/null
	rm -f "$d"/.metadata.*.tmp 2>/dev/null
done' _ "$T/b" "$V" &
PLANTER=$!
run b "$RT" record --allow-shared-dir --stacks -o "$T/b" -- "$DEMO"
touch "$T/b.stop"
wait "$PLANTER" 2>/dev/null
PLANTER=
victims_intact
[ -n "$(find "$T/b" -maxdepth 1 -type l)" ] || why "no symlink was planted while record ran: the race was not run"
finish "record --allow-shared-dir: symlinks planted in a loop while it runs are never followed"

# ---- -o is the other user's symlink to an empty directory --------------------

begin
udir c
as_u ln -s "$T/vdir" "$T/c/out"
run c1 "$RT" record -o "$T/c/out" -- "$DEMO"
refused c1 "symbolic link"
run c2 "$RT" record --allow-shared-dir -o "$T/c/out" -- "$DEMO"
refused c2 "symbolic link"
victims_intact
finish "record -o another user's symlink to an empty directory: refused, the directory stays empty"

# ---- record -o a world-writable directory without the sticky bit -------------

begin
mkdir -m 777 "$T/ww"
chmod 777 "$T/ww"
run ww "$RT" record -o "$T/ww" -- "$DEMO"
refused ww "not sticky"
[ -z "$(ls -A "$T/ww")" ] || why "files written into the refused directory"
finish "record -o a world-writable directory without the sticky bit: refused"

# ---- single output files -------------------------------------------------------

TR=$T/tr
run tr "$RT" record --mem --stacks -o "$TR" -- "$MP" pattern
[ "$RC" -eq 0 ] || { notok "record the trace to convert" "$(tail -3 "$T/tr.err")"; stop; }

begin
mkdir -m 755 "$T/d1"
ln -s "$V/sqlite_tmp" "$T/d1/out.db.tmp"
run d1 "$RT" convert "$TR" --to sqlite -o "$T/d1/out.db"
[ "$RC" -eq 0 ] || { why "convert failed"; show "$T/d1.err"; }
victims_intact
[ -f "$T/d1/out.db" ] && [ ! -L "$T/d1/out.db" ] || why "out.db is not a regular file"
n=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from allocations").fetchone()[0])' "$T/d1/out.db" 2>&1)
[[ $n =~ ^[1-9][0-9]*$ ]] || why "out.db holds no allocations: $n"
finish "convert --to sqlite -o out.db with a symlink out.db.tmp: the link's target untouched"

# writer W FILE: W's command that writes FILE, in CMD.
writer() {
	case $1 in
	sqlite) CMD=("$RT" convert "$TR" --to sqlite -o "$2") ;;
	chrome) CMD=("$RT" convert "$TR" --to chrome -o "$2") ;;
	folded) CMD=("$RT" convert "$TR" --folded -o "$2") ;;
	html) CMD=("$RT" report "$TR" --html -o "$2") ;;
	text) CMD=("$RT" report "$TR" -o "$2") ;;
	bin) CMD=("$RT" stackmap "$TR" --bin "$2") ;;
	esac
}

for w in sqlite chrome folded html text bin; do
	begin
	udir "u_$w"
	writer "$w" "$T/u_$w/out"
	run "u1_$w" "${CMD[@]}"
	refused "u1_$w" "owned by uid"
	[ -z "$(ls -A "$T/u_$w")" ] || why "a file was written into the refused directory"
	as_u ln -s "$V/${w}_out" "$T/u_$w/out"
	as_u ln -s "$V/${w}_tmp" "$T/u_$w/out.tmp"
	as_u ln -s "$V/${w}_dot" "$T/u_$w/.out.tmp"
	run "u2_$w" "${CMD[@]}" --allow-shared-dir
	[ "$RC" -eq 0 ] || { why "with --allow-shared-dir: status $RC"; show "$T/u2_$w.err"; }
	victims_intact
	[ -f "$T/u_$w/out" ] && [ ! -L "$T/u_$w/out" ] || why "out is not a regular file that replaced the link"
	[ -s "$T/u_$w/out" ] || why "out is empty"
	finish "$w: another user's directory refused; with --allow-shared-dir planted links replaced, never followed"

	begin
	mkdir -m 777 "$T/ww_$w"
	chmod 777 "$T/ww_$w"
	writer "$w" "$T/ww_$w/out"
	run "ww_$w" "${CMD[@]}"
	refused "ww_$w" "not sticky"
	[ -z "$(ls -A "$T/ww_$w")" ] || why "a file was written into the refused directory"
	mkdir -m 1777 "$T/st_$w"
	chmod 1777 "$T/st_$w"
	writer "$w" "$T/st_$w/out"
	run "st_$w" "${CMD[@]}"
	[ "$RC" -eq 0 ] || { why "a sticky directory: status $RC"; show "$T/st_$w.err"; }
	[ -s "$T/st_$w/out" ] || why "a sticky directory: no output"
	finish "$w: a world-writable directory refused without the sticky bit, accepted with it"
done

# ---- mem and snapshot directories --------------------------------------------

begin
udir m
run m "$RT" mem -o "$T/m" -- "$MP" pattern
refused m "owned by uid"
[ -z "$(ls -A "$T/m")" ] || why "files written into the refused directory"
finish "mem -o another user's directory: refused"

begin
udir s
run s "$RT" record --flight-recorder -o "$T/s" -- "$DEMO"
refused s "owned by uid"
[ -z "$(ls -A "$T/s")" ] || why "files written into the refused directory"
finish "record --flight-recorder -o another user's directory (snapshot-N, recovered): refused"

stop
