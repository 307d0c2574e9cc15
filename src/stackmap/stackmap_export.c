/*
 * stackmap_export.c - the map's exports (text, stat, FSMB v2 binary, JSON),
 * the reader of the binary format and the sort the top-N views use.
 *
 * Tools side: run by the ringtrace command, or by the program when a
 * recording ends, never on a hot path; they may allocate and write to
 * stdio streams. The binary reader takes files from anywhere (another
 * machine, of either byte order, or an attacker): it checks the whole
 * input before it hands out a single stack, and is fuzzed
 * (tests/fuzz/fuzz_stackmap_bin.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "stackmap/stackmap.h"

/* A symbol line: "symbol+0xoff/0xsize", C++ names included. */
#define SYM_MAX 512

static int stream_status(FILE *f)
{
	return ferror(f) ? -EIO : 0;
}

/* ---- text ------------------------------------------------------------------- */

static void print_frame(FILE *f, uint32_t i, uint64_t addr, stackmap_sym_fn sym, void *arg)
{
	char name[SYM_MAX];
	if (sym && sym(arg, addr, name, sizeof(name)) > 0) {
		name[sizeof(name) - 1] = 0;
		fprintf(f, "  [%u] %s\n", i, name);
	} else {
		fprintf(f, "  [%u] 0x%" PRIx64 "\n", i, addr);
	}
}

static void print_stack(FILE *f, const struct stackmap_stack *s, stackmap_sym_fn sym, void *arg)
{
	fprintf(f, "stack_id %u [ref %" PRIu64 ", depth %u]\n", s->id, s->ref, s->depth);
	for (uint32_t i = 0; i < s->depth && i < STACKMAP_MAX_DEPTH; i++)
		print_frame(f, i, s->ips[i], sym, arg);
	fputc('\n', f);
}

int stackmap_print_text(FILE *f, const struct stackmap_stack *s, size_t n, stackmap_sym_fn sym,
			void *arg)
{
	if (!f || (n && !s))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		print_stack(f, &s[i], sym, arg);
	return stream_status(f);
}

struct text_ctx {
	FILE *f;
	stackmap_sym_fn sym;
	void *arg;
};

static int text_one(void *arg, const struct stackmap_stack *s)
{
	struct text_ctx *t = arg;
	print_stack(t->f, s, t->sym, t->arg);
	return 0;
}

int stackmap_write_text(const struct stackmap *map, FILE *f, stackmap_sym_fn sym, void *arg)
{
	if (!map || !f)
		return -EINVAL;
	struct text_ctx t = { f, sym, arg };
	int r = stackmap_for_each(map, text_one, &t);
	return r < 0 ? r : stream_status(f);
}

/* ---- stat ------------------------------------------------------------------- */

int stackmap_print_stat(FILE *f, const struct stackmap_stat *st)
{
	if (!f || !st)
		return -EINVAL;
	fprintf(f,
		"entries: %" PRIu64 " / %" PRIu64 "\n"
		"table_size: %" PRIu64 "\n"
		"successes: %" PRIu64 "\n"
		"drops: %" PRIu64 "\n"
		"success_rate: %u%%\n",
		st->entries, st->max_entries, st->table_size, st->successes, st->drops,
		st->success_rate);
	return stream_status(f);
}

int stackmap_write_stat(const struct stackmap *map, FILE *f)
{
	struct stackmap_stat st;
	int r = stackmap_stat(map, &st);
	if (r < 0)
		return r;
	return stackmap_print_stat(f, &st);
}

/* ---- binary: writer --------------------------------------------------------- */

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void write_bin_header(FILE *f, uint32_t n)
{
	unsigned char h[STACKMAP_BIN_HDR];
	put32(h, STACKMAP_BIN_MAGIC);
	put32(h + 4, STACKMAP_BIN_VERSION);
	put32(h + 8, n);
	put32(h + 12, 0);
	fwrite(h, 1, sizeof(h), f);
}

static void write_bin_stack(FILE *f, const struct stackmap_stack *s)
{
	unsigned char rec[STACKMAP_BIN_STACK + STACKMAP_MAX_DEPTH * 8];
	uint32_t nr = s->depth <= STACKMAP_MAX_DEPTH ? s->depth : STACKMAP_MAX_DEPTH;
	put32(rec, s->id);
	put32(rec + 4, nr);
	put32(rec + 8, s->ref > UINT32_MAX ? UINT32_MAX : (uint32_t)s->ref);
	put32(rec + 12, 0);
	memcpy(rec + STACKMAP_BIN_STACK, s->ips, (size_t)nr * 8);
	fwrite(rec, 1, STACKMAP_BIN_STACK + (size_t)nr * 8, f);
}

int stackmap_print_bin(FILE *f, const struct stackmap_stack *s, size_t n)
{
	if (!f || (n && !s) || n > UINT32_MAX)
		return -EINVAL;
	write_bin_header(f, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		write_bin_stack(f, &s[i]);
	return stream_status(f);
}

struct ids {
	uint32_t *v;
	uint32_t n, cap;
};

static int id_one(void *arg, const struct stackmap_stack *s)
{
	struct ids *ids = arg;
	if (ids->n == ids->cap)
		return 1; /* published after the list was sized: not exported */
	ids->v[ids->n++] = s->id;
	return 0;
}

/*
 * The header's count comes first, so the stacks are chosen first: the ids
 * published now (an element, once published, stays so until a reset), then
 * each is copied and written. One u32 per stack instead of a copy of the
 * map.
 */
int stackmap_write_bin(const struct stackmap *map, FILE *f)
{
	if (!map || !f)
		return -EINVAL;
	/* Relaxed, partner: the pool cursor's fetch-add in get_id; only sizes
	 * the list (the walk stops at its capacity). */
	uint64_t used = __atomic_load_n(&map->hdr->cursor, __ATOMIC_RELAXED);
	struct ids ids = { NULL, 0, used < map->max ? (uint32_t)used : map->max };
	ids.v = malloc((ids.cap ? ids.cap : 1) * sizeof(ids.v[0]));
	if (!ids.v)
		return -ENOMEM;
	int r = stackmap_for_each(map, id_one, &ids);
	if (r < 0)
		goto out;
	r = 0;
	write_bin_header(f, ids.n);
	for (uint32_t i = 0; i < ids.n; i++) {
		struct stackmap_stack s;
		/* Only a reset (which readers must not overlap) unpublishes. */
		r = stackmap_lookup(map, ids.v[i], &s);
		if (r < 0) {
			r = -EBUSY;
			goto out;
		}
		write_bin_stack(f, &s);
	}
	r = stream_status(f);
out:
	free(ids.v);
	return r;
}

/* ---- binary: reader --------------------------------------------------------- */

static uint32_t get32(const unsigned char *p, int swap)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

static uint64_t get64(const unsigned char *p, int swap)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return swap ? __builtin_bswap64(v) : v;
}

int stackmap_read_bin(const void *data, size_t size, stackmap_iter_fn fn, void *arg,
		      struct stackmap_bin_info *ret_info)
{
	const unsigned char *p = data;
	if (!data && size)
		return -EINVAL;
	if (size < STACKMAP_BIN_HDR)
		return -EBADMSG;
	int swap;
	uint32_t magic;
	memcpy(&magic, p, 4);
	if (magic == STACKMAP_BIN_MAGIC)
		swap = 0;
	else if (magic == __builtin_bswap32(STACKMAP_BIN_MAGIC))
		swap = 1;
	else
		return -EBADMSG;
	uint32_t version = get32(p + 4, swap);
	if (version != STACKMAP_BIN_VERSION)
		return -EPROTO;
	uint32_t n = get32(p + 8, swap);
	/* Reserved words are not checked: a later writer may use them. */

	/* Every record takes at least its 16-byte header: a count beyond that
	 * is a lie, refused before walking. */
	if (n > (size - STACKMAP_BIN_HDR) / STACKMAP_BIN_STACK)
		return -EBADMSG;
	/* Pass 1: the structure, whole, before any stack is handed out. */
	size_t off = STACKMAP_BIN_HDR;
	for (uint32_t i = 0; i < n; i++) {
		if (size - off < STACKMAP_BIN_STACK)
			return -EBADMSG;
		uint32_t id = get32(p + off, swap);
		uint32_t nr = get32(p + off + 4, swap);
		if (id == 0 || nr > STACKMAP_MAX_DEPTH)
			return -EBADMSG;
		off += STACKMAP_BIN_STACK;
		if (size - off < (size_t)nr * 8)
			return -EBADMSG;
		off += (size_t)nr * 8;
	}
	if (off != size)
		return -EBADMSG; /* trailing bytes: not what the header says */
	if (ret_info) {
		ret_info->version = version;
		ret_info->nstacks = n;
		ret_info->swapped = swap;
	}
	if (!fn)
		return 0;

	/* Pass 2: decode; every bound was checked above. */
	off = STACKMAP_BIN_HDR;
	struct stackmap_stack s;
	for (uint32_t i = 0; i < n; i++) {
		s.id = get32(p + off, swap);
		s.depth = get32(p + off + 4, swap);
		s.ref = get32(p + off + 8, swap);
		off += STACKMAP_BIN_STACK;
		for (uint32_t k = 0; k < s.depth; k++, off += 8)
			s.ips[k] = get64(p + off, swap);
		int r = fn(arg, &s);
		if (r)
			return r;
	}
	return 0;
}

struct load {
	struct stackmap_stack *v;
	size_t n;
};

static int load_one(void *arg, const struct stackmap_stack *s)
{
	struct load *l = arg;
	l->v[l->n++] = *s;
	return 0;
}

int stackmap_load_bin(const void *data, size_t size, struct stackmap_stack **ret, size_t *ret_n,
		      struct stackmap_bin_info *ret_info)
{
	if (!ret || !ret_n)
		return -EINVAL;
	struct stackmap_bin_info info;
	int r = stackmap_read_bin(data, size, NULL, NULL, &info);
	if (r < 0)
		return r;
	struct load l = { malloc((info.nstacks ? info.nstacks : 1) * sizeof(*l.v)), 0 };
	if (!l.v)
		return -ENOMEM;
	r = stackmap_read_bin(data, size, load_one, &l, NULL);
	if (r < 0) {
		free(l.v);
		return r;
	}
	*ret = l.v;
	*ret_n = l.n;
	if (ret_info)
		*ret_info = info;
	return 0;
}

/* ---- top N and JSON --------------------------------------------------------- */

static int by_ref(const void *a, const void *b)
{
	const struct stackmap_stack *x = a, *y = b;
	if (x->ref != y->ref)
		return x->ref > y->ref ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

void stackmap_sort_by_ref(struct stackmap_stack *s, size_t n)
{
	if (s && n > 1)
		qsort(s, n, sizeof(*s), by_ref);
}

/* A JSON string body: quotes, backslashes and control bytes escaped; other
 * bytes as they are (symbol names are ASCII or UTF-8). */
static void json_string(FILE *f, const char *str)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)str; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}

int stackmap_print_json(FILE *f, const struct stackmap_stack *s, size_t n, stackmap_sym_fn sym,
			void *arg)
{
	if (!f || (n && !s))
		return -EINVAL;
	fputs("{\"stacks\":[", f);
	for (size_t i = 0; i < n; i++) {
		const struct stackmap_stack *st = &s[i];
		uint32_t depth = st->depth <= STACKMAP_MAX_DEPTH ? st->depth : STACKMAP_MAX_DEPTH;
		fprintf(f, "%s\n{\"stack_id\":%u,\"ref\":%" PRIu64 ",\"depth\":%u,\"frames\":[",
			i ? "," : "", st->id, st->ref, depth);
		for (uint32_t k = 0; k < depth; k++) {
			char name[SYM_MAX];
			fprintf(f, "%s{\"addr\":\"0x%" PRIx64 "\"", k ? "," : "", st->ips[k]);
			if (sym && sym(arg, st->ips[k], name, sizeof(name)) > 0) {
				name[sizeof(name) - 1] = 0;
				fputs(",\"sym\":", f);
				json_string(f, name);
			}
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs(n ? "\n]}\n" : "]}\n", f);
	return stream_status(f);
}
