/*
 * flightprog - a program for the flight-recorder tests.
 *
 *   flightprog errors N   fires fl:step { i } for i = 0 .. N-1; after each
 *                         third of them, fl:error { i } and a call to
 *                         ringtrace_snapshot() (then 100 ms for the
 *                         recorder to take it); exits 0. Prints
 *                         "snapshot requests R" (R calls that returned 0).
 *   flightprog errors-wait N
 *                         the same, after a first request made as soon as
 *                         snapshots are enabled (it retries every 10 ms).
 *   flightprog statuses N fires fl:req { path, i, status } for i < N: status
 *                         503 when i % 1000 == 999, -1 when i % 1000 == 499,
 *                         200 otherwise; 50 ms pause after each 503.
 *   flightprog exitreq N  fires N steps, asks for a snapshot and exits 3 at
 *                         once (the request must not be lost).
 *   flightprog kill N     fires N steps, then kills itself with SIGKILL.
 *   flightprog pair MS    once the file "go" exists in the current
 *                         directory: fl:step 1, a request, MS ms, fl:step 2,
 *                         a request, then prints "second request" and
 *                         exits 0 after MS ms more (the recorder is kept
 *                         from swapping by the test meanwhile).
 *   flightprog run MS     fires steps (one per 10 us) for MS milliseconds,
 *                         printing "rss_kb K" (VmRSS) every 500 ms; exits 0.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(fl, step, RINGTRACE_U32(i));
RINGTRACE_EVENT(fl, error, RINGTRACE_U32(i));
RINGTRACE_EVENT(fl, req, RINGTRACE_STRING(path), RINGTRACE_U32(i), RINGTRACE_S32(status));

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			v = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
	if (!strcmp(argv[1], "errors") || !strcmp(argv[1], "errors-wait")) {
		int ok = 0;
		if (argv[1][6]) {
			/* Until snapshots are enabled from outside: the first
			 * request that goes through is counted too. */
			while (ringtrace_snapshot() != 0) {
				struct timespec d = { 0, 10000000 };
				nanosleep(&d, NULL);
			}
			ok++;
			struct timespec d = { 0, 100000000 };
			nanosleep(&d, NULL);
		}
		uint32_t third = n / 3 ? n / 3 : 1;
		for (uint32_t i = 0; i < n; i++) {
			ringtrace_tracepoint(fl, step, i);
			if (i % third == third - 1) {
				ringtrace_tracepoint(fl, error, i);
				ok += ringtrace_snapshot() == 0;
				struct timespec d = { 0, 100000000 };
				nanosleep(&d, NULL);
			}
		}
		printf("snapshot requests %d\n", ok);
		return 0;
	}
	if (!strcmp(argv[1], "statuses")) {
		for (uint32_t i = 0; i < n; i++) {
			int32_t status = i % 1000 == 999 ? 503 : i % 1000 == 499 ? -1 : 200;
			ringtrace_tracepoint(fl, req, i % 2 ? "/a" : "/bb", i, status);
			if (i % 1000 == 999) {
				struct timespec d = { 0, 50000000 };
				nanosleep(&d, NULL);
			}
		}
		return 0;
	}
	if (!strcmp(argv[1], "exitreq")) {
		for (uint32_t i = 0; i < n; i++)
			ringtrace_tracepoint(fl, step, i);
		printf("snapshot request %d\n", ringtrace_snapshot());
		return 3;
	}
	if (!strcmp(argv[1], "kill")) {
		for (uint32_t i = 0; i < n; i++)
			ringtrace_tracepoint(fl, step, i);
		fflush(stdout);
		kill(getpid(), SIGKILL);
		return 1;
	}
	if (!strcmp(argv[1], "pair")) {
		struct timespec d = { (time_t)(n / 1000), (long)(n % 1000) * 1000000L }, p = { 0, 10000000 };
		while (access("go", F_OK) != 0)
			nanosleep(&p, NULL);
		ringtrace_tracepoint(fl, step, 1);
		int a = ringtrace_snapshot();
		nanosleep(&d, NULL);
		ringtrace_tracepoint(fl, step, 2);
		int b = ringtrace_snapshot();
		printf("second request %d %d\n", a, b);
		fflush(stdout);
		nanosleep(&d, NULL);
		return 0;
	}
	if (!strcmp(argv[1], "run")) {
		uint64_t t0 = now_ms(), next = t0 + 500;
		for (uint32_t i = 0; now_ms() - t0 < n; i++) {
			ringtrace_tracepoint(fl, step, i);
			struct timespec d = { 0, 10000 };
			nanosleep(&d, NULL);
			if (now_ms() >= next) {
				printf("rss_kb %ld\n", rss_kb());
				fflush(stdout);
				next += 500;
			}
		}
		return 0;
	}
	return 2;
}
