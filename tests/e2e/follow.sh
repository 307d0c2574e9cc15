#!/bin/bash
# follow.sh - `ringtrace record --follow-fork/--follow-exec`: each process
# of a tree gets a trace of its own (DIR/children/PID-NAME), holding its
# events and no other's, with the exact counts; the program's output and
# status are those of an untraced run; without the flags no child is
# traced; a followed child never waits more than 1 s for a recorder
# that does not answer, and runs untraced when the recorder is gone.
#
# The tree is tests/e2e/mem_progs/follow_tree.c (allocations, --mem): each
# process allocates from a function of its own, so the report by function
# tells whose allocations a trace holds. tests/e2e/progs/forker.c covers a
# program with its own tracepoints (no --mem).
#
#   tests/e2e/follow.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup follow "${1:-build}"
trap 'rm -rf "$T"' EXIT
FT=$BUILD/tests/mem/follow_tree
FORKER=$BUILD/tests/e2e/forker
MEMLIB=$BUILD/lib/libringtrace-malloc.so
export RINGTRACE_MALLOC_LIB=$MEMLIB
TO=60

# rows DIR: the report by function of DIR, one "function allocs frees" a
# line, sorted; "none" if the report finds no allocation.
rows() {
	"$RT" report "$1" --by function --json --top 0 2>"$T/$(basename "$1").rerr" | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    print("none"); sys.exit(0)
for r in sorted(d["rows"], key=lambda r: r["name"]):
    if r["name"].endswith("_work") or ".isra" in r["name"] or r["name"].startswith("quick_work"):
        print(r["name"].split(".")[0], r["allocations"], r["frees"])
'
}

# kind DIR: how a trace's process was followed ("fork", "exec", "" for the program).
kind() { sed -n 's/^[[:space:]]*ringtrace_follow = "\([a-z]*\)";$/\1/p' "$1/metadata"; }

# dir_of TAG FUNCTION: the child trace of TAG.t whose report has FUNCTION.
dir_of() {
	local d
	for d in "$T/$1.t"/children/*; do
		rows "$d" | grep -q "^$2 " && { echo "$d"; return; }
	done
}

# valid DIR: ringtrace check and babeltrace2 read it.
valid() {
	local b=$T/$(basename "$1")
	"$RT" check "$1" >"$b.check" 2>&1 || { why "ringtrace check $1 failed:"; show "$b.check"; }
	timeout $TO babeltrace2 "$1" >/dev/null 2>"$b.bterr" || { why "babeltrace2 $1 failed:"; show "$b.bterr"; }
}

# run TAG [record options]: follow_tree untraced (TAG.out0, RC0) and traced
# into TAG.t (TAG.out1, TAG.err1, RC1); output and status must be equal.
run() {
	local tag=$1
	shift
	timeout $TO "$FT" >"$T/$tag.out0" 2>&1
	RC0=$?
	timeout $TO "$RT" record --mem "$@" -o "$T/$tag.t" -- "$FT" >"$T/$tag.out1" 2>"$T/$tag.err1"
	RC1=$?
	eq "exit status traced" "$RC1" "$RC0"
	eq "exit status" "$RC0" 5
	cmp -s "$T/$tag.out0" "$T/$tag.out1" || { why "output differs traced:"; show "$T/$tag.out1" 10; }
	if grep -q "lost (0 buffer" "$T/$tag.err1" && grep " lost " "$T/$tag.err1" | grep -vq " 0 lost "; then
		why "events lost:"
		show "$T/$tag.err1"
	fi
}

ctl_before=$(ls /dev/shm/ 2>/dev/null | grep '^ringtrace\.ctl\.' | sort)
# Control blocks this script leaves (children that _exit() untraced keep
# theirs): removed at the end if their process is dead.
clean_ctl() {
	local f pid
	for f in $(comm -13 <(echo "$ctl_before") <(ls /dev/shm/ 2>/dev/null | grep '^ringtrace\.ctl\.' | sort)); do
		pid=${f#ringtrace.ctl.}
		kill -0 "$pid" 2>/dev/null || rm -f "/dev/shm/$f"
	done
}
trap 'clean_ctl; rm -rf "$T"' EXIT

# ---- 1. no flag: children left alone ------------------------------------------
begin
if have "$RT" "$FT" "$MEMLIB"; then
	run plain
	[ -e "$T/plain.t/children" ] && why "a children directory without --follow-*"
	eq "parent's allocations" "$(rows "$T/plain.t" | tr '\n' ' ')" "parent_work 100 100 "
	eq "summary lines" "$(grep -c ' events recorded' "$T/plain.err1")" 1
	valid "$T/plain.t"
fi
finish "without --follow-*: only the program is traced, its children are left alone"

# ---- 2. --follow-fork ---------------------------------------------------------
begin
if have "$RT" "$FT" "$MEMLIB"; then
	run fork --follow-fork
	eq "parent's allocations" "$(rows "$T/fork.t" | tr '\n' ' ')" "parent_work 100 100 "
	a=$(dir_of fork child_work)
	g=$(dir_of fork grandchild_work)
	q=$(dir_of fork quick_work)
	if [ -z "$a" ] || [ -z "$g" ] || [ -z "$q" ]; then
		why "missing child traces: child '$a' grandchild '$g' quick '$q'"
		while IFS= read -r l; do why "$l"; done < <(ls "$T/fork.t/children" 2>&1)
	else
		eq "child's allocations" "$(rows "$a" | tr '\n' ' ')" "child_work 120 100 "
		eq "grandchild's allocations" "$(rows "$g" | tr '\n' ' ')" "grandchild_work 33 33 "
		eq "quick child's allocations (exits at once with _exit)" "$(rows "$q" | tr '\n' ' ')" "quick_work 5 0 "
		for d in "$a" "$g" "$q"; do
			eq "$(basename "$d") followed as" "$(kind "$d")" fork
			valid "$d"
		done
		case $(basename "$a") in [0-9]*-follow_tree) ;; *) why "child directory named $(basename "$a")" ;; esac
	fi
	# The exec'ed program is not followed: no exec_work anywhere; the
	# fork child that exec'ed at once had no event: no trace for it.
	eq "traces of children" "$(ls "$T/fork.t/children" | wc -l)" 3
	grep -rq exec_work "$T/fork.t" && why "the exec'ed program was traced without --follow-exec"
	grep -q "had no event before it exec'ed or exited: no trace kept" "$T/fork.err1" ||
		why "no word about the child that exec'ed at once"
	eq "summary lines" "$(grep -c ' events recorded' "$T/fork.err1")" 4
	valid "$T/fork.t"
fi
finish "--follow-fork: each child and grandchild in its own trace, exact counts, the parent's trace without theirs"

# ---- 3. --follow-fork --follow-exec ------------------------------------------
begin
if have "$RT" "$FT" "$MEMLIB"; then
	run exec --follow-fork --follow-exec
	eq "parent's allocations" "$(rows "$T/exec.t" | tr '\n' ' ')" "parent_work 100 100 "
	e=$(dir_of exec exec_work)
	if [ -z "$e" ]; then
		why "no trace of the exec'ed program"
		while IFS= read -r l; do why "$l"; done < <(ls "$T/exec.t/children" 2>&1)
		show "$T/exec.err1" 8
	else
		eq "exec'ed program's allocations" "$(rows "$e" | tr '\n' ' ')" "exec_work 37 30 "
		eq "followed as" "$(kind "$e")" exec
		valid "$e"
	fi
	eq "traces of children" "$(ls "$T/exec.t/children" | wc -l)" 4
	eq "summary lines" "$(grep -c ' events recorded' "$T/exec.err1")" 5
fi
finish "--follow-exec: the program a child executes is traced into its own directory, with its exact counts"

# ---- 4. --follow-exec alone, and with --stacks --------------------------------
begin
if have "$RT" "$FT" "$MEMLIB"; then
	run execonly --follow-exec --stacks
	# Forked children are not followed; the exec'ed program is.
	eq "traces of children" "$(ls "$T/execonly.t/children" 2>/dev/null | wc -l)" 1
	e=$(dir_of execonly exec_work)
	if [ -n "$e" ]; then
		eq "exec'ed program's allocations" "$(rows "$e" | tr '\n' ' ')" "exec_work 37 30 "
		"$RT" report "$e" --by stack >"$T/stk" 2>&1 || { why "report --by stack failed"; show "$T/stk"; }
		grep -q "main" "$T/stk" || { why "no stack through main in the exec'ed program's report"; show "$T/stk"; }
		valid "$e"
	else
		why "no trace of the exec'ed program"
	fi
fi
finish "--follow-exec without --follow-fork, with --stacks: only the exec'ed program is followed, with its stacks"

# ---- 5. a program with its own tracepoints ------------------------------------
begin
if have "$RT" "$FORKER"; then
	timeout $TO "$FORKER" >"$T/fk.out0" 2>&1
	RC0=$?
	timeout $TO "$RT" record --follow-fork -o "$T/fk.t" -- "$FORKER" >"$T/fk.out1" 2>"$T/fk.err1"
	eq "exit status" "$?" "$RC0"
	cmp -s "$T/fk.out0" "$T/fk.out1" || why "output differs traced"
	timeout $TO babeltrace2 "$T/fk.t" >"$T/fk.bt" 2>&1
	eq "parent's fork:parent events" "$(grep -c 'fork:parent:' "$T/fk.bt")" 3
	eq "parent's fork:child events" "$(grep -c 'fork:child:' "$T/fk.bt")" 0
	c=$(ls -d "$T/fk.t"/children/* 2>/dev/null)
	if [ "$(echo "$c" | grep -c .)" = 1 ]; then
		timeout $TO babeltrace2 "$c" >"$T/fkc.bt" 2>&1
		eq "child's fork:child events" "$(grep -c 'fork:child:' "$T/fkc.bt")" 1000
		eq "child's fork:parent events" "$(grep -c 'fork:parent:' "$T/fkc.bt")" 0
		eq "child's first i" "$(grep -m1 -o 'fork:child: .*{ i = [0-9]* }' "$T/fkc.bt" | sed 's/.*i = \([0-9]*\).*/\1/')" 0
		valid "$c"
	else
		why "want one child trace, got: $c"
	fi
	# -e applies to the child too.
	timeout $TO "$RT" record --follow-fork -e 'fork:parent' -o "$T/fke.t" -- "$FORKER" >/dev/null 2>"$T/fke.err1"
	eq "child's events with -e fork:parent" "$(cat "$T"/fke.t/children/*/stream_* 2>/dev/null | wc -c)" 0
fi
finish "--follow-fork on a program with its own tracepoints: the child's 1000 events in its trace, none in the parent's; -e applies"

# ---- 6. no recorder: the child runs untraced, at once ------------------------
begin
if have "$FT" "$MEMLIB"; then
	"$FT" >"$T/gone.out0" 2>&1
	RC0=$?
	t0=$(date +%s%N)
	# (env, not timeout, is the one started with the variables: the
	# tracer would take itself out of LD_PRELOAD in timeout.)
	timeout $TO env RINGTRACE_FOLLOW="fork=1 exec=0 sb=262144 nsb=8 mode=0 stacks=0 bits=0 sock=ringtrace-follow-nobody-$$" \
		LD_PRELOAD="$MEMLIB" "$FT" >"$T/gone.out1" 2>&1
	RC1=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	eq "exit status" "$RC1" "$RC0"
	cmp -s "$T/gone.out0" "$T/gone.out1" || { why "output differs:"; show "$T/gone.out1"; }
	[ "$ms" -lt 1000 ] || why "took $ms ms"
fi
finish "a followed child whose recorder is gone runs untraced, without waiting"

# ---- 7. a recorder that does not answer: 1 s at most per child ---------------
begin
if have "$FT" "$MEMLIB"; then
	name=ringtrace-follow-mute-$$
	# Listens (connections wait in its backlog) but never accepts.
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind("\0" + sys.argv[1])
s.listen(16)
print("ready", flush=True)
time.sleep(30)' "$name" >"$T/mute.py" 2>&1 &
	mute=$!
	for _ in $(seq 100); do grep -q ready "$T/mute.py" && break; sleep 0.05; done
	t0=$(date +%s%N)
	timeout $TO env RINGTRACE_FOLLOW="fork=1 exec=0 sb=262144 nsb=8 mode=0 stacks=0 bits=0 sock=$name" \
		LD_PRELOAD="$MEMLIB" "$FT" >"$T/mute.out1" 2>&1
	RC1=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	kill $mute 2>/dev/null
	wait $mute 2>/dev/null
	eq "exit status" "$RC1" 5
	cmp -s "$T/gone.out0" "$T/mute.out1" || { why "output differs:"; show "$T/mute.out1"; }
	# Four forks, one of them nested: about 4 s of waiting, bounded.
	[ "$ms" -ge 3500 ] && [ "$ms" -lt 12000 ] || why "took $ms ms (want 4 waits of 1 s)"
fi
finish "a followed child waits 1 s at most for a recorder that does not answer, then goes on"

# ---- 8. a shell running programs: every one followed, nothing else printed ---
begin
if have "$RT" "$MEMLIB"; then
	timeout $TO "$RT" record --mem --follow-fork --follow-exec -o "$T/sh.t" -- \
		bash -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do seq $i $i; done; echo done; exit 3' \
		>"$T/sh.out" 2>"$T/sh.err"
	eq "exit status" "$?" 3
	eq "output" "$(tr '\n' ' ' <"$T/sh.out")" "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 done "
	eq "traces of seq" "$(ls "$T/sh.t/children" | grep -c -- '-seq$')" 20
	grep -v '^ringtrace record: ' "$T/sh.err" >"$T/sh.other"
	[ -s "$T/sh.other" ] && { why "other messages:"; show "$T/sh.other"; }
	for d in "$T/sh.t"/children/*-seq; do
		"$RT" check "$d" >/dev/null 2>&1 || why "ringtrace check $d failed"
		"$RT" report "$d" >/dev/null 2>&1 || why "ringtrace report $d failed"
	done
fi
finish "a shell running seq 20 times: each one traced into its own directory, the shell's status and output kept"

# ---- 9. options that do not go together ---------------------------------------
begin
if have "$RT"; then
	"$RT" record --follow-fork -p 1 >/dev/null 2>"$T/bad1" && why "--follow-fork -p accepted"
	grep -q "follow" "$T/bad1" || show "$T/bad1"
	"$RT" record --follow-exec --flight-recorder -o "$T/bad.t" -- /bin/true >/dev/null 2>"$T/bad2" &&
		why "--follow-exec --flight-recorder accepted"
	[ -e "$T/bad.t" ] && why "a directory was made for a refused command"
fi
finish "--follow-* with -p or the flight recorder is refused"

clean_ctl
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
