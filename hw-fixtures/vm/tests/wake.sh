#!/bin/bash
# The VM tier's wake test (#28), run as root in the guest by scripts/test-vm.sh (through scripts/vm.sh run), with
# the release .deb installed by dpkg -i. As shipped, for the lingering user `tester`:
#   1. dpkg -i enabled and started dosetap-wake.socket;
#   2. systemctl --user enable --now dosetap: the agent is ready and says it wakes the machine through the helper;
#   3. dosetap alarm add (2 minutes out) says nothing about sleeping through;
#   4. logind suspends the guest (systemctl suspend, as a lid or idle action would): the agent's delay inhibitor
#      sees PrepareForSleep(true), arms the wake-up through the helper, releases the lock; the guest sleeps
#      (the host sees QMP "suspended") and wakes by itself;
#   5. the alarm rings on the real clock within a second of its minute, its notification shown on the session
#      bus and its vibration (strong, the alarm's own) on the uinput motor, and dosetap alarm stop ends it;
#   6. after the suspend, feedback preview at the three intensities still reaches the motor.
# Each step prints "vm-test: ok: …" or fails with "vm-test: FAIL: …" and the agent's and the helper's journal.
set -euo pipefail
cd /opt/payload
source /opt/payload/lib.sh

# 1, 2. The package, the agent.
start_as_shipped
web_socket() { [[ -S /run/user/1000/dosetap/web.sock ]]; }
until_true 30 web_socket || fail "the dashboard's Unix socket is missing (/run/user/1000/dosetap/web.sock)"
ok "the dashboard listens on /run/user/1000/dosetap/web.sock"

# 3. An alarm at the first minute at least 70 s away (the wake-up is armed 30 s before it).
due=$(( ($(date +%s) + 70 + 59) / 60 * 60 ))
at=$(date -d "@$due" +%H:%M)
added=$(as_tester dosetap alarm add "$at" --label "VM wake" --haptics strong 2>&1) || fail "dosetap alarm add: $added"
echo "$added"
[[ $added != *"may sleep through"* ]] || fail "alarm add says the machine may sleep through the alarm"
ok "alarm add $at says nothing about sleeping through"

# 4. logind suspends the machine; the RTC wakes it.
motor_before=$(motor_lines)
notes=$(notifications)
suspended_at=$(date +%s)
suspend_and_wake wake

# The battery re-check before the sleep, and the suspend read on both sides (the guest's ACPI battery: static,
# and the suspend shorter than the 30 minutes a drain is learned from).
agent_log --since "@$suspended_at" | grep -q "going to sleep: alarm [0-9]* safe, about [0-9]*% at " \
  || fail "the agent did not re-check the alarm against the battery before the sleep: $(agent_log --since "@$suspended_at" | grep -i 'going to sleep' | head -3)"
agent_log --since "@$suspended_at" | grep -q "resumed: this suspend teaches nothing about the drain asleep (shorter than 30 minutes)" \
  || fail "the agent did not read the battery on both sides of the suspend: $(agent_log --since "@$suspended_at" | grep 'resumed:' | head -3)"
ok "before the sleep: $(agent_log --since "@$suspended_at" | grep -o 'going to sleep: alarm [0-9]* safe, about [0-9]*% at [^ ]*' | head -1); after it: the battery read on both sides (too short a sleep to learn from)"

# 5. The ring: started within a second of its minute (the row's started_at against due_at), the notification shown.
ring() { ring_of "VM wake"; }
until_true 200 rang "VM wake" || fail "the alarm never rang"
read -r due_at started_at outcome < <(ring)
late=$(python3 -c "print(f'{$started_at - $due_at:.3f}')")
python3 -c "import sys; sys.exit(0 if 0 <= $started_at - $due_at <= 1.0 else 1)" || fail "the alarm rang ${late} s after its minute"
ok "the alarm rang ${late} s after $at (due $due_at, started $started_at)"
shown() { (( $(notifications) > notes )); }
until_true 20 shown || fail "no notification was shown"
ok "its notification: $(grep '"summary"' /tmp/notifications.log | tail -1)"

vibrated() { motor_since "$motor_before" | jq -e -s '[.[] | select(.play != null and .value == 1)] | length >= 3' > /dev/null; }
until_true 30 vibrated || fail "the ringing alarm did not vibrate the motor: $(motor_since "$motor_before" | head -5)"
strong=$(motor_since "$motor_before" | jq -s -c '[.[] | select(.upload != null) | .strong] | unique')
[[ $strong == "[65535]" ]] || fail "the ringing alarm's effects were not strong (0xFFFF): $strong"
ok "the ringing alarm vibrates the motor: $(motor_since "$motor_before" | jq -s -c '{uploads: [.[] | select(.upload != null)] | length, plays: [.[] | select(.play != null and .value == 1)] | length, magnitude: '"$strong"'}')"

stopped=$(as_tester dosetap alarm stop 2>&1) || fail "dosetap alarm stop: $stopped"
until_true 20 ring_ended "VM wake" || fail "the ring did not end after alarm stop"
read -r _ _ outcome < <(ring)
ok "dosetap alarm stop: $stopped; the ring ended ($outcome)"

# 6. The motor after the suspend (the ring's last effect erased first).
sleep 1
preview_intensities "after a suspend"
