#!/usr/bin/env bash
# Losses are counted and reported, never silent, and the device classes
# still sum to the counter: a ring buffer too small for the burst, an
# entries map too small, and pages left unwritten past --settle-timeout
# (their entries are reported then, unsettled).  (Pages of a file
# truncated or deleted before write-back settle their entries at once:
# t24.)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"

loss() {   # TRACE KEY MIN: summary losses[KEY] >= MIN
    python3 - "$@" <<'PY'
import json, sys
path, key, least = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = [json.loads(l) for l in open(path)][-1]
v = s["losses"][key]
assert v >= least, f"losses.{key} = {v}, expected >= {least}: {s['losses']}"
print(f"ok: losses.{key} = {v}")
PY
}

# A ring buffer of 4 KiB (about ten records) and 200 entries whose pages
# are contiguous, so that a few requests settle them all at once.
start_tracer -c synth_writer --dev "$LOOPNAME" --ringbuf-kb 4
"$SYNTH_WRITER" -c -n 200 -w 1 -m 0 "$mnt" | cat >/dev/null
sync
stop_tracer
loss "$TRACE_OUT" ringbuf_drops 1
python3 "$AMP_ROOT/tests/checks.py" devsum "$TRACE_OUT" "$LOOPNAME" --losses-ok
python3 - "$TRACE_OUT" "$LOOPNAME" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1])][-1]
d = [d for d in s["devices"] if d["name"] == sys.argv[2]][0]
assert d["total"] == d["counter_bytes"], d
print(f"ok: with drops, classes still sum to the counter ({d['total']})")
PY
# The table says so too.
"$AMPTRACE" trace -c synth_writer --dev "$LOOPNAME" --ringbuf-kb 4 -o "$AMP_TMP/table.txt" 2>"$AMP_TMP/table.err" &
t=$!; at_exit _kill_wait "$t" amptrace
wait_for "grep -q 'tracing (' $AMP_TMP/table.err" 60 || fail "tracer did not start: $(cat "$AMP_TMP/table.err")"
"$SYNTH_WRITER" -c -n 200 -w 1 -m 0 "$mnt" | cat >/dev/null
sync; kill -INT "$t"; wait "$t"
grep -q '^Losses:.*ring buffer full [1-9]' "$AMP_TMP/table.txt" || fail "no ring-buffer loss in the table: $(grep Losses "$AMP_TMP/table.txt")"
grep -q '^Hint: .*--ringbuf-kb 16 (this run: 4)' "$AMP_TMP/table.txt" || fail "no hint to a larger ring: $(grep -A1 Losses "$AMP_TMP/table.txt")"
ok "table: $(grep '^Losses:' "$AMP_TMP/table.txt"); $(grep '^Hint:' "$AMP_TMP/table.txt")"

# Entries map of 16 for 40 entries that stay unsettled until the sync.
start_tracer -c synth_writer --dev "$LOOPNAME" --max-entries 16
"$SYNTH_WRITER" -n 40 -w 1 -m 0 "$mnt" | cat >/dev/null
sync
stop_tracer
loss "$TRACE_OUT" entries_full 1

# Pages unwritten past the settle timeout: their entries reported then
# (the sweep takes their slots: the writes' completion settles nothing
# more).  The traced disk is a loop device whose image lies on another loop fs, frozen
# (t22): its write-back waits for the thaw, 4 s, past the 2-s timeout.
# (Any `sync` on the host would write plain dirty pages out meanwhile.)
outer=$AMP_TMP/outer inner=$AMP_TMP/inner
nested_loopfs "$outer" "$inner" -E lazy_itable_init=0,lazy_journal_init=0
sync
_wait_quiet "$inner" 2 15
start_tracer -c synth_writer --dev "${NESTED_DEV##*/}" --settle-timeout 2
fsfreeze -f "$outer"
"$SYNTH_WRITER" -n 4 -w 1 -m 1 "$inner" | cat >/dev/null
sync -f "$inner" &
spid=$!
sleep 4
fsfreeze -u "$outer"
wait "$spid"
sleep 1
stop_tracer
loss "$TRACE_OUT" entries_timed_out 4
python3 - "$TRACE_OUT" <<'PY'
import json, sys
e = [json.loads(l) for l in open(sys.argv[1])]
e = [r for r in e if r["type"] == "entry"]
assert len(e) == 4 and not any(r["settled"] for r in e), [(r["id"], r["settled"]) for r in e]
print("ok: 4 entries reported unsettled after the settle timeout")
PY
