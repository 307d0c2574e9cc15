#!/bin/sh
# compare_babeltrace.sh DIR - check that `ringtrace dump` and babeltrace2
# read the same events from the CTF trace in DIR.
#
# Both outputs are normalised to one line per event,
#     seconds.nanoseconds provider:event {ctx=v, ...} field=value field=value ...
# (the `{...}` groups are the stream's event context and the event's own
# context, when they have members) and one line per loss,
#     lost events|packets COUNT T1 T2
# (COUNT is ? where babeltrace2 gives none: "may have discarded", a first
# packet that already counts discarded events, as after overwriting)
# then sorted (events with equal times may come in another order) and
# compared; events without time (`?`: a stream with no clock, which
# babeltrace2 prints without [T]) must also come in the same order. babeltrace2 runs with `-n payload,scope,context` so that each
# scope is named (its packet context is not compared: dump shows only
# cpu_id of it, in the [cpu] column). Normalisation: babeltrace2's
# `[ [0] = 1, [1] = 2 ]` becomes `[1, 2]`, `{ a = 1 }` becomes `{a=1}`,
# `( "label" : container = 3 )` becomes `label` (dump prints an enum's
# label) and `( <unknown> : container = 3 )` becomes `3`; the `_x_length`
# members of sequences (ringtrace dump hides them) are dropped; hexadecimal
# is lower-cased; numbers with a fraction or an exponent are printed with
# %g (babeltrace2 prints doubles with %g, dump prints them in full);
# babeltrace2's extra escapes \' \? \e are undone.
#
# Environment: RINGTRACE (default: build/bin/ringtrace next to this
# script's repository), BABELTRACE2 (default: babeltrace2).
# Exit status: 0 same, 1 different (a diff is printed), 2 a tool failed.
set -u

dir=${1:?usage: compare_babeltrace.sh DIR}
here=$(cd "$(dirname "$0")/../.." && pwd)
rt=${RINGTRACE:-$here/build/bin/ringtrace}
bt=${BABELTRACE2:-babeltrace2}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

if ! "$bt" --clock-seconds --no-delta -n payload,scope,context "$dir" >"$tmp/bt.out" 2>"$tmp/bt.err"; then
	echo "compare_babeltrace: babeltrace2 failed on $dir:" >&2
	tail -n 5 "$tmp/bt.err" >&2
	exit 2
fi
if ! "$rt" dump --all "$dir" >"$tmp/rt.out.esc" 2>"$tmp/rt.err"; then
	echo "compare_babeltrace: ringtrace dump failed on $dir:" >&2
	cat "$tmp/rt.err" >&2
	exit 2
fi
# dump writes bytes that are not UTF-8 as \xHH; babeltrace2 writes them raw.
# Back to raw bytes (perl-base is always there on Debian; \\ pairs are kept).
perl -pe 's/\\(\\|x([89a-fA-F][0-9a-fA-F]))/defined $2 ? chr(hex $2) : "\\\\"/ge' \
	"$tmp/rt.out.esc" >"$tmp/rt.out" || exit 2

# Shared awk code: value normalisation and a splitter that respects quotes
# and brackets.
common='
function norm_scalar(v) {
	if (v ~ /^0[xX][0-9a-fA-F]+$/) return tolower(v)
	if (v ~ /^-?[0-9]+$/) return v
	if (v ~ /^-0\.0*$/) return "-0"
	if (v ~ /^-?(nan|inf)$/) return v
	if (v ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ || v ~ /^[-+]?[0-9]+\.[0-9]*([eE][-+]?[0-9]+)?$/)
		return sprintf("%g", v + 0)
	return v
}
function trim(s) {
	gsub(/^ +| +$/, "", s)
	return s
}
# An enum as babeltrace2 prints it: its label, or its value if none.
function norm_enum(v,    l) {
	if (v ~ /^\( "[^"]*" : container = /) {
		l = substr(v, 4)
		return substr(l, 1, index(l, "\"") - 1)
	}
	if (match(v, /^\( <unknown> : container = /)) {
		l = substr(v, RLENGTH + 1)
		sub(/ *\)$/, "", l)
		return norm_scalar(l)
	}
	return v
}
# The members of a struct, "k = v, ..." (babeltrace2) or "k=v, ..." (dump),
# as "k=v" joined by sep; sequence lengths dropped.
function norm_members(inner, sep,    n, parts, i, eq, k, out, first) {
	n = split_top(inner, parts, ",")
	out = ""
	first = 1
	for (i = 1; i <= n; i++) {
		parts[i] = trim(parts[i])
		if (parts[i] == "") continue
		eq = index(parts[i], "=")
		k = trim(substr(parts[i], 1, eq - 1))
		if (k ~ /^_.+_length$/) continue
		out = out (first ? "" : sep) k "=" norm_value(trim(substr(parts[i], eq + 1)))
		first = 0
	}
	return out
}
# {a=1, b=2}
function norm_struct(v) {
	return "{" norm_members(trim(substr(v, 2, length(v) - 2)), ", ") "}"
}
function norm_value(v,    inner, n, parts, i, out) {
	if (substr(v, 1, 1) == "\"") return v
	if (substr(v, 1, 1) == "(") return norm_enum(v)
	if (substr(v, 1, 1) == "{") return norm_struct(v)
	if (substr(v, 1, 1) == "[") {
		inner = substr(v, 2, length(v) - 2)
		gsub(/^ +| +$/, "", inner)
		if (inner == "") return "[]"
		n = split_top(inner, parts, ",")
		out = ""
		for (i = 1; i <= n; i++) {
			gsub(/^ +| +$/, "", parts[i])
			out = out (i > 1 ? ", " : "") norm_value(parts[i])
		}
		return "[" out "]"
	}
	return norm_scalar(v)
}
# Split s at top-level occurrences of the one-character separator sep.
function split_top(s, parts, sep,    n, i, c, depth, instr, cur) {
	n = 0; depth = 0; instr = 0; cur = ""
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (instr) {
			cur = cur c
			if (c == "\\") { i++; cur = cur substr(s, i, 1) }
			else if (c == "\"") instr = 0
			continue
		}
		if (c == "\"") instr = 1
		else if (c == "[" || c == "{") depth++
		else if (c == "]" || c == "}") depth--
		if (c == sep && depth == 0) { parts[++n] = cur; cur = ""; continue }
		cur = cur c
	}
	if (cur != "" || n > 0) parts[++n] = cur
	return n
}
'

# babeltrace2: [T] host:proc:(pid) name: stream.packet.context = { cpu_id = C },
# stream.event.context = { vtid = 1 }, event.context = { ... }, event.fields = { f = v, ... }
awk "$common"'
{
	# no [T] when the stream has no clock: dump prints ? then
	if (substr($0, 1, 1) == "[") {
		t = substr($0, 2, index($0, "]") - 2)
		rest = substr($0, index($0, "]") + 2)
	} else {
		t = "?"
		rest = $0
	}
	if (match(rest, /: (stream\.packet\.context|stream\.event\.context|event\.context|event\.fields) = [{]/)) {
		head = substr(rest, 1, RSTART - 1)
		body = substr(rest, RSTART + 2)
	} else if (rest ~ /:$/) {
		head = substr(rest, 1, length(rest) - 1)
		body = ""
	} else {
		next
	}
	nw = split(head, w, " ")
	name = w[nw]
	gsub(/\[[0-9]+\] = /, "", body)
	gsub(/\\\x27/, "\x27", body); gsub(/\\\?/, "?", body); gsub(/\\e/, "\\x1b", body)
	line = t " " name
	n = split_top(body, scopes, ",")
	for (i = 1; i <= n; i++) {
		sc = trim(scopes[i])
		eq = index(sc, " = ")
		scope = substr(sc, 1, eq - 1)
		v = substr(sc, eq + 3)
		if (scope == "event.fields") {
			v = norm_members(trim(substr(v, 2, length(v) - 2)), " ")
			if (v != "") line = line " " v
		} else if (scope == "stream.event.context" || scope == "event.context") {
			v = norm_struct(v)
			if (v != "{}") line = line " " v
		}
	}
	print line
}' "$tmp/bt.out" >"$tmp/bt.norm"

awk '
/WARNING: Tracer discarded/ {
	s = $0
	sub(/.*Tracer discarded /, "", s)
	split(s, w, " ")
	kind = (w[2] ~ /^packet/) ? "packets" : "events"
	t1 = s; sub(/^[^[]*\[/, "", t1); sub(/\].*/, "", t1)
	t2 = s; sub(/^[^[]*\[[^]]*\][^[]*\[/, "", t2); sub(/\].*/, "", t2)
	print "lost " kind " " w[1] " " t1 " " t2
}
# A stream whose first packet already counts discarded events: no count.
/WARNING: Tracer may have discarded events/ {
	t1 = $0; sub(/^[^[]*\[/, "", t1); sub(/\].*/, "", t1)
	t2 = $0; sub(/^[^[]*\[[^]]*\][^[]*\[/, "", t2); sub(/\].*/, "", t2)
	print "lost events ? " t1 " " t2
	print t1 " " t2 >"'"$tmp/mayhave"'"
}' "$tmp/bt.err" >>"$tmp/bt.norm"
touch "$tmp/mayhave"

# ringtrace dump: comm-tid [cpu] T: name: {ctx} f=v ...   and   ringtrace: N events lost ...
awk "$common"'
FILENAME == MAYHAVE { mayhave[$0] = 1; next }
/^ringtrace: / {
	kind = ($3 ~ /^packet/) ? "packets" : "events"
	# Where babeltrace2 gives no count (above), the count is not compared.
	n = (kind == "events" && (($9 " " $11) in mayhave)) ? "?" : $2
	if ($8 == "between") print "lost " kind " " n " " $9 " " $11
	# A loss before the first packet of a stream: babeltrace2 says only "may
	# have discarded" (no count, not compared); dump counts it.
	next
}
{
	p = index($0, "] ")
	if (p == 0) next
	rest = substr($0, p + 2)
	q = index(rest, ": ")
	t = substr(rest, 1, q - 1)
	rest = substr(rest, q + 2)
	q = index(rest, ": ")
	if (q == 0) { name = substr(rest, 1, length(rest) - 1); rest = "" }
	else { name = substr(rest, 1, q - 1); rest = substr(rest, q + 2) }
	line = t " " name
	m = split_top(rest, f, " ")
	for (i = 1; i <= m; i++) {
		if (f[i] == "") continue
		if (substr(f[i], 1, 1) == "{") {
			line = line " " norm_struct(f[i])
			continue
		}
		eq = index(f[i], "=")
		line = line " " substr(f[i], 1, eq - 1) "=" norm_value(substr(f[i], eq + 1))
	}
	print line
}' MAYHAVE="$tmp/mayhave" "$tmp/mayhave" "$tmp/rt.out" >"$tmp/rt.norm"

LC_ALL=C sort "$tmp/bt.norm" >"$tmp/bt.sorted"
LC_ALL=C sort "$tmp/rt.norm" >"$tmp/rt.sorted"
if ! [ -s "$tmp/bt.sorted" ] && [ -s "$tmp/bt.out" ]; then
	echo "compare_babeltrace: could not parse the babeltrace2 output" >&2
	exit 2
fi
# Events without time (streams with no clock) come file by file in both
# readers: their order is compared too.
grep '^? ' "$tmp/bt.norm" >"$tmp/bt.untimed"
grep '^? ' "$tmp/rt.norm" >"$tmp/rt.untimed"
if diff -u "$tmp/bt.sorted" "$tmp/rt.sorted" >"$tmp/diff"; then
	if ! diff -u "$tmp/bt.untimed" "$tmp/rt.untimed" >"$tmp/diff"; then
		echo "compare_babeltrace: $dir: the events without time come in another order:" >&2
		head -n 40 "$tmp/diff" >&2
		exit 1
	fi
	echo "compare_babeltrace: $dir: $(wc -l <"$tmp/rt.sorted") lines identical"
	exit 0
fi
echo "compare_babeltrace: $dir: babeltrace2 (-) and ringtrace dump (+) differ:" >&2
head -n 40 "$tmp/diff" >&2
exit 1
