#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make deb`: amptrace_VERSION_ARCH.deb in OUTDIR (default build/), by
# dpkg-buildpackage on a copy of this tree, with scripts/debian as debian/
# and the full version (scripts/version.sh) written to the copy's VERSION,
# as in a release tarball.  Then lintian on the package: any error or
# warning not overridden (scripts/debian/amptrace.lintian-overrides, each
# with its reason) fails the build.
#
#   scripts/build-deb.sh [OUTDIR]        needs debhelper, dpkg-dev, lintian
#                                       (scripts/deps.sh --package)
#   DEB_ARCH=arm64 scripts/build-deb.sh  cross-built (scripts/deps.sh --cross arm64)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd -P)
out=$(mkdir -p "${1:-$top/build}" && cd "${1:-$top/build}" && pwd -P)
version=$("$top/scripts/version.sh")
# DEB_ARCH: another architecture's package, cross-built (`make deb ARCH=arm64`).
arch=${DEB_ARCH:-$(dpkg --print-architecture)}
cross=()
[[ $arch == "$(dpkg --print-architecture)" ]] || cross=(-a "$arch" -d)
work=$out/deb
src=$work/amptrace-$version
say() { echo "build-deb: $*" >&2; }

rm -rf "$work"
mkdir -p "$src"
# The tree as it is (uncommitted changes too: the version says .dirty), not
# its build output.  In a checkout: git's files, tracked or new, not ignored.
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
   [[ $(git -C "$top" rev-parse --show-toplevel) == "$top" ]]; then
    (cd "$top" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
        tar --null -T - -cf -) | tar -xf - -C "$src"
    changed=$(git -C "$top" log -1 --format=%cD)
    origin="git commit $(git -C "$top" rev-parse --short=12 HEAD)"
else
    tar -C "$top" --exclude=./.git --exclude=./build --exclude=./build-asan --exclude=./build-arm64 \
        --exclude=./amptrace -cf - . | tar -xf - -C "$src"
    changed=$(date -R -r "$top/VERSION")
    origin="a source tree of version $version"
fi
echo "$version" >"$src/VERSION"
cp -r "$src/scripts/debian" "$src/debian"
maint=$(sed -n 's/^Maintainer: //p' "$src/debian/control")
cat >"$src/debian/changelog" <<CHANGELOG
amptrace ($version) unstable; urgency=medium

  * Built from $origin.

 -- $maint  $changed
CHANGELOG

say "dpkg-buildpackage -b in $src (log: $work/build.log)"
# Cross: -d, as the build dependencies are this host's (clang, bpftool)
# and the :arm64 libraries scripts/deps.sh --cross installed.
if ! (cd "$src" && dpkg-buildpackage -b -us -uc -jauto "${cross[@]}") >"$work/build.log" 2>&1; then
    tail -n 30 "$work/build.log" >&2
    say "dpkg-buildpackage failed"
    exit 1
fi
deb=amptrace_${version}_$arch.deb
cp "$work/$deb" "$out/$deb"
say "lintian $deb"
if ! lintian --fail-on error,warning --display-info "$out/$deb" >"$work/lintian.log" 2>&1; then
    cat "$work/lintian.log" >&2
    say "lintian found errors or warnings (fix them, or override with a reason)"
    exit 1
fi
grep -v "^running with root privileges" "$work/lintian.log" >&2 || true
echo "$out/$deb"
