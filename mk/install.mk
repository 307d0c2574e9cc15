# Installation: `make install` and `make uninstall`, with PREFIX and DESTDIR
# (packagers stage into DESTDIR; the paths compiled in and written into
# ringtrace.pc are those without it). Read by the Makefile with the other
# fragments, before LIBSO, CLI and MEMLIB's rule are known: every path the
# rules need is spelled from $(O), and the recipes expand them late.
#
#   make install PREFIX=/usr/local           the command, the libraries, the
#   make install DESTDIR=/tmp/stage PREFIX=/usr   headers, ringtrace.pc, the
#   make uninstall PREFIX=...                man pages, the completion, docs
#
# The command finds libringtrace-malloc.so (record --mem, mem) next to
# itself, in ../lib, and in LIBDIR (compiled in: RINGTRACE_LIBDIR), so a
# LIBDIR other than PREFIX/lib works too.

BINDIR      ?= $(PREFIX)/bin
LIBDIR      ?= $(PREFIX)/lib
INCLUDEDIR  ?= $(PREFIX)/include
DATADIR     ?= $(PREFIX)/share
MANDIR      ?= $(DATADIR)/man
DOCDIR      ?= $(DATADIR)/doc/ringtrace
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR  ?= $(DATADIR)/zsh/site-functions

# The man pages are mdoc, read as they are by man-db and mandoc: no build
# step. `mandoc -T lint` checks them (tests/e2e/man.sh); man-db's `man -l`
# reads the installed ones (tests/e2e/install.sh); bash-completion loads
# the completion there.
DEB_PKGS += mandoc man-db bash-completion

MAN1 := $(wildcard docs/man/*.1)
MAN3 := $(wildcard docs/man/*.3)
DOCS := README.md $(wildcard docs/*.md)

# The preload library's directory, compiled into the command. A stamp that
# changes only with LIBDIR's value rebuilds the one object that uses it
# when LIBDIR changes (`make install LIBDIR=...` after a plain `make`).
LIBDIR_STAMP := $(O)/libdir.stamp
$(LIBDIR_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(LIBDIR)' | cmp -s - $@ || echo '$(LIBDIR)' > $@
$(O)/obj/src/cli/cmd_record.o: $(LIBDIR_STAMP)
$(O)/obj/src/cli/cmd_record.o: CPPFLAGS += -DRINGTRACE_LIBDIR='"$(LIBDIR)"'
.PHONY: FORCE
FORCE:

# Page links: every name in a page's NAME section gets a link to it, so that
# `man ringtrace-ps` opens the page that describes ps with its neighbours.
MAN_NAMES = awk '/^\.Sh /{n = ($$2 == "NAME")} n && /^\.Nm /{print $$2}'

.PHONY: install uninstall install-check
# A prefix the user may not write into stops here, with the reason, before
# anything is copied: the prefix is made (install would make it anyway) and
# must then be a directory the user may write into.
install-check:
	@d='$(DESTDIR)$(PREFIX)'; \
	if ! err=$$(mkdir -p "$$d" 2>&1) || { [ ! -w "$$d" ] && err=": Permission denied"; }; then \
	    echo "make install: cannot write into '$$d'$${err:+ ($${err##*: })}: run as a user who may, or choose another PREFIX or DESTDIR" >&2; \
	    exit 1; \
	fi

install: install-check all
	install -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(LIBDIR)/pkgconfig' '$(DESTDIR)$(INCLUDEDIR)/ringtrace' \
	    '$(DESTDIR)$(MANDIR)/man1' '$(DESTDIR)$(MANDIR)/man3' '$(DESTDIR)$(DOCDIR)' \
	    '$(DESTDIR)$(BASHCOMPDIR)' '$(DESTDIR)$(ZSHCOMPDIR)'
	install -m 755 $(O)/bin/ringtrace '$(DESTDIR)$(BINDIR)/ringtrace'
	install -m 755 $(O)/lib/libringtrace.so '$(DESTDIR)$(LIBDIR)/libringtrace.so.$(VERSION)'
	ln -sfn libringtrace.so.$(VERSION) '$(DESTDIR)$(LIBDIR)/libringtrace.so.0'
	ln -sfn libringtrace.so.0 '$(DESTDIR)$(LIBDIR)/libringtrace.so'
	install -m 755 $(O)/lib/libringtrace-malloc.so '$(DESTDIR)$(LIBDIR)/libringtrace-malloc.so'
	install -m 644 include/ringtrace/*.h '$(DESTDIR)$(INCLUDEDIR)/ringtrace/'
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	    -e 's|@VERSION@|$(VERSION)|g' ringtrace.pc.in > '$(DESTDIR)$(LIBDIR)/pkgconfig/ringtrace.pc'
	chmod 644 '$(DESTDIR)$(LIBDIR)/pkgconfig/ringtrace.pc'
	install -m 644 $(MAN1) '$(DESTDIR)$(MANDIR)/man1/'
	install -m 644 $(MAN3) '$(DESTDIR)$(MANDIR)/man3/'
	@set -e; for p in $(MAN1) $(MAN3); do b=$$(basename $$p); s=$${b##*.}; \
	    for n in $$($(MAN_NAMES) $$p); do \
	        [ "$$n.$$s" = "$$b" ] || ln -sfn "$$b" '$(DESTDIR)$(MANDIR)/man'"$$s/$$n.$$s"; \
	    done; done
	install -m 644 scripts/completion/ringtrace.bash '$(DESTDIR)$(BASHCOMPDIR)/ringtrace'
	install -m 644 scripts/completion/_ringtrace '$(DESTDIR)$(ZSHCOMPDIR)/_ringtrace'
	install -m 644 $(DOCS) '$(DESTDIR)$(DOCDIR)/'

# Removes what install wrote, and the directories that are left empty
# (never a directory that holds something else).
uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/ringtrace' \
	    '$(DESTDIR)$(LIBDIR)/libringtrace.so.$(VERSION)' '$(DESTDIR)$(LIBDIR)/libringtrace.so.0' \
	    '$(DESTDIR)$(LIBDIR)/libringtrace.so' '$(DESTDIR)$(LIBDIR)/libringtrace-malloc.so' \
	    '$(DESTDIR)$(LIBDIR)/pkgconfig/ringtrace.pc' \
	    $(foreach h,$(notdir $(wildcard include/ringtrace/*.h)),'$(DESTDIR)$(INCLUDEDIR)/ringtrace/$(h)') \
	    '$(DESTDIR)$(BASHCOMPDIR)/ringtrace' '$(DESTDIR)$(ZSHCOMPDIR)/_ringtrace' \
	    $(foreach d,$(notdir $(DOCS)),'$(DESTDIR)$(DOCDIR)/$(d)')
	@set -e; for p in $(MAN1) $(MAN3); do b=$$(basename $$p); s=$${b##*.}; \
	    for n in $$($(MAN_NAMES) $$p) $${b%.*}; do rm -f '$(DESTDIR)$(MANDIR)/man'"$$s/$$n.$$s"; done; done
	-rmdir '$(DESTDIR)$(INCLUDEDIR)/ringtrace' '$(DESTDIR)$(DOCDIR)' 2>/dev/null
