#!/usr/bin/env bash
# Install what amptrace needs to build and test, from Debian's packages.
# Installs only what is missing, so a second run costs nothing.
set -euo pipefail

build=(clang llvm make gcc pkg-config libbpf-dev bpftool libelf-dev zlib1g-dev libjson-c-dev
       libmicrohttpd-dev    # the --metrics endpoint
       libmount-dev)        # mount points of the paths the kernel side records
# Tests: filesystems, real loggers, capability tools, the checks' python,
# chromium (headless screenshot of amptrace compare's HTML report).
test=(xfsprogs btrfs-progs e2fsprogs sqlite3 rsyslog systemd util-linux libcap2-bin python3 chromium
      qemu-system-x86 busybox-static   # t95, t96: 6.1 and 5.15 kernels under qemu
      kmod xz-utils zstd               # t97: depmod, modules for a Debian 13 guest
      fdisk dmsetup mdadm              # t42: a partition table (sfdisk), dm-linear, RAID1, in the guests
      tmux prometheus curl             # t90 top in a terminal; t93 promtool and a real scrape
      libclang-rt-14-dev               # t72: libFuzzer runtime for the journal reader
      strace groff-base man-db         # t11 --version makes no BPF call; t12 man pages
      bash-completion debootstrap      # t13 install; t99 the .deb in a Debian 12 chroot
      systemd-container                # t98 the exporter unit under systemd (nspawn)
      sqlite3)                         # t75 SQLite, rollback and WAL, on btrfs
# `make deb` (`scripts/deps.sh --package`) and its test t97: Debian's
# packaging tools.
package=(debhelper dpkg-dev fakeroot lintian)

# Cross-building (`scripts/deps.sh --cross arm64`, run by `make ARCH=arm64`
# and `make deb ARCH=arm64`; issue 38): Debian's cross compiler and the
# libraries of that architecture (multiarch: dpkg --add-architecture), the
# kernel's types from Debian's arm64 kernel package (xz, zstd: its
# modules), and qemu-system-arm for its guest (`make test-arm64`).
cross_arm64=(gcc-aarch64-linux-gnu libbpf-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64
             libjson-c-dev:arm64 libmicrohttpd-dev:arm64 libmount-dev:arm64
             xz-utils zstd qemu-system-arm busybox-static debootstrap qemu-user-static)

# Benchmarks only (`scripts/deps.sh --bench`, run by `make bench`): the
# bpftrace side-by-side comparison, perf for `bench.sh --profile`.
# Not installed for CI.
bench=(bpftrace linux-perf)
wanted=("${build[@]}" "${test[@]}" "${package[@]}")
[[ ${1:-} == --bench ]] && wanted+=("${bench[@]}")
[[ ${1:-} == --package ]] && wanted=("${build[@]}" "${package[@]}")
if [[ ${1:-} == --cross ]]; then
    [[ ${2:-} == arm64 ]] || { echo "deps: --cross arm64 (the one architecture cross-built)" >&2; exit 2; }
    wanted=("${build[@]}" "${package[@]}" python3 "${cross_arm64[@]}")
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        ((EUID == 0)) || { echo "deps: run as root to add the arm64 architecture (dpkg --add-architecture arm64)" >&2; exit 1; }
        echo "deps: dpkg --add-architecture arm64"
        dpkg --add-architecture arm64
        apt-get update -qq
    fi
fi

missing=()
for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
    echo "deps: all installed"
    exit 0
fi
if [[ $EUID -ne 0 ]]; then
    echo "deps: missing ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
fi
echo "deps: installing ${missing[*]}"
# Packaged daemons (rsyslog) must not start on install: the tests run their own.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
fi
trap '((created_policy)) && rm -f "$policy"' EXIT
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
