# The tool side's analyses of a trace (src/analyze/): the one replay of
# allocation events that the report and the converters consume, the
# trimming of the tracer's frames from its stacks, UTF-8 checks. In the
# core archive, unit-tested (tests/unit/test_replay.c, test_frames.c,
# test_utf8.c); nothing to install.
TOOL_SRC += $(wildcard src/analyze/*.c)
