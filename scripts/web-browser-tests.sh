#!/usr/bin/env bash
# The dashboard in a real browser (Tests/Web): Debian's chromium and chromium-driver (scripts/install-deps.sh
# test), Selenium, axe-selenium-python, pytest and zxing-cpp (the QR check) from PyPI in .venv-web.
# The mock BlueZ of the button test is Debian's dbus-daemon and python3-dbusmock (with python3-dbus), run by
# /usr/bin/python3 as the Swift fixture tests run it (scripts/install-deps.sh test): nothing more from PyPI.
# Needs DOSETAP_BIN (the built binary). A skipped test is a failure when CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DOSETAP_BIN:?DOSETAP_BIN must name the dosetap binary}"
for tool in /usr/bin/chromium /usr/bin/chromedriver /usr/bin/dbus-daemon; do
  [[ -x $tool ]] || { echo "web-browser-tests: $tool is missing (scripts/install-deps.sh test installs it)" >&2; exit 1; }
done
/usr/bin/python3 -c 'import dbusmock, dbus' 2>/dev/null \
  || { echo "web-browser-tests: python3-dbusmock is missing (scripts/install-deps.sh test installs it)" >&2; exit 1; }
venv=.venv-web
# Pinned to what installs on Debian 12's python3 (3.11): axe-selenium-python 3 and numpy 2.5 need 3.12.
requirements=(selenium==4.51.0 axe-selenium-python==2.1.6 pytest==9.2.0 zxing-cpp==3.1.1 numpy==2.4.6)
if [[ ! -x $venv/bin/python ]] || ! $venv/bin/python -c 'import selenium, axe_selenium_python, pytest, zxingcpp, numpy' 2>/dev/null; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${requirements[@]}"
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
"$venv/bin/python" -m pytest -q -rs -p no:cacheprovider Tests/Web 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
set -e
(( status == 0 )) || exit "$status"
if [[ ${CI:-} == true ]] && grep -Eq '[0-9]+ skipped' "$out"; then
  echo "web-browser-tests: a test was skipped, and CI must not skip" >&2
  exit 1
fi
