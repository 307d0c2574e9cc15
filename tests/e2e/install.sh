#!/bin/bash
# install.sh - the installed tree, as a user gets it from `make install`:
# into a temporary PREFIX, a program built outside the source tree with
# `pkg-config --cflags --libs ringtrace` (the example of ringtrace(3)),
# recorded with the installed command; the installed `ringtrace mem` on a
# program that was not rebuilt, its report checked; the installed command
# moved with its prefix (the preload library found in bin/../lib) and
# installed with a LIBDIR of its own (found there); `man` on every
# installed page; the installed bash completion loaded by bash-completion
# in an interactive bash; a DESTDIR stage and `make uninstall`; an
# unwritable prefix refused. Runs `make install` on BUILD_DIR's build.
#
#   tests/e2e/install.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup install "${1:-build}"
trap 'rm -rf "$T"' EXIT
unset RINGTRACE_MALLOC_LIB
O=${BUILD#"$REPO"/}

# inst LOG ARGS...: make install (or uninstall) on this build, quietly.
inst() {
	local log=$1
	shift
	make -C "$REPO" --no-print-directory O="$O" "$@" >"$log" 2>&1 || { why "make $* failed"; show "$log"; return 1; }
}

P=$T/prefix
PC="env PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config"

begin
if inst inst1.log install PREFIX="$P"; then
	for f in bin/ringtrace lib/libringtrace.so lib/libringtrace.so.0 lib/libringtrace-malloc.so \
		include/ringtrace/ringtrace.h include/ringtrace/ringtrace-api.h include/ringtrace/ringtrace-abi.h \
		lib/pkgconfig/ringtrace.pc share/man/man1/ringtrace.1 share/man/man1/ringtrace-record.1 \
		share/man/man1/ringtrace-ps.1 share/man/man3/ringtrace.3 share/bash-completion/completions/ringtrace \
		share/doc/ringtrace/README.md; do
		[ -e "$P/$f" ] || why "not installed: $f"
	done
	eq "libringtrace.so -> soname" "$(readlink "$P/lib/libringtrace.so")" "libringtrace.so.0"
	eq "soname of the installed library" \
		"$(readelf -d "$P/lib/libringtrace.so.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')" "libringtrace.so.0"
	eq "pkg-config --libs" "$(echo $($PC --libs ringtrace))" "-L$P/lib -lringtrace"
	eq "pkg-config --cflags" "$(echo $($PC --cflags ringtrace))" "-I$P/include"
fi
finish "make install PREFIX=DIR: command, libraries, headers, ringtrace.pc, pages, completion, docs"

# ---- a program of a user: the example of ringtrace(3) ---------------------
begin
if [ -x "$P/bin/ringtrace" ]; then
	mkdir -p user && cd user || exit 1
	# The first literal block of the page is the program.
	awk '/^\.Bd -literal/ { n++; next } /^\.Ed/ && n == 1 { exit } n == 1' "$P/share/man/man3/ringtrace.3" |
		sed 's/\\e/\\/g' >shop.c
	# Nothing of the source tree: the compiler sees the installed headers only.
	if cc -o shop shop.c $($PC --cflags --libs ringtrace) -Wl,-rpath,"$($PC --variable=libdir ringtrace)" \
		>cc.log 2>&1; then
		ldd ./shop | grep -q "libringtrace.so.0 => $P/lib/libringtrace.so.0" ||
			why "shop does not load the installed library: $(ldd ./shop | grep ringtrace)"
		timeout 60 "$P/bin/ringtrace" record -o tr -- ./shop >rec.out 2>rec.err || { why "record failed"; show rec.err; }
		timeout 60 "$P/bin/ringtrace" dump tr >dump.txt 2>dump.err || { why "dump failed"; show dump.err; }
		eq "shop:order events" "$(grep -c ' shop:order: ' dump.txt)" 1000
		eq "shop:failed events" "$(grep -c ' shop:failed: status=-1' dump.txt)" 1
		timeout 60 "$P/bin/ringtrace" check tr >check.out 2>&1 || { why "check failed"; show check.out; }
	else
		why "the example of ringtrace(3) does not build with pkg-config"
		show cc.log
	fi
	cd "$T" || exit 1
fi
finish "a program built with pkg-config outside the tree, recorded with the installed command"

# ---- ringtrace mem on a program that was not rebuilt ----------------------
cat >leak.c <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) void *leak_three(size_t n) { return malloc(n); }
__attribute__((noinline)) void churn(void)
{
	for (int i = 0; i < 100; i++) {
		void *volatile p = malloc(24);
		free(p);
	}
}
int main(void)
{
	void *keep[3];
	for (int i = 0; i < 3; i++)
		keep[i] = leak_three(1000);
	churn();
	printf("kept %p\n", (void *)keep);
	return 7;
}
CEOF
cc -O0 -g -o leak leak.c || echo "cannot build leak.c" >&2
. "$REPO/tests/e2e/mem_lib.sh"

# memcheck TAG RT: `RT mem` on ./leak: its status, its report, exact rows.
memcheck() {
	local tag=$1 rt=$2
	rm -rf "m-$tag"
	timeout 120 "$rt" mem -o "m-$tag" -- ./leak >"mem-$tag.out" 2>"mem-$tag.err"
	eq "$tag: status of the traced program" "$?" 7
	grep -q '^kept 0x' "mem-$tag.out" || why "$tag: the program's output is missing"
	grep -qE '^ +3 +0 +3000 .* 3000 +3 .*leak_three' "mem-$tag.out" ||
		{ why "$tag: no leak_three row (3 allocations, 3000 bytes leaked in 3 blocks)"; show "mem-$tag.out" 30; show "mem-$tag.err"; }
	"$rt" report "m-$tag" --by function --json >"rep-$tag.json" 2>"rep-$tag.err" || { why "$tag: report failed"; show "rep-$tag.err"; }
	[ -s "rep-$tag.json" ] || return
	eq "$tag: leak_three" "$(row "rep-$tag.json" leak_three)" "3 0 3000 3000 3 0 0 malloc"
	eq "$tag: churn" "$(row "rep-$tag.json" churn)" "100 100 2400 0 0 0 0 malloc"
}

begin
[ -x "$P/bin/ringtrace" ] && memcheck prefix "$P/bin/ringtrace"
finish "the installed ringtrace mem on an unmodified program: status, report rows exact"

# Moved as a whole: the compiled-in libdir is gone, bin/../lib is found.
begin
if [ -d "$P" ]; then
	mv "$P" "$T/moved"
	memcheck moved "$T/moved/bin/ringtrace"
	mv "$T/moved" "$P"
fi
finish "an installed tree moved elsewhere finds its preload library in bin/../lib"

# A LIBDIR of its own: nothing in bin/../lib, the compiled-in one is used.
begin
L=$T/multi
if inst inst2.log install PREFIX="$L" LIBDIR="$L/lib/x86_64-linux-gnu"; then
	[ -e "$L/lib/libringtrace-malloc.so" ] && why "LIBDIR ignored: $L/lib/libringtrace-malloc.so"
	[ -e "$L/lib/x86_64-linux-gnu/libringtrace-malloc.so" ] || why "not in LIBDIR"
	eq "pkg-config libdir" "$(PKG_CONFIG_PATH=$L/lib/x86_64-linux-gnu/pkgconfig pkg-config --variable=libdir ringtrace)" \
		"$L/lib/x86_64-linux-gnu"
	memcheck libdir "$L/bin/ringtrace"
fi
finish "make install LIBDIR=...: the command finds its preload library there"

# ---- the pages, through man ------------------------------------------------
begin
if [ -d "$P/share/man" ]; then
	n=0
	for f in "$P"/share/man/man*/*; do
		n=$((n + 1))
		MANWIDTH=80 timeout 60 man -l "$f" >page.txt 2>page.err || why "man -l $(basename "$f") failed"
		[ -s page.err ] && { why "man -l $(basename "$f") warns:"; show page.err 3; }
		[ "$(wc -l <page.txt)" -ge 20 ] || why "man -l $(basename "$f"): $(wc -l <page.txt) lines"
	done
	[ "$n" -ge 20 ] || why "only $n installed pages and links"
	# Found by name in the installed tree, a link leading to its group.
	MANWIDTH=80 timeout 60 man -M "$P/share/man" ringtrace-buffer-size >bs.txt 2>&1 || why "man ringtrace-buffer-size failed"
	grep -q -- '--subbuffers' bs.txt || why "man ringtrace-buffer-size does not describe --subbuffers"
	MANWIDTH=80 timeout 60 man -M "$P/share/man" 3 ringtrace_snapshot >snap.txt 2>&1 || why "man 3 ringtrace_snapshot failed"
	grep -q 'ENOTSUP' snap.txt || why "man 3 ringtrace_snapshot lacks its return values"
else
	why "no pages installed under $P/share/man"
fi
finish "man -l on every installed page; man -M PREFIX finds pages by command name"

# ---- the completion, loaded by bash-completion in an interactive bash ------
begin
if [ -f /usr/share/bash-completion/bash_completion ] && [ -x "$P/bin/ringtrace" ]; then
	# The completions directory is found through XDG_DATA_DIRS, as the
	# system's would be; the function is loaded on first use.
	cat >comp.bash <<'BEOF'
. /usr/share/bash-completion/bash_completion
c() {
	COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_completion_loader ringtrace
	local f
	f=$(complete -p ringtrace | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
	"$f" ringtrace "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
	echo
}
echo "sub: $(c ringtrace snaps)"
echo "opt: $(c ringtrace record --buf)"
echo "cmd: $(c ringtrace report --by s)"
echo "dir: $(c ringtrace dump use)"
BEOF
	env -i HOME="$T" TERM=dumb PATH="$P/bin:/usr/bin:/bin" XDG_DATA_DIRS="$P/share" \
		timeout 60 bash --norc --noprofile -i comp.bash >comp.out 2>comp.err
	eq "subcommands" "$(sed -n 's/^sub: //p' comp.out)" "snapshot snapshot-disable snapshot-enable"
	eq "an option" "$(sed -n 's/^opt: //p' comp.out)" "--buffer-size"
	eq "an option's value" "$(sed -n 's/^cmd: //p' comp.out)" "stack"
	eq "a trace directory" "$(sed -n 's/^dir: //p' comp.out)" "user"
	[ -s comp.out ] || show comp.err
else
	why "bash-completion is not installed (make deps)"
fi
finish "the installed completion, loaded by bash-completion: a subcommand, an option, a value, a directory"

# ---- DESTDIR, uninstall, an unwritable prefix -----------------------------
begin
D=$T/stage
if inst inst3.log install DESTDIR="$D" PREFIX=/opt/rt; then
	[ -x "$D/opt/rt/bin/ringtrace" ] || why "DESTDIR: no $D/opt/rt/bin/ringtrace"
	grep -qx 'prefix=/opt/rt' "$D/opt/rt/lib/pkgconfig/ringtrace.pc" || why "DESTDIR leaked into ringtrace.pc"
	inst uninst.log uninstall DESTDIR="$D" PREFIX=/opt/rt
	left=$(find "$D" -not -type d)
	[ -z "$left" ] || why "left after uninstall: $(echo $left)"
fi
touch afile
make -C "$REPO" --no-print-directory O="$O" install PREFIX="$T/afile/p" >bad.out 2>&1 && why "install into a file's subdirectory succeeded"
grep -q "cannot write into '$T/afile/p' (Not a directory)" bad.out || { why "no clear message"; show bad.out; }
finish "DESTDIR stages without leaking into the paths; uninstall removes every file; an unwritable prefix is refused"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
