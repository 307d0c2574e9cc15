# The tool side's analyses of a trace (src/analyze/): the one replay of
# allocation events that the report and the converters consume. In the
# core archive, unit-tested (tests/unit/test_replay.c); nothing to install.
TOOL_SRC += $(wildcard src/analyze/*.c)
