#!/bin/bash
# losses.sh - every event a program tried to write is in the trace or
# counted as lost, and the recorder's summary, `ringtrace check`, `ringtrace
# dump` and babeltrace2 agree on the numbers:
#   1. the disk fills up during the recording (a 512 KiB tmpfs, root only):
#      the events never written are in the summary, and check reports the
#      trace as cut (status 1, "the trace is cut: K events ... never
#      written") with them in its lost count;
#   2. overwrite mode: the overwritten events are counted in the trace
#      (events_discarded), so check and dump find the summary's numbers;
#   3. a --flight-recorder program killed with SIGKILL: the recovered
#      trace, the summary, check and dump agree;
#   4. flight-recorder snapshots hold every sub-buffer the ring still had
#      (the oldest one was left out when the last one had been closed by a
#      flush) and account for every event;
#   5. stream files written with O_DIRECT (packets padded to 4 KiB) and
#      buffered (RINGTRACE_DIRECT_IO=0) read back the same.
# In each case check proves events + lost == written per stream from the
# env the recorder writes at the end (ringtrace_stream_N_written).
#
#   tests/e2e/losses.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
ulimit -c 0
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup losses "${1:-build}"
BUSY=$BUILD/tests/e2e/busy
FLIGHT=$BUILD/tests/e2e/flightprog
LIM=120
MNT=
cleanup() {
	cd /
	[ -n "$MNT" ] && umount "$MNT" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# summary FILE: "RECORDED LOST" from the recorder's last summary line.
summary() {
	sed -n 's/^ringtrace record: \([0-9]*\) events recorded, \([0-9]*\) lost .*/\1 \2/p' "$1" | tail -n 1
}

# out DIR: where the outputs about trace DIR go (never on the small disk).
out() { echo "$T/out.${1//\//_}"; }

# checked DIR: `ringtrace check DIR` (output in DIR.chk): status in CRC,
# its counts in CEV CLOST CPROB.
checked() {
	timeout -k 5 $LIM "$RT" check -n 0 "$1" >"$(out "$1").chk" 2>&1
	CRC=$?
	read -r CEV CLOST CPROB <<<"$(sed -n 's/^ringtrace check: [0-9]* streams, [0-9]* packets, \([0-9]*\) events, \([0-9]*\) lost, \([0-9]*\) problems$/\1 \2 \3/p' "$(out "$1").chk")"
}

# dumped DIR EVENT: `ringtrace dump DIR`: DEV, the lines of EVENT, and
# DLOST, the events of every "ringtrace: N events lost" line.
dumped() {
	local o
	o=$(out "$1")
	timeout -k 5 $LIM "$RT" dump "$1" >"$o.dump" 2>"$o.dumperr" || why "dump $1 failed: $(head -c 300 "$o.dumperr")"
	read -r DEV DLOST <<<"$(awk -v ev=" $2: " 'index($0, ev) { n++ } /^ringtrace: [0-9]+ events? lost/ { l += $2 } END { print n + 0, l + 0 }' "$o.dump")"
}

# bt DIR EVENT WANT: babeltrace2 reads DIR and finds WANT events EVENT
# (nothing to check without babeltrace2).
bt() {
	command -v babeltrace2 >/dev/null || return
	local o
	o=$(out "$1")
	timeout -k 5 $LIM babeltrace2 "$1" >"$o.bt" 2>"$o.bterr" || why "babeltrace2 cannot read $1: $(grep -m1 ERROR "$o.bterr")"
	eq "babeltrace2: events" "$(grep -c " $2: " "$o.bt")" "$3"
}

# ---- 1. the disk fills up ---------------------------------------------------
# With "stop" the program stops the recorder during its burst: the buffer
# fills too, and the packets that count those drops are never written
# (the trace's env says how many, ringtrace_stream_N_discarded_after).
for how in plain stop; do
	begin
	if [ "$(id -u)" != 0 ]; then
		ok "disk full ($how): # skip (needs root to mount a tmpfs)"
		continue
	fi
	if have "$BUSY"; then
		mkdir -p small && MNT=$T/small
		if ! mount -t tmpfs -o size=512k tmpfs "$MNT"; then
			why "cannot mount a tmpfs"
			MNT=
		else
			arg=
			[ $how = stop ] && arg=stop
			timeout -k 5 $LIM "$RT" record -o small/t -- "$BUSY" 300000 $arg >full.out 2>full.err
			read -r rec lost <<<"$(summary full.err)"
			if [ -z "${rec:-}" ]; then
				why "no summary"
				show full.err
			else
				[ "$lost" -gt 0 ] || why "the summary counts no loss: $(summary full.err)"
				eq "recorded + lost" "$((rec + lost))" 300000
				grep -q "not written: disk full" full.err || { why "the summary does not say what was not written"; show full.err 2; }
				[ $how = stop ] && ! grep -q "lost ([1-9][0-9]* buffer full" full.err &&
					why "the buffer did not fill: $(tail -n 1 full.err)"
				checked small/t
				eq "check status (a cut trace is a problem)" "$CRC" 1
				grep -q "/stream_0: the trace is cut: [0-9]* events of this stream were never written (No space left on device)$" "$(out small/t).chk" ||
					{ why "check does not say the trace is cut"; show "$(out small/t).chk" 3; }
				eq "check: events" "${CEV:-}" "$rec"
				eq "check: lost" "${CLOST:-}" "$lost"
				eq "check: problems" "${CPROB:-}" 1
				dumped small/t e2e:busy
				eq "dump: events" "$DEV" "$rec"
				eq "dump: events lost" "$DLOST" "$lost"
				grep -q "events lost on cpu [0-9]* after its last packet (never written: No space left on device)" "$(out small/t).dump" ||
					why "dump does not say what was never written"
				bt small/t e2e:busy "$rec"
				[ -e small/t/.room ] && why "the room kept for the metadata was left behind"
			fi
			umount "$MNT" || why "cannot unmount $MNT"
			MNT=
		fi
	fi
	finish "disk full ($how): the events never written are counted in the summary, by check (the trace is cut) and by dump"
done

# ---- 2. overwrite mode ----------------------------------------------------------
begin
if have "$BUSY"; then
	# "stop": the program stops the recorder during its burst, so the
	# 64 KiB buffer is overwritten many times, without any timing.
	timeout -k 5 $LIM "$RT" record --mode overwrite --buffer-size 64K --subbuffers 4 -o ow -- "$BUSY" 200000 stop \
		>ow.out 2>ow.err
	read -r rec lost <<<"$(summary ow.err)"
	if [ -z "${rec:-}" ]; then
		why "no summary"
		show ow.err
	else
		grep -q "[1-9][0-9]* overwritten" ow.err || why "nothing was overwritten: $(tail -n 1 ow.err)"
		eq "recorded + lost" "$((rec + lost))" 200000
		checked ow
		eq "check status" "$CRC" 0
		eq "check: events" "${CEV:-}" "$rec"
		eq "check: lost" "${CLOST:-}" "$lost"
		eq "check: problems" "${CPROB:-}" 0
		dumped ow e2e:busy
		eq "dump: events" "$DEV" "$rec"
		eq "dump: events lost" "$DLOST" "$lost"
		bt ow e2e:busy "$rec"
		# The accounting is checked: one event more written than
		# the trace accounts for is a problem.
		cp -r ow ow-bad
		w=$(sed -n 's/^\tringtrace_stream_\([0-9]*\)_written = \([0-9]*\);$/\1 \2/p' ow-bad/metadata | head -n 1)
		if [ -z "$w" ]; then
			why "no ringtrace_stream_N_written in the env"
		else
			read -r cpu n <<<"$w"
			sed -i "s/^\tringtrace_stream_${cpu}_written = $n;\$/\tringtrace_stream_${cpu}_written = $((n + 1));/" ow-bad/metadata
			checked ow-bad
			eq "check status, one event unaccounted for" "$CRC" 1
			grep -q "stream_$cpu: [0-9]* events + [0-9]* lost (events_discarded, after the last packet too) + 0 not written + 0 unreadable = $n, but the env says $((n + 1)) were written" \
				"$(out ow-bad).chk" || { why "check does not report the missing event"; show "$(out ow-bad).chk" 2; }
		fi
	fi
fi
finish "overwrite mode: the trace counts the overwritten events: check and dump find the summary's numbers"

# ---- 3. a flight-recorder program killed -----------------------------------------
begin
if have "$FLIGHT"; then
	timeout -k 5 $LIM "$RT" record --flight-recorder --buffer-size 256K --subbuffers 4 -o fr -- "$FLIGHT" kill 300000 \
		>fr.out 2>fr.err
	eq "status of a program killed by SIGKILL" "$?" 137
	read -r rec lost <<<"$(summary fr.err)"
	if [ -z "${rec:-}" ] || [ ! -d fr/recovered ]; then
		why "no recovered trace"
		show fr.err
	else
		[ "$lost" -gt 0 ] || why "nothing was overwritten: $(summary fr.err)"
		eq "recorded + lost" "$((rec + lost))" 300000
		checked fr/recovered
		eq "check status" "$CRC" 0
		eq "check: events" "${CEV:-}" "$rec"
		eq "check: lost" "${CLOST:-}" "$lost"
		dumped fr/recovered fl:step
		eq "dump: events" "$DEV" "$rec"
		eq "dump: events lost" "$DLOST" "$lost"
		bt fr/recovered fl:step "$rec"
	fi
fi
finish "a flight-recorder program killed by SIGKILL: summary, check and dump agree on the recovered trace"

# ---- 4. flight-recorder snapshots --------------------------------------------------
begin
if have "$FLIGHT"; then
	# Each snapshot is asked for after 10000 fl:step and one fl:error.
	timeout -k 5 $LIM "$RT" record --flight-recorder --buffer-size 16K --subbuffers 4 -o snaps -- "$FLIGHT" errors 30000 \
		>snaps.out 2>snaps.err
	eq "program status" "$?" 0
	n=0
	while read -r rec lost dir; do
		n=$((n + 1))
		eq "$dir: recorded + lost" "$((rec + lost))" 10001
		checked "$dir"
		eq "$dir: check status" "$CRC" 0
		eq "$dir: check: events" "${CEV:-}" "$rec"
		eq "$dir: check: lost" "${CLOST:-}" "$lost"
		dumped "$dir" fl:step
		eq "$dir: dump: events lost" "$DLOST" "$lost"
	done < <(sed -n 's/^ringtrace record: \([0-9]*\) events recorded, \([0-9]*\) lost .* bytes written to \([^ ]*\)$/\1 \2 \3/p' snaps.err)
	eq "snapshots" "$n" 3
fi
finish "flight-recorder snapshots: every event the program wrote is in the snapshot or counted as lost"

# ---- 5. direct writes ------------------------------------------------------------
# Where the file system takes O_DIRECT (the scratch directory's, here
# tried with dd), each packet is padded to 4 KiB (stream sizes multiples
# of it, packet_size beyond content_size) and the trace reads the same:
# every event in check, dump and babeltrace2. RINGTRACE_DIRECT_IO=0: no
# padding, the same events. A tmpfs (case 1) is written either way.
for dio in 1 0; do
	begin
	if have "$BUSY"; then
		timeout -k 5 $LIM env RINGTRACE_DIRECT_IO=$dio "$RT" record --buffer-size 256K -o dio$dio -- "$BUSY" 200000 \
			>dio$dio.out 2>dio$dio.err
		eq "record status" "$?" 0
		read -r rec lost <<<"$(summary dio$dio.err)"
		eq "recorded + lost" "$((${rec:-0} + ${lost:-0}))" 200000
		checked dio$dio
		eq "check status" "$CRC" 0
		eq "check: events" "${CEV:-}" "${rec:-}"
		dumped dio$dio e2e:busy
		eq "dump: events" "$DEV" "${rec:-}"
		bt dio$dio e2e:busy "${rec:-}"
		direct=0
		dd if=/dev/zero of=dd.probe bs=4096 count=1 oflag=direct 2>/dev/null && direct=$dio
		rm -f dd.probe
		n4k=0 nfiles=0
		for f in dio$dio/stream_*; do
			nfiles=$((nfiles + 1))
			[ $(($(stat -c %s "$f") % 4096)) = 0 ] && n4k=$((n4k + 1))
		done
		[ "$nfiles" -gt 0 ] || why "no stream file"
		if [ "$direct" = 1 ]; then
			eq "streams whose size is a multiple of 4 KiB" "$n4k" "$nfiles"
			# Padding declared: a packet_size above its content_size.
			python3 - "dio$dio" >pad.out 2>&1 <<'PY' || { why "packet headers"; show pad.out; }
import glob, struct, sys
padded = 0
for f in glob.glob(sys.argv[1] + "/stream_*"):
    data = open(f, "rb").read()
    off = 0
    while off < len(data):
        content, size = struct.unpack_from("<QQ", data, off + 48)
        assert size % (4096 * 8) == 0 and content <= size, (f, off, content, size)
        padded += content < size
        off += size // 8
    assert off == len(data), (f, off, len(data))
assert padded > 0
PY
		elif [ "$dio" = 0 ]; then
			[ "$n4k" -lt "$nfiles" ] || why "every stream a multiple of 4 KiB without direct writes"
		fi
	fi
	finish "stream files written $([ $dio = 1 ] && echo directly, packets padded to 4 KiB || echo "buffered (RINGTRACE_DIRECT_IO=0), unpadded"): every event read back"
done

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
