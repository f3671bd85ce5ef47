#!/usr/bin/env bash
# The arm64 tier of `make test` (#31): the Raspberry Pi's binary, cross-built here (scripts/cross-arm64.sh), run
# under qemu-user by the same end-to-end tests that run the amd64 binary, and its package installed with dpkg
# into an arm64 root.
#   1. `make deb-arm64`: the cross-built release binary (static Swift runtime) as dist/dosetap_VERSION_arm64.deb;
#   2. the command-line end-to-end suites (the dose night, alarms, export, predict and the battery under umockdev,
#      the Pi UPS's capacity-only battery among them, config errors) with DOSETAP_BIN naming the arm64 binary
#      under qemu-user: faketime and umockdev's preloads are their arm64 builds, inside the emulated process;
#   3. the package: lintian, Depends computed for arm64, dpkg -i into an arm64 root whose database lists trixie's
#      arm64 libraries (a missing one refuses it), `--version` and `feedback preview alarm` run there, purge;
#   4. the package booted: an arm64 Debian guest (scripts/test-vm.sh --arch arm64: the pi test).
#   5. every target and test of the project compiled with the same Debian swiftlang, for this machine
#      (scripts/cross-arm64.sh compile-all).
# Usage: scripts/test-arm64.sh [--no-build]   (the test runner must be built: scripts/run-tests.sh builds it)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
fail() { echo "test-arm64: FAIL: $*" >&2; exit 1; }
pass() { echo "test-arm64: ok: $*"; }

[[ ${1:-} == --no-build ]] || make --no-print-directory deb-arm64
version=$(tr -d ' \n\r\t' < VERSION)
deb=dist/dosetap_${version}_arm64.deb
[[ -f $deb ]] || fail "$deb was not built"
sysroot=$(scripts/cross-arm64.sh sysroot)
binary=$PWD/.build-arm64/dosetap
file -b "$binary" | grep -q 'ARM aarch64' || fail "$binary is not an arm64 program: $(file -b "$binary")"

# The arm64 binary as the tests' DOSETAP_BIN, run by the target's dynamic loader with the target's libraries. Not
# `qemu -L ROOT`: that makes the emulated "/" the target root, and trixie's libudev (systemd 257) walks sysfs
# from "/" (openat of "sys", "class", …), so it would see neither umockdev's testbed nor the host's /sys. The
# harness puts faketime and umockdev-run in front: their preload libraries (x86_64) are loaded by this script's
# bash, and handed to the emulated loader as their arm64 builds from the target root (libfaketime,
# libumockdev-preload; faketime names its library through ld.so's $LIB, "lib/aarch64-linux-gnu" there).
wrapper=$PWD/.build-arm64/dosetap-qemu
libdir=$sysroot/usr/lib/aarch64-linux-gnu
cat > "$wrapper" <<EOF
#!/bin/bash
# dosetap (arm64) under qemu-user: written by scripts/test-arm64.sh.
preload=\${LD_PRELOAD:-}
preload=\${preload//'/usr/\$LIB/'/$libdir/}
exec /usr/bin/qemu-aarch64-static -U LD_PRELOAD "$sysroot/usr/lib/ld-linux-aarch64.so.1" --library-path "$libdir" \\
  \${preload:+--preload "\$preload"} "$binary" "\$@"
EOF
chmod +x "$wrapper"
[[ $("$wrapper" --version) =~ ^dosetap\ [0-9]+\.[0-9]+\.[0-9]+\ \(commit\  ]] || fail "--version under qemu-aarch64: $("$wrapper" --version 2>&1)"
# ...naming this tree's commit (a cached cross build once kept an older stamp).
commit=$(git rev-parse --short=12 HEAD)
[[ -z $(git status --porcelain --untracked-files=no | head -1) ]] || commit+=-dirty
[[ $("$wrapper" --version) == *"(commit $commit,"* ]] || fail "the arm64 binary is not of this tree ($commit): $("$wrapper" --version)"
pass "$("$wrapper" --version) ($(file -b "$binary" | cut -d, -f1-2))"

# 2. The end-to-end suites, against the arm64 binary.
suites='DoseTapCLITests\.(PiTraceCLITests|DoseCLITests|DoseBatteryCLITests|AlarmCLITests|ExportCLITests|PredictCLITests|BatteryCLITests|StatusCLITests|ConventionsCLITests)/|DoseTapCLITests\.AgentProcessTests/(badConfig|danglingConfig)\('
# One test at a time: each runs emulated processes (an agent among them) that take seconds of a 2-core machine's
# CPU, and the tests' own deadlines (an agent ready within 15 s) are for one such process, not for ten side by side.
# Left out: logsJournalChoices's "no journalctl on PATH" case, where qemu-user runs swift-subprocess's vfork as a
# fork, so the child's failed exec comes back as exit 127 instead of ENOENT (a real arm64 kernel has vfork).
# DOSETAP_BIN_REFERENCE: the Pi UPS trace's forecast must be the amd64 build's, number for number.
DOSETAP_BIN=$wrapper DOSETAP_BIN_REFERENCE=$PWD/.build/debug/dosetap swift test --skip-build --disable-xctest --no-parallel --filter "$suites" --skip logsJournalChoices \
    2>&1 | tee .build-arm64/e2e.log \
  || fail "the end-to-end suites on the arm64 binary (above; .build-arm64/e2e.log)"
grep -E '^✔ Test run with [0-9]+ tests' .build-arm64/e2e.log >/dev/null || fail "no test ran"
pass "end-to-end on arm64: $(grep -E '^✔ Test run with' .build-arm64/e2e.log)"

# 3. The package.
scripts/test-deb.sh --arch arm64 "$deb"

# 4. The package on an arm64 machine: a Debian trixie arm64 guest under qemu-system-aarch64 (virt, TCG; the VM tier's
#    scripts/vm.sh), dpkg -i, the agent as a lingering user starts it, the vibra rule and feedback preview on a
#    gpio-vibrator motor in the guest's device tree (hw-fixtures/vm/tests/pi.sh).
s4=$SECONDS
scripts/test-vm.sh --arch arm64 --deb "$deb" || fail "the arm64 guest (above)"
pass "the arm64 guest ($((SECONDS - s4)) s)"
# 5. The project keeps building with Debian's swiftlang 6.2 (the arm64 binary is built with it; here every other
#    target and the tests too, for this machine), as with the toolchain it is developed on (the rest of make test).
#    Last: in `make test` the cache warming beside the tests (scripts/warm-caches.sh) is often still compiling it
#    when this tier starts, and goes on with it on the core that steps 2-4 (one emulated process at a time, a
#    guest mostly waiting) leave idle; this step then waits for it rather than compiling it twice.
s5=$SECONDS
scripts/cross-arm64.sh compile-all || fail "the project with Debian's swiftlang (above)"
pass "every target and test compiles with Debian's swiftlang ($((SECONDS - s5)) s)"
echo "test-arm64: done in $((SECONDS - start)) s"
