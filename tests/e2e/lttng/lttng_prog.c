/*
 * lttng_prog.c - a program instrumented with LTTng-UST (the provider in
 * lttng_tp.h) for tests/e2e/lttng.sh, which compiles it with gcc and
 * -llttng-ust and records it with lttng-tools.
 *
 * Three threads (the main one and two others), each named rtlt-wN so that
 * the procname context tells them apart, fire every event class of the
 * provider 40 times: 720 events, whose values depend only on the thread
 * and the iteration. Strings include a tab, quotes, a backslash and UTF-8,
 * and are never empty (babeltrace2 2.0.4 prints an empty string with an
 * earlier value).
 */
#define _GNU_SOURCE
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "lttng_tp.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define ROUNDS 40

static const char *const strs[] = {
	"hello", "tab\there", "quote\"back\\slash", "caf\xc3\xa9 au lait", "a=b c=d", "x",
};

static void *work(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	char name[16];
	snprintf(name, sizeof(name), "rtlt-w%u", k % 10);
	pthread_setname_np(pthread_self(), name);
	for (int64_t i = k * 1000; i < k * 1000 + ROUNDS; i++) {
		int32_t a[3] = { (int32_t)i, (int32_t)-i, (int32_t)(i * 65599) };
		uint16_t q[5] = { (uint16_t)i, 1, 2, 3, 65535 };
		const char *s = strs[i % 6];
		size_t len = strlen(s);
		lttng_ust_tracepoint(rtlt, ints, i);
		lttng_ust_tracepoint(rtlt, floats, i);
		lttng_ust_tracepoint(rtlt, text, s, (unsigned)(len < 3 ? len : 3));
		lttng_ust_tracepoint(rtlt, arrays, a, q, (unsigned)(i % 6));
		lttng_ust_tracepoint(rtlt, state, (int)(i % 11));
		lttng_ust_tracepoint(rtlt, empty);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	work((void *)(uintptr_t)0);
	for (unsigned k = 0; k < 2; k++)
		if (pthread_create(&t[k], NULL, work, (void *)(uintptr_t)(k + 1)) != 0) {
			fprintf(stderr, "lttng_prog: pthread_create failed\n");
			return 1;
		}
	for (unsigned k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	return 0;
}
