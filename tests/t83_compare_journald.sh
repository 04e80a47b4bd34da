#!/usr/bin/env bash
# amptrace compare, the report's mitigation measured: on ext4, journald 252
# (the host's) and 257 (Debian 13's, in a chroot), each persistent and with
# Storage=volatile+rsyslog (journald in memory, forwarding to a private
# rsyslog whose file is on the loop filesystem), a burst of 10 lines.  Per
# version the mitigation must cost at most half of persistent journald per
# line; every row's classes must match the device counter (the tracer's and
# the driver's own reading); journald 257's rows ran with kernel audit on,
# and amptrace's own start-up was taken off them; the host's audit state is
# as before; nothing is left behind (chroot mounts, tmpfs, daemons, paths);
# the host's journald and its configuration are as before.  rsyslog and
# append run beside them: the --html page shows, for ext4, a bar per
# target with its bytes per line, and a verdict whose ratios are the rows'.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ -x /lib/systemd/systemd-journald ]] || skip "no /lib/systemd/systemd-journald"
command -v rsyslogd >/dev/null || skip "rsyslogd not installed"
host=$(journalctl --version | awk 'NR == 1 {print $2}')
[[ $host == 252 ]] || skip "the host's journald is $host, not 252"
rc=0
"$AMP_ROOT/scripts/debian-rootfs.sh" trixie >/dev/null || rc=$?
((rc != 77)) || skip "no Debian 13 tree, and the Debian registry cannot be reached"
((rc == 0)) || fail "scripts/debian-rootfs.sh trixie: exit $rc"

audit_before=$(python3 "$AMP_ROOT/tests/audit_state.py" get)
python3 "$AMP_ROOT/tests/compare_checks.py" host-state "$AMP_TMP/host.before"
scratch=$AMP_TMP/scratch
mkdir "$scratch"
rc=0
"$AMPTRACE" compare -f ext4 -t journald,journald:Storage=volatile+rsyslog,rsyslog,append \
    --journald 252,257 -w burst:10 --settle 3 --scratch "$scratch" --json \
    --html "$AMP_TMP/compare.html" -v \
    >"$AMP_TMP/compare.json" 2>"$AMP_TMP/compare.log" || rc=$?
grep -v '^amptrace compare: \[.*\] \(run\|started\|stopped\|unmounted\|detached\|removed\)' \
    "$AMP_TMP/compare.log" || true
((rc == 0)) || { tail -n 20 "$AMP_TMP/compare.log" >&2; fail "amptrace compare exited $rc"; }
ok "amptrace compare exited 0"

targets=journald@252,journald@252:Storage=volatile+rsyslog
targets+=,journald@257,journald@257:Storage=volatile+rsyslog,rsyslog,append
python3 "$AMP_ROOT/tests/compare_checks.py" results "$AMP_TMP/compare.json" ext4 "$targets" burst:10
python3 "$AMP_ROOT/tests/compare_checks.py" mitigation "$AMP_TMP/compare.json"
python3 "$AMP_ROOT/tests/compare_checks.py" page "$AMP_TMP/compare.html" "$AMP_TMP/compare.json"
python3 "$AMP_ROOT/tests/compare_checks.py" leftovers "$AMP_TMP/compare.log"
python3 "$AMP_ROOT/tests/compare_checks.py" host-same "$AMP_TMP/host.before"
audit_after=$(python3 "$AMP_ROOT/tests/audit_state.py" get)
[[ $audit_after == "$audit_before" ]] ||
    fail "kernel audit was $audit_before, is $audit_after after the compare"
ok "kernel audit as before: $audit_after"
