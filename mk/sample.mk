# Sampled allocation traces (docs/mem.md, "Sampling"): the replay
# (src/analyze/replay.c) weighs each sample by 1 / (1 - exp(-size/mean)),
# with libm's expm1.
TOOL_LIBS += -lm
