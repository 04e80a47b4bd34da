#!/usr/bin/env bash
# The journal where a Raspberry Pi keeps it: on the second partition of an
# SD card (mmcblk0p2; p1 is the FAT boot partition).  The qemu guests'
# SD card (sdhci-pci, on x86 and arm64 alike; scripts/qemu-kernel-test.sh)
# gets that layout, ext4 on p2, journald 252 (AMP_JOURNALD) persisting
# there; one native line traced with --dev /dev/mmcblk0p2, as a user
# names it:
#   its receive entry's scattered journal pages charged exactly;
#   the card's and p2's classes each equal their own counter;
#   the card's bytes >= 90 % by cause.
# Skips where there is no such test card (a host: a disk without the
# guest's marker is never touched).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
disk=/dev/mmcblk0
[[ -b $disk && $(head -c 18 "$disk" 2>/dev/null) == AMPTRACE-TEST-DISK ]] ||
    skip "no test SD card (the qemu guests have one)"
use_journald
STACK_ON_DISK=$disk make_stackfs part2 ext4 512 "$JOURNAL_DIR"
start_journald
ino=$(stat -c %i "$(journald_file)")
TRACE_LAYERS=$STACK_LAYERS start_tracer -c systemd-journal --dev "$STACK_TOP_PATH"
journal_one_line "amptrace t46 entry $$ $(date +%s%N)"
# An emulated SD card is slow: journald 257, with audit on, may still be
# storing the audit records of the tracer's loads when the line comes.
# Its receive, and the write-out, before the trace ends: journald's CPU
# time still for 2 s (read from /proc: reading the journal would make
# untraced writes of its own, an atime).
last=$(cpu_ticks "$JOURNALD_PID") still=0
for ((i = 0; i < 120 && still < 4; i++)); do
    sleep 0.5
    now=$(cpu_ticks "$JOURNALD_PID")
    if [[ $now == "$last" ]]; then still=$((still + 1)); else still=0 last=$now; fi
done
((still >= 4)) || fail "journald still busy after 60 s"
sync
sleep 1
stop_tracer
python3 "$AMP_ROOT/tests/checks.py" journald "$TRACE_OUT" "$STACK_DISK" "$ino" "$JOURNAL_DGRAM" \
    "$(getconf PAGESIZE)"
python3 "$AMP_ROOT/tests/checks.py" stack "$TRACE_OUT" "$STACK_DISK" "${STACK_LAYERS// /,}" 0.90
ok "journald on $STACK_TOP_PATH (ext4; p1 FAT, as on a Pi): its line's pages exact, both counters, >= 90 % by cause"
