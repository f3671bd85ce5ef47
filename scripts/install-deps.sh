#!/usr/bin/env bash
# Installs the Debian packages DoseTap builds, runs and tests with, when they are missing.
# Non-interactive; does nothing when everything is already installed.
#   scripts/install-deps.sh run    # what `make run` needs
#   scripts/install-deps.sh test   # what `make test` needs (adds the fixture tools)
#   scripts/install-deps.sh bench  # what `make bench` needs (adds upower, the idle benchmark's yardstick, wrk and hyperfine)
set -euo pipefail

run_packages=(pkg-config libudev-dev libsqlite3-dev libdbus-1-dev linux-libc-dev libmosquitto-dev libasound2-dev)
test_packages=(umockdev libumockdev-dev libglib2.0-dev faketime sqlite3 python3 dbus-daemon dbus-bin python3-dbusmock sox libsox-fmt-all alsa-utils sound-theme-freedesktop python3-venv util-linux mosquitto chromium chromium-driver dpkg-dev fakeroot lintian binutils gdb systemd sway waybar grim i3 i3blocks xvfb scrot tesseract-ocr tesseract-ocr-eng fonts-noto-color-emoji fonts-dejavu-core)

# The VM tier's and the arm64 tier's host tools (scripts/vm.sh, scripts/cross-arm64.sh): those scripts install
# them too when run alone, but in `make test` they are all installed here, in one apt-get run before anything
# starts, so no later step (nor the cache warming that runs beside the tests, scripts/warm-caches.sh) waits on
# apt's lock or pays for another `apt-get update`.
tier_packages=(qemu-system-x86 qemu-system-arm qemu-utils qemu-user-static debootstrap e2fsprogs rsync
  binutils-aarch64-linux-gnu file acpica-tools cpio device-tree-compiler libfaketime)

packages=("${run_packages[@]}")
if [[ "${1:-run}" == test || "${1:-run}" == bench ]]; then
  packages+=("${test_packages[@]}" "${tier_packages[@]}")
fi
if [[ "${1:-run}" == bench ]]; then
  # wrk: Benchmarks/web-latency.sh (the dashboard under load); hyperfine: cli-latency.sh, dose-latency.sh and
  # oneshot-vs-sqlite.sh (with /usr/bin/time, package time).
  # Not for `make test`: no test runs them.
  packages+=(upower wrk hyperfine time)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "Installing Debian packages: ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
