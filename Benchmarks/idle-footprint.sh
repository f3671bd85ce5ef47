#!/usr/bin/env bash
# Idle footprint of the DoseTap agent next to upowerd, under the same umockdev battery: in one run,
# both power states and both setups, agent and upowerd side by side in each (issue #15).
#
# Usage:
#   Benchmarks/idle-footprint.sh [-d SECONDS] [-s SECONDS] [-a SECONDS] [-o FILE] [FIXTURE]
#
#   FIXTURE        umockdev file for the battery state (default:
#                  hw-fixtures/power_supply/energy-discharging.umockdev); the AC state is always
#                  hw-fixtures/power_supply/ac-online.umockdev (on AC, charging)
#   -d SECONDS     length of each measured window (default 60)
#   -s SECONDS     settle time after start-up, before the window opens (default 5)
#   -a SECONDS     with a button: one BTHome advert (a beacon, no press) every SECONDS (default 10)
#   -o FILE        also write the markdown report to FILE (e.g. docs/benchmarks/idle.md)
#   -h             this help
#
# The four scenarios, each with fresh buses, upowerd and agent:
#   battery, no buttons       the battery fixture, no BlueZ on the system bus
#   AC, no buttons            ac-online.umockdev
#   battery, one button       + python-dbusmock's bluez5 template with adapter hci0 and one device, added
#   AC, one button              to the agent with `dosetap button add ADDR --kind bthome`; a BTHome beacon
#                               (battery 100 %, button event "none") every -a seconds through the mock
#                               (Properties.Set of Device1.ServiceData = the PropertiesChanged bluetoothd
#                               sends); the report counts the adverts in the window
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
#   ONLY=LIST      run only these scenarios (comma-separated: battery,ac,battery+button,ac+button)
#   DOSETAP_AUDIO_DEVICE  the agent's ALSA device (default here: null, as in the tests; see below)
#   STRACE=1       also trace the agent's threads during each window (strace -f -tt, written to
#                  $TMP/<scenario>/agent.strace; implies KEEP_TMP=1): which thread wakes, and why.
#                  ptrace stops count as context switches: the wake-up figures of such a run are
#                  inflated, read the trace instead
#   BREAKDOWN=1    after the first scenario, where the agent's RSS goes (Benchmarks/rss-breakdown.py)
#
# What it does, per scenario: starts a private system bus and a private session bus (dbus-daemon,
# config written to a temp dir, anyone may own names and send), runs
#   umockdev-run -d FIXTURE -- upowerd                       (with DBUS_SYSTEM_BUS_ADDRESS set)
#   umockdev-run -d FIXTURE -- $DOSETAP agent --data-dir $TMP/data
# side by side, checks that upowerd enumerates the battery, lets both settle, then measures
# the real children (umockdev-run forks; the wrapper itself is not counted) over the same window:
#   RSS / peak RSS / PSS   VmRSS at the window's end, VmHWM (/proc/PID/status), Pss (/proc/PID/smaps_rollup)
#   RSS mean / max         VmRSS read once a second through the window (the agent gives back its clean pages
#                          of code at the end of a wake-up whose work mapped 6 MB of them, unless
#                          DOSETAP_RELEASE_PAGES=0 is set: docs/performance.md)
#   CPU                    utime+stime (/proc/PID/stat, clock ticks -> s), total and in window
#   wake-ups               increase of voluntary+nonvoluntary context switches in the window,
#                          summed over ALL threads (/proc/PID/status counts the main thread
#                          only, so /proc/PID/task/*/status is sampled every second; threads
#                          born in the window count from 0)
#   seconds woken          how many of the once-a-second readings found more switches than the last one: a
#                          burst (the battery sample, an advert) counts once however many switches it
#                          took; the seconds and their switches are printed on stderr and kept in
#                          $TMP/<scenario>/<process>.timeline
#   major faults           increase of majflt (/proc/PID/stat) in the window: pages read back from the disk,
#                          each a sleep of the faulting thread and so a voluntary context switch — on a
#                          machine that pages out cold page cache, what a wake-up's first touch of
#                          long-unused code costs
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

ADVERT_EVERY=10
while getopts ":d:s:a:o:h" opt; do
    case $opt in
        d) DURATION=$OPTARG ;;
        a) ADVERT_EVERY=$OPTARG ;;
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
[[ $ADVERT_EVERY =~ ^[0-9]+$ && $ADVERT_EVERY -ge 1 ]] || die "-a wants whole seconds >= 1, got '$ADVERT_EVERY'"
[[ -f $FIXTURE ]] || die "fixture not found: $FIXTURE"
FIXTURE=$(realpath "$FIXTURE")
AC_FIXTURE=$ROOT/hw-fixtures/power_supply/ac-online.umockdev
[[ -f $AC_FIXTURE ]] || die "fixture not found: $AC_FIXTURE"
[[ ${STRACE:-0} == 1 ]] && KEEP_TMP=1
/usr/bin/python3 -c 'import dbusmock, dbus' 2>/dev/null || die "python3-dbusmock and python3-dbus are missing for /usr/bin/python3"

UPOWERD=${UPOWERD:-/usr/libexec/upowerd}
for tool in umockdev-run dbus-daemon dbus-send setsid realpath getconf pgrep; do
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
# stop_groups: ends every process group started so far (between scenarios)
stop_groups() {
    local pg
    for pg in "${PGIDS[@]}"; do kill -TERM -- "-$pg" 2>/dev/null || true; done
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        local alive=0
        for pg in "${PGIDS[@]}"; do kill -0 -- "-$pg" 2>/dev/null && alive=1; done
        [[ $alive == 0 ]] && break
        sleep 0.3
    done
    for pg in "${PGIDS[@]}"; do kill -KILL -- "-$pg" 2>/dev/null || true; done
    PGIDS=()
}
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
    AGENT_CMD=("$DOSETAP" agent)
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
start_bus() { # DIR TYPE -> BUS_ADDRESS
    local dir=$1 type=$2 conf=$1/$2-bus.conf
    cat >"$conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>$type</type>
  <listen>unix:path=$dir/$type-bus.socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
EOF
    start_bg "$dir/$type-bus.log" dbus-daemon --config-file="$conf" --nofork --nopidfile
    for _ in $(seq 50); do [[ -S $dir/$type-bus.socket ]] && break; sleep 0.1; done
    [[ -S $dir/$type-bus.socket ]] || { cat "$dir/$type-bus.log" >&2; die "private $type bus did not start"; }
    BUS_ADDRESS=unix:path=$dir/$type-bus.socket
}
unset NOTIFY_SOCKET WATCHDOG_USEC WATCHDOG_PID

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

if [[ -z ${UMOCKDEV_TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then UMOCKDEV_TMPDIR=/dev/shm; fi
UMOCKDEV_TMPDIR=${UMOCKDEV_TMPDIR:-${TMPDIR:-/tmp}}
read -r -a UPOWERD_EXTRA <<<"${UPOWERD_ARGS:-}"
BUTTON=A4:C1:38:8D:18:B7

# The mock BlueZ of the button scenarios: python-dbusmock's bluez5 template, adapter hci0, one device.
start_bluez() { # DIR
    local dir=$1
    start_bg "$dir/bluez.log" /usr/bin/python3 -m dbusmock --system --template bluez5
    for _ in $(seq 100); do
        dbus-send --system --print-reply --dest=org.bluez /org/bluez org.freedesktop.DBus.Introspectable.Introspect \
            >/dev/null 2>&1 && break
        sleep 0.1
    done
    dbus-send --system --print-reply --dest=org.bluez /org/bluez org.bluez.Mock.AddAdapter string:hci0 string:bedside-pi >/dev/null \
        || die "mock BlueZ: AddAdapter failed (log: $dir/bluez.log)"
    dbus-send --system --print-reply --dest=org.bluez /org/bluez org.bluez.Mock.AddDevice string:hci0 string:$BUTTON string:bedside >/dev/null \
        || die "mock BlueZ: AddDevice failed"
}

# The advert source: a BTHome v2 beacon (packet id, battery 100 %, button event "none") every
# ADVERT_EVERY seconds; each one appends a line to DIR/adverts.
start_adverts() { # DIR
    local dir=$1
    start_bg "$dir/adverts.log" /usr/bin/python3 -c '
import sys, time, dbus
every, address, log = float(sys.argv[1]), sys.argv[2], sys.argv[3]
bus = dbus.SystemBus()
device = bus.get_object("org.bluez", "/org/bluez/hci0/dev_" + address.replace(":", "_"))
pid = 0
while True:
    pid = (pid + 1) % 256
    data = dbus.Array([0x40, 0x00, pid, 0x01, 100, 0x3A, 0x00], signature="y")
    device.Set("org.bluez.Device1", "ServiceData",
               dbus.Dictionary({"0000fcd2-0000-1000-8000-00805f9b34fb": data}, signature="sv"),
               dbus_interface="org.freedesktop.DBus.Properties")
    with open(log, "a") as f: f.write("%.3f\n" % time.time())
    time.sleep(every)
' "$ADVERT_EVERY" "$BUTTON" "$dir/adverts"
}

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
major_faults() { # PID -> major page faults of the whole thread group (pages read from disk: the thread sleeps)
    local st f
    st=$(<"/proc/$1/stat")
    read -r -a f <<<"${st##*) }"  # majflt is field 12, f[9]
    echo "${f[9]}"
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
    # When it woke: the seconds of the window in which its summed switches grew, and by how much
    # ("+61s:23" in TIMELINE), so a report can tell one burst a minute (the battery sample) from a steady trickle.
    local total=0 key
    for key in "${!LAST[@]}"; do [[ $key == "$name:"* ]] && total=$((total + LAST[$key])); done
    if [[ $phase == window ]] && (( total > ${PREV_TOTAL[$name]:-0} )); then
        WOKEN_SECONDS[$name]=$(( ${WOKEN_SECONDS[$name]:-0} + 1 ))
        TIMELINE[$name]+="+$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }')s:$(( total - PREV_TOTAL[$name] )) "
    fi
    PREV_TOTAL[$name]=$total
    # The resident set over the window, once a second (reading /proc wakes nothing): its mean and maximum.
    if [[ $phase == window ]]; then
        v=$(status_kb "$pid" VmRSS)
        if [[ -n $v ]]; then
            RSS_SUM[$name]=$(( ${RSS_SUM[$name]:-0} + v )); RSS_N[$name]=$(( ${RSS_N[$name]:-0} + 1 ))
            (( v > ${RSS_MAX[$name]:-0} )) && RSS_MAX[$name]=$v
        fi
    fi
    return 0
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

declare -A ROWS=()
SCENARIOS=()

# The agent plays to ALSA's null device unless told otherwise, as in the tests: the idle windows play no sound,
# and under umockdev-run the default device's probe at start-up aborted the agent ("libumockdev-preload
# fd_map_add(): overflow", 2026-11-28, on a machine with no sound card).
export DOSETAP_AUDIO_DEVICE=${DOSETAP_AUDIO_DEVICE-null}

# scenario NAME FIXTURE BUTTON(0|1): one measurement; appends its two rows to ROWS[NAME]
scenario() {
    local name=$1 fixture=$2 button=$3 dir=$TMP/${1/+/-} devices= battery percentage
    mkdir -p "$dir/upower-history" "$dir/data" "$dir/xdg-config" "$dir/xdg-data"
    echo "idle-footprint: --- $name ($(basename "$fixture")$([[ $button == 1 ]] && echo ", one BTHome button every ${ADVERT_EVERY}s")) ---" >&2
    start_bus "$dir" system; export DBUS_SYSTEM_BUS_ADDRESS=$BUS_ADDRESS
    start_bus "$dir" session; export DBUS_SESSION_BUS_ADDRESS=$BUS_ADDRESS
    if [[ $button == 1 ]]; then
        start_bluez "$dir"
        if [[ -z ${DOSETAP_CMD:-} ]]; then
            env XDG_CONFIG_HOME="$dir/xdg-config" XDG_DATA_HOME="$dir/xdg-data" \
                "$DOSETAP" button add "$BUTTON" --kind bthome --name bedside --data-dir "$dir/data" >"$dir/button-add.log" 2>&1 \
                || { cat "$dir/button-add.log" >&2; die "dosetap button add failed"; }
        fi
    fi
    start_bg "$dir/upowerd.log" env TMPDIR="$UMOCKDEV_TMPDIR" UPOWER_HISTORY_DIR="$dir/upower-history/" \
        umockdev-run -d "$fixture" -- "$UPOWERD" "${UPOWERD_EXTRA[@]}"
    local up_wrapper=$BG_PID
    local agent_cmd=("${AGENT_CMD[@]}")
    [[ -n ${DOSETAP_CMD:-} ]] || agent_cmd+=(--data-dir "$dir/data")
    start_bg "$dir/agent.log" env TMPDIR="$UMOCKDEV_TMPDIR" XDG_CONFIG_HOME="$dir/xdg-config" XDG_DATA_HOME="$dir/xdg-data" \
        umockdev-run -d "$fixture" -- "${agent_cmd[@]}"
    local agent_wrapper=$BG_PID
    UP_PID=$(real_child "$up_wrapper") || { cat "$dir/upowerd.log" >&2; die "upowerd did not start"; }
    AGENT_PID=$(real_child "$agent_wrapper") || { cat "$dir/agent.log" >&2; die "the agent did not start"; }

    # upowerd must really see the fixture's battery (no power_supply device = nothing to measure)
    for _ in $(seq 100); do
        devices=$(dbus-send --system --print-reply --dest=org.freedesktop.UPower /org/freedesktop/UPower \
            org.freedesktop.UPower.EnumerateDevices 2>/dev/null | sed -n 's/.*object path "\(.*\)"/\1/p') || true
        [[ $devices == *battery_* ]] && break
        kill -0 "$UP_PID" 2>/dev/null || break
        sleep 0.1
    done
    if [[ $devices != *battery_* ]]; then
        cat "$dir/upowerd.log" >&2
        die "upowerd does not see a battery in $fixture (devices: ${devices:-none})"
    fi
    battery=$(grep -m1 battery_ <<<"$devices")
    percentage=$(dbus-send --system --print-reply --dest=org.freedesktop.UPower "$battery" \
        org.freedesktop.DBus.Properties.Get string:org.freedesktop.UPower.Device string:Percentage \
        2>/dev/null | awk '/double/ {print $3}') || true
    echo "idle-footprint: upowerd ($UP_PID) sees: $(tr '\n' ' ' <<<"$devices")(battery at ${percentage:-?} %)" >&2
    echo "idle-footprint: $AGENT_LABEL ($AGENT_PID) under umockdev-run ($agent_wrapper)" >&2
    [[ $button == 1 ]] && start_adverts "$dir"

    echo "idle-footprint: settling ${SETTLE}s, then measuring ${DURATION}s" >&2
    sleep "$SETTLE"
    BASE=(); LAST=(); DEAD=(); CPU0=(); THREADS0=(); RSS_SUM=(); RSS_N=(); RSS_MAX=(); PREV_TOTAL=(); WOKEN_SECONDS=(); TIMELINE=(); MAJ0=()
    t0=$EPOCHREALTIME
    PID_OF=([upowerd]=$UP_PID [agent]=$AGENT_PID)
    for who in upowerd agent; do
        pid=${PID_OF[$who]}
        if alive "$pid"; then
            CPU0[$who]=$(cpu_ticks "$pid")
            MAJ0[$who]=$(major_faults "$pid")
            THREADS0[$who]=$(nthreads "$pid")
        fi
        sample "$who" "$pid" base
    done
    local tracer=
    if [[ ${STRACE:-0} == 1 ]] && command -v strace >/dev/null; then
        strace -f -tt -p "$AGENT_PID" -o "$dir/agent.strace" 2>/dev/null &
        tracer=$!
    fi
    local adverts0=0 adverts1=0
    [[ -f $dir/adverts ]] && adverts0=$(wc -l <"$dir/adverts")
    t0=$EPOCHREALTIME
    end_us=$(( ${t0/./} + DURATION * 1000000 ))
    while :; do
        left_us=$(( end_us - ${EPOCHREALTIME/./} ))
        (( left_us > 0 )) || break
        (( left_us > 1000000 )) && left_us=1000000
        sleep "$(printf '%d.%06d' $((left_us / 1000000)) $((left_us % 1000000)))"
        for who in upowerd agent; do sample "$who" "${PID_OF[$who]}" window; done
    done
    t1=$EPOCHREALTIME
    [[ -f $dir/adverts ]] && adverts1=$(wc -l <"$dir/adverts")
    [[ -z $tracer ]] || { kill "$tracer" 2>/dev/null; wait "$tracer" 2>/dev/null || true; }
    elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    ADVERTS=$((adverts1 - adverts0))
    for who in upowerd agent; do echo "${TIMELINE[$who]:-}" >"$dir/$who.timeline"; done
    echo "idle-footprint: agent woke in these seconds of the window (+s:switches): ${TIMELINE[agent]:-none}" >&2
    local label=$name
    [[ $button == 1 ]] && label="$name, $ADVERTS adverts"
    ROWS[$name]="$(row upowerd "$label" "upowerd")
$(row agent "$label" "$AGENT_LABEL")"
    SCENARIOS+=("$name")
    if [[ ${BREAKDOWN:-0} == 1 && ${#SCENARIOS[@]} == 1 ]] && alive "$AGENT_PID"; then
        BREAKDOWN_TEXT=$(/usr/bin/python3 "$ROOT/Benchmarks/rss-breakdown.py" "$AGENT_PID" 2>&1 || true)
    fi
    for who in upowerd agent; do
        if [[ -n ${DEAD[$who]:-} ]] || ! alive "${PID_OF[$who]}"; then
            echo "idle-footprint: $who died during $name; last lines of its log:" >&2
            tail -n 20 "$dir/$who.log" >&2 || true
            STATUS=1
        fi
    done
    stop_groups
}

# ---- report ---------------------------------------------------------------------------------
mb() { awk -v k="$1" 'BEGIN { if (k == "") print "n/a"; else printf "%.1f", k / 1024 }'; }
row() { # NAME SCENARIO LABEL
    local name=$1 scen=$2 label=$3 pid=${PID_OF[$1]} rss hwm pss cpu sw thr
    if [[ -n ${DEAD[$name]:-} ]] || ! alive "$pid"; then
        echo "| $scen | $label | $pid | DIED${DEAD[$name]:+ at ${DEAD[$name]}} | | | | | | | | | | | |"
        return
    fi
    rss=$(status_kb "$pid" VmRSS); hwm=$(status_kb "$pid" VmHWM); pss=$(pss_kb "$pid")
    cpu=$(cpu_ticks "$pid")
    sw=$(switches "$name")
    thr="${THREADS0[$name]}→$(nthreads "$pid") ($(threads_seen "$name") seen)"
    local mean= max=
    (( ${RSS_N[$name]:-0} > 0 )) && mean=$(( RSS_SUM[$name] / RSS_N[$name] )) && max=${RSS_MAX[$name]}
    awk -v s="$scen" -v l="$label" -v p="$pid" -v rss="$(mb "$rss")" -v hwm="$(mb "$hwm")" -v pss="$(mb "$pss")" \
        -v mean="$(mb "$mean")" -v max="$(mb "$max")" \
        -v c="$cpu" -v c0="${CPU0[$name]}" -v hz="$CLK_TCK" -v sw="$sw" -v el="$elapsed" -v thr="$thr" \
        -v woken="${WOKEN_SECONDS[$name]:-0}" -v maj="$(( $(major_faults "$pid") - ${MAJ0[$name]:-0} ))" \
        'BEGIN { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %.2f | %d | %.1f | %d | %d | %s |\n",
                 s, l, p, rss, mean, max, hwm, pss, c / hz, (c - c0) / hz, sw, sw * 60 / el, woken, maj, thr }'
}

STATUS=0
BREAKDOWN_TEXT=
declare -A PID_OF=() CPU0=() THREADS0=() RSS_SUM=() RSS_N=() RSS_MAX=() PREV_TOTAL=() WOKEN_SECONDS=() TIMELINE=() MAJ0=()
want() { [[ -z ${ONLY:-} || ,$ONLY, == *",$1,"* ]]; }
want battery && scenario battery "$FIXTURE" 0
want ac && scenario ac "$AC_FIXTURE" 0
want battery+button && scenario battery+button "$FIXTURE" 1
want ac+button && scenario ac+button "$AC_FIXTURE" 1

report() {
    echo "Idle footprint, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -srm), $(nproc) CPUs"
    echo "Battery: ${FIXTURE#"$ROOT"/}; AC: ${AC_FIXTURE#"$ROOT"/}; windows of ${DURATION}s after ${SETTLE}s settle;"
    echo "both processes under umockdev-run; upowerd $(dpkg-query -W -f='${Version}' upower 2>/dev/null || true)."
    echo
    echo "| scenario | process | PID | RSS MB (end) | RSS MB (window mean) | RSS MB (window max) | peak RSS MB | PSS MB | CPU s (total) | CPU s (window) | wake-ups (window) | wake-ups/min | seconds woken | major faults (window) | threads |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    local name
    for name in "${SCENARIOS[@]}"; do echo "${ROWS[$name]}"; done
    if [[ -n $BREAKDOWN_TEXT ]]; then
        echo
        echo "$BREAKDOWN_TEXT"
    fi
}
REPORT=$(report)
echo "$REPORT"
[[ -z $OUTPUT ]] || printf '%s\n' "$REPORT" >"$OUTPUT"
exit "$STATUS"
