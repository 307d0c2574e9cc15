#!/bin/sh
# `make run`: record the bundled example with tracing on, then dump the trace.
set -eu
O=${1:-build}
out=$(mktemp -d /tmp/ringtrace-example.XXXXXX)
trap 'rm -rf "$out"' EXIT
"$O/bin/ringtrace" record -o "$out/trace" -- "$O/examples/demo" 200
"$O/bin/ringtrace" dump "$out/trace" > "$out/dump.txt"
echo "--- ringtrace dump: $(wc -l < "$out/dump.txt") lines, the first 25 ---"
head -n 25 "$out/dump.txt"
