#!/usr/bin/env bash
# Inside the systemd host of scripts/qemu-systemd-host.sh (t97): the
# original report's method and amptrace side by side, in one run.
#
# One `logger -p info test` to the real journald (systemd's service, its
# persistent journal on ext4 on $AMP_JOURNAL_DEV), left to the kernel's own
# write-back, while three things count:
#   - the disk's written sectors (/sys/block/DEV/stat, field 7),
#   - journald's cgroup io.stat wbytes on that disk,
#   - amptrace trace --cgroup <journald's cgroup> --dev DEV -j.
# Writes $AMP_OUT/trace.json (amptrace's JSON lines), trace.err, and
# $AMP_OUT/counters (key=value: the two counters' deltas over the same
# window, what journald said about audit); t97 checks them on the host.
# --senders: then systemd_host_senders.sh (who pays), in the same boot.
set -uo pipefail

dev=${AMP_JOURNAL_DEV:?}
out=${AMP_OUT:?}
cg=/sys/fs/cgroup/system.slice/systemd-journald.service
majmin=$(cat "/sys/block/$dev/dev")
t0=$SECONDS

say() { echo "measure: [$((SECONDS - t0))s] $*"; }
# shellcheck source=systemd_host_lib.sh
. "$AMP_REPO/tests/systemd_host_lib.sh"
die() { echo "measure: FAIL: $*"; exit 1; }

wsect() { awk '{print $7}' "/sys/block/$dev/stat"; }
# journald's wbytes on the disk (no line yet: nothing written).
wbytes() {
    awk -v d="$majmin" '$1 == d { for (i = 2; i <= NF; i++) if (sub(/^wbytes=/, "", $i)) v = $i }
                        END { print v + 0 }' "$cg/io.stat"
}
# Wait until the disk has written nothing for QUIET s (at most MAX s).
settle() {   # QUIET MAX
    local last now still=0 end=$((SECONDS + $2))
    last=$(wsect)
    while ((still < $1 && SECONDS < end)); do
        sleep 1
        now=$(wsect)
        if [[ $now == "$last" ]]; then still=$((still + 1)); else still=0 last=$now; fi
    done
    ((still >= $1))
}

[[ -e $cg/io.stat ]] || die "no $cg/io.stat: io controller off? ($(cat /sys/fs/cgroup/system.slice/cgroup.subtree_control))"
grep -qw io /sys/fs/cgroup/system.slice/cgroup.subtree_control || die "io controller not on for system.slice"
jpid=$(systemctl show -P MainPID systemd-journald.service)
grep -qx "0::/system.slice/systemd-journald.service" "/proc/$jpid/cgroup" ||
    die "journald ($jpid) is not in $cg: $(cat "/proc/$jpid/cgroup")"
# On $dev itself, or on the dm layers over it (AMP_JOURNAL_STACK: the
# top's holders chain down to $dev).
src=$(findmnt -n -o SOURCE,FSTYPE /var/log/journal)
if [[ -n ${AMP_JOURNAL_STACK-} ]]; then
    top=$(basename "$(readlink -f "/sys/dev/block/$(mountpoint -d /var/log/journal)")")
    below=$top
    while [[ -d /sys/class/block/$below/slaves ]] && s=$(ls "/sys/class/block/$below/slaves") && [[ -n $s ]]; do
        below=$s
    done
    [[ $src == *" ext4" && $below == "$dev" ]] ||
        die "/var/log/journal ($src, $top) is not ext4 on $AMP_JOURNAL_STACK over $dev (bottom: $below)"
    src="$src ($AMP_JOURNAL_STACK over $dev, $top)"
else
    [[ $src == "/dev/$dev ext4" ]] || die "/var/log/journal is not ext4 on $dev ($src)"
fi
say "journald $jpid in $cg; /var/log/journal: $src ($majmin); $(journalctl --header 2>/dev/null | sed -n 's/^File path: //p' | head -n 1)"
# What journald said about kernel audit at its start.
audit=$(journalctl -b -o cat -u systemd-journald.service 2>/dev/null | grep -i 'audit' | tail -n 1)
say "journald: ${audit:-said nothing about audit}"

# The journal on the disk, everything written: a quiet start.
journalctl --flush >/dev/null 2>&1
journalctl --sync >/dev/null 2>&1
sync
settle 6 90 || die "the disk never went quiet"

s0=$(wsect) w0=$(wbytes) since=@$(date +%s)
say "counters: disk ${s0} sectors written, journald wbytes ${w0}; starting amptrace"
amptrace_start "$out" "$dev" "$cg" || die "amptrace did not start"
amp=$AMP_PID
# amptrace reads its own baseline before it says "tracing" and its last
# reading after SIGINT, so its window lies between these readings and the
# outer ones (s0, s1): inner <= amptrace's counter <= outer.  (Its start
# takes seconds under TCG, and with audit on journald writes meanwhile.)
s_in0=$(wsect) w_in0=$(wbytes)
say "$(grep '^amptrace: tracing' "$out/trace.err")"

logger -p info test
say "logger -p info test sent; the kernel's own write-back from here"
# dirty_expire (30 s) + the flusher's period (5 s) and ext4's commit
# interval (5 s), as in the report's 40 s wait; then until quiet.
sleep 40
settle 8 90 || say "the disk still writes after 130 s"

s_in1=$(wsect) w_in1=$(wbytes)
kill -INT "$amp"
wait "$amp"
arc=$?
s1=$(wsect) w1=$(wbytes)
((arc == 0)) || { cat "$out/trace.err"; die "amptrace exited $arc"; }
say "amptrace stopped; disk ${s1} sectors written, journald wbytes ${w1}"

# The observer effect: kernel audit records of amptrace's BPF program
# loads (type 1334), as journald stored them from its audit socket and
# from /dev/kmsg.
bpf_audit=$(journalctl -o export --since "$since" _AUDIT_TYPE=1334 | grep -c '^__CURSOR=')
bpf_kmsg=$(journalctl -k -o cat --since "$since" | grep -c 'type=1334')
{
    echo "disk_bytes=$(((s1 - s0) * 512))"
    echo "disk_inner_bytes=$(((s_in1 - s_in0) * 512))"
    echo "iostat_wbytes=$((w1 - w0))"
    echo "iostat_inner_wbytes=$((w_in1 - w_in0))"
    echo "journald_audit=${audit:-none}"
    echo "audit_socket=$(systemctl is-active systemd-journald-audit.socket)"
    echo "bpf_audit_records=$bpf_audit"
    echo "bpf_audit_kmsg=$bpf_kmsg"
    echo "kernel=$(uname -r)"
    echo "systemd=$(systemctl --version | head -n 1)"
    echo "seconds=$((SECONDS - t0))"
} >"$out/counters"
cat "$out/counters"

# Asked for (t97's debian case): who pays, in the same boot.
if [[ ${1-} == --senders ]]; then
    bash "$AMP_REPO/tests/systemd_host_senders.sh" || die "the senders' run failed"
fi
