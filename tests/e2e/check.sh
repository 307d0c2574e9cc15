#!/bin/bash
# check.sh - `ringtrace check`, end to end: traces written by `record`
# (discard and overwrite modes, losses, several CPUs, extended headers, a
# crash), by the flight recorder (snapshots, a recovery) and by ctf_gen
# (big-endian, natural alignment) pass with no problem; copies of a trace
# damaged with one fault each are caught, with the right file, offset,
# packet and kind of problem, and nothing else; junk, truncations, random
# corruption and huge sizes never crash or hang it; a directory that is not
# a trace and bad arguments give status 2 and one line.
#
#   tests/e2e/check.sh [BUILD_DIR]
#
# The faults are made by a small Python walker of the ringtrace layout
# (docs/design.md section 3: 84-byte packet header and context, compact or
# extended event headers, byte-packed payloads described by the metadata),
# which prints where the problem must be reported.
set -u
export LC_ALL=C
exec </dev/null
ulimit -c 0
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup check "${1:-build}"
LIM=60
cleanup() { cd / && rm -rf "$T"; }
trap cleanup EXIT

# ---- helpers ----------------------------------------------------------------

# rec DIR RECORD-ARGS...: `ringtrace record -o DIR`, status in RC, the
# summary's counts in S_EVENTS and S_LOST.
rec() {
	local d=$1
	shift
	rm -rf "$d"
	{ timeout -k 5 $LIM "$RT" record -o "$d" "$@" >"$d.out" 2>"$d.err"; } 2>/dev/null
	RC=$?
	S_EVENTS=$(sed -n 's/^ringtrace record: \([0-9]*\) events recorded, \([0-9]*\) lost .*/\1/p' "$d.err")
	S_LOST=$(sed -n 's/^ringtrace record: \([0-9]*\) events recorded, \([0-9]*\) lost .*/\2/p' "$d.err")
}

# chk DIR [ARGS...]: `ringtrace check`, output in DIR.chk / DIR.chkerr,
# status in CRC, the summary's counts in C_STREAMS C_PACKETS C_EVENTS
# C_LOST C_PROBLEMS (empty if there is no summary line).
SUM_RE='^ringtrace check: \([0-9]*\) streams, \([0-9]*\) packets, \([0-9]*\) events, \([0-9]*\) lost, \([0-9]*\) problems$'
chk() {
	local d=$1
	shift
	{ timeout -k 5 $LIM "$RT" check "$@" "$d" >"$d.chk" 2>"$d.chkerr"; } 2>/dev/null
	CRC=$?
	local s
	s=$(tail -n 1 "$d.chk" | sed -n "s/$SUM_RE/\1 \2 \3 \4 \5/p")
	read -r C_STREAMS C_PACKETS C_EVENTS C_LOST C_PROBLEMS <<<"${s:-    }"
}

# clean DIR [EVENTS [LOST]]: check passes on DIR with the counts given.
clean() {
	chk "$1"
	eq "check status" "$CRC" 0
	eq "problems" "${C_PROBLEMS:-none}" 0
	eq "stderr lines" "$(wc -l <"$1.chkerr")" 0
	eq "output lines" "$(wc -l <"$1.chk")" 1
	[ -n "${2:-}" ] && eq "events (check vs record)" "${C_EVENTS:-none}" "$2"
	[ -n "${3:-}" ] && eq "lost (check vs record)" "${C_LOST:-none}" "$3"
	[ "$CRC" = 0 ] || show "$1.chk"
}

# The walker: `ctfpatch.py FAULT DIR` damages the trace in DIR and prints
# "FILE OFFSET PACKET", where check must report the problem.
cat >"$T/ctfpatch.py" <<'EOF'
import os, random, re, struct, sys

HDR = 84

def metadata(d):
    text = open(os.path.join(d, 'metadata')).read()
    if 'byte_order = le;' not in text or 'byte-packed' not in text:
        sys.exit('ctfpatch: only byte-packed little-endian ringtrace traces')
    events = {}
    for blk in re.findall(r'^event \{\n(.*?)^\};', text, re.S | re.M):
        eid = int(re.search(r'^\tid = (\d+);', blk, re.M).group(1))
        body = re.search(r'fields := struct \{\n(.*?)\t\};', blk, re.S).group(1)
        fields = []
        for line in body.strip().splitlines():
            line = line.strip().rstrip(';')
            m = re.search(r'(\w+)(?:\[(\w+)\])?$', line)
            typ = line[:m.start()].strip()
            if typ == 'string':
                size = 0
            elif typ.startswith('floating_point'):
                size = 4 if 'exp_dig = 8;' in typ else 8
            else:
                size = int((re.search(r'size = (\d+);', typ) or re.search(r'int(\d+)_t', typ)).group(1)) // 8
            fields.append((m.group(1), size, m.group(2)))
        events[eid] = fields
    return events

def packets(data):
    out, off = [], 0
    while off + HDR <= len(data):
        magic, = struct.unpack_from('<I', data, off)
        begin, end, content, size, seq, disc = struct.unpack_from('<6Q', data, off + 32)
        out.append(dict(off=off, begin=begin, end=end, content=content, size=size, seq=seq, disc=disc))
        if size == 0:
            break
        off += size // 8
    return out

def records(data, p, ev):
    """(offset, id, time, extended, end) of every record of packet p."""
    pos, end, clock, out = p['off'] + HDR, p['off'] + p['content'] // 8, p['begin'], []
    mask = (1 << 27) - 1
    while pos < end:
        w, = struct.unpack_from('<I', data, pos)
        eid, ext = w & 31, (w & 31) == 31
        if ext:
            eid, clock = struct.unpack_from('<IQ', data, pos + 1)
            q = pos + 13
        else:
            n = (clock & ~mask) | (w >> 5)
            if (w >> 5) < (clock & mask):
                n += mask + 1
            clock, q = n, pos + 4
        vals = {}
        for name, size, dim in ev[eid]:
            if size == 0:
                q = data.index(b'\0', q) + 1
                continue
            count = 1 if dim is None else int(dim) if dim.isdigit() else vals[dim]
            if dim is None:
                vals[name] = int.from_bytes(data[q:q + size], 'little')
            q += size * count
        out.append((pos, eid, clock, ext, q))
        pos = q
    return out

def put(data, off, fmt, v):
    struct.pack_into(fmt, data, off, v)

fault, d = sys.argv[1], sys.argv[2]
ev = metadata(d)
# The stream file with the most packets (ties: the first name).
files = sorted(f for f in os.listdir(d) if f.startswith('stream_'))
best = max(files, key=lambda f: len(packets(open(os.path.join(d, f), 'rb').read())))
path = os.path.join(d, best)
data = bytearray(open(path, 'rb').read())
ps = packets(data)
if fault != 'ts-back' and len(ps) < 3:
    sys.exit('ctfpatch: %s has %d packets, 3 needed' % (best, len(ps)))
p1 = ps[1] if len(ps) > 1 else ps[0]
where = None

if fault == 'magic':
    data[p1['off']] ^= 0xff
    where = (p1['off'], 1)
elif fault == 'uuid':
    data[p1['off'] + 4 + 7] ^= 0x5a
    where = (p1['off'] + 4, 1)
elif fault == 'stream-id':
    put(data, p1['off'] + 20, '<I', 7)
    where = (p1['off'] + 20, 1)
elif fault == 'content-gt-packet':
    put(data, p1['off'] + 48, '<Q', p1['size'] + 64)
    where = (p1['off'] + 48, 1)
elif fault == 'cut-header':
    last = ps[-1]
    del data[last['off'] + 40:]
    where = (last['off'], len(ps) - 1)
elif fault == 'cut-content':
    last = ps[-1]
    if last['size'] // 8 < HDR + 2:
        sys.exit('ctfpatch: last packet too small')
    del data[last['off'] + HDR + (last['size'] // 8 - HDR) // 2:]
    where = (last['off'] + 56, len(ps) - 1)
elif fault == 'ts-back':
    # An extended event (full 64-bit time) put just before the record
    # that precedes it, in the first stream file that has such a pair
    # (the program may have moved between CPUs).
    for f in [best] + [f for f in files if f != best]:
        path = os.path.join(d, f)
        data = bytearray(open(path, 'rb').read())
        ps = packets(data)
        best = f
        for k, p in enumerate(ps):
            recs = records(data, p, ev)
            for i in range(1, len(recs)):
                if recs[i][3] and recs[i - 1][2] > p['begin'] + 1:
                    put(data, recs[i][0] + 5, '<Q', recs[i - 1][2] - 1)
                    where = (recs[i][0], k)
                    break
            if where:
                break
        if where:
            break
elif fault == 'ts-end':
    put(data, p1['off'] + 40, '<Q', p1['begin'])
    recs = [r for r in records(data, p1, ev) if r[2] > p1['begin']]
    where = (recs[0][0], 1)
elif fault == 'seq-gap':
    for p in ps[2:]:
        put(data, p['off'] + 64, '<Q', p['seq'] + 1)
    where = (ps[2]['off'] + 64, 2)
elif fault == 'disc-down':
    put(data, p1['off'] + 72, '<Q', ps[2]['disc'] + 7)
    where = (ps[2]['off'] + 72, 2)
elif fault == 'unknown-id':
    r = records(data, p1, ev)[1]
    if r[3]:
        put(data, r[0] + 1, '<I', 999999)
    else:
        unused = min(i for i in range(3, 31) if i not in ev)
        w, = struct.unpack_from('<I', data, r[0])
        put(data, r[0], '<I', (w & ~31) | unused)
    where = (r[0], 1)
elif fault == 'cut-event':
    # Two bytes off content_size: the last event (4 bytes at least) is cut.
    last = records(data, p1, ev)[-1]
    put(data, p1['off'] + 48, '<Q', p1['content'] - 16)
    where = (last[0], 1)
elif fault == 'huge-size':
    put(data, p1['off'] + 56, '<Q', (1 << 64) - 8)
    put(data, p1['off'] + 48, '<Q', 1 << 63)
    where = (p1['off'] + 56, 1)
elif fault.startswith('corrupt'):
    # N random bytes of every stream file changed (seed: the fault name).
    rnd = random.Random(fault)
    n = int(fault.split('-')[1])
    for f in files:
        fp = os.path.join(d, f)
        b = bytearray(open(fp, 'rb').read())
        for _ in range(n):
            if b:
                b[rnd.randrange(len(b))] = rnd.randrange(256)
        open(fp, 'wb').write(b)
    print('- 0 0')
    sys.exit(0)
else:
    sys.exit('ctfpatch: unknown fault ' + fault)
if where is None:
    sys.exit('ctfpatch: no place for ' + fault)
open(path, 'wb').write(data)
print(best, where[0], where[1])
EOF

# damage FAULT SRC: a copy of SRC with the fault, in c-FAULT; where check
# must report it in EXP_FILE EXP_OFF EXP_PKT.
damage() {
	local d=c-$1
	rm -rf "$d"
	cp -r "$2" "$d"
	EXP_FILE= EXP_OFF= EXP_PKT=
	read -r EXP_FILE EXP_OFF EXP_PKT < <(python3 "$T/ctfpatch.py" "$1" "$d" 2>"$d.perr")
	[ -n "$EXP_FILE" ] || { why "cannot make the fault"; show "$d.perr"; return 1; }
}

# ---- good traces ------------------------------------------------------------

begin
if have "$RT" "$DEMO"; then
	rec demo -- "$DEMO" 2000
	eq "record status" "$RC" 0
	clean demo "$S_EVENTS" "$S_LOST"
fi
finish "demo, default buffers: no problem, events as recorded"

begin
if have "$RT" "$DEMO"; then
	rec base --buffer-size 64K --subbuffers 4 -- "$DEMO" 3000
	eq "record status" "$RC" 0
	clean base "$S_EVENTS" "$S_LOST"
	# Some CPU gets more than 3 sub-buffers of the ~500 KB written, so
	# its file has 3 packets at least: what the faults below need.
	[ "${C_PACKETS:-0}" -ge 3 ] || why "only ${C_PACKETS:-0} packets"
fi
finish "demo, 16K sub-buffers (many packets, losses): no problem, events and losses as recorded"

for mode in discard overwrite; do
	begin
	if have "$RT" "$PROGS/busy"; then
		rec busy-$mode --mode $mode --buffer-size 64K --subbuffers 4 -- "$PROGS/busy" 200000 stop
		eq "record status" "$RC" 0
		[ "${S_LOST:-0}" -gt 0 ] || why "the recording lost nothing"
		# Overwritten events are in events_discarded too: check
		# finds the summary's losses in both modes.
		clean busy-$mode "$S_EVENTS" "$S_LOST"
		if [ $mode = overwrite ]; then
			grep -q 'ringtrace_lost_overwrite = [1-9]' busy-$mode/metadata ||
				why "no overwritten events in the env"
		fi
	fi
	finish "--mode $mode with a full buffer: losses are accounted for, no problem"
done

begin
if have "$RT" "$PROGS/threads"; then
	rec threads --buffer-size 64K --subbuffers 4 -- "$PROGS/threads" 4 20000
	eq "record status" "$RC" 0
	clean threads "$S_EVENTS" "$S_LOST"
fi
finish "4 threads migrating between CPUs: no problem"

begin
if have "$RT" "$PROGS/manyev" "$PROGS/gap"; then
	rec manyev -- "$PROGS/manyev"
	eq "record status" "$RC" 0
	clean manyev 41 0
	rec gap -- "$PROGS/gap"
	eq "record status" "$RC" 0
	clean gap 4 0
fi
finish "extended event headers (ids past 31, long gaps): no problem"

begin
if have "$RT" "$PROGS/crashmid"; then
	# As in run.sh: room for everything, or an 8K buffer lapped many times
	# (a full buffer in discard mode would drop the fatal event instead).
	export ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}handle_segv=0
	rec crash -- "$PROGS/crashmid" 10000
	eq "record status (128+SIGSEGV)" "$RC" 139
	clean crash "$S_EVENTS" "$S_LOST"
	rec crash-ow --mode overwrite --buffer-size 8K --subbuffers 2 -- "$PROGS/crashmid" 10000 stop
	eq "record status (128+SIGSEGV), overwrite" "$RC" 139
	clean crash-ow "$S_EVENTS" "$S_LOST"
fi
finish "a program that dies inside a tracepoint: the salvaged trace has no problem"

begin
if have "$RT" "$PROGS/flightprog"; then
	rec fr --flight-recorder --buffer-size 16K --subbuffers 4 -- "$PROGS/flightprog" errors 30000
	eq "record status" "$RC" 0
	n=0
	for s in fr/snapshot-*; do
		[ -d "$s" ] || continue
		n=$((n + 1))
		clean "$s"
	done
	[ $n -gt 0 ] || why "no snapshot was written"
	rec fk --flight-recorder --buffer-size 16K --subbuffers 4 -- "$PROGS/flightprog" kill 30000
	eq "record status (128+SIGKILL)" "$RC" 137
	if [ -d fk/recovered ]; then clean fk/recovered; else why "no fk/recovered"; fi
fi
finish "flight recorder: snapshots and the trace recovered after SIGKILL have no problem"

begin
if have "$RT" "$CTFGEN"; then
	rm -rf gen
	"$CTFGEN" --be --natural --gap --pad --cpus 3 --events 2000 gen >gen.out 2>&1 || why "ctf_gen failed"
	clean gen 6000 0
fi
finish "ctf_gen: big-endian, natural alignment, extended headers, padding: no problem"

# ---- one fault each ---------------------------------------------------------

# fault NAME SRC PATTERN DESCRIPTION: exactly one problem, on the line
# DIR/FILE: offset OFF (packet K): ...PATTERN...
fault() {
	local name=$1 src=$2 pat=$3 desc=$4 d=c-$1
	begin
	if [ ! -d "$src" ]; then
		why "no trace $src to damage"
	elif damage "$name" "$src"; then
		chk "$d"
		eq "check status" "$CRC" 1
		eq "problems" "${C_PROBLEMS:-none}" 1
		local want="$d/$EXP_FILE: offset $EXP_OFF (packet $EXP_PKT): "
		grep -F -- "$want" "$d.chk" | grep -Eq -- "$pat" ||
			{ why "no line '$want...$pat'"; show "$d.chk"; }
		eq "stderr lines" "$(wc -l <"$d.chkerr")" 0
	fi
	finish "fault found: $desc"
}

fault magic base 'bad magic number 0x' "flipped magic number"
fault uuid base "uuid [0-9a-f-]{36} is not the trace's" "packet uuid other than the metadata's"
fault stream-id base 'unknown stream_id 7' "unknown stream id"
fault content-gt-packet base 'content_size [0-9]+ bits is larger than packet_size' "content_size > packet_size"
fault cut-header base 'truncated: the file ends inside a packet header' "stream file cut inside a packet header"
fault cut-content base 'truncated file or bad packet_size: the packet is [0-9]+ bytes but the file has' "stream file cut inside a packet"
fault ts-back manyev 'timestamp [0-9]+ goes backwards' "an event timestamp going backwards inside a packet"
fault ts-end base 'is after timestamp_end' "events after timestamp_end"
fault seq-gap base 'packet_seq_num jumps from [0-9]+ to [0-9]+: 1 packet missing' "packet_seq_num gap"
fault disc-down base 'events_discarded goes down' "events_discarded decreasing"
fault unknown-id base 'unknown event id' "unknown event id"
fault cut-event base 'is cut by content_size' "an event cut by content_size"
fault huge-size base 'bad packet_size: the packet is 2305843009213693951 bytes' "huge packet_size and content_size"

begin
if [ -d base ]; then
	rm -rf gapok
	cp -r base gapok
	python3 "$T/ctfpatch.py" seq-gap gapok >/dev/null 2>gapok.perr || show gapok.perr
	sed -i 's/ringtrace_attached = 0;/ringtrace_attached = 1;/' gapok/metadata
	chk gapok
	eq "a gap in a trace of an attached recorder: problems" "${C_PROBLEMS:-none}" 1
	sed -i 's/ringtrace_lost_crash = 0;/ringtrace_lost_crash = 5;/' gapok/metadata
	chk gapok
	eq "a gap with sub-buffers lost to a crash: status" "$CRC" 0
	# The first packet's number is what attaching late explains.
	rm -rf late
	cp -r base late
	python3 - late <<'EOF' || why "cannot renumber"
import os, struct, sys
d = sys.argv[1]
for f in os.listdir(d):
    if not f.startswith('stream_'):
        continue
    b = bytearray(open(os.path.join(d, f), 'rb').read())
    off = 0
    while off + 84 <= len(b):
        seq, = struct.unpack_from('<Q', b, off + 64)
        struct.pack_into('<Q', b, off + 64, seq + 40)
        off += struct.unpack_from('<Q', b, off + 56)[0] // 8
    open(os.path.join(d, f), 'wb').write(b)
EOF
	chk late
	eq "packets numbered from 40, recorder not attached: status" "$CRC" 1
	grep -q 'the first packet has packet_seq_num 40' late.chk || { why "no 'first packet' line"; show late.chk; }
	sed -i 's/ringtrace_attached = 0;/ringtrace_attached = 1;/' late/metadata
	chk late
	eq "packets numbered from 40, recorder attached: status" "$CRC" 0
else
	why "no trace to damage"
fi
finish "sequence gaps: accounted for by the env (attached, crash losses) or reported"

# ---- hostile input ------------------------------------------------------------

begin
if [ -d base ]; then
	rm -rf junk
	cp -r base junk
	head -c 5000 /dev/urandom >junk/stream_9
	head -c 30 /dev/urandom >junk/stream_10
	chk junk
	eq "status" "$CRC" 1
	grep -q '^junk/stream_9: offset 0 (packet 0): bad magic number' junk.chk || { why "stream_9 not reported"; show junk.chk; }
	grep -q '^junk/stream_10: offset 0 (packet 0): truncated: the file ends inside a packet header' junk.chk ||
		{ why "stream_10 not reported"; show junk.chk; }
	grep -q '^junk/stream_[0-8]:' junk.chk && { why "a good file reported"; show junk.chk; }
	eq "streams" "${C_STREAMS:-none}" "$(ls base | grep -c '^stream_' | awk '{ print $1 + 2 }')"
	# Every stream file replaced by junk of every size.
	rm -rf junk2
	cp -r base junk2
	for f in junk2/stream_*; do head -c $((RANDOM % 70000)) /dev/urandom >"$f"; done
	chk junk2
	[ "$CRC" = 1 ] || { why "all junk: status $CRC"; show junk2.chk; }
	[ -n "$C_PROBLEMS" ] || why "all junk: no summary line"
else
	why "no trace to damage"
fi
finish "random bytes as stream files: reported, no crash"

begin
if [ -d base ]; then
	st=$(cd base && ls stream_* | head -n 1)
	size=$(stat -c %s "base/$st")
	bad=""
	for i in $(seq 1 40); do
		cut=$(( (size * i) / 41 + i ))
		rm -rf cut
		cp -r base cut
		truncate -s $cut "cut/$st"
		chk cut
		case $CRC in 0 | 1) ;; *) bad="$bad $cut:$CRC" ;; esac
		[ -n "$C_PROBLEMS" ] || bad="$bad $cut:nosummary"
	done
	[ -z "$bad" ] || why "cuts with a bad status:$bad"
	for n in 1 3 10 50 300; do
		for s in a b c d; do
			damage corrupt-$n-$s base || continue
			chk c-corrupt-$n-$s
			case $CRC in 0 | 1) ;; *) why "corrupt-$n-$s: status $CRC"; show c-corrupt-$n-$s.chkerr ;; esac
			[ -n "$C_PROBLEMS" ] || why "corrupt-$n-$s: no summary line"
		done
	done
else
	why "no trace to damage"
fi
finish "40 truncations and 20 random corruptions: status 0 or 1 with a summary, never a crash or a hang"

begin
if [ -d base ]; then
	rm -rf meta
	cp -r base meta
	head -c 300 /dev/urandom | dd of=meta/metadata bs=1 seek=700 conv=notrunc status=none
	chk meta
	eq "status" "$CRC" 1
	grep -q '^meta/metadata: ' meta.chk || { why "no metadata line"; show meta.chk; }
	eq "problems" "${C_PROBLEMS:-none}" 1
else
	why "no trace to damage"
fi
finish "garbled metadata: one problem, status 1"

begin
if [ -d base ]; then
	# Every event holds a million empty structs: work without input,
	# which check bounds by the size of the file instead of spinning.
	rm -rf empties
	mkdir empties
	cp base/metadata empties/
	printf 'event {\n\tname = "x:y";\n\tid = 50;\n\tstream_id = 0;\n\tfields := struct {\n\t\tuint32_t _n;\n\t\tstruct { } _e[_n];\n\t};\n};\n' >>empties/metadata
	python3 - empties <<'EOF'
import re, struct, sys
d = sys.argv[1]
m = open(d + '/metadata').read()
uuid = bytes.fromhex(re.search(r'uuid = "([0-9a-f-]+)";', m).group(1).replace('-', ''))
body = b''.join(b'\x1f' + struct.pack('<IQI', 50, 2 + i, 1000000) for i in range(20000))
size = (84 + len(body)) * 8
hdr = struct.pack('<I', 0xC1FC1FC1) + uuid + struct.pack('<IQQQQQQQI', 0, 0, 1, 10**6, size, size, 0, 0, 0)
open(d + '/stream_0', 'wb').write(hdr + body)
EOF
	chk empties
	eq "status" "$CRC" 1
	grep -q '^empties/stream_0: offset [0-9]* (packet 0): decoding costs more than 64 values per byte' empties.chk ||
		{ why "no 'values per byte' line"; show empties.chk; }
else
	why "no trace to damage"
fi
finish "hostile metadata (a million empty structs per event): stopped early, never a hang"

begin
if [ -d base ]; then
	rm -rf many
	cp -r base many
	for f in magic seq-gap cut-event; do python3 "$T/ctfpatch.py" $f many >/dev/null 2>&1; done
	for i in 1 2 3; do head -c 200 /dev/urandom >many/stream_x$i; done
	chk many -n 2
	eq "status" "$CRC" 1
	eq "problem lines printed" "$(grep -c ': offset ' many.chk)" 2
	more=$(sed -n 's/^\.\.\. and \([0-9]*\) more problems$/\1/p' many.chk)
	[ -n "$more" ] && eq "problems = printed + more" "${C_PROBLEMS:-none}" $((more + 2))
	[ -n "$more" ] || { why "no '... and N more problems' line"; show many.chk; }
else
	why "no trace to damage"
fi
finish "-n 2: two problems printed, the others counted"

# ---- not a trace, bad arguments -----------------------------------------------

# refused NAME ARGS...: status 2, one line on stderr, nothing on stdout.
refused() {
	local name=$1
	shift
	begin
	{ timeout -k 5 $LIM "$RT" check "$@" >ref.out 2>ref.err; } 2>/dev/null
	eq "status" "$?" 2
	eq "stderr lines" "$(wc -l <ref.err)" 1
	eq "stdout lines" "$(wc -l <ref.out)" 0
	grep -q '^ringtrace check: ' ref.err || { why "no 'ringtrace check: ' message"; show ref.err; }
	finish "refused with status 2: $name"
}

mkdir -p notrace && echo hello >notrace/stream_0
echo hello >afile
refused "a directory without metadata" notrace
refused "a directory that does not exist" nonexistent-dir
refused "a file" afile
refused "an unknown option" --bogus base
refused "two directories" base base

begin
{ timeout -k 5 $LIM "$RT" check >ref.out 2>ref.err; } 2>/dev/null
eq "status" "$?" 2
grep -q '^usage: ringtrace check' ref.err || { why "no usage"; show ref.err; }
finish "refused with status 2: no directory"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
