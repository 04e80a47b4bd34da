#!/usr/bin/env bash
# Which accelerator the qemu guests of this run use, and why:
#
#   scripts/qemu-accel.sh        prints "kvm<TAB>why" or "tcg<TAB>why"
#
# AMPTRACE_QEMU_ACCEL=kvm|tcg decides; unset or auto, a probe boots the
# guests' kernel under KVM to a marker line on its console (qemu-lib.sh,
# qemu_pick_accel): KVM only if that works, and fast; else TCG.  With
# AMPTRACE_QEMU_ACCEL_CACHE set, the first verdict is kept there for the
# rest of the run.  Also says the verdict on stderr, for the test's log.
set -euo pipefail
say() { echo "qemu-accel: $*" >&2; }
die() { say "error: $*"; exit 1; }
# shellcheck source=scripts/qemu-lib.sh
. "$(dirname "$0")/qemu-lib.sh"
qemu_pick_accel
say "$ACCEL_VERDICT ($ACCEL_WHY)"
printf '%s\t%s\n' "$ACCEL_VERDICT" "$ACCEL_WHY"
