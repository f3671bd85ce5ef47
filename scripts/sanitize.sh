#!/usr/bin/env bash
# The whole test suite under a sanitizer (make sanitize runs both):
#   scripts/sanitize.sh address          AddressSanitizer, built in .build-asan
#   scripts/sanitize.sh thread           ThreadSanitizer, built in .build-tsan
#   scripts/sanitize.sh address thread   one after the other; fails if either fails
# Each runs scripts/run-tests.sh with DOSETAP_SANITIZER set: the same two test processes (the umockdev
# one under umockdev-wrapper, the rest without the preload), the CLI end-to-end tests driving a
# dosetap binary built with the same sanitizer. A report stops the process (halt_on_error) and fails the
# run; logs are in .build-asan/sanitize.log and .build-tsan/sanitize.log. Results: docs/performance.md.
set -uo pipefail
cd "$(dirname "$0")/.."

[[ $# -gt 0 ]] || set -- address thread
failed=()
for sanitizer in "$@"; do
  case $sanitizer in
    address) scratch=.build-asan ;;
    thread) scratch=.build-tsan ;;
    *) echo "sanitize: address or thread, not $sanitizer" >&2; exit 2 ;;
  esac
  mkdir -p "$scratch"
  log=$scratch/sanitize.log
  start=$(date +%s)
  # Reports go to stderr and the log; the process exits non-zero on the first one.
  #  - ASan: libumockdev-preload is LD_PRELOADed before the (static) ASan runtime in the umockdev process,
  #    so the link-order check is off; LeakSanitizer is off because the Swift runtime's and libdispatch's
  #    process-lifetime caches read as leaks at exit (docs/performance.md).
  #  - TSan: one report inside swift-subprocess is suppressed (scripts/tsan-suppressions.txt says why).
  # Either way the CLI runs under faketime use the plain build (libfaketime deadlocks an instrumented
  # process at start; scripts/run-tests.sh), so `swift build --product dosetap` is built too.
  ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=0:detect_leaks=0:verify_asan_link_order=0:detect_stack_use_after_return=0} \
  TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan-suppressions.txt} \
  SWIFT_BACKTRACE=enable=no \
  DOSETAP_SANITIZER=$sanitizer scripts/run-tests.sh 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  echo "sanitize: $sanitizer: exit $rc after $(( $(date +%s) - start )) s; $(grep -c -E '^SUMMARY: (Address|Thread|LeakSanitizer|UndefinedBehavior)' "$log") sanitizer reports (log: $log)"
  [[ $rc -eq 0 ]] || failed+=("$sanitizer")
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "sanitize: failed under ${failed[*]}" >&2
  exit 1
fi
