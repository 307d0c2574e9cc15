# `ringtrace convert --to pprof` (src/cli/convert_pprof.c) writes pprof
# profiles with the writer in src/export/, gzip-compressed with zlib.
# Its end-to-end test (tests/e2e/pprof.sh) reads them back with Debian's
# pprof, which the test builds from source once into the build directory
# (Go from golang-go, pprof's source from golang-github-google-pprof-dev;
# nothing is downloaded).
TOOL_SRC  += $(wildcard src/export/*.c)
TOOL_LIBS += -lz
DEB_PKGS  += zlib1g-dev golang-go golang-github-google-pprof-dev
