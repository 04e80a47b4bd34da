#!/usr/bin/env bash
# Ubuntu 22.04's 5.15 kernel, booted under qemu like t95: a page-era kernel
# (writeback_dirty_page, no struct folio, no bpf_loop), so the same
# ./amptrace must pick its fallback programs there and the core tests must
# pass.  The packages come from archive.ubuntu.com (newest 5.15 generic
# kernel of jammy-updates); skips where that, qemu or the network is
# missing.  KVM or TCG as for t95.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
qemu_need_accel
command -v curl >/dev/null || skip "curl missing"

mirror=${AMPTRACE_UBUNTU_MIRROR:-https://archive.ubuntu.com/ubuntu}
cache=${AMPTRACE_QEMU_CACHE:-/var/cache/amptrace-qemu}
# The newest linux-image-5.15.0-N-generic and its modules, same version.
index=$AMP_TMP/Packages
if curl -fsS -m 120 "$mirror/dists/jammy-updates/main/binary-amd64/Packages.gz" 2>/dev/null |
       gzip -dc >"$index" 2>/dev/null && [[ -s $index ]]; then
    read -r abi ver < <(awk '
        /^Package: linux-image-5\.15\.0-[0-9]+-generic$/ { p = $2 }
        /^Version: / && p { v = $2 }
        /^$/ { if (p) { n = p; sub(/^linux-image-5\.15\.0-/, "", n); sub(/-generic$/, "", n); print n, v }; p = "" }' \
        "$index" | sort -n | tail -n 1) || true
    [[ -n ${abi-} ]] || skip "no linux-image-5.15.0-*-generic in $mirror jammy-updates"
    kpkg=linux-image-5.15.0-$abi-generic
    file_of() { awk -v p="$1" '$1 == "Package:" { q = $2 } $1 == "Filename:" && q == p { print $2; exit }' "$index"; }
    debs=''
    for p in "$kpkg" "linux-modules-5.15.0-$abi-generic" "linux-modules-extra-5.15.0-$abi-generic"; do
        f=$(file_of "$p")
        [[ -n $f ]] || skip "$p ($ver) not in the $mirror index"
        debs+="$mirror/$f "
    done
    export AMPTRACE_QEMU_DEBS=$debs
else
    # Offline: a kernel fetched before will do.
    kpkg=$(for d in "$cache"/linux-image-5.15.0-*-generic/.ok; do [[ -e $d ]] && basename "$(dirname "$d")"; done |
           sort -V | tail -n 1)
    [[ -n $kpkg ]] || skip "$mirror unreachable and no Ubuntu 5.15 kernel cached in $cache"
fi
export AMPTRACE_QEMU_KPKG=$kpkg
# With t61 and t63: writes a dm layer and a disk fail, where the walk is
# the bounded one.
qemu_core_tests "Ubuntu 22.04's $kpkg (page-era fallbacks)" t61 t63
