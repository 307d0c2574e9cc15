#!/bin/bash
# mem_real.sh - real programs traced without harm: each one runs untraced
# and under `ringtrace record --mem` (some with --stacks too), and must
# print the same bytes, write the same files and exit with the same
# status; its trace must hold allocations, and the report's numbers must
# add up (tests/e2e/mem_progs/report_check.py) with no error in a correct
# program: no free of an unknown pointer, no double free. `ringtrace
# check` validates each trace when it is built.
#
# The programs: gcc's cc1 compiling a large generated file, python3 (its
# own allocator, then every object through malloc), sqlite3, a C++
# program (containers in threads, static constructors, exceptions,
# aligned and nothrow new, a std::bad_alloc), a program linked with
# jemalloc (the usable sizes in the trace are jemalloc's), one that forks
# and execs (children are not traced), and exit statuses.
#
#   tests/e2e/mem_real.sh [BUILD_DIR]
#
# Needs gcc, python3, sqlite3 and libjemalloc-dev (mk/mem_real.mk adds
# them to DEB_PKGS) and BUILD_DIR/tests/mem/* (make tests-build).
set -u
export LC_ALL=C PYTHONHASHSEED=0
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup memreal "${1:-build}"
trap 'rm -rf "$T"' EXIT
MP=$BUILD/tests/mem
SRC=$REPO/tests/e2e/mem_progs
TO=120

# The Debian python3 (a pyenv shim is a shell script that would be traced
# instead of the interpreter), or whichever python3 is first in PATH.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)

# `ringtrace check` is being written: used when it is built.
HAVE_CHECK=0
if "$RT" check --help >"$T/check.help" 2>&1 && ! grep -qi "not built" "$T/check.help"; then
	HAVE_CHECK=1
else
	echo "# ringtrace check is not built: traces are not validated by it (skipped)"
fi

# both TAG [record options --] PROGRAM ARGS...: runs the program untraced
# in TAG.0/ and traced into TAG.t in TAG.1/ (relative paths behave the
# same), with stdout in TAG.out0 and TAG.out1, stderr in TAG.err0 and
# TAG.err1 (the recorder's messages too), statuses in RC0 and RC1. Checks
# that stdout and status are the same and that no event was lost.
both() {
	local tag=$1 opts=()
	shift
	if [ "$1" = --stacks ] || [ "$1" = --buffer-size ]; then
		while [ "$1" != -- ]; do
			opts+=("$1")
			shift
		done
		shift
	fi
	mkdir -p "$T/$tag.0" "$T/$tag.1"
	# The subshell waits (no implicit exec of its last command): a
	# "Killed" goes to its stderr, the file.
	(cd "$T/$tag.0" && timeout $TO "$@"; exit) >"$T/$tag.out0" 2>"$T/$tag.err0"
	RC0=$?
	(cd "$T/$tag.1" && timeout $TO "$RT" record --mem "${opts[@]}" -o "$T/$tag.t" -- "$@"; exit) \
		>"$T/$tag.out1" 2>"$T/$tag.err1"
	RC1=$?
	eq "exit status traced (untraced $RC0)" "$RC1" "$RC0"
	if ! cmp -s "$T/$tag.out0" "$T/$tag.out1"; then
		why "stdout differs traced:"
		while IFS= read -r l; do why "$l"; done < <(diff "$T/$tag.out0" "$T/$tag.out1" | head -n 6)
	fi
	grep -q " 0 lost " "$T/$tag.err1" || { why "events lost or no summary:"; show "$T/$tag.err1" 3; }
}

# report TAG [--by KEY]: the report of TAG.t as JSON (TAG.json), its
# numbers checked; the facts in TAG.facts.
report() {
	local tag=$1
	shift
	if ! "$RT" report "$T/$tag.t" --json --top 0 "$@" >"$T/$tag.json" 2>"$T/$tag.rerr"; then
		why "report${*:+ $*} failed"
		show "$T/$tag.rerr"
		return 1
	fi
	local l
	while IFS= read -r l; do why "report${*:+ $*}: $l"; done < <("$PY" "$SRC/report_check.py" "$T/$tag.json" "$T/$tag.facts" 2>&1)
}

# fact TAG KEY: a number of the report's totals.
fact() { awk -v k="$2" '$1 == "total" && $2 == k { print $3 }' "$T/$1.facts" 2>/dev/null; }

# checked TAG: `ringtrace check` accepts the trace (when built).
checked() {
	[ $HAVE_CHECK = 1 ] || return 0
	"$RT" check "$T/$1.t" >"$T/$1.check" 2>&1 || { why "ringtrace check failed:"; show "$T/$1.check"; }
}

# ---- 1. gcc's compiler proper on a large generated file ---------------------
begin
CC1=$(gcc -print-prog-name=cc1 2>/dev/null)
if have "$CC1"; then
	awk -v n=200 -f "$SRC/gen_big.awk" >"$T/big.c"
	# The command the driver runs, taken from `gcc -###` (shell-quoted).
	line=$(cd "$T" && gcc -### -S -O1 big.c -o big.s 2>&1 | grep -E "^ [^ ]*/cc1 ")
	set -f
	eval "cc1_cmd=($line)"
	set +f
	eq "compiler proper" "${cc1_cmd[0]:-}" "$CC1"
	mkdir -p "$T/cc1.0" "$T/cc1.1"
	cp "$T/big.c" "$T/cc1.0/" && cp "$T/big.c" "$T/cc1.1/"
	both cc1 "${cc1_cmd[@]}"
	if [ -s "$T/cc1.0/big.s" ]; then
		cmp -s "$T/cc1.0/big.s" "$T/cc1.1/big.s" || why "the assembly differs traced"
	else
		why "no assembly written"
		show "$T/cc1.err0"
	fi
	report cc1
	[ "$(fact cc1 allocations)" -gt 100000 ] 2>/dev/null || why "only $(fact cc1 allocations) allocations"
	checked cc1
fi
finish "gcc's cc1 compiling a large file: same assembly and status, report consistent, no error"

# ---- 2. python3 --------------------------------------------------------------
begin
if have "$PY"; then
	both py "$PY" "$SRC/work.py" 100000
	eq "output lines" "$(wc -l <"$T/py.out0")" 3
	report py
	[ "$(fact py mmaps)" -gt 0 ] 2>/dev/null || why "no arena mmap of pymalloc seen"
	checked py
fi
finish "python3 (pymalloc): same output, allocations and arenas traced, report consistent"

begin
if have "$PY"; then
	export PYTHONMALLOC=malloc
	both pym --stacks -- "$PY" "$SRC/work.py" 40000
	unset PYTHONMALLOC
	eq "output lines" "$(wc -l <"$T/pym.out0")" 3
	report pym
	[ "$(fact pym allocations)" -gt 500000 ] 2>/dev/null || why "only $(fact pym allocations) allocations"
	[ "$(fact pym reallocs)" -gt 0 ] 2>/dev/null || why "no realloc"
	report pym --by stack
	checked pym
fi
finish "python3 with every object through malloc, with stacks: same output, report consistent by site and by stack"

# ---- 3. sqlite3 ------------------------------------------------------------
begin
if have "$(command -v sqlite3 || echo sqlite3)"; then
	both sql --stacks -- sqlite3 db ".read $SRC/workload.sql"
	[ "$(wc -l <"$T/sql.out0")" -ge 30 ] || { why "short output"; show "$T/sql.out0"; }
	sqlite3 "$T/sql.0/db" .dump >"$T/sql.dump0" 2>&1
	sqlite3 "$T/sql.1/db" .dump >"$T/sql.dump1" 2>&1
	cmp -s "$T/sql.dump0" "$T/sql.dump1" || why "the databases differ"
	report sql
	[ "$(fact sql allocations)" -gt 10000 ] 2>/dev/null || why "only $(fact sql allocations) allocations"
	checked sql
fi
finish "sqlite3 (20000 rows, grouped queries): same output and database, report consistent"

# ---- 4. C++ -------------------------------------------------------------------
begin
if have "$MP/cxx_containers"; then
	both cxx --stacks -- "$MP/cxx_containers" 20000
	grep -q "^nothrow huge: null$" "$T/cxx.out0" || { why "unexpected output:"; show "$T/cxx.out0"; }
	report cxx
	fams=$(sed -n 's/^families //p' "$T/cxx.facts")
	for f in new 'new\[\]' malloc; do
		echo ",$fams," | grep -q ",$f," || why "no family $f in the report (families: $fams)"
	done
	# alignas(64): aligned new and new[] (family 10 and 11, 2^6).
	"$RT" dump "$T/cxx.t" >"$T/cxx.dump" 2>&1
	grep -q "family=10 align_log2=6" "$T/cxx.dump" || why "no aligned new (align_log2=6) in the dump"
	grep -q "family=11 align_log2=6" "$T/cxx.dump" || why "no aligned new[] (align_log2=6) in the dump"
	[ "$(fact cxx failed)" -ge 1 ] 2>/dev/null || why "the nothrow new that failed is not counted"
	[ "$(fact cxx cross_thread_frees)" -gt 0 ] 2>/dev/null || why "no cross-thread free"
	report cxx --by stack
	report cxx --by function
	# Before main, the static constructors' new[] (the map and the string
	# are built in library functions); the exception objects, all freed.
	grep -Eq "^row _GLOBAL__sub_I_[^$'\t']*"$'\t'"allocations=[1-9].*families=.*new\[\]" "$T/cxx.facts" ||
		why "no new[] by a static constructor (_GLOBAL__sub_I_*)"
	row=$(grep "^row __cxa_allocate_exception"$'\t' "$T/cxx.facts")
	if ! [[ $row =~ allocations=([1-9][0-9]*)\ frees=([0-9]+) ]] || [ "${BASH_REMATCH[1]}" != "${BASH_REMATCH[2]}" ]; then
		why "exception objects (__cxa_allocate_exception): '${row#*$'\t'}'"
	fi
	checked cxx
fi
finish "C++ containers in 4 threads, static constructors, exceptions, aligned and nothrow new: families new and new[], aligned new seen, no error"

begin
if have "$MP/cxx_containers"; then
	both bad "$MP/cxx_containers" --bad-alloc
	report bad
	[ "$(fact bad failed)" = 1 ] || why "the operator new[] that threw: $(fact bad failed) failed allocations counted, not 1"
	checked bad
fi
finish "a std::bad_alloc thrown through the tracer's operator new[]: caught, counted as failed, its exception object seen allocated"

# ---- 5. jemalloc -----------------------------------------------------------
begin
if have "$MP/jemalloc_sizes"; then
	both jem "$MP/jemalloc_sizes"
	# jemalloc's size classes, as the program itself sees them.
	want="17 32
100 112
1000 1024
5000 5120
40000 40960"
	eq "usable sizes (jemalloc's classes)" "$(head -n 5 "$T/jem.out0" | tr -s ' ')" "$want"
	"$RT" dump "$T/jem.t" >"$T/jem.dump" 2>&1
	while read -r size usable; do
		grep -q "mem:alloc: .* size=$size usable=$usable family=1 " "$T/jem.dump" ||
			why "no malloc($size) with usable $usable in the trace"
	done <<<"$want"
	grep -q "mem:alloc: .* size=17 usable=24 " "$T/jem.dump" && why "malloc(17) usable 24: glibc's, not jemalloc's"
	report jem
	[ "$(fact jem allocations)" -ge 10000 ] 2>/dev/null || why "only $(fact jem allocations) allocations"
	checked jem
fi
finish "a program linked with jemalloc: its allocator is the one traced (usable sizes are jemalloc's classes)"

# ---- 6. fork and exec ------------------------------------------------------
begin
if have "$MP/fork_exec"; then
	both fork "$MP/fork_exec"
	eq "status" "$RC0" 5
	grep -q "^popen: clean$" "$T/fork.out1" || why "the tracer is still in LD_PRELOAD of a child"
	grep -q "^child: echo from exec$" "$T/fork.out1" || why "the exec'ed child did not print"
	report fork --by function
	# churn() runs 4 times in the parent (200 blocks each), once in the
	# forked child, which is not traced.
	row=$(grep "^row churn"$'\t' "$T/fork.facts")
	eq "churn() in the report" "${row#*$'\t'}" "allocations=800 frees=800 failed=0 families=malloc"
	checked fork
fi
finish "a program that forks and execs: same output and status, the parent traced, the children not"

# ---- exit statuses ---------------------------------------------------------
begin
if have "$PY"; then
	both ex3 "$PY" -c 'import sys; print("exiting"); sys.exit(3)'
	eq "status" "$RC0" 3
	report ex3
	checked ex3
	both ex9 "$PY" -c 'import os; print("dying", flush=True); os.kill(os.getpid(), 9)'
	eq "status of a program killed by SIGKILL" "$RC0" 137
	report ex9
	checked ex9
fi
finish "the program's exit status comes through: exit 3, killed by SIGKILL (137)"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
