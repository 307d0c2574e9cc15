# `ringtrace convert --to sqlite` (src/cli/convert_sqlite.c) writes the
# database with Debian's libsqlite3; the sqlite3 shell is for looking at
# it (docs/convert.md) and python3's sqlite3 module checks it
# (tests/e2e/convert_sqlite.sh).
TOOL_LIBS += -lsqlite3
DEB_PKGS  += libsqlite3-dev sqlite3
