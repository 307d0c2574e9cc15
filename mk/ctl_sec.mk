# The test of root's commands against other users' control blocks
# (tests/e2e/sec_ctl.sh) watches every open and mapping with strace, and
# runs programs as a user it creates (useradd from passwd, setpriv from
# util-linux).
DEB_PKGS += strace passwd util-linux
