#!/usr/bin/env bash
# Wall-clock latency of the dosetap CLI, measured with hyperfine.
#
# Usage:
#   Benchmarks/cli-latency.sh [-o DIR] [-r] [FIXTURE]
#
#   FIXTURE   umockdev file for `dosetap battery`
#             (default: hw-fixtures/power_supply/energy-discharging.umockdev)
#   -o DIR    keep hyperfine's JSON (cli-latency.json) and a markdown table (cli-latency.md) in DIR
#             (default: a temp dir, removed at exit)
#   -r        also time `dosetap battery --json` on the machine's own /sys (a laptop or a Pi;
#             it must have a battery, or the command fails)
#   -h        this help
#
# Environment:
#   DOSETAP   binary to time (default .build/release/dosetap; build it first with
#             `swift build -c release --product dosetap`)
#   RUNS      timed runs per command (default 30), WARMUP warm-up runs (default 3)
#   UMOCKDEV_TMPDIR  where umockdev-run builds its fake /sys (default /dev/shm when writable).
#             It matters: on a disk-backed /tmp, building the testbed cost ~250 ms of system
#             time per umockdev-run here, on tmpfs ~20 ms; the subtraction below is only
#             meaningful when that overhead is small and steady.
#
# Times, each with --warmup 3 --runs 30, without a shell in between (hyperfine -N):
#   1. dosetap predict --level 55 --drain 6 --hours 7 --json
#   2. umockdev-run -d FIXTURE -- dosetap battery --json
#   3. umockdev-run -d FIXTURE -- true            (umockdev-run's own cost, to subtract from 2)
# and prints the median wall times in ms, plus "battery minus umockdev-run".
# The CLI runs with DOSETAP_DATA_DIR and XDG_CONFIG_HOME in a temp dir: your data is not touched.
# Needs: hyperfine, umockdev (umockdev-run), jq (or python3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIXTURE=$ROOT/hw-fixtures/power_supply/energy-discharging.umockdev
OUTDIR=
REAL_SYS=0
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}

usage() { sed -n '2,/^set -euo pipefail/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "cli-latency: $*" >&2; exit 2; }

while getopts ":o:rh" opt; do
    case $opt in
        o) OUTDIR=$OPTARG ;;
        r) REAL_SYS=1 ;;
        h) usage; exit 0 ;;
        :) die "-$OPTARG needs a value (see -h)" ;;
        *) die "unknown option -$OPTARG (see -h)" ;;
    esac
done
shift $((OPTIND - 1))
[[ $# -le 1 ]] || die "at most one FIXTURE argument (see -h)"
[[ $# -eq 1 ]] && FIXTURE=$1
[[ -f $FIXTURE ]] || die "fixture not found: $FIXTURE"
FIXTURE=$(realpath "$FIXTURE")
[[ $RUNS =~ ^[0-9]+$ && $RUNS -ge 2 && $WARMUP =~ ^[0-9]+$ ]] || die "RUNS >= 2 and WARMUP >= 0, please"

for tool in hyperfine umockdev-run realpath; do
    command -v "$tool" >/dev/null || die "missing tool: $tool"
done
if command -v jq >/dev/null; then JSON=jq
elif command -v python3 >/dev/null; then JSON=python3
else die "need jq or python3 to read hyperfine's JSON"; fi

DOSETAP=${DOSETAP:-$ROOT/.build/release/dosetap}
[[ -x $DOSETAP ]] || die "$DOSETAP is not an executable (swift build -c release --product dosetap, or set DOSETAP)"
DOSETAP=$(realpath "$DOSETAP")

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dosetap-cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
if [[ -n $OUTDIR ]]; then mkdir -p "$OUTDIR"; OUTDIR=$(realpath "$OUTDIR"); else OUTDIR=$TMP; fi
mkdir -p "$TMP/data" "$TMP/config"
export DOSETAP_DATA_DIR=$TMP/data XDG_CONFIG_HOME=$TMP/config XDG_DATA_HOME=$TMP/data
unset NOTIFY_SOCKET
if [[ -z ${UMOCKDEV_TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then UMOCKDEV_TMPDIR=/dev/shm; fi
if [[ -n ${UMOCKDEV_TMPDIR:-} ]]; then export TMPDIR=$UMOCKDEV_TMPDIR; fi

q() { printf '%q' "$1"; }
PREDICT="$(q "$DOSETAP") predict --level 55 --drain 6 --hours 7 --json"
BATTERY="umockdev-run -d $(q "$FIXTURE") -- $(q "$DOSETAP") battery --json"
BASELINE="umockdev-run -d $(q "$FIXTURE") -- true"

# One plain run of each first: a failing command is reported with its own message, and the
# output shows what is being timed.
for cmd in "$PREDICT" "$BATTERY"; do
    echo "\$ ${cmd//"$ROOT"\//}" >&2
    if ! out=$(eval "$cmd" 2>&1); then
        printf '%s\n' "$out" >&2
        die "command failed (exit status above); nothing timed"
    fi
    printf '%s\n' "$out" | head -n 5 >&2
done

COMMANDS=(
    -n "predict --json" "$PREDICT"
    -n "battery --json (under umockdev-run)" "$BATTERY"
    -n "umockdev-run true (overhead)" "$BASELINE"
)
[[ $REAL_SYS == 0 ]] || COMMANDS+=(-n "battery --json (machine's /sys)" "$(q "$DOSETAP") battery --json")
hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --style basic \
    --export-json "$OUTDIR/cli-latency.json" "${COMMANDS[@]}" >&2

# name<TAB>median<TAB>mean<TAB>stddev<TAB>min<TAB>max, seconds
if [[ $JSON == jq ]]; then
    rows=$(jq -r '.results[] | [.command, .median, .mean, .stddev, .min, .max] | @tsv' "$OUTDIR/cli-latency.json")
else
    rows=$(python3 -c 'import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("\t".join(str(x) for x in (r["command"], r["median"], r["mean"], r["stddev"], r["min"], r["max"])))' \
        "$OUTDIR/cli-latency.json")
fi

{
    echo "CLI latency, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -srm), $(nproc) CPUs, hyperfine -N --warmup $WARMUP --runs $RUNS"
    echo "Binary: ${DOSETAP#"$ROOT"/}; fixture: ${FIXTURE#"$ROOT"/}; umockdev testbed in ${TMPDIR:-/tmp}"
    echo
    echo "| command | median ms | mean ± σ ms | min ms | max ms |"
    echo "|---|---|---|---|---|"
    awk -F'\t' '{ printf "| %s | %.2f | %.2f ± %.2f | %.2f | %.2f |\n", $1, $2*1000, $3*1000, $4*1000, $5*1000, $6*1000 }' <<<"$rows"
    echo
    awk -F'\t' 'NR == 2 { b = $2 } NR == 3 { o = $2 }
        END { printf "battery --json minus umockdev-run overhead (medians): %.2f ms\n", (b - o) * 1000 }' <<<"$rows"
} | tee "$OUTDIR/cli-latency.md"
