#!/usr/bin/env bash
# Makes what the VM and arm64 tiers of `make test` keep in ~/.cache/dosetap (scripts/vm.sh, scripts/cross-arm64.sh)
# ahead of them: the cross toolchain, the amd64 and arm64 guest images (not booted: their first boot is the tier's),
# the arm64 cross build and Debian swiftlang's compile of every target. scripts/run-tests.sh starts it beside the
# tests at the lowest CPU priority (SCHED_IDLE): it only takes what the tests leave idle — their waits on the real
# clock, the single-threaded end of a release build, a VM suspended — and each tier, when it comes, finds its
# piece made, or waits for it (the scripts take a lock for each), never makes it twice. On a machine whose caches
# are warm it finds everything made at once; a piece that fails here is left to its tier, which makes it again
# and says why in its own place.
#
# usage: scripts/warm-caches.sh   (prints a line for each piece: its time and exit status; their output in
#        ~/.cache/dosetap/warm-caches.log)
set -uo pipefail
cd "$(dirname "$0")/.."

# Each piece's own output goes to $log (beside the caches): a piece that failed here says its last lines.
cache_root=${DOSETAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dosetap}
mkdir -p "$cache_root"
log=$cache_root/warm-caches.log
: >"$log"
piece() {
  local name=$1 start=$SECONDS status=0
  shift
  echo "== $name ($*): $(date -u +%T)" >>"$log"
  "$@" >>"$log" 2>&1 || status=$?
  echo "warm-caches: $name: exit $status, $((SECONDS - start)) s"
  ((status == 0)) || tail -n 5 "$log" | sed 's/^/warm-caches:   /'
}

start=$SECONDS
# In the order the tiers need them, the arm64 guest image (10 minutes of emulated dpkg) as early as it can be.
piece "the cross toolchain" scripts/cross-arm64.sh setup
piece "the amd64 guest image" scripts/vm.sh image --unbooted
piece "the arm64 guest image" env VM_ARCH=arm64 scripts/vm.sh image --unbooted
piece "the arm64 build" scripts/cross-arm64.sh build
piece "every target with Debian's swiftlang" scripts/cross-arm64.sh compile-all
echo "warm-caches: done in $((SECONDS - start)) s"
