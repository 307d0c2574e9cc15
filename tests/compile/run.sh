#!/usr/bin/env bash
#
# tests/compile/run.sh - compile tests of the public header <ringtrace/ringtrace.h>.
#
# Run as tests/compile/run.sh (it works from the repository root wherever it
# is started). Compiles only (nothing is linked against libringtrace and
# nothing is run):
#   - all_fields (two C translation units, and as C++) with every C and C++
#     compiler, in each standard, warning-free under -Werror, and without
#     -Wpedantic warnings for events that have fields;
#   - the objects linked into one shared object: repeated declarations do not
#     clash, each adds its descriptor pointers to the section ringtrace_events,
#     an object without events links, and the signatures are in the object
#     as compile-time strings;
#   - each bad_*.c fails to compile, and compiles with -DGOOD (its corrected
#     form), so that it fails for the intended reason;
#   - the code of a disabled tracepoint at -O2: a load of the descriptor and
#     a conditional jump before the function returns, reloaded in loops.
#
# CC and CXX, when set, replace the default compilers (gcc and clang; g++
# and clang++, or clang -x c++ if there is no clang++).
# Prints "ok - ..." or "not ok - ..." per check, then "N passed, M failed";
# exits 1 if any check failed.

# Compiler commands and flag lists are split into words on purpose.
# shellcheck disable=SC2086

set -u
cd "$(dirname "$0")/../.." || exit 1

if [ -n "${CC:-}" ]; then ccs=("$CC"); else ccs=(gcc clang); fi
if [ -n "${CXX:-}" ]; then
	cxxs=("$CXX")
elif command -v clang++ >/dev/null 2>&1; then
	cxxs=(g++ clang++)
else
	cxxs=(g++ "clang -x c++")
fi

CWARN="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wundef -Werror"
CXXWARN="-Wall -Wextra -Werror"
INC="-Iinclude"
T=tests/compile

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
skipped=0
log="$tmp/log"

ok() { echo "ok - $*"; passed=$((passed + 1)); }
notok() {
	echo "not ok - $*"
	failed=$((failed + 1))
	if [ -s "$log" ]; then sed -n '1,15s/^/#   /p' "$log"; fi
}
skip() { echo "ok - $* # SKIP"; skipped=$((skipped + 1)); }
check() { # description, command...
	local what=$1
	shift
	if "$@" >"$log" 2>&1; then ok "$what"; else notok "$what"; fi
}
check_fails() { # description, command...
	local what=$1
	shift
	if "$@" >"$log" 2>&1; then : >"$log"; notok "$what"; else ok "$what"; fi
}
have() { command -v "${1%% *}" >/dev/null 2>&1; }

# --- all_fields in every language mode -----------------------------------

for cc in "${ccs[@]}"; do
	if ! have "$cc"; then skip "$cc not found"; continue; fi
	for std in c99 c11 gnu11; do
		for f in all_fields.c all_fields_tu2.c no_events.c; do
			check "$f as $std with $cc" \
				$cc $INC -std=$std $CWARN -O2 -c "$T/$f" -o "$tmp/x.o"
		done
	done
	# The header adds no -Wpedantic warning to events that have fields.
	for std in c99 c11; do
		check "all_fields.c as $std with $cc -Wpedantic" \
			$cc $INC -std=$std $CWARN -Wpedantic -DALL_FIELDS_PEDANTIC -O2 \
			-c "$T/all_fields.c" -o "$tmp/x.o"
	done
done

for cxx in "${cxxs[@]}"; do
	if ! have "$cxx"; then skip "$cxx not found"; continue; fi
	for std in c++11 c++17; do
		check "all_fields.cpp as $std with $cxx" \
			$cxx $INC -std=$std $CXXWARN -O2 -c "$T/all_fields.cpp" -o "$tmp/x.o"
	done
done

# --- several objects, one shared object ------------------------------------

cc=${ccs[0]}
cxx=${cxxs[0]}
if have "$cc" && have "$cxx"; then
	objs_ok=1
	: >"$log"
	for f in all_fields.c all_fields_tu2.c no_events.c; do
		$cc $INC -std=gnu11 -O2 -fPIC -c "$T/$f" -o "$tmp/${f%.c}.o" 2>>"$log" || objs_ok=0
	done
	$cxx $INC -std=c++11 -O2 -fPIC -c "$T/all_fields.cpp" -o "$tmp/all_fields_cpp.o" 2>>"$log" || objs_ok=0
	if [ $objs_ok = 1 ]; then
		ok "objects for linking built"
	else
		notok "objects for linking built"
	fi

	# Undefined library symbols are allowed in a shared object, and the C++
	# object needs nothing from the C++ runtime.
	check "two C TUs, one C++ TU and no_events.o link into one shared object" \
		$cc -shared -o "$tmp/all.so" "$tmp/all_fields.o" "$tmp/all_fields_tu2.o" \
		"$tmp/all_fields_cpp.o" "$tmp/no_events.o"
	check "an object without events links alone" \
		$cc -shared -o "$tmp/none.so" "$tmp/no_events.o"

	# One 8-byte pointer per event declared in each TU: three TUs include
	# all_fields.h, and TU1 (as C and as C++) adds tu1_only.
	per_tu=$(grep -Ec '^RINGTRACE_EVENT(_STACK)?\(' "$T/all_fields.h")
	want=$(( (3 * per_tu + 2) * 8 ))
	hex=$(readelf -SW "$tmp/all.so" 2>/dev/null | awk '{
		for (i = 1; i < NF; i++) if ($i == "ringtrace_events") { print $(i + 4); exit } }')
	got=$(( 16#${hex:-0} ))
	if [ "$got" = "$want" ]; then
		ok "section ringtrace_events holds $((want / 8)) descriptor pointers"
	else
		: >"$log"
		notok "section ringtrace_events holds $((want / 8)) descriptor pointers (size $got, want $want)"
	fi
	if nm -D "$tmp/all.so" 2>/dev/null | grep -q '__st\(art\|op\)_ringtrace_events'; then
		: >"$log"
		notok "section bounds are not exported (each object registers its own)"
	else
		ok "section bounds are not exported (each object registers its own)"
	fi
	if readelf -SW "$tmp/none.so" | grep -q ' ringtrace_events '; then
		: >"$log"
		notok "an object without events has no ringtrace_events section"
	else
		ok "an object without events has no ringtrace_events section"
	fi

	# Signatures are built at compile time, and provider names are not
	# macro-expanded (`linux` is 1 under -std=gnu11).
	strings -a "$tmp/all_fields.o" >"$tmp/strings"
	for s in 'u32 id;string path;u8 tag[4];u16 vals[];ptr p;f64 ratio' \
		 's8 as8[1];s16 as16[2];s32 as32[3];s64 as64[4];u8 au8[4];u16 au16[2];u32 au32[2];u64 au64[2];x8 ax8[2];x16 ax16[2];x32 ax32[2];x64 ax64[2]' \
		 's8 qs8[];s16 qs16[];s32 qs32[];s64 qs64[];u8 qu8[];u16 qu16[];u32 qu32[];u64 qu64[]' \
		 'x8 q8[];x16 q16[];x32 q32[];x64 q64[]' \
		 'linux'; do
		if grep -qxF "$s" "$tmp/strings"; then
			ok "string \"$s\" in the object"
		else
			: >"$log"
			notok "string \"$s\" in the object"
		fi
	done
else
	skip "link checks: $cc or $cxx not found"
fi

# --- mistakes that must not compile ----------------------------------------

for f in "$T"/bad_*.c; do
	b=$(basename "$f")
	for c in "${ccs[@]}" "${cxxs[@]}"; do
		if ! have "$c"; then skip "$b with $c: not found"; continue; fi
		case " ${cxxs[*]} " in
		*" $c "*) lang="-x c++ -std=c++11"; warn=$CXXWARN ;;
		*) lang="-std=c11"; warn=$CWARN ;;
		esac
		check "$b compiles with -DGOOD ($c)" \
			$c $INC $lang $warn -DGOOD -c "$f" -o "$tmp/x.o"
		check_fails "$b is rejected ($c)" \
			$c $INC $lang $warn -c "$f" -o "$tmp/x.o"
	done
done

# In C these are only warnings by default; the header makes them errors at
# the call site, -Werror or not.
for b in bad_ptr_for_int.c bad_int_for_string.c bad_int_array_for_u8.c; do
	for cc in "${ccs[@]}"; do
		have "$cc" || continue
		check_fails "$b is rejected without -Werror ($cc)" \
			$cc $INC -std=c11 -c "$T/$b" -o "$tmp/x.o"
	done
done

# --- what a disabled tracepoint costs --------------------------------------

# The instructions of function $2 in assembly file $1, one per line, without
# directives, labels or comments.
insns() {
	awk -v fn="$2" '
		$0 ~ "^" fn ":" { on = 1; next }
		on && $1 == ".size" && $2 ~ "^" fn "," { exit }
		on && $0 !~ /^[ \t]*\./ && $0 !~ /^[^ \t].*:/ && $0 !~ /^[ \t]*(#|$)/ {
			sub(/[ \t]*#.*/, ""); sub(/^[ \t]+/, ""); print
		}' "$1"
}

for cc in "${ccs[@]}"; do
	have "$cc" || continue
	s="$tmp/hot.s"
	if ! $cc $INC -std=gnu11 -O2 -fPIC -fno-asynchronous-unwind-tables -S \
		"$T/hot_path.c" -o "$s" >"$log" 2>&1; then
		notok "hot_path.c compiles to assembly ($cc)"
		continue
	fi

	# Up to the first return: [endbr64] load/compare of the descriptor,
	# [test], conditional jump, ret. No call, no store, nothing else.
	if insns "$s" hot_path_one | awk '
		BEGIN { bad = 0; n = 0 }
		/^ret/ { done = 1; exit }
		/^endbr64/ { next }
		{ n++ }
		n == 1 && !/^(mov|cmp)[bwlq]?[ \t].*ringtrace__desc_hp_ev/ { bad = 1 }
		n == 2 && !/^(test|cmp)[bwlq]?[ \t]/ && !/^j[a-z]+[ \t]/ { bad = 1 }
		n >= 2 && /^j[a-z]+[ \t]/ && !/^jmp/ { jcc = 1 }
		/^(call|jmp)/ || n > 3 { bad = 1 }
		END { exit !(done && jcc && !bad) }' >"$log" 2>&1
	then
		ok "disabled call site is load, test, branch, ret ($cc -O2)"
	else
		insns "$s" hot_path_one >"$log"
		notok "disabled call site is load, test, branch, ret ($cc -O2)"
	fi

	# The descriptor is read between the loop head and its back edge: a
	# relaxed atomic load is never hoisted out of the loop.
	if awk -v fn=hot_path_loop '
		$0 ~ "^" fn ":" { on = 1; next }
		on && $1 == ".size" { exit }
		!on { next }
		/^[.A-Za-z0-9_$]+:/ { lab = $0; sub(/:.*/, "", lab); at[lab] = NR }
		/ringtrace__desc_hp_ev/ { load[++nl] = NR }
		/^[ \t]*j[a-z]+[ \t]/ {
			t = $2
			if (t in at)
				for (i = 1; i <= nl; i++)
					if (load[i] > at[t] && load[i] < NR)
						found = 1
		}
		END { exit !found }' "$s" >"$log" 2>&1
	then
		ok "descriptor reloaded on every loop iteration ($cc -O2)"
	else
		insns "$s" hot_path_loop >"$log"
		notok "descriptor reloaded on every loop iteration ($cc -O2)"
	fi
done

echo "$passed passed, $failed failed$([ $skipped -gt 0 ] && echo ", $skipped skipped")"
[ $failed = 0 ]
