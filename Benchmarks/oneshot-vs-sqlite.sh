#!/usr/bin/env bash
# The one-shot commands a status bar, a script or a prompt calls often, side by side with sqlite3
# answering a query on the same database file (#29): wall time with hyperfine, peak RSS with
# /usr/bin/time.
#
#   Benchmarks/oneshot-vs-sqlite.sh            (DOSETAP=binary to time; see below)
#
# The binary is the one users install: by default `make install`'s steps (install + strip --strip-debug) applied to
# .build/release/dosetap-front (as bin/dosetap) and .build/release/dosetap (as lib/dosetap/dosetap, the full
# program the front runs for what it does not answer itself) in a temporary directory — build them first with
# `make release`. DOSETAP=PATH times another one (an installed ~/.local/bin/dosetap, /usr/bin/dosetap from the
# .deb).
#
# Data: ten years of nights (3,650, as dose-latency.sh seeds them), Dose 1 tonight 90 minutes ago, and
# three alarms, in a temporary directory (yours is not touched). As installed, the agent runs beside them
# (`dosetap agent` on the same data, started first: a status bar's machine runs it, and `alarm list` and `status`
# read its findings — whether it can wake the machine and play the sound); NO_AGENT=1 times them without it (the
# command line then checks the machine itself: the full program answers). Timed, in one hyperfine run (-N, no
# shell), warm-up WARMUP (5) and RUNS (40) each:
#   dosetap dose status --json
#   dosetap alarm list --json
#   dosetap status --format waybar
#   dosetap predict --level 55 --drain 6 --hours 7 --json
#   sqlite3 FILE "SELECT kind, at FROM dose_event ORDER BY at DESC LIMIT 4"
# Peak RSS: the largest of RSS_RUNS (10) runs of each under /usr/bin/time -f %M.
# Prints a markdown table: median, its ratio to sqlite3's, and peak RSS; -o DIR keeps the JSON.
# Goals (#29): median ≤ 2 × sqlite3's, peak RSS ≤ 15 MB.
# Needs hyperfine, sqlite3, faketime, python3, strip.
set -euo pipefail
cd "$(dirname "$0")/.."
OUTDIR=
while getopts ":o:h" opt; do
    case $opt in
        o) OUTDIR=$OPTARG ;;
        h) sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "oneshot-vs-sqlite: unknown option (see -h)" >&2; exit 2 ;;
    esac
done
for tool in hyperfine sqlite3 faketime python3 strip; do
    command -v "$tool" >/dev/null || { echo "oneshot-vs-sqlite: missing tool: $tool (make deps-bench)" >&2; exit 2; }
done
RUNS=${RUNS:-40}
WARMUP=${WARMUP:-5}
RSS_RUNS=${RSS_RUNS:-10}

work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/dosetap-oneshot.XXXXXX")
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
if [[ -n ${DOSETAP:-} ]]; then
    bin=$(realpath "$DOSETAP")
else
    for b in dosetap dosetap-front; do
        [[ -x .build/release/$b ]] || { echo "oneshot-vs-sqlite: build .build/release/$b first (make release)" >&2; exit 2; }
    done
    # What `make install` does to them.
    install -Dm755 .build/release/dosetap-front "$work/bin/dosetap"
    install -Dm755 .build/release/dosetap "$work/lib/dosetap/dosetap"
    strip --strip-debug "$work/bin/dosetap" "$work/lib/dosetap/dosetap"   # the Makefile's STRIP: symbols kept
    bin=$work/bin/dosetap
fi
[[ -x $bin ]] || { echo "oneshot-vs-sqlite: $bin is not an executable" >&2; exit 2; }

export TZ=America/New_York XDG_CONFIG_HOME=$work/config XDG_DATA_HOME=$work/data
unset DOSETAP_DATA_DIR
"$bin" setup --show >/dev/null
db=$work/data/dosetap/dosetap.sqlite
Benchmarks/seed-ten-years.py "$db" 2>/dev/null
faketime -f "@$(date -d '-90 minutes' '+%Y-%m-%d %H:%M:%S')" "$bin" dose take >/dev/null
"$bin" alarm add 06:30 --label work >/dev/null
"$bin" alarm add 07:15 --label weekend >/dev/null
"$bin" alarm add 05:30 --label early >/dev/null

agent=
if [[ -z ${NO_AGENT:-} ]]; then
    "$bin" agent >"$work/agent.log" 2>&1 &
    agent=$!
    trap 'kill "$agent" 2>/dev/null; wait "$agent" 2>/dev/null; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
    # Ready once it holds its records for the command line (an exclusive flock on each).
    ready=
    for _ in $(seq 300); do
        if [[ -e $work/data/dosetap/wake-status.json && -e $work/data/dosetap/sound-status.json ]] &&
           ! flock -n -s "$work/data/dosetap/wake-status.json" true && ! flock -n -s "$work/data/dosetap/sound-status.json" true; then
            ready=1
            break
        fi
        sleep 0.1
    done
    [[ -n $ready ]] || { echo "oneshot-vs-sqlite: the agent did not start (see $work/agent.log)" >&2; cat "$work/agent.log" >&2; exit 1; }
fi

query="SELECT kind, at FROM dose_event ORDER BY at DESC LIMIT 4"
labels=("dose status --json" "alarm list --json" "status --format waybar" "predict --json" "sqlite3 (one query)")
commands=("$bin dose status --json" "$bin alarm list --json" "$bin status --format waybar"
          "$bin predict --level 55 --drain 6 --hours 7 --json" "sqlite3 $db '$query'")
# Every command must work before it is timed.
for c in "${commands[@]}"; do eval "$c" >/dev/null || { echo "oneshot-vs-sqlite: failed: $c" >&2; exit 1; }; done

hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$work/times.json" "${commands[@]}" >/dev/null

: > "$work/rss.txt"
for i in "${!commands[@]}"; do
    peak=0
    for _ in $(seq "$RSS_RUNS"); do
        kb=$(eval "/usr/bin/time -f %M -o $work/one.txt ${commands[$i]}" >/dev/null 2>&1; cat "$work/one.txt")
        (( kb > peak )) && peak=$kb
    done
    echo "$peak" >> "$work/rss.txt"
done

python3 - "$work" "${labels[@]}" <<'PY'
import json, sys
work, labels = sys.argv[1], sys.argv[2:]
results = json.load(open(f"{work}/times.json"))["results"]
rss = [int(x) for x in open(f"{work}/rss.txt").read().split()]
base = results[-1]["median"]
print("| command | median ms | × sqlite3 | min–max ms | peak RSS MB | goal |")
print("|---|---|---|---|---|---|")
for label, r, kb in zip(labels, results, rss):
    ratio = r["median"] / base
    mb = kb / 1024
    ok = "—" if label.startswith("sqlite3") else ("met" if ratio <= 2 and mb <= 15 else "not met")
    print(f"| {label} | {r['median'] * 1000:.1f} | {ratio:.1f} | {r['min'] * 1000:.1f}–{r['max'] * 1000:.1f} | {mb:.1f} | {ok} |")
PY
if [[ -n $OUTDIR ]]; then mkdir -p "$OUTDIR" && cp "$work/times.json" "$work/rss.txt" "$OUTDIR/"; fi
