#!/usr/bin/env bash
# The qemu tests' accelerator (scripts/qemu-accel.sh, qemu-lib.sh), with
# fake qemus in PATH that act out what machines of this kind do:
#  1. a qemu that starts a KVM guest which never prints (nested KVM that
#     opens and never runs): TCG, said why, in about the probe's limit;
#  2. one whose guest prints the probe's marker: KVM;
#  3. one that aborts at once ("failed to set MSR"): TCG, with its words;
#  4. the verdict is probed once a run: a second call reads the cache;
#  5. AMPTRACE_QEMU_ACCEL=tcg is obeyed without a probe;
#  6. qemu_run stops a guest that prints nothing within AMPTRACE_QEMU_SILENT
#     and qemu_report names the accelerator, long before QEMU_TIMEOUT.
# /dev/null stands in for /dev/kvm (a character device anyone may open),
# so the test runs the same with or without a /dev/kvm.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[[ -x /bin/busybox ]] || skip "no /bin/busybox (apt-get install busybox-static)"
command -v setpriv >/dev/null || skip "setpriv (util-linux) missing"

fake=$AMP_TMP/bin
mkdir -p "$fake"
: >"$AMP_TMP/vmlinuz"
export VMLINUZ=$AMP_TMP/vmlinuz AMPTRACE_QEMU_KVM_DEV=/dev/null
export AMPTRACE_QEMU_KVM_PROBE_TIMEOUT=4 PATH=$fake:$PATH
unset AMPTRACE_QEMU_ACCEL AMPTRACE_QEMU_ACCEL_WHY AMPTRACE_QEMU_ACCEL_CACHE

# fake_qemu MODE: qemu-system-x86_64 that counts its calls in $AMP_TMP/calls
# and, MODE silent: runs and prints nothing; marker: writes the probe's
# marker to its -serial file, then exits; abort: fails at once.
fake_qemu() {
    cat >"$fake/qemu-system-x86_64" <<EOF2
#!/bin/bash
echo x >>"$AMP_TMP/calls"
serial=''
while ((\$#)); do [[ \$1 == -serial ]] && serial=\${2#file:}; shift; done
case $1 in
    silent) exec sleep 600 ;;
    marker) sleep 1; echo AMPTRACE-ACCEL-PROBE-OK >>"\$serial"; exit 0 ;;
    abort)  echo "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x0" >&2; exit 1 ;;
esac
EOF2
    chmod +x "$fake/qemu-system-x86_64"
    : >"$AMP_TMP/calls"
}
calls() { wc -l <"$AMP_TMP/calls"; }
accel() { "$AMP_ROOT/scripts/qemu-accel.sh" 2>>"$AMP_TMP/stderr"; }

fake_qemu silent
t0=$SECONDS
IFS=$'\t' read -r verdict why < <(accel)
took=$((SECONDS - t0))
[[ $verdict == tcg ]] || fail "a KVM guest that never prints: verdict '$verdict' ($why), want tcg"
[[ $why == *"printed nothing in 4 s"* ]] || fail "silent guest: the reason does not say so: '$why'"
((took <= 15)) || fail "silent guest: the probe took ${took} s with a 4 s limit"
pgrep -f "$fake/qemu-system-x86_64" >/dev/null && fail "the probe left its qemu running"
ok "silent KVM guest: tcg in ${took} s ($why)"

fake_qemu marker
IFS=$'\t' read -r verdict why < <(accel)
[[ $verdict == kvm ]] || fail "a KVM guest that prints the marker: verdict '$verdict' ($why), want kvm"
ok "KVM guest that boots: kvm ($why)"

fake_qemu abort
IFS=$'\t' read -r verdict why < <(accel)
[[ $verdict == tcg && $why == *"failed to set MSR"* ]] ||
    fail "qemu that aborts: verdict '$verdict' ($why), want tcg with qemu's message"
ok "qemu that aborts: tcg ($why)"

# 4. Once a run.
export AMPTRACE_QEMU_ACCEL_CACHE=$AMP_TMP/accel.cache
fake_qemu marker
IFS=$'\t' read -r v1 _ < <(accel)
IFS=$'\t' read -r v2 why2 < <(accel)
[[ $v1 == kvm && $v2 == kvm ]] || fail "cached verdicts: '$v1' then '$v2'"
(($(calls) == 1)) || fail "the probe ran $(calls) times in one run, want 1"
[[ $why2 == *"probed earlier in this run"* ]] || fail "a cached verdict does not say so: '$why2'"
ok "probed once a run: $(calls) qemu call for two verdicts"
unset AMPTRACE_QEMU_ACCEL_CACHE

# 5. Told, not probed.
fake_qemu marker
IFS=$'\t' read -r verdict why < <(AMPTRACE_QEMU_ACCEL=tcg accel)
[[ $verdict == tcg ]] && (($(calls) == 0)) || fail "AMPTRACE_QEMU_ACCEL=tcg: '$verdict' after $(calls) qemu calls"
if AMPTRACE_QEMU_ACCEL=bogus accel >/dev/null; then fail "AMPTRACE_QEMU_ACCEL=bogus accepted"; fi
grep -q "must be kvm, tcg or auto" "$AMP_TMP/stderr" || fail "AMPTRACE_QEMU_ACCEL=bogus: no clear error"
ok "AMPTRACE_QEMU_ACCEL=tcg obeyed without a probe; a bad value refused"

# 6. The silence watchdog of qemu_run, in a subshell of its own (qemu-lib's
# traps).
fake_qemu silent
t0=$SECONDS
(
    say() { echo "qemu-lib: $*" >&2; }
    die() { say "error: $*"; exit 1; }
    skip() { say "SKIP: $*"; exit 77; }
    . "$AMP_ROOT/scripts/qemu-lib.sh"
    export AMPTRACE_QEMU_ACCEL=kvm AMPTRACE_QEMU_ACCEL_WHY="as the test says" AMPTRACE_QEMU_SILENT=3
    # shellcheck disable=SC2034  # read by qemu_run
    QEMU_TIMEOUT=120
    qemu_need
    qemu_workdir
    qemu_run "$WORK/console.log" -kernel "$VMLINUZ"
    qemu_report
    echo "silent=$QEMU_SILENT timed_out=$QEMU_TIMED_OUT"
) >"$AMP_TMP/run.out" 2>&1 || fail "qemu_run with a silent guest: exit $? ($(tail -n 3 "$AMP_TMP/run.out"))"
took=$((SECONDS - t0))
grep -q '^silent=3 timed_out=0$' "$AMP_TMP/run.out" || fail "silent guest not stopped early: $(cat "$AMP_TMP/run.out")"
grep -q 'printed nothing in 3 s under qemu/kvm' "$AMP_TMP/run.out" ||
    fail "no message naming the accelerator: $(cat "$AMP_TMP/run.out")"
((took < 30)) || fail "the silent guest ran ${took} s"
pgrep -f "$fake/qemu-system-x86_64" >/dev/null && fail "qemu_run left its qemu running"
ok "a silent guest stopped after ${took} s: $(grep -m 1 'printed nothing' "$AMP_TMP/run.out" | sed 's/^qemu-lib: //')"
