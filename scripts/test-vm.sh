#!/usr/bin/env bash
# The real-machine tier of make test (#28): the release .deb installed with dpkg in a Debian bookworm guest under
# qemu (scripts/vm.sh: TCG, -machine pc, cached image), used as shipped by a lingering user, and the guest really
# suspended and woken. Each test is a guest script in hw-fixtures/vm/tests/ run as root; tests joined with a comma
# run one after the other in one boot (a boot costs 25-75 s). The host follows each run's output and acts on what
# the guest asks of it over QMP (hw-fixtures/vm/vmhost.py watch): "self-wake" (the guest must be seen suspended,
# then running again with no system_wakeup sent), "wake-at" (it must stay suspended until then; the host wakes it) or
# "self-wake-jump" (as self-wake, the guest's RTC moved ahead while it sleeps, to a moment hours later).
#
#   scripts/test-vm.sh [--arch amd64|arm64] [--deb FILE] [TESTS...]
#       TESTS: e.g. dose, or devices,wake (default: devices,wake,dose and missed,guard,purge: two boots; with --arch arm64,
#       pi: one boot of a trixie arm64 guest, qemu virt, with dist/dosetap_VERSION_arm64.deb)
#
# wake:    dpkg -i enables the wake helper's socket; systemctl --user enable --now dosetap; an alarm 2 minutes out
#          (alarm add says nothing about sleeping through); logind suspends the guest; the agent arms the wake-up
#          through the helper; the guest wakes by itself; the alarm rings within a second of its minute, its
#          notification on the session bus and its vibration on a uinput FF_RUMBLE motor; alarm stop ends it;
#          before the sleep the agent re-checked the alarm against the battery, and read it again after.
# devices: the udev rules applied by the real udevd (the RTC rule grants the dosetap group the wake alarm; the
#          vibra rule leaves a motor of no known driver untagged); feedback preview at light, medium and strong
#          uploads and plays the effects the uinput motor sees, before and after a suspend; an alarm ringing at
#          medium on the same motor; dosetap battery reads the guest's ACPI battery (hw-fixtures/vm/amd64).
# dose:    Dose 1 taken 163 minutes ago; logind suspends the guest; it wakes by itself for the Dose 2 reminder,
#          shown within a second of its time; Dose 2 taken ends the reminders.
# missed:  the wake helper stopped: alarm add and the agent (before the suspend) say the machine may sleep through;
#          two alarms 11 minutes apart; suspended across the first, the guest stays asleep until the host wakes it
#          40 s after, its RTC moved 11 minutes ahead meanwhile (--host-clock): the first, missed by over 10
#          minutes, is recorded and announced, never rung; the second, missed by 40 s, rings at once.
# guard:   the sleep guard (#52) as shipped: tester logged in on tty1 (agetty --autologin, set up at run time), so
#          polkit lets the agent (in tester's user manager, in no session) suspend: CanSuspend "challenge" before,
#          "yes" after; tty1 untouched for 40 minutes (its access time set back): logind says every session idle; an
#          alarm about 5.5 hours out whose deadline (the battery static at 40 %) is 30 s away; at the deadline the nudge
#          again, "Going to sleep to keep the HH:MM alarm: battery 40 %" shown, and logind suspends the guest (the test
#          never asks); the host moves its RTC ahead to 45 s before the alarm (--host-clock) and the guest wakes by
#          itself; the alarm rings within a second of its minute; alarm stop ends it; tester logs out.
# purge:   systemd-analyze security --user dosetap at or below its exposure; apt purge leaves nothing behind.
# pi:      (arm64) the cross-built package installs with its computed Depends and runs; the vibra rule tags a
#          gpio-vibrator motor (a real vibra driver, in the guest's device tree); the agent starts as shipped and
#          chooses that motor; feedback preview at the three intensities pulses its GPIO line 1, 2 and 3 times.
set -euo pipefail
cd "$(dirname "$0")/.."
deb=''
arch=amd64
runs=()
while (($#)); do
  case $1 in
    --deb) deb=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    -*) echo "test-vm: unknown option $1" >&2; exit 64 ;;
    *) runs+=("$1"); shift ;;
  esac
done
case $arch in
  # A laptop's battery in the guest's ACPI tables (qemu's pc has none): the kernel's own acpi battery driver reads it.
  amd64) ((${#runs[@]})) || runs=("devices,wake,dose" "missed,guard,purge"); export VM_ACPI_EXTRA=$PWD/hw-fixtures/vm/amd64/battery.asl ;;
  # The Raspberry Pi's package (#31) on a trixie arm64 guest (qemu virt), with a gpio-vibrator motor in its tree.
  arm64) ((${#runs[@]})) || runs=(pi); export VM_DT_EXTRA=$PWD/hw-fixtures/vm/arm64/vibrator.dtsi ;;
  *) echo "test-vm: --arch is amd64 or arm64" >&2; exit 64 ;;
esac
export VM_ARCH=$arch
[[ -n $deb ]] || deb=dist/dosetap_$(tr -d ' \n' < VERSION)_$arch.deb
[[ -f $deb ]] || { echo "test-vm: no package at $deb (make deb)" >&2; exit 1; }
for run in "${runs[@]}"; do
  IFS=, read -ra tests <<<"$run"
  for test in "${tests[@]}"; do
    [[ -f hw-fixtures/vm/tests/$test.sh ]] || { echo "test-vm: no test hw-fixtures/vm/tests/$test.sh" >&2; exit 64; }
  done
done

scripts/vm.sh image >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/dosetap-test-vm.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
for run in "${runs[@]}"; do
  IFS=, read -ra tests <<<"$run"
  name=${run//,/-}
  qmp=$work/$name.qmp
  out=$work/$name.out
  start=$SECONDS
  command="set -e"
  for test in "${tests[@]}"; do command+="; echo 'vm-test: --- $test'; bash /opt/payload/$test.sh"; done
  # The missed and guard tests move the guest's RTC ahead while it sleeps (vm.sh --host-clock: qemu under
  # libfaketime, "+0" until then); the other boots run qemu as it is.
  run_clock=() watch_clock=()
  if [[ ,$run, == *,missed,* || ,$run, == *,guard,* ]]; then
    echo "+0" > "$work/$name.clock"
    run_clock=(--host-clock "$work/$name.clock") watch_clock=("$work/$name.clock")
  fi
  scripts/vm.sh run --deb "$deb" --payload hw-fixtures/vm/tests --qmp "$qmp" "${run_clock[@]}" \
    --timeout 1500 -v -- bash -c "$command" > "$out" 2>&1 &
  vm=$!
  python3 hw-fixtures/vm/vmhost.py watch "$out" "$qmp" 1600 "${watch_clock[@]}" > "$work/$name.watch" 2>&1 &
  watcher=$!
  rc=0
  wait "$vm" || rc=$?
  # The watcher exits at the run's last line; one still waiting for the guest has nothing more to see.
  for _ in $(seq 50); do kill -0 "$watcher" 2>/dev/null || break; sleep 0.2; done
  kill "$watcher" 2>/dev/null || true
  watched=0
  wait "$watcher" || watched=$?
  cat "$out" "$work/$name.watch"
  [[ -s $out ]] || echo "test-vm: $name: scripts/vm.sh run exited $rc and said nothing"
  if ((watched != 0)); then
    echo "test-vm: FAIL: $name: the host's view (above) failed (exit $watched)"
    rc=1
  fi
  requested=$(grep -c '^vm-host: ' "$out" || true)
  seen=$(grep -c '^watch: ok: ' "$work/$name.watch" || true)
  if ((rc == 0 && requested != seen)); then
    echo "test-vm: FAIL: $name: the guest asked the host $requested time(s), the host confirmed $seen"
    rc=1
  fi
  if ((rc == 0)); then echo "test-vm: ok: $name ($((SECONDS - start)) s)"; else echo "test-vm: FAIL: $name (exit $rc, $((SECONDS - start)) s)"; failed=1; fi
done
exit $failed
