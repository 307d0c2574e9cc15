/*
 * manyev - declares 40 events, so that ids from 31 on need the extended
 * event header, and fires each once in declaration order, then ev00 again:
 * many:evNN { u32 v = NN }, then many:ev00 { v = 100 }.
 */
#include <stdint.h>
#include <stdio.h>

#include <ringtrace/ringtrace.h>

#define DECL(n) RINGTRACE_EVENT(many, ev##n, RINGTRACE_U32(v));
#define DECL10(t) DECL(t##0) DECL(t##1) DECL(t##2) DECL(t##3) DECL(t##4) \
	DECL(t##5) DECL(t##6) DECL(t##7) DECL(t##8) DECL(t##9)
DECL10(0)
DECL10(1)
DECL10(2)
DECL10(3)

#define FIRE(n) ringtrace_tracepoint(many, ev##n, (uint32_t)(1##n - 100));
#define FIRE10(t) FIRE(t##0) FIRE(t##1) FIRE(t##2) FIRE(t##3) FIRE(t##4) \
	FIRE(t##5) FIRE(t##6) FIRE(t##7) FIRE(t##8) FIRE(t##9)

int main(void)
{
	FIRE10(0)
	FIRE10(1)
	FIRE10(2)
	FIRE10(3)
	ringtrace_tracepoint(many, ev00, 100);
	printf("fired 41\n");
	return 0;
}
