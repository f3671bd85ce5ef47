#!/usr/bin/env bash
# The arm64 (Raspberry Pi) cross toolchain, made from Debian's packages and cached between runs, and what runs
# through it (docs/packaging.md, "arm64").
#
#   scripts/cross-arm64.sh setup          make the toolchain if the cache has none (root or sudo: debootstrap, chroot)
#   scripts/cross-arm64.sh build [ARGS]   cross-build the release `dosetap` and `dosetap-front` into .build-arm64/
#   scripts/cross-arm64.sh run CMD [ARG]  run an arm64 program under qemu-user with the target's libraries
#   scripts/cross-arm64.sh sysroot        print the target root (trixie arm64: glibc, the -dev packages)
#   scripts/cross-arm64.sh shlibs-dirs    print the target's library packages, one tree each (for dpkg-shlibdeps -S)
#   scripts/cross-arm64.sh compile-all    compile every target and test of the project for this machine with the
#                                         same swiftlang (debug): the project keeps building with Debian's 6.2
#
# The pieces (measured feasible before it was written down, issue #31):
# - the compiler: Debian sid's `swiftlang` (6.2.3 for amd64 and arm64; trixie's 6.0 is too old for the pinned
#   packages) in a sid amd64 chroot made by debootstrap, since it needs sid's glibc. The registry's sid snapshot
#   has an expired InRelease, so apt in the chroot runs with Acquire::Check-Valid-Until=false (the signature is
#   still checked: debootstrap and apt verify it against Debian's archive keyring).
# - the target: a trixie arm64 root made without emulation: apt (with its own state directory, arm64 only)
#   resolves and downloads the -dev packages the build links against, and `dpkg-deb -x` unpacks them; the arm64
#   Swift runtime and its static libraries come from sid's swiftlang_VERSION_arm64.deb.
# - a Swift SDK bundle (swift-sdk.json + toolset.json: lld) that points the compiler at both.
# The binary needs glibc 2.38 (the static Swift runtime of sid's package): Debian 13 and the trixie-based Raspberry
# Pi OS, not bookworm.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

SWIFTLANG_VERSION=6.2.3-1+b1   # pinned: sid's package; a different one is a deliberate change here
TARGET_SUITE=trixie
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What the `dosetap` product links against (scripts/install-deps.sh's run packages, arm64), and the C/C++ runtime.
TARGET_PACKAGES=(libc6-dev libgcc-14-dev libstdc++-14-dev linux-libc-dev libudev-dev libsqlite3-dev libdbus-1-dev
  libmosquitto-dev libasound2-dev zlib1g-dev)
# What the arm64 tier of `make test` preloads into the emulated binary (scripts/test-arm64.sh): faketime, umockdev.
TEST_PACKAGES=(libfaketime umockdev)

# The cache: one directory per toolchain definition, so a change of these makes a new one (raise LAYOUT when
# what setup() makes changes).
LAYOUT=1
cache_root=${DOSETAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dosetap}
key=$(echo "$LAYOUT $SWIFTLANG_VERSION $TARGET_SUITE $MIRROR ${TARGET_PACKAGES[*]} ${TEST_PACKAGES[*]}" | sha256sum | cut -c1-12)
dir=$cache_root/cross-arm64-$key
chroot_dir=$dir/sid
bundle=/opt/dosetap-sdk/dosetap-arm64.artifactbundle   # inside the chroot
sysroot=$chroot_dir$bundle/sdk/sysroot
pkgs=$dir/pkgs

die() { echo "cross-arm64: $*" >&2; exit 1; }
as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  else command -v sudo >/dev/null || die "needs root (or sudo) for debootstrap and chroot"; sudo "$@"; fi
}
host_deps() {
  local missing=() p
  for p in debootstrap qemu-user-static rsync binutils-aarch64-linux-gnu file; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == "install ok installed" ]] || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  echo "Installing Debian packages: ${missing[*]}" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
# apt for arm64 packages of SUITE, with its own state in DIR (nothing of the host's apt is touched): sets apt_opts.
apt_arm64() {
  local state=$1 suite=$2; shift 2
  mkdir -p "$state"/etc/apt/{apt.conf.d,preferences.d,sources.list.d} "$state"/var/lib/apt/lists/partial \
    "$state"/var/cache/apt/archives/partial "$state"/var/lib/dpkg
  touch "$state/var/lib/dpkg/status"
  echo "deb [arch=arm64] $MIRROR $suite main" > "$state/etc/apt/sources.list"
  apt_opts=(-o "Dir=$state" -o "Dir::State::status=$state/var/lib/dpkg/status" -o APT::Architecture=arm64
    -o APT::Architectures::=arm64 -o Debug::NoLocking=1 -o Dir::Etc::TrustedParts=/usr/share/keyrings
    -o Acquire::Languages=none -o APT::Sandbox::User=root "$@")
  apt-get "${apt_opts[@]}" update -qq || die "apt could not read $suite arm64 from $MIRROR"
}
# A command in the chroot, in a private mount namespace (its /proc and the package mirror vanish with it).
in_chroot() {
  as_root unshare -m --fork sh -c '
    set -e; root=$1; shift
    mount -t proc proc "$root/proc"
    mkdir -p "$root/opt/swift-packages"
    if [ -d /opt/swift-packages ]; then mount --bind /opt/swift-packages "$root/opt/swift-packages"; fi
    exec chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"' \
    sh "$chroot_dir" "$@"
}

# One maker of each thing at a time: the cache warming (scripts/warm-caches.sh) may be making the toolchain or a
# build that a step of make test beside it needs; that step waits for it, then finds it made (flock, one lock each).
lock() { mkdir -p "$cache_root"; eval "exec $1>\"\$cache_root/cross-arm64-$2.lock\""; flock "$1"; }

setup() {
  [[ -e $dir/.ready ]] && return 0
  lock 8 setup
  if [[ -e $dir/.ready ]]; then flock -u 8; exec 8>&-; return 0; fi
  host_deps
  local start=$SECONDS tmp=$dir.tmp
  as_root rm -rf "$tmp"
  echo "cross-arm64: making the toolchain in $dir (once; about 2 minutes)" >&2

  # 1. The compiler: sid amd64 with swiftlang (pinned), git and pkg-config for SwiftPM, libc6-dev for manifests.
  as_root debootstrap --variant=minbase sid "$tmp/sid" "$MIRROR" >"$cache_root/cross-arm64-debootstrap.log" 2>&1 \
    || die "debootstrap sid failed (see $cache_root/cross-arm64-debootstrap.log)"
  echo 'Acquire::Check-Valid-Until "false";' | as_root tee "$tmp/sid/etc/apt/apt.conf.d/99dosetap-snapshot" >/dev/null
  local saved=$chroot_dir; chroot_dir=$tmp/sid
  in_chroot sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends \
      swiftlang=$SWIFTLANG_VERSION libswiftlang=$SWIFTLANG_VERSION libc6-dev git pkg-config >/dev/null \
      && apt-get clean" || die "installing swiftlang $SWIFTLANG_VERSION in the sid chroot failed"
  chroot_dir=$saved

  # 2. The target root: trixie arm64's -dev packages and their dependencies, resolved by apt with its own state.
  local root=$tmp/sid$bundle/sdk/sysroot
  apt_arm64 "$tmp/apt" "$TARGET_SUITE"
  apt-get "${apt_opts[@]}" install --download-only -y -qq --no-install-recommends "${TARGET_PACKAGES[@]}" \
    "${TEST_PACKAGES[@]}" >/dev/null || die "apt could not download ${TARGET_PACKAGES[*]} ${TEST_PACKAGES[*]} for $TARGET_SUITE arm64"
  as_root mkdir -p "$root"
  local deb name
  for deb in "$tmp"/apt/var/cache/apt/archives/*.deb; do
    as_root dpkg-deb -x "$deb" "$root"
    # A package that ships a shared library, with its control files: dpkg-shlibdeps reads its symbols/shlibs.
    if dpkg-deb -c "$deb" | grep -c '\.so\.[0-9]' >/dev/null; then
      name=$(dpkg-deb -f "$deb" Package)
      mkdir -p "$tmp/pkgs/$name/DEBIAN"
      dpkg-deb -x "$deb" "$tmp/pkgs/$name"
      dpkg-deb -e "$deb" "$tmp/pkgs/$name/DEBIAN"
    fi
  done
  # usrmerge, as base-files makes it on the target.
  as_root ln -sfn usr/lib "$root/lib"; as_root ln -sfn usr/bin "$root/bin"; as_root ln -sfn usr/sbin "$root/sbin"
  for name in "$tmp"/pkgs/*; do ln -sfn usr/lib "$name/lib"; done

  # 3. The arm64 Swift runtime (shared and static), its module files and clang's headers, into the target root.
  # (apt checks it against sid's signed index; the snapshot's InRelease has expired, as in the chroot)
  apt_arm64 "$tmp/apt-sid" sid -o Acquire::Check-Valid-Until=false
  (cd "$tmp/apt-sid" && apt-get "${apt_opts[@]}" download -qq "swiftlang:arm64=$SWIFTLANG_VERSION") \
    || die "could not download swiftlang $SWIFTLANG_VERSION for arm64"
  local swiftdeb
  swiftdeb=$(ls "$tmp"/apt-sid/swiftlang_*_arm64.deb)
  as_root mkdir -p "$root/usr/lib"
  dpkg-deb --fsys-tarfile "$swiftdeb" | as_root tar -x -C "$root/usr/lib" --strip-components=5 \
    ./usr/libexec/swift/lib/swift ./usr/libexec/swift/lib/swift_static ./usr/libexec/swift/lib/clang
  as_root tee "$tmp/sid$bundle/info.json" >/dev/null <<EOF
{"schemaVersion": "1.0", "artifacts": {"dosetap-$TARGET_SUITE-arm64": {"type": "swiftSDK", "version": "$SWIFTLANG_VERSION",
  "variants": [{"path": "sdk"}]}}}
EOF
  as_root tee "$tmp/sid$bundle/sdk/swift-sdk.json" >/dev/null <<'EOF'
{"schemaVersion": "4.0", "targetTriples": {"aarch64-unknown-linux-gnu": {"sdkRootPath": "sysroot",
  "swiftResourcesPath": "sysroot/usr/lib/swift", "swiftStaticResourcesPath": "sysroot/usr/lib/swift_static",
  "toolsetPaths": ["toolset.json"]}}}
EOF
  echo '{"schemaVersion": "1.0", "swiftCompiler": {"extraCLIOptions": ["-use-ld=lld"]}}' \
    | as_root tee "$tmp/sid$bundle/sdk/toolset.json" >/dev/null
  as_root rm -rf "$tmp/apt" "$tmp/apt-sid"
  as_root mv "$tmp" "$dir"
  touch "$dir/.ready"
  # Earlier toolchains (another definition of this file) are no longer used.
  local old
  for old in "$cache_root"/cross-arm64-*; do
    [[ -d $old && $old != "$dir" ]] && as_root rm -rf "$old"
  done
  echo "cross-arm64: toolchain ready in $((SECONDS - start)) s" >&2
  flock -u 8; exec 8>&-
}

# The tracked files, copied to $1 in the chroot, and a file no longer tracked leaves the copy too (rsync's --delete
# does not reach them through --files-from). Compared by content, and modification times not copied: a file whose
# content did not change keeps the copy's time, so SwiftPM's build there stays incremental even from a fresh clone
# (whose every file is new by its time: with -a, CI's arm64 tier rebuilt all 907 steps, ~15 minutes, each run).
copy_tree() {
  local dest=$1 stale
  as_root mkdir -p "$dest"
  git -C "$repo" ls-files -z | as_root rsync -rlp --checksum --from0 --files-from=- "$repo/" "$dest/"
  stale=$(comm -23 <(cd "$dest" && find . -type f ! -path ./.build-commit -printf '%P\n' | sort) \
    <(git -C "$repo" ls-files | sort))
  [[ -z $stale ]] || (cd "$dest" && xargs -d '\n' rm -f <<<"$stale")
}

build() {
  setup
  lock 7 build
  local start=$SECONDS
  copy_tree "$chroot_dir/src"
  local jobs=${ARM64_JOBS:-$(nproc)}
  # The copy has no .git: the commit for `dosetap --version` (scripts/build-stamp.sh) comes from here.
  local commit
  commit=$(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  if [[ $commit != unknown && -n $(git -C "$repo" status --porcelain --untracked-files=no | head -1) ]]; then commit+=-dirty; fi
  # pkg-config answers for the target: SwiftPM reads the .pc files of PKG_CONFIG_PATH itself (pkg-config, of
  # PKG_CONFIG_LIBDIR), and passes their paths on unprefixed unless PKG_CONFIG_SYSROOT_DIR is set.
  # DOSETAP_SYSROOT: where Package.swift finds libdbus's headers (it does not ask pkg-config, see there).
  # git in the chroot: the machine's package mirror when it has one (as git on the host is set to), else GitHub.
  { printf '[safe]\n\tdirectory = *\n'
    [[ ! -d /opt/swift-packages ]] || printf '[url "/opt/swift-packages/"]\n\tinsteadOf = https://github.com/\n'
  } | as_root tee "$chroot_dir/etc/gitconfig" >/dev/null
  # (SwiftPM runs the BuildStamp plugin's script without this environment: it reads the commit from a file)
  echo "$commit" | as_root tee "$chroot_dir/src/.build-commit" >/dev/null
  # SwiftPM runs the BuildStamp prebuild command only when the package's files changed, not when only .build-commit
  # did (seen: an arm64 binary naming a commit three behind). So the same script refreshes the stamp here first
  # (it rewrites the file only when the version or the commit changed; SwiftPM then recompiles DoseTapVersion).
  local stamp=/build/plugins/outputs/src/DoseTapVersion/destination/BuildStamp/Generated
  if [[ -d $chroot_dir${stamp%/Generated} ]]; then in_chroot sh /src/scripts/build-stamp.sh /src "$stamp" || die "build-stamp.sh failed"; fi
  in_chroot sh -c "cd /src && export DOSETAP_SYSROOT=$bundle/sdk/sysroot PKG_CONFIG_SYSROOT_DIR=$bundle/sdk/sysroot \
      PKG_CONFIG_PATH=$bundle/sdk/sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:$bundle/sdk/sysroot/usr/share/pkgconfig \
      PKG_CONFIG_LIBDIR=$bundle/sdk/sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:$bundle/sdk/sysroot/usr/share/pkgconfig && \
      for product in dosetap dosetap-front; do \
        swift build -c release --static-swift-stdlib --disable-local-rpath --product \$product --scratch-path /build -j $jobs \
        --swift-sdks-path /opt/dosetap-sdk --swift-sdk aarch64-unknown-linux-gnu $* || exit 1; \
      done" \
    || die "the arm64 build failed"
  mkdir -p "$repo/.build-arm64"
  # The full program and the installed one-shot front (#29; make deb-arm64 packages both).
  for product in dosetap dosetap-front; do
    as_root install -m755 "$chroot_dir/build/aarch64-unknown-linux-gnu/release/$product" "$repo/.build-arm64/$product"
    [[ $(id -u) -eq 0 ]] || as_root chown "$(id -u):$(id -g)" "$repo/.build-arm64/$product"
  done
  echo "cross-arm64: built .build-arm64/dosetap and dosetap-front in $((SECONDS - start)) s" >&2
  flock -u 7; exec 7>&-
}

# Every target and test, for this machine (x86_64), debug, with the chroot's swiftlang: the project keeps building
# with Debian's 6.2 as well as with the toolchain it is developed on (#31). The executables link; the test
# modules are compiled, not linked: Debian's swiftlang ships the _Testing_Foundation module (Swift Testing's
# Foundation overlay) without its library, so no test executable that imports Testing and Foundation links with it.
# The machine's -dev packages go into the chroot the first time (apt, from the same sid snapshot; not part of the
# cache's key: the toolchain does not change), the copy and the build folder stay between runs (incremental).
compile_all() {
  setup
  lock 6 compile-all
  local start=$SECONDS gcc dev
  if [[ ! -e $chroot_dir/.host-dev-ready ]]; then
    # C++ headers of the GCC version swiftlang's clang picks (the highest installed) for TOMLKit's toml++.
    gcc=$(find "$chroot_dir/usr/lib/gcc/x86_64-linux-gnu" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n | tail -1)
    [[ -n $gcc ]] || die "no GCC installation in the chroot"
    dev="libudev-dev libsqlite3-dev libdbus-1-dev linux-libc-dev libmosquitto-dev libasound2-dev libumockdev-dev libglib2.0-dev libstdc++-$gcc-dev"
    in_chroot sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Use-Pty=0 \
        --no-install-recommends $dev >/dev/null && apt-get clean" || die "installing $dev in the sid chroot failed"
    as_root touch "$chroot_dir/.host-dev-ready"
  fi
  copy_tree "$chroot_dir/src-tests"
  git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null | as_root tee "$chroot_dir/src-tests/.build-commit" >/dev/null
  { printf '[safe]\n\tdirectory = *\n'
    [[ ! -d /opt/swift-packages ]] || printf '[url "/opt/swift-packages/"]\n\tinsteadOf = https://github.com/\n'
  } | as_root tee "$chroot_dir/etc/gitconfig" >/dev/null
  local tests jobs=${ARM64_JOBS:-$(nproc)}
  tests=$(cd "$repo" && swift package dump-package 2>/dev/null \
    | python3 -c 'import json, sys; print(" ".join(t["name"] for t in json.load(sys.stdin)["targets"] if t["type"] == "test"))')
  [[ -n $tests ]] || die "no test targets in Package.swift (swift package dump-package)"
  in_chroot sh -c "cd /src-tests && swift build -j $jobs --scratch-path /build-tests \
      && for t in $tests; do swift build -j $jobs --scratch-path /build-tests --target \$t || exit 1; done" \
    || die "the project does not build with swiftlang $SWIFTLANG_VERSION (above)"
  echo "cross-arm64: every target and test ($tests) compiles with swiftlang $SWIFTLANG_VERSION ($((SECONDS - start)) s)" >&2
  flock -u 6; exec 6>&-
}

case "${1:-}" in
  setup) setup ;;
  build) shift; build "$@" ;;
  run) shift; setup; [[ $# -gt 0 ]] || die "run: which program?"; exec qemu-aarch64-static -L "$sysroot" "$@" ;;
  sysroot) setup; echo "$sysroot" ;;
  shlibs-dirs) setup; ls -d "$pkgs"/* ;;
  compile-all) compile_all ;;
  *) die "usage: scripts/cross-arm64.sh setup|build [swift build args]|run CMD [ARG…]|sysroot|shlibs-dirs|compile-all" ;;
esac
