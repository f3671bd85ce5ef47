#!/bin/bash
# The VM tier's missed-alarm test (#28), run as root in the guest by scripts/test-vm.sh with the release .deb
# installed. Waking made impossible (the wake helper stopped; the RTC is root's):
#   1. dosetap alarm add says the machine may sleep through the alarm; so does the agent before the suspend;
#   2. logind suspends the guest across the alarm's minute: the host (QMP) sees it stay asleep past the minute and
#      wakes it 40 s after (system_wakeup);
#   3. missed by under 10 minutes, the alarm rings at once after the resume (its light vibration on the motor, its
#      notification shown), and alarm stop ends it. (Missed by more than 10 minutes — recorded as missed and
#      announced, never rung — needs a guest asleep for 10 minutes: the fake-clock tests hold that rule.)
set -euo pipefail
cd /opt/payload
source /opt/payload/lib.sh

start_as_shipped
systemctl stop dosetap-wake.socket dosetap-wake.service
! [[ -S /run/dosetap-wake.sock ]] || fail "the helper's socket is still there after systemctl stop"
ok "the wake helper stopped"

# 1. An alarm at the first minute at least 70 s away, said to be at risk.
due=$(( ($(date +%s) + 70 + 59) / 60 * 60 ))
at=$(date -d "@$due" +%H:%M)
added=$(as_tester dosetap alarm add "$at" --label "VM missed" --haptics light 2>&1) || fail "dosetap alarm add: $added"
echo "$added"
[[ $added == *"may sleep through the alarm"* ]] || fail "alarm add does not say the machine may sleep through the alarm"
ok "alarm add $at says: $(grep -m1 'may sleep through' <<<"$added")"

# 2. Asleep across the minute; the host wakes the guest 40 s after it.
before=$(date +%s)
notes=$(grep -c '"summary"' /tmp/notifications.log || true)
motor_before=$(motor_lines)
echo "vm-host: wake-at missed $((due + 40))"
systemctl suspend || fail "systemctl suspend"
resumed() { agent_log --since "@$before" | grep -q 'resumed from suspend'; }
until_true 400 resumed || fail "the agent never saw the resume"
# The resume as the kernel logged it (journald's time of receipt).
woke=$(journalctl -q --no-pager -k -o json --since "@$before" \
  | jq -r 'select((.MESSAGE // "") | tostring | test("PM: suspend exit")) | .__REALTIME_TIMESTAMP' | tail -1)
[[ -n $woke ]] || fail "no 'PM: suspend exit' in the kernel's log"
woke=$(python3 -c "print($woke / 1e6)")
said_before=$(journalctl -q --no-pager -o json _UID=1000 _SYSTEMD_USER_UNIT=dosetap.service --since "@$before" \
  | jq -r 'select((.MESSAGE // "") | tostring | test("may sleep through the alarm")) | .__REALTIME_TIMESTAMP' | head -1)
[[ -n $said_before ]] || fail "the agent did not say before the suspend that it could not wake the machine"
(( ${said_before:0:10} <= due )) || fail "the agent said it could not wake only after the alarm's minute"
ok "the agent said before the suspend: $(agent_log --since "@$before" | grep -m1 -o 'This machine may sleep through the alarm: .*' | cut -c1-160)"
(( $(date +%s) >= due + 35 )) || fail "the guest was awake again at $(date +%T), before the host woke it (due $at)"

# 3. Rings at once.
db=/home/tester/.local/share/dosetap/dosetap.sqlite
ring() { python3 - "$db" <<'PY'
import sqlite3, sys
row = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute(
    "SELECT r.due_at, r.started_at, r.outcome FROM alarm_ring r JOIN alarm a ON a.id = r.alarm_id "
    "WHERE a.label = 'VM missed' ORDER BY r.id DESC LIMIT 1").fetchone()
print("" if row is None else f"{row[0]} {row[1]} {row[2]}")
PY
}
rang() { local r; r=$(ring); [[ -n $r && $(cut -d" " -f2 <<<"$r") != None ]]; }
until_true 60 rang || fail "the missed alarm did not ring after the resume: $(ring)"
read -r due_at started_at outcome < <(ring)
python3 -c "import sys; sys.exit(0 if abs($due_at - $due) < 1 else 1)" || fail "the ring is of $due_at, not of $at"
python3 -c "import sys; sys.exit(0 if -1 <= $started_at - $woke <= 5 else 1)" \
  || fail "the alarm rang $(python3 -c "print(f'{$started_at - $woke:.1f}')") s after the kernel resumed"
ok "missed by $(python3 -c "print(f'{$started_at - $due_at:.0f}')") s (under 10 minutes), the alarm rang at once: $(python3 -c "print(f'{$started_at - $woke:.2f}')") s after the kernel's resume"
shown() { (( $(grep -c '"summary"' /tmp/notifications.log || true) > notes )); }
until_true 20 shown || fail "no notification for the ring"
vibrated() { motor_since "$motor_before" | jq -e -s '[.[] | select(.upload != null and .strong == 20480)] | length >= 1' > /dev/null; }
until_true 30 vibrated || fail "the ring did not vibrate the motor lightly: $(motor_since "$motor_before" | head -5)"
ok "its notification: $(grep '"summary"' /tmp/notifications.log | tail -1 | jq -r .summary); its vibration light (0x5000) on the motor"
stopped=$(as_tester dosetap alarm stop 2>&1) || fail "dosetap alarm stop: $stopped"
ended() { [[ $(ring | cut -d" " -f3) != ringing ]]; }
until_true 20 ended || fail "the ring did not end after alarm stop"
ok "dosetap alarm stop: $stopped; the ring ended ($(ring | cut -d" " -f3))"
systemctl start dosetap-wake.socket
