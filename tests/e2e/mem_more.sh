#!/bin/bash
# mem_more.sh - the allocation tracer on what mem.sh and mem_real.sh do
# not cover:
#
#  1. a program linked with gperftools' tcmalloc (Debian's -ltcmalloc,
#     tests/e2e/mem_progs/tcmalloc_sizes.c): the same output and status
#     traced; the allocator traced is tcmalloc (the usable sizes in the
#     trace are its size classes, not glibc's or jemalloc's); no error;
#     C++ new/new[] and delete/delete[] served by tcmalloc's own
#     operators (which do not call malloc) recorded exactly once each,
#     as families new and new[], and the tracer's operators calling
#     tcmalloc's (the dynamic linker's bindings); with --stacks too.
#  2. a library dlopen()ed by the program (tests/e2e/mem_progs/dl_alloc.c
#     and dl_alloc_lib.c, the library linked with nothing of ours) that
#     allocates 10 blocks of known sizes, 5 freed by the program, 5
#     leaked, then dlclose()d: the report by function has the library's
#     function with exact figures, named although the library was gone
#     before the program ended (from the trace's DIR/stacks/maps), with
#     and without --stacks.
#  3. the errors a program cannot make safely, in a synthetic trace
#     (tests/tools/mem_trace_gen.c writes the recorder's event classes
#     with the CTF writer): a realloc of a freed block, a realloc of a
#     pointer never seen, a double free, a mismatched free (new + free)
#     and a clean block: `ringtrace report --json` lists each error once
#     with its sites, `ringtrace check` and babeltrace2 read the trace.
#
# `ringtrace check` validates every trace this script records.
#
#   tests/e2e/mem_more.sh [BUILD_DIR]
#
# Needs BUILD_DIR/tests/mem/* and BUILD_DIR/tests/tools/mem_trace_gen
# (make tests-build), libgoogle-perftools-dev and babeltrace2 (in
# DEB_PKGS: make deps). The traced programs and the preloaded library may
# come from another build than the command (MEM_PROGS_BUILD, as in
# mem.sh: the ASan pass checks its command on the plain build's programs).
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup memmore "${1:-build}"
trap 'cd / && rm -rf "$T"' EXIT
PB=${MEM_PROGS_BUILD:-$BUILD}
case $PB in /*) ;; *) PB=$REPO/$PB ;; esac
MP=$PB/tests/mem
MEMLIB=$PB/lib/libringtrace-malloc.so
export RINGTRACE_MALLOC_LIB=$MEMLIB
GEN=$BUILD/tests/tools/mem_trace_gen
TO=120

. "$REPO/tests/e2e/mem_lib.sh"

# both TAG [record options --] PROGRAM ARGS...: runs the program untraced
# and traced (`record --mem` into TAG.t), stdout in TAG.out0 and TAG.out1,
# stderr in TAG.err0 and TAG.err1 (the recorder's messages too), statuses
# in RC0 and RC1. Checks that stdout and status are the same and that no
# event was lost; the summary's event count in EVENTS.
both() {
	local tag=$1 opts=()
	shift
	if [ "$1" = --stacks ]; then
		while [ "$1" != -- ]; do
			opts+=("$1")
			shift
		done
		shift
	fi
	rm -rf "$T/$tag.t"
	(timeout $TO "$@"; exit) >"$T/$tag.out0" 2>"$T/$tag.err0"
	RC0=$?
	(timeout $TO "$RT" record --mem "${opts[@]}" -o "$T/$tag.t" -- "$@"; exit) >"$T/$tag.out1" 2>"$T/$tag.err1"
	RC1=$?
	eq "exit status traced (untraced $RC0)" "$RC1" "$RC0"
	if ! cmp -s "$T/$tag.out0" "$T/$tag.out1"; then
		why "stdout differs traced:"
		while IFS= read -r l; do why "$l"; done < <(diff "$T/$tag.out0" "$T/$tag.out1" | head -n 6)
	fi
	EVENTS=$(sed -n 's/^ringtrace record: \([0-9]*\) events recorded, 0 lost .*/\1/p' "$T/$tag.err1")
	[ -n "$EVENTS" ] || { why "events lost or no summary:"; show "$T/$tag.err1" 3; }
}

# checked TAG: `ringtrace check` accepts TAG.t, with as many events as the
# recorder said it wrote.
checked() {
	"$RT" check "$T/$1.t" >"$T/$1.check" 2>&1 || { why "ringtrace check $1.t failed:"; show "$T/$1.check"; return; }
	local got
	got=$(sed -n 's/^ringtrace check: [0-9]* streams, [0-9]* packets, \([0-9]*\) events, 0 lost, 0 problems$/\1/p' "$T/$1.check")
	eq "events in $1.t (check vs record)" "$got" "${EVENTS:-?}"
}

# json TAG [ARGS...]: `ringtrace report --json --top 0 ARGS` of TAG.t into
# TAG.json (or TAG.ARG2.json for --by KEY).
json() {
	local tag=$1 out=$T/$1.json
	shift
	[ $# -ge 2 ] && out=$T/$tag.$2.json
	"$RT" report "$T/$tag.t" --json --top 0 "$@" >"$out" 2>"$out.err" ||
		{ why "report $tag $* failed"; show "$out.err"; }
}

# totals JSON KEY...: the totals' values, space-separated.
totals() {
	local f=$1
	shift
	python3 - "$f" "$@" <<'PYEOF' 2>&1
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(" ".join(str(t.get(k, "?")) for k in sys.argv[2:]))
PYEOF
}

# errs JSON: the errors as "kind|count|ptr|alloc_family|alloc_site|
# free_family|free_site|again_site", sites cut to their function, sorted.
errs() {
	python3 - "$1" <<'PYEOF' 2>&1 | sort
import json, sys
f = lambda s: s.split("+")[0]
for e in json.load(open(sys.argv[1]))["errors"]:
    print("|".join([e["kind"], str(e["count"]), e["ptr"], e["alloc_family"], f(e["alloc_site"]),
                    e["free_family"], f(e["free_site"]), f(e["again_site"])]))
PYEOF
}

# classes METADATA: its event classes as "NAME FIELDS", sorted by name.
classes() {
	python3 - "$1" <<'PYEOF' 2>&1
import re, sys
text = open(sys.argv[1]).read()
for name, body in sorted(re.findall(r'event \{\s*name = "([^"]*)";\s*id = \d+;\s*stream_id = 0;\s*fields := struct \{(.*?)\};\s*\};', text, re.S)):
    print(name, " ".join(body.split()))
PYEOF
}

# ---- 1. tcmalloc -------------------------------------------------------------

# tcmalloc's size classes for the sizes the program asks (glibc would say
# 24 104 200 1032 5000 100008, jemalloc 32 112 224 1280 5120 114688).
TC_WANT="17 32
100 112
200 208
1030 1152
5000 5120
100000 106496
new 200 208
new[] 1030 1152"

begin
if ! ldconfig -p 2>/dev/null | grep -q 'libtcmalloc\.so\.4 '; then
	why "libtcmalloc.so.4 is not installed: apt-get install libgoogle-perftools-dev (make deps)"
elif have "$RT" "$MEMLIB" "$MP/tcmalloc_sizes"; then
	ldd "$MP/tcmalloc_sizes" 2>&1 | grep -q 'libtcmalloc\.so\.4 ' || why "tcmalloc_sizes is not linked with libtcmalloc"
	both tc "$MP/tcmalloc_sizes"
	eq "status" "$RC0" 0
	eq "usable sizes (tcmalloc's classes)" "$(head -n 8 "$T/tc.out0")" "$TC_WANT"
	"$RT" dump "$T/tc.t" >"$T/tc.dump" 2>&1
	while read -r size usable; do
		grep -q "mem:alloc: .* size=$size usable=$usable family=1 " "$T/tc.dump" ||
			why "no malloc($size) with tcmalloc's usable $usable in the trace"
	done < <(head -n 6 <<<"$TC_WANT")
	grep -q "mem:alloc: .* size=200 usable=200 " "$T/tc.dump" && why "malloc(200) usable 200: glibc's, not tcmalloc's"
	grep -q "mem:alloc: .* size=1030 usable=1280 " "$T/tc.dump" && why "malloc(1030) usable 1280: jemalloc's, not tcmalloc's"
	json tc --by function
	eq "totals: errors, lost events" "$(totals "$T/tc.function.json" errors lost_events)" "0 0"
	eq "errors listed" "$(errs "$T/tc.function.json")" ""
	checked tc
fi
finish "a program linked with tcmalloc: same output and status, its allocator is the one traced (usable sizes are tcmalloc's classes), no error"

begin
if [ -s "$T/tc.dump" ] && [ -s "$T/tc.function.json" ]; then
	# 1 + 300 new, 1 + 120 new[] (main, new_plain, new_array), each
	# freed once: one event per call, as tcmalloc's usable sizes. And
	# tcmalloc's static initialisers, before the tracer's constructors
	# (kept and written once tracing is on): 3 new, 2 of them deleted.
	eq "new events" "$(grep -c 'mem:alloc: .* family=10 ' "$T/tc.dump")" 304
	eq "new[] events" "$(grep -c 'mem:alloc: .* family=11 ' "$T/tc.dump")" 121
	eq "delete events" "$(grep -c 'mem:free: .* family=2$' "$T/tc.dump")" 303
	eq "delete[] events" "$(grep -c 'mem:free: .* family=3$' "$T/tc.dump")" 121
	eq "new(200) with tcmalloc's usable 208" "$(grep -c 'mem:alloc: .* size=200 usable=208 family=10 ' "$T/tc.dump")" 301
	eq "new[](1030) with tcmalloc's usable 1152" "$(grep -c 'mem:alloc: .* size=1030 usable=1152 family=11 ' "$T/tc.dump")" 121
	eq "new_plain" "$(row "$T/tc.function.json" new_plain)" "300 300 60000 0 0 0 0 new"
	eq "new_array" "$(row "$T/tc.function.json" new_array)" "120 120 123600 0 0 0 0 new[]"
	eq "main" "$(row "$T/tc.function.json" main)" "8 8 107577 0 0 0 0 malloc,new,new[]"
	r=$(row "$T/tc.function.json" churn)
	eq "churn" "$(cut -d' ' -f1,2,8 <<<"$r")" "2000 2000 malloc,calloc,realloc,posix_memalign"
	# The tracer's operators call tcmalloc's, not libstdc++'s: what the
	# dynamic linker bound the tracer's lookups to, in one more run.
	mkdir -p "$T/ld"
	(LD_DEBUG=bindings LD_DEBUG_OUTPUT=$T/ld/ld timeout $TO "$RT" record --mem -o "$T/tcld.t" -- \
		"$MP/tcmalloc_sizes"; exit) >"$T/tcld.out" 2>"$T/tcld.err"
	eq "status traced with LD_DEBUG" "$?" 0
	for s in _Znwm _Znam _ZdlPv _ZdaPv _ZdlPvm _ZdaPvm; do
		cat "$T"/ld/ld.* 2>/dev/null |
			grep -q "binding file [^ ]*/libringtrace-malloc\.so \[0\] to [^ ]*/libtcmalloc\.so\.4 \[0\]: normal symbol \`$s'" ||
			why "the tracer's $s is not bound to tcmalloc's"
	done
	EVENTS=$(sed -n 's/^ringtrace record: \([0-9]*\) events recorded, 0 lost .*/\1/p' "$T/tcld.err")
	checked tcld
else
	why "not run: the tcmalloc program's trace and report are missing (see the check above)"
fi
finish "tcmalloc's own operator new/new[] and delete/delete[] (no malloc inside): each call recorded exactly once, families new and new[], the tracer's operators calling tcmalloc's"

begin
if have "$MP/tcmalloc_sizes" && [ -s "$T/tc.function.json" ]; then
	both tcs --stacks -- "$MP/tcmalloc_sizes"
	json tcs --by function
	eq "new_plain with stacks" "$(row "$T/tcs.function.json" new_plain)" "300 300 60000 0 0 0 0 new"
	eq "new_array with stacks" "$(row "$T/tcs.function.json" new_array)" "120 120 123600 0 0 0 0 new[]"
	eq "errors with stacks" "$(totals "$T/tcs.function.json" errors)" 0
	json tcs --by stack
	# Every new of new_plain from one stack, which starts in new_plain
	# (not in the tracer or in tcmalloc).
	got=$(python3 - "$T/tcs.stack.json" <<'PYEOF' 2>&1
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["families"] == "new" and r["allocations"] == 300]
print(len(rows), rows[0]["name"].split("+")[0] if rows else "-")
PYEOF
)
	eq "the stack of new_plain's 300 new" "$got" "1 new_plain"
	checked tcs
else
	why "not run: the tcmalloc program's report is missing (see the first check)"
fi
finish "tcmalloc with --stacks: the same figures, the stack of a new starts at its caller"

# ---- 2. dlopen ---------------------------------------------------------------

# dl_check TAG: the report by function of TAG.t has dl_lib_alloc's 10
# blocks (2640 bytes), 5 freed by main, 5 alive at exit (1440 bytes),
# named; main's 100 blocks after the dlclose.
dl_check() {
	local tag=$1 want="10 5 2640 1440 5 0 0 malloc" got
	json "$tag" --by function
	got=$(row "$T/$tag.function.json" dl_lib_alloc)
	if [ "$got" != "$want" ]; then
		why "dl_lib_alloc: got '$got', want '$want'"
		# The same figures under an address: the site was not symbolised.
		local addr
		addr=$(python3 - "$T/$tag.function.json" <<'PYEOF' 2>&1
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if (r["allocations"], r["frees"], r["bytes_requested"], r["leaked_blocks"]) == (10, 5, 2640, 5):
        print(r["name"])
PYEOF
)
		[ -n "$addr" ] && why "its blocks are in the row '$addr': the site is not symbolised"
	fi
	grep -q '/dl_alloc_lib\.so$' "$T/$tag.t/stacks/maps" 2>/dev/null ||
		why "$tag.t/stacks/maps has no line for dl_alloc_lib.so (dlopen'ed, dlclose'd before the end)"
	eq "main (after the dlclose)" "$(row "$T/$tag.function.json" main)" "100 100 6400 0 0 0 0 malloc"
	"$RT" report "$T/$tag.t" --top 0 >"$T/$tag.txt" 2>&1
	grep -q '^  1440 bytes in 5 blocks allocated at dl_lib_alloc+0x[0-9a-f]* ([^ ]*tests/e2e/mem_progs/dl_alloc_lib\.c:[0-9]*)$' "$T/$tag.txt" ||
		{ why "the leak is not listed at dl_lib_alloc (file:line):"; why "$(grep '^  1440 bytes' "$T/$tag.txt")"; }
}

DL_OUT="loaded
blocks 10
unloaded
done 3430"

begin
if have "$RT" "$MEMLIB" "$MP/dl_alloc" "$MP/dl_alloc_lib.so"; then
	both dl "$MP/dl_alloc" "$MP/dl_alloc_lib.so"
	eq "output" "$(cat "$T/dl.out0")" "$DL_OUT"
	dl_check dl
	checked dl
fi
finish "a library dlopen()ed, allocating, dlclose()d: its function's row exact and named from the trace's maps"

begin
if have "$RT" "$MEMLIB" "$MP/dl_alloc" "$MP/dl_alloc_lib.so"; then
	both dls --stacks -- "$MP/dl_alloc" "$MP/dl_alloc_lib.so"
	eq "output" "$(cat "$T/dls.out0")" "$DL_OUT"
	dl_check dls
	"$RT" report "$T/dls.t" --by stack --top 0 >"$T/dls.stk" 2>&1
	grep -A2 '^  1440 bytes in 5 blocks allocated at ' "$T/dls.stk" >"$T/dls.leak"
	sed -n 2p "$T/dls.leak" | grep -q '^      dl_lib_alloc+' || { why "the leak's stack does not start at dl_lib_alloc"; show "$T/dls.leak" 3; }
	sed -n 3p "$T/dls.leak" | grep -q '^      main+' || { why "dl_lib_alloc's caller is not main"; show "$T/dls.leak" 3; }
	checked dls
fi
finish "the same with --stacks: the row exact and named, the leak's stack dl_lib_alloc <- main"

# The report's side alone: a library kept loaded for 1 s, past the
# recording's poll of the loaded objects (a few times a second, with
# stacks), is in the maps log; its site must then be named after the
# dlclose.
begin
if have "$RT" "$MEMLIB" "$MP/dl_alloc" "$MP/dl_alloc_lib.so"; then
	both dlh --stacks -- "$MP/dl_alloc" "$MP/dl_alloc_lib.so" 1000
	eq "output" "$(cat "$T/dlh.out0")" "$DL_OUT"
	dl_check dlh
	checked dlh
fi
finish "a dlopen()ed library kept 1 s before its dlclose, with --stacks: named from the maps log after it is gone"

# ---- 3. a synthetic trace: the errors a program cannot make safely ----------

begin
if have "$RT" "$GEN"; then
	"$GEN" "$T/gen.t" >"$T/gen.out" 2>&1 || { why "mem_trace_gen failed"; show "$T/gen.out"; }
	EVENTS=13
	checked gen
	# The event classes are the recorder's, those of a real --mem trace:
	# names and fields (the ids are given in the order the classes
	# register, which depends on how the library was linked).
	"$RT" record --mem -o "$T/ref.t" -- /bin/true >"$T/ref.out" 2>&1 || { why "record --mem /bin/true failed"; show "$T/ref.out"; }
	classes "$T/ref.t/metadata" >"$T/ref.ev"
	classes "$T/gen.t/metadata" >"$T/gen.ev"
	grep -q '^mem:realloc ' "$T/ref.ev" || { why "no mem:realloc class in the metadata of record --mem:"; show "$T/ref.ev"; }
	if ! cmp -s "$T/ref.ev" "$T/gen.ev"; then
		why "the generator's event classes differ from the recorder's:"
		while IFS= read -r l; do why "$l"; done < <(diff "$T/ref.ev" "$T/gen.ev" | head -n 6 | cut -c1-200)
	fi
fi
finish "mem_trace_gen: a trace with the recorder's mem event classes, accepted by ringtrace check (13 events, no problem)"

begin
if [ -s "$T/gen.t/stream_0" ]; then
	json gen
	eq "errors" "$(errs "$T/gen.json")" "double free|1|0x555555a01400|malloc|site_df_alloc|free|site_df_free|site_df_again
mismatched free|1|0x555555a01500|new|site_mm_new|free|site_mm_free|
realloc of a freed block|1|0x555555a01100|malloc|site_rf_alloc|free|site_rf_free|site_rf_realloc
realloc of an unknown pointer|1|0x555555a0dead0|||realloc|site_ru_realloc|"
	eq "totals: allocations frees reallocs leaked_blocks errors lost_events" \
		"$(totals "$T/gen.json" allocations frees reallocs leaked_blocks errors lost_events)" "6 6 2 0 4 0"
	json gen --by function
	eq "site_clean_alloc" "$(row "$T/gen.function.json" site_clean_alloc)" "1 1 32 0 0 0 0 malloc"
	eq "site_rf_realloc" "$(row "$T/gen.function.json" site_rf_realloc)" "1 1 128 0 0 0 0 realloc"
	eq "site_ru_realloc" "$(row "$T/gen.function.json" site_ru_realloc)" "1 1 48 0 0 0 0 realloc"
	eq "site_mm_new" "$(row "$T/gen.function.json" site_mm_new)" "1 1 40 0 0 0 0 new"
	eq "rows" "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["rows"]))' "$T/gen.function.json" 2>&1)" 6
	"$RT" report "$T/gen.t" --top 0 >"$T/gen.txt" 2>&1
	for k in "double free" "mismatched free" "realloc of a freed block" "realloc of an unknown pointer"; do
		grep -q "^  $k: 1$" "$T/gen.txt" || why "no '$k: 1' in the text report"
	done
	grep -q "first 0x555555a01100: malloc at site_rf_alloc+0x1 ([^ ]*tests/tools/mem_trace_gen\.c:[0-9]*), free at site_rf_free+0x1 ([^ ]*tests/tools/mem_trace_gen\.c:[0-9]*), realloc'ed again at site_rf_realloc+0x1 " "$T/gen.txt" ||
		{ why "the realloc of a freed block is not described with its three sites:"; show "$T/gen.txt" 12; }
else
	why "not run: mem_trace_gen wrote no trace (see the check above)"
fi
finish "report of the synthetic trace: realloc of a freed block, realloc of an unknown pointer, double free and mismatched free once each, with their sites"

begin
if ! command -v babeltrace2 >/dev/null; then
	why "babeltrace2 is not installed (make deps)"
elif [ ! -s "$T/gen.t/stream_0" ]; then
	why "not run: mem_trace_gen wrote no trace (see above)"
else
	babeltrace2 "$T/gen.t" >"$T/gen.bt" 2>"$T/gen.bterr" || { why "babeltrace2 failed"; show "$T/gen.bterr"; }
	eq "babeltrace2 events by name" "$(sed -n 's/^.*) \([a-z_]*:[a-z_]*\): .*/\1/p' "$T/gen.bt" | sort | uniq -c | tr -s ' ' | tr '\n' ';')" \
		" 4 mem:alloc; 7 mem:free; 2 mem:realloc; 1 ringtrace:thread;"
	# The same pointers and sites, in the same order, as ringtrace dump.
	"$RT" dump "$T/gen.t" >"$T/gen.dump" 2>&1
	hexes() { grep -o '0x[0-9A-Fa-f]*' "$1" | tr 'A-F' 'a-f' | md5sum; }
	eq "pointers and sites (babeltrace2 vs dump)" "$(hexes "$T/gen.bt")" "$(hexes "$T/gen.dump")"
	grep -q 'mem:realloc: { cpu_id = 0 }, { old_ptr = 0x555555A0DEAD0, ptr = 0x555555A01300, ' "$T/gen.bt" ||
		why "babeltrace2 does not show the realloc of the unknown pointer"
fi
finish "babeltrace2 reads the synthetic trace: the same events, pointers and sites as ringtrace dump"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
