/*
 * stacks_prog.c - the traced program of bench/stacks.sh, which measures
 * stacks at tracepoints: how well the stack map deduplicates the stacks of
 * a real workload, and what an event costs with a stack.
 *
 *   stacks_prog work [DOCS] [--seed S] [--cpu C]
 *   stacks_prog loop LOOP[,LOOP] [--iters N] [--runs R] [--depth D]
 *                    [--cpu C] [--label L[,L]]
 *
 * work: a small document indexer. It generates DOCS JSON documents
 * (default 4000, about 1 KiB each, nested objects and arrays up to 7
 * levels, keys from a vocabulary of a few hundred names; the same for a
 * given seed), then, timed, parses each with a recursive-descent parser
 * into an arena, interns the object keys in a hash table that grows, walks
 * the tree recursively for the "id" members and the numbers, and sorts the
 * numbers with a recursive merge sort. Tracepoints sit where a program
 * would put them: a node allocated (json:node, fired from as deep as the
 * nesting goes), a key interned (json:key), the table grown (ht:grow), an
 * arena chunk taken (arena:chunk), an "id" found (query:match), a merge
 * (sort:merge), a document done (json:doc). The events are declared
 * without a stack: `ringtrace record --stacks` gives them one. Only the
 * processing is timed; generation is not traced. Prints one line:
 *   work docs=D bytes=B nodes=N events=E ns=T checksum=X
 * where E counts the tracepoints reached (fired or not, the same traced or
 * not) and T the processing time in ns.
 *
 * loop: ns per event of a loop firing one event with two u32 fields at a
 * fixed stack depth: `plain` (declared without a stack: no stack unless
 * recorded with --stacks) and `stack` (declared with
 * RINGTRACE_EVENT_STACK). The loop runs D frames deep counted as the stack
 * map counts them (the firing function first, _start last; default 16).
 * Several loops are interleaved run by run; each prints
 *   result LABEL NS min=.. max=.. runs=R iters=N depth=D
 * the median of R runs (default 5) of N iterations (default 1000000)
 * after a warm-up of N/10. The thread is pinned to CPU C (default 0).
 *
 * Single-threaded; built by bench/stacks.sh with the flags of
 * bench/build.sh.
 */
#include <ringtrace/ringtrace.h>

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

RINGTRACE_EVENT(json, node, RINGTRACE_U32(kind), RINGTRACE_U32(depth));
RINGTRACE_EVENT(json, key, RINGTRACE_U32(hash), RINGTRACE_U32(fresh));
RINGTRACE_EVENT(json, doc, RINGTRACE_U32(index), RINGTRACE_U32(bytes), RINGTRACE_U32(nodes));
RINGTRACE_EVENT(ht, grow, RINGTRACE_U32(from), RINGTRACE_U32(to));
RINGTRACE_EVENT(arena, chunk, RINGTRACE_U64(size));
RINGTRACE_EVENT(query, match, RINGTRACE_U32(depth), RINGTRACE_U32(id));
RINGTRACE_EVENT(sort, merge, RINGTRACE_U32(left), RINGTRACE_U32(right));

RINGTRACE_EVENT(loop, plain, RINGTRACE_U32(a), RINGTRACE_U32(b));
RINGTRACE_EVENT_STACK(loop, stack, RINGTRACE_U32(a), RINGTRACE_U32(b));

#define NOINLINE __attribute__((noinline))
/* After a call: keeps it a call with a frame above it (no tail call). */
#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")

/* Tracepoints reached; the same whether tracing is on or not. */
static uint64_t fired;
#define FIRE(provider, name, ...) \
	do { \
		fired++; \
		ringtrace_tracepoint(provider, name, __VA_ARGS__); \
	} while (0)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
		fprintf(stderr, "stacks_prog: cannot pin to CPU %d\n", cpu);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "stacks_prog: out of memory\n");
		exit(1);
	}
	return p;
}

/* ---- input: generated JSON ---------------------------------------------- */

static uint64_t rng = 88172645463325252u;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)((rng >> 32) % n);
}

struct buf {
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			fprintf(stderr, "stacks_prog: out of memory\n");
			exit(1);
		}
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static const char *const words[] = {
	"id", "name", "items", "price", "tags", "owner", "created", "updated", "status", "meta",
	"address", "city", "zip", "lines", "total", "count", "children", "parent", "type", "value",
	"unit", "labels", "history", "events", "user", "email", "roles", "score", "weight", "notes",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))
#define MAX_NEST 7

static void gen_value(struct buf *b, int depth)
{
	char tmp[48];
	uint32_t r = rnd(100);
	if (depth < MAX_NEST && r < (depth < 2 ? 90u : 45u)) {
		int obj = rnd(3) != 0;
		uint32_t n = 1 + rnd(depth < 2 ? 6 : 4);
		puts_(b, obj ? "{" : "[");
		for (uint32_t i = 0; i < n; i++) {
			if (i)
				puts_(b, ",");
			if (obj) {
				/* Keys: a word, sometimes numbered: a few hundred names. */
				uint32_t w = rnd(NWORDS), k = rnd(4) ? 0 : rnd(12);
				snprintf(tmp, sizeof(tmp), k ? "\"%s_%u\":" : "\"%s\":", words[w], k);
				puts_(b, tmp);
			}
			gen_value(b, depth + 1);
		}
		puts_(b, obj ? "}" : "]");
		return;
	}
	switch (rnd(6)) {
	case 0:
	case 1:
		snprintf(tmp, sizeof(tmp), "%u", rnd(1000000));
		break;
	case 2:
		snprintf(tmp, sizeof(tmp), "-%u.%02u", rnd(1000), rnd(100));
		break;
	case 3:
		snprintf(tmp, sizeof(tmp), "\"%s-%u\"", words[rnd(NWORDS)], rnd(100000));
		break;
	case 4:
		snprintf(tmp, sizeof(tmp), "%s", rnd(2) ? "true" : "false");
		break;
	default:
		snprintf(tmp, sizeof(tmp), "null");
		break;
	}
	puts_(b, tmp);
}

/* ---- arena ------------------------------------------------------------------ */

struct chunk {
	struct chunk *next;
	size_t used, size;
	char mem[];
};

struct arena {
	struct chunk *head;
};

NOINLINE static void arena_grow(struct arena *a, size_t need)
{
	size_t size = need > 8192 ? need : 8192;
	struct chunk *c = xmalloc(sizeof(*c) + size);
	c->next = a->head;
	c->used = 0;
	c->size = size;
	a->head = c;
	FIRE(arena, chunk, size);
}

static void *arena_alloc(struct arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (!a->head || a->head->size - a->head->used < n)
		arena_grow(a, n);
	void *p = a->head->mem + a->head->used;
	a->head->used += n;
	return p;
}

/* Keep the first chunk, give the others back: the next big document takes
 * new ones (and fires arena:chunk again). */
static void arena_reset(struct arena *a)
{
	struct chunk *c = a->head;
	while (c && c->next) {
		struct chunk *n = c->next;
		free(c);
		c = n;
	}
	a->head = c;
	if (c)
		c->used = 0;
}

/* ---- interned keys ------------------------------------------------------- */

struct key {
	struct key *next;
	uint32_t hash, len;
	char s[];
};

struct table {
	struct key **slot;
	uint32_t mask, n;
};

static uint32_t hash_bytes(const char *s, uint32_t len)
{
	uint32_t h = 2166136261u;
	for (uint32_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

NOINLINE static void table_grow(struct table *t)
{
	uint32_t size = (t->mask + 1) * 2;
	struct key **slot = calloc(size, sizeof(*slot));
	if (!slot)
		return;
	for (uint32_t i = 0; i <= t->mask; i++)
		for (struct key *k = t->slot[i], *next; k; k = next) {
			next = k->next;
			k->next = slot[k->hash & (size - 1)];
			slot[k->hash & (size - 1)] = k;
		}
	FIRE(ht, grow, t->mask + 1, size);
	free(t->slot);
	t->slot = slot;
	t->mask = size - 1;
}

NOINLINE static const struct key *intern(struct table *t, const char *s, uint32_t len)
{
	uint32_t h = hash_bytes(s, len);
	for (struct key *k = t->slot[h & t->mask]; k; k = k->next)
		if (k->hash == h && k->len == len && !memcmp(k->s, s, len)) {
			FIRE(json, key, h, 0);
			return k;
		}
	struct key *k = xmalloc(sizeof(*k) + len + 1);
	k->hash = h;
	k->len = len;
	memcpy(k->s, s, len);
	k->s[len] = 0;
	k->next = t->slot[h & t->mask];
	t->slot[h & t->mask] = k;
	FIRE(json, key, h, 1);
	if (++t->n > t->mask)
		table_grow(t);
	return k;
}

/* ---- the parser ------------------------------------------------------------ */

enum kind { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct node {
	struct node *child, *next;
	const struct key *key;       /* member of an object */
	const char *str;
	double num;
	uint32_t len;
	uint8_t kind;
};

struct parser {
	const char *p, *end;
	struct arena *arena;
	struct table *keys;
	uint32_t nodes;
	int error;
};

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r'))
		ps->p++;
}

NOINLINE static struct node *node_new(struct parser *ps, enum kind kind, int depth)
{
	struct node *n = arena_alloc(ps->arena, sizeof(*n));
	memset(n, 0, sizeof(*n));
	n->kind = (uint8_t)kind;
	ps->nodes++;
	FIRE(json, node, kind, (uint32_t)depth);
	return n;
}

static struct node *parse_value(struct parser *ps, int depth);

/* A string token without escapes (the generator writes none). */
static int scan_string(struct parser *ps, const char **ret_s, uint32_t *ret_len)
{
	if (ps->p >= ps->end || *ps->p != '"')
		return -1;
	const char *s = ++ps->p;
	while (ps->p < ps->end && *ps->p != '"')
		ps->p++;
	if (ps->p >= ps->end)
		return -1;
	*ret_s = s;
	*ret_len = (uint32_t)(ps->p - s);
	ps->p++;
	return 0;
}

NOINLINE static struct node *parse_string(struct parser *ps, int depth)
{
	const char *s;
	uint32_t len;
	if (scan_string(ps, &s, &len) < 0)
		return NULL;
	struct node *n = node_new(ps, J_STR, depth);
	n->str = s;
	n->len = len;
	return n;
}

NOINLINE static struct node *parse_number(struct parser *ps, int depth)
{
	char *end;
	double v = strtod(ps->p, &end);
	if (end == ps->p)
		return NULL;
	ps->p = end;
	struct node *n = node_new(ps, J_NUM, depth);
	n->num = v;
	return n;
}

NOINLINE static struct node *parse_literal(struct parser *ps, int depth)
{
	static const struct { const char *s; enum kind k; } lits[] = {
		{ "true", J_BOOL }, { "false", J_BOOL }, { "null", J_NULL },
	};
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(lits[i].s);
		if ((size_t)(ps->end - ps->p) >= n && !memcmp(ps->p, lits[i].s, n)) {
			ps->p += n;
			struct node *r = node_new(ps, lits[i].k, depth);
			r->num = lits[i].s[0] == 't';
			return r;
		}
	}
	return NULL;
}

NOINLINE static struct node *parse_array(struct parser *ps, int depth)
{
	struct node *a = node_new(ps, J_ARR, depth), **tail = &a->child;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		return a;
	}
	for (;;) {
		struct node *v = parse_value(ps, depth + 1);
		if (!v)
			return NULL;
		*tail = v;
		tail = &v->next;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			return a;
		}
		return NULL;
	}
}

NOINLINE static struct node *parse_object(struct parser *ps, int depth)
{
	struct node *o = node_new(ps, J_OBJ, depth), **tail = &o->child;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		return o;
	}
	for (;;) {
		const char *s;
		uint32_t len;
		skip_ws(ps);
		if (scan_string(ps, &s, &len) < 0)
			return NULL;
		const struct key *k = intern(ps->keys, s, len);
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':')
			return NULL;
		ps->p++;
		struct node *v = parse_value(ps, depth + 1);
		if (!v)
			return NULL;
		v->key = k;
		*tail = v;
		tail = &v->next;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			return o;
		}
		return NULL;
	}
}

NOINLINE static struct node *parse_value(struct parser *ps, int depth)
{
	struct node *n = NULL;
	skip_ws(ps);
	if (ps->p >= ps->end)
		return NULL;
	switch (*ps->p) {
	case '{':
		n = parse_object(ps, depth);
		break;
	case '[':
		n = parse_array(ps, depth);
		break;
	case '"':
		n = parse_string(ps, depth);
		break;
	case 't':
	case 'f':
	case 'n':
		n = parse_literal(ps, depth);
		break;
	default:
		n = parse_number(ps, depth);
		break;
	}
	KEEP_FRAME();
	return n;
}

/* ---- the index: a walk, a sort -------------------------------------------- */

struct nums {
	double *v;
	uint32_t n, cap;
};

NOINLINE static uint64_t walk(const struct node *n, int depth, struct nums *out)
{
	uint64_t sum = 0;
	for (; n; n = n->next) {
		if (n->key && n->key->len == 2 && !memcmp(n->key->s, "id", 2)) {
			uint32_t id = n->kind == J_NUM ? (uint32_t)n->num : n->len;
			FIRE(query, match, (uint32_t)depth, id);
			sum += id;
		}
		if (n->kind == J_NUM && out->n < out->cap)
			out->v[out->n++] = n->num;
		if (n->child)
			sum += walk(n->child, depth + 1, out);
		KEEP_FRAME();
	}
	return sum;
}

NOINLINE static void merge_sort(double *v, double *tmp, uint32_t n)
{
	if (n < 2)
		return;
	uint32_t h = n / 2;
	merge_sort(v, tmp, h);
	merge_sort(v + h, tmp, n - h);
	if (n >= 8)
		FIRE(sort, merge, h, n - h);
	uint32_t i = 0, j = h, k = 0;
	while (i < h && j < n)
		tmp[k++] = v[j] < v[i] ? v[j++] : v[i++];
	while (i < h)
		tmp[k++] = v[i++];
	while (j < n)
		tmp[k++] = v[j++];
	memcpy(v, tmp, n * sizeof(*v));
}

/* ---- work ------------------------------------------------------------------ */

struct doc {
	char *text;
	size_t len;
};

NOINLINE static uint64_t process_doc(const struct doc *d, uint32_t index, struct arena *arena,
				     struct table *keys, struct nums *nums, double *tmp, uint32_t *ret_nodes)
{
	struct parser ps = { d->text, d->text + d->len, arena, keys, 0, 0 };
	struct node *root = parse_value(&ps, 0);
	if (!root) {
		fprintf(stderr, "stacks_prog: document %u does not parse\n", index);
		exit(1);
	}
	nums->n = 0;
	uint64_t sum = walk(root, 0, nums);
	merge_sort(nums->v, tmp, nums->n);
	for (uint32_t i = 0; i < nums->n; i += 1 + nums->n / 4)
		sum += (uint64_t)(int64_t)nums->v[i];
	FIRE(json, doc, index, (uint32_t)d->len, ps.nodes);
	arena_reset(arena);
	*ret_nodes = ps.nodes;
	return sum;
}

NOINLINE static int cmd_work(uint32_t ndocs)
{
	struct doc *docs = xmalloc(ndocs * sizeof(*docs));
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < ndocs; i++) {
		struct buf b = { NULL, 0, 0 };
		gen_value(&b, 0);
		docs[i].text = b.p;
		docs[i].len = b.len;
		bytes += b.len;
	}
	struct arena arena = { NULL };
	struct table keys = { calloc(16, sizeof(struct key *)), 15, 0 };
	struct nums nums = { xmalloc(65536 * sizeof(double)), 0, 65536 };
	double *tmp = xmalloc(65536 * sizeof(double));
	if (!keys.slot) {
		fprintf(stderr, "stacks_prog: out of memory\n");
		return 1;
	}
	uint64_t sum = 0, nodes = 0;
	uint64_t t0 = now_ns();
	for (uint32_t i = 0; i < ndocs; i++) {
		uint32_t n;
		sum += process_doc(&docs[i], i, &arena, &keys, &nums, tmp, &n);
		nodes += n;
	}
	uint64_t t1 = now_ns();
	KEEP_FRAME();
	printf("work docs=%u bytes=%" PRIu64 " nodes=%" PRIu64 " events=%" PRIu64 " ns=%" PRIu64
	       " checksum=%" PRIu64 "\n", ndocs, bytes, nodes, fired, t1 - t0, sum);
	return 0;
}

/* ---- loop ------------------------------------------------------------------ */

typedef void (*loop_fn)(uint64_t n);

NOINLINE static void loop_plain(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		ringtrace_tracepoint(loop, plain, (uint32_t)i, (uint32_t)~i);
		__asm__ __volatile__("" : "+r"(i));
	}
}

NOINLINE static void loop_stack(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		ringtrace_tracepoint(loop, stack, (uint32_t)i, (uint32_t)~i);
		__asm__ __volatile__("" : "+r"(i));
	}
}

NOINLINE static double time_loop(loop_fn fn, uint64_t n)
{
	uint64_t t0 = now_ns();
	fn(n);
	uint64_t t1 = now_ns();
	KEEP_FRAME();
	return (double)(t1 - t0) / (double)n;
}

/* LEVEL more frames, then the timed loop. */
NOINLINE static double descend(int level, loop_fn fn, uint64_t n)
{
	double r = level > 0 ? descend(level - 1, fn, n) : time_loop(fn, n);
	KEEP_FRAME();
	return r;
}

/* Frames of a loop's stack besides descend's: the loop function,
 * time_loop, run_loops, cmd_loop, main, __libc_start_call_main,
 * __libc_start_main, _start. */
#define LOOP_FIXED_FRAMES 8

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

#define MAX_LOOPS 4
#define MAX_RUNS 64

NOINLINE static int run_loops(loop_fn *fns, char **labels, int nloops, uint64_t iters, int runs,
			      int depth)
{
	static double v[MAX_LOOPS][MAX_RUNS];
	int level = depth - LOOP_FIXED_FRAMES - 1;
	for (int i = 0; i < nloops; i++)
		descend(level, fns[i], iters / 10 + 1);
	for (int r = 0; r < runs; r++)
		for (int i = 0; i < nloops; i++)
			v[i][r] = descend(level, fns[i], iters);
	for (int i = 0; i < nloops; i++) {
		qsort(v[i], (size_t)runs, sizeof(double), cmp_double);
		double med = runs % 2 ? v[i][runs / 2] : (v[i][runs / 2 - 1] + v[i][runs / 2]) / 2;
		printf("result %s %.3f min=%.3f max=%.3f runs=%d iters=%" PRIu64 " depth=%d%s\n", labels[i],
		       med, v[i][0], v[i][runs - 1], runs, iters, depth, nloops > 1 ? " interleaved=1" : "");
	}
	KEEP_FRAME();
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: stacks_prog work [DOCS] [--seed S] [--cpu C]\n"
			"       stacks_prog loop plain|stack[,...] [--iters N] [--runs R] [--depth D]\n"
			"                        [--cpu C] [--label L[,L...]]\n");
	return 2;
}

NOINLINE static int cmd_loop(int argc, char **argv)
{
	loop_fn fns[MAX_LOOPS];
	char *labels[MAX_LOOPS], *save = NULL;
	uint64_t iters = 1000000;
	int runs = 5, depth = 16, cpu = 0, n = 0, nl = 0;
	const char *label = NULL;

	if (argc < 3)
		return usage();
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--depth") && i + 1 < argc)
			depth = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
			cpu = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--label") && i + 1 < argc)
			label = argv[++i];
		else
			return usage();
	}
	if (iters < 1 || runs < 1 || runs > MAX_RUNS || depth < LOOP_FIXED_FRAMES + 1 || depth > 64)
		return usage();
	for (char *m = strtok_r(argv[2], ",", &save); m; m = strtok_r(NULL, ",", &save)) {
		if (n == MAX_LOOPS || (strcmp(m, "plain") && strcmp(m, "stack")))
			return usage();
		fns[n] = !strcmp(m, "plain") ? loop_plain : loop_stack;
		labels[n++] = m;
	}
	if (label) {
		static char lbuf[256];
		snprintf(lbuf, sizeof(lbuf), "%s", label);
		save = NULL;
		for (char *l = strtok_r(lbuf, ",", &save); l && nl < n; l = strtok_r(NULL, ",", &save))
			labels[nl++] = l;
		if (nl != n)
			return usage();
	}
	if (n == 0)
		return usage();
	pin(cpu);
	int r = run_loops(fns, labels, n, iters, runs, depth);
	KEEP_FRAME();
	return r;
}

int main(int argc, char **argv)
{
	int r;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "loop")) {
		r = cmd_loop(argc, argv);
	} else if (argc >= 2 && !strcmp(argv[1], "work")) {
		uint32_t docs = 4000;
		int cpu = 0;
		for (int i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "--seed") && i + 1 < argc)
				rng = strtoull(argv[++i], NULL, 0) | 1;
			else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
				cpu = atoi(argv[++i]);
			else if (argv[i][0] >= '1' && argv[i][0] <= '9')
				docs = (uint32_t)strtoul(argv[i], NULL, 10);
			else
				return usage();
		}
		pin(cpu);
		r = cmd_work(docs);
	} else {
		r = usage();
	}
	KEEP_FRAME();
	return r;
}
