#!/usr/bin/env bash
# Debian 12's own kernel (6.1, its linux-image package) booted under qemu
# with KVM: the same ./amptrace must load there (CO-RE) and the core tests
# must pass in the guest.  Skips where there is no /dev/kvm, qemu or kernel
# package.  AMPTRACE_QEMU_ACCEL=tcg runs it under emulation instead (slow:
# then only the tests in AMPTRACE_QEMU_TESTS, default the quick ones).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
qemu_need_accel
qemu_core_tests "Debian 12's 6.1 kernel"
