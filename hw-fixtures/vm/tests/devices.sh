#!/bin/bash
# The VM tier's devices test (#28), run as root in the guest by scripts/test-vm.sh with the release .deb installed:
#   1. the package's udev rules applied by the real udevd: the RTC rule gives the group dosetap write access to the
#      RTC's wakealarm (a member can arm it, tester cannot); the vibra rule leaves a motor of no known vibra driver
#      (the uinput one) untagged (its tagging side needs a gpio-vibrator/drv260x motor: none exists on qemu's pc);
#   2. the uinput FF_RUMBLE motor found by the agent, and `dosetap feedback preview` at the three intensities
#      seen on the motor's side (before any suspend; wake.sh does it again after one);
#   3. a ringing alarm at medium on the same motor (wake.sh rings one at strong, missed.sh one at light).
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

# The laptop battery of the guest's ACPI tables (hw-fixtures/vm/amd64/battery.asl), as the kernel's acpi battery
# driver shows it and DoseTap reads it through udev: 21.6 of 54 Wh, discharging at 7 W, unplugged.
battery=$(as_tester dosetap battery --json) || fail "dosetap battery --json: $battery"
jq -e '.system.present and .system.level == 40 and .system.status == "discharging" and .system.onAC == false
  and .system.rateW == 7' <<<"$battery" > /dev/null \
  || fail "dosetap battery does not read the ACPI battery (40 %, discharging): $battery"
ok "dosetap battery reads the kernel's ACPI battery: $(jq -c .system <<<"$battery" | cut -c1-200)"

# 2. The motor, as the agent and the CLI find it.
preview_intensities "before a suspend"

# 3. A ringing alarm at medium: its effects uploaded at 0xA000 and played, until alarm stop.
due=$(( ($(date +%s) + 12 + 59) / 60 * 60 ))
at=$(date -d "@$due" +%H:%M)
motor_before=$(motor_lines)
notes=$(notifications)
added=$(as_tester dosetap alarm add "$at" --label "VM medium" --haptics medium 2>&1) || fail "dosetap alarm add: $added"
until_true 90 rang "VM medium" || fail "the alarm at $at never rang: $(ring_of "VM medium")"
read -r due_at started_at _ < <(ring_of "VM medium")
played() { motor_since "$motor_before" | jq -e -s '[.[] | select(.play != null and .value == 1)] | length >= 2' > /dev/null; }
until_true 30 played || fail "the ringing alarm did not vibrate the motor: $(motor_since "$motor_before" | head -5)"
seen=$(motor_since "$motor_before" | jq -s -c '{uploads: [.[] | select(.upload != null)] | length,
  magnitude: [.[] | select(.upload != null) | .strong] | unique, plays: [.[] | select(.play != null and .value == 1)] | length}')
[[ $(jq -c .magnitude <<<"$seen") == "[40960]" ]] || fail "the ringing alarm's effects were not medium (0xA000): $seen"
shown() { (( $(notifications) > notes )); }
until_true 20 shown || fail "no notification for the ring"
stopped=$(as_tester dosetap alarm stop 2>&1) || fail "dosetap alarm stop: $stopped"
until_true 20 ring_ended "VM medium" || fail "the ring did not end after alarm stop"
ok "the alarm at $at rang $(python3 -c "print(f'{$started_at - $due_at:.3f}')") s after its minute at medium: the motor saw $seen; alarm stop ended it"
id=$(as_tester dosetap alarm list --json | jq -r '.[] | select(.label == "VM medium") | .id')
as_tester dosetap alarm remove "$id" > /dev/null || fail "alarm remove $id"
