#!/bin/bash
# The VM tier's sleep-guard test (#52), run as root in the guest by scripts/test-vm.sh with the release .deb
# installed, the guard as shipped (`[battery] guard = "sleep"`). A laptop left awake on its battery past an alarm's
# deadline while its person is away:
#   1. the agent as shipped; the alarms of the tests before this one in the boot turned off (one alarm guarded);
#   2. tester logs in on the console (agetty --autologin on tty1: a drop-in made now, the image has no getty), a
#      local session on seat0, active; polkit then answers the agent, which runs in tester's user manager and in
#      no session, for tester's display session: CanSuspend "challenge" before the login, "yes" after it;
#   3. the person stepped away 40 minutes ago (tty1's access time set back: logind counts a text session idle
#      after IdleActionSec, 30 minutes by default): logind says every session idle;
#   4. an alarm whose deadline falls about 30 s out (the guest's battery is static, 40 %, 7 W of 54 Wh: the alarm
#      time from two `battery --alarm HH:MM --json` probes, about 5.5 hours ahead): alarm add shows the nudge, the
#      deadline near; a change uevent of the battery (udevadm trigger, as a laptop's battery sends them) gives the
#      agent its reading at once. (A static level moves the deadline later at each reading — 0.3 s a second — where
#      a real battery's falling level holds it still: the agent's timer at the deadline must come before its next
#      reading, 60 s on, so the deadline is set well under 60 s out);
#   5. at the deadline, nobody touching the guest, the nudge plays again, the agent notifies "Going to sleep to keep
#      the HH:MM alarm: battery 40 %" and asks logind to suspend: the guest suspends itself (the test never asks for
#      it; the host sees QMP "suspended"), the wake-up armed through the helper;
#   6. asleep, the host moves the guest's RTC ahead to 45 s before the alarm (scripts/vm.sh --host-clock), and the
#      guest wakes by itself (its RTC alarm, no system_wakeup): the alarm rings within a second of its minute, its
#      notification shown, and alarm stop ends it;
#   7. tester logs out (the console's getty stopped and masked again): the tests after this one run as before.
set -euo pipefail
cd /opt/payload
source /opt/payload/lib.sh

# 1. The agent; the other alarms off (an earlier test's daily alarm, a day ahead at 40 %, is at risk even asleep:
#    its deadline has come too, and the guard would put the guest to sleep for it).
start_as_shipped
for id in $(as_tester dosetap alarm list --json | jq -r '(if type == "array" then . else .alarms end)[] | select(.enabled) | .id'); do
  as_tester dosetap alarm off "$id" > /dev/null || fail "dosetap alarm off $id"
done
# The agent reads how it wakes the machine at start, at each suspend and at each resume: after missed.sh (the helper
# stopped across its suspend and started again after the resume) it still holds "cannot wake", and so does the command
# line, which tells the agent's finding. Restarted, it finds the helper, as on a machine whose helper ran all along.
guard_line() { as_tester dosetap battery | sed -n 's/^Sleep guard: //p'; }
if [[ $(guard_line) != on:* ]]; then
  ready=$(agent_log | grep -c 'wake from suspend: the DoseTap wake helper' || true)
  as_tester systemctl --user restart dosetap || fail "systemctl --user restart dosetap"
  restarted() { (( $(agent_log | grep -c 'wake from suspend: the DoseTap wake helper' || true) > ready )); }
  until_true 30 restarted || fail "the restarted agent does not say it wakes the machine through the helper"
  echo "vm-test: (the agent restarted: it held the finding of a test before, that it could not wake the machine)"
fi
[[ $(guard_line) == on:* ]] || fail "dosetap battery says: Sleep guard: $(guard_line)"
ok "the agent is running; no other alarm is on; dosetap battery says: Sleep guard: $(guard_line | cut -c1-60)…"

# 2. The console login. CanSuspend as the agent asks it: from a process of tester's user manager.
can_suspend() { as_tester systemd-run --user --wait --quiet -P busctl call org.freedesktop.login1 /org/freedesktop/login1 \
  org.freedesktop.login1.Manager CanSuspend 2>&1 | sed -n 's/^s "\(.*\)"$/\1/p'; }
before_login=$(can_suspend)
[[ $before_login == challenge ]] || fail "CanSuspend for tester's user manager with no session is '$before_login', not 'challenge'"
systemctl unmask --quiet getty@tty1.service
mkdir -p /run/systemd/system/getty@tty1.service.d
cat > /run/systemd/system/getty@tty1.service.d/autologin.conf <<'EOF'
[Service]
ExecStart=
ExecStart=-/sbin/agetty -o '-p -f -- \\u' --noclear --autologin tester %I $TERM
EOF
systemctl daemon-reload
systemctl start getty@tty1.service || fail "systemctl start getty@tty1.service"
session() { loginctl list-sessions --no-legend | awk '$3 == "tester" && $5 == "tty1" {print $1}' | sed -n 1p; }
logged_in() { [[ -n $(session) ]]; }
until_true 30 logged_in || fail "tester's autologin on tty1 made no session: $(loginctl list-sessions --no-legend)"
s=$(session)
facts=$(loginctl show-session "$s" -p Seat -p TTY -p Type -p Active -p Remote | sort | paste -sd' ')
[[ $facts == "Active=yes Remote=no Seat=seat0 TTY=tty1 Type=tty" ]] || fail "tester's session $s is not a local active tty session on seat0: $facts"
after_login=$(can_suspend)
[[ $after_login == yes ]] || fail "CanSuspend for tester's user manager with a console session is '$after_login', not 'yes'"
ok "tester logged in on tty1 (session $s: seat0, tty, active, local); CanSuspend for tester's user manager: $before_login before, $after_login after"

# 3. Nobody at the console for 40 minutes.
touch -a -d '40 minutes ago' /dev/tty1
manager_idle() { busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager IdleHint; }
[[ $(loginctl show-session "$s" -p IdleHint --value) == yes ]] || fail "logind does not say session $s is idle: $(loginctl show-session "$s" -p IdleHint -p IdleSinceHint)"
[[ $(manager_idle) == "b true" ]] || fail "logind does not say every session is idle: $(manager_idle)"
# The agent reads the Manager's IdleSinceHint, not the session's: a last input before the guest's boot comes out near
# logind's own start there, so in a boot of its own the guard may wait a minute more ("the sleep guard waits: idle for
# N s"); a machine up for longer than its person has been away gives the session's.
session_since=$(loginctl show-session "$s" -p IdleSinceHint --value)
manager_since=$(busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager IdleSinceHint | awk '{print $2}')
ok "tty1 last read 40 minutes ago: logind says session $s idle (its last input $(date -d "@$((session_since / 1000000))" +%T)), and every session idle (IdleSinceHint $(date -d "@$((manager_since / 1000000))" +%T), now $(date +%T))"

# 4. The alarm whose deadline is 30 s out. With the level static the deadline falls on a straight line of the
#    alarm's time (later alarm, earlier deadline): two probes, then the time on that line, to the minute.
deadline_at() {
  local d
  d=$(as_tester dosetap battery --alarm "$1" --json | jq -r 'first(.. | objects | select(has("deadlineWhy"))) | .deadline // empty')
  [[ -n $d ]] || fail "battery --alarm $1 --json gives no deadline: $(as_tester dosetap battery --alarm "$1" --json | jq -c 'first(.. | objects | select(has("deadlineWhy")))')"
  date -d "$d" +%s
}
minute() { echo $(( ($1 + 30) / 60 * 60 )); }
notes=$(notifications)
resumes=$(agent_log | grep -c 'resumed from suspend' || true)
now=$(date +%s)
t0=$(minute $((now + 3 * 3600))); t1=$((t0 + 3600))
d0=$(deadline_at "$(date -d "@$t0" +%H:%M)"); d1=$(deadline_at "$(date -d "@$t1" +%H:%M)")
((d1 < d0)) || fail "the deadline does not come earlier for a later alarm: $t0 -> $d0, $t1 -> $d1"
due=$(minute "$(python3 -c "print(round($t0 + ($(date +%s) + 30 - $d0) * 3600 / ($d1 - $d0)))")")
at=$(date -d "@$due" +%H:%M)
echo "vm-host: self-wake-jump guard $((due - 45))"
added=$(as_tester dosetap alarm add "$at" --label "VM guard" --repeat once --json) || fail "dosetap alarm add --json: $added"
added_at=$(date +%s)
udevadm trigger --action=change /sys/class/power_supply/BAT0
view=$(jq -c 'first(.. | objects | select(has("deadlineWhy")))' <<<"$added")
id=$(jq -r .id <<<"$view")
deadline=$(jq -r '.deadline // empty' <<<"$view")
[[ -n $deadline ]] || fail "alarm add --json gives the alarm no deadline: $view"
deadline=$(date -d "$deadline" +%s)
((deadline >= added_at && deadline <= added_at + 55)) || fail "the deadline $(date -d "@$deadline" +%T) is not 0 to 55 s out (now $(date -d "@$added_at" +%T))"
shown_deadline=$(jq -r '.nudge.deadlineText // empty' <<<"$view")
[[ $shown_deadline == "At risk unless this machine sleeps or is plugged in by "* ]] || fail "alarm add shows no nudge with the deadline: $view"
ok "alarm $id at $at ($(( (due - added_at) / 60 )) minutes ahead): deadline $(date -d "@$deadline" +%T), $((deadline - added_at)) s out; alarm add shows the nudge ($(jq -r .nudge.header <<<"$view"): $shown_deadline)"

# 5, 6. Nobody touches the guest: the guard suspends it at the deadline; the host moves its clock to 45 s before the
#    alarm (asked before the alarm is added: the guard may act before the next line); its RTC alarm, armed for 30 s
#    before the alarm, wakes it.
resumed() { (( $(agent_log | grep -c 'resumed from suspend' || true) > resumes )); }
until_true 240 resumed || fail "the guest was not suspended and resumed (the agent saw no resume)"
woke=$(date +%s)
# When the agent said it (journald's time of receipt, epoch seconds), the first time since the alarm was added.
said_at() {
  local t
  t=$(journalctl -q --no-pager -o json _UID=1000 _SYSTEMD_USER_UNIT=dosetap.service --since "@$added_at" \
    | jq -r --arg p "$1" 'select((.MESSAGE // "") | tostring | contains($p)) | .__REALTIME_TIMESTAMP' | sed -n 1p)
  [[ -n $t ]] && echo $((t / 1000000))
}
came=$(said_at "the alarm's deadline has come and this machine is awake on its battery") \
  || fail "the agent did not say the alarm's deadline had come"
sleeping="Going to sleep to keep the $at alarm: battery 40 %"
asked=$(said_at "the sleep guard: $sleeping") || fail "the agent did not say: the sleep guard: $sleeping"
((came >= deadline)) || fail "the guard acted at $(date -d "@$came" +%T), before the deadline $(date -d "@$deadline" +%T)"
((asked >= came && asked <= deadline + 300)) || fail "the guard asked to sleep at $(date -d "@$asked" +%T) (deadline $(date -d "@$deadline" +%T), come at $(date -d "@$came" +%T))"
agent_log --since "@$added_at" | grep 'the sleep guard waits' || true
# (jq -s: jq 1.6's -e answers for the last line alone, so a select that matched an earlier one still fails.)
nudged() { grep '"summary"' /tmp/notifications.log | tail -n +"$((notes + 1))" \
  | jq -e -s --arg b "Alarm $at \"VM guard\": " --argjson t "$came" 'any(.[]; (.body | startswith($b)) and .at >= $t)' > /dev/null; }
nudged || fail "no battery nudge shown at the deadline: $(tail -n +"$((notes + 1))" /tmp/notifications.log)"
told() { grep '"summary"' /tmp/notifications.log | tail -n +"$((notes + 1))" | jq -e -s --arg s "$sleeping" 'any(.[]; .summary == $s)' > /dev/null; }
told || fail "no '$sleeping' notification: $(tail -n +"$((notes + 1))" /tmp/notifications.log)"
journalctl -q --no-pager -u systemd-logind --since "@$added_at" | grep 'The system will suspend now!' > /dev/null \
  || fail "logind did not suspend the machine"
agent_log --since "@$added_at" | grep -q "going to sleep: wake-up armed for .* through the DoseTap wake helper" \
  || fail "the agent did not arm the wake-up through the helper"
entry=$(dmesg | grep -o 'PM: suspend entry (.*)' | tail -1)
[[ $entry == "PM: suspend entry (deep)" ]] || fail "the kernel did not enter deep suspend: ${entry:-no suspend entry in dmesg}"
ok "deadline $(date -d "@$deadline" +%T): at $(date -d "@$came" +%T) the nudge again ($(agent_log --since "@$added_at" | grep -o "deadline has come and this machine is awake on its battery: [^:]*" | head -1 | sed 's/.*battery: //')); at $(date -d "@$asked" +%T) \"$sleeping\" shown and logind suspended the guest (deep); $(agent_log --since "@$added_at" | grep -o 'wake-up armed for [^ ]*' | tail -1) through the helper"
ok "the guest woke by itself at $(date -d "@$woke" +%T) (guest clock, moved ahead while it slept), $((due - woke)) s before the alarm"

ring() { ring_of "VM guard"; }
until_true 120 rang "VM guard" || fail "the alarm never rang: $(ring)"
read -r due_at started_at _ < <(ring)
python3 -c "import sys; sys.exit(0 if abs($due_at - $due) < 1 else 1)" || fail "the ring is of $due_at, not of $at"
late=$(python3 -c "print(f'{$started_at - $due_at:.3f}')")
python3 -c "import sys; sys.exit(0 if 0 <= $started_at - $due_at <= 1.0 else 1)" || fail "the alarm rang ${late} s after its minute"
shown() { grep '"summary"' /tmp/notifications.log | tail -n +"$((notes + 1))" \
  | jq -e -s --argjson t "$due_at" 'any(.[]; .at >= $t and (.summary | startswith("Going to sleep") | not))' > /dev/null; }
until_true 20 shown || fail "no notification for the ring"
ok "the alarm rang ${late} s after $at; its notification: $(grep '"summary"' /tmp/notifications.log | tail -1 | jq -r .summary)"
stopped=$(as_tester dosetap alarm stop 2>&1) || fail "dosetap alarm stop: $stopped"
until_true 20 ring_ended "VM guard" || fail "the ring did not end after alarm stop"
ok "dosetap alarm stop: $stopped; the ring ended ($(ring | cut -d" " -f3))"

# 7. tester logs out.
systemctl stop getty@tty1.service
rm -rf /run/systemd/system/getty@tty1.service.d
systemctl mask --quiet getty@tty1.service
systemctl daemon-reload
until_true 30 eval '! logged_in' || fail "tester's console session did not end: $(loginctl list-sessions --no-legend)"
ok "tester logged out of tty1"
