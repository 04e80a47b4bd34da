#!/usr/bin/env bash
# A real Debian 13 systemd host under qemu (scripts/qemu-systemd-host.sh:
# Debian 13's 6.12 kernel, systemd 257 as PID 1, journald as its service,
# cgroup v2 with the io controller, the persistent journal on ext4 on a
# virtio disk).  In it, the original report's method and amptrace side by
# side in one run (tests/systemd_host_measure.sh): one `logger -p info
# test`, the disk's written-sector counter, journald's cgroup io.stat
# wbytes, and `amptrace trace --preset journald --cgroup
# /sys/fs/cgroup/system.slice/systemd-journald.service --dev vda`.
#
# Three guests at once, one per kernel-audit setting:
#   debian   Debian 13 as installed: journald's defaults, but Debian does
#            not enable systemd-journald-audit.socket, so journald neither
#            collects audit records nor turns kernel audit on
#   auditon  the audit socket enabled (upstream's preset), journald's
#            defaults (Audit=yes): kernel audit on, every BPF program
#            amptrace loads is an audit record journald stores
#   noaudit  the audit socket enabled, Audit=no
# and, asked for (AMP_T97_CASES, as `make test-stacks` does):
#   lvmluks  as debian, the journal's ext4 on LVM on LUKS over the disk
#            (the encrypted installers' layout), --dev still the disk
# The figures of all three are printed (tests/iostat_checks.py); the
# cases in AMP_T97_ASSERT (default: all three) must pass:
# amptrace's bill for journald's cgroup = io.stat wbytes within 5%, its
# classes = the disk counter, the jbd2 commits io.stat gives to the root
# cgroup charged to the logger's entry, that entry's pages all written;
# with audit on, the audit records of amptrace's loads shown as its own
# cost (and counted in the bill: journald wrote them).
# The debian case then runs the report's own case in the same boot
# (tests/systemd_host_senders.sh): services started with systemd-run
# logging 2 lines/s, a line every 10 s and a burst of 100, and a logger;
# each entry's sender must be the journal's own _PID, _COMM and
# _SYSTEMD_UNIT for its lines, and the per-sender bills add up to
# journald's (tests/sender_checks.py); their bytes and IO/s are printed.
# KVM or TCG as for t95; skips where neither the rootfs nor a kernel can be
# had.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
qemu_need_accel

read -r -a cases <<<"${AMP_T97_CASES:-noaudit auditon debian}"
read -r -a asserted <<<"${AMP_T97_ASSERT:-${cases[*]}}"
export AMPTRACE_QEMU_TIMEOUT=${AMPTRACE_QEMU_TIMEOUT:-720}
[[ -x $AMP_ROOT/amptrace ]] || make -s -C "$AMP_ROOT" amptrace   # once, not in each guest run
logs=${AMP_TEST_LOGS:-/tmp/amptrace-test-logs}/t97
rm -rf -- "$logs"
mkdir -p "$logs"

# At once: 3 TCG guests of one host thread each.  The first to start makes
# the caches (rootfs, kernel) while the others wait on their locks.
declare -A conf=([debian]='' [auditon]='' [noaudit]='Audit=no' [lvmluks]='')
declare -A enable=([debian]='' [auditon]=systemd-journald-audit.socket
                   [noaudit]=systemd-journald-audit.socket [lvmluks]='')
declare -A stack=([lvmluks]=crypt+lvm)
declare -A extra=([debian]=--senders)
declare -A pid=()
for c in "${cases[@]}"; do
    [[ -v "conf[$c]" ]] || fail "AMP_T97_CASES: no case $c (${!conf[*]})"
    AMPTRACE_SDHOST_JOURNALD_CONF=${conf[$c]} AMPTRACE_SDHOST_ENABLE=${enable[$c]} \
        AMPTRACE_SDHOST_STACK=${stack[$c]-} \
        "$AMP_ROOT/scripts/qemu-systemd-host.sh" -o "$AMP_TMP/$c" "$AMP_ROOT/tests/systemd_host_measure.sh" \
        ${extra[$c]-} \
        >"$AMP_TMP/$c.log" 2>&1 &
    pid[$c]=$!
done
declare -A rc=()
for c in "${cases[@]}"; do
    rc[$c]=0
    wait "${pid[$c]}" || rc[$c]=$?
    echo "=== $c (journald.conf: '${conf[$c]}', enabled: '${enable[$c]}'): exit ${rc[$c]}"
    sed 's/^/  | /' "$AMP_TMP/$c.log"
    cp -r "$AMP_TMP/$c" "$logs/$c" 2>/dev/null || true
done
for c in "${cases[@]}"; do
    ((rc[$c] != 77)) || skip "$(grep -h 'SKIP' "$AMP_TMP/$c.log" | head -n 1)"
done
for c in "${cases[@]}"; do
    ((rc[$c] == 0)) || fail "case $c: the guest's measurement failed (exit ${rc[$c]}; logs in $logs/$c)"
done

args=()
for c in "${asserted[@]}"; do args+=(--assert "$c"); done
for c in "${cases[@]}"; do args+=("$c=$AMP_TMP/$c"); done
python3 "$AMP_ROOT/tests/iostat_checks.py" "${args[@]}"
ok "journald's io.stat and amptrace agree on a real systemd host (${asserted[*]})"

if [[ " ${cases[*]} " == *" debian "* ]]; then
    python3 "$AMP_ROOT/tests/sender_checks.py" "$AMP_TMP/debian/senders/trace.json" \
        "$AMP_TMP/debian/senders/export" \
        --units amptest-chatty.service,amptest-slow.service,amptest-burst.service,amp-guest.service ||
        fail "who pays: the senders on the systemd host (logs in $logs/debian/senders)"
    ok "who pays: every entry's sender is the journal's own, on a real systemd host"
fi
