/*
 * metadata.c - TSDL metadata generator (see metadata.h).
 *
 * Called by the recorder once per trace (and again when events are added),
 * by tests/tools/ctf_gen and by the tests. The output is small (a few
 * hundred bytes per event class) and is built in memory first, so that
 * invalid input never leaves a half-written file.
 *
 * Shape, in the order babeltrace2 and other readers like best (clock before
 * the types that map to it):
 *   signature, integer typealiases, trace (with packet.header), env, clock,
 *   clock-mapped typealiases, stream (event.header = LTTng compact shape,
 *   packet.context), one event block per event class.
 * User field names get a leading '_' so that no name can collide with a TSDL
 * keyword; babeltrace2 strips it when printing, and so does ringtrace dump.
 */
#include "ctf/metadata.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/sig.h"
#include "util/buf.h"

#define CTF_NAME_MAX 256             /* bytes of a provider or event name */

static const char *const builtin_env_keys[] = {
	"hostname", "domain", "tracer_name", "tracer_major", "tracer_minor",
	"tracer_patch", "procname", "vpid", "thread_names",
};

static int is_identifier(const char *s)
{
	if (!s || !*s)
		return 0;
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return 0;
	for (s++; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' ||
		      (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

static int valid_name(const char *s)
{
	if (!s || !*s || strlen(s) >= CTF_NAME_MAX)
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

int ctf_metadata_validate(const struct ctf_trace_desc *t)
{
	struct sig_field fields[SIG_FIELDS_MAX];
	size_t n;

	if (!t || t->clock.freq == 0)
		return -EINVAL;
	if (t->n_events && !t->events)
		return -EINVAL;
	if (t->n_env && !t->env)
		return -EINVAL;
	for (size_t i = 0; i < t->n_events; i++) {
		const struct ctf_event_class *e = &t->events[i];
		if (e->id == 0 || !valid_name(e->provider) || !valid_name(e->name) || !e->signature)
			return -EINVAL;
		if (sig_parse(e->signature, fields, SIG_FIELDS_MAX, &n) < 0)
			return -EINVAL;
	}
	/* Duplicate ids by sorting a copy: a program may register 10^5
	 * classes, and comparing each with all others took seconds. */
	if (t->n_events > 1) {
		uint32_t *ids = malloc(t->n_events * sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		for (size_t i = 0; i < t->n_events; i++)
			ids[i] = t->events[i].id;
		qsort(ids, t->n_events, sizeof(*ids), cmp_u32);
		size_t i = 1;
		while (i < t->n_events && ids[i] != ids[i - 1])
			i++;
		free(ids);
		if (i < t->n_events)
			return -EINVAL;
	}
	if (t->n_threads && !t->threads)
		return -EINVAL;
	for (size_t i = 0; i < t->n_env; i++) {
		const struct ctf_env_kv *kv = &t->env[i];
		if (!is_identifier(kv->key) || !strncmp(kv->key, "thread_name_", 12))
			return -EINVAL;
		for (size_t j = 0; j < sizeof(builtin_env_keys) / sizeof(builtin_env_keys[0]); j++)
			if (strcmp(kv->key, builtin_env_keys[j]) == 0)
				return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (strcmp(t->env[j].key, kv->key) == 0)
				return -EINVAL;
	}
	return 0;
}

void ctf_tsdl_escape(struct ctf_buf *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '"':  ctf_buf_puts(out, "\\\""); break;
		case '\\': ctf_buf_puts(out, "\\\\"); break;
		case '\n': ctf_buf_puts(out, "\\n"); break;
		case '\t': ctf_buf_puts(out, "\\t"); break;
		case '\r': ctf_buf_puts(out, "\\r"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				ctf_buf_printf(out, "\\%03o", c);
			else
				ctf_buf_putc(out, (char)c);
		}
	}
}

void ctf_uuid_format(const uint8_t u[16], char out[37])
{
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
		 u[12], u[13], u[14], u[15]);
}

static void put_string_attr(struct ctf_buf *b, const char *indent, const char *key,
			    const char *val)
{
	ctf_buf_printf(b, "%s%s = \"", indent, key);
	ctf_tsdl_escape(b, val);
	ctf_buf_puts(b, "\";\n");
}

/* The TSDL type of one element of field `f`. */
static void put_field_type(struct ctf_buf *b, const struct sig_field *f, unsigned align_of_8)
{
	unsigned a = align_of_8 ? 8 : f->bits;
	switch (f->kind) {
	case SIG_INT:
		ctf_buf_printf(b, "%sint%u_t", f->is_signed ? "" : "u", f->bits);
		break;
	case SIG_HEX:
	case SIG_PTR:
		ctf_buf_printf(b, "integer { size = %u; align = %u; signed = false; base = 16; }",
			       f->bits, a);
		break;
	case SIG_FLOAT:
		ctf_buf_printf(b, "floating_point { exp_dig = %u; mant_dig = %u; align = %u; }",
			       f->bits == 32 ? 8u : 11u, f->bits == 32 ? 24u : 53u, a);
		break;
	default:
		ctf_buf_puts(b, "string");
		break;
	}
}

static void put_event(struct ctf_buf *b, const struct ctf_event_class *e, int natural)
{
	struct sig_field fields[SIG_FIELDS_MAX];
	size_t n = 0;

	/* Validated by the caller. */
	(void)sig_parse(e->signature, fields, SIG_FIELDS_MAX, &n);
	ctf_buf_puts(b, "event {\n\tname = \"");
	ctf_tsdl_escape(b, e->provider);
	ctf_buf_putc(b, ':');
	ctf_tsdl_escape(b, e->name);
	ctf_buf_printf(b, "\";\n\tid = %" PRIu32 ";\n\tstream_id = 0;\n", e->id);
	ctf_buf_puts(b, "\tfields := struct {\n");
	for (size_t i = 0; i < n; i++) {
		const struct sig_field *f = &fields[i];
		if (f->array == SIG_SEQ)
			ctf_buf_printf(b, "\t\tuint%u_t __%s_length;\n", f->count_size * 8u, f->name);
		ctf_buf_puts(b, "\t\t");
		put_field_type(b, f, !natural);
		ctf_buf_printf(b, " _%s", f->name);
		if (f->array == SIG_FIXED)
			ctf_buf_printf(b, "[%" PRIu32 "]", f->len);
		else if (f->array == SIG_SEQ)
			ctf_buf_printf(b, "[__%s_length]", f->name);
		ctf_buf_puts(b, ";\n");
	}
	ctf_buf_puts(b, "\t};\n};\n\n");
}

/* "MAJOR.MINOR.PATCH" -> numbers; 0 if it does not parse. */
static int parse_version(const char *v, long out[3])
{
	for (int i = 0; i < 3; i++) {
		char *end;
		if (*v < '0' || *v > '9')
			return 0;
		errno = 0;
		out[i] = strtol(v, &end, 10);
		if (errno || out[i] > 1000000)
			return 0;
		if (i < 2 && *end != '.')
			return 0;
		v = end + (i < 2);
	}
	return 1;
}

static void generate(struct ctf_buf *b, const struct ctf_trace_desc *t)
{
	static const unsigned sizes[] = { 8, 16, 32, 64 };
	char uuid[37];
	int nat = t->natural_align;

	ctf_buf_puts(b, "/* CTF 1.8 */\n\n");
	ctf_buf_printf(b, "/* ringtrace trace metadata: %s integers */\n\n",
		       nat ? "naturally aligned" : "byte-packed (align = 8 bits)");
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < 4; i++)
			ctf_buf_printf(b,
				       "typealias integer { size = %u; align = %u; signed = %s; } := %sint%u_t;\n",
				       sizes[i], nat ? sizes[i] : 8, s ? "true" : "false",
				       s ? "" : "u", sizes[i]);
	ctf_buf_puts(b, "typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n");
	ctf_buf_puts(b, "typealias integer { size = 27; align = 1; signed = false; } := uint27_t;\n\n");

	ctf_uuid_format(t->uuid, uuid);
	ctf_buf_printf(b,
		       "trace {\n"
		       "\tmajor = 1;\n"
		       "\tminor = 8;\n"
		       "\tuuid = \"%s\";\n"
		       "\tbyte_order = %s;\n"
		       "\tpacket.header := struct {\n"
		       "\t\tuint32_t magic;\n"
		       "\t\tuint8_t uuid[16];\n"
		       "\t\tuint32_t stream_id;\n"
		       "\t\tuint64_t stream_instance_id;\n"
		       "\t} align(8);\n"
		       "};\n\n",
		       uuid, t->big_endian ? "be" : "le");

	ctf_buf_puts(b, "env {\n");
	if (t->hostname)
		put_string_attr(b, "\t", "hostname", t->hostname);
	ctf_buf_puts(b, "\tdomain = \"ust\";\n\ttracer_name = \"ringtrace\";\n");
	long ver[3];
	if (t->tracer_version && parse_version(t->tracer_version, ver))
		ctf_buf_printf(b, "\ttracer_major = %ld;\n\ttracer_minor = %ld;\n\ttracer_patch = %ld;\n",
			       ver[0], ver[1], ver[2]);
	if (t->procname)
		put_string_attr(b, "\t", "procname", t->procname);
	if (t->vpid >= 0)
		ctf_buf_printf(b, "\tvpid = %" PRId64 ";\n", t->vpid);
	if (t->thread_names)
		put_string_attr(b, "\t", "thread_names", t->thread_names);
	for (size_t i = 0; i < t->n_threads; i++) {
		char key[32];
		/* An unnamed thread has no key: readers fall back on its record. */
		if (!t->threads[i].comm || !t->threads[i].comm[0])
			continue;
		snprintf(key, sizeof(key), "thread_name_%" PRIu32, t->threads[i].tid);
		put_string_attr(b, "\t", key, t->threads[i].comm);
	}
	for (size_t i = 0; i < t->n_env; i++) {
		if (t->env[i].str)
			put_string_attr(b, "\t", t->env[i].key, t->env[i].str);
		else
			ctf_buf_printf(b, "\t%s = %" PRId64 ";\n", t->env[i].key, t->env[i].num);
	}
	ctf_buf_puts(b, "};\n\n");

	ctf_uuid_format(t->clock.uuid, uuid);
	ctf_buf_printf(b, "clock {\n\tname = \"monotonic\";\n\tuuid = \"%s\";\n", uuid);
	if (t->clock.description)
		put_string_attr(b, "\t", "description", t->clock.description);
	ctf_buf_printf(b,
		       "\tfreq = %" PRIu64 ";\n"
		       "\tprecision = 1;\n"
		       "\toffset_s = %" PRId64 ";\n"
		       "\toffset = %" PRIu64 ";\n"
		       "\tabsolute = TRUE;\n"
		       "};\n\n",
		       t->clock.freq, t->clock.offset_s, t->clock.offset);
	ctf_buf_puts(b,
		     "typealias integer { size = 27; align = 1; signed = false; "
		     "map = clock.monotonic.value; } := uint27_clock_monotonic_t;\n");
	ctf_buf_printf(b,
		       "typealias integer { size = 64; align = %u; signed = false; "
		       "map = clock.monotonic.value; } := uint64_clock_monotonic_t;\n\n",
		       nat ? 64u : 8u);

	ctf_buf_puts(b,
		     "stream {\n"
		     "\tid = 0;\n"
		     "\tevent.header := struct {\n"
		     "\t\tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n"
		     "\t\tvariant <id> {\n"
		     "\t\t\tstruct {\n"
		     "\t\t\t\tuint27_clock_monotonic_t timestamp;\n"
		     "\t\t\t} compact;\n"
		     "\t\t\tstruct {\n"
		     "\t\t\t\tuint32_t id;\n"
		     "\t\t\t\tuint64_clock_monotonic_t timestamp;\n"
		     "\t\t\t} extended;\n"
		     "\t\t} v;\n"
		     "\t} align(8);\n"
		     "\tpacket.context := struct {\n"
		     "\t\tuint64_clock_monotonic_t timestamp_begin;\n"
		     "\t\tuint64_clock_monotonic_t timestamp_end;\n"
		     "\t\tuint64_t content_size;\n"
		     "\t\tuint64_t packet_size;\n"
		     "\t\tuint64_t packet_seq_num;\n"
		     "\t\tuint64_t events_discarded;\n"
		     "\t\tuint32_t cpu_id;\n"
		     "\t} align(8);\n"
		     "};\n\n");

	for (size_t i = 0; i < t->n_events; i++)
		put_event(b, &t->events[i], nat);
}

int ctf_metadata_build(const struct ctf_trace_desc *t, char **ret_text, size_t *ret_len)
{
	struct ctf_buf b;
	int r = ctf_metadata_validate(t);
	if (r < 0)
		return r;
	ctf_buf_init(&b);
	generate(&b, t);
	if (b.err) {
		r = b.err;
		ctf_buf_free(&b);
		return r;
	}
	*ret_text = b.data;
	if (ret_len)
		*ret_len = b.len;
	return 0;
}

int ctf_metadata_write(FILE *f, const struct ctf_trace_desc *t)
{
	char *text = NULL;
	size_t len = 0;
	int r = ctf_metadata_build(t, &text, &len);
	if (r < 0)
		return r;
	r = fwrite(text, 1, len, f) == len && fflush(f) == 0 ? 0 : -EIO;
	free(text);
	return r;
}
