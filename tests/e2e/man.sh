#!/bin/bash
# man.sh - the man pages (docs/man/, mdoc) against the command: every page
# passes `mandoc -T lint` without a message (references to our own pages
# aside: they are not installed while the test runs), every command has a
# page that names it (ringtrace-CMD in a NAME section), and every option
# that `ringtrace CMD --help` prints appears in that page as rendered, so
# the two cannot drift apart.
#
#   tests/e2e/man.sh [BUILD_DIR]
set -u
export LC_ALL=C
exec </dev/null
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/e2e/harness.sh"
e2e_setup man "${1:-build}"
trap 'rm -rf "$T"' EXIT
MAN=$REPO/docs/man

# names PAGE: the names its NAME section gives (the first .Nm words).
names() { awk '/^\.Sh /{n = ($2 == "NAME")} n && /^\.Nm /{print $2}' "$1"; }
# text PAGE: the page rendered as plain text.
text() { mandoc -T ascii "$1" | sed 's/.\x08//g'; }
# options: the options a --help text (standard input) names: words that
# start with - or -- at the start of a line or after a space, [ , or |.
options() { grep -oE '(^|[][ ,|])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[][ ,|]//' | sort -u; }

ours=" "
for p in "$MAN"/*.[13]; do
	s=${p##*.}
	b=${p##*/}
	ours+="${b%.*}($s) "
	for n in $(names "$p"); do ours+="$n($s) "; done
done

begin
if have "$RT" && command -v mandoc >/dev/null; then
	n=0
	for p in "$MAN"/*.[13]; do
		n=$((n + 1))
		while IFS= read -r l; do
			# "referenced manual not found: Xr NAME S": fine when ours.
			ref=$(sed -n 's/.*referenced manual not found: Xr \([^ ]*\) \([0-9]\).*/\1(\2)/p' <<<"$l")
			[ -n "$ref" ] && [[ $ours == *" $ref "* ]] && continue
			why "$(basename "$p"): $l"
		done < <(mandoc -T lint "$p" 2>&1)
	done
	[ "$n" -ge 2 ] || why "only $n pages under docs/man"
else
	why "mandoc is not installed (make deps)"
fi
finish "mandoc -T lint: no message on any page"

begin
if have "$RT"; then
	cmds=$("$RT" --help | awk '/^commands:/ { c = 1; next } c && NF == 0 { exit } c { print $1 }')
	[ "$(wc -w <<<"$cmds")" -ge 20 ] || why "ringtrace --help lists only: $cmds"
	for c in "" $cmds; do
		name=ringtrace${c:+-$c}
		page=
		for p in "$MAN"/*.1; do
			names "$p" | grep -qx -- "$name" && page=$p && break
		done
		if [ -z "$page" ]; then
			why "no page names $name"
			continue
		fi
		rendered=$(text "$page")
		# shellcheck disable=SC2086
		for o in $("$RT" $c --help 2>&1 | options); do
			grep -qE -- "(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|$)" <<<"$rendered" ||
				why "$name: option $o of --help is not in $(basename "$page")"
		done
	done
fi
finish "every command has a page, and every option of its --help is in it"

begin
if have "$RT"; then
	for p in "$MAN"/*.[13]; do
		text "$p" >page.txt 2>page.err || why "$(basename "$p") does not render"
		[ "$(wc -l <page.txt)" -ge 20 ] || why "$(basename "$p") renders to $(wc -l <page.txt) lines"
		grep -q '^SYNOPSIS' page.txt || why "$(basename "$p") has no SYNOPSIS"
	done
	# ringtrace(3) documents every public macro and function of the headers.
	for s in RINGTRACE_EVENT RINGTRACE_EVENT_STACK ringtrace_tracepoint ringtrace_tracepoint_enabled \
		ringtrace_snapshot ringtrace_set_log_callback; do
		grep -q "$s" "$REPO/include/ringtrace/ringtrace.h" "$REPO/include/ringtrace/ringtrace-api.h" ||
			why "$s is not in the headers any more"
		names "$MAN/ringtrace.3" | grep -qx "$s" || why "ringtrace(3) does not name $s"
	done
	for f in S8 S64 U8 U64 X8 X64 PTR F32 F64 STRING ARRAY SEQ; do
		text "$MAN/ringtrace.3" | grep -q "RINGTRACE_$f" || why "ringtrace(3) lacks RINGTRACE_$f"
	done
fi
finish "every page renders with a synopsis; ringtrace(3) covers the API"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
