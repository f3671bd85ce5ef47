#!/usr/bin/env bash
# Wall time of the dose commands and of a ten-year CSV export, with hyperfine.
#
#   Benchmarks/dose-latency.sh            (DOSETAP=binary, default .build/release/dosetap)
#
# 1. dosetap dose take    — records Dose 2 (the window is open), including the durable commit
#                           (synchronous=FULL, WAL). Each run starts from the same database (--prepare).
# 2. dosetap dose status --json — on a log holding ten years of nights plus tonight.
# 3. dosetap export csv --last all — 3,650 nights.
# Data lives in a temporary directory; yours is not touched. Needs hyperfine, faketime, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${DOSETAP:-.build/release/dosetap}")
[[ -x $bin ]] || { echo "dose-latency: build $bin first (make release)" >&2; exit 2; }
# On a real disk by default, so the durable commit (fsync) is really paid; BENCH_DIR=/dev/shm to compare.
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/dosetap-bench.XXXXXX")
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
export TZ=America/New_York XDG_CONFIG_HOME=$work/config

# A database with ten years of nights (3,650), as the store writes them.
seed=$work/seed
XDG_DATA_HOME=$seed "$bin" setup --show >/dev/null
Benchmarks/seed-ten-years.py "$seed/dosetap/dosetap.sqlite"

# Tonight: Dose 1 taken 170 minutes ago, so `dose take` records Dose 2.
XDG_DATA_HOME=$seed faketime -f "@$(date -d '-170 minutes' '+%Y-%m-%d %H:%M:%S')" "$bin" dose take >/dev/null
tonight=$work/tonight
hyperfine -N --warmup 3 --runs 30 --export-json "$work/take.json" \
  --prepare "sh -c 'rm -rf $tonight && cp -r $seed $tonight'" \
  "env XDG_DATA_HOME=$tonight $bin dose take" >/dev/null
hyperfine -N --warmup 3 --runs 30 --export-json "$work/status.json" \
  "env XDG_DATA_HOME=$seed $bin dose status --json" >/dev/null
# The export never replaces an existing file: each run writes a new one.
hyperfine -N --warmup 2 --runs 20 --export-json "$work/export.json" \
  --prepare "rm -f $work/out.csv" \
  "env XDG_DATA_HOME=$seed $bin export csv --last all --output $work/out.csv" >/dev/null

lines=$(wc -l < "$work/out.csv")
python3 - "$work" "$lines" <<'PY'
import json, sys
work, lines = sys.argv[1], sys.argv[2]
print(f"| command | median ms | mean ± σ ms | min ms | max ms |")
print(f"|---|---|---|---|---|")
for name, label in [("take", "dose take (Dose 2, durable commit)"), ("status", "dose status --json"), ("export", f"export csv --last all ({int(lines) - 1} nights)")]:
    r = json.load(open(f"{work}/{name}.json"))["results"][0]
    ms = lambda x: f"{x * 1000:.1f}"
    print(f"| {label} | {ms(r['median'])} | {ms(r['mean'])} ± {ms(r['stddev'])} | {ms(r['min'])} | {ms(r['max'])} |")
PY
