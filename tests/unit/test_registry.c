/*
 * test_registry.c - event registration per object section: ids, sharing
 * between objects, refusal of conflicting definitions with a message naming
 * both, reference counting on unload, the registry log in the region,
 * selection by patterns, and which events carry the stack suffix in a
 * region with stacks.
 *
 * The registry is process-wide state, so the tests run in order and use
 * distinct event names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include <ringtrace/ringtrace-api.h>

#include "lib/registry.h"
#include "ringbuf/rb.h"
#include "stackmap/stackmap.h"

#define DESC(p, n, sig) { 0, 0, RINGTRACE_ABI_VERSION, __LINE__, p, n, sig, "test_registry.c", 0, 0, 0 }

static char last_msg[1024];
static int nmsg;

static void on_log(int level, const char *msg)
{
	(void)level;
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
	nmsg++;
}

/* Two "objects" declaring the same event, one declaring another. */
static struct ringtrace_event_desc a_req = DESC("app", "request", "u32 id;string path");
static struct ringtrace_event_desc a_tick = DESC("app", "tick", "");
static struct ringtrace_event_desc b_req = DESC("app", "request", "u32 id;string path");
static struct ringtrace_event_desc c_req = DESC("app", "request", "u64 id;string path");
static struct ringtrace_event_desc c_other = DESC("lib", "other", "f64 x");
static struct ringtrace_event_desc bad_abi = { 0, 0, 999, 1, "app", "future", "u8 x", "f.c", 0, 0, 0 };

static struct ringtrace_event_desc *const obj_a[] = { &a_req, &a_tick };
static struct ringtrace_event_desc *const obj_b[] = { &b_req };
static struct ringtrace_event_desc *const obj_c[] = { &c_req, &c_other, &bad_abi };

static void test_ids_and_sharing(void **state)
{
	(void)state;
	ringtrace_set_log_callback(on_log);
	ringtrace__register_section(obj_a, obj_a + 2);
	ringtrace__register_section(obj_a, obj_a + 2); /* second TU of the same object */
	ringtrace__register_section(obj_b, obj_b + 1);
	assert_true(a_req.id >= 2);
	assert_int_equal(a_tick.id, a_req.id + 1);
	assert_int_equal(b_req.id, a_req.id); /* same name, same fields: one id */
	assert_int_equal(a_req.enabled, 0);   /* not recording */
	assert_int_equal(nmsg, 0);
}

static void test_conflict_refused(void **state)
{
	(void)state;
	ringtrace__register_section(obj_c, obj_c + 3);
	assert_int_equal(c_req.id, 0); /* refused */
	assert_true(c_other.id > a_tick.id);
	assert_int_equal(bad_abi.id, 0);
	assert_int_equal(nmsg, 2);
	/* The conflict message names both definitions. */
	ringtrace__unregister_section(obj_c, obj_c + 3);
	nmsg = 0;
	ringtrace__register_section(obj_c, obj_c + 2);
	assert_int_equal(nmsg, 1);
	assert_non_null(strstr(last_msg, "app:request"));
	assert_non_null(strstr(last_msg, "u64 id;string path"));
	assert_non_null(strstr(last_msg, "u32 id;string path"));
	char line_c[32], line_a[32];
	snprintf(line_c, sizeof(line_c), "test_registry.c:%u", c_req.line);
	snprintf(line_a, sizeof(line_a), "test_registry.c:%u", a_req.line);
	assert_non_null(strstr(last_msg, line_c));
	assert_non_null(strstr(last_msg, line_a));
}

struct logent {
	uint32_t kind, id;
	const char *s[4];
};

static size_t read_log(const struct ringtrace__shm_header *h, struct logent *out, size_t max)
{
	const char *base = (const char *)h + h->reg_off;
	size_t n = 0;
	for (uint64_t pos = 0; pos < h->reg_used && n < max;) {
		uint32_t w[4];
		memcpy(w, base + pos, 16);
		assert_true(w[0] >= 16 && (w[0] & 7) == 0);
		out[n].kind = w[1];
		out[n].id = w[2];
		const char *s = base + pos + 16;
		for (int i = 0; i < 4; i++) {
			out[n].s[i] = s;
			s += strlen(s) + 1;
		}
		n++;
		pos += w[0];
	}
	return n;
}

static void test_attach_publishes_and_selects(void **state)
{
	(void)state;
	struct rb_params p = { 0 };
	p.ncpus = 2;
	p.sb_size = 4096;
	p.nsb = 2;
	p.reg_size = 8192;
	strcpy(p.patterns, "app:req*"); /* one pattern, NUL-terminated list */
	uint64_t size;
	assert_int_equal(rb_region_size(&p, &size), 0);
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_int_equal(rb_region_init(mem, size, &p), 0);
	struct ringtrace__rb *rb;
	assert_int_equal(rb_view_open(mem, size, &rb), 0);
	/* What the library does when started by `ringtrace record`. */
	reg_select_patterns(rb->hdr->patterns, sizeof(rb->hdr->patterns));
	reg_attach(rb);
	assert_null(ringtrace__rb_current); /* attached, not yet on */
	assert_int_equal(a_req.enabled, 0);
	reg_tracing(1);
	assert_ptr_equal(ringtrace__rb_current, rb);
	assert_int_equal(a_req.enabled, 1);
	assert_int_equal(b_req.enabled, 1);
	assert_int_equal(a_tick.enabled, 0); /* not selected */
	assert_int_equal(c_other.enabled, 0);
	assert_int_equal(c_req.enabled, 0);  /* refused */

	struct logent e[16];
	size_t n = read_log(rb->hdr, e, 16);
	assert_true(n >= 4);
	assert_int_equal(e[0].kind, 1);
	assert_int_equal(e[0].id, RINGTRACE__ID_THREAD);
	assert_string_equal(e[0].s[2], "u32 tid");
	int found = 0, msgs = 0;
	for (size_t i = 1; i < n; i++) {
		if (e[i].kind == 1 && e[i].id == a_req.id) {
			assert_string_equal(e[i].s[0], "app");
			assert_string_equal(e[i].s[1], "request");
			assert_string_equal(e[i].s[2], "u32 id;string path");
			found++;
		}
		if (e[i].kind == 2)
			msgs++;
	}
	assert_int_equal(found, 1);
	assert_true(msgs >= 1); /* messages from before the attach are kept */

	/* An object loaded while recording: logged and enabled at once. */
	static struct ringtrace_event_desc late = DESC("app", "request_late", "u8 x");
	static struct ringtrace_event_desc *const obj_late[] = { &late };
	ringtrace__register_section(obj_late, obj_late + 1);
	assert_int_equal(late.enabled, 1);
	n = read_log(rb->hdr, e, 16);
	assert_int_equal(e[n - 1].id, late.id);

	/* Unloading the last user of a section disables its descriptors. */
	ringtrace__unregister_section(obj_a, obj_a + 2);
	assert_int_equal(a_req.enabled, 1); /* one reference left */
	ringtrace__unregister_section(obj_a, obj_a + 2);
	assert_int_equal(a_req.enabled, 0);
	assert_int_equal(b_req.enabled, 1); /* the other object still has it */

	/* Live control: rules apply in order, to events present and later. */
	assert_int_equal(reg_rule("*:request", 0), 1); /* app:request (c:request was refused) */
	assert_int_equal(b_req.enabled, 0);
	assert_int_equal(late.enabled, 1);
	assert_int_equal(reg_rule("app:*", 1), 3);
	assert_int_equal(b_req.enabled, 1);
	assert_int_equal(a_tick.enabled, 0); /* its object is unloaded */
	assert_int_equal(reg_rule("nobody:*", 1), 0);
	/* The global switch: every descriptor off, selection kept. */
	reg_tracing(0);
	assert_null(ringtrace__rb_current);
	assert_int_equal(b_req.enabled, 0);
	assert_int_equal(late.enabled, 0);
	reg_tracing(1);
	assert_int_equal(b_req.enabled, 1);
	assert_int_equal(c_other.enabled, 0); /* lib:other still not selected */

	/* Reloading keeps the id. */
	uint32_t id = b_req.id;
	ringtrace__register_section(obj_a, obj_a + 2);
	assert_int_equal(a_req.id, id);

	reg_detach_after_fork();
	assert_null(ringtrace__rb_current);
	assert_int_equal(b_req.enabled, 0);
	rb_view_free(rb);
	munmap(mem, size);
}

/* How often the region's log names event `id`; *sig its last signature. */
static size_t logged_sig(struct ringtrace__rb *rb, uint32_t id, const char **sig)
{
	struct logent e[32];
	size_t n = read_log(rb->hdr, e, 32), found = 0;
	for (size_t i = 0; i < n; i++)
		if (e[i].kind == 1 && e[i].id == id) {
			*sig = e[i].s[2];
			found++;
		}
	return found;
}

/* A new region (with stacks or not), the registry attached to it. */
static struct ringtrace__rb *attach_region(int stacks, void **mem, uint64_t *size)
{
	struct rb_params p = { 0 };
	p.ncpus = 2;
	p.sb_size = 4096;
	p.nsb = 2;
	p.reg_size = 8192;
	p.stacks = (uint32_t)stacks;
	p.stack_bits = stacks ? STACKMAP_BITS_MIN : 0;
	strcpy(p.patterns, "s:*");
	assert_int_equal(rb_region_size(&p, size), 0);
	*mem = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_int_equal(rb_region_init(*mem, *size, &p), 0);
	struct ringtrace__rb *rb;
	assert_int_equal(rb_view_open(*mem, *size, &rb), 0);
	reg_select_patterns(rb->hdr->patterns, sizeof(rb->hdr->patterns));
	reg_attach(rb);
	return rb;
}

/* In a region with stacks: plain logged with the suffix and marked so,
 * nostack logged bare and left to capture none. */
static void expect_stack_region_sigs(struct ringtrace__rb *rb, const struct ringtrace_event_desc *plain,
				     const struct ringtrace_event_desc *nostack)
{
	const char *sig = NULL;
	assert_int_equal(logged_sig(rb, plain->id, &sig), 1);
	assert_string_equal(sig, "u32 x;u32 stack_id;x64 stack[u8]");
	assert_int_equal(plain->flags, RINGTRACE__EVF_SUFFIX);
	assert_int_equal(logged_sig(rb, nostack->id, &sig), 1);
	assert_string_equal(sig, "u64 p");
	assert_int_equal(nostack->flags, RINGTRACE__EVF_NO_STACK);
}

/*
 * A region where every event carries a stack: events get the suffix in
 * their logged signature and RINGTRACE__EVF_SUFFIX (which keeps them off
 * the inline path), except those that capture no stack (NO_STACK): bare,
 * in that region and every later one. SUFFIX, once set, stays (a probe
 * may still write into the older region). The inline path may run in
 * such a region (fast_any), never for objects of ABI 3 (fast).
 */
static void test_stack_region_bare_events(void **state)
{
	(void)state;
	static struct ringtrace_event_desc plain = DESC("s", "plain", "u32 x");
	static struct ringtrace_event_desc nostack = DESC("s", "nostack", "u64 p");
	static struct ringtrace_event_desc *const obj[] = { &plain, &nostack };
	nostack.flags = RINGTRACE__EVF_NO_STACK;
	ringtrace__register_section(obj, obj + 2);
	assert_true(plain.id && nostack.id);
	assert_int_equal(plain.flags, 0); /* no region yet */

	void *mem;
	uint64_t size;
	struct ringtrace__rb *rb = attach_region(1, &mem, &size);
	expect_stack_region_sigs(rb, &plain, &nostack);
	rb_set_rseq(rb, 1);
	assert_int_equal(rb->fast_any, 1);
	assert_int_equal(rb->fast, 0);

	/* A second definition of the bare event captures no stack either. */
	static struct ringtrace_event_desc nostack2 = DESC("s", "nostack", "u64 p");
	static struct ringtrace_event_desc *const obj2[] = { &nostack2 };
	ringtrace__register_section(obj2, obj2 + 1);
	assert_int_equal(nostack2.id, nostack.id);
	assert_int_equal(nostack2.flags, RINGTRACE__EVF_NO_STACK);

	/* A region without stacks: plain signatures; SUFFIX stays. */
	void *mem2;
	uint64_t size2;
	struct ringtrace__rb *rb2 = attach_region(0, &mem2, &size2);
	const char *sig = NULL;
	assert_int_equal(logged_sig(rb2, plain.id, &sig), 1);
	assert_string_equal(sig, "u32 x");
	assert_int_equal(plain.flags, RINGTRACE__EVF_SUFFIX);

	/* With stacks again: the same decisions. */
	void *mem3;
	uint64_t size3;
	struct ringtrace__rb *rb3 = attach_region(1, &mem3, &size3);
	expect_stack_region_sigs(rb3, &plain, &nostack);

	reg_detach_after_fork();
	rb_view_free(rb);
	rb_view_free(rb2);
	rb_view_free(rb3);
	munmap(mem, size);
	munmap(mem2, size2);
	munmap(mem3, size3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids_and_sharing),
		cmocka_unit_test(test_conflict_refused),
		cmocka_unit_test(test_attach_publishes_and_selects),
		cmocka_unit_test(test_stack_region_bare_events),
	};
	return cmocka_run_group_tests_name("registry", tests, NULL, NULL);
}
