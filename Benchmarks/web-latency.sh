#!/usr/bin/env bash
# The dashboard under load (issue #14): page and API latency with wrk on loopback, and the agent's RSS and
# idle wake-ups with the dashboard listening vs not.
#
# Usage: Benchmarks/web-latency.sh [-c CONNECTIONS] [-t THREADS] [-d SECONDS] [-i IDLE_SECONDS]
#   -c  wrk connections (default 50)
#   -t  wrk threads (default 1: on a 2-core machine a second wrk thread takes the agent's other core)
#   -d  seconds per route (default 10)
#   -i  idle window for RSS and wake-ups (default 30)
# Environment: DOSETAP (default .build/release/dosetap), WRK (default wrk; Debian's `wrk` package).
#
# One client sending 50 connections' worth of requests is exactly what the dashboard's rate limit refuses
# (60 a minute served, more than 200 a minute refused for 5 minutes). The benchmark raises the limit with
# the documented settings `[web] rate_burst` and `rate_refuse_above` in its own config.toml: everything else
# — pairing, the session cookie, CSRF, the routes, the use cases — is the same code path a browser takes.
# wrk speaks TCP only, so the trusted Unix socket is no way around it.
#
# Idle: the agent (no battery, no buttons: a container) with the dashboard on 127.0.0.1 and its socket, then
# with `[web] listen = []` and no XDG_RUNTIME_DIR (no listener at all); each settles 5 s, then over the
# window: VmRSS at its end, and voluntary + involuntary context switches summed over every thread.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONNECTIONS=50
THREADS=1
DURATION=10
IDLE=30
while getopts "c:t:d:i:h" opt; do
  case $opt in
    c) CONNECTIONS=$OPTARG ;;
    t) THREADS=$OPTARG ;;
    d) DURATION=$OPTARG ;;
    i) IDLE=$OPTARG ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
  esac
done
DOSETAP=${DOSETAP:-$ROOT/.build/release/dosetap}
WRK=${WRK:-wrk}
command -v "$WRK" >/dev/null || { echo "web-latency: wrk is missing (apt-get install wrk)" >&2; exit 2; }
[[ -x $DOSETAP ]] || { echo "web-latency: $DOSETAP is missing (swift build -c release --product dosetap)" >&2; exit 2; }

TMP=$(mktemp -d)
AGENT=
cleanup() {
  [[ -n $AGENT ]] && kill "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start NAME LISTEN [RUNTIME]: the agent in a private home; sets AGENT, HOME_DIR.
start() {
  HOME_DIR=$TMP/$1
  mkdir -p "$HOME_DIR/config/dosetap" "$HOME_DIR/run"
  chmod 700 "$HOME_DIR/run"
  printf '[web]\nlisten = %s\nrate_burst = 100000000\nrate_refuse_above = 100000000\n' "$2" > "$HOME_DIR/config/dosetap/config.toml"
  local runtime=()
  [[ ${3:-yes} == yes ]] && runtime=("XDG_RUNTIME_DIR=$HOME_DIR/run")
  env -i PATH=/usr/bin:/bin HOME="$HOME_DIR" TZ=UTC XDG_DATA_HOME="$HOME_DIR/data" XDG_CONFIG_HOME="$HOME_DIR/config" \
    DOSETAP_UPOWER_DIR="$HOME_DIR/upower" "${runtime[@]}" "$DOSETAP" agent > "$HOME_DIR/agent.log" 2>&1 &
  AGENT=$!
}

stop() {
  kill "$AGENT"
  wait "$AGENT" 2>/dev/null || true
  AGENT=
}

# "TID SWITCHES" per thread (voluntary + involuntary context switches).
switches() {
  for f in /proc/"$1"/task/*/status; do
    awk -v tid="$(basename "$(dirname "$f")")" '/^(voluntary|nonvoluntary)_ctxt_switches/ { s += $2 } END { print tid, s + 0 }' "$f" 2>/dev/null || true
  done
}

idle() {
  sleep 5
  local rss wakeups
  switches "$AGENT" > "$TMP/before"
  sleep "$IDLE"
  switches "$AGENT" > "$TMP/after"
  # Threads alive at the end, each from its count at the start (0 for a thread born in the window).
  wakeups=$(awk 'NR == FNR { start[$1] = $2; next } { total += $2 - start[$1] } END { print total + 0 }' "$TMP/before" "$TMP/after")
  rss=$(awk '/^VmRSS/ { print $2 }' /proc/"$AGENT"/status)
  printf '| %s | %s MB | %d | %d |\n' "$1" "$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')" "$wakeups" "$(ls /proc/"$AGENT"/task | wc -l)"
}

PORT=$(free_port)
start web "[\"127.0.0.1:$PORT\"]"
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$PORT/pair" && break
  sleep 0.1
done
# Pair as a browser would: the link of `dosetap web link`, its session cookie.
LINK=$(env -i PATH=/usr/bin:/bin HOME="$HOME_DIR" XDG_DATA_HOME="$HOME_DIR/data" XDG_CONFIG_HOME="$HOME_DIR/config" \
  "$DOSETAP" web link | awk '/^http:\/\// && !n { print; n = 1 }')
COOKIE=$(curl -s -o /dev/null -D - "$LINK" | awk -F'[ ;]' 'tolower($1) == "set-cookie:" { print $2; exit }')
[[ $COOKIE == dosetap_session=* ]] || { echo "web-latency: pairing failed" >&2; cat "$HOME_DIR/agent.log" >&2; exit 2; }
env -i PATH=/usr/bin:/bin HOME="$HOME_DIR" TZ=UTC XDG_DATA_HOME="$HOME_DIR/data" XDG_CONFIG_HOME="$HOME_DIR/config" \
  "$DOSETAP" alarm add 06:30 --label Work --repeat daily > /dev/null

echo "wrk $($WRK --version 2>&1 | head -1 | awk '{print $2}'), $CONNECTIONS connections, $THREADS thread(s), ${DURATION} s per route, loopback; $(nproc) cores"
echo
echo "| Route | Requests/s | p50 | p90 | p99 | Max | Non-2xx |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for route in / /alarms /batteries /sounds /buttons /api/tonight /api/alarms /api/feedback; do
  out=$("$WRK" -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "Cookie: $COOKIE" "http://127.0.0.1:$PORT$route")
  rps=$(awk '/^Requests\/sec/ { print $2 }' <<<"$out")
  p50=$(awk '$1 == "50%" { print $2 }' <<<"$out")
  p90=$(awk '$1 == "90%" { print $2 }' <<<"$out")
  p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
  max=$(awk '/Latency/ && !/Distribution/ { print $4; exit }' <<<"$out")
  bad=$(awk '/Non-2xx/ { print $5 }' <<<"$out")
  echo "| \`GET $route\` | $rps | $p50 | $p90 | $p99 | $max | ${bad:-0} |"
done
echo
echo "RSS after the load: $(awk '/^VmRSS/ { printf "%.1f MB", $2 / 1024 }' /proc/"$AGENT"/status) (peak $(awk '/^VmHWM/ { printf "%.1f MB", $2 / 1024 }' /proc/"$AGENT"/status))"
stop

echo
echo "Idle, ${IDLE} s after 5 s of settling:"
echo
echo "| Dashboard | RSS | Wake-ups (context switches, all threads) | Threads |"
echo "| --- | ---: | ---: | ---: |"
start idle-on "[\"127.0.0.1:$(free_port)\"]"
idle "on (127.0.0.1 and the Unix socket)"
stop
start idle-off "[]" no
idle "off (no listener)"
stop
