/*
 * gap - e2e:tick { u32 k } for k = 0..3, sleeping 150 ms, 300 ms and 150 ms
 * in between: the deltas exceed the 27-bit compact timestamp (134 ms in ns,
 * about 54 ms in TSC cycles at 2.5 GHz), so the extended header is needed.
 * The decoded times must be at least that far apart.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(e2e, tick, RINGTRACE_U32(k));

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(void)
{
	static const long gaps[] = { 150, 300, 150 };
	for (uint32_t k = 0; k < 4; k++) {
		ringtrace_tracepoint(e2e, tick, k);
		if (k < 3)
			sleep_ms(gaps[k]);
	}
	printf("ticks 4\n");
	return 0;
}
