#!/usr/bin/env bash
# Crash safety of the dose log: kill writers with SIGKILL at random moments, many times, and check that
# after every kill the database passes PRAGMA integrity_check and that every event whose command had
# printed its confirmation is still there.
#
#   scripts/crash-safety.sh [ITERATIONS]      (default 300)
#   DOSETAP=path/to/dosetap                   (default .build/debug/dosetap)
#
# Each iteration starts a writer: a shell loop that runs `dosetap dose take --json` (Dose 1, then
# Dose 2 inside the window) and `dosetap dose undo --json` under faketime, night after night, appending
# every printed JSON confirmation to a file. After a random 0–250 ms the writer and whatever dosetap
# process it is running are killed with SIGKILL — often in the middle of a transaction. Then:
#   1. PRAGMA integrity_check must say "ok";
#   2. every event id in a complete confirmation line must be in dose_event.
# Exits non-zero on the first violation. Needs faketime and sqlite3.
set -euo pipefail
cd "$(dirname "$0")/.."

iterations=${1:-300}
bin=${DOSETAP:-.build/debug/dosetap}
[[ -x $bin ]] || { echo "crash-safety: $bin not built (run swift build)" >&2; exit 2; }
for tool in faketime sqlite3; do
  command -v "$tool" >/dev/null || { echo "crash-safety: $tool is missing" >&2; exit 2; }
done
bin=$(realpath "$bin")

work=$(mktemp -d /tmp/dosetap-crash.XXXXXX)
trap 'pkill -KILL -f "$work" 2>/dev/null || true; rm -rf "$work"' EXIT
export XDG_DATA_HOME=$work/data XDG_CONFIG_HOME=$work/config TZ=America/New_York
db=$XDG_DATA_HOME/dosetap/dosetap.sqlite
confirmations=$work/confirmations.jsonl
: > "$confirmations"

writer() {
  local first=$1
  for ((night = first; ; night++)); do
    local day next
    day=$(date -d "2026-01-01 + $night days" +%F)
    next=$(date -d "2026-01-01 + $((night + 1)) days" +%F)
    faketime -f "$day 22:30:00" "$bin" dose take --json >> "$confirmations" 2>/dev/null || true
    faketime -f "$next 01:20:00" "$bin" dose take --json >> "$confirmations" 2>/dev/null || true
    if ((night % 3 == 0)); then
      faketime -f "$next 01:20:02" "$bin" dose undo --json >> "$confirmations" 2>/dev/null || true
    fi
  done
}

night=0
kills_mid_process=0
for ((i = 1; i <= iterations; i++)); do
  writer "$night" &
  wpid=$!
  sleep "0.$(printf '%03d' $((RANDOM % 250)))"
  # Kill the dosetap process first (if one is running), then the loop.
  kill -STOP "$wpid" 2>/dev/null || true
  if pkill -KILL -f "^$bin dose" 2>/dev/null; then kills_mid_process=$((kills_mid_process + 1)); fi
  kill -KILL "$wpid" 2>/dev/null || true
  wait "$wpid" 2>/dev/null || true
  # faketime itself is not killed: it exits when its dosetap child dies, and cleans up its shared memory.
  # One may have been about to start a dosetap when the writer stopped: let it finish (at most 5 s).
  for _ in $(seq 100); do pgrep -f "faketime -f .* $bin" >/dev/null || break; sleep 0.05; done
  night=$((night + 10))

  [[ -f $db ]] || continue
  check=$(sqlite3 -cmd '.timeout 5000' "$db" 'PRAGMA integrity_check;')
  if [[ $check != ok ]]; then
    echo "crash-safety: iteration $i: integrity_check says: $check" >&2
    exit 1
  fi
  # Complete confirmation lines only (a kill can cut the last one short).
  missing=$(python3 - "$confirmations" "$db" <<'PY'
import json, sqlite3, sys
ids = []
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if o.get("recorded"):
        ids.append(o["event"]["id"])
con = sqlite3.connect(sys.argv[2], timeout=5)
try:
    have = {r[0] for r in con.execute("SELECT id FROM dose_event")}
except sqlite3.OperationalError:
    # Killed while creating the database, before its first migration committed: no log yet.
    have = set()
print(sum(1 for i in ids if i not in have), len(ids))
PY
)
  read -r lost confirmed <<<"$missing"
  if ((lost > 0)); then
    echo "crash-safety: iteration $i: $lost confirmed event(s) missing from the log" >&2
    exit 1
  fi
done

events=$(sqlite3 -cmd '.timeout 5000' "$db" 'SELECT COUNT(*) FROM dose_event;' 2>/dev/null || echo 0)
echo "crash-safety: $iterations SIGKILLs ($kills_mid_process while a dosetap process was running), integrity_check ok after every one, $confirmed confirmed events all present ($events events in the log)"
