#!/usr/bin/env bash
# Writes the disk fails: a loop disk whose backing file lies on a full
# tmpfs fails every write to a block it does not hold yet (the request
# ends with an I/O error; /sys/block still counts its sectors).  The
# synthetic writer's pages all land on such blocks: amptrace must put the
# failed requests' bytes in class failed, bill each entry its pages as
# failed bytes (none as written), settle every entry, and keep the classes
# equal to the counter.  Ground truth: FIEMAP of the writer's files and
# the holes of the backing file after the run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
command -v filefrag >/dev/null || skip "no filefrag (e2fsprogs)"

backing=$AMP_TMP/backing
mkdir -p "$backing"
mount -t tmpfs -o size=48M amptrace-backing "$backing"
at_exit _umount_robust "$backing"
mnt=$AMP_TMP/mnt
AMP_TMP=$backing make_loopfs ext4 128 "$mnt"
img=$(losetup -n -O BACK-FILE "$LOOPDEV")
# Every free block a hole in the backing file (the loop disk punches what
# is trimmed): mkfs or ext4 may have written where the writer's blocks go
# (one page of 24 did so once), and a write there would not fail.
fstrim "$mnt" || skip "fstrim on the loop filesystem failed: no holes to fail into"
sync
# Fill the tmpfs: from here a write to a block mkfs left as a hole fails.
dd if=/dev/zero of="$backing/fill" bs=1M 2>/dev/null || true
ok "backing tmpfs full: $(df --output=avail -B1 "$backing" | tail -1 | tr -d ' ') bytes left"

# A record alongside: its report must say the same (the failed class and
# each entry's failed bytes travel in the file).
rec=$AMP_TMP/run.amp
"$AMPTRACE" record -o "$rec" -c synth_writer --dev "$LOOPNAME" >/dev/null 2>"$AMP_TMP/record.err" &
recorder=$!
at_exit _kill_wait "$recorder" recorder
wait_for "grep -qs 'tracing (' $AMP_TMP/record.err || ! _alive $recorder" 30 || fail "recorder did not attach"
_alive "$recorder" || fail "recorder died: $(cat "$AMP_TMP/record.err")"
start_tracer -c synth_writer --dev "$LOOPNAME"
"$SYNTH_WRITER" -n 8 -w 2 -m 1 "$mnt" | cat >"$AMP_TMP/expect.json"
# syncfs reports the write-back error: expected here.
if sync -f "$mnt" 2>"$AMP_TMP/sync.err"; then
    fail "syncfs reported no error: the writes did not fail"
fi
ok "syncfs: $(head -1 "$AMP_TMP/sync.err")"
sleep 1
stop_tracer
kill -INT "$recorder"
wait_for "! _alive $recorder" 30 || fail "recorder ignored SIGINT"
rc=0; wait "$recorder" || rc=$?
((rc == 0)) || fail "recorder exited $rc: $(cat "$AMP_TMP/record.err")"
python3 "$AMP_ROOT/tests/fault_checks.py" failed-writes "$TRACE_OUT" "$AMP_TMP/expect.json" \
    "$LOOPNAME" "$img" "$mnt"
python3 "$AMP_ROOT/tests/checks.py" devsum "$TRACE_OUT" "$LOOPNAME"

# The record's report, as JSON and as the table a user reads.
"$AMPTRACE" report -j "$rec" >"$AMP_TMP/report.json" || fail "report -j failed"
python3 "$AMP_ROOT/tests/fault_checks.py" failed-writes "$AMP_TMP/report.json" "$AMP_TMP/expect.json" \
    "$LOOPNAME" "$img" "$mnt"
"$AMPTRACE" report "$rec" >"$AMP_TMP/report.txt" || fail "report failed"
grep -A3 '^Per device' "$AMP_TMP/report.txt"
grep '^Write errors' "$AMP_TMP/report.txt" || fail "the table says nothing of the failed writes"
grep -q '^DEVICE .* FAILED .* SUM' "$AMP_TMP/report.txt" || fail "the device table has no FAILED column"
ok "the record's report: the same failed bytes, a FAILED column and a Write errors line"
