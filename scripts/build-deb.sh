#!/usr/bin/env bash
# Builds dist/dosetap_VERSION_ARCH.deb from the release build in SCRATCH (default .build), with dpkg-deb
# alone: `make install` into a staging tree with Debian's paths, the docs, DEBIAN/{control,md5sums,
# postinst,postrm}; Depends: computed by dpkg-shlibdeps from the libraries the binary really loads
# (readelf NEEDED). Called by `make deb` after `make man completions` (docs/packaging.md).
# `make deb-arm64` calls it as `scripts/build-deb.sh SCRATCH arm64 BINARY`: the cross-built binary (scripts/
# cross-arm64.sh), the same pages, completions, unit, rules and docs; Depends computed by dpkg-shlibdeps against
# the target's (trixie arm64) library packages, and the dlopen list from their shlibs files.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=${1:-.build}
arch=${2:-$(dpkg --print-architecture)}
binary=${3:-$scratch/release/dosetap}
cross=()
strip=(strip --strip-debug)
shlibs_files=(/var/lib/dpkg/info/*.shlibs)
if [[ $arch != "$(dpkg --print-architecture)" ]]; then
  [[ $arch == arm64 ]] || { echo "build-deb: no cross toolchain for $arch" >&2; exit 2; }
  mapfile -t trees < <(scripts/cross-arm64.sh shlibs-dirs)
  # dpkg-shlibdeps looks for each library in these package trees (-S), the target's multiarch directory.
  for tree in "${trees[@]}"; do cross+=("-S$tree"); done
  export DEB_HOST_ARCH=arm64 DEB_HOST_MULTIARCH=aarch64-linux-gnu DEB_HOST_GNU_TYPE=aarch64-linux-gnu
  strip=(aarch64-linux-gnu-strip --strip-debug)
  shlibs_files=()
  for tree in "${trees[@]}"; do [[ -f $tree/DEBIAN/shlibs ]] && shlibs_files+=("$tree/DEBIAN/shlibs"); done
fi
version=$(tr -d ' \n\r\t' < VERSION)
# Who answers for this build: DEBFULLNAME/DEBEMAIL as Debian's tools read them, else the project's address.
maintainer="${DEBFULLNAME:-DoseTap developers} <${DEBEMAIL:-dosetap@example.org}>"
work=$(mktemp -d "${TMPDIR:-/tmp}/dosetap-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=$work/dosetap

# The files, where Debian wants them (make install with DESTDIR; it also installs the udev rules).
make --no-print-directory -s install SCRATCH="$scratch" BINARY="$binary" STRIP="${strip[*]}" DESTDIR="$stage" PREFIX=/usr \
    USERUNITDIR=/usr/lib/systemd/user SYSTEMUNITDIR=/usr/lib/systemd/system UDEVRULESDIR=/usr/lib/udev/rules.d \
    ZSHCOMPDIR=/usr/share/zsh/vendor-completions FISHCOMPDIR=/usr/share/fish/vendor_completions.d >/dev/null
gzip -9n "$stage"/usr/share/man/man1/*.1
doc=$stage/usr/share/doc/dosetap
install -d "$doc" "$doc/docs"
install -m644 packaging/debian/copyright "$doc/copyright"
install -m644 README.md "$doc/README.md"
install -m644 docs/*.md "$doc/docs/"
# The udev rules' guide and the Raspberry Pi's vibration-motor overlay (docs/packaging.md, "On the Pi").
install -d "$doc/examples"
install -m644 udev-rules/README.md "$doc/examples/udev-rules.md"
install -m644 udev-rules/dosetap-vibra-overlay.dts "$doc/examples/dosetap-vibra-overlay.dts"
# A native package's changelog: this version, from the commit it was built from.
date=$(git log -1 --format=%aD 2>/dev/null || date -R)
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
printf 'dosetap (%s) unstable; urgency=medium\n\n  * Built from commit %s (see the git log for the changes).\n\n -- %s  %s\n' \
    "$version" "$commit" "$maintainer" "$date" | gzip -9n > "$doc/changelog.gz"
chmod 644 "$doc/changelog.gz"
# Lintian's overrides, each with its reason (docs/packaging.md, "Lintian").
install -Dm644 packaging/debian/lintian-overrides "$stage/usr/share/lintian/overrides/dosetap"

# Depends: what the binary loads, as dpkg-shlibdeps maps it to packages and minimum versions.
mkdir -p "$work/debian"
printf 'Source: dosetap\n\nPackage: dosetap\nArchitecture: any\n' > "$work/debian/control"
shlibdeps=$(cd "$work" && dpkg-shlibdeps -O "${cross[@]}" -e dosetap/usr/bin/dosetap -e dosetap/usr/lib/dosetap/dosetap 2>"$work/shlibdeps.err") \
  || { cat "$work/shlibdeps.err" >&2; echo "build-deb: dpkg-shlibdeps failed (above)" >&2; exit 1; }
depends=$(sed -n 's/^shlibs:Depends=//p' <<<"$shlibdeps")
[[ -n $depends ]] || { cat "$work/shlibdeps.err" >&2; echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# ...and what it loads with dlopen (packaging/debian/dlopen). When the library's wrapper is generated
# (scripts/lazy-library.py: `dlsym(lib, "NAME")` for each function) and its package has a symbols file, the
# minimum version is the highest of those functions' versions there, as dpkg-shlibdeps computes it for a
# NEEDED library ("libudev1 (>= 183)", not the build machine's own 257.13); otherwise the shlibs entry
# ("libasound 2 libasound2 (>= 1.2.8)" for libasound.so.2).
symbols_files=(/var/lib/dpkg/info/*.symbols)
if [[ -n ${cross[*]} ]]; then
  symbols_files=()
  for tree in "${trees[@]}"; do [[ -f $tree/DEBIAN/symbols ]] && symbols_files+=("$tree/DEBIAN/symbols"); done
fi
from_symbols() {  # SONAME → "package (>= version)", or nothing
  local soname=$1 wrapper file
  wrapper=$(grep -l "dlopen(\"$soname\"" Sources/C*/*.c 2>/dev/null | head -1) || true
  [[ -n $wrapper ]] || return 0
  file=$(grep -l "^$soname " "${symbols_files[@]}" 2>/dev/null | head -1) || true
  [[ -n $file ]] || return 0
  grep -o 'dlsym(lib, "[A-Za-z_0-9]*")' "$wrapper" | sed 's/.*"\(.*\)")/\1/' | sort -u > "$work/functions"
  [[ -s $work/functions ]] || return 0
  # The file's first line names the package; each " name@VERSION_NODE minimum" line a symbol.
  awk -v soname="$soname" 'NR == FNR { want[$1] = 1; next }
    $1 == soname { pkg = $2; inlib = 1; next }
    /^[^ *|]/ { inlib = 0 }
    inlib && /^ / { split($1, a, "@"); if (a[1] in want) { print a[1], $2; seen[a[1]] = 1 } }
    END { for (f in want) if (!(f in seen)) { print "MISSING", f; }; print "PACKAGE", pkg }' \
    "$work/functions" "$file" > "$work/versions"
  if grep -q '^MISSING ' "$work/versions"; then
    echo "build-deb: $soname's symbols file has no $(grep '^MISSING ' "$work/versions" | cut -d' ' -f2 | head -3 | tr '\n' ' ')" >&2
    exit 1
  fi
  local pkg min="" v
  pkg=$(sed -n 's/^PACKAGE //p' "$work/versions")
  while read -r _ v; do
    if [[ -z $min ]] || dpkg --compare-versions "$v" gt "$min"; then min=$v; fi
  done < <(grep -v '^PACKAGE \|^MISSING ' "$work/versions")
  [[ -n $pkg && -n $min ]] && echo "$pkg (>= $min)"
}
while read -r soname; do
  [[ -z $soname || $soname == \#* ]] && continue
  entry=$(from_symbols "$soname")
  if [[ -z $entry ]]; then
    name=${soname%%.so.*} soversion=${soname##*.so.}
    # (awk reads the files itself: `cat | awk … exit` would end cat with SIGPIPE, a failure under pipefail.)
    entry=$(awk -v n="$name" -v v="$soversion" '!found && $1 == n && $2 == v { $1 = ""; $2 = ""; sub(/^ +/, ""); print; found = 1 }' \
      "${shlibs_files[@]}" 2>/dev/null || true)
  fi
  [[ -n $entry ]] || { echo "build-deb: no installed package's shlibs file names $soname (install its -dev package)" >&2; exit 1; }
  depends+=", $entry"
done < packaging/debian/dlopen

install -d -m755 "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s|@MAINTAINER@|$maintainer|" -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$depends/" \
    packaging/debian/control.in > "$stage/DEBIAN/control"
install -m755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$stage/DEBIAN/"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
chmod 644 "$stage/DEBIAN/md5sums"
find "$stage" -type d -exec chmod 755 {} +

mkdir -p dist
out=dist/dosetap_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "$out"
