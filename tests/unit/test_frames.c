/*
 * test_frames.c - the tracer's frames trimmed from a stack
 * (src/analyze/frames.c): which objects are the tracer's, and where the
 * program's part of a stack starts, on a symboliser holding objects that
 * do not exist on disk (their addresses still resolve to the object).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "analyze/frames.h"
#include "stackmap/stack_files.h"
#include "sym/symbolize.h"

/* Three objects: the tracer, the C++ runtime, the program. */
#define OWN 0x10000u
#define RUNTIME 0x20000u
#define PROG 0x30000u

static struct sym_ctx *ctx_three(void)
{
	struct sym_ctx *ctx;
	assert_int_equal(sym_ctx_new(NULL, &ctx), 0);
	/* Missing files: kept, resolved to the object and offset. */
	assert_int_equal(sym_add_mapping(ctx, "/nonexistent/lib/libringtrace-malloc.so", NULL, 0, OWN, OWN + 0x1000),
			 -ENOENT);
	assert_int_equal(sym_add_mapping(ctx, "/nonexistent/lib/libstdc++.so.6", NULL, 0, RUNTIME,
					 RUNTIME + 0x1000), -ENOENT);
	assert_int_equal(sym_add_mapping(ctx, "/nonexistent/bin/prog", NULL, 0, PROG, PROG + 0x1000), -ENOENT);
	return ctx;
}

static void test_tracer_object(void **state)
{
	(void)state;
	assert_true(frames_tracer_object("/usr/lib/libringtrace-malloc.so"));
	assert_true(frames_tracer_object("libringtrace-malloc.so.0.1"));
	assert_false(frames_tracer_object("/usr/lib/libringtrace.so"));
	assert_false(frames_tracer_object("/opt/libringtrace-malloc.so/prog"));
	assert_false(frames_tracer_object("/usr/lib/x-libringtrace-malloc.so"));
	assert_false(frames_tracer_object(NULL));
}

static void test_first(void **state)
{
	(void)state;
	struct sym_ctx *ctx = ctx_three();
	/* Return addresses: the call is at ip - 1, so OWN + 0x1000 (the
	 * end of the tracer's range) is still its frame, and OWN is not. */
	assert_true(frames_tracer_frame(ctx, OWN + 0x1000));
	assert_false(frames_tracer_frame(ctx, OWN));
	assert_false(frames_tracer_frame(ctx, 0));
	assert_false(frames_tracer_frame(NULL, OWN + 8));

	/* The wrapper, then the program. */
	uint64_t plain[] = { OWN + 8, OWN + 16, PROG + 8, PROG + 16 };
	assert_int_equal(frames_first(ctx, plain, 4), 2);
	/* operator new: ours, the runtime's, ours, then the program. */
	uint64_t cxx[] = { OWN + 8, RUNTIME + 8, OWN + 16, PROG + 8, PROG + 16 };
	assert_int_equal(frames_first(ctx, cxx, 5), 3);
	/* No frame of the tracer: nothing trimmed. */
	uint64_t none[] = { PROG + 8, RUNTIME + 8 };
	assert_int_equal(frames_first(ctx, none, 2), 0);
	/* Only the tracer's: the last frame stays. */
	uint64_t all[] = { OWN + 8, OWN + 16, OWN + 24 };
	assert_int_equal(frames_first(ctx, all, 3), 2);
	assert_int_equal(frames_first(ctx, all, 0), 0);
	/* A frame of ours deeper than FRAMES_OWN_MAX is the program's
	 * business (a callback through the tracer): not looked at. */
	uint64_t deep[FRAMES_OWN_MAX + 2];
	for (size_t i = 0; i < FRAMES_OWN_MAX + 2; i++)
		deep[i] = PROG + 8 * (i + 1);
	deep[1] = OWN + 8;
	deep[FRAMES_OWN_MAX] = OWN + 16;
	assert_int_equal(frames_first(ctx, deep, FRAMES_OWN_MAX + 2), 2);
	/* Addresses no object holds are not the tracer's. */
	uint64_t unknown[] = { 0x99999, OWN + 8, 0 };
	assert_int_equal(frames_first(ctx, unknown, 3), 2);
	/* Without a symboliser nothing is trimmed. */
	assert_int_equal(frames_first(NULL, plain, 4), 0);
	sym_ctx_free(ctx);
}

static void test_symbolizer(void **state)
{
	(void)state;
	struct stack_files sf = { 0 };
	assert_null(frames_symbolizer(&sf, NULL));
	struct rt_map maps[2] = { 0 };
	snprintf(maps[0].path, sizeof(maps[0].path), "/nonexistent/lib/libringtrace-malloc.so");
	maps[0].start = OWN;
	maps[0].end = OWN + 0x1000;
	/* No code range: left out. */
	snprintf(maps[1].path, sizeof(maps[1].path), "/nonexistent/bin/prog");
	maps[1].start = maps[1].end = PROG;
	sf.maps = maps;
	sf.nmaps = 2;
	struct sym_ctx *ctx = frames_symbolizer(&sf, NULL);
	assert_non_null(ctx);
	assert_true(frames_tracer_frame(ctx, OWN + 8));
	struct sym_result r;
	assert_int_equal(sym_resolve(ctx, PROG, &r), -ENOENT);
	sym_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracer_object),
		cmocka_unit_test(test_first),
		cmocka_unit_test(test_symbolizer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
