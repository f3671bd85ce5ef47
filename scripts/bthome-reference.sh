#!/usr/bin/env bash
# Sets up the reference BTHome parser (the bthome-ble Python package, pinned) that the differential
# tests in Tests/DoseTapButtonTests compare our parser with. Creates .venv-bthome/ in the repository
# root with `python3 -m venv`, installs hw-fixtures/bthome/reference-requirements.txt into it, and
# prints the venv's python path on stdout (and nothing else). Idempotent: a venv that already holds
# exactly these requirements is left alone (no network needed then).
#
#   scripts/bthome-reference.sh            # set up (or check) and print the python path
#   PYTHON=/usr/bin/python3 scripts/bthome-reference.sh   # choose the interpreter (>= 3.11, < 3.14)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv="$root/.venv-bthome"
requirements="$root/hw-fixtures/bthome/reference-requirements.txt"
python=${PYTHON:-python3}
stamp="$venv/.dosetap-requirements"

log() { echo "bthome-reference: $*" >&2; }

[[ -f $requirements ]] || { log "missing $requirements"; exit 1; }
wanted=$(grep -v '^[[:space:]]*#' "$requirements" | sed '/^[[:space:]]*$/d')

if [[ -x $venv/bin/python && -f $stamp ]] && [[ "$(cat "$stamp")" == "$wanted" ]] \
   && "$venv/bin/python" -c 'import bthome_ble.parser' 2>/dev/null; then
  echo "$venv/bin/python"
  exit 0
fi

command -v "$python" >/dev/null || { log "$python not found; set PYTHON=/path/to/python3 (3.11 to 3.13)"; exit 1; }
"$python" - <<'PY' || { log "bthome-ble 3.25 needs Python 3.11 to 3.13 (set PYTHON=...)"; exit 1; }
import sys
sys.exit(0 if (3, 11) <= sys.version_info[:2] < (3, 14) else 1)
PY
"$python" -c 'import venv, ensurepip' 2>/dev/null || {
  log "$python cannot create virtual environments: install python3-venv (apt-get install python3-venv)"; exit 1; }

rm -rf "$venv"
log "creating $venv with $("$python" --version 2>&1)"
# Once more if it fails: a fresh-clone run saw ensurepip fail once, and pass at the next try.
"$python" -m venv "$venv" || { log "creating $venv failed; trying once more"; rm -rf "$venv"; "$python" -m venv "$venv"; }
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --upgrade pip >&2 || true
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements" >&2
"$venv/bin/python" -c 'import bthome_ble.parser' || { log "bthome_ble does not import after install"; exit 1; }
printf '%s\n' "$wanted" > "$stamp"
log "ready: bthome-ble $("$venv/bin/python" -c 'from importlib.metadata import version; print(version("bthome-ble"))')"
echo "$venv/bin/python"
