#!/bin/bash
# The VM tier's missed-alarm test (#28), run as root in the guest by scripts/test-vm.sh with the release .deb
# installed. Waking made impossible (the wake helper stopped; the RTC is root's), two alarms 11 minutes apart:
#   1. dosetap alarm add says the machine may sleep through the alarm; so does the agent before the suspend;
#   2. logind suspends the guest across the first alarm's minute: the host (QMP) sees it stay asleep past the minute
#      and wakes it 40 s after (system_wakeup); meanwhile it moves the guest's RTC 11 minutes ahead (qemu's clock
#      under libfaketime: scripts/vm.sh --host-clock), so the guest's kernel, reading the RTC at resume, has slept
#      11 minutes 40 s, past the second alarm's minute too — as a laptop that slept that long;
#   3. the first alarm, missed by 11 minutes 40 s (over 10), is recorded as missed and announced ("Missed alarm
#      HH:MM"), never rung;
#   4. the second, missed by 40 s (under 10 minutes), rings at once after the resume (its light vibration on the
#      motor, its notification shown), and alarm stop ends it.
set -euo pipefail
cd /opt/payload
source /opt/payload/lib.sh

start_as_shipped
systemctl stop dosetap-wake.socket dosetap-wake.service
! [[ -S /run/dosetap-wake.sock ]] || fail "the helper's socket is still there after systemctl stop"
ok "the wake helper stopped"

# 1. An alarm at the first minute at least 70 s away ("VM missed long") and one 11 minutes later ("VM missed"),
#    said to be at risk.
jump=660
long_due=$(( ($(date +%s) + 70 + 59) / 60 * 60 ))
long_at=$(date -d "@$long_due" +%H:%M)
due=$((long_due + jump))
at=$(date -d "@$due" +%H:%M)
added=$(as_tester dosetap alarm add "$long_at" --label "VM missed long" --haptics light 2>&1) || fail "dosetap alarm add: $added"
echo "$added"
[[ $added == *"may sleep through the alarm"* ]] || fail "alarm add does not say the machine may sleep through the alarm"
ok "alarm add $long_at says: $(grep -m1 'may sleep through' <<<"$added")"
added=$(as_tester dosetap alarm add "$at" --label "VM missed" --haptics light 2>&1) || fail "dosetap alarm add: $added"

# 2. Asleep across the first minute; the host moves the guest's RTC 11 minutes ahead and wakes it 40 s after
#    that minute (host time).
before=$(date +%s)
notes=$(notifications)
motor_before=$(motor_lines)
echo "vm-host: wake-at missed $((long_due + 40)) +$jump"
systemctl suspend || fail "systemctl suspend"
resumed() { agent_log --since "@$before" | grep -q 'resumed from suspend'; }
until_true 400 resumed || fail "the agent never saw the resume"
# The resume as the kernel logged it (journald's time of receipt).
woke=$(journalctl -q --no-pager -k -o json --since "@$before" \
  | jq -r 'select((.MESSAGE // "") | tostring | test("PM: suspend exit")) | .__REALTIME_TIMESTAMP' | tail -1)
[[ -n $woke ]] || fail "no 'PM: suspend exit' in the kernel's log"
woke=$(python3 -c "print($woke / 1e6)")
said_before=$(journalctl -q --no-pager -o json _UID=1000 _SYSTEMD_USER_UNIT=dosetap.service --since "@$before" \
  | jq -r 'select((.MESSAGE // "") | tostring | test("may sleep through the alarm")) | .__REALTIME_TIMESTAMP' | sed -n 1p)
[[ -n $said_before ]] || fail "the agent did not say before the suspend that it could not wake the machine"
(( ${said_before:0:10} <= long_due )) || fail "the agent said it could not wake only after the alarm's minute"
ok "the agent said before the suspend: $(agent_log --since "@$before" | grep -m1 -o 'This machine may sleep through the alarm: .*' | cut -c1-160)"
(( $(date +%s) >= due + 35 )) \
  || fail "the guest was awake again at $(date +%T), before the host woke it 11 minutes 40 s after $long_at (guest time)"
slept=$(python3 -c "print(round($woke - $before))")
ok "the guest slept $slept s by its own clock (the RTC moved ahead while it slept; woke at $(date -d "@${woke%.*}" +%T))"

# 3. The first alarm: missed by more than 10 minutes, recorded and announced, never rung.
long_missed() { [[ $(ring_of "VM missed long" | cut -d" " -f2,3) == "None missed" ]]; }
until_true 30 long_missed || fail "the alarm missed by over 10 minutes is not recorded as missed, unrung: $(ring_of "VM missed long")"
announced() { grep '"summary"' /tmp/notifications.log | tail -n +"$((notes + 1))" | grep "Missed alarm $long_at" >/dev/null; }
until_true 20 announced || fail "no 'Missed alarm $long_at' notification: $(tail -n +"$((notes + 1))" /tmp/notifications.log)"
said "Missed alarm $long_at" || fail "the agent did not log 'Missed alarm $long_at'"
ok "missed by $(python3 -c "print(f'{$woke - $long_due:.0f}')") s (over 10 minutes), $long_at is recorded as missed and announced ($(grep '"summary"' /tmp/notifications.log | grep -m1 "Missed alarm $long_at" | jq -r '.summary + ": " + .body')), never rung"

# 4. The second: rings at once.
ring() { ring_of "VM missed"; }
until_true 60 rang "VM missed" || fail "the missed alarm did not ring after the resume: $(ring)"
read -r due_at started_at _ < <(ring)
python3 -c "import sys; sys.exit(0 if abs($due_at - $due) < 1 else 1)" || fail "the ring is of $due_at, not of $at"
python3 -c "import sys; sys.exit(0 if -1 <= $started_at - $woke <= 5 else 1)" \
  || fail "the alarm rang $(python3 -c "print(f'{$started_at - $woke:.1f}')") s after the kernel resumed"
ok "missed by $(python3 -c "print(f'{$started_at - $due_at:.0f}')") s (under 10 minutes), the alarm rang at once: $(python3 -c "print(f'{$started_at - $woke:.2f}')") s after the kernel's resume"
shown() { grep '"summary"' /tmp/notifications.log | tail -n +"$((notes + 1))" | grep -v "Missed alarm" | grep . >/dev/null; }
until_true 20 shown || fail "no notification for the ring"
vibrated() { motor_since "$motor_before" | jq -e -s '[.[] | select(.upload != null and .strong == 20480)] | length >= 1' > /dev/null; }
until_true 30 vibrated || fail "the ring did not vibrate the motor lightly: $(motor_since "$motor_before" | head -5)"
ok "its notification: $(grep '"summary"' /tmp/notifications.log | grep -v "Missed alarm" | tail -1 | jq -r .summary); its vibration light (0x5000) on the motor"
stopped=$(as_tester dosetap alarm stop 2>&1) || fail "dosetap alarm stop: $stopped"
until_true 20 ring_ended "VM missed" || fail "the ring did not end after alarm stop"
ok "dosetap alarm stop: $stopped; the ring ended ($(ring | cut -d" " -f3))"
systemctl start dosetap-wake.socket
