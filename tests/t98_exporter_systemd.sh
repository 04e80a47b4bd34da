#!/usr/bin/env bash
# amptrace-exporter.service under a real systemd: a Debian 12 tree
# (debootstrap, cached; overlay of this test's own) with the .deb installed
# by dpkg, booted by systemd-nspawn with the host's BTF and tracefs, and
# scripts/exporter-check.sh run inside: the unit starts with all its
# sandboxing (system-call filter, ProtectSystem=strict, capability bounding
# set), runs with exactly CAP_BPF, CAP_PERFMON and CAP_SYSLOG on the syscall
# tracepoints, counts 20 logger lines of the container's journald in the
# endpoint and the textfile with no loss, and stops with exit 0, a summary
# in the journal and nothing left loaded.  The container, its cgroups and
# nspawn's runtime folders are gone afterwards.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
for t in systemd-nspawn dpkg-buildpackage dh lintian; do
    command -v "$t" >/dev/null || skip "$t not installed (systemd-container; scripts/deps.sh --package)"
done
[[ -d /run/systemd/system ]] && skip "the host runs systemd: use machinectl/a guest (nspawn's scope would be the host's)"

"$AMP_ROOT/scripts/build-deb.sh" "$AMP_TMP/out" >"$AMP_TMP/build.out" 2>&1 ||
    fail "build-deb.sh: $(tail -20 "$AMP_TMP/build.out")"
deb=$(tail -n 1 "$AMP_TMP/build.out")
names=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/ //g' | grep -v '^$' | sort -u | paste -sd,)
rootfs_overlay bookworm "man-db,$names,curl,libcap2-bin,bpftool,dbus"
root=$ROOTFS
cp "$deb" "$root/tmp/"
chroot "$root" dpkg -i "/tmp/$(basename "$deb")" >"$AMP_TMP/dpkg.log" 2>&1 || fail "dpkg -i: $(tail "$AMP_TMP/dpkg.log")"
cp "$AMP_ROOT/scripts/exporter-check.sh" "$root/root/"

# What nspawn makes outside the container, to remove what is new after.
find /sys/fs/cgroup -mindepth 1 -type d 2>/dev/null | sort >"$AMP_TMP/cgroups.before"
_snapshot_dir /run/systemd/nspawn "$AMP_TMP/nspawn.snap"
at_exit _remove_new_entries /run/systemd/nspawn "$AMP_TMP/nspawn.snap"
at_exit _rm_new_cgroups
_rm_new_cgroups() {
    find /sys/fs/cgroup -mindepth 1 -type d 2>/dev/null | sort | comm -13 "$AMP_TMP/cgroups.before" - |
        sort -r | while read -r d; do rmdir "$d" 2>/dev/null || _log "cgroup $d stays"; done
    return 0
}

systemd-nspawn -D "$root" --boot --register=no --keep-unit --console=passive \
    --capability=CAP_BPF,CAP_PERFMON,CAP_SYSLOG --system-call-filter='bpf perf_event_open' \
    --bind-ro=/sys/kernel/btf --bind-ro=/sys/kernel/tracing >"$AMP_TMP/nspawn.log" 2>&1 &
nspawn=$!
at_exit _stop_container
_stop_container() {
    _alive "$nspawn" || return 0
    kill -TERM "$nspawn"      # nspawn powers the container off
    wait_for "! _alive $nspawn" 30 || { kill -KILL "$nspawn"; wait_for "! _alive $nspawn" 10; }
    wait "$nspawn" 2>/dev/null
    return 0
}
leader() { pgrep -P "$nspawn" -x systemd | head -1; }
wait_for '[[ -n $(leader) ]]' 30 || fail "no container: $(cat "$AMP_TMP/nspawn.log")"
inside() { nsenter -t "$(leader)" -a /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
wait_for '[[ $(inside systemctl is-system-running 2>/dev/null) =~ ^(running|degraded)$ ]]' 60 ||
    fail "container did not boot: $(inside systemctl is-system-running 2>&1); $(tail "$AMP_TMP/nspawn.log")"
ok "Debian 12 booted under systemd-nspawn ($(inside systemctl --version | head -1)), amptrace $(dpkg-deb -f "$deb" Version) installed"

rc=0
inside /bin/bash /root/exporter-check.sh >"$AMP_TMP/check.log" 2>&1 || rc=$?
cat "$AMP_TMP/check.log"
((rc == 0)) || fail "exporter-check.sh in the container: $(inside journalctl -u amptrace-exporter -n 20 --no-pager 2>&1)"
_stop_container
ok "the exporter unit passed scripts/exporter-check.sh under systemd"
