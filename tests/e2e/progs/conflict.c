/*
 * conflict - declares conflict:ev { u32 x }, loads plugin_conflict.so which
 * declares conflict:ev { u64 x }, and fires both: the second definition must
 * be refused with a message naming both places, only the program's three
 * events (x = 7, 8, 9) recorded, and the program must run on unchanged.
 *
 *   conflict PATH/plugin_conflict.so
 *
 * Prints "sum 24" and exits with status 3.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(conflict, ev, RINGTRACE_U32(x));

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "conflict: %s\n", dlerror());
		return 4;
	}
	void (*fire)(uint64_t) = (void (*)(uint64_t))dlsym(h, "plugin_conflict_fire");
	if (!fire)
		return 5;
	uint32_t sum = 0;
	for (uint32_t x = 7; x <= 9; x++) {
		ringtrace_tracepoint(conflict, ev, x);
		fire(0x1000000000ull + x);
		sum += x;
	}
	dlclose(h);
	printf("sum %u\n", sum);
	return 3;
}
