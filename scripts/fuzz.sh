#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/*, declared in Package.swift when DOSETAP_FUZZ is set) and runs
# each for RUNS executions:
#   scripts/fuzz.sh 10000000            every target to 10^7 executions (make fuzz)
#   scripts/fuzz.sh 100000              the short run at the end of scripts/run-tests.sh
#   scripts/fuzz.sh 100000 bthome dbus  some targets only
# Targets: bthome bthome-decrypt power-supply dbus hid config flic2. DOSETAP_FUZZ_SCRATCH overrides the
# scratch path (.build-fuzz). Seeds come from Fuzz/corpus/<target>
# (scripts/make-fuzz-seeds.py); what the fuzzer learns accumulates in .build-fuzz/corpus/<target>.
# A crash, a broken invariant (fatalError), a timeout (30 s per input) or running out of
# memory fails the script; libFuzzer's reproducer lands in .build-fuzz/artifacts/<target>/ and
# `.build-fuzz/release/fuzz-<target> FILE` replays it. Prints executions, time and exec/s per target.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:?usage: scripts/fuzz.sh RUNS [target...]}
shift
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(bthome bthome-decrypt power-supply dbus hid config flic2)

# DOSETAP_FUZZ_BUILD=debug: a debug build (the short run of make test: a cold debug build of the six
# targets takes about 6 min on this 2-core machine, a release one 15-30 min); release (default) for make fuzz.
configuration=${DOSETAP_FUZZ_BUILD:-release}
case $configuration in release|debug) ;; *) echo "fuzz: DOSETAP_FUZZ_BUILD is release or debug" >&2; exit 2 ;; esac
scratch=${DOSETAP_FUZZ_SCRATCH:-.build-fuzz}
[[ $configuration == release ]] || scratch=${DOSETAP_FUZZ_SCRATCH:-.build-fuzz-debug}
export DOSETAP_FUZZ=1
# libFuzzer writes its crash file only if the Swift runtime's backtracer does not take the signal first.
export SWIFT_BACKTRACE=enable=no
build=(swift build -c "$configuration" -Xswiftc -enable-testing --sanitize=fuzzer --scratch-path "$scratch")

start=$(date +%s)
mkdir -p "$scratch"
for target in "${targets[@]}"; do
  [[ -d Fuzz/corpus/$target ]] || { echo "fuzz: unknown target $target" >&2; exit 2; }
  "${build[@]}" --product "fuzz-$target" >"$scratch/build-$target.log" 2>&1 \
    || { cat "$scratch/build-$target.log" >&2; echo "fuzz: building fuzz-$target failed" >&2; exit 1; }
done
bin=$("${build[@]}" --show-bin-path)
echo "fuzz: built ${#targets[@]} targets in $(( $(date +%s) - start )) s"

summary=()
failed=0
for target in "${targets[@]}"; do
  corpus=$scratch/corpus/$target
  artifacts=$scratch/artifacts/$target
  mkdir -p "$corpus" "$artifacts"
  log=$scratch/fuzz-$target.log
  # Longest input tried: an advert's service data is at most ~30 bytes on air (256 leaves room for the
  # decrypt target's header and raw CCM); a power supply is ~20 attribute lines.
  case $target in
    bthome|bthome-decrypt) max_len=256 ;;
    flic2) max_len=2048 ;;
    power-supply) max_len=1024 ;;
    *) max_len=4096 ;;
  esac
  t0=$(date +%s.%N)
  set +e
  "$bin/fuzz-$target" -runs="$runs" -max_len=$max_len -timeout=30 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" "Fuzz/corpus/$target" >"$log" 2>&1
  rc=$?
  set -e
  t1=$(date +%s.%N)
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  seconds=$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")
  rate=$(awk "BEGIN { if (\"${executed:-0}\" + 0 > 0 && $seconds > 0) printf \"%d\", ${executed:-0} / $seconds; else print \"?\" }")
  units=$(ls "$corpus" | wc -l)
  line=$(printf '%-15s %10s runs  %8s s  %8s exec/s  corpus %5s  exit %s' "$target" "${executed:-?}" "$seconds" "$rate" "$units" "$rc")
  echo "fuzz: $line"
  summary+=("$line")
  if [[ $rc -ne 0 ]]; then
    failed=1
    grep -E "^==[0-9]+==|Fatal error|fuzz invariant|SUMMARY|artifact_prefix|Test unit written" "$log" | head -20 >&2 || true
    echo "fuzz: fuzz-$target failed; full log in $log" >&2
  fi
done
echo "fuzz: ---- $runs runs per target, $(( $(date +%s) - start )) s in all (build included)"
printf 'fuzz: %s\n' "${summary[@]}"
exit $failed
