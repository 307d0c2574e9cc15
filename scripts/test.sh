#!/bin/bash
# Build ringtrace every way CI needs and run every test.
#
#   1. gcc and clang builds with -Werror (library, command, examples, tests)
#   2. the public header compiled as C99/C11/C++ (tests/compile)
#   3. unit tests (cmocka), stress tests, end-to-end tests
#   4. unit, stress and end-to-end tests again under ASan+UBSan
#   5. the concurrent stress tests (ring buffer, stack map, grace periods)
#      under TSan
#   6. the fuzz targets for a few seconds each
#
# Prints "ok - ..." / "not ok - ..." per check and ends with the line
# "N passed, M failed". Exit status 0 only when nothing failed.
set -u
cd "$(dirname "$0")/.."
JOBS=$(nproc 2>/dev/null || echo 2)
LOGDIR=$(mktemp -d /tmp/ringtrace-test.XXXXXX)
passed=0
failed=0

ok() { echo "ok - $1"; passed=$((passed + 1)); }
notok() {
	echo "not ok - $1"
	failed=$((failed + 1))
	if [ -n "${2:-}" ] && [ -f "$2" ]; then tail -n 25 "$2" | sed 's/^/    /'; fi
}

# check NAME CMD...: one check, output kept in a log shown on failure.
check() {
	local name=$1
	shift
	local log="$LOGDIR/$(echo "$name" | tr -c 'A-Za-z0-9_.-' '_').log"
	if "$@" >"$log" 2>&1; then ok "$name"; else notok "$name" "$log"; fi
}

# suite NAME CMD...: a runner that prints its own "N passed, M failed".
suite() {
	local name=$1
	shift
	local log="$LOGDIR/$(echo "$name" | tr -c 'A-Za-z0-9_.-' '_').log"
	"$@" >"$log" 2>&1
	local rc=$?
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [ -z "$line" ]; then
		notok "$name (no result line, exit $rc)" "$log"
		return
	fi
	local p f
	p=${line%% passed*}
	f=${line#*, }
	f=${f%% failed*}
	passed=$((passed + p))
	failed=$((failed + f))
	grep -E '^not ok' "$log" | sed "s/^/[$name] /"
	if [ "$f" != 0 ] || [ $rc != 0 ]; then
		echo "not ok - $name: $line (exit $rc)"
		[ "$f" = 0 ] && failed=$((failed + 1))
		tail -n 25 "$log" | sed 's/^/    /'
	else
		echo "ok - $name: $line"
	fi
}

# cmocka binaries: count their test cases.
unit() {
	local tag=$1 dir=$2
	for t in "$dir"/tests/test_*; do
		[ -x "$t" ] || continue
		local name
		name="$tag $(basename "$t")"
		local log="$LOGDIR/$(echo "$name" | tr ' /' '__').log"
		timeout 300 "$t" >"$log" 2>&1
		local rc=$?
		local p f
		p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
		f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
		p=${p:-0}
		f=${f:-0}
		if [ $rc = 0 ] && [ "$p" -gt 0 ] && [ "$f" = 0 ]; then
			passed=$((passed + p))
			echo "ok - $name ($p tests)"
		else
			passed=$((passed + p))
			failed=$((failed + (f > 0 ? f : 1)))
			echo "not ok - $name (exit $rc, $p passed, $f failed)"
			tail -n 25 "$log" | sed 's/^/    /'
		fi
	done
}

stress() {
	local tag=$1 bin=$2 events=$3
	for mode in discard overwrite; do
		check "$tag stress $mode rseq-or-default" timeout 600 "$bin" --mode "$mode" --events "$events"
		check "$tag stress $mode atomic+yield" timeout 600 "$bin" --mode "$mode" --events "$events" --no-rseq --yield
		check "$tag stress $mode yield" timeout 600 "$bin" --mode "$mode" --events "$events" --yield
		# rseq with a clock read outside the critical sections.
		check "$tag stress $mode monotonic clock, rseq-or-default, yield" timeout 600 "$bin" --mode "$mode" \
			--events "$events" --clock monotonic --yield
	done
	# Blocking mode: writers wait for the slow reader (1 s at most).
	check "$tag stress discard blocking, rseq-or-default, yield" timeout 600 "$bin" --mode discard \
		--events "$events" --yield --block 1000000
	check "$tag stress discard blocking, atomic" timeout 600 "$bin" --mode discard \
		--events "$events" --no-rseq --block 1000000
}

echo "# builds"
check "gcc -Werror build" make -j"$JOBS" CC=gcc WERROR=1 O=build tests-build
check "clang -Werror build" make -j"$JOBS" CC=clang WERROR=1 O=build-clang tests-build

echo "# public header"
if [ -x tests/compile/run.sh ]; then
	suite "header compile tests" tests/compile/run.sh
fi

echo "# unit and stress tests"
unit gcc build
unit clang build-clang
[ -x build/tests/stress_ringbuf ] && stress gcc build/tests/stress_ringbuf 200000
[ -x build/tests/stress_stackmap ] && check "gcc stress stackmap" timeout 600 build/tests/stress_stackmap
[ -x build/tests/stress_memagg ] && check "gcc stress allocation counters" timeout 600 build/tests/stress_memagg
if [ -x build/tests/stress_rcu ]; then
	check "gcc stress grace periods (rseq)" timeout 600 build/tests/stress_rcu
	check "gcc stress grace periods (atomic)" timeout 600 build/tests/stress_rcu --no-rseq --swaps 200
fi

echo "# end-to-end"
if [ -x tests/e2e/run.sh ]; then
	suite "end-to-end (gcc build)" tests/e2e/run.sh build
fi
if [ -x tests/e2e/live.sh ]; then
	suite "live control end-to-end (gcc build)" tests/e2e/live.sh build
fi
if [ -x tests/e2e/layers.sh ]; then
	suite "layers: the command links no runtime, the buffer calls no runtime, the exports (gcc build)" tests/e2e/layers.sh build
fi
if [ -x tests/e2e/stacks.sh ]; then
	suite "stacks at tracepoints (gcc build)" tests/e2e/stacks.sh build
fi
if [ -x tests/e2e/snapshot.sh ]; then
	suite "snapshots (gcc build)" tests/e2e/snapshot.sh build
fi
if [ -x tests/e2e/stackmap_cli.sh ]; then
	suite "stackmap command (gcc build)" tests/e2e/stackmap_cli.sh build
fi
if [ -x tests/e2e/unwind_verify.sh ]; then
	suite "unwind tables verified against libunwind (gcc build)" tests/e2e/unwind_verify.sh build
fi
if [ -x tests/e2e/mem.sh ]; then
	suite "allocation tracer (gcc build)" tests/e2e/mem.sh build
fi
if [ -x tests/e2e/mem_agg.sh ]; then
	suite "allocation counters (aggregate mode, gcc build)" tests/e2e/mem_agg.sh build
fi
if [ -x tests/e2e/mem_sample.sh ]; then
	suite "allocation sampling: estimates, frees matched, threads, fork, aggregate (gcc build)" tests/e2e/mem_sample.sh build
fi
if [ -x tests/e2e/mem_more.sh ]; then
	suite "allocation tracer with tcmalloc, dlopen, synthetic errors (gcc build)" tests/e2e/mem_more.sh build
fi
if [ -x tests/e2e/mem_block.sh ]; then
	suite "allocation tracing loses nothing: writers wait for room (gcc build)" tests/e2e/mem_block.sh build
fi
if [ -x tests/e2e/mem_losses.sh ]; then
	suite "allocation report under lost events, inherited frees (gcc build)" tests/e2e/mem_losses.sh build
fi
if [ -x tests/e2e/mem_exec.sh ]; then
	suite "a program behind wrappers, allocations before the tracer's constructors (gcc build)" tests/e2e/mem_exec.sh build
fi
if [ -x tests/e2e/mem_preinit.sh ]; then
	suite "constructors run after libringtrace's: their allocations with stacks, no deadlock setting up stacks (gcc build)" tests/e2e/mem_preinit.sh build
fi
if [ -x tests/e2e/follow.sh ]; then
	suite "following forked and executed children (gcc build)" tests/e2e/follow.sh build
fi
if [ -x tests/e2e/sec_follow.sh ]; then
	suite "the follow channel under a fork burst and forged notices (gcc build)" tests/e2e/sec_follow.sh build
fi
if [ -x tests/e2e/mem_real.sh ]; then
	suite "real programs under the allocation tracer (gcc build)" tests/e2e/mem_real.sh build
fi
if [ -x tests/e2e/clock.sh ]; then
	suite "trace clock: every forced decision, kvm-clock with an invariant TSC (gcc build)" tests/e2e/clock.sh build
fi
if [ -x tests/e2e/check.sh ]; then
	suite "trace checker (gcc build)" tests/e2e/check.sh build
fi
if [ -x tests/e2e/rseq_clock.sh ]; then
	suite "rseq on the monotonic clock: used, in order, accounted for (gcc build)" tests/e2e/rseq_clock.sh build
fi
if [ -x tests/e2e/losses.sh ]; then
	suite "every loss counted: disk full, overwrite mode, flight recorder (gcc build)" tests/e2e/losses.sh build
fi
if [ -x tests/e2e/convert_chrome.sh ]; then
	suite "convert to Chrome trace-event JSON and folded stacks (gcc build)" tests/e2e/convert_chrome.sh build
fi
if [ -x tests/e2e/convert_sqlite.sh ]; then
	suite "convert to SQLite, queries against the report (gcc build)" tests/e2e/convert_sqlite.sh build
fi
if [ -x tests/e2e/pprof.sh ]; then
	suite "convert to pprof, read back by pprof (gcc build)" tests/e2e/pprof.sh build
fi
if [ -x tests/e2e/mem_sample_cli.sh ]; then
	# After pprof.sh, which builds pprof into the build directory.
	suite "allocation sampling from the CLI: report, aggregate and pprof estimates (gcc build)" tests/e2e/mem_sample_cli.sh build
fi
if [ -x tests/e2e/report_html.sh ]; then
	suite "HTML report in headless Chromium (gcc build)" tests/e2e/report_html.sh build
fi
if [ -x tests/e2e/lttng.sh ]; then
	suite "a real LTTng-UST trace: dump and babeltrace2 agree (gcc build)" tests/e2e/lttng.sh build
fi
if [ -x tests/e2e/reader_bounds.sh ]; then
	suite "readers on hostile metadata end in bounded time (gcc build)" tests/e2e/reader_bounds.sh build
fi
if [ -x tests/e2e/sec_files.sh ]; then
	suite "no write through names another user planted (gcc build, root)" tests/e2e/sec_files.sh build
fi
if [ -x tests/e2e/sec_ctl.sh ]; then
	suite "other users' control blocks: nothing opened writable, forged ones refused (gcc build)" \
		tests/e2e/sec_ctl.sh build
fi
if [ -x tests/e2e/mount.sh ]; then
	suite "ringtrace mount: the tracefs-like FUSE file system against the commands (gcc build, root)" \
		tests/e2e/mount.sh build
fi
if [ -x tests/e2e/readers.sh ]; then
	suite "readers on odd trace directories, many threads, many event classes (gcc build)" tests/e2e/readers.sh build
fi

if [ -x tests/e2e/man.sh ]; then
	suite "man pages: mandoc lint, every --help option in its page (gcc build)" tests/e2e/man.sh build
fi
if [ -x tests/e2e/install.sh ]; then
	suite "the installed tree: pkg-config, record, mem, man, completion (gcc build)" tests/e2e/install.sh build
fi
if [ -x tests/e2e/errors.sh ]; then
	suite "every error names its subject: missing paths, pids, options (gcc build)" tests/e2e/errors.sh build
fi
if [ -x tests/e2e/progress.sh ]; then
	suite "the status line of a recording on a terminal, pipes, --progress, --quiet (gcc build)" tests/e2e/progress.sh build
fi

echo "# ASan + UBSan"
if check "asan build" make -j"$JOBS" CC=gcc SAN=address WERROR=1 tests-build; then
	unit asan build-asan
	[ -x build-asan/tests/stress_ringbuf ] && stress asan build-asan/tests/stress_ringbuf 50000
	[ -x build-asan/tests/stress_stackmap ] && check "asan stress stackmap" timeout 600 build-asan/tests/stress_stackmap
	[ -x build-asan/tests/stress_rcu ] && check "asan stress grace periods" timeout 600 build-asan/tests/stress_rcu --swaps 200
	[ -x build-asan/tests/stress_memagg ] && check "asan stress allocation counters" timeout 600 build-asan/tests/stress_memagg --per 20000
	if [ -x tests/e2e/run.sh ]; then
		suite "end-to-end (asan build)" env ASAN_OPTIONS=detect_leaks=1 tests/e2e/run.sh build-asan
		[ -x tests/e2e/stacks.sh ] && suite "stacks at tracepoints (asan build)" \
			env ASAN_OPTIONS=detect_leaks=1 tests/e2e/stacks.sh build-asan
		[ -x tests/e2e/snapshot.sh ] && suite "snapshots (asan build)" \
			env ASAN_OPTIONS=detect_leaks=1 SNAP_EVENTS=100000 SNAP_SANITIZER=1 tests/e2e/snapshot.sh build-asan
		[ -x tests/e2e/live.sh ] && suite "live control end-to-end (asan build)" \
			env ASAN_OPTIONS=detect_leaks=1 LIVE_SANITIZER=1 tests/e2e/live.sh build-asan
		# The command under ASan; the traced programs and the preloaded
		# library from the plain build (a sanitizer runtime must load first).
		[ -x tests/e2e/mem.sh ] && suite "allocation tracer (asan command)" \
			env ASAN_OPTIONS=detect_leaks=1 MEM_PROGS_BUILD=build tests/e2e/mem.sh build-asan
		[ -x tests/e2e/unwind_verify.sh ] && suite "unwind tables verified (asan command)" \
			env ASAN_OPTIONS=detect_leaks=1 UW_PROGS_BUILD=build tests/e2e/unwind_verify.sh build-asan
		[ -x tests/e2e/mem_agg.sh ] && suite "allocation counters (asan command)" \
			env ASAN_OPTIONS=detect_leaks=1 MEM_PROGS_BUILD=build tests/e2e/mem_agg.sh build-asan
		[ -x tests/e2e/mem_losses.sh ] && suite "allocation report under lost events (asan command)" \
			env ASAN_OPTIONS=detect_leaks=1 MEM_PROGS_BUILD=build tests/e2e/mem_losses.sh build-asan
		[ -x tests/e2e/mem_sample.sh ] && suite "allocation sampling (asan command)" \
			env ASAN_OPTIONS=detect_leaks=1 MEM_PROGS_BUILD=build tests/e2e/mem_sample.sh build-asan
		[ -x tests/e2e/check.sh ] && suite "trace checker (asan build)" \
			env ASAN_OPTIONS=detect_leaks=1 tests/e2e/check.sh build-asan
		[ -x tests/e2e/rseq_clock.sh ] && suite "rseq on the monotonic clock (asan build)" \
			env ASAN_OPTIONS=detect_leaks=1 tests/e2e/rseq_clock.sh build-asan
		# The command under ASan; the other user's programs from the plain build.
		[ -x tests/e2e/sec_ctl.sh ] && suite "other users' control blocks (asan command)" \
			env ASAN_OPTIONS=detect_leaks=1 SEC_PROGS_BUILD=build tests/e2e/sec_ctl.sh build-asan
		[ -x tests/e2e/pprof.sh ] && suite "convert to pprof (asan command)" \
			env ASAN_OPTIONS=detect_leaks=1 MEM_PROGS_BUILD=build tests/e2e/pprof.sh build-asan
		[ -x tests/e2e/mem_sample_cli.sh ] && suite "allocation sampling from the CLI (asan command)" \
			env ASAN_OPTIONS=detect_leaks=1 MEM_PROGS_BUILD=build tests/e2e/mem_sample_cli.sh build-asan
		[ -x tests/e2e/readers.sh ] && suite "readers on odd trace directories (asan build)" \
			env ASAN_OPTIONS=detect_leaks=1 tests/e2e/readers.sh build-asan
	fi
fi

echo "# TSan"
if check "tsan build" make -j"$JOBS" CC=clang SAN=thread WERROR=1 build-tsan/tests/stress_ringbuf \
	$( [ -f tests/stress/stress_stackmap.c ] && echo build-tsan/tests/stress_stackmap ) \
	build-tsan/tests/stress_rcu build-tsan/tests/stress_memagg; then
	stress tsan build-tsan/tests/stress_ringbuf 30000
	[ -x build-tsan/tests/stress_stackmap ] && check "tsan stress stackmap" timeout 600 build-tsan/tests/stress_stackmap
	check "tsan stress grace periods" timeout 600 build-tsan/tests/stress_rcu --swaps 100
	check "tsan stress allocation counters" timeout 600 build-tsan/tests/stress_memagg --per 20000
fi

echo "# fuzz smoke"
for f in tests/fuzz/fuzz_*.c; do
	[ -f "$f" ] || continue
	name=$(basename "$f" .c)
	if check "fuzz build $name" make CC=clang "build-fuzz/$name"; then
		check "fuzz run $name (20 s)" timeout 120 "build-fuzz/$name" -max_total_time=20 -rss_limit_mb=2048 \
			$( [ -d "tests/fuzz/corpus/$name" ] && echo "tests/fuzz/corpus/$name" )
	fi
done

rm -rf "$LOGDIR"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
