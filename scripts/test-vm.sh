#!/usr/bin/env bash
# The real-machine tier of make test (#28): the release .deb installed with dpkg in a Debian bookworm guest under
# qemu (scripts/vm.sh: TCG, -machine pc, cached image), used as shipped by a lingering user, and the guest really
# suspended and woken. Each test is a guest script in hw-fixtures/vm/tests/ run as root; the host watches the
# guest over QMP.
#
#   scripts/test-vm.sh [--deb FILE] [TEST...]     TEST: wake, dose (default: both); one test: scripts/test-vm.sh dose
#
# wake: dpkg -i enables the wake helper's socket; systemctl --user enable --now dosetap; an alarm 2 minutes out
#       (alarm add says nothing about sleeping through); logind suspends the guest; the agent arms the wake-up
#       through the helper; QMP shows the guest "suspended", then "running" again without the host waking it; the
#       alarm rings within a second of its minute, its notification on the session bus; alarm stop ends it.
# dose: Dose 1 taken 163 minutes ago (the guest's clock set back for it); logind suspends the guest; it wakes by
#       itself for the Dose 2 reminder, shown within a second of its time; Dose 2 taken ends the reminders.
set -euo pipefail
cd "$(dirname "$0")/.."
deb=dist/dosetap_$(tr -d ' \n' < VERSION)_amd64.deb
tests=()
while (($#)); do
  case $1 in
    --deb) deb=$2; shift 2 ;;
    -*) echo "test-vm: unknown option $1" >&2; exit 64 ;;
    *) tests+=("$1"); shift ;;
  esac
done
((${#tests[@]})) || tests=(wake dose)
[[ -f $deb ]] || { echo "test-vm: no package at $deb (make deb)" >&2; exit 1; }

scripts/vm.sh image >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/dosetap-test-vm.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
for test in "${tests[@]}"; do
  script=hw-fixtures/vm/tests/$test.sh
  [[ -f $script ]] || { echo "test-vm: no test $script" >&2; exit 64; }
  qmp=$work/$test.qmp
  start=$SECONDS
  scripts/vm.sh run --deb "$deb" --payload hw-fixtures/vm/tests --qmp "$qmp" --timeout 900 -v -- bash "/opt/payload/$test.sh" \
    > "$work/$test.out" 2>&1 &
  vm=$!
  # The host's view: the guest suspended, then running again by itself (nobody here sends system_wakeup).
  suspended=no resumed=no
  if [[ $test == wake || $test == dose ]]; then
    for _ in $(seq 600); do [[ -S $qmp ]] && break; kill -0 "$vm" 2>/dev/null || break; sleep 0.1; done
    if scripts/vm.sh wait-status "$qmp" suspended 600 > /dev/null 2>&1; then
      suspended=yes
      at=$SECONDS
      scripts/vm.sh wait-status "$qmp" running 300 > /dev/null 2>&1 && resumed=yes
      slept=$((SECONDS - at))
    fi
  fi
  rc=0
  wait "$vm" || rc=$?
  cat "$work/$test.out"
  if [[ ($test == wake || $test == dose) && ($suspended != yes || $resumed != yes) ]]; then
    echo "test-vm: FAIL: $test: QMP saw suspended=$suspended, running again=$resumed"
    rc=1
  elif [[ $test == wake || $test == dose ]]; then
    echo "test-vm: ok: the host saw the guest suspended for ${slept} s and running again without a system_wakeup"
  fi
  if ((rc == 0)); then echo "test-vm: ok: $test ($((SECONDS - start)) s)"; else echo "test-vm: FAIL: $test (exit $rc, $((SECONDS - start)) s)"; failed=1; fi
done
exit $failed
