#!/usr/bin/env bash
# Tests the Debian package (make deb) the way a user meets it, in throwaway roots (dpkg --root), never on
# this machine's own dpkg database:
#   1. lintian: no error or warning tag (the overrides it honours are explained in the package);
#   2. the control fields: Depends only on what the binary loads (readelf NEEDED → dpkg -S, and the dlopen
#      list packaging/debian/dlopen: libasound2, libmosquitto1, libudev1, libdbus-1-3), Recommends;
#   3. install into a root whose dpkg database is a copy of this machine's (so Depends are checked for
#      real): every file in its Debian place, the binary runs (--version), the unit's ExecStart is
#      /usr/bin/dosetap, postinst runs (chrootless, DPKG_ROOT set: it must not touch the host's udev);
#   4. the same into a root that lacks one dependency: dpkg refuses it (the Depends are not decoration);
#   5. remove and purge leave nothing of the package behind.
# With --arch arm64 (scripts/test-arm64.sh), the cross-built package: the libraries and their packages are
# trixie arm64's (scripts/cross-arm64.sh), the roots hold those libraries and a database listing their packages,
# and the binary runs there under qemu-user.
# Usage: scripts/test-deb.sh [--arch arm64] dist/dosetap_VERSION_ARCH.deb
set -euo pipefail
cd "$(dirname "$0")/.."
arch=$(dpkg --print-architecture)
if [[ ${1:-} == --arch ]]; then arch=${2:?--arch needs an architecture}; shift 2; fi
deb=${1:?usage: scripts/test-deb.sh [--arch ARCH] PACKAGE.deb}
cross=
if [[ $arch != "$(dpkg --print-architecture)" ]]; then
  [[ $arch == arm64 ]] || { echo "test-deb: no cross tier for $arch" >&2; exit 2; }
  cross=$arch
  mapfile -t target_pkgs < <(scripts/cross-arm64.sh shlibs-dirs)
fi
[[ $(dpkg-deb -f "$deb" Architecture) == "$arch" ]] || { echo "test-deb: $deb is not an $arch package" >&2; exit 1; }
fail() { echo "test-deb: FAIL: $*" >&2; exit 1; }
pass() { echo "test-deb: ok: $*"; }
work=$(mktemp -d "${TMPDIR:-/tmp}/dosetap-debtest.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. lintian (as a normal user when run as root: lintian refuses nothing as root, but says so).
lintian_out=$work/lintian.txt
lintian --fail-on none --display-info --show-overrides "$deb" > "$lintian_out" 2>&1 || true
if grep -E '^[EW]: ' "$lintian_out"; then fail "lintian reports errors or warnings (above)"; fi
pass "lintian: no E: or W: tag ($(grep -c '^O: ' "$lintian_out" || true) overridden, $(grep -c '^I: ' "$lintian_out" || true) info)"
sed 's/^/  lintian /' "$lintian_out"

# 2. Depends = the libraries the binary loads, each mapped to its package.
dpkg-deb -x "$deb" "$work/x"
depends=$(dpkg-deb -f "$deb" Depends)
# Both executables: usr/bin/dosetap (the one-shot front, #29) and usr/lib/dosetap/dosetap (the full program).
needed=$(for b in usr/bin/dosetap usr/lib/dosetap/dosetap; do readelf -d "$work/x/$b"; done \
  | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | sort -u)
[[ -n $needed ]] || fail "readelf found no NEEDED library"
# The package that ships a library (by soname): this machine's, or for a cross package the target's.
owner_of() {
  local lib=$1 path pkg tree
  if [[ -n $cross ]]; then
    for tree in "${target_pkgs[@]}"; do
      # (the package whose shlibs or symbols file names the library: the one that ships it, not its -dev)
      if [[ -e $tree/usr/lib/aarch64-linux-gnu/$lib ]] && cat "$tree/DEBIAN/shlibs" "$tree/DEBIAN/symbols" 2>/dev/null \
           | awk -v n="${lib%%.so.*}" -v v="${lib##*.so.}" -v l="$lib" '($1 == n && $2 == v) || $1 == l { f = 1 } END { exit !f }'; then
        sed -n 's/^Package: //p' "$tree/DEBIAN/control"; return 0
      fi
    done
    return 1
  fi
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && !found {print $NF; found = 1}')
  [[ -n $path ]] || return 1
  pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1 || true)
  [[ -n $pkg ]] || pkg=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1 || true)
  [[ -n $pkg ]] && echo "$pkg"
}
owners=()
for lib in $needed; do
  pkg=$(owner_of "$lib") || fail "no $arch package here ships $lib"
  owners+=("$pkg")
done
# ...and the libraries it loads with dlopen (packaging/debian/dlopen): libasound2 (the alarm's own sound path), libmosquitto1 (the household), libudev1 and libdbus-1-3 (at the first udev client and bus connection).
for lib in $(grep -v '^#' packaging/debian/dlopen); do
  grep -qaF "$lib" "$work/x/usr/lib/dosetap/dosetap" || fail "the binary does not name $lib: remove it from packaging/debian/dlopen"
  pkg=$(owner_of "$lib") || fail "$lib (loaded with dlopen): no $arch package here ships it"
  owners+=("$pkg")
done
want=$(printf '%s\n' "${owners[@]}" | sort -u)
have=$(tr ',' '\n' <<<"$depends" | sed 's/(.*//; s/|.*//; s/ //g' | sort -u)
[[ $want == "$have" ]] || fail "Depends ($(echo $have)) are not the packages of the loaded libraries ($(echo $want))"
grep -q 'libswift' <<<"$needed" && fail "the binary needs the Swift runtime's shared libraries (not a --static-swift-stdlib build)"
recommends=$(dpkg-deb -f "$deb" Recommends)
[[ $recommends == *bluez* && $recommends == *pipewire-bin* && $recommends == *alsa-utils* && $recommends == *upower* ]] \
  || fail "Recommends: $recommends"
grep -qE '(^|, )libasound2(t64)?( |,|$)' <<<"$depends" || fail "Depends lacks libasound2: the alarm would be silent on a machine without a player"
pass "Depends: $depends"

# A throwaway root for dpkg: a database that believes what this machine has installed; for a cross package, the
# target's libraries themselves (so the binary runs there under qemu) and a database listing their packages.
mkroot() {
  local root=$1 tree
  mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers" "$root/var/log"
  if [[ -n $cross ]]; then
    : > "$root/var/lib/dpkg/status"
    for tree in "${target_pkgs[@]}"; do
      tar -C "$tree" --exclude=./DEBIAN -cf - . | tar -C "$root" -xf -
      awk '{print} /^Package: / {print "Status: install ok installed"}' "$tree/DEBIAN/control" >> "$root/var/lib/dpkg/status"
      echo >> "$root/var/lib/dpkg/status"
    done
    dpkg --root="$root" --add-architecture "$cross"
  else
    cp /var/lib/dpkg/status "$root/var/lib/dpkg/status"
  fi
  touch "$root/var/lib/dpkg/available"
}
dpkg_in() { local root=$1; shift; dpkg --root="$root" --force-script-chrootless --force-not-root --log="$root/var/log/dpkg.log" "$@"; }
# The installed binary, run in a root (under qemu-user, with the root's libraries, for a cross package). Under
# qemu-user the front cannot execute the full program (the host kernel has no binfmt for arm64 here), so a cross
# package's commands run the full program itself, and the front is tried alone below.
dosetap_in() {
  local root=$1; shift
  if [[ -n $cross ]]; then /usr/bin/qemu-aarch64-static -L "$root" "$root/usr/lib/dosetap/dosetap" "$@"; else "$root/usr/bin/dosetap" "$@"; fi
}

# 3. Install.
root=$work/root
mkroot "$root"
{ find "$root/usr" -type f 2>/dev/null || true; } | sort > "$work/before.txt"   # a cross root holds the target's libraries
dpkg_in "$root" -i "$deb" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "dpkg -i into a throwaway root"; }
for f in usr/bin/dosetap usr/lib/dosetap/dosetap usr/lib/systemd/user/dosetap.service \
         usr/lib/systemd/system/dosetap-wake.socket usr/lib/systemd/system/dosetap-wake.service \
         usr/lib/udev/rules.d/70-dosetap-vibra.rules usr/lib/udev/rules.d/71-dosetap-hid-buttons.rules \
         usr/lib/udev/rules.d/71-dosetap-beeper.rules \
         usr/lib/udev/rules.d/72-dosetap-rtc-wakealarm.rules \
         usr/share/man/man1/dosetap.1.gz usr/share/man/man1/dosetap.alarm.add.1.gz \
         usr/share/bash-completion/completions/dosetap usr/share/zsh/vendor-completions/_dosetap \
         usr/share/fish/vendor_completions.d/dosetap.fish \
         usr/share/doc/dosetap/copyright usr/share/doc/dosetap/changelog.gz usr/share/doc/dosetap/README.md \
         usr/share/doc/dosetap/examples/dosetap-vibra-overlay.dts usr/share/doc/dosetap/examples/udev-rules.md; do
  [[ -f $root/$f ]] || fail "$f is not installed"
done
[[ $(dosetap_in "$root" --version) =~ ^dosetap\ [0-9]+\.[0-9]+\.[0-9]+\ \(commit\  ]] || fail "the installed binary's --version"
# The front answers a one-shot command itself (#29), the same bytes as the full program.
front=("$root/usr/bin/dosetap")
[[ -z $cross ]] || front=(/usr/bin/qemu-aarch64-static -L "$root" "$root/usr/bin/dosetap")
answer=$("${front[@]}" predict --level 55 --drain 6 --hours 7 --json) || fail "the front's predict --json"
[[ $answer == "$(dosetap_in "$root" predict --level 55 --drain 6 --hours 7 --json)" && $answer == '{"risk":"warning","predictedLevel":13}' ]] \
  || fail "the front's predict --json: $answer"
# ...and dose status --json from the dose log, a Dose 1 just taken, the same as the full program's
# (lib/dosetap/dosetap, run directly: the one the front would hand over to).
status_home=$work/home-status
mkdir -p "$status_home"
full=("$root/usr/lib/dosetap/dosetap")
[[ -z $cross ]] || full=(/usr/bin/qemu-aarch64-static -L "$root" "$root/usr/lib/dosetap/dosetap")
in_home() { env -i PATH=/usr/bin:/bin HOME="$status_home" TZ=UTC "$@"; }
in_home "${full[@]}" dose take --json >/dev/null || fail "dose take (the full program)"
# (minutesRemaining may tick between the two calls: compared without it)
from_front=$(in_home "${front[@]}" dose status --json | sed 's/"minutesRemaining":[0-9-]*,//') \
  || fail "the front's dose status --json"
from_full=$(in_home "${full[@]}" dose status --json | sed 's/"minutesRemaining":[0-9-]*,//') \
  || fail "the full program's dose status --json"
[[ $from_front == "$from_full" && $from_front == '{"phase":"waiting",'* ]] \
  || fail "dose status --json: the front's answer is not the full program's: $from_front | $from_full"
pass "the front answers predict --json and dose status --json as the full program does"
# ...and the alarm screen and the status bar (#29) while an agent runs: its records for the command line, held
# locked as the agent holds them (here by flock(1)), say it can wake the machine and play the sound.
in_home "${full[@]}" alarm add 06:30 --label work >/dev/null || fail "alarm add (the full program)"
records=$status_home/.local/share/dosetap
printf '%s' '{"pid":1,"method":"alarmTimer"}' > "$records/wake-status.json"
printf '%s' '{"pid":1,"canPlay":true}' > "$records/sound-status.json"
flock -x "$records/wake-status.json" flock -x "$records/sound-status.json" sleep 60 &
holder=$!
for _ in $(seq 50); do ! flock -n -s "$records/sound-status.json" true 2>/dev/null && break; sleep 0.1; done
alone=$work/front-alone
mkdir -p "$alone" && cp "$root/usr/bin/dosetap" "$alone/dosetap"
front_alone=("$alone/dosetap")
[[ -z $cross ]] || front_alone=(/usr/bin/qemu-aarch64-static -L "$root" "$alone/dosetap")
for line in "alarm list --json" "status --format waybar"; do
  # (the countdown may tick between the calls: compared without the minutes)
  from_front=$(in_home "${front[@]}" $line | sed 's/[0-9]* min//g') || fail "the front's $line"
  from_full=$(in_home "${full[@]}" $line | sed 's/[0-9]* min//g') || fail "the full program's $line"
  [[ $from_front == "$from_full" && -n $from_front ]] || fail "$line: the front's answer is not the full program's: $from_front | $from_full"
  # It answered itself: alone (no full program beside it to hand over to) it still does.
  itself=$(in_home "${front_alone[@]}" $line | sed 's/[0-9]* min//g') || fail "the front alone did not answer $line"
  [[ $itself == "$from_full" ]] || fail "$line: the front alone: $itself | $from_full"
done
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null || true
pass "the front answers alarm list --json and status --format waybar itself while the agent runs, as the full program does"
# ...as a static executable (#29, docs/architecture.md): no interpreter, no shared library, nothing to relocate.
# (Each reads readelf's whole answer, grep without -q: under pipefail a reader that stops early can end its writer
# with SIGPIPE and turn a found line into a failed pipeline.)
readelf -lW "$work/x/usr/bin/dosetap" | grep 'INTERP' >/dev/null && fail "the front names a dynamic loader: it must be static"
readelf -d "$work/x/usr/bin/dosetap" 2>/dev/null | grep 'NEEDED' >/dev/null && fail "the front loads shared libraries: it must be static"
readelf -hW "$work/x/usr/bin/dosetap" | grep -E 'Type:[[:space:]]+EXEC' >/dev/null || fail "the front is position-independent: its relocations cost its start"
# The alarm heard with nothing but the Depends (#32): no player on PATH, the beep into ALSA's file sink.
home=$work/home-sound
mkdir -p "$home"
run=("$root/usr/bin/dosetap")
[[ -z $cross ]] || run=(/usr/bin/qemu-aarch64-static -L "$root" "$root/usr/lib/dosetap/dosetap")
env -i HOME="$home" PATH=/nonexistent DOSETAP_AUDIO_DEVICE="file:FILE=$home/alarm.wav,FORMAT=wav" \
  "${run[@]}" feedback preview alarm > "$home/out.txt" 2>&1 || { cat "$home/out.txt" >&2; fail "feedback preview alarm without a player"; }
[[ $(stat -c %s "$home/alarm.wav" 2>/dev/null || echo 0) -gt 28000 ]] || fail "feedback preview alarm wrote no beep to ALSA's file sink"
pass "the installed binary plays the alarm's beep through ALSA with no player on PATH: $(cat "$home/out.txt")"
grep -qx 'ExecStart=/usr/bin/dosetap agent' "$root/usr/lib/systemd/user/dosetap.service" || fail "the unit's ExecStart"
# The wake helper (#28): the package's own binary, CAP_WAKE_ALARM and no other capability; the maintainer scripts
# enable and start its socket (in the VM tier; here DPKG_ROOT keeps them off the host).
grep -qx 'ExecStart=/usr/bin/dosetap wake-helper' "$root/usr/lib/systemd/system/dosetap-wake.service" || fail "the wake helper's ExecStart"
grep -qx 'CapabilityBoundingSet=CAP_WAKE_ALARM' "$root/usr/lib/systemd/system/dosetap-wake.service" || fail "the wake helper's capabilities"
grep -qx 'ListenStream=/run/dosetap-wake.sock' "$root/usr/lib/systemd/system/dosetap-wake.socket" || fail "the wake helper's socket"
for script in postinst prerm postrm; do
  dpkg-deb --ctrl-tarfile "$deb" | tar -xO "./$script" | grep 'dosetap-wake.socket' >/dev/null || fail "$script does not handle dosetap-wake.socket"
done
[[ -e /etc/systemd/system/sockets.target.wants/dosetap-wake.socket ]] && fail "the chrootless install enabled the socket on the host"
[[ $(zcat "$root/usr/share/man/man1/dosetap.1.gz") == *$'\n.Dt DOSETAP 1'* ]] || fail "dosetap.1 is not a manual page"
lexgrog "$root/usr/share/man/man1/dosetap.dose.take.1.gz" > /dev/null || fail "whatis cannot read dosetap.dose.take's NAME"
bash -c "source '$root/usr/share/bash-completion/completions/dosetap' && complete -p dosetap" >/dev/null || fail "the bash completion does not load"
[[ $(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}' dosetap) == "install ok installed" ]] || fail "dpkg does not record it as installed"
find "$root" -path "$root/var" -prune -o -newer "$root/var/lib/dpkg/available" -type f -print | grep -v '^'"$root"'/usr/' && fail "files outside /usr"
pass "installed in a throwaway root: $(dpkg-query --admindir="$root/var/lib/dpkg" -L dosetap | wc -l) paths; $(dosetap_in "$root" --version)"

# 4. A root without one dependency refuses the package.
lacking=$work/lacking
mkroot "$lacking"
first=$(tr ',' '\n' <<<"$depends" | sed 's/(.*//; s/ //g' | awk '$0 != "libc6" && !found {print; found = 1}')
python3 - "$lacking/var/lib/dpkg/status" "$first" <<'PY'
import sys
path, name = sys.argv[1], sys.argv[2]
blocks = open(path, encoding="utf-8").read().split("\n\n")
kept = [b for b in blocks if not any(l == f"Package: {name}" for l in b.splitlines())]
open(path, "w", encoding="utf-8").write("\n\n".join(kept))
PY
if dpkg_in "$lacking" -i "$deb" > "$work/lacking.log" 2>&1; then fail "installed without $first"; fi
grep -q "depends on $first" "$work/lacking.log" || { cat "$work/lacking.log"; fail "the refusal does not name $first"; }
pass "refused where $first is missing"

# 5. Remove, purge: nothing of it stays.
dpkg_in "$root" -r dosetap > "$work/remove.log" 2>&1 || { cat "$work/remove.log"; fail "dpkg -r"; }
[[ ! -e $root/usr/bin/dosetap && ! -e $root/usr/lib/dosetap/dosetap && ! -e $root/usr/lib/systemd/user/dosetap.service ]] || fail "files left after remove"
dpkg_in "$root" -P dosetap > "$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "dpkg -P"; }
left=$( { find "$root/usr" -type f 2>/dev/null || true; } | sort | comm -13 "$work/before.txt" - | wc -l)  # dpkg may remove /usr itself
[[ $left == 0 ]] || fail "$left files left after purge"
pass "removed and purged"
