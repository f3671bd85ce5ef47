#!/usr/bin/env bash
# Idle footprint of the DoseTap agent next to upowerd, under the same umockdev battery.
#
# Usage:
#   Benchmarks/idle-footprint.sh [-d SECONDS] [-s SECONDS] [-o FILE] [FIXTURE]
#
#   FIXTURE        umockdev file shown to both processes
#                  (default: hw-fixtures/power_supply/energy-discharging.umockdev)
#   -d SECONDS     length of the measured window (default 60)
#   -s SECONDS     settle time after start-up, before the window opens (default 5)
#   -o FILE        also write the markdown report to FILE (e.g. docs/benchmarks/idle.md)
#   -h             this help
#
# Environment:
#   DOSETAP        agent binary (default .build/release/dosetap; built with
#                  `swift build -c release --product dosetap` only if that default is missing)
#   DOSETAP_CMD    replace the whole agent command line (split on blanks, no quoting), e.g.
#                  DOSETAP_CMD="sleep 600" to test this script without the agent
#   UPOWERD        upowerd binary (default /usr/libexec/upowerd, Debian's `upower` package)
#   UPOWERD_ARGS   extra upowerd arguments (default none; -v logs and so costs wake-ups)
#   UMOCKDEV_TMPDIR  where umockdev-run builds its fake /sys (default /dev/shm when writable,
#                  as in Benchmarks/cli-latency.sh)
#   KEEP_TMP=1     keep the temporary directory (bus configs, logs, agent data) for inspection
#
# What it does: starts a private system bus and a private session bus (dbus-daemon, config
# written to a temp dir, anyone may own names and send), runs
#   umockdev-run -d FIXTURE -- upowerd                       (with DBUS_SYSTEM_BUS_ADDRESS set)
#   umockdev-run -d FIXTURE -- $DOSETAP agent --data-dir $TMP/data
# side by side, checks that upowerd enumerates the battery, lets both settle, then measures
# the real children (umockdev-run forks; the wrapper itself is not counted) over the same window:
#   RSS / peak RSS / PSS   VmRSS, VmHWM (/proc/PID/status), Pss (/proc/PID/smaps_rollup)
#   CPU                    utime+stime (/proc/PID/stat, clock ticks -> s), total and in window
#   wake-ups               increase of voluntary+nonvoluntary context switches in the window,
#                          summed over ALL threads (/proc/PID/status counts the main thread
#                          only, so /proc/PID/task/*/status is sampled every second; threads
#                          born in the window count from 0)
# Prints a markdown table. Exits 1 if a measured process died, 2 on a setup failure.
# Needs: umockdev (umockdev-run), dbus-daemon, dbus-send (dbus-bin), upower, util-linux.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=60
SETTLE=5
OUTPUT=
FIXTURE=$ROOT/hw-fixtures/power_supply/energy-discharging.umockdev

usage() { sed -n '2,/^set -euo pipefail/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "idle-footprint: $*" >&2; exit 2; }

while getopts ":d:s:o:h" opt; do
    case $opt in
        d) DURATION=$OPTARG ;;
        s) SETTLE=$OPTARG ;;
        o) OUTPUT=$OPTARG ;;
        h) usage; exit 0 ;;
        :) die "-$OPTARG needs a value (see -h)" ;;
        *) die "unknown option -$OPTARG (see -h)" ;;
    esac
done
shift $((OPTIND - 1))
[[ $# -le 1 ]] || die "at most one FIXTURE argument (see -h)"
[[ $# -eq 1 ]] && FIXTURE=$1
[[ $DURATION =~ ^[0-9]+$ && $DURATION -ge 1 ]] || die "-d wants whole seconds >= 1, got '$DURATION'"
[[ $SETTLE =~ ^[0-9]+$ ]] || die "-s wants whole seconds, got '$SETTLE'"
[[ -f $FIXTURE ]] || die "fixture not found: $FIXTURE"
FIXTURE=$(realpath "$FIXTURE")

UPOWERD=${UPOWERD:-/usr/libexec/upowerd}
for tool in umockdev-run dbus-daemon dbus-send setsid realpath getconf; do
    command -v "$tool" >/dev/null || die "missing tool: $tool"
done
[[ -x $UPOWERD ]] || die "upowerd not found at $UPOWERD (apt-get install upower)"
CLK_TCK=$(getconf CLK_TCK)

# ---- cleanup: everything we start runs in its own session (setsid), killed by group ----------
PGIDS=()
TMP=
# shellcheck disable=SC2317  # invoked through the EXIT trap
cleanup() {
    local rc=$? pg
    trap - EXIT INT TERM
    for pg in "${PGIDS[@]}"; do kill -TERM -- "-$pg" 2>/dev/null || true; done
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        local alive=0
        for pg in "${PGIDS[@]}"; do kill -0 -- "-$pg" 2>/dev/null && alive=1; done
        [[ $alive == 0 ]] && break
        sleep 0.3
    done
    for pg in "${PGIDS[@]}"; do kill -KILL -- "-$pg" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [[ -n $TMP && ${KEEP_TMP:-0} == 1 ]]; then echo "idle-footprint: kept $TMP" >&2
    elif [[ -n $TMP ]]; then rm -rf "$TMP"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dosetap-idle.XXXXXX")

# ---- the agent command --------------------------------------------------------------------
if [[ -n ${DOSETAP_CMD:-} ]]; then
    read -r -a AGENT_CMD <<<"$DOSETAP_CMD"
    AGENT_LABEL="agent stand-in: $DOSETAP_CMD"
else
    DOSETAP_DEFAULT=$ROOT/.build/release/dosetap
    DOSETAP=${DOSETAP:-$DOSETAP_DEFAULT}
    if [[ ! -x $DOSETAP ]]; then
        [[ $DOSETAP == "$DOSETAP_DEFAULT" ]] || die "DOSETAP=$DOSETAP is not an executable"
        echo "idle-footprint: $DOSETAP missing, building it (swift build -c release)" >&2
        (cd "$ROOT" && swift build -c release --product dosetap) >&2
    fi
    DOSETAP=$(realpath "$DOSETAP")
    AGENT_CMD=("$DOSETAP" agent --data-dir "$TMP/data")
    AGENT_LABEL="dosetap agent"
fi

# start_bg LOGFILE CMD... : run CMD in a new session; sets BG_PID (= its process group)
start_bg() {
    local log=$1; shift
    setsid "$@" >"$log" 2>&1 </dev/null &
    BG_PID=$!
    PGIDS+=("$BG_PID")
}

# ---- private buses --------------------------------------------------------------------------
start_bus() { # TYPE -> BUS_ADDRESS
    local type=$1 conf=$TMP/$1-bus.conf
    cat >"$conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>$type</type>
  <listen>unix:path=$TMP/$type-bus.socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
EOF
    start_bg "$TMP/$type-bus.log" dbus-daemon --config-file="$conf" --nofork --nopidfile
    for _ in $(seq 50); do [[ -S $TMP/$type-bus.socket ]] && break; sleep 0.1; done
    [[ -S $TMP/$type-bus.socket ]] || { cat "$TMP/$type-bus.log" >&2; die "private $type bus did not start"; }
    BUS_ADDRESS=unix:path=$TMP/$type-bus.socket
}
start_bus system; export DBUS_SYSTEM_BUS_ADDRESS=$BUS_ADDRESS
start_bus session; export DBUS_SESSION_BUS_ADDRESS=$BUS_ADDRESS
unset NOTIFY_SOCKET WATCHDOG_USEC WATCHDOG_PID

# ---- the two contenders ---------------------------------------------------------------------
# real_child WRAPPER_PID: the process umockdev-run forked (waits up to 5 s for it)
real_child() {
    local w=$1 c=
    for _ in $(seq 50); do
        c=$(pgrep -n -P "$w" || true)
        [[ -n $c ]] && { echo "$c"; return 0; }
        kill -0 "$w" 2>/dev/null || break
        sleep 0.1
    done
    return 1
}

mkdir -p "$TMP/upower-history" "$TMP/data" "$TMP/xdg-config" "$TMP/xdg-data"
if [[ -z ${UMOCKDEV_TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then UMOCKDEV_TMPDIR=/dev/shm; fi
UMOCKDEV_TMPDIR=${UMOCKDEV_TMPDIR:-${TMPDIR:-/tmp}}
read -r -a UPOWERD_EXTRA <<<"${UPOWERD_ARGS:-}"
start_bg "$TMP/upowerd.log" env TMPDIR="$UMOCKDEV_TMPDIR" UPOWER_HISTORY_DIR="$TMP/upower-history/" \
    umockdev-run -d "$FIXTURE" -- "$UPOWERD" "${UPOWERD_EXTRA[@]}"
UP_WRAPPER=$BG_PID
start_bg "$TMP/agent.log" env TMPDIR="$UMOCKDEV_TMPDIR" XDG_CONFIG_HOME="$TMP/xdg-config" XDG_DATA_HOME="$TMP/xdg-data" \
    umockdev-run -d "$FIXTURE" -- "${AGENT_CMD[@]}"
AGENT_WRAPPER=$BG_PID

UP_PID=$(real_child "$UP_WRAPPER") || { cat "$TMP/upowerd.log" >&2; die "upowerd did not start"; }
AGENT_PID=$(real_child "$AGENT_WRAPPER") || { cat "$TMP/agent.log" >&2; die "the agent did not start"; }

# upowerd must really see the fixture's battery (no power_supply device = nothing to measure)
devices=
for _ in $(seq 100); do
    devices=$(dbus-send --system --print-reply --dest=org.freedesktop.UPower /org/freedesktop/UPower \
        org.freedesktop.UPower.EnumerateDevices 2>/dev/null | sed -n 's/.*object path "\(.*\)"/\1/p') || true
    [[ $devices == *battery_* ]] && break
    kill -0 "$UP_PID" 2>/dev/null || break
    sleep 0.1
done
if [[ $devices != *battery_* ]]; then
    cat "$TMP/upowerd.log" >&2
    die "upowerd does not see a battery in $FIXTURE (devices: ${devices:-none})"
fi
battery=$(grep -m1 battery_ <<<"$devices")
percentage=$(dbus-send --system --print-reply --dest=org.freedesktop.UPower "$battery" \
    org.freedesktop.DBus.Properties.Get string:org.freedesktop.UPower.Device string:Percentage \
    2>/dev/null | awk '/double/ {print $3}') || true
echo "idle-footprint: upowerd ($UP_PID) sees: $(tr '\n' ' ' <<<"$devices")(battery at ${percentage:-?} %)" >&2
echo "idle-footprint: $AGENT_LABEL ($AGENT_PID) under umockdev-run ($AGENT_WRAPPER)" >&2

# ---- sampling -------------------------------------------------------------------------------
declare -A BASE=() LAST=() DEAD=()
alive() { # PID -> 0 if running and not a zombie
    local st
    [[ -r /proc/$1/stat ]] || return 1
    st=$(<"/proc/$1/stat") 2>/dev/null || return 1
    st=${st##*) }
    [[ ${st%% *} != Z ]]
}
cpu_ticks() { # PID -> utime+stime of the whole thread group
    local st f
    st=$(<"/proc/$1/stat")
    read -r -a f <<<"${st##*) }"  # fields from 3 (state) on: utime is f[11], stime f[12]
    echo $((f[11] + f[12]))
}
status_kb() { # PID FIELD -> value in kB
    local k v _
    while read -r k v _; do [[ $k == "$2:" ]] && { echo "$v"; return; }; done <"/proc/$1/status"
    echo 0
}
pss_kb() {
    local k v _
    [[ -r /proc/$1/smaps_rollup ]] || { echo ""; return; }
    while read -r k v _; do [[ $k == Pss: ]] && { echo "$v"; return; }; done <"/proc/$1/smaps_rollup"
    echo ""
}
# sample NAME PID PHASE: record every thread's voluntary+nonvoluntary switches.
# PHASE=base sets the baseline; later threads start from 0.
sample() {
    local name=$1 pid=$2 phase=$3 t k v _ n
    alive "$pid" || { [[ -n ${DEAD[$name]:-} ]] || DEAD[$name]=$(date +%T); return 0; }
    for t in /proc/"$pid"/task/*; do
        n=0
        { while read -r k v _; do
              case $k in voluntary_ctxt_switches:|nonvoluntary_ctxt_switches:) n=$((n + v)) ;; esac
          done <"$t/status"; } 2>/dev/null || continue
        t=${t##*/}
        [[ $phase == base ]] && BASE[$name:$t]=$n
        [[ -n ${BASE[$name:$t]+x} ]] || BASE[$name:$t]=0
        LAST[$name:$t]=$n
    done
}
switches() { # NAME -> total increase in the window over all threads seen
    local key sum=0
    for key in "${!LAST[@]}"; do
        [[ $key == "$1:"* ]] && sum=$((sum + LAST[$key] - BASE[$key]))
    done
    echo "$sum"
}
nthreads() { local t=(/proc/"$1"/task/*); echo "${#t[@]}"; }
threads_seen() { local key n=0; for key in "${!LAST[@]}"; do [[ $key == "$1:"* ]] && n=$((n + 1)); done; echo "$n"; }

echo "idle-footprint: settling ${SETTLE}s, then measuring ${DURATION}s" >&2
sleep "$SETTLE"

declare -A PID_OF=([upowerd]=$UP_PID [agent]=$AGENT_PID) CPU0=() THREADS0=()
for name in upowerd agent; do
    pid=${PID_OF[$name]}
    if alive "$pid"; then
        CPU0[$name]=$(cpu_ticks "$pid")
        THREADS0[$name]=$(nthreads "$pid")
    fi
    sample "$name" "$pid" base
done
t0=$EPOCHREALTIME
end_us=$(( ${t0/./} + DURATION * 1000000 ))
while :; do
    left_us=$(( end_us - ${EPOCHREALTIME/./} ))
    (( left_us > 0 )) || break
    (( left_us > 1000000 )) && left_us=1000000
    sleep "$(printf '%d.%06d' $((left_us / 1000000)) $((left_us % 1000000)))"
    for name in upowerd agent; do sample "$name" "${PID_OF[$name]}" window; done
done
t1=$EPOCHREALTIME
elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')

# ---- report ---------------------------------------------------------------------------------
mb() { awk -v k="$1" 'BEGIN { if (k == "") print "n/a"; else printf "%.1f", k / 1024 }'; }
row() { # NAME LABEL
    local name=$1 label=$2 pid=${PID_OF[$1]} rss hwm pss cpu sw thr
    if [[ -n ${DEAD[$name]:-} ]] || ! alive "$pid"; then
        echo "| $label | $pid | DIED${DEAD[$name]:+ at ${DEAD[$name]}} | | | | | | | |"
        return
    fi
    rss=$(status_kb "$pid" VmRSS); hwm=$(status_kb "$pid" VmHWM); pss=$(pss_kb "$pid")
    cpu=$(cpu_ticks "$pid")
    sw=$(switches "$name")
    thr="${THREADS0[$name]}→$(nthreads "$pid") ($(threads_seen "$name") seen)"
    awk -v l="$label" -v p="$pid" -v rss="$(mb "$rss")" -v hwm="$(mb "$hwm")" -v pss="$(mb "$pss")" \
        -v c="$cpu" -v c0="${CPU0[$name]}" -v hz="$CLK_TCK" -v sw="$sw" -v el="$elapsed" -v thr="$thr" \
        'BEGIN { printf "| %s | %s | %s | %s | %s | %.2f | %.2f | %d | %.1f | %s |\n",
                 l, p, rss, hwm, pss, c / hz, (c - c0) / hz, sw, sw * 60 / el, thr }'
}
report() {
    echo "Idle footprint, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -srm), $(nproc) CPUs"
    echo "Fixture: ${FIXTURE#"$ROOT"/}; window ${elapsed}s after ${SETTLE}s settle; both under umockdev-run."
    echo
    echo "| process | PID | RSS MB | peak RSS MB | PSS MB | CPU s (total) | CPU s (window) | ctx switches (window) | switches/min | threads |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    row upowerd "upowerd $(dpkg-query -W -f='${Version}' upower 2>/dev/null || true)"
    row agent "$AGENT_LABEL"
}
REPORT=$(report)
echo "$REPORT"
[[ -z $OUTPUT ]] || printf '%s\n' "$REPORT" >"$OUTPUT"

status=0
for name in upowerd agent; do
    if [[ -n ${DEAD[$name]:-} ]] || ! alive "${PID_OF[$name]}"; then
        echo "idle-footprint: $name died during the run; last lines of its log:" >&2
        tail -n 20 "$TMP/$name.log" >&2 || true
        status=1
    fi
done
exit "$status"
