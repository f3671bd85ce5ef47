#!/bin/bash
# The VM tier's install-and-purge test (#28), run as root in the guest by scripts/test-vm.sh (after missed.sh and
# guard.sh in the same boot, the agent running as shipped):
#   1. systemd-analyze security --user dosetap, on the running unit: at or below its exposure (2.2, as the .deb of
#      #28's start shipped it);
#   2. apt purge stops every user's agent and the wake helper and leaves nothing behind: the file system after
#      `dpkg -i; systemctl --user enable --now dosetap; use; apt purge` is the file system before it, but for the
#      logs, and what tester made in their home (their data and their enable link: theirs, by Debian policy).
set -euo pipefail
cd /opt/payload
source /opt/payload/lib.sh

start_as_shipped

# 1. The unit as the user manager runs it.
security=$(as_tester systemd-analyze security --user dosetap.service 2>&1) || fail "systemd-analyze security --user dosetap: $security"
exposure=$(grep -o 'Overall exposure level for dosetap.service: [0-9.]*' <<<"$security" | awk '{print $NF}')
[[ -n $exposure ]] || fail "no exposure in: $(tail -3 <<<"$security")"
python3 -c "import sys; sys.exit(0 if $exposure <= 2.2 else 1)" || fail "the agent's exposure is $exposure, above 2.2"
ok "systemd-analyze security --user dosetap: $exposure (at most 2.2)"

# 2. Purge, snapshot, install and use again, purge, compare.
snapshot() {
  find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /var/log -o -path /var/tmp \
      -o -path /var/cache -o -path /var/lib/systemd/timers -o -path /var/lib/systemd/random-seed \
      -o -path /home/tester/.local/share/dosetap -o -path /opt \) -prune -o -printf '%p %M %u %g\n' | sort
  find /run -name '*dosetap*' -printf '%p %M %u %g\n' 2>/dev/null | sort
}
apt-get purge -y dosetap > /tmp/purge1.log 2>&1 || fail "apt purge dosetap: $(tail -5 /tmp/purge1.log)"
as_tester systemctl --user daemon-reload
snapshot > /tmp/before.txt
dpkg -i /opt/debs/*.deb > /tmp/install.log 2>&1 || fail "dpkg -i: $(tail -5 /tmp/install.log)"
as_tester systemctl --user enable --now dosetap > /dev/null 2>&1 || fail "systemctl --user enable --now dosetap (again)"
as_tester dosetap alarm add 06:30 --label "VM purge" > /dev/null 2>&1 || fail "alarm add after the reinstall"
until_true 60 systemctl is-active --quiet dosetap-wake.socket || fail "the socket is not listening after the reinstall"
as_tester dosetap status > /dev/null 2>&1 || true
running=$(pgrep -u tester -x dosetap || true)
[[ -n $running ]] || fail "the agent is not running after the reinstall"
apt-get purge -y dosetap > /tmp/purge2.log 2>&1 || fail "apt purge dosetap: $(tail -5 /tmp/purge2.log)"
! pgrep -x dosetap > /dev/null || fail "a dosetap process outlived the purge: $(pgrep -a -x dosetap)"
! [[ -e /run/dosetap-wake.sock ]] || fail "/run/dosetap-wake.sock outlived the purge"
# (The user's own enable link, dangling now, shows the agent's unit as "not-found": nothing is loaded.)
units=$(systemctl list-units --all --no-legend dosetap-wake.socket dosetap-wake.service
  as_tester systemctl --user list-units --all --no-legend 'dosetap*' | grep -v ' not-found ' || true)
[[ -z $units ]] || fail "units outlived the purge: $units"
status=$(dpkg-query -W -f='${db:Status-Status}' dosetap 2>/dev/null || echo forgotten)
[[ $status == forgotten || $status == not-installed ]] || fail "dpkg still has dosetap: $status"
as_tester systemctl --user daemon-reload
snapshot > /tmp/after.txt
# What tester made: the enable link (a dangling link now, as any unit's the user enabled and the admin removed).
left=$(diff /tmp/before.txt /tmp/after.txt | grep '^[<>]' | grep -v ' /home/tester/.config/systemd/user/default.target.wants/dosetap.service \| /home/tester/.config/systemd/user/default.target.wants \| /home/tester/.config/systemd/user \| /home/tester/.config/systemd \| /home/tester/.config ' || true)
[[ -z $left ]] || fail "the purge left these behind (< before install, > after purge):
$left"
ok "apt purge stopped the agent and the helper and left nothing behind ($(wc -l < /tmp/after.txt) paths compared)"
