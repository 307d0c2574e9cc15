// uw_stress.cc - the hard cases of stack capture in one program, for
// tests/e2e/unwind_verify.sh (the unwind tables checked against libunwind
// on every allocation): C++ exceptions thrown through several frames
// (the unwinder's allocations and the catch sites), allocations from
// signal handlers that interrupt anything (malloc included), dlopen and
// dlclose of a library that allocates, and threads started and ended
// throughout. Built without frame pointers, as distributions build.
//
//   uw_stress LIB ROUNDS
//
// LIB is dl_alloc_lib.so (tests/e2e/mem_progs/dl_alloc_lib.c). Prints
// "caught N", "dl N", "signals N" (N > 0 when signals were handled),
// "done"; exits 0.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static std::atomic<long> handled{0};
static std::atomic<int> stop{0};
static std::atomic<pid_t> targets[4];

// Allocates from the handler: the tracer captures a stack that crosses
// the signal frame into the interrupted code. malloc is not
// async-signal-safe: the handler allocates only when it interrupted
// spin_deep(), which never allocates (one interrupting malloc would
// deadlock in glibc's arena lock, tracer or not). The signals stay
// unblocked: the tracer prepares a thread's libunwind (the verification's
// reference) in a capture that finds the signal mask empty.
static thread_local volatile sig_atomic_t in_spin;

static void on_signal(int)
{
	if (!in_spin)
		return;
	void *p = malloc(40);
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
	handled.fetch_add(1, std::memory_order_relaxed);
}

__attribute__((noinline)) static int thrower(int depth, std::vector<std::string> &keep)
{
	keep.emplace_back(std::string(32 + depth, 'x'));
	if (depth == 0)
		throw std::runtime_error("depth reached with a message long enough to allocate");
	int r = thrower(depth - 1, keep);
	__asm__ volatile("" : "+r"(r) : : "memory");
	return r + 1;
}

__attribute__((noinline)) static long spin_deep(int depth, long iters)
{
	long r = 0;
	if (depth > 0) {
		r = spin_deep(depth - 1, iters);
	} else {
		in_spin = 1;
		for (long i = 0; i < iters; i++) {
			r += i ^ (r >> 3);
			__asm__ volatile("" : "+r"(r));
		}
		in_spin = 0;
	}
	__asm__ volatile("" : "+r"(r) : : "memory");
	return r + 1;
}

static long exceptions(int rounds)
{
	long caught = 0;
	for (int i = 0; i < rounds; i++) {
		std::vector<std::string> keep;
		try {
			thrower(6 + i % 4, keep);
		} catch (const std::exception &e) {
			caught += std::strlen(e.what()) > 0;
		}
	}
	return caught;
}

static long with_library(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 0;
	int (*fn)(void **) = (int (*)(void **))dlsym(h, "dl_lib_alloc");
	long n = 0;
	if (fn) {
		void *blk[16] = {};
		n = fn(blk);
		for (int i = 0; i < 16; i++)
			free(blk[i]);
	}
	dlclose(h);
	return n;
}

static void worker(int slot, int rounds, std::atomic<long> *caught)
{
	targets[slot].store((pid_t)syscall(SYS_gettid));
	long c = exceptions(rounds);
	spin_deep(5 + slot, 200000);
	for (int i = 0; i < rounds * 20; i++) {
		std::string s(16 + i % 200, 'y');
		std::vector<int> v(i % 50 + 1);
		__asm__ volatile("" : : "r"(s.data()), "r"(v.data()) : "memory");
	}
	targets[slot].store(0);
	caught->fetch_add(c);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: uw_stress LIB ROUNDS\n");
		return 2;
	}
	const char *lib = argv[1];
	int rounds = std::atoi(argv[2]);
	struct sigaction sa;
	std::memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, nullptr);
	sigaction(SIGUSR2, &sa, nullptr);

	targets[0].store((pid_t)syscall(SYS_gettid));
	std::thread signaller([] {
		pid_t pid = getpid();
		while (!stop.load()) {
			for (int i = 0; i < 4; i++) {
				pid_t t = targets[i].load();
				if (t)
					syscall(SYS_tgkill, pid, t, (i & 1) ? SIGUSR1 : SIGUSR2);
			}
			usleep(200);
		}
	});
	std::atomic<long> caught{0};
	long dl = 0;
	for (int r = 0; r < rounds; r++) {
		// Threads started and ended every round.
		std::thread a(worker, 1, 20, &caught), b(worker, 2, 20, &caught);
		dl += with_library(lib);
		caught += exceptions(10);
		spin_deep(8, 200000);
		a.join();
		b.join();
	}
	stop.store(1);
	signaller.join();
	std::printf("caught %ld\ndl %ld\nsignals %s\ndone\n", caught.load(), dl,
		    handled.load() > 0 ? "yes" : "no");
	return 0;
}
