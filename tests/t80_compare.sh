#!/usr/bin/env bash
# amptrace compare, short: ext4, ext4 without journal and xfs, each with
# journald and a plain O_APPEND writer, one line and a burst of 10.  Per line,
# append must cost far less than journald on every filesystem; every window's
# classes must match the device counter within 1% (the tracer's read and the
# driver's own); and nothing may be left behind: processes, loop devices,
# mounts, journald namespace paths, the scratch folder.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ -x /lib/systemd/systemd-journald ]] || skip "no /lib/systemd/systemd-journald"
command -v mkfs.xfs >/dev/null || skip "mkfs.xfs not installed"
[[ -x $AMP_ROOT/build/tests/append_writer ]] || fail "build/tests/append_writer missing: run make"

scratch=$AMP_TMP/scratch
mkdir "$scratch"
fss=ext4,ext4nj,xfs targets=journald,append workloads=one,burst:10
rc=0
"$AMPTRACE" compare -f $fss -t $targets --journald 252 -w $workloads --scratch "$scratch" \
    --json -v >"$AMP_TMP/compare.json" 2>"$AMP_TMP/compare.log" || rc=$?
grep -v '^amptrace compare: \(run\|started\|stopped\|unmounted\|detached\|removed\)' \
    "$AMP_TMP/compare.log" || true
((rc == 0)) || { tail -n 20 "$AMP_TMP/compare.log" >&2; fail "amptrace compare exited $rc"; }
ok "amptrace compare exited 0"

python3 "$AMP_ROOT/tests/compare_checks.py" results "$AMP_TMP/compare.json" $fss journald@252,append $workloads
python3 "$AMP_ROOT/tests/compare_checks.py" leftovers "$AMP_TMP/compare.log"
