#!/usr/bin/env bash
# The real-machine test tier: a Debian bookworm amd64 guest under qemu-system-x86_64 (TCG), made from Debian's
# packages and cached, into which a .deb is installed and test commands run as root, S3 suspend included.
# With VM_ARCH=arm64: a Debian trixie arm64 guest under qemu-system-aarch64 (-machine virt -cpu cortex-a72, TCG),
# for the Raspberry Pi's package (#31); no suspend (qemu's virt has no S3).
#
#   scripts/vm.sh image [--unbooted]  make the guest image if the cache has none (root or sudo: debootstrap,
#                                  chroot, mkfs); prints its directory. --unbooted: without its first boot (the
#                                  next image or run does it; what scripts/warm-caches.sh makes beside the tests)
#   scripts/vm.sh run [--deb FILE]... [--payload DIR] [--timeout S] [--qmp SOCK] [-v] -- COMMAND [ARG]...
#                                  boot a throwaway copy of the image, install the .debs (dpkg -i), run COMMAND as
#                                  root in /opt/payload (a copy of DIR), print its stdout and stderr as they come,
#                                  power the guest off, exit with COMMAND's exit code. Else: 124 timeout (default
#                                  600 s from qemu's start; qemu killed), 125 a .deb did not install, 126 the
#                                  payload or the guest's runner failed, 127 no such command, 255 the VM failed
#                                  (qemu ended early, or no poweroff within 180 s); a timeout or a VM failure
#                                  prints one "vm: " line, the guest console's last lines, and keeps that log.
#                                  --qmp SOCK: a QMP socket for the host side of a test. -v: a timing line.
#                                  --host-clock FILE: the guest's RTC runs FILE's offset ("+0", "+660": seconds)
#                                  ahead of the host's clock (libfaketime under qemu; the host may change it).
#   scripts/vm.sh qmp SOCK JSON... one QMP session on a running guest's socket (from run --qmp), each reply on a
#                                  line, e.g. '{"execute":"query-status"}' (status "suspended" during S3),
#                                  '{"execute":"system_wakeup"}'
#   scripts/vm.sh wait-status SOCK STATUS SECONDS   poll query-status until it is STATUS (connects when it can)
#   scripts/vm.sh selftest [--deb FILE]   the tier's own proof: boot (idle, then beside two CPU hogs), S3 deep
#                                  with an RTC wake seen over QMP, output and poweroff after the resume, tester's
#                                  lingering user manager, modprobe uinput, dpkg -i (and FILE installed too)
#   scripts/vm.sh clean            remove the cached images other than the current one, and interrupted builds
#
# In the guest: COMMAND runs once the boot is finished (system "running"; any other state is reported on stderr)
# and the lingering user `tester` (uid 1000, home /home/tester) has its `systemctl --user` manager
# (user@1000.service); cwd /opt/payload, stdin /dev/null, env DOSETAP_VM=1, DOSETAP_VM_PAYLOAD=/opt/payload,
# DOSETAP_VM_DEBS (the .debs, in /opt/debs). Shell syntax needs `-- sh -c '...'`. The guest has no network: what
# the package under test loads must be in RUNTIME_PACKAGES below. Knobs: VM_MEM (MiB, 1024), VM_SMP (2, see
# below), VM_APPEND (more kernel arguments), VM_QEMU_EXTRA (more qemu arguments, split on spaces), VM_KEEP=1
# (keep the run's temp directory: console.log, report), DEBIAN_MIRROR, VM_ARCH (amd64, arm64), VM_DT_EXTRA (arm64:
# a device-tree fragment added to the machine's tree, its PL061_PHANDLE the GPIO controller's phandle), VM_ACPI_EXTRA
# (amd64: an ACPI table in ASL added to the firmware's, as hw-fixtures/vm/amd64/battery.asl, a laptop's battery).
#
# arm64 (measured here, 2 cores): the image is made by running the guest's programs under qemu-user (a binfmt_misc
# entry with the F flag, registered for the build and removed after it; root), 630 s cold (debootstrap + apt under
# emulation ~580 s, first boot ~47 s; the kernel's initramfs hook alone takes minutes emulated). A run: command
# started at ~60 s, poweroff ~6 s. The report channel is a virtio serial port (virt has one UART: the console).
#
# The cache: ${XDG_CACHE_HOME:-~/.cache}/dosetap/vm-bookworm-KEY/ (DOSETAP_CACHE replaces .../dosetap), KEY a
# short sha256 of LAYOUT, the mirror, the package lists and the files baked into the image
# (hw-fixtures/vm/image/), so a change of any makes a new image. It holds rootfs.raw (ext4 made by
# `mkfs.ext4 -d`, never mounted on the host), vmlinuz and initrd.img (from the guest's /boot), packages.txt.
# It is built in a .tmp directory beside it and renamed at the end: an interrupted build leaves no valid cache.
# The build ends with a first boot on the image itself (the ConditionNeedsUpdate=/etc work — ldconfig, hwdb,
# journal catalog — is done once, not in every run) which also proves that it boots. A run boots a qcow2 overlay
# on it in a temp directory; the image is never written. Host packages (qemu-system-x86, qemu-utils,
# debootstrap, e2fsprogs) are installed with apt-get when missing.
#
# The facts it rests on (measured on this tier's kind of machine, 2 cores, nested /dev/kvm):
# - TCG only (-accel tcg): Debian's kernel crawls under the nested KVM.
# - -machine pc, not q35: deep S3 with an RTC wake works on pc; on q35 poweroff breaks after a resume.
#   s2idle never wakes from the RTC, hence mem_sleep_default=deep on the kernel command line.
# - The kernel is Debian's bzImage booted with -kernel (the normal Linux boot protocol); a PVH boot resets on wake.
# - The payload goes in on a second virtio disk (a tar, serial dosetap-payload) unpacked by a unit baked into the
#   image; the report comes back on the second 16550 serial port (ttyS1 -> a host file). 9p is not used: a 9p
#   share dies across suspend; the UART survives it.
# - No network device at all (-nodefaults); entropy from virtio-rng.
# Measured (2 cores, idle unless said): cold image build 80-85 s (debootstrap + apt ~55 s, first boot ~28 s;
# 754 MB on disk, initrd 6.5 MB). A run: qemu start to COMMAND 23-25 s (bzImage unpack ~3 s, kernel + initramfs
# ~5.5 s, systemd to multi-user ~11 s, user manager + payload + runner ~3 s), poweroff 2-3 s, so ~27 s for a
# short command; 44-68 s to COMMAND beside two CPU hogs. S3: QMP "suspended" for the 20 s of rtcwake -s 20, woken
# by the RTC alone. The report channel moves ~0.5 MB/s. `quiet`, blacklisting the unused modules and qboot were
# each tried and gained nothing. Two vCPUs (#28): every machine DoseTap supports has two cores or more (laptops;
# Pi 3/4/5/Zero 2 W: four), and with one the tests' own peers (the Python notification server and uinput motor)
# queued behind the agent: the Dose 2 reminder was shown 0.44-0.73 s after its time with one vCPU, 0.19 s with two;
# boot to COMMAND 29-33 s, S3 and poweroff after a resume as with one.
# The pieces: hw-fixtures/vm/runner.py (guest side, shipped in each payload), hw-fixtures/vm/vmhost.py (host
# side: qemu, the report channel, timeouts, QMP), hw-fixtures/vm/image/ (copied into the image).
set -Eeuo pipefail
# A command that stops this script under set -e says which (test-vm.sh once saw only "exit 141" and no word); a run
# whose guest command failed has said why already.
trap 'rc=$?; [[ $BASHPID != "$$" || $BASH_COMMAND == run_vm* || $BASH_COMMAND == return* ]] \
  || echo "vm: line $LINENO: $BASH_COMMAND: exit $rc" >&2' ERR
cd "$(dirname "$0")/.."
repo=$PWD
helpers=$repo/hw-fixtures/vm

VM_ARCH=${VM_ARCH:-amd64}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-${MIRROR%/debian}/debian-security}
COMMON_CMDLINE="root=/dev/vda rw rootfstype=ext4 panic=-1 net.ifnames=0 mitigations=off"
case $VM_ARCH in
  amd64)
    SUITE=bookworm
    ALSA_PACKAGE=libasound2
    QEMU_PACKAGE="qemu-system-x86"
    KERNEL_CMDLINE="$COMMON_CMDLINE console=ttyS0,115200 mem_sleep_default=deep"
    ;;
  arm64)
    # The arm64 build needs glibc 2.38 (scripts/cross-arm64.sh): trixie, as on the trixie-based Raspberry Pi OS.
    SUITE=trixie
    ALSA_PACKAGE=libasound2t64   # trixie's name
    QEMU_PACKAGE="qemu-system-arm"
    KERNEL_CMDLINE="$COMMON_CMDLINE console=ttyAMA0,115200"
    ;;
  *) echo "vm: VM_ARCH is amd64 or arm64, not $VM_ARCH" >&2; exit 2 ;;
esac
# The guest's system.
GUEST_PACKAGES=(systemd systemd-sysv udev dbus dbus-user-session libpam-systemd polkitd "linux-image-$VM_ARCH" kmod
  procps util-linux python3 python3-dbus python3-gi jq)
# What the package under test loads (its Depends and its dlopen list, packaging/debian): the guest cannot fetch.
RUNTIME_PACKAGES=(libc6 libdbus-1-3 libgcc-s1 libsqlite3-0 libstdc++6 libudev1 zlib1g "$ALSA_PACKAGE" libmosquitto1)
IMAGE_SIZE=3G
LAYOUT=1   # raise when what build_image() makes changes
VM_MEM=${VM_MEM:-1024}
VM_SMP=${VM_SMP:-2}

cache_root=${DOSETAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dosetap}
key=$({ echo "$LAYOUT ${VM_ARCH/#amd64/}$SUITE $MIRROR $SECURITY_MIRROR ${GUEST_PACKAGES[*]} ${RUNTIME_PACKAGES[*]} $IMAGE_SIZE"
  (cd "$helpers/image" && find . -type f | LC_ALL=C sort | xargs sha256sum); } | sha256sum | cut -c1-12)
# vm-bookworm-KEY (amd64), vm-trixie-arm64-KEY.
flavour=$SUITE; [[ $VM_ARCH == amd64 ]] || flavour+=-$VM_ARCH
dir=$cache_root/vm-$flavour-$key
unbooted=$dir.unbooted

die() { echo "vm: $*" >&2; exit 1; }
# Temp directories to remove at exit (as root: the image build's holds root's files).
cleanup=()
trap '((${#cleanup[@]} == 0)) || as_root rm -rf "${cleanup[@]}"' EXIT
as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  else command -v sudo >/dev/null || die "needs root (or sudo) to build the image"; sudo "$@"; fi
}
host_deps() {
  local missing=() p
  for p in "$QEMU_PACKAGE" qemu-utils "$@"; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == "install ok installed" ]] || missing+=("$p")
  done
  command -v python3 >/dev/null || missing+=(python3)
  ((${#missing[@]} == 0)) && return 0
  echo "vm: installing Debian packages: ${missing[*]}" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
# A command in the image's root (a private mount namespace: its /proc and /sys vanish with it).
in_root() {
  # shellcheck disable=SC2016 # expanded by the inner sh
  as_root unshare -m --fork sh -c '
    set -e; root=$1; shift
    mount -t proc proc "$root/proc"; mount -t sysfs sysfs "$root/sys"
    exec chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive "$@"' sh "$1" "${@:2}"
}

# An arm64 image is made on this amd64 host by running its programs (the packages' maintainer scripts, apt, dpkg)
# under qemu-user: a binfmt_misc entry for arm64 ELF files with the F flag (the interpreter is opened once, here, so
# it works inside the chroot), registered for the build and removed at exit. It needs root and a writable
# /proc/sys/fs/binfmt_misc; without them the build stops and says so.
foreign_binaries() {
  host_deps qemu-user-static
  local misc=/proc/sys/fs/binfmt_misc entry=dosetap-vm-aarch64 conf=/usr/lib/binfmt.d/qemu-aarch64.conf
  [[ -e $misc/$entry ]] && return 0
  [[ -w $misc/register ]] || as_root mount -t binfmt_misc binfmt_misc "$misc" 2>/dev/null || true
  [[ -f $conf ]] || die "no $conf (qemu-user-static): cannot run arm64 programs to make the arm64 image"
  # qemu-user-static's own magic and mask; our name, its static interpreter, flag F.
  sed -E "s|^:qemu-aarch64:|:$entry:|; s|:[^:]*:[A-Z]*\$|:/usr/bin/qemu-aarch64-static:F|" "$conf" \
    | as_root tee "$misc/register" >/dev/null \
    || die "cannot register arm64 programs with binfmt_misc ($misc/register): the arm64 image needs it (root)"
  trap '((${#cleanup[@]} == 0)) || as_root rm -rf "${cleanup[@]}"; [[ ! -e '"$misc/$entry"' ]] || echo -1 | as_root tee '"$misc/$entry"' >/dev/null' EXIT
}

build_image() {
  host_deps debootstrap e2fsprogs
  mkdir -p "$cache_root"
  local start=$SECONDS tmp root log
  tmp=$(mktemp -d "$dir.tmp.XXXXXX")
  cleanup+=("$tmp")
  root=$tmp/root
  log=$tmp/build.log
  echo "vm: building the $SUITE guest image in $dir (once; a few minutes; log $log)" >&2

  [[ $VM_ARCH == amd64 ]] || foreign_binaries
  as_root debootstrap --arch="$VM_ARCH" --variant=minbase "$SUITE" "$root" "$MIRROR" >"$log" 2>&1 \
    || { tail -20 "$log" >&2; die "debootstrap $SUITE from $MIRROR failed"; }
  as_root tee "$root/etc/apt/sources.list" >/dev/null <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY_MIRROR $SUITE-security main
EOF
  as_root cp /etc/resolv.conf "$root/etc/resolv.conf"
  printf '#!/bin/sh\nexit 101\n' | as_root tee "$root/usr/sbin/policy-rc.d" >/dev/null
  as_root chmod 755 "$root/usr/sbin/policy-rc.d"
  # The image's own files first: the initramfs configuration must be there when the kernel's package makes it.
  as_root cp -a --no-preserve=ownership "$helpers/image/." "$root/"
  in_root "$root" sh -c "apt-get update -qq && apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends \
      ${GUEST_PACKAGES[*]} ${RUNTIME_PACKAGES[*]} && apt-get clean" >>"$log" 2>&1 \
    || { tail -30 "$log" >&2; die "installing the guest's packages failed"; }

  # The system: root on /dev/vda, a user that lingers, no getty, nothing that waits for a network or runs
  # maintenance at boot, the payload unit.
  as_root tee "$root/etc/fstab" >/dev/null <<'EOF'
/dev/vda / ext4 rw,relatime 0 0
EOF
  echo dosetap-vm | as_root tee "$root/etc/hostname" >/dev/null
  printf '127.0.0.1 localhost\n127.0.1.1 dosetap-vm\n::1 localhost ip6-localhost ip6-loopback\n' \
    | as_root tee "$root/etc/hosts" >/dev/null
  : | as_root tee "$root/etc/resolv.conf" >/dev/null
  in_root "$root" useradd --create-home --uid 1000 --user-group --shell /bin/bash tester
  as_root mkdir -p "$root/var/lib/systemd/linger"
  as_root touch "$root/var/lib/systemd/linger/tester"
  in_root "$root" systemctl mask --quiet getty@tty1.service serial-getty@ttyS0.service \
    serial-getty@ttyS1.service serial-getty@ttyAMA0.service console-getty.service systemd-networkd-wait-online.service \
    apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer man-db.timer \
    dpkg-db-backup.timer systemd-tmpfiles-clean.timer
  in_root "$root" systemctl enable --quiet dosetap-vm.service
  as_root rm -f "$root/usr/sbin/policy-rc.d"
  as_root rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/*.log
  in_root "$root" sh -c 'lsinitramfs /boot/initrd.img-* | grep "virtio_blk.ko" >/dev/null' \
    || die "the guest's initrd has no virtio_blk"

  local kernels initrds
  kernels=("$root"/boot/vmlinuz-*); initrds=("$root"/boot/initrd.img-*)
  ((${#kernels[@]} == 1 && ${#initrds[@]} == 1)) || die "expected one kernel and one initrd in the guest's /boot"
  as_root cp "${kernels[0]}" "$tmp/vmlinuz"
  as_root cp "${initrds[0]}" "$tmp/initrd.img"
  as_root mkfs.ext4 -q -L dosetap-root -E lazy_itable_init=0,lazy_journal_init=0 -d "$root" "$tmp/rootfs.raw" \
    "$IMAGE_SIZE" >>"$log" 2>&1 || { tail -20 "$log" >&2; die "mkfs.ext4 -d failed"; }
  as_root rm -rf "$root"
  as_root chown -R "$(id -u):$(id -g)" "$tmp"
  chmod 755 "$tmp"; chmod 644 "$tmp/vmlinuz" "$tmp/initrd.img" "$tmp/rootfs.raw"
  echo "built=$((SECONDS - start))s" >"$tmp/build-info"
  echo "vm: image built in $((SECONDS - start)) s" >&2
  if [[ ${1:-} == --unbooted ]]; then
    # Not booted yet (`image --unbooted`, the cache warming beside the tests): the next `image` or `run` boots it.
    mv -T "$tmp" "$unbooted" || die "could not rename $tmp to $unbooted"
    return 0
  fi
  first_boot "$tmp"
}

# The first boot, on the image itself: proves that it boots, does the once-only work, lists the packages; then the
# image is the cache's.
first_boot() {
  local img=$1 boot_start=$SECONDS
  echo "vm: first boot of the new image" >&2
  image_dir=$img first_boot=1 run_vm --timeout 900 -- dpkg-query -W >"$img/packages.txt" \
    || { [[ $img != "$unbooted" ]] || as_root rm -rf "$img"; die "the new image's first boot failed (above)"; }
  echo "LAYOUT=$LAYOUT $(cat "$img/build-info") first_boot=$((SECONDS - boot_start))s date=$(date -u +%FT%TZ)" >"$img/build-info"
  mv -T "$img" "$dir" 2>/dev/null || { [[ -f $dir/rootfs.raw ]] || die "could not rename $img to $dir"; }
  # Earlier images of this flavour (another definition) are no longer used: 0.8-1 GB each.
  find "$cache_root" -maxdepth 1 -name "vm-$flavour-*" ! -path "$dir" ! -name '*.tmp.*' ! -path "$unbooted" -exec rm -rf {} +
  echo "vm: image ready (first boot $((SECONDS - boot_start)) s)" >&2
}

image_ready() { [[ -f $dir/rootfs.raw && -f $dir/vmlinuz && -f $dir/initrd.img ]]; }
# One image build at a time for each flavour: the cache warming (scripts/warm-caches.sh) may be making the image
# that a run beside it needs; the run then waits for it instead of making a second one.
lock_images() {
  mkdir -p "$cache_root"
  exec 9>"$cache_root/vm-$flavour.lock"
  flock 9
}
unlock_images() { flock -u 9; exec 9>&-; }
ensure_image() {
  host_deps
  image_ready && return 0
  lock_images
  if ! image_ready; then
    if [[ -f $unbooted/rootfs.raw ]]; then first_boot "$unbooted"; else build_image; fi
  fi
  unlock_images
}
# `image --unbooted`: the image made, its first boot left to the first run (a boot in the background, at the lowest
# CPU priority beside busy tests, could outlast its own time limit).
ensure_unbooted() {
  host_deps
  image_ready && return 0
  lock_images
  image_ready || [[ -f $unbooted/rootfs.raw ]] || build_image --unbooted
  unlock_images
}

# run_vm [options] -- COMMAND...: boots $image_dir (default: the cache); first_boot=1 writes to its rootfs.raw.
run_vm() {
  local debs=() payload='' timeout=600 qmp='' host_clock='' verbose=()
  while (($#)); do
    case $1 in
      --deb) [[ -f ${2:-} ]] || die "--deb: no file ${2:-}"; debs+=("$(realpath "$2")"); shift 2 ;;
      --payload) [[ -d ${2:-} ]] || die "--payload: no directory ${2:-}"; payload=$(realpath "$2"); shift 2 ;;
      --timeout) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--timeout needs seconds"; timeout=$2; shift 2 ;;
      --qmp) [[ -n ${2:-} ]] || die "--qmp needs a socket path"; qmp=$2; shift 2 ;;
      --host-clock) [[ -n ${2:-} ]] || die "--host-clock needs a file"; host_clock=$(realpath "$2"); shift 2 ;;
      -v) verbose=(-v); shift ;;
      --) shift; break ;;
      *) die "run: unknown option $1 (the command comes after --)" ;;
    esac
  done
  (($#)) || die "run: no command (scripts/vm.sh run [OPTIONS] -- COMMAND...)"
  local img=${image_dir:-$dir} work drive
  work=$(mktemp -d "${TMPDIR:-/tmp}/dosetap-vm.XXXXXX")
  if [[ ${VM_KEEP:-} == 1 ]]; then echo "vm: keeping $work" >&2; else cleanup+=("$work"); fi

  mkdir -p "$work/stage/opt/payload" "$work/stage/opt/debs" "$work/stage/opt/vm"
  [[ -n $payload ]] && cp -a "$payload/." "$work/stage/opt/payload/"
  ((${#debs[@]} == 0)) || cp "${debs[@]}" "$work/stage/opt/debs/"
  cp "$helpers/runner.py" "$work/stage/opt/vm/runner.py"
  python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >"$work/stage/opt/vm/argv.json"
  tar -C "$work/stage" --owner=0 --group=0 --numeric-owner -cf "$work/payload.tar" opt

  if [[ ${first_boot:-} == 1 ]]; then drive="file=$img/rootfs.raw,format=raw"
  else
    qemu-img create -q -f qcow2 -F raw -b "$img/rootfs.raw" "$work/overlay.qcow2"
    drive="file=$work/overlay.qcow2,format=qcow2"
  fi
  local machine report
  # shellcheck disable=SC2054 # the commas are qemu's
  case $VM_ARCH in
    amd64)
      machine=(qemu-system-x86_64 -machine pc)
      report=(-chardev "file,id=report,path=$work/report" -serial chardev:report) ;;
    arm64)
      # cortex-a72 (a Pi 4's core), not "max": pointer authentication's QARMA is slow under TCG.
      machine=(qemu-system-aarch64 -machine virt -cpu cortex-a72)
      report=(-device virtio-serial-pci -chardev "file,id=report,path=$work/report"
        -device virtserialport,chardev=report,name=dosetap.report) ;;
  esac
  # shellcheck disable=SC2054 # the commas are qemu's
  local qemu=("${machine[@]}" -accel tcg -m "$VM_MEM" -smp "$VM_SMP" -nodefaults -no-user-config
    -display none -no-reboot -rtc base=utc
    -kernel "$img/vmlinuz" -initrd "$img/initrd.img" -append "$KERNEL_CMDLINE${VM_APPEND:+ $VM_APPEND}"
    -drive "if=none,id=root,$drive" -device virtio-blk-pci,drive=root
    -drive "if=none,id=payload,file=$work/payload.tar,format=raw,readonly=on"
    -device virtio-blk-pci,drive=payload,serial=dosetap-payload
    -object rng-random,id=rng,filename=/dev/urandom -device virtio-rng-pci,rng=rng
    -chardev "file,id=console,path=$work/console.log" -serial chardev:console "${report[@]}")
  if [[ -n ${VM_ACPI_EXTRA:-} ]]; then
    # amd64: an ACPI table (ASL) added to the firmware's, as a laptop's firmware has it (a battery, say): compiled
    # with iasl and handed to the kernel in an uncompressed cpio before the initrd (kernel/firmware/acpi/*.aml,
    # CONFIG_ACPI_TABLE_UPGRADE), which installs it at boot ("ACPI: Table Upgrade: install [SSDT-…]").
    [[ $VM_ARCH == amd64 ]] || die "VM_ACPI_EXTRA: only the amd64 guest takes ACPI tables"
    [[ -f $VM_ACPI_EXTRA ]] || die "VM_ACPI_EXTRA: no file $VM_ACPI_EXTRA"
    command -v iasl >/dev/null && command -v cpio >/dev/null || host_deps acpica-tools cpio
    mkdir -p "$work/acpi/kernel/firmware/acpi"
    iasl -p "$work/acpi/kernel/firmware/acpi/extra" "$VM_ACPI_EXTRA" >"$work/iasl.log" 2>&1 \
      || { cat "$work/iasl.log" >&2; die "iasl could not compile $VM_ACPI_EXTRA"; }
    rm -f "$work/acpi/kernel/firmware/acpi/extra.lst" "$work/acpi/kernel/firmware/acpi/extra.hex"
    (cd "$work/acpi" && find kernel | cpio -H newc -o --quiet) > "$work/initrd.img"
    cat "$img/initrd.img" >> "$work/initrd.img"
    local i
    for i in "${!qemu[@]}"; do [[ ${qemu[i]} != "$img/initrd.img" ]] || qemu[i]=$work/initrd.img; done
  fi
  if [[ -n ${VM_DT_EXTRA:-} ]]; then
    # arm64: nodes added to the machine's own device tree (a motor on the PL061 GPIO, say). The tree qemu would
    # make for these very options, decompiled; the fragment's PL061_PHANDLE names the PL061's phandle.
    [[ $VM_ARCH == arm64 ]] || die "VM_DT_EXTRA: only the arm64 guest takes a device tree"
    [[ -f $VM_DT_EXTRA ]] || die "VM_DT_EXTRA: no file $VM_DT_EXTRA"
    command -v dtc >/dev/null || host_deps device-tree-compiler
    local q=("${qemu[@]}"); q[2]=virt,dumpdtb=$work/machine.dtb
    "${q[@]}" >/dev/null 2>&1 || die "qemu could not write the machine's device tree"
    local phandle
    # dtc writes to a file, not a pipe: awk stops at the first match, and a dtc still writing into the pipe then
    # ends with SIGPIPE, which pipefail turns into a silent exit 141 of this script (a loaded CI machine did).
    dtc -q -I dtb -O dts -o "$work/machine.dts" "$work/machine.dtb" || die "dtc could not read the machine's device tree"
    phandle=$(awk '/pl061@/ {p=1} p && /phandle =/ {gsub(/[<>;]/, ""); print $3; exit}' "$work/machine.dts")
    [[ -n $phandle ]] || die "the machine's device tree has no PL061 GPIO controller"
    { cat "$work/machine.dts"; sed "s/PL061_PHANDLE/$phandle/g" "$VM_DT_EXTRA"; } \
      | dtc -q -I dts -O dtb -o "$work/machine+extra.dtb" - || die "dtc could not add $VM_DT_EXTRA to the tree"
    qemu+=(-dtb "$work/machine+extra.dtb")
  fi
  if [[ -n $qmp ]]; then rm -f "$qmp"; qemu+=(-qmp "unix:$qmp,server=on,wait=off"); fi
  # shellcheck disable=SC2206
  qemu+=(${VM_QEMU_EXTRA:-})
  if [[ -n $host_clock ]]; then
    # The guest's RTC reads the host's clock (-rtc base=utc): qemu runs under libfaketime reading its offset from
    # FILE ("+0"; the host writes "+660" there while the guest is suspended, and the guest's kernel, reading the
    # RTC at resume, has slept 11 minutes more). Only the wall clock: qemu's timers run on the monotonic one.
    local faketime_lib=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
    [[ -f $faketime_lib ]] || host_deps libfaketime
    [[ -s $host_clock ]] || echo "+0" > "$host_clock"
    qemu=(env LD_PRELOAD="$faketime_lib" FAKETIME_TIMESTAMP_FILE="$host_clock" FAKETIME_CACHE_DURATION=1
      FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_DONT_RESET=1 "${qemu[@]}")
  fi
  local rc=0
  python3 "$helpers/vmhost.py" boot --report "$work/report" --console "$work/console.log" --timeout "$timeout" \
    "${verbose[@]}" -- "${qemu[@]}" || rc=$?
  if ((rc == 124 || rc == 255)) && [[ ${VM_KEEP:-} != 1 ]]; then
    # The VM failed: keep its console log and report channel (not the disks) for a look.
    rm -f "$work/overlay.qcow2" "$work/payload.tar"; rm -rf "$work/stage"
    local c kept=()
    for c in "${cleanup[@]}"; do [[ $c == "$work" ]] || kept+=("$c"); done
    cleanup=("${kept[@]}")
    echo "vm: kept the console log and the report in $work" >&2
  fi
  return "$rc"
}

selftest() {
  local deb_args=() t
  if [[ ${1:-} == --deb ]]; then deb_args=(--deb "$(realpath "${2:?--deb needs a file}")"); fi
  ensure_image
  t=$(mktemp -d "${TMPDIR:-/tmp}/dosetap-vmtest.XXXXXX")
  cleanup+=("$t")
  local vm_sh=$repo/scripts/vm.sh
  ok() { echo "vm selftest: ok: $*"; }
  no() { echo "vm selftest: FAIL: $*" >&2; exit 1; }

  echo "== 1. boot to a command (idle host)"
  local s=$SECONDS
  "$vm_sh" run -v -- true 2>"$t/1.err" || { cat "$t/1.err" >&2; no "boot"; }
  cat "$t/1.err"; ok "boot, command, poweroff: $((SECONDS - s)) s wall"

  echo "== 2. the same beside two CPU hogs"
  yes >/dev/null & local hog1=$!
  yes >/dev/null & local hog2=$!
  s=$SECONDS
  "$vm_sh" run -v -- true 2>"$t/2.err" || { kill "$hog1" "$hog2"; cat "$t/2.err" >&2; no "boot under load"; }
  kill "$hog1" "$hog2"; wait "$hog1" "$hog2" 2>/dev/null || true
  cat "$t/2.err"; ok "under load: $((SECONDS - s)) s wall"

  echo "== 3. S3 with an RTC wake; the report channel after resume; poweroff after resume"
  s=$SECONDS
  # shellcheck disable=SC2016 # expanded in the guest
  "$vm_sh" run -v --qmp "$t/qmp" -- sh -c 'cat /sys/power/mem_sleep; echo before >&2; rtcwake -m mem -s 20; \
      echo "after resume: $(date -u +%T)"; echo stderr-after >&2; dmesg | grep -E "PM: suspend (entry|exit)"' \
    >"$t/3.out" 2>"$t/3.err" & local vm=$!
  "$vm_sh" wait-status "$t/qmp" running 600 >/dev/null || no "the guest never ran"
  local t_susp t_wake
  "$vm_sh" wait-status "$t/qmp" suspended 600 >/dev/null || no "QMP never said suspended"
  t_susp=$SECONDS; echo "QMP: suspended at $((t_susp - s)) s"
  "$vm_sh" wait-status "$t/qmp" running 120 >/dev/null || no "the guest did not wake by itself within 120 s"
  t_wake=$SECONDS; echo "QMP: running again at $((t_wake - s)) s (about $((t_wake - t_susp)) s suspended; rtcwake -s 20)"
  wait "$vm" || { cat "$t/3.out" "$t/3.err" >&2; no "the suspend command or its poweroff failed"; }
  cat "$t/3.out" "$t/3.err"
  grep -q '\[deep\]' "$t/3.out" || no "mem_sleep is not deep"
  grep -q '^after resume' "$t/3.out" || no "no stdout after resume"
  grep -q stderr-after "$t/3.err" || no "no stderr after resume"
  grep -q 'PM: suspend exit' "$t/3.out" || no "the kernel did not log a suspend exit"
  ok "S3 deep, RTC wake, report channel after resume, poweroff after resume ($((SECONDS - s)) s)"

  echo "== 4. linger, uinput, dpkg -i (a package made here${deb_args[*]:+, and ${deb_args[1]}})"
  mkdir -p "$t/pkg/DEBIAN" "$t/pkg/usr/share/dosetap-vm-selftest" "$t/payload"
  printf 'Package: dosetap-vm-selftest\nVersion: 1.0\nArchitecture: all\nMaintainer: DoseTap <dosetap@localhost>\nDescription: scripts/vm.sh selftest package\n' >"$t/pkg/DEBIAN/control"
  printf '#!/bin/sh\nset -e\necho postinst-ran > /var/lib/dosetap-vm-selftest\n' >"$t/pkg/DEBIAN/postinst"
  chmod 755 "$t/pkg/DEBIAN/postinst"; echo hello >"$t/pkg/usr/share/dosetap-vm-selftest/hello"
  dpkg-deb --root-owner-group -b "$t/pkg" "$t/selftest.deb" >/dev/null
  cat >"$t/payload/check.sh" <<'EOF'
set -eu
echo "user manager: $(runuser -u tester -- env XDG_RUNTIME_DIR=/run/user/1000 systemctl --user is-system-running)"
systemctl --user -M tester@ is-system-running
modprobe uinput; test -c /dev/uinput; echo "uinput: $(ls -l /dev/uinput)"
dpkg -s dosetap-vm-selftest | grep -E '^Status: install ok installed'
test "$(cat /var/lib/dosetap-vm-selftest)" = postinst-ran
for d in $DOSETAP_VM_DEBS; do dpkg-deb -f "$d" Package Version; done
if command -v dosetap >/dev/null; then dosetap --version; fi
EOF
  s=$SECONDS
  "$vm_sh" run -v --payload "$t/payload" --deb "$t/selftest.deb" "${deb_args[@]}" -- sh check.sh || no "linger/uinput/dpkg"
  ok "linger, uinput, dpkg -i ($((SECONDS - s)) s)"
  echo "vm selftest: all passed"
}

cmd=${1:-}; shift || true
case $cmd in
  image) if [[ ${1:-} == --unbooted ]]; then ensure_unbooted; else ensure_image; fi; echo "$dir" ;;
  run) ensure_image; run_vm "$@" ;;
  qmp) (($# >= 2)) || die "usage: scripts/vm.sh qmp SOCK JSON..."; python3 "$helpers/vmhost.py" qmp "$@" ;;
  wait-status) python3 "$helpers/vmhost.py" wait-status "$@" ;;
  selftest) selftest "$@" ;;
  clean) find "$cache_root" -maxdepth 1 -name "vm-$flavour-*" ! -path "$dir" ! -path "$unbooted" -exec rm -rf {} + ;;
  *) sed -n '2,/^# The cache/p' "$repo/scripts/vm.sh" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
