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
# Waits (at most $1 seconds) until the command after it succeeds.
until_true() { local limit=$1; shift; local end=$((SECONDS + limit)); until "$@"; do ((SECONDS < end)) || return 1; sleep 0.5; done; }

said() { agent_log | grep -q -- "$1"; }

# The package as dpkg -i left it, the desktop's notification server on tester's session bus, and the agent as its
# user starts it (systemctl --user enable --now dosetap), ready and waking the machine through the helper.
start_as_shipped() {
  systemctl is-enabled --quiet dosetap-wake.socket || fail "dosetap-wake.socket is not enabled after dpkg -i"
  systemctl is-active --quiet dosetap-wake.socket || fail "dosetap-wake.socket is not listening after dpkg -i"
  [[ $(stat -c %a /run/dosetap-wake.sock) == 666 ]] || fail "the socket's mode is $(stat -c %a /run/dosetap-wake.sock)"
  ok "dpkg -i enabled and started dosetap-wake.socket"
  as_tester python3 /opt/payload/notifyd.py /tmp/notifications.log > /tmp/notifyd.out 2>&1 &
  until_true 20 grep -q ready /tmp/notifyd.out || fail "the notification server did not start: $(cat /tmp/notifyd.out)"
  as_tester systemctl --user enable --now dosetap || fail "systemctl --user enable --now dosetap"
  [[ $(as_tester systemctl --user is-active dosetap) == active ]] || fail "the agent is not active"
  until_true 30 said 'wake from suspend: the DoseTap wake helper (/run/dosetap-wake.sock)' \
    || fail "the agent does not say it wakes the machine through the helper"
  ok "the agent is ready and wakes the machine through the helper"
}

# logind suspends the machine (as a lid or idle action would); returns once the agent has seen the resume, after
# checking that the wake-up went through the helper and that the kernel entered deep suspend.
suspend_and_wake() {
  local before
  before=$(date +%s)
  systemctl suspend || fail "systemctl suspend"
  until_true 400 said 'resumed from suspend' || fail "the agent never saw the resume"
  agent_log | grep -q "going to sleep: wake-up armed for .* through the DoseTap wake helper" || fail "the agent did not arm the wake-up through the helper"
  journalctl -q --no-pager -u dosetap-wake.service | grep -q "user 1000: wake-up armed for" || fail "the helper did not arm it"
  local entry
  entry=$(dmesg | grep -o 'PM: suspend entry (.*)' | tail -1)
  [[ $entry == "PM: suspend entry (deep)" ]] || fail "the kernel did not enter deep suspend: ${entry:-no suspend entry in dmesg}"
  ok "suspended by logind at $(date -d "@$before" +%T); the wake-up armed through the helper; resumed at $(date +%T)"
}
