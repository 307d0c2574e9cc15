#!/bin/bash
# clock.sh - the trace clock chosen from what the CPU guarantees: every
# decision forced through RINGTRACE_CLOCK and the test hooks
# (RINGTRACE_CLOCK_CPU_INVARIANT, RINGTRACE_CLOCKSOURCE,
# RINGTRACE_CLOCK_CHECK) gives a trace that `ringtrace check` and
# babeltrace2 accept, with every event; record's line and the env block
# name the same clock and the same reason; a garbled RINGTRACE_CLOCK gets
# one clear line and the default choice. A machine on kvm-clock with an
# invariant TSC records with the TSC and rseq, under `record` and in the
# program's own buffers (`record -p`), wherever rseq and AVX exist.
#
#   tests/e2e/clock.sh [BUILD_DIR]
set -u
export LC_ALL=C CI=true
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup clock "${1:-build}"
ctl_before=$(ls /dev/shm/ 2>/dev/null | grep '^ringtrace\.ctl\.' | sort)
clean_ctl() {
	local f pid
	for f in $(comm -13 <(echo "$ctl_before") <(ls /dev/shm/ 2>/dev/null | grep '^ringtrace\.ctl\.' | sort)); do
		pid=${f#ringtrace.ctl.}
		kill -0 "$pid" 2>/dev/null || rm -f "/dev/shm/$f"
	done
}
SPID=""
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; wait 2>/dev/null; clean_ctl; rm -rf "$T"' EXIT
SERVER=$BUILD/examples/server
TO=60
unset RINGTRACE_CLOCK RINGTRACE_CLOCK_CPU_INVARIANT RINGTRACE_CLOCKSOURCE RINGTRACE_CLOCK_CHECK RINGTRACE_NO_RSEQ

# rseq and AVX: where the rseq path runs with the TSC (agent_rseq_usable).
fast=0
[ "$(uname -m)" = x86_64 ] && grep -qw avx /proc/cpuinfo && fast=1

# env_of DIR KEY: a value of the trace's env block (quotes removed).
env_of() { sed -n "s/^[[:space:]]*$2 = \"\{0,1\}\([^\";]*\)\"\{0,1\};\$/\1/p" "$1/metadata"; }

# run TAG ENV...: record the demo with ENV into TAG.t; stderr in TAG.err.
run() {
	local tag=$1
	shift
	rm -rf "$tag.t"
	env "$@" timeout -k 5 $TO "$RT" record -o "$tag.t" -- "$DEMO" 200 >"$tag.out" 2>"$tag.err"
	RC=$?
}

# checked TAG CLOCK REASON_ERE: the recording TAG succeeded with CLOCK,
# its first line names CLOCK and a reason matching REASON_ERE, the env
# block says the same, every event is there, and both readers accept it.
checked() {
	local tag=$1 clock=$2 re=$3 line
	eq "$tag: status" "$RC" 0
	line=$(grep -m1 '^ringtrace record: clock ' "$tag.err" | sed 's/^ringtrace record: clock //')
	[ -n "$line" ] || { why "$tag: no clock line"; show "$tag.err"; return; }
	[[ $line =~ $re ]] || why "$tag: clock line '$line' does not match '$re'"
	eq "$tag: ringtrace_clock" "$(env_of "$tag.t" ringtrace_clock)" "$clock"
	eq "$tag: ringtrace_clock_reason" "$(env_of "$tag.t" ringtrace_clock_reason)" "$line"
	eq "$tag: the clock line comes first" "$(grep -v '^ringtrace record: RINGTRACE_CLOCK=' "$tag.err" | head -1)" "ringtrace record: clock $line"
	eq "$tag: events" "$(sed -n 's/^ringtrace record: \([0-9]*\) events recorded, 0 lost .*/\1/p' "$tag.err")" "$EVENTS"
	"$RT" check "$tag.t" >"$tag.check" 2>&1 || { why "$tag: ringtrace check failed"; show "$tag.check"; }
	timeout $TO babeltrace2 "$tag.t" >"$tag.bt" 2>"$tag.bterr" || { why "$tag: babeltrace2 failed"; show "$tag.bterr"; }
	# The program's events (ringtrace:* records of its threads vary).
	eq "$tag: babeltrace2 events" "$(grep -vc ' ringtrace:' "$tag.bt")" "$EVENTS"
}

begin
have "$RT" "$DEMO" || { finish "clock: set-up"; exit 1; }
run default
EVENTS=$(sed -n 's/^ringtrace record: \([0-9]*\) events recorded, 0 lost .*/\1/p' default.err)
[ -n "$EVENTS" ] && [ "$EVENTS" -gt 0 ] || { why "default: no event count"; show default.err; }
DEFAULT_CLOCK=$(env_of default.t ringtrace_clock)
checked default "$DEFAULT_CLOCK" '^(tsc: invariant TSC \(CPUID\).*cross-CPU check passed|monotonic: )'
finish "clock: the default choice is named, checked, and the trace reads"

if [ "$(uname -m)" = x86_64 ]; then
	begin
	run kvm RINGTRACE_CLOCKSOURCE=kvm-clock RINGTRACE_CLOCK_CPU_INVARIANT=1
	checked kvm tsc '^tsc: invariant TSC \(CPUID\), kernel clocksource kvm-clock, cross-CPU check passed(, skew <= [0-9]+ ns| \(one CPU\))$'
	[ "$(env_of kvm.t ringtrace_clock_skew_ns)" -ge 0 ] 2>/dev/null || why "kvm: no ringtrace_clock_skew_ns"
	eq "kvm: ringtrace_clock_jump_ns" "$(env_of kvm.t ringtrace_clock_jump_ns)" 0
	[ $fast = 1 ] && eq "kvm: ringtrace_rseq (rseq and AVX here)" "$(env_of kvm.t ringtrace_rseq)" 1
	finish "clock: kvm-clock with an invariant TSC records with the TSC (and rseq where there is AVX)"

	begin
	run checkfail RINGTRACE_CLOCKSOURCE=kvm-clock RINGTRACE_CLOCK_CPU_INVARIANT=1 RINGTRACE_CLOCK_CHECK=fail
	checked checkfail monotonic '^monotonic: invariant TSC \(CPUID\) but the cross-CPU check failed, kernel clocksource kvm-clock \(RINGTRACE_CLOCK_CHECK=fail\)$'
	finish "clock: a failed cross-CPU check falls back to CLOCK_MONOTONIC and says so"
fi

begin
run noinv RINGTRACE_CLOCKSOURCE=hpet RINGTRACE_CLOCK_CPU_INVARIANT=0
checked noinv monotonic '^monotonic: no invariant TSC \(CPUID\), kernel clocksource hpet$'
run noinv_tsc RINGTRACE_CLOCKSOURCE=tsc RINGTRACE_CLOCK_CPU_INVARIANT=0 RINGTRACE_CLOCK=tsc
checked noinv_tsc monotonic '^monotonic: RINGTRACE_CLOCK=tsc refused, no invariant TSC \(CPUID\)$'
finish "clock: without an invariant TSC, CLOCK_MONOTONIC (RINGTRACE_CLOCK=tsc is refused)"

begin
run mono RINGTRACE_CLOCK=monotonic RINGTRACE_CLOCK_CPU_INVARIANT=1
checked mono monotonic '^monotonic: RINGTRACE_CLOCK=monotonic$'
eq "mono: ringtrace_clock_drift_ppm" "$(env_of mono.t ringtrace_clock_drift_ppm)" ""
finish "clock: RINGTRACE_CLOCK=monotonic"

# A garbled value, with a terminal escape in it: one line that names it
# (printable), then the default choice.
begin
run bad "RINGTRACE_CLOCK=tsc$(printf '\033')[2Jx"
checked bad "$DEFAULT_CLOCK" '.'
eq "bad: message" "$(grep -c "^ringtrace record: RINGTRACE_CLOCK='tsc?\[2Jx' is not a clock (tsc or monotonic): choosing as if unset\$" bad.err)" 1
grep -q "$(printf '\033')" bad.err && why "bad: the escape byte reached the terminal"
mask() { sed 's/skew <= [0-9]* ns/skew <= N ns/'; }
eq "bad: the decision" "$(env_of bad.t ringtrace_clock_reason | mask)" "$(env_of default.t ringtrace_clock_reason | mask)"
finish "clock: a garbled RINGTRACE_CLOCK gets one line and the default"

# A jump of CLOCK_MONOTONIC against the TSC during the recording (test
# hook: 3 ms from the second periodic sample on, as after a live
# migration): the summary says so with its size, and so does the env
# block. The server runs about 4 s (SIGTERM from timeout reaches it
# through the recorder).
if [ "$(uname -m)" = x86_64 ] && [ -x "$SERVER" ]; then
	begin
	RINGTRACE_CLOCK_CPU_INVARIANT=1 RINGTRACE_CLOCK_TEST_JUMP_NS=3000000 \
		timeout -s TERM -k 5 4 "$RT" record -o jump.t -- "$SERVER" >jump.out 2>jump.err
	j=$(env_of jump.t ringtrace_clock_jump_ns)
	[ -n "$j" ] && [ "$j" -gt 2900000 ] && [ "$j" -lt 3100000 ] ||
		{ why "jump: ringtrace_clock_jump_ns '$j', want about 3000000"; show jump.err; }
	eq "jump: summary lines about it" "$(grep -c "^ringtrace record: the TSC jumped $j ns against CLOCK_MONOTONIC during the recording" jump.err)" 1
	[ -n "$(env_of jump.t ringtrace_clock_drift_ppm)" ] || why "jump: no drift measured over 4 s"
	"$RT" check jump.t >jump.check 2>&1 || { why "jump: ringtrace check failed"; show jump.check; }
	# And none without the step.
	RINGTRACE_CLOCK_CPU_INVARIANT=1 timeout -s TERM -k 5 3 "$RT" record -o nojump.t -- "$SERVER" >nojump.out 2>nojump.err
	eq "nojump: ringtrace_clock_jump_ns" "$(env_of nojump.t ringtrace_clock_jump_ns)" 0
	grep -q 'jumped' nojump.err && why "nojump: $(grep jumped nojump.err)"
	finish "clock: a jump of the TSC against CLOCK_MONOTONIC is reported with its size (summary, env block)"
fi

# own TAG ENV...: the server started with ENV, its own buffers (no
# recorder when it made them) read with record -p into TAG.t.
own() {
	local tag=$1
	shift
	rm -f srv.pid
	env "$@" timeout -k 5 $TO sh -c 'echo $$ >srv.pid; exec "$0"' "$SERVER" >"$tag.srv.out" 2>"$tag.srv.err" &
	for _ in $(seq 400); do [ -s srv.pid ] && break; sleep 0.05; done
	SPID=$(cat srv.pid 2>/dev/null)
	for _ in $(seq 400); do [ -e "/dev/shm/ringtrace.ctl.$SPID" ] && break; sleep 0.05; done
	timeout -s INT -k 5 2 "$RT" record -p "$SPID" -o "$tag.t" >"$tag.out" 2>"$tag.err"
	kill "$SPID" 2>/dev/null
	wait 2>/dev/null
	SPID=""
	if [ -f "$tag.t/metadata" ]; then
		"$RT" check "$tag.t" >"$tag.check" 2>&1 || { why "$tag: ringtrace check failed"; show "$tag.check"; }
	else
		why "$tag: record -p wrote no trace"
		show "$tag.err"
	fi
}

# The program's own buffers: the CPU's word alone chooses (no check in
# the program), and rseq follows the TSC.
if [ "$(uname -m)" = x86_64 ] && [ -x "$SERVER" ]; then
	begin
	own own RINGTRACE_CLOCKSOURCE=kvm-clock RINGTRACE_CLOCK_CPU_INVARIANT=1
	eq "own: ringtrace_clock" "$(env_of own.t ringtrace_clock)" tsc
	[ $fast = 1 ] && eq "own: ringtrace_rseq (rseq and AVX here)" "$(env_of own.t ringtrace_rseq)" 1
	own own_noinv RINGTRACE_CLOCKSOURCE=tsc RINGTRACE_CLOCK_CPU_INVARIANT=0
	eq "own_noinv: ringtrace_clock" "$(env_of own_noinv.t ringtrace_clock)" monotonic
	finish "clock: a program's own buffers follow the CPU's word, not the clocksource (TSC and rseq on kvm-clock)"

	# The library never prints: its one message comes through the
	# recorder that attaches.
	begin
	own own_bad "RINGTRACE_CLOCK=garbage"
	eq "own_bad: message" "$(grep -c '^ringtrace: RINGTRACE_CLOCK is not a clock (tsc or monotonic): chose as if unset, ' own_bad.err)" 1
	grep -q 'RINGTRACE_CLOCK' own_bad.srv.err && why "own_bad: the program printed about RINGTRACE_CLOCK"
	finish "clock: a program's own buffers with a garbled RINGTRACE_CLOCK: one message through the recorder, the default clock"
fi

clean_ctl
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
