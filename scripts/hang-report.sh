#!/usr/bin/env bash
# A `swift test` step that outlived its budget (scripts/run-tests.sh): says which tests were in flight (started,
# never ended, from the step's log), prints every thread's stack of each test process (gdb), then ends the
# step. A hung run then fails in minutes with the place it hung, instead of running into CI's time limit
# with a log cut mid-line (stop 37's CI).
#
# usage: scripts/hang-report.sh LOG BUDGET-SECONDS
set -uo pipefail
log=$1
budget=$2

echo
echo "run-tests: this step ran past its budget of $budget s: a hang. The tests in flight:"
# Swift Testing's lines: ◇ Test NAME started. / ✔ Test NAME passed after … / ✘ Test NAME failed after … /
# ➜ Test NAME skipped. NAME is a display name in quotes or a function name. A parameterised test's cases start
# without ending lines of their own: the test's own line stands for them.
awk '
  /^◇ Test case passing / { next }
  /^◇ Test .* started\.$/ { name = $0; sub(/^◇ Test /, "", name); sub(/ started\.$/, "", name); open[name] = NR; next }
  /^(✔|✘) Test .* (passed|failed) after / { name = $0; sub(/^(✔|✘) Test /, "", name); sub(/ (passed|failed) after .*$/, "", name); delete open[name]; next }
  /^➜ Test .* skipped/ { name = $0; sub(/^➜ Test /, "", name); sub(/ skipped.*$/, "", name); delete open[name]; next }
  END { n = 0; for (name in open) if (name != "run") { print "  " name; n++ } if (n == 0) print "  (none seen in the log)" }
' "$log"

# Swift's names readable when the toolchain's demangler is there.
demangle() { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; else cat; fi; }

for pid in $(pgrep -f '/debug/DoseTapPackageTests' || true); do
  echo
  echo "run-tests: the threads of test process $pid ($(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-160)):"
  if command -v gdb >/dev/null; then
    # Frames only, at most 30 per thread; the names of Swift functions stay mangled-readable enough to find them.
    timeout 120 gdb -p "$pid" -batch -nx -ex 'set pagination off' -ex 'set print frame-arguments none' \
      -ex 'thread apply all bt 30' 2>/dev/null | grep -E '^(Thread |#)' | demangle | cut -c1-240 | head -n 3000
  else
    echo "  (gdb is not installed: no stacks)"
  fi
done

# End the step: its test processes first (swift test then reports and exits), then anything left of them.
pkill -TERM -f '/debug/DoseTapPackageTests' || true
sleep 10
pkill -KILL -f '/debug/DoseTapPackageTests' || true
