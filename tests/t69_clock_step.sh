#!/usr/bin/env bash
# The wall clock stepped under a trace and a record (#37): +1 h, then back
# 1 h, while journald 252 (or AMP_JOURNALD=257) takes three lines (one
# before, one between, one after the steps).  Against the journal's own
# stamps:
#  - the tracer says each step on stderr, and the summary counts 2;
#  - each line's receive entry (the one whose sender is the line's _PID) is
#    timed as journald stamped the line (__REALTIME_TIMESTAMP, within 1 s):
#    times follow the clock, live and from the record (report -j);
#  - explain, from the record and from the JSON trace, gives each line to
#    the receive that brought it: matched by the journal's monotonic stamps,
#    which no step moves (by realtime, the line after the +1 h step was
#    nobody's).
# journald rotates its file when its clock goes back: explain reads both.
# It steps the machine's clock, so it runs in the qemu guests (t95), or
# where AMP_ALLOW_CLOCK_STEP=1 says it may; the clock is put back even on
# failure.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ ${AMP_IN_QEMU-} == 1 || ${AMP_ALLOW_CLOCK_STEP-} == 1 ]] ||
    skip "steps the wall clock: runs in the qemu guests (t95), or with AMP_ALLOW_CLOCK_STEP=1"

use_journald
make_loopfs ext4 256 "$JOURNAL_DIR"
start_journald

stepped=0
step_clock() {
    date -s "@$(($(date +%s) + $1))" >/dev/null
    stepped=$((stepped + $1))
}
_unstep() { ((stepped == 0)) || date -s "@$(($(date +%s) - stepped))" >/dev/null; }
at_exit _unstep

rec=$AMP_TMP/clock.amp
"$AMPTRACE" record -o "$rec" -q -c systemd-journal --dev "$LOOPNAME" 2>"$AMP_TMP/record.err" &
recorder=$!
at_exit _kill_wait "$recorder" recorder
wait_for "grep -qs 'tracing (' $AMP_TMP/record.err || ! _alive $recorder" "$AMP_TRACER_WAIT" ||
    fail "the recorder did not attach"
_alive "$recorder" || fail "the recorder died: $(cat "$AMP_TMP/record.err")"
start_tracer -c systemd-journal --dev "$LOOPNAME"

tag=clock$$
send_journal_entry "amptest clock 1 $tag"
sleep 1
step_clock 3600
sleep 1
send_journal_entry "amptest clock 2 $tag"
sleep 1
step_clock -3600
sleep 1
send_journal_entry "amptest clock 3 $tag"
sleep 1
sync
sleep 1
stop_tracer
kill -INT "$recorder"
wait_for "! _alive $recorder" "$AMP_TRACER_WAIT" || fail "the recorder ignored SIGINT"
rc=0; wait "$recorder" || rc=$?
((rc == 0)) || fail "the recorder exited $rc: $(cat "$AMP_TMP/record.err")"
_log "steps: $(grep -h 'wall clock stepped' "$AMP_TMP/tracer.err" | tr '\n' ';')"
for err in "$AMP_TMP/tracer.err" "$AMP_TMP/record.err"; do
    n=$(grep -c 'amptrace: the wall clock stepped by [-+]' "$err" || true)
    ((n == 2)) || fail "$(basename "$err"): $n steps said, want 2: $(cat "$err")"
done
ok "both tracers said each of the 2 steps"

journals=("$JOURNAL_DIR"/*/*.journal)
: >"$AMP_TMP/export"
for j in "${journals[@]}"; do
    journald_run journalctl --file "$(journal_path "$j")" -o export >>"$AMP_TMP/export" 2>/dev/null ||
        fail "journalctl -o export $j failed"
done
"$AMPTRACE" report -j "$rec" >"$AMP_TMP/report.json" 2>"$AMP_TMP/report.err" ||
    fail "report failed: $(cat "$AMP_TMP/report.err")"
python3 "$AMP_ROOT/tests/clock_checks.py" "$TRACE_OUT" "$AMP_TMP/report.json" "$AMP_TMP/export" "$tag"

# explain: every line to its own receive, from the record and the JSON.
for t in "$rec" "$TRACE_OUT"; do
    "$AMPTRACE" explain -t "$t" "${journals[@]}" >"$AMP_TMP/explain.txt" 2>"$AMP_TMP/explain.err" ||
        fail "explain -t $(basename "$t") failed: $(cat "$AMP_TMP/explain.err")"
    read -r same other <<<"$(sed -n 's/^Senders: of the journal entries a receive brought with a _PID, \([0-9]*\) were sent by the traced entry.s sender, \([0-9]*\) by another process\.$/\1 \2/p' "$AMP_TMP/explain.txt")"
    [[ -n ${same-} ]] || fail "explain -t $(basename "$t") printed no Senders line"
    ((same == 3 && other == 0)) ||
        fail "explain -t $(basename "$t"): $same journal entries given to the receive of their own sender, $other to another's; want 3 and 0"
    ok "explain -t $(basename "$t"): the 3 lines each given to the receive that brought them, across both steps"
done
