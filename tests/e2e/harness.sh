#!/bin/bash
# harness.sh - the reporting helpers of the end-to-end scripts, sourced by
# tests/e2e/run.sh and tests/e2e/live.sh: "ok - NAME" / "not ok - NAME"
# lines with "    # " diagnostics, counted in PASSED and FAILED. A check
# is begin ... why ... finish NAME: it passes when nothing called why.

PASSED=0
FAILED=0
WHY=()

ok() {
	echo "ok - $1"
	PASSED=$((PASSED + 1))
}

notok() {
	local name=$1
	shift
	echo "not ok - $name"
	FAILED=$((FAILED + 1))
	printf '%s\n' "$@" | head -n 15 | sed 's/^/    # /'
}

begin() { WHY=(); }
why() { WHY+=("$@"); }
finish() {
	if [ ${#WHY[@]} -eq 0 ]; then ok "$1"; else notok "$1" "${WHY[@]}"; fi
	WHY=()
}

# eq WHAT GOT WANT
eq() {
	[ "$2" = "$3" ] || why "$1: got '$2', want '$3'"
}

# show FILE [N]: the last N lines of FILE as diagnostics.
show() {
	local f=$1 n=${2:-5} l
	[ -s "$f" ] || { why "($f is empty)"; return; }
	while IFS= read -r l; do why "$f: $l"; done < <(tail -n "$n" "$f" | cut -c1-300)
}

# have FILE...: every file exists, or the check fails naming the missing one.
have() {
	local f r=0
	for f in "$@"; do
		if [ ! -e "$f" ]; then
			why "missing $f (make tests-build?)"
			r=1
		fi
	done
	return $r
}

# e2e_setup TAG [BUILD_DIR]: BUILD (absolute; default build), RT, PROGS (the
# test programs), DEMO, CTFGEN, and a scratch directory T made the current
# one (the caller's EXIT trap removes it). Needs REPO.
e2e_setup() {
	BUILD=${2:-build}
	case $BUILD in /*) ;; *) BUILD=$REPO/$BUILD ;; esac
	RT=$BUILD/bin/ringtrace
	PROGS=$BUILD/tests/e2e
	DEMO=$BUILD/examples/demo
	CTFGEN=$BUILD/tests/tools/ctf_gen
	T=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-$1.XXXXXX") || exit 1
	cd "$T" || exit 1
}

# ready PID: wait (up to 20 s) until the program PID answers `ringtrace
# stat`, i.e. its library has set up its control block. A fixed sleep is
# not enough on a loaded machine under ASan, where start-up is slow.
ready() {
	local i
	for ((i = 0; i < 400; i++)); do
		"$RT" stat "$1" >/dev/null 2>&1 && return 0
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	why "program $1 never became attachable"
	return 1
}

# holding OUT: the pid a test program printed as "holding PID" in OUT,
# once it has (10 s at most); nothing if it never did.
holding() {
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q holding "$1" && break
		sleep 0.1
	done
	awk '/^holding/ { print $2 }' "$1"
}

# cut_midway STREAM_FILE: damage a CTF stream file midway: cut it 100
# bytes into the packet that starts nearest its middle (not the first).
# A cut at a fixed fraction of the size may fall on a packet boundary,
# which is no damage at all.
cut_midway() {
	local at
	at=$(python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
m = struct.pack("<I", 0xC1FC1FC1)
offs = [i for i in range(4, len(d) - 3) if d[i:i + 4] == m]
print(min(offs, key=lambda o: abs(o - len(d) // 2)) + 100 if offs else len(d) // 2 + 7)' "$1") &&
		truncate -s "$at" "$1"
}
