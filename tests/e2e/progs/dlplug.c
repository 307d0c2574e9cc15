/*
 * dlplug - fires shared:ev, then twice: dlopen plugin_a.so, call its
 * function (plugin:hello and the plugin's shared:ev), dlclose it, check that
 * it is really unloaded, fire prog:after.
 *
 *   dlplug PATH/plugin_a.so
 *
 * Expected events, in this order: shared:ev x=1; plugin:hello n=1;
 * shared:ev x=101; prog:after round=1; plugin:hello n=2; shared:ev x=102;
 * prog:after round=2. The metadata must declare shared:ev and plugin:hello
 * once each.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

#include <ringtrace/ringtrace.h>

RINGTRACE_EVENT(shared, ev, RINGTRACE_U32(x));
RINGTRACE_EVENT(prog, after, RINGTRACE_U32(round));

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	ringtrace_tracepoint(shared, ev, 1);
	for (uint32_t round = 1; round <= 2; round++) {
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlplug: %s\n", dlerror());
			return 3;
		}
		void (*hello)(uint32_t) = (void (*)(uint32_t))dlsym(h, "plugin_a_hello");
		if (!hello) {
			fprintf(stderr, "dlplug: %s\n", dlerror());
			return 4;
		}
		hello(round);
		dlclose(h);
		void *again = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
		printf("round %u unloaded %s\n", round, again ? "no" : "yes");
		if (again)
			dlclose(again);
		ringtrace_tracepoint(prog, after, round);
	}
	return 0;
}
