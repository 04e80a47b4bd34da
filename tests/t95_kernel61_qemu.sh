#!/usr/bin/env bash
# Debian 12's own kernel (6.1, its linux-image package) booted under qemu
# the same ./amptrace must load there (CO-RE) and the core tests must pass
# in the guest.  Under KVM where a KVM guest boots, else emulated (TCG,
# slow: then only the tests in AMPTRACE_QEMU_TESTS, default the quick
# ones); scripts/qemu-accel.sh says which and why.  Skips where there is no
# qemu or kernel package.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
qemu_need_accel
# With them, the stacked storage (partitions, LVM, LUKS, RAID1; ~18 min
# emulated), compare --stack over them (~1.5 min), writes a dm layer fails
# (t61, dm-flakey: no dm on the host) and a disk's (t63), and faults that
# would disturb the host: a CPU taken offline (t62), the clock stepped (t69).
qemu_core_tests "Debian 12's 6.1 kernel" t42 t43 t61 t62 t63 t69
