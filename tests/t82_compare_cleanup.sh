#!/usr/bin/env bash
# amptrace compare leaves nothing behind however it ends: Ctrl-C (SIGINT) in
# the middle of a traced journald window, SIGTERM while a target settles, a
# tracer that fails to start, SIGINT while journald 257 runs in its chroot
# forwarding to rsyslog (the kernel audit state back as it was too).  And it
# refuses a scratch folder on a loop device, creating nothing and leaving
# that device alone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ -x /lib/systemd/systemd-journald ]] || skip "no /lib/systemd/systemd-journald"
[[ -x $AMP_ROOT/build/tests/append_writer ]] || fail "build/tests/append_writer missing: run make"
checks=$AMP_ROOT/tests/compare_checks.py
COMPARE=$AMP_ROOT/scripts/amptrace-compare

# run_and_signal NAME SIGNAL WAIT_REGEX ARGS...: start a compare, send SIGNAL
# once its -v log matches WAIT_REGEX, return its exit status in $rc.
run_and_signal() {
    local name=$1 sig=$2 pattern=$3 pid; shift 3
    mkdir "$AMP_TMP/$name"
    "$AMPTRACE" compare --scratch "$AMP_TMP/$name" -v "$@" \
        >"$AMP_TMP/$name.out" 2>"$AMP_TMP/$name.log" &
    pid=$!
    at_exit _kill_wait "$pid" compare
    # Up to 900 s may go waiting for another test's journald (the host lock).
    wait_for "grep -qE '$pattern' $AMP_TMP/$name.log || ! _alive $pid" 960 ||
        fail "$name: '$pattern' not in the log after 960 s"
    _alive "$pid" || { cat "$AMP_TMP/$name.log" >&2; fail "$name: compare ended early"; }
    sleep 0.5
    kill "-$sig" "$pid"
    wait_for "! _alive $pid" 90 || fail "$name: compare still running 90 s after SIG$sig"
    rc=0; wait "$pid" || rc=$?
}

# 1. Ctrl-C while the tracer watches journald on its loop filesystem.
run_and_signal sigint INT 'started amptrace pid' -f ext4 -t journald,append -w burst:10 --settle 2
((rc == 130)) || { tail "$AMP_TMP/sigint.log" >&2; fail "SIGINT: exit $rc, expected 130"; }
grep -q 'SIGINT: stopped; everything it set up is removed' "$AMP_TMP/sigint.log" ||
    fail "SIGINT: no stop message"
grep -q -- '--preset journald' "$AMP_TMP/sigint.log" || fail "SIGINT came before the journald window"
ok "SIGINT mid-window: exit 130"
python3 "$checks" leftovers "$AMP_TMP/sigint.log"

# 2. SIGTERM while the append target's filesystem settles.
run_and_signal sigterm TERM 'started append_writer' -f ext4nj -t append -w one
((rc == 143)) || { tail "$AMP_TMP/sigterm.log" >&2; fail "SIGTERM: exit $rc, expected 143"; }
ok "SIGTERM while settling: exit 143"
python3 "$checks" leftovers "$AMP_TMP/sigterm.log"

# 3. Failure: the tracer cannot start (run the script directly, with a
#    tracer that exits 1).  Every run fails, the compare exits 1, undoes all.
mkdir "$AMP_TMP/fail"
rc=0
AMPTRACE=/bin/false "$COMPARE" --scratch "$AMP_TMP/fail" -v -f ext4nj -t journald,append --settle 1 \
    -w one >"$AMP_TMP/fail.out" 2>"$AMP_TMP/fail.log" || rc=$?
((rc == 1)) || fail "failing tracer: exit $rc, expected 1"
n=$(grep -c 'FAILED: amptrace trace did not start' "$AMP_TMP/fail.out" || true)
((n == 2)) || { cat "$AMP_TMP/fail.out" >&2; fail "failing tracer: $n failed rows, expected 2"; }
ok "tracer failure: exit 1, both runs marked failed"
python3 "$checks" leftovers "$AMP_TMP/fail.log"

# 4. A scratch folder on a loop device is refused before anything is made.
mnt=$AMP_TMP/mnt
make_loopfs ext4 64 "$mnt"
mine=$LOOPNAME
LOOPDEV_IMG=$(cat "/sys/block/$mine/loop/backing_file")
rc=0
"$AMPTRACE" compare --scratch "$mnt" -f ext4 -t append -w one >"$AMP_TMP/refuse.out" \
    2>"$AMP_TMP/refuse.log" || rc=$?
((rc == 1)) || fail "scratch on $mine: exit $rc, expected 1"
grep -q "refused: scratch folder $mnt is on loop device $mine" "$AMP_TMP/refuse.log" ||
    { cat "$AMP_TMP/refuse.log" >&2; fail "scratch on $mine: no clear refusal"; }
if losetup -a | grep -F "$mnt/"; then fail "a loop device was made on $mnt"; fi
[[ $(cat "/sys/block/$mine/loop/backing_file") == "$LOOPDEV_IMG" ]] || fail "$mine was changed"
mountpoint -q "$mnt" || fail "refusal unmounted $mnt"
made=$(find "$mnt" -mindepth 1 -maxdepth 1 ! -name lost+found)
[[ -z $made ]] || fail "refusal made $made"
ok "scratch on $mine refused: $(cat "$AMP_TMP/refuse.log")"

# 5. SIGINT in journald 257's window: its chroot (overlay, /proc, /sys, /dev,
#    /run), the in-memory journal and the forwarding rsyslogd all go, and
#    kernel audit (which journald 257 turns on) is back as it was.
rc=0
"$AMP_ROOT/scripts/debian-rootfs.sh" trixie >/dev/null 2>&1 || rc=$?
if ((rc == 0)); then
    audit_before=$(python3 "$AMP_ROOT/tests/audit_state.py" get)
    run_and_signal sigint257 INT 'started amptrace pid' -f ext4nj --journald 257 \
        -t journald:Storage=volatile+rsyslog -w burst:10 --settle 1
    ((rc == 130)) || { tail "$AMP_TMP/sigint257.log" >&2; fail "SIGINT (257): exit $rc, expected 130"; }
    grep -q 'journald 257 root (Debian trixie) mounted at' "$AMP_TMP/sigint257.log" ||
        fail "SIGINT (257) came before the chroot was made"
    ok "SIGINT in journald 257's window: exit 130"
    python3 "$checks" leftovers "$AMP_TMP/sigint257.log"
    [[ $(python3 "$AMP_ROOT/tests/audit_state.py" get) == "$audit_before" ]] ||
        fail "kernel audit not back to $audit_before after SIGINT"
    ok "kernel audit as before: $audit_before"
else
    _log "no Debian 13 tree (debian-rootfs.sh exit $rc): the journald 257 case is not run"
fi
