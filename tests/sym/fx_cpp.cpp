/*
 * fx_cpp.cpp - C++ fixture for tests/unit/test_sym.c: methods in a
 * namespace whose demangled names the symboliser must give back. Each
 * prints its own __PRETTY_FUNCTION__ ("static" and the return type first,
 * as g++ writes it: the test drops them; every return type is int and
 * every parameter type is spelt the same by g++ and the demangler) with the return address and line of a call it makes,
 * and the program prints its loaded objects (src/sym/maps.h). Output as
 * tests/sym/fx.c.
 */
#include <cinttypes>
#include <cstdint>
#include <cstdio>

#include "sym/maps.h"

namespace {
struct call_rec {
	const char *fn;
	uintptr_t ra;
	int line;
};
call_rec calls[8];
int ncalls;
} // namespace

extern "C" __attribute__((noinline)) void fx_cpp_mark(const char *fn, int line)
{
	if (ncalls < 8) {
		calls[ncalls].fn = fn;
		calls[ncalls].ra = (uintptr_t)__builtin_return_address(0);
		calls[ncalls].line = line;
		ncalls++;
	}
	__asm__ volatile("" ::: "memory");
}

namespace ns {
class Klass {
public:
	explicit Klass(int base) : base_(base) {}
	__attribute__((noinline)) int method(int x);
	__attribute__((noinline)) static int twice(double d);

private:
	int base_;
};

int Klass::method(int x)
{
	fx_cpp_mark(__PRETTY_FUNCTION__, __LINE__);
	return base_ + x;
}

int Klass::twice(double d)
{
	fx_cpp_mark(__PRETTY_FUNCTION__, __LINE__);
	return (int)(2 * d);
}

namespace inner {
__attribute__((noinline)) int deep(int a, int b)
{
	fx_cpp_mark(__PRETTY_FUNCTION__, __LINE__);
	return a * b;
}
} // namespace inner
} // namespace ns

int main()
{
	static rt_map maps[256];
	size_t n = 0;
	ns::Klass k(3);
	int v = k.method(4) + ns::Klass::twice(1.5) + ns::inner::deep(5, 6);
	if (rt_maps_snapshot(maps, 256, &n, nullptr) < 0)
		return 1;
	std::printf("variant cpp %d\n", v);
	for (size_t i = 0; i < n; i++)
		std::printf("map 0x%" PRIxPTR " 0x%" PRIxPTR " 0x%" PRIxPTR " %s %u %s\n", maps[i].bias,
			    maps[i].start, maps[i].end, maps[i].build_id_len ? maps[i].build_id : "-",
			    maps[i].flags, maps[i].path);
	for (int i = 0; i < ncalls; i++)
		std::printf("call 0x%" PRIxPTR " %d %s\n", calls[i].ra, calls[i].line, calls[i].fn);
	return 0;
}
