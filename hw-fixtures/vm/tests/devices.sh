#!/bin/bash
# The VM tier's devices test (#28), run as root in the guest by scripts/test-vm.sh with the release .deb installed:
#   1. the package's udev rules applied by the real udevd: the RTC rule gives the group dosetap write access to the
#      RTC's wakealarm (a member can arm it, tester cannot); the vibra rule leaves a motor of no known vibra driver
#      (the uinput one) untagged (its tagging side needs a gpio-vibrator/drv260x motor: none exists on qemu's pc);
#   2. the uinput FF_RUMBLE motor found by the agent, and `dosetap feedback preview` at the three intensities
#      seen on the motor's side (before any suspend; wake.sh does it again after one).
set -euo pipefail
cd /opt/payload
source /opt/payload/lib.sh

start_as_shipped
motor=$(cat /run/vm-test-motor)

# 1. udev.
for rule in 70-dosetap-vibra 71-dosetap-beeper 71-dosetap-hid-buttons 72-dosetap-rtc-wakealarm; do
  [[ -f /usr/lib/udev/rules.d/$rule.rules ]] || fail "the package did not install $rule.rules"
done
getent group dosetap > /dev/null || groupadd --system dosetap
udevadm trigger --action=add --subsystem-match=rtc
udevadm settle
rtc=/sys/class/rtc/rtc0/wakealarm
[[ $(stat -L -c '%G %a' "$rtc") == "dosetap 664" ]] || fail "the RTC rule: $rtc is $(stat -L -c '%U:%G %a' "$rtc")"
gid=$(getent group dosetap | cut -d: -f3)
setpriv --reuid=1000 --regid=1000 --groups="$gid" sh -c "echo 0 > $rtc" || fail "a member of dosetap cannot write $rtc"
if setpriv --reuid=1000 --regid=1000 --clear-groups sh -c "echo 0 > $rtc" 2>/dev/null; then
  fail "a user outside dosetap can write $rtc"
fi
ok "the RTC rule (real udevd): $rtc is group dosetap, 0664; a member can arm it, others cannot"
props=$(udevadm info --query=property --name="$motor") || fail "udevadm info $motor: $props"
grep -q '^ID_INPUT=1$' <<<"$props" || fail "udevd has not processed $motor: $props"
vibra=$(grep '^DOSETAP_VIBRA=' <<<"$props" || true)
[[ -z $vibra ]] || fail "the vibra rule tagged the uinput motor (no vibra driver): $vibra"
ok "the vibra rule (real udevd) leaves $motor, driven by no known vibra driver, untagged"

# 2. The motor, as the agent and the CLI find it.
preview_intensities "before a suspend"
