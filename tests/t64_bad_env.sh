#!/usr/bin/env bash
# A hostile environment: no tracefs, a bad BTF file, one missing capability.
# amptrace needs no tracefs (it attaches by BTF); the others are one-line errors.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

# No tracefs: in a private mount namespace, so the host keeps its own.
out=$(unshare -m sh -c 'umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null;
      ! mountpoint -q /sys/kernel/tracing && exec '"$AMPTRACE"' trace -q -d 1' 2>&1) ||
    fail "without tracefs: $out"
grep -q "Summary:" <<<"$out" || fail "without tracefs: no summary: $out"
ok "runs without tracefs mounted"

rc=0; err=$("$AMPTRACE" trace -d 1 --btf /etc/hostname 2>&1 >/dev/null) || rc=$?
[[ $rc == 1 && $(wc -l <<<"$err") == 1 ]] || fail "bad BTF file: exit $rc: $err"
ok "bad BTF file -> $err"

if command -v capsh >/dev/null; then
    rc=0; err=$(capsh --drop=cap_sys_admin,cap_perfmon -- -c "exec $AMPTRACE trace -d 1" 2>&1 >/dev/null) || rc=$?
    [[ $rc == 1 ]] || fail "without CAP_PERFMON: exit $rc: $err"
    grep -q 'CAP_PERFMON' <<<"$err" && ! grep -q 'CAP_BPF' <<<"$err" ||
        fail "error should name CAP_PERFMON only: $err"
    ok "missing CAP_PERFMON -> $err"
fi
