#!/usr/bin/env bash
# Runs every test: unit, property, store, CLI end-to-end, and the hardware-fixture tests under
# umockdev. A missing fixture tool is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in umockdev-wrapper umockdev-run faketime sqlite3 python3; do
  command -v "$tool" >/dev/null || { echo "run-tests: $tool is missing (scripts/install-deps.sh test installs it)" >&2; exit 1; }
done

swift build --build-tests
export DOSETAP_BIN="$PWD/.build/debug/dosetap"
# umockdev-wrapper preloads libumockdev-preload, so the fixture tests can build testbeds in-process.
umockdev-wrapper swift test --skip-build --disable-xctest "$@"

# The dose log under SIGKILL, briefly (scripts/crash-safety.sh 300 is the full run, see docs/performance.md).
if [[ $# -eq 0 ]]; then
  scripts/crash-safety.sh 40
fi
