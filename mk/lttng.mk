# A real LTTng-UST trace for tests/e2e/lttng.sh: the test compiles
# tests/e2e/lttng/lttng_prog.c with gcc against LTTng-UST's headers and
# library (liblttng-ust-dev) and records it with lttng-tools (lttng,
# lttng-sessiond), then compares `ringtrace dump` with babeltrace2.
DEB_PKGS += lttng-tools liblttng-ust-dev
