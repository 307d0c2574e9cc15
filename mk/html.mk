# The HTML report (`ringtrace report DIR --html -o FILE.html`,
# src/cli/report_html.c) needs nothing to build. Its end-to-end test
# (tests/e2e/report_html.sh) opens the page in a headless Chromium to
# check that it renders and that its script runs without errors.
DEB_PKGS += chromium
