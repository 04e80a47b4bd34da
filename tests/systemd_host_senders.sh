#!/usr/bin/env bash
# Inside the systemd host of scripts/qemu-systemd-host.sh (t97, after
# systemd_host_measure.sh in the same boot): who pays, the report's own
# case.  Three services started with systemd-run, logging to their stdout
# as services do, and a logger from this script's shell (its unit: the
# guest's script service), while amptrace traces journald:
#   amptest-chatty.service  2 lines a second
#   amptest-slow.service    a line every 10 s
#   amptest-burst.service   100 lines at once
# 30 s of that, then 40 s of the kernel's own write-back.  Each line is
# "amptest UNIT N".  Writes $AMP_OUT/senders/trace.json (amptrace's JSON
# lines) and export (journalctl -o export of the run): t97 compares the
# entries' senders with the journal's _PID, _COMM and _SYSTEMD_UNIT on the
# host (tests/sender_checks.py).
set -uo pipefail

dev=${AMP_JOURNAL_DEV:?}
out=${AMP_OUT:?}/senders
cg=/sys/fs/cgroup/system.slice/systemd-journald.service
t0=$SECONDS
say() { echo "senders: [$((SECONDS - t0))s] $*"; }
# shellcheck source=systemd_host_lib.sh
. "$AMP_REPO/tests/systemd_host_lib.sh"
die() { echo "senders: FAIL: $*"; exit 1; }
mkdir -p "$out"

since=@$(date +%s)
amptrace_start "$out" "$dev" "$cg" || die "amptrace did not start"
amp=$AMP_PID
say "$(grep '^amptrace: tracing' "$out/trace.err")"

systemd-run -q --unit amptest-chatty -- sh -c \
    'i=0; while :; do i=$((i + 1)); echo "amptest amptest-chatty.service $i"; sleep 0.5; done'
systemd-run -q --unit amptest-slow -- sh -c \
    'i=0; while :; do i=$((i + 1)); echo "amptest amptest-slow.service $i"; sleep 10; done'
systemd-run -q --unit amptest-burst -- sh -c \
    'for i in $(seq 1 100); do echo "amptest amptest-burst.service $i"; done'
self=$(awk -F/ '/^0::/ { print $NF }' /proc/self/cgroup)
logger "amptest $self 1"
say "three services and a logger from $self started"
sleep 30
systemctl stop amptest-chatty amptest-slow
systemctl reset-failed amptest-burst 2>/dev/null
say "services stopped; the kernel's own write-back from here"
sleep 40
kill -INT "$amp"
wait "$amp"
arc=$?
((arc == 0)) || { cat "$out/trace.err"; die "amptrace exited $arc"; }
journalctl -o export --since "$since" >"$out/export" || die "journalctl -o export failed"
say "amptrace stopped; $(grep -c '^__CURSOR=' "$out/export") journal entries since the start"
