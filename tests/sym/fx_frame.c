/*
 * fx_frame.c - built twice, with FX_FRAME_WORDS 40 and 80, into
 * libfx_frame_a.so and libfx_frame_b.so: the same code at the same
 * offsets (the frame's size takes 32 bits in both), frames of different
 * sizes, no frame pointer. tests/unit/test_unwind.c
 * loads one, captures through it, unloads it and loads the other, which
 * the loader maps at the same address: a row the capture cached for the
 * first object must not serve the second.
 */
typedef int (*fx_frame_cb)(void *);

int fx_frame_call(fx_frame_cb cb, void *arg);

int fx_frame_call(fx_frame_cb cb, void *arg)
{
	/* Its address given away: the whole array is in the frame. */
	unsigned long buf[FX_FRAME_WORDS];
	buf[0] = 0;
	__asm__ volatile("" : : "r"(buf) : "memory");
	int r = cb(arg);
	__asm__ volatile("" : : "r"(buf) : "memory");
	return r + (int)buf[0];
}
