/*
 * stress_stackmap.c - model-based test of the stack map: threads (one per
 * CPU by default) hammer one map with stacks drawn from a known set, some
 * shared by all threads, some private to one, depths from 0 to 64, and each
 * thread keeps a naive record of what it got (per stack: the ids; per id:
 * the calls that returned it and whether this thread inserted it). The map
 * is reset between phases; every phase starts with all threads inserting
 * the shared stacks in the same order, so that inserts of the same new
 * stack race. Every other phase draws from more stacks than the pool
 * holds, so that the pool runs out while threads race for its last
 * elements.
 *
 * Checked in every phase:
 *   - each successful get_id returns an id whose element holds exactly the
 *     stack asked for (looked up right away, while others insert);
 *   - failures are -ENOSPC only, and only in the phases that overflow;
 *   - a stack has more than one id only if several threads inserted it,
 *     never more ids than threads; a private stack has exactly one id;
 *     each id was inserted by exactly one call, and holds one stack;
 *   - each element's reference count == the calls that returned its id;
 *     the sum of all == successes of the map's stat == successful calls;
 *   - per CPU, successes and drops == the calls that named it (in the
 *     crossing phases, one call in 8 names the next thread's CPU, so
 *     that a CPU's counters are updated per CPU (rseq) by the thread
 *     running there and atomically by another at the same time);
 *   - after the threads join, every stack that got an id is found again,
 *     with one of its ids.
 * And a last phase resets the map again and again while the threads run
 * (for the first half of their calls): calls fail with -EAGAIN meanwhile;
 * at the end every stored element holds
 * a stack of the set, no stack has more ids than threads, and the
 * reference counts add up to the stat's successes.
 *
 * Output: "ok - ..." / "not ok - ..." lines; exit 1 on any failure.
 *   stress_stackmap [--threads T] [--phases P] [--ops N] [--seconds S]
 * Defaults: 2 threads, phases of 100000 calls per thread until 3 s have
 * passed (at least 2, at most P = 1000), then the storm. Runs under TSan:
 *   make SAN=thread CC=clang build-tsan/tests/stress_stackmap
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stackmap/stackmap.h"

#define MAX_THREADS 8
/* 1024 elements: small, so that the overflowing phases fill it. From 5
 * threads on, 4096: the others draw from 200 + 100 per thread stacks plus
 * up to one duplicate per thread of each shared one, which 1024 would not
 * hold (the overflowing phases, 1000 per thread, still overflow it). */
#define BITS(threads) ((threads) <= 4 ? 10u : 12u)
#define NSHARED     200
#define NPRIV       100
#define NBIG        900          /* per thread, in the overflowing phases */

struct stack {
	uint32_t depth;
	uint64_t ips[STACKMAP_MAX_DEPTH];
};

/* What one thread saw for one stack. */
struct seen {
	uint32_t ids[MAX_THREADS + 1];
	uint32_t nids;
	uint32_t calls;
};

struct worker {
	pthread_t th;
	int idx;
	uint64_t rng;
	/* per phase */
	struct seen *seen;           /* [nstacks] */
	uint32_t *id_calls;          /* [max + 1]: calls that returned the id */
	uint32_t *id_inserts;        /* [max + 1]: calls that inserted it */
	uint64_t calls, ok, nospc, again, other;
	uint64_t blk_calls[MAX_THREADS]; /* calls that named CPU block b */
	uint64_t blk_ok[MAX_THREADS];
};

static int nthreads = 2;
static int phases = 1000;
static uint64_t ops = 100000;
static double seconds = 3;
static int ncpus_online = 1;

static struct stack *stacks;     /* shared, then NPRIV + NBIG per thread */
static uint32_t nstacks;
static void *mem;
static size_t mem_size;
static struct stackmap map;
static pthread_barrier_t barrier;
static struct worker workers[MAX_THREADS];
static int phase_big, phase_storm;
static int phase_cross;          /* some calls name the next thread's CPU */
static int storm_done;
static uint64_t arrived;         /* rendezvous of the opening pass */
static int failures;

#define FAIL(...)                                        \
	do {                                             \
		if (__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED) < 20) \
			fprintf(stderr, __VA_ARGS__);    \
	} while (0)

static void check(int ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	if (!ok)
		failures++;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static uint32_t priv_base(int t)
{
	return NSHARED + (uint32_t)t * (NPRIV + NBIG);
}

/* Stack s: frame 0 names it; depths cycle through 1..64, with every
 * fifth stack 64 deep, and stack 1 is the empty stack; stacks share most
 * of their frames with others (a common caller chain), as real stacks do. */
static void make_stacks(void)
{
	nstacks = NSHARED + (uint32_t)nthreads * (NPRIV + NBIG);
	stacks = calloc(nstacks, sizeof(*stacks));
	if (!stacks)
		exit(2);
	for (uint32_t s = 0; s < nstacks; s++) {
		struct stack *k = &stacks[s];
		k->depth = s == 1 ? 0 : s % 5 == 0 ? STACKMAP_MAX_DEPTH : s % 64 + 1;
		for (uint32_t i = 0; i < k->depth; i++)
			k->ips[i] = 0x555555550000ull + (i + 1) * 0x40 + (s % 7);
		if (k->depth)
			k->ips[0] = 0x7f0000000000ull + (uint64_t)s * 16;
	}
}

static int same_stack(const struct stackmap_stack *a, const struct stack *b)
{
	return a->depth == b->depth &&
	       !memcmp(a->ips, b->ips, (size_t)b->depth * sizeof(b->ips[0]));
}

static void note_id(struct seen *sn, uint32_t id)
{
	for (uint32_t i = 0; i < sn->nids; i++)
		if (sn->ids[i] == id)
			return;
	if (sn->nids < MAX_THREADS + 1)
		sn->ids[sn->nids] = id;
	sn->nids++;
}

static uint32_t pick(struct worker *w, uint64_t op)
{
	/* Every phase opens with the shared stacks in order: all threads
	 * insert the same new stacks at the same moment. */
	if (op < NSHARED)
		return (uint32_t)op;
	uint64_t r = xorshift(&w->rng);
	uint32_t own = phase_big ? NPRIV + NBIG : NPRIV;
	uint32_t k = (uint32_t)(r % (NSHARED + own));
	return k < NSHARED ? k : priv_base(w->idx) + (k - NSHARED);
}

static void one_call(struct worker *w, uint32_t s)
{
	const struct stack *k = &stacks[s];
	uint32_t id = 0;
	/* Normally the thread names its own CPU (the per-CPU path when it runs
	 * there); in the crossing phases one call in 8 names the next
	 * thread's, whose counters that thread updates at the same time
	 * through their per-CPU half: the atomic half must add up with it. */
	uint32_t blk = (uint32_t)w->idx;
	if (phase_cross && (w->calls & 7) == 3)
		blk = (blk + 1) % (uint32_t)nthreads;
	int r = stackmap_get_id(&map, k->ips, k->depth, blk, &id);
	w->calls++;
	w->blk_calls[blk]++;
	if (r < 0) {
		if (r == -ENOSPC)
			w->nospc++;
		else if (r == -EAGAIN)
			w->again++;
		else
			w->other++;
		return;
	}
	w->ok++;
	w->blk_ok[blk]++;
	if (phase_storm)
		return; /* ids die with each reset: nothing to record */
	struct stackmap_stack got;
	if (id == 0 || id > map.max || stackmap_lookup(&map, id, &got) < 0) {
		FAIL("thread %d: stack %u: id %u cannot be looked up\n", w->idx, s, id);
		return;
	}
	if (!same_stack(&got, k))
		FAIL("thread %d: stack %u: id %u holds another stack\n", w->idx, s, id);
	note_id(&w->seen[s], id);
	w->seen[s].calls++;
	w->id_calls[id]++;
	if (r == 1)
		w->id_inserts[id]++;
}

/* Wait until every thread has arrived here for the n-th time (spinning:
 * the point is to leave together, within a few hundred nanoseconds). */
static void rendezvous(uint64_t n)
{
	__atomic_fetch_add(&arrived, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < n * (uint64_t)nthreads)
		if (nthreads > ncpus_online)
			sched_yield();
}

static void run_phase(struct worker *w)
{
	uint64_t op = 0;
	if (phase_storm) {
		/* Calls while resets run, then calls into the last epoch. */
		while (!__atomic_load_n(&storm_done, __ATOMIC_ACQUIRE))
			one_call(w, pick(w, op++));
		for (uint64_t k = 0; k < ops / 2; k++)
			one_call(w, pick(w, op++));
		return;
	}
	/* The opening pass: the shared stacks in order, every thread calling
	 * for the same new stack at the same moment, so that inserts race. */
	uint64_t base = __atomic_load_n(&arrived, __ATOMIC_ACQUIRE) / (uint64_t)nthreads;
	for (; op < NSHARED; op++) {
		rendezvous(base + op + 1);
		one_call(w, pick(w, op));
	}
	for (; op < ops; op++)
		one_call(w, pick(w, op));
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(w->idx % ncpus_online, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	for (;;) {
		pthread_barrier_wait(&barrier); /* phase start (or the end) */
		if (__atomic_load_n(&storm_done, __ATOMIC_ACQUIRE) == 2)
			return NULL;
		run_phase(w);
		pthread_barrier_wait(&barrier); /* phase end */
	}
}

static void reset_records(void)
{
	for (int t = 0; t < nthreads; t++) {
		struct worker *w = &workers[t];
		memset(w->seen, 0, nstacks * sizeof(*w->seen));
		memset(w->id_calls, 0, (map.max + 1) * sizeof(*w->id_calls));
		memset(w->id_inserts, 0, (map.max + 1) * sizeof(*w->id_inserts));
		w->calls = w->ok = w->nospc = w->again = w->other = 0;
		memset(w->blk_calls, 0, sizeof(w->blk_calls));
		memset(w->blk_ok, 0, sizeof(w->blk_ok));
	}
}

struct walk {
	uint64_t ref_sum;
	uint32_t n;
	uint32_t bad;                /* elements that hold no stack of the set */
	uint32_t *ids_of;            /* [nstacks]: ids found per stack */
	uint64_t *ref;               /* [max + 1] */
	uint32_t *stack_of;          /* [max + 1]: the stack an id holds + 1 */
};

static int walk_one(void *arg, const struct stackmap_stack *s)
{
	struct walk *wk = arg;
	wk->n++;
	wk->ref_sum += s->ref;
	wk->ref[s->id] = s->ref;
	/* Which stack is it? Frame 0 names it (depth 0: stack 1). */
	uint32_t k = 1;
	if (s->depth)
		k = (uint32_t)((s->ips[0] - 0x7f0000000000ull) / 16);
	if (k >= nstacks || !same_stack(s, &stacks[k])) {
		wk->bad++;
		return 0;
	}
	wk->ids_of[k]++;
	wk->stack_of[s->id] = k + 1;
	return 0;
}

static int walk_map(struct walk *wk)
{
	memset(wk->ids_of, 0, nstacks * sizeof(*wk->ids_of));
	memset(wk->ref, 0, (map.max + 1) * sizeof(*wk->ref));
	memset(wk->stack_of, 0, (map.max + 1) * sizeof(*wk->stack_of));
	wk->ref_sum = 0;
	wk->n = 0;
	wk->bad = 0;
	return stackmap_for_each(&map, walk_one, wk);
}

static uint32_t claimed_empty(void)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i <= map.mask; i++)
		n += map.table[i].key != 0 && map.table[i].elem == 0;
	return n;
}

/* The checks after a normal phase; returns the failures seen. */
static int check_phase(int ph, struct walk *wk, uint64_t *dups, uint64_t *empties)
{
	int before = failures;
	char what[160];
	uint64_t calls = 0, ok = 0, nospc = 0, other = 0;
	for (int t = 0; t < nthreads; t++) {
		calls += workers[t].calls;
		ok += workers[t].ok;
		nospc += workers[t].nospc;
		other += workers[t].other + workers[t].again;
	}
	if (other || (!phase_big && nospc))
		FAIL("phase %d: %llu unexpected failures, %llu -ENOSPC\n", ph,
		     (unsigned long long)other, (unsigned long long)nospc);

	/* Ids per stack: union over threads. */
	for (uint32_t s = 0; s < nstacks; s++) {
		uint32_t ids[MAX_THREADS * (MAX_THREADS + 1)], n = 0;
		for (int t = 0; t < nthreads; t++) {
			const struct seen *sn = &workers[t].seen[s];
			if (sn->nids > (uint32_t)nthreads)
				FAIL("phase %d: thread %d saw %u ids for stack %u\n", ph, t, sn->nids, s);
			for (uint32_t i = 0; i < sn->nids && i <= (uint32_t)nthreads; i++) {
				uint32_t j = 0;
				while (j < n && ids[j] != sn->ids[i])
					j++;
				if (j == n)
					ids[n++] = sn->ids[i];
			}
		}
		if (n > (uint32_t)nthreads)
			FAIL("phase %d: stack %u has %u ids (threads: %d)\n", ph, s, n, nthreads);
		if (s >= NSHARED && n > 1)
			FAIL("phase %d: private stack %u has %u ids\n", ph, s, n);
		if (n > 1)
			*dups += n - 1;
	}

	/* The map against the records. */
	if (walk_map(wk) < 0)
		FAIL("phase %d: cannot walk the map\n", ph);
	if (wk->bad)
		FAIL("phase %d: %u elements hold no stack of the set\n", ph, wk->bad);
	uint64_t inserts = 0;
	for (uint32_t id = 1; id <= map.max; id++) {
		uint64_t c = 0, ins = 0;
		for (int t = 0; t < nthreads; t++) {
			c += workers[t].id_calls[id];
			ins += workers[t].id_inserts[id];
		}
		inserts += ins;
		if (c != wk->ref[id])
			FAIL("phase %d: id %u: ref %llu, calls %llu\n", ph, id,
			     (unsigned long long)wk->ref[id], (unsigned long long)c);
		if (c && ins != 1)
			FAIL("phase %d: id %u inserted %llu times\n", ph, id, (unsigned long long)ins);
	}
	struct stackmap_stat st;
	stackmap_stat(&map, &st);
	if (wk->ref_sum != ok || st.successes != ok || st.drops != calls - ok || inserts != wk->n ||
	    st.entries < wk->n)
		FAIL("phase %d: refs %llu, stat S %llu D %llu E %llu, calls %llu ok %llu, "
		     "inserts %llu, stored %u\n",
		     ph, (unsigned long long)wk->ref_sum, (unsigned long long)st.successes,
		     (unsigned long long)st.drops, (unsigned long long)st.entries,
		     (unsigned long long)calls, (unsigned long long)ok, (unsigned long long)inserts,
		     wk->n);
	for (int b = 0; b < nthreads; b++) {
		uint64_t s, d, bok = 0, bcalls = 0;
		for (int t = 0; t < nthreads; t++) {
			bok += workers[t].blk_ok[b];
			bcalls += workers[t].blk_calls[b];
		}
		stackmap_cpu_stat(&map, (uint32_t)b, &s, &d);
		if (s != bok || s + d != bcalls)
			FAIL("phase %d: CPU %d: S %llu D %llu, calls that named it: ok %llu of %llu\n",
			     ph, b, (unsigned long long)s, (unsigned long long)d,
			     (unsigned long long)bok, (unsigned long long)bcalls);
	}
	*empties += claimed_empty();

	/* Every stack that got an id is found again, with one of its ids. */
	for (uint32_t s = 0; s < nstacks; s++) {
		int any = 0;
		for (int t = 0; t < nthreads; t++)
			any |= workers[t].seen[s].nids > 0;
		if (!any)
			continue;
		uint32_t id = 0;
		int r = stackmap_get_id(&map, stacks[s].ips, stacks[s].depth, 0, &id);
		int mine = 0;
		for (int t = 0; t < nthreads && r == 0; t++)
			for (uint32_t i = 0; i < workers[t].seen[s].nids && i <= (uint32_t)nthreads; i++)
				mine |= workers[t].seen[s].ids[i] == id;
		if (r != 0 || !mine)
			FAIL("phase %d: stack %u not found again (%d, id %u)\n", ph, s, r, id);
	}
	snprintf(what, sizeof(what), "phase %d%s%s: %llu calls, %llu ids, %llu -ENOSPC", ph,
		 phase_big ? " (overflowing)" : "", phase_cross ? " (crossing)" : "",
		 (unsigned long long)calls,
		 (unsigned long long)wk->n, (unsigned long long)nospc);
	check(failures == before, what);
	return failures - before;
}

#define STORM_RESETS 200

static void *storm_resetter(void *arg)
{
	uint64_t *resets = arg;
	for (int i = 0; i < STORM_RESETS; i++) {
		if (stackmap_reset(&map, 0) == 0)
			(*resets)++;
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
	}
	__atomic_store_n(&storm_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--phases") && i + 1 < argc)
			phases = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
			ops = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: stress_stackmap [--threads T] [--phases P] [--ops N] "
					"[--seconds S]\n");
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || phases < 1 || ops < NSHARED) {
		fprintf(stderr, "stress_stackmap: 1 <= threads <= %d, phases >= 1, ops >= %d\n",
			MAX_THREADS, NSHARED);
		return 2;
	}
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	ncpus_online = n > 0 ? (int)n : 1;

	make_stacks();
	mem_size = stackmap_size(BITS(nthreads), (uint32_t)nthreads);
	mem = aligned_alloc(64, (mem_size + 63) & ~(size_t)63);
	if (!mem)
		return 2;
	memset(mem, 0, mem_size);
	if (stackmap_init(mem, mem_size, BITS(nthreads), (uint32_t)nthreads, 0x9d2c5680a1b2c3d4ull) < 0 ||
	    stackmap_open(mem, mem_size, &map) < 0) {
		fprintf(stderr, "stress_stackmap: cannot lay out the map\n");
		return 2;
	}
	struct walk wk = { 0, 0, 0, calloc(nstacks, sizeof(uint32_t)),
			   calloc(map.max + 1, sizeof(uint64_t)), calloc(map.max + 1, sizeof(uint32_t)) };
	if (!wk.ids_of || !wk.ref || !wk.stack_of)
		return 2;
	for (int t = 0; t < nthreads; t++) {
		struct worker *w = &workers[t];
		w->idx = t;
		w->rng = 0x853c49e6748fea9bull * (uint64_t)(t + 1);
		w->seen = calloc(nstacks, sizeof(*w->seen));
		w->id_calls = calloc(map.max + 1, sizeof(*w->id_calls));
		w->id_inserts = calloc(map.max + 1, sizeof(*w->id_inserts));
		if (!w->seen || !w->id_calls || !w->id_inserts)
			return 2;
	}
	pthread_barrier_init(&barrier, NULL, (unsigned)nthreads + 1);
	for (int t = 0; t < nthreads; t++)
		pthread_create(&workers[t].th, NULL, worker_main, &workers[t]);

	double t0 = now_s();
	uint64_t dups = 0, empties = 0;
	int ph;
	for (ph = 0; ph < phases; ph++) {
		if (ph >= 2 && now_s() - t0 > seconds)
			break;
		if (stackmap_reset(&map, 0) != 0)
			FAIL("phase %d: reset failed\n", ph);
		phase_big = ph % 2 == 1;
		phase_cross = ph % 4 == 1 || ph % 4 == 2;
		reset_records();
		pthread_barrier_wait(&barrier); /* go */
		pthread_barrier_wait(&barrier); /* done */
		check_phase(ph, &wk, &dups, &empties);
	}
	printf("# %d phases, %llu duplicate ids from racing inserts, %llu slots left claimed "
	       "but empty\n", ph, (unsigned long long)dups, (unsigned long long)empties);

	/* Storm: resets while the threads call, some naming another CPU. */
	phase_storm = 1;
	phase_big = 0;
	phase_cross = 1;
	stackmap_reset(&map, 0);
	reset_records();
	uint64_t resets = 0;
	pthread_t rt;
	pthread_barrier_wait(&barrier); /* go */
	pthread_create(&rt, NULL, storm_resetter, &resets);
	pthread_join(rt, NULL);
	pthread_barrier_wait(&barrier); /* done */
	uint64_t calls = 0, ok = 0, again = 0, other = 0;
	for (int t = 0; t < nthreads; t++) {
		calls += workers[t].calls;
		ok += workers[t].ok;
		again += workers[t].again;
		other += workers[t].other + workers[t].nospc;
	}
	int before = failures;
	if (other)
		FAIL("storm: %llu unexpected failures\n", (unsigned long long)other);
	if (walk_map(&wk) < 0 || wk.bad)
		FAIL("storm: %u elements hold no stack of the set\n", wk.bad);
	for (uint32_t s = 0; s < nstacks; s++)
		if (wk.ids_of[s] > (uint32_t)nthreads)
			FAIL("storm: stack %u has %u ids\n", s, wk.ids_of[s]);
	struct stackmap_stat st;
	stackmap_stat(&map, &st);
	if (st.successes != wk.ref_sum || st.entries != wk.n)
		FAIL("storm: refs %llu vs successes %llu, %u stored vs entries %llu\n",
		     (unsigned long long)wk.ref_sum, (unsigned long long)st.successes, wk.n,
		     (unsigned long long)st.entries);
	char what[160];
	snprintf(what, sizeof(what),
		 "storm: %llu calls, %llu ok, %llu -EAGAIN, %llu resets, %u stacks at the end", 
		 (unsigned long long)calls, (unsigned long long)ok, (unsigned long long)again,
		 (unsigned long long)resets, wk.n);
	check(failures == before && resets == STORM_RESETS, what);

	/* Which path the calls took (both are checked above): the per-CPU
	 * half needs rseq and threads on the CPU they name. */
	uint64_t l_in = 0, a_in = 0;
	for (uint32_t c = 0; c < map.ncpus; c++) {
		l_in += map.cpu[c].l_entries;
		a_in += map.cpu[c].entries;
	}
	printf("# calls counted per CPU (rseq): %llu, atomically: %llu (view percpu=%u)\n",
	       (unsigned long long)l_in, (unsigned long long)a_in, map.percpu);

	__atomic_store_n(&storm_done, 2, __ATOMIC_RELEASE);
	pthread_barrier_wait(&barrier); /* release the workers */
	for (int t = 0; t < nthreads; t++) {
		pthread_join(workers[t].th, NULL);
		free(workers[t].seen);
		free(workers[t].id_calls);
		free(workers[t].id_inserts);
	}
	pthread_barrier_destroy(&barrier);
	free(wk.ids_of);
	free(wk.ref);
	free(wk.stack_of);
	free(stacks);
	free(mem);
	printf("%s - stress_stackmap: %d threads, %.1f s\n", failures ? "not ok" : "ok", nthreads,
	       now_s() - t0);
	return failures ? 1 : 0;
}
