#!/usr/bin/env bash
# Debian 12's own kernel (6.1, its linux-image package) booted under qemu
# with KVM: the same ./amptrace must load there (CO-RE) and the core tests
# must pass in the guest.  Skips where there is no /dev/kvm, qemu or kernel
# package.  AMPTRACE_QEMU_ACCEL=tcg runs it under emulation instead (slow:
# then only the tests in AMPTRACE_QEMU_TESTS, default the quick ones).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ -z ${AMP_IN_QEMU-} ]] || skip "already inside the qemu guest"
if [[ ${AMPTRACE_QEMU_ACCEL:-kvm} == kvm && ! -c /dev/kvm ]]; then
    skip "/dev/kvm not available (no hardware virtualisation on this machine); AMPTRACE_QEMU_ACCEL=tcg runs it emulated (slow)"
fi

# Whole run, download and boot included, well inside 10 minutes.
export AMPTRACE_QEMU_TIMEOUT=${AMPTRACE_QEMU_TIMEOUT:-540}
tests=()
if [[ -n ${AMPTRACE_QEMU_TESTS-} ]]; then
    read -r -a tests <<<"$AMPTRACE_QEMU_TESTS"
elif [[ ${AMPTRACE_QEMU_ACCEL:-kvm} == tcg ]]; then
    tests=(t10 t20 t30 t40 t50 t60)   # the fs matrix (t35, t36) takes too long emulated
fi
rc=0
"$AMP_ROOT/scripts/qemu-kernel-test.sh" "${tests[@]}" || rc=$?
case $rc in
    0) ok "core tests pass on Debian 12's 6.1 kernel" ;;
    77) exit 77 ;;
    *) fail "core tests on Debian 12's 6.1 kernel: exit $rc (logs: ${AMP_TEST_LOGS:-/tmp/amptrace-test-logs}/qemu-*)" ;;
esac
