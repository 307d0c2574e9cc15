#!/bin/bash
# rseq_clock.sh - the rseq path with a clock other than the TSC, end to
# end: programs recorded with RINGTRACE_CLOCK=monotonic write through rseq
# (the trace's env says ringtrace_rseq = 1, ringtrace_clock = "monotonic")
# on every machine where the library can use rseq at all, and `ringtrace
# check` finds their traces in order and accounted for: threads migrating
# between CPUs, a full buffer in both modes, long gaps (extended headers).
# The atomic fallback (RINGTRACE_NO_RSEQ=1) on the same clock as a control.
#
#   tests/e2e/rseq_clock.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
ulimit -c 0
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup rseq-clock "${1:-build}"
LIM=120
cleanup() { cd / && rm -rf "$T"; }
trap cleanup EXIT

# Whether the library can use rseq here at all (src/lib/agent.c,
# agent_rseq_usable()): glibc registered an rseq area for each thread
# (__rseq_size >= 20) and the CPU has AVX (the one-store commit).
CAN_RSEQ=0
if grep -qw avx /proc/cpuinfo &&
	python3 -c 'import ctypes, sys; sys.exit(0 if ctypes.c_uint.in_dll(ctypes.CDLL(None), "__rseq_size").value >= 20 else 1)' \
		2>/dev/null; then
	CAN_RSEQ=1
fi
echo "# rseq usable on this machine: $CAN_RSEQ"

# rec DIR RECORD-ARGS...: `ringtrace record -o DIR` on the monotonic
# clock; status in RC, the summary's counts in S_EVENTS and S_LOST.
rec() {
	local d=$1
	shift
	rm -rf "$d"
	{ RINGTRACE_CLOCK=monotonic timeout -k 5 $LIM "$RT" record -o "$d" "$@" >"$d.out" 2>"$d.err"; } 2>/dev/null
	RC=$?
	S_EVENTS=$(sed -n 's/^ringtrace record: \([0-9]*\) events recorded, \([0-9]*\) lost .*/\1/p' "$d.err")
	S_LOST=$(sed -n 's/^ringtrace record: \([0-9]*\) events recorded, \([0-9]*\) lost .*/\2/p' "$d.err")
	[ "$RC" = 0 ] || { why "record exited $RC"; show "$d.err"; }
}

# env_is DIR NAME VALUE: the trace's env block holds NAME = VALUE.
env_is() {
	local got
	got=$(sed -n "s/^[[:space:]]*$2 = \(.*\);\$/\1/p" "$1/metadata" | head -n 1)
	eq "$1: env $2" "$got" "$3"
}

# path DIR RSEQ: the trace was written on the monotonic clock, through
# rseq when RSEQ is 1 and the machine has it.
path() {
	env_is "$1" ringtrace_clock '"monotonic"'
	if [ "$2" = 1 ]; then
		env_is "$1" ringtrace_rseq "$CAN_RSEQ"
	else
		env_is "$1" ringtrace_rseq 0
	fi
}

SUM_RE='^ringtrace check: \([0-9]*\) streams, \([0-9]*\) packets, \([0-9]*\) events, \([0-9]*\) lost, \([0-9]*\) problems$'
# clean DIR EVENTS LOST: `ringtrace check` passes on DIR with those counts.
clean() {
	{ timeout -k 5 $LIM "$RT" check "$1" >"$1.chk" 2>"$1.chkerr"; } 2>/dev/null
	local crc=$? s
	s=$(tail -n 1 "$1.chk" | sed -n "s/$SUM_RE/\3 \4 \5/p")
	local ev lost probs
	read -r ev lost probs <<<"${s:-  }"
	eq "$1: check status" "$crc" 0
	eq "$1: problems" "${probs:-none}" 0
	eq "$1: events (check vs record)" "${ev:-none}" "$2"
	eq "$1: lost (check vs record)" "${lost:-none}" "$3"
	[ "$crc" = 0 ] || show "$1.chk"
}

begin
if have "$RT" "$PROGS/threads"; then
	rec threads --buffer-size 64K --subbuffers 4 -- "$PROGS/threads" 4 20000
	path threads 1
	eq "events recorded" "${S_EVENTS:-none}" 100000
	clean threads "$S_EVENTS" "$S_LOST"
fi
finish "monotonic clock, 4 threads migrating between CPUs: rseq used, in order, all there"

for mode in discard overwrite; do
	begin
	if have "$RT" "$PROGS/busy"; then
		rec busy-$mode --mode $mode --buffer-size 64K --subbuffers 4 -- "$PROGS/busy" 200000 stop
		path busy-$mode 1
		[ "${S_LOST:-0}" -gt 0 ] || why "the recording lost nothing"
		clean busy-$mode "$S_EVENTS" "$S_LOST"
	fi
	finish "monotonic clock, --mode $mode with a full buffer: rseq used, losses accounted for"
done

begin
if have "$RT" "$PROGS/gap"; then
	rec gap -- "$PROGS/gap"
	path gap 1
	clean gap 4 0
fi
finish "monotonic clock, long gaps (extended headers): rseq used, no problem"

begin
if have "$RT" "$PROGS/threads"; then
	export RINGTRACE_NO_RSEQ=1
	rec norseq --buffer-size 64K --subbuffers 4 -- "$PROGS/threads" 4 20000
	unset RINGTRACE_NO_RSEQ
	path norseq 0
	clean norseq "$S_EVENTS" "$S_LOST"
fi
finish "monotonic clock, RINGTRACE_NO_RSEQ=1: the atomic fallback, in order, all there"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
