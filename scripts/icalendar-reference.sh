#!/usr/bin/env bash
# Sets up the iCalendar parser (the icalendar Python package, pinned) that the `dosetap export ics` tests
# check the calendar with (Tests/DoseTapCLITests/ExportCLITests.swift). Creates .venv-ical/ in the
# repository root with `python3 -m venv`, installs hw-fixtures/ical/requirements.txt into it, and prints
# the venv's python path on stdout (and nothing else). Idempotent: a venv that already holds exactly these
# requirements is left alone (no network needed then).
#
#   scripts/icalendar-reference.sh            # set up (or check) and print the python path
#   PYTHON=/usr/bin/python3 scripts/icalendar-reference.sh   # choose the interpreter (>= 3.9)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv="$root/.venv-ical"
requirements="$root/hw-fixtures/ical/requirements.txt"
python=${PYTHON:-python3}
stamp="$venv/.dosetap-requirements"

log() { echo "icalendar-reference: $*" >&2; }

[[ -f $requirements ]] || { log "missing $requirements"; exit 1; }
wanted=$(grep -v '^[[:space:]]*#' "$requirements" | sed '/^[[:space:]]*$/d')

if [[ -x $venv/bin/python && -f $stamp ]] && [[ "$(cat "$stamp")" == "$wanted" ]] \
   && "$venv/bin/python" -c 'import icalendar' 2>/dev/null; then
  echo "$venv/bin/python"
  exit 0
fi

command -v "$python" >/dev/null || { log "$python not found; set PYTHON=/path/to/python3"; exit 1; }
"$python" -c 'import venv, ensurepip' 2>/dev/null || {
  log "$python cannot create virtual environments: install python3-venv (apt-get install python3-venv)"; exit 1; }

rm -rf "$venv"
log "creating $venv with $("$python" --version 2>&1)"
# Once more if it fails: a fresh-clone run saw ensurepip fail once, and pass at the next try.
"$python" -m venv "$venv" || { log "creating $venv failed; trying once more"; rm -rf "$venv"; "$python" -m venv "$venv"; }
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements" >&2
"$venv/bin/python" -c 'import icalendar' || { log "icalendar does not import after install"; exit 1; }
printf '%s\n' "$wanted" > "$stamp"
log "ready: icalendar $("$venv/bin/python" -c 'import icalendar; print(icalendar.__version__)')"
echo "$venv/bin/python"
