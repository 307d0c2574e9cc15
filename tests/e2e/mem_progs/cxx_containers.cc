// cxx_containers.cc - a C++ program for tests/e2e/mem_real.sh: standard
// containers in four threads, allocations before main, an exception
// thrown and caught, aligned and nothrow new (one of a size that cannot
// be had: a failed allocation). Its output depends on nothing but its
// argument (the work per thread), so a traced run must print the same
// bytes. An ordinary program: not linked with libringtrace.
//
//   cxx_containers [N]         N items per thread (default 20000)
//   cxx_containers --bad-alloc a std::bad_alloc thrown by operator new[]
//                              (through the tracer's wrapper) and caught
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

// alignas(64): new and new[] of it call the aligned operators.
struct alignas(64) Line {
	uint64_t w[8];
};

// Before main: a map, a string and an array built by static constructors.
static std::map<std::string, int> g_names = { { "alpha", 1 }, { "beta", 2 }, { "gamma", 3 } };
static std::string g_banner(100, '=');
static int *g_table = new int[64]();

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

// One thread's work: every container grows, is searched, shrinks. The
// vector it returns is destroyed by main (frees from another thread).
static void worker(int id, long n, uint64_t *ret_sum, std::vector<std::string> *ret_keep)
{
	std::map<std::string, long> ordered;
	std::unordered_map<long, std::string> hashed;
	std::vector<std::string> strs;
	uint64_t sum = (uint64_t)id;
	for (long i = 0; i < n; i++) {
		uint64_t h = mix((uint64_t)id * 1000003u + (uint64_t)i);
		std::string k = "key-" + std::to_string(h % 100000) + std::string((size_t)(h % 40), 'x');
		ordered[k] += i;
		hashed.emplace((long)(h % 50000), k);
		strs.push_back(k);
		if (i % 3 == 0)
			strs.pop_back();
	}
	for (const auto &kv : ordered)
		sum = mix(sum + kv.first.size() + (uint64_t)kv.second);
	for (long i = 0; i < 50000; i += 7) {
		auto it = hashed.find(i);
		if (it != hashed.end())
			sum = mix(sum ^ it->second.size());
	}
	std::vector<Line> lines((size_t)(n / 100 + 1));
	for (size_t i = 0; i < lines.size(); i++)
		lines[i].w[i % 8] = i;
	sum += lines.size();
	ordered.clear();
	strs.shrink_to_fit();
	*ret_sum = sum ^ ordered.size() ^ hashed.size() ^ strs.size();
	ret_keep->assign(strs.begin(), strs.begin() + (strs.size() < 1000 ? strs.size() : 1000));
}

static int parse_checked(const std::string &s)
{
	size_t used = 0;
	int v = std::stoi(s, &used);
	if (used != s.size())
		throw std::invalid_argument("trailing characters in '" + s + "'");
	return v;
}

// operator new[] of a size that cannot be had throws std::bad_alloc; its
// exception object is allocated inside the real operator new[] and freed
// by the catch.
static int bad_alloc()
{
	volatile size_t huge = (size_t)1 << 62;
	try {
		char *never = new char[huge];
		std::printf("huge: allocated %p\n", (void *)never);
		return 1;
	} catch (const std::bad_alloc &) {
		std::printf("huge: bad_alloc caught\n");
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && std::string(argv[1]) == "--bad-alloc")
		return bad_alloc();
	long n = argc > 1 ? std::atol(argv[1]) : 20000;
	std::printf("static: %zu names, banner %zu, table %d\n", g_names.size(), g_banner.size(), g_table[0]);

	uint64_t sums[4];
	std::vector<std::string> keep[4];
	std::vector<std::thread> threads;
	for (int t = 0; t < 4; t++)
		threads.emplace_back(worker, t, n, &sums[t], &keep[t]);
	for (auto &t : threads)
		t.join();
	for (int t = 0; t < 4; t++)
		std::printf("thread %d: %016llx, kept %zu\n", t, (unsigned long long)sums[t], keep[t].size());
	for (auto &k : keep)
		std::vector<std::string>().swap(k);

	// An exception: its object is allocated by the C++ runtime.
	try {
		std::printf("parsed %d\n", parse_checked("1234"));
		std::printf("parsed %d\n", parse_checked("12x4"));
	} catch (const std::invalid_argument &e) {
		std::printf("caught: %s\n", e.what());
	}

	// Aligned new and new[] (operator new(size_t, align_val_t)).
	Line *one = new Line();
	Line *arr = new Line[16]();
	std::printf("aligned: %d %d\n", (int)((uintptr_t)one % 64), (int)((uintptr_t)arr % 64));
	delete one;
	delete[] arr;

	// nothrow new, plain and aligned, of a size that can be had.
	int *ni = new (std::nothrow) int(7);
	Line *nl = new (std::nothrow) Line[4];
	std::printf("nothrow: %d %s\n", ni ? *ni : -1, nl ? "ok" : "null");
	delete ni;
	delete[] nl;

	// A size that cannot be had: nothrow new returns null.
	volatile size_t huge = (size_t)1 << 62;
	char *nothing = new (std::nothrow) char[huge];
	std::printf("nothrow huge: %s\n", nothing ? "allocated" : "null");

	delete[] g_table;
	g_table = nullptr;
	return 0;
}
