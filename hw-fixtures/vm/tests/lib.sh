# shellcheck shell=bash
# Shared by the VM tier's guest tests (hw-fixtures/vm/tests/*.sh, run as root in the guest by scripts/test-vm.sh).
as_tester() { runuser -u tester -- env XDG_RUNTIME_DIR=/run/user/1000 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus HOME=/home/tester "$@"; }
agent_log() { journalctl -q --no-pager -o short-precise _UID=1000 _SYSTEMD_USER_UNIT=dosetap.service "$@" 2>/dev/null || true; }
ok() { echo "vm-test: ok: $*"; }
fail() {
  echo "vm-test: FAIL: $*"
  echo "--- the agent's journal"; agent_log | tail -40
  echo "--- the helper's journal"; journalctl -q --no-pager -o short-precise -u dosetap-wake.service -u dosetap-wake.socket | tail -20
  echo "--- logind"; journalctl -q --no-pager -o short-precise -u systemd-logind -u systemd-suspend | tail -20
  exit 1
}
# Waits (at most $1 seconds of polling, every half second) until the command after it succeeds. Counted in polls,
# not by the clock: bash's SECONDS follows the wall clock, which jumps at a resume (missed.sh moves it 11 minutes),
# and a deadline on it ran out at the first poll after the resume, before the agent had logged it.
until_true() { local polls=$(($1 * 2)); shift; until "$@"; do ((polls-- > 0)) || return 1; sleep 0.5; done; }

# The tests run under pipefail: a reader that stops early (grep -q, head) ends a writer still writing with SIGPIPE,
# and the pipeline fails although it found what it looked for. So a pipeline from journalctl reads to its end
# (grep >/dev/null, sed -n 1p); agent_log swallows its own exit status.
said() { agent_log | grep -q -- "$1"; }

# The latest ring of the alarm labelled $1, from tester's database: "DUE_AT STARTED_AT OUTCOME" (epoch seconds;
# STARTED_AT None until it starts), or nothing.
db=/home/tester/.local/share/dosetap/dosetap.sqlite
ring_of() { python3 - "$db" "$1" <<'PY'
import sqlite3, sys
row = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute(
    "SELECT r.due_at, r.started_at, r.outcome FROM alarm_ring r JOIN alarm a ON a.id = r.alarm_id "
    "WHERE a.label = ? ORDER BY r.id DESC LIMIT 1", (sys.argv[2],)).fetchone()
print("" if row is None else f"{row[0]} {row[1]} {row[2]}")
PY
}
rang() { local r; r=$(ring_of "$1"); [[ -n $r && $(cut -d" " -f2 <<<"$r") != None ]]; }
ring_ended() { local r; r=$(ring_of "$1"); [[ -n $r && $(cut -d" " -f3 <<<"$r") != ringing ]]; }
notifications() { grep -c '"summary"' /tmp/notifications.log 2>/dev/null || true; }

# The package as dpkg -i left it, the desktop's notification server on tester's session bus, a force-feedback motor
# (uinput, FF_RUMBLE; tester in the input group, as docs/feedback-hardware.md says for a headless machine), and the
# agent as its user starts it (systemctl --user enable --now dosetap), ready and waking the machine through the
# helper. Once per boot: the tests of one boot share it.
start_as_shipped() {
  [[ -f /run/vm-test-started ]] && return 0
  systemctl is-enabled --quiet dosetap-wake.socket || fail "dosetap-wake.socket is not enabled after dpkg -i"
  systemctl is-active --quiet dosetap-wake.socket || fail "dosetap-wake.socket is not listening after dpkg -i"
  [[ $(stat -c %a /run/dosetap-wake.sock) == 666 ]] || fail "the socket's mode is $(stat -c %a /run/dosetap-wake.sock)"
  ok "dpkg -i enabled and started dosetap-wake.socket"
  # The arm64 guest has a real vibra driver's motor (pi.sh); the amd64 one gets a uinput motor.
  if [[ $(dpkg --print-architecture) == amd64 ]]; then
    modprobe uinput || fail "modprobe uinput"
    python3 /opt/payload/uinput_ff.py /tmp/motor.log > /tmp/motor.out 2>&1 &
    until_true 20 grep -q ready /tmp/motor.out || fail "the uinput motor did not start: $(cat /tmp/motor.out)"
    motor=$(awk '/^ready/ {print $2}' /tmp/motor.out)
    echo "$motor" > /run/vm-test-motor
    ok "a uinput FF_RUMBLE motor at $motor"
  fi
  usermod -aG input tester
  systemctl restart user@1000.service || fail "restarting tester's user manager (for the input group)"
  ok "tester in the input group"
  as_tester python3 /opt/payload/notifyd.py /tmp/notifications.log > /tmp/notifyd.out 2>&1 &
  until_true 20 grep -q ready /tmp/notifyd.out || fail "the notification server did not start: $(cat /tmp/notifyd.out)"
  as_tester systemctl --user enable --now dosetap || fail "systemctl --user enable --now dosetap"
  [[ $(as_tester systemctl --user is-active dosetap) == active ]] || fail "the agent is not active"
  until_true 30 said 'wake from suspend: the DoseTap wake helper (/run/dosetap-wake.sock)' \
    || fail "the agent does not say it wakes the machine through the helper"
  ok "the agent is ready and wakes the machine through the helper"
  touch /run/vm-test-started
}

# Lines of the motor's log (uinput_ff.py) after line $1, as JSON.
motor_since() { tail -n +"$(($1 + 1))" /tmp/motor.log; }
motor_lines() { wc -l < /tmp/motor.log; }

# logind suspends the machine (as a lid or idle action would) and the host (scripts/test-vm.sh) confirms over QMP
# that the guest slept and woke by itself ($1 names it); returns once the agent has seen the resume, after checking
# that the wake-up went through the helper and that the kernel entered deep suspend.
suspend_and_wake() {
  local before resumes
  before=$(date +%s)
  resumes=$(agent_log | grep -c 'resumed from suspend' || true)
  dosetap_lock() { systemd-inhibit --list --no-pager 2>/dev/null | grep -E '^ *DoseTap +1000 .* sleep .* delay *$'; }
  dosetap_lock > /dev/null || fail "the agent holds no delay lock on sleep: $(systemd-inhibit --list --no-pager 2>&1)"
  echo "vm-host: self-wake $1"
  systemctl suspend || fail "systemctl suspend"
  resumed() { (( $(agent_log | grep -c 'resumed from suspend' || true) > resumes )); }
  until_true 400 resumed || fail "the agent never saw the resume"
  agent_log --since "@$before" | grep -q "going to sleep: wake-up armed for .* through the DoseTap wake helper" \
    || fail "the agent did not arm the wake-up through the helper"
  journalctl -q --no-pager -u dosetap-wake.service --since "@$before" | grep "user 1000: wake-up armed for" >/dev/null \
    || fail "the helper did not arm it"
  # The lock was released once the wake-up was armed: logind did not have to wait out InhibitDelayMaxSec.
  if journalctl -q --no-pager -u systemd-logind --since "@$before" | grep 'inhibitor timeout is reached' >/dev/null; then
    fail "logind waited out the agent's delay lock (never released)"
  fi
  until_true 30 dosetap_lock > /dev/null || fail "the agent did not take its delay lock again after the resume"
  local entry
  entry=$(dmesg | grep -o 'PM: suspend entry (.*)' | tail -1)
  [[ $entry == "PM: suspend entry (deep)" ]] || fail "the kernel did not enter deep suspend: ${entry:-no suspend entry in dmesg}"
  ok "suspended by logind at $(date -d "@$before" +%T) (the agent's delay lock held before, released once the wake-up was armed, taken again after); the wake-up armed through the helper; resumed at $(date +%T)"
}

# `dosetap feedback preview dose-recorded` at light, medium and strong: each uploads one FF_RUMBLE effect of its
# magnitude (0x5000, 0xA000, 0xFFFF), plays it once per pulse (1, 2, 3), and erases it, as the motor saw it. (Its
# sound goes to ALSA's "null" device: the guest has no sound card, and preview fails when its sound cannot play.)
preview_intensities() {
  local when=$1 intensity magnitude pulses n seen
  for intensity in light medium strong; do
    case $intensity in light) magnitude=20480 pulses=1 ;; medium) magnitude=40960 pulses=2 ;; strong) magnitude=65535 pulses=3 ;; esac
    as_tester dosetap feedback set --haptics on --intensity "$intensity" > /dev/null || fail "feedback set --intensity $intensity"
    n=$(motor_lines)
    local out
    out=$(as_tester env DOSETAP_AUDIO_DEVICE=null dosetap feedback preview dose-recorded 2>&1) || fail "feedback preview dose-recorded ($intensity): $out"
    seen=$(motor_since "$n" | jq -s -c --argjson m "$magnitude" '{
      uploads: [.[] | select(.upload != null)], plays: [.[] | select(.play != null and .value == 1)],
      erased: [.[] | select(.erase != null)]} | {
      uploads: (.uploads | length), magnitude: ([.uploads[].strong] | unique), plays: (.plays | length),
      erased: (.erased | length), right: ([.uploads[] | select(.strong == $m and .accepted)] | length)}')
    [[ $(jq .uploads <<<"$seen") -ge 1 && $(jq .right <<<"$seen") == $(jq .uploads <<<"$seen") \
       && $(jq .plays <<<"$seen") == "$pulses" && $(jq .erased <<<"$seen") -ge 1 ]] \
      || fail "feedback preview at $intensity $when: the motor saw $seen (expected magnitude $magnitude, $pulses plays, an erase)"
    ok "feedback preview at $intensity $when: the motor saw $seen"
  done
  as_tester dosetap feedback set --intensity medium > /dev/null || fail "feedback set --intensity medium"
}
