#!/usr/bin/env bash
# The dashboard's API against its own OpenAPI document (#51): Schemathesis (pinned, hw-fixtures/api/requirements.txt,
# in .venv-schemathesis made by scripts/schemathesis-reference.sh) on the real agent, paired as a person pairs
# (Tests/API/api_schema.py; Schemathesis's settings in hw-fixtures/api/schemathesis.toml). A missing agent or a
# Schemathesis that cannot be installed fails the run: nothing here is skipped.
#
#   scripts/api-schema-tests.sh                         # .build/debug/dosetap, or DOSETAP_BIN
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DOSETAP_BIN:-$PWD/.build/debug/dosetap}
[[ -x $bin ]] || { echo "api-schema-tests: no dosetap binary at $bin (swift build, or set DOSETAP_BIN)" >&2; exit 1; }
python=$(scripts/schemathesis-reference.sh) || { echo "api-schema-tests: Schemathesis could not be set up" >&2; exit 1; }
DOSETAP_BIN=$bin exec "$python" Tests/API/api_schema.py
