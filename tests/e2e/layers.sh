#!/bin/bash
# layers.sh - the layers point one way (docs/design.md, "Module map"),
# checked on the built objects with nm:
#  - the `ringtrace` command defines nothing the in-process runtime
#    (src/lib/) defines, and no agent_main in particular: it can neither
#    start the control thread nor carry its code;
#  - the ring buffer (src/ringbuf/) calls nothing the runtime defines;
#  - libringtrace.so exports exactly what its version script lists.
#
#   tests/e2e/layers.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup layers "${1:-build}"
cleanup() { cd / && rm -rf "$T"; }
trap cleanup EXIT

# Global symbols the runtime's objects define.
begin
if have "$RT" "$BUILD/lib/libringtrace.so" && ls "$BUILD"/obj/src/lib/*.o >/dev/null 2>&1; then
	timeout 60 nm --defined-only -g "$BUILD"/obj/src/lib/*.o 2>/dev/null |
		awk 'NF == 3 { print $3 }' | sort -u >rt.syms
	[ -s rt.syms ] || why "no symbols found in $BUILD/obj/src/lib/*.o"
else
	why "no objects in $BUILD/obj/src/lib (make?)"
fi
finish "the runtime's objects are there"

begin
timeout 60 nm --defined-only "$RT" | awk 'NF == 3 { print $3 }' | sort -u >cmd.syms
both=$(comm -12 rt.syms cmd.syms)
[ -z "$both" ] || why "the command defines runtime symbols (linked from src/lib):" $both
grep -qx 'agent_main' cmd.syms && why "the command contains agent_main (src/lib/agent.c)"
finish "the command links nothing of the in-process runtime"

begin
for o in "$BUILD"/obj/src/ringbuf/*.o; do
	up=$(timeout 60 nm --undefined-only "$o" | awk '{ print $NF }' | sort -u | comm -12 rt.syms -)
	[ -z "$up" ] || why "$(basename "$o") calls up into src/lib:" $up
done
finish "the ring buffer calls nothing of the runtime"

begin
sed -n '/global:/,/local:/p' "$REPO/src/lib/libringtrace.map" | tr -d ' \t;' |
	grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | sort >map.syms
timeout 60 nm -D --defined-only "$BUILD/lib/libringtrace.so" | awk 'NF == 3 { print $3 }' |
	sed 's/@.*//' | grep -v '^RINGTRACE_' | sort -u >so.syms
[ -s map.syms ] || why "no names read from src/lib/libringtrace.map"
d=$(diff map.syms so.syms)
[ -z "$d" ] || why "exports differ from the version script (< script, > library):" "$d"
finish "libringtrace.so exports exactly the version script's names"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
