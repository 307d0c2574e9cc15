/*
 * test_startup.c - which loaded objects ld.so loaded at start-up
 * (src/unwind/startup.c), the set whose unwind tables are registered
 * without pinning: in this process every object listed before any dlopen
 * is in it, and an object dlopen'ed after is not (were it taken for a
 * start-up object, its tables would outlive its dlclose); on made-up
 * lists: preloads, aliases that cannot be resolved (the prefix stops
 * before them), a list not led by the program, an incomplete list. And
 * the protection kept: an object dlopen'ed before rt_unwind_init() stays
 * loaded after its dlclose.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/startup.h"
#include "unwind/unwind.h"

static int add_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	rt_objlist_add(arg, info);
	return 0;
}

/* This process's objects, as rt_unwind_init() lists them. */
static void list_objects(struct rt_objlist *l)
{
	memset(l, 0, sizeof(*l));
	dl_iterate_phdr(add_cb, l);
	l->max = l->n + 16;
	l->obj = calloc((size_t)l->max, sizeof(*l->obj));
	l->text_size += 4096;
	l->text = malloc(l->text_size);
	assert_non_null(l->obj);
	assert_non_null(l->text);
	l->n = 0;
	dl_iterate_phdr(add_cb, l);
	assert_false(l->incomplete);
}

static void free_list(struct rt_objlist *l)
{
	free(l->obj);
	free(l->text);
}

static void plugin_path(char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(len > 0);
	self[len] = '\0';
	*strrchr(self, '/') = '\0';
	snprintf(buf, size, "%s/sym/libfx_plugin.so", self);
}

static void test_this_process(void **state)
{
	(void)state;
	struct rt_objlist a;
	list_objects(&a);
	/* Nothing was dlopen'ed yet: every object is a start-up one. */
	assert_true(a.n > 2);
	assert_int_equal(rt_objlist_startup(&a), a.n);
	assert_string_equal(rt_objlist_name(&a, 0), "");

	char plugin[PATH_MAX + 32];
	plugin_path(plugin, sizeof(plugin));
	void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	struct rt_objlist b;
	list_objects(&b);
	int k = -1;
	for (int i = 0; i < b.n; i++)
		if (!strcmp(rt_objlist_name(&b, i), plugin))
			k = i;
	assert_true(k >= 0);
	/* The plugin may be unloaded: never in the start-up set. */
	assert_int_equal(rt_objlist_startup(&b), a.n);
	assert_true(k >= rt_objlist_startup(&b));
	dlclose(h);
	free_list(&a);
	free_list(&b);
}

/* ---- made-up lists -------------------------------------------------------------- */

struct fake {
	struct rt_objlist l;
	struct rt_obj obj[16];
	char text[1024];
};

static uint32_t put(struct fake *f, const char *s)
{
	uint32_t off = (uint32_t)f->l.text_used;
	size_t n = strlen(s) + 1;
	assert_true(off + n <= sizeof(f->text));
	memcpy(f->text + off, s, n);
	f->l.text_used += n;
	return off;
}

/* Object NAME with SONAME (or NULL), then its DT_NEEDED names, NULL-ended. */
static void obj(struct fake *f, const char *name, const char *soname, ...)
{
	struct rt_obj *o = &f->obj[f->l.n++];
	o->name = put(f, name);
	o->soname = soname ? put(f, soname) : RT_OBJ_NONE;
	o->needed = RT_OBJ_NONE;
	o->nneeded = 0;
	va_list ap;
	va_start(ap, soname);
	for (const char *n; (n = va_arg(ap, const char *));)
		if (o->nneeded++ == 0)
			o->needed = put(f, n);
		else
			put(f, n);
	va_end(ap);
}

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->l.obj = f->obj;
	f->l.max = 16;
	f->l.text = f->text;
	f->l.text_size = sizeof(f->text);
}

static void test_made_up(void **state)
{
	(void)state;
	struct fake f;
	/* The usual shape: program, vDSO, two preloads, the program's
	 * libraries, the preloads' libraries, ld.so; then two dlopen'ed. */
	fake_init(&f);
	obj(&f, "", NULL, "liba.so", "libc.so.6", NULL);
	obj(&f, "linux-vdso.so.1", "linux-vdso.so.1", NULL);
	obj(&f, "/p/libpre.so", NULL, "libpredep.so.2", "libc.so.6", NULL);
	obj(&f, "/p/libpre2.so", NULL, NULL);
	obj(&f, "/x/liba.so", "liba.so", "libb.so", NULL);
	obj(&f, "/lib/libc.so.6", "libc.so.6", "ld-linux-x86-64.so.2", NULL);
	obj(&f, "/x/libpredep.so.2.0", "libpredep.so.2", NULL);
	obj(&f, "/x/libb.so", NULL, NULL);
	obj(&f, "/lib64/ld-linux-x86-64.so.2", "ld-linux-x86-64.so.2", NULL);
	obj(&f, "/plug/one.so", NULL, "libc.so.6", NULL);
	obj(&f, "/plug/two.so", "two.so", NULL);
	assert_int_equal(rt_objlist_startup(&f.l), 9);

	/* A library the program needs under an alias that none of the
	 * objects bears: the set stops at the last object reached. */
	fake_init(&f);
	obj(&f, "", NULL, "liba.so", "libalias.so", NULL);
	obj(&f, "/x/liba.so", "liba.so", NULL);
	obj(&f, "/x/libreal.so.3", "libreal.so.3", NULL);
	obj(&f, "/plug/one.so", NULL, NULL);
	assert_int_equal(rt_objlist_startup(&f.l), 2);

	/* A name with a slash is a path, matched whole. */
	fake_init(&f);
	obj(&f, "", NULL, "/opt/lib/libq.so", NULL);
	obj(&f, "/plug/libq.so", NULL, NULL);
	obj(&f, "/opt/lib/libq.so", NULL, NULL);
	assert_int_equal(rt_objlist_startup(&f.l), 3);

	/* Not led by the program, or incomplete: nothing is known. */
	fake_init(&f);
	obj(&f, "/x/liba.so", "liba.so", NULL);
	obj(&f, "", NULL, "liba.so", NULL);
	assert_int_equal(rt_objlist_startup(&f.l), 0);
	fake_init(&f);
	obj(&f, "", NULL, "liba.so", NULL);
	obj(&f, "/x/liba.so", "liba.so", NULL);
	f.l.incomplete = 1;
	assert_int_equal(rt_objlist_startup(&f.l), 0);

	/* A program that needs nothing resolvable: itself only. */
	fake_init(&f);
	obj(&f, "", NULL, "libnone.so", NULL);
	obj(&f, "/x/liba.so", "liba.so", NULL);
	assert_int_equal(rt_objlist_startup(&f.l), 1);
}

/* Runs after test_this_process (which leaves the plugin unloaded), and
 * is this process's first rt_unwind_init(). */
static void test_pinned(void **state)
{
	(void)state;
	char plugin[PATH_MAX + 32];
	plugin_path(plugin, sizeof(plugin));
	assert_null(dlopen(plugin, RTLD_LAZY | RTLD_NOLOAD));
	void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	if (rt_unwind_init() != 0) {
		dlclose(h);
		skip();          /* no libunwind: no tables registered */
	}
	struct rt_unwind_info info;
	assert_int_equal(rt_unwind_get_info(&info), 0);
	assert_true(info.tables > 2);
	dlclose(h);
	/* Its unwind table is registered: it must still be there. */
	void *again = dlopen(plugin, RTLD_LAZY | RTLD_NOLOAD);
	assert_non_null(again);
	dlclose(again);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_this_process),
		cmocka_unit_test(test_made_up),
		cmocka_unit_test(test_pinned),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
