#!/bin/bash
# The arm64 guest's test (#31; the vibra rule's tagging side for #28), run as root in a Debian trixie arm64 guest
# (qemu virt, cortex-a72, TCG) by `scripts/test-vm.sh --arch arm64` with the cross-built .deb installed by dpkg -i:
#   1. the package: installed for arm64 with its computed Depends met by trixie's libraries, `dosetap --version`;
#   2. the vibra rule applied by the real udevd to a motor of a known vibra driver: the kernel's gpio-vibra bound to
#      a gpio-vibrator on the PL061 GPIO (hw-fixtures/vm/arm64/vibrator.dtsi, the device tree a Pi's overlay makes)
#      is tagged DOSETAP_VIBRA=1 and uaccess;
#   3. the agent as its user starts it (systemctl --user enable --now dosetap, linger): ready, and the motor it
#      chose is that one, "tagged DOSETAP_VIBRA";
#   4. `dosetap feedback preview` at light, medium and strong drives the motor's GPIO line: 1, 2 and 3 pulses, each
#      the line set and cleared by the driver (the gpio_value tracepoint). gpio-vibra is on/off: the intensity's
#      magnitude shows only on the uinput motor of the amd64 guest (devices.sh).
set -euo pipefail
cd /opt/payload
source /opt/payload/lib.sh

# 1. The package.
[[ $(dpkg --print-architecture) == arm64 ]] || fail "not an arm64 guest: $(dpkg --print-architecture)"
status=$(dpkg-query -W -f='${Status} ${Architecture}' dosetap) || fail "dosetap is not installed"
[[ $status == "install ok installed arm64" ]] || fail "dpkg says: $status"
version=$(as_tester dosetap --version) || fail "dosetap --version: $version"
ok "dpkg -i installed the arm64 package (Depends: $(dpkg-query -W -f='${Depends}' dosetap)); $version"

# 2. The vibra rule on a gpio-vibrator.
driver=/sys/bus/platform/drivers/gpio-vibrator
until_true 30 compgen -G "$driver/*vibrator*" > /dev/null \
  || fail "gpio-vibra did not bind the device tree's motor: $(ls "$driver" 2>&1); $(dmesg | grep -i vibra | tail -3)"
motor=''
for event in /sys/class/input/event*; do
  [[ $(cat "$event/device/name" 2>/dev/null) == gpio-vibrator ]] && motor=/dev/input/${event##*/}
done
[[ -n $motor ]] || fail "no input device of gpio-vibra's: $(grep -H . /sys/class/input/event*/device/name)"
udevadm settle
props=$(udevadm info --query=property --name="$motor") || fail "udevadm info $motor: $props"
grep -q '^DOSETAP_VIBRA=1$' <<<"$props" || fail "the vibra rule did not tag $motor (driver gpio-vibrator): $props"
grep -q '^CURRENT_TAGS=.*:uaccess:' <<<"$props" || fail "the vibra rule did not give $motor uaccess: $props"
ok "the vibra rule (real udevd) tags $motor, driven by gpio-vibrator: DOSETAP_VIBRA=1, uaccess"

# 3. The agent.
start_as_shipped
until_true 30 said "vibration motor: $motor, \"gpio-vibrator\", driver gpio-vibrator, .*tagged DOSETAP_VIBRA" \
  || fail "the agent did not choose $motor: $(agent_log | grep 'vibration motor' || echo 'no vibration motor line')"
ok "the agent is ready and chose $(agent_log | grep -o 'vibration motor: .*' | tail -1)"

# 4. Its line, driven by feedback preview at each intensity.
tracing=/sys/kernel/tracing
[[ -d $tracing/events/gpio ]] || mount -t tracefs nodev "$tracing" || fail "cannot mount tracefs"
gpio=$(sed -n 's/^ *gpio-\([0-9]*\) *(.*|enable *) *out.*/\1/p' /sys/kernel/debug/gpio 2>/dev/null | sed -n 1p || true)
if [[ -z $gpio ]]; then
  mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
  gpio=$(sed -n 's/^ *gpio-\([0-9]*\) *(.*|enable *) *out.*/\1/p' /sys/kernel/debug/gpio | sed -n 1p)
fi
[[ -n $gpio ]] || fail "the motor's enable line is not in /sys/kernel/debug/gpio: $(cat /sys/kernel/debug/gpio)"
echo 1 > "$tracing/events/gpio/gpio_value/enable"
for intensity in light medium strong; do
  case $intensity in light) pulses=1 ;; medium) pulses=2 ;; strong) pulses=3 ;; esac
  as_tester dosetap feedback set --haptics on --intensity "$intensity" > /dev/null || fail "feedback set --intensity $intensity"
  echo > "$tracing/trace"
  out=$(as_tester env DOSETAP_AUDIO_DEVICE=null dosetap feedback preview dose-recorded 2>&1) \
    || fail "feedback preview dose-recorded ($intensity): $out"
  # "gpio_value: 517 set 1": the driver setting our line; the pulses are its rises to 1.
  values=$(grep -oE "gpio_value: $gpio set [01]" "$tracing/trace" | awk '{print $4}' | tr -d '\n')
  rises=$(grep -o '01' <<<"0$values" | wc -l)
  ((rises == pulses)) && [[ $values == *0 ]] \
    || fail "feedback preview at $intensity: the line went $values (expected $pulses pulses, ending low); the CLI said: $out"
  ok "feedback preview at $intensity: gpio $gpio set $(sed 's/./&, /g; s/, $//' <<<"$values"): $rises pulse(s), ending low ($(tail -1 <<<"$out"))"
done
echo 0 > "$tracing/events/gpio/gpio_value/enable"
