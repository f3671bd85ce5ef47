#!/usr/bin/env bash
# Sets up Schemathesis (pinned), the property-based tester that scripts/api-schema-tests.sh runs against the
# dashboard's OpenAPI document. Creates .venv-schemathesis/ in the repository root with `python3 -m venv`,
# installs hw-fixtures/api/requirements.txt into it, and prints the venv's python path on stdout (and nothing
# else). Idempotent: a venv that already holds exactly these requirements is left alone (no network needed then).
#
#   scripts/schemathesis-reference.sh            # set up (or check) and print the python path
#   PYTHON=/usr/bin/python3 scripts/schemathesis-reference.sh   # choose the interpreter (>= 3.10)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv="$root/.venv-schemathesis"
requirements="$root/hw-fixtures/api/requirements.txt"
python=${PYTHON:-python3}
stamp="$venv/.dosetap-requirements"

log() { echo "schemathesis-reference: $*" >&2; }

[[ -f $requirements ]] || { log "missing $requirements"; exit 1; }
wanted=$(grep -v '^[[:space:]]*#' "$requirements" | sed '/^[[:space:]]*$/d')
version=$(sed -n 's/^schemathesis==//p' "$requirements")
[[ -n $version ]] || { log "$requirements pins no schemathesis"; exit 1; }
works() { [[ "$("$venv/bin/python" -m schemathesis.cli --version 2>/dev/null)" == *" $version" ]]; }

if [[ -x $venv/bin/python && -f $stamp ]] && [[ "$(cat "$stamp")" == "$wanted" ]] && works; then
  echo "$venv/bin/python"
  exit 0
fi

command -v "$python" >/dev/null || { log "$python not found; set PYTHON=/path/to/python3"; exit 1; }
"$python" -c 'import venv, ensurepip' 2>/dev/null || {
  log "$python cannot create virtual environments: install python3-venv (apt-get install python3-venv)"; exit 1; }

rm -rf "$venv"
log "creating $venv with $("$python" --version 2>&1)"
# Once more if it fails: a fresh-clone run saw ensurepip fail once (icalendar-reference.sh), and pass at the next try.
"$python" -m venv "$venv" || { log "creating $venv failed; trying once more"; rm -rf "$venv"; "$python" -m venv "$venv"; }
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements" >&2
works || { log "schemathesis $version does not run after install"; exit 1; }
printf '%s\n' "$wanted" > "$stamp"
log "ready: $("$venv/bin/python" -m schemathesis.cli --version)"
echo "$venv/bin/python"
