// memcxx.cc - C++ allocations for tests/e2e/mem.sh: each pattern in its own
// function so that the report's rows (by function) can be checked exactly.
// An ordinary program: not linked with libringtrace.
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

// Through here, new/delete pairs cannot be elided by the compiler.
static void *volatile escape;

struct alignas(64) Line {
	char c[64];
};

struct Node {
	long v[3];
};

// Before main: a static constructor allocates (one new of 24 bytes, leaked).
static NOINLINE Node *make_static()
{
	return new Node{ { 1, 2, 3 } };
}
static Node *g_static = make_static();

// 20 x new int[4] / delete[], 10 x new Node / delete: all matched.
static NOINLINE void arrays_and_objects()
{
	for (int i = 0; i < 20; i++) {
		int *a = new int[4];
		escape = a;
		delete[] static_cast<int *>(escape);
	}
	for (int i = 0; i < 10; i++) {
		Node *n = new Node();
		escape = n;
		delete static_cast<Node *>(escape);
	}
}

// new[] freed with delete: one mismatched free (fine with glibc for a
// trivially destructible type).
static NOINLINE void mismatch_new_array()
{
	int *a = new int[8];
	a[1] = 2;
	int *volatile opaque = a; // the compiler may not judge it
	delete opaque;
}

// 3 x aligned new of a 64-byte-aligned struct, deleted.
static NOINLINE void aligned_lines()
{
	for (int i = 0; i < 3; i++) {
		Line *l = new Line;
		escape = l;
		delete static_cast<Line *>(escape);
	}
}

// nothrow new[], deleted.
static NOINLINE void nothrow_array()
{
	char *p = new (std::nothrow) char[100];
	if (p)
		p[0] = 1;
	delete[] p;
}

// An exception thrown and caught (its object is allocated by the runtime).
static NOINLINE int throw_catch()
{
	try {
		throw std::runtime_error("expected");
	} catch (const std::exception &e) {
		return (int)std::string(e.what()).size();
	}
	return 0;
}

// Containers in 4 threads.
static NOINLINE long containers()
{
	std::vector<long> sums(4);
	std::vector<std::thread> ts;
	for (int t = 0; t < 4; t++)
		ts.emplace_back([t, &sums] {
			std::vector<std::string> v;
			for (int i = 0; i < 1000; i++)
				v.push_back(std::string(20 + i % 50, (char)('a' + t)));
			long s = 0;
			for (auto &x : v)
				s += (long)x.size();
			sums[t] = s;
		});
	for (auto &t : ts)
		t.join();
	long s = 0;
	for (long x : sums)
		s += x;
	return s;
}

int main()
{
	arrays_and_objects();
	mismatch_new_array();
	aligned_lines();
	nothrow_array();
	int n = throw_catch();
	long s = containers();
	std::printf("static %ld what %d containers %ld\n", g_static->v[2], n, s);
	return 0;
}
