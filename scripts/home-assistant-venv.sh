#!/usr/bin/env bash
# A real Home Assistant Core for the tests (#27): the newest release this machine's Pythons can run, in a
# venv of its own, installed with the pin list Home Assistant ships inside its wheel
# (homeassistant/package_constraints.txt) — the versions HA itself is tested with. Prints the venv's path.
#
# The venv is cached outside the checkout (DOSETAP_HA_VENV, default ~/.cache/dosetap/home-assistant-VERSION)
# and made again when the pinned version changes. It is installed with uv (which HA itself pins and uses
# for its own installs): about 40 s cold here, where pip took 2 min 10 s.
set -euo pipefail

HA_VERSION=2025.4.4   # the last release that runs on Python 3.13.0 (2025.5 wants 3.13.2 or newer)
PAHO_VERSION=2.1.0    # homeassistant/components/mqtt/manifest.json of that release

# Python 3.13: pyenv's (this machine kind's), else one on PATH.
python=""
for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3.13 "$(command -v python3.13 || true)"; do
  [[ -n $candidate && -x $candidate ]] && { python=$candidate; break; }
done
[[ -n $python ]] || { echo "home-assistant-venv: Python 3.13 is missing (pyenv install 3.13, or Debian's python3.13)" >&2; exit 1; }

venv=${DOSETAP_HA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dosetap/home-assistant-$HA_VERSION}
stamp="$venv/.dosetap-stamp"
want="homeassistant==$HA_VERSION paho-mqtt==$PAHO_VERSION python=$("$python" -c 'import sys; print(sys.version.split()[0])')"
if [[ -f $stamp && $(cat "$stamp") == "$want" && -x $venv/bin/hass ]]; then
  echo "$venv"
  exit 0
fi

rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$venv" >&2
# The wheel alone first: its pin list constrains everything after.
"$venv/bin/pip" download -q --no-deps "homeassistant==$HA_VERSION" -d "$work" >&2
wheel=$(ls "$work"/homeassistant-"$HA_VERSION"-*.whl)
"$venv/bin/python" - "$wheel" "$work/constraints.txt" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    open(sys.argv[2], "wb").write(wheel.read("homeassistant/package_constraints.txt"))
EOF
"$venv/bin/pip" install -q -c "$work/constraints.txt" uv >&2
# The core, the MQTT integration's one requirement, the frontend (HA starts in recovery mode without it),
# and pytest for the test file.
"$venv/bin/uv" pip install -q --python "$venv/bin/python" -c "$work/constraints.txt" \
  "$wheel" "paho-mqtt==$PAHO_VERSION" home-assistant-frontend pytest >&2
echo "$want" > "$stamp"
echo "$venv"
