#!/usr/bin/env bash
# arm64, the Raspberry Pi class of machine (issue 38): Debian 12's own arm64
# kernel (linux-image-arm64, 6.1) under qemu-system-aarch64, emulated (TCG:
# no arm64 KVM on an x86 host), with an arm64 Debian tree as its userspace
# (debootstrap --arch=arm64 through qemu-user-static, made once and cached:
# scripts/debian-rootfs.sh), runs the core tests with amptrace cross-built
# here (make ARCH=arm64: the BPF object from that kernel's own BTF and its
# modules', the loader from Debian's cross compiler and :arm64 libraries).
# The same tests as t95's, on arm64's syscall table, pt_regs and struct
# layouts.  AMPTRACE_QEMU_SUITE=trixie: Debian 13's kernel (6.12) and tree
# (journald 257).  Skips where the cross tools, qemu-system-arm or the
# Debian registry are missing (scripts/deps.sh --cross arm64).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ -z ${AMP_IN_QEMU-} ]] || skip "already inside a qemu guest"
command -v qemu-system-aarch64 >/dev/null ||
    skip "qemu-system-aarch64 not installed (scripts/deps.sh --cross arm64)"
command -v aarch64-linux-gnu-gcc >/dev/null ||
    skip "no arm64 cross compiler (scripts/deps.sh --cross arm64)"
make -s -C "$AMP_ROOT" ARCH=arm64 all >&2 || fail "make ARCH=arm64 failed"
file "$AMP_ROOT/build-arm64/amptrace" | grep -q 'ARM aarch64' ||
    fail "build-arm64/amptrace is not an arm64 binary: $(file "$AMP_ROOT/build-arm64/amptrace")"
export AMPTRACE_QEMU_ARCH=arm64 AMPTRACE_QEMU_ACCEL=tcg
# Its own list, not the x86 guests' (AMPTRACE_QEMU_TESTS): emulating arm64
# costs about twice emulating x86 here (t20: 141 s, t44: 130 s).
export AMPTRACE_QEMU_TESTS=${AMP_T88_TESTS:-t10 t20 t30 t40 t44 t46 t50 t60}
export AMPTRACE_QEMU_TIMEOUT=${AMP_T88_TIMEOUT:-2400}
qemu_core_tests "Debian's arm64 kernel (${AMPTRACE_QEMU_SUITE:-bookworm}), emulated"
