# tests/e2e/sec_follow.sh: pgrep finds the recorder under timeout (procps);
# a second user is made with useradd (passwd) and runs a program through
# runuser (util-linux).
DEB_PKGS += procps passwd util-linux
