#!/usr/bin/env bash
# DoseTap with the real programs that read it (#27), each a test file in Tests/RealClients/:
#   home-assistant   Home Assistant Core from PyPI (scripts/home-assistant-venv.sh) over a real mosquitto
#   status-bars      Debian's waybar on a headless sway, and i3blocks with i3 under Xvfb
# Usage: scripts/real-clients-tests.sh [home-assistant|status-bars ...] [-- pytest arguments]
# (none: all). Needs DOSETAP_BIN (the binary under test); run-tests.sh sets it. Nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DOSETAP_BIN:?set DOSETAP_BIN to the dosetap binary under test}"
export DOSETAP_BIN

tiers=()
while [[ $# -gt 0 && $1 != -- ]]; do tiers+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
[[ ${#tiers[@]} -gt 0 ]] || tiers=(home-assistant status-bars)

for tier in "${tiers[@]}"; do
  start=$SECONDS
  # One venv for every tier: Home Assistant's, which also has pytest and Pillow (the bars' screenshots).
  venv=$(scripts/home-assistant-venv.sh)
  echo "real-clients: venv ready ($((SECONDS - start)) s): $venv"
  case $tier in
    home-assistant)
      "$venv/bin/python" -m pytest -p no:cacheprovider -W ignore::DeprecationWarning -q Tests/RealClients/test_home_assistant.py "$@"
      ;;
    status-bars)
      for tool in sway waybar grim i3 i3blocks Xvfb scrot tesseract faketime setpriv; do
        command -v "$tool" >/dev/null || { echo "real-clients: $tool is missing (scripts/install-deps.sh test installs it)" >&2; exit 1; }
      done
      "$venv/bin/python" -m pytest -p no:cacheprovider -W ignore::DeprecationWarning -q \
        Tests/RealClients/test_waybar.py Tests/RealClients/test_i3blocks.py "$@"
      ;;
    *) echo "real-clients-tests: no tier $tier (home-assistant, status-bars)" >&2; exit 2 ;;
  esac
  echo "real-clients: $tier took $((SECONDS - start)) s"
done
