#!/usr/bin/env bash
# Faults while tracing: the target restarts (traced by comm, so the new pid
# is traced too), the filesystem is unmounted under the tracer, two tracers
# run at once, SIGHUP stops with a summary, kill -9 leaves nothing attached.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

# --- journald killed and restarted mid-trace
use_journald
make_loopfs ext4 512 "$JOURNAL_DIR"
start_journald
first=$JOURNALD_PID
start_tracer -c systemd-journal --dev "$LOOPNAME"
send_journal_entry "before restart"
sleep 0.5
_kill_wait "$first" journald
start_journald
send_journal_entry "after restart"
sleep 1; sync
stop_tracer
python3 - "$TRACE_OUT" "$first" "$JOURNALD_PID" <<'PY'
import json, sys
path, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
recs = [json.loads(l) for l in open(path)]
pids = {r["pid"] for r in recs if r["type"] == "entry" and r["syscall"] == "recvmsg"}
assert {a, b} <= pids, f"entries from journald pids {pids}, expected both {a} and {b}"
print(f"ok: journald restarted ({a} -> {b}): entries from both")
PY
python3 "$AMP_ROOT/tests/checks.py" devsum "$TRACE_OUT" "$LOOPNAME"

# --- filesystem unmounted under the tracer; two tracers at once; SIGHUP
mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
"$AMPTRACE" trace -c synth_writer --dev "$LOOPNAME" -j -o "$AMP_TMP/second.json" 2>"$AMP_TMP/second.err" &
second=$!
at_exit _kill_wait "$second" amptrace
start_tracer -c synth_writer --dev "$LOOPNAME"
wait_for "grep -q 'tracing (' $AMP_TMP/second.err" 30 || fail "second tracer did not start"
"$SYNTH_WRITER" -n 5 -w 1 -m 1 "$mnt" | cat >/dev/null
_umount_robust "$mnt"
sleep 0.5
_alive "$TRACER_PID" || fail "tracer died when the filesystem went away"
ok "filesystem unmounted under the tracer: still running"
kill -HUP "$second"
wait_for "! _alive $second" 30 || fail "SIGHUP did not stop amptrace"
rc=0; wait "$second" || rc=$?
((rc == 0)) || fail "SIGHUP: exit $rc"
stop_tracer
for f in "$TRACE_OUT" "$AMP_TMP/second.json"; do
    python3 - "$f" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert recs[-1]["type"] == "summary", "no summary"
e = [r for r in recs if r["type"] == "entry"]
assert len(e) == 5 and all(x["settled"] for x in e), [(x["id"], x["settled"]) for x in e]
print(f"ok: {sys.argv[1].rsplit('/', 1)[1]}: 5 settled entries and a summary")
PY
done
ok "two tracers at once both saw everything; SIGHUP stops with a summary"

# --- kill -9: BPF links die with the process
prog_ids() { bpftool prog show 2>/dev/null | sed -nE 's/^([0-9]+): .* name on_[a-z_]+ .*/\1/p' | sort; }
prog_ids >"$AMP_TMP/before"
"$AMPTRACE" trace -q 2>/dev/null &
victim=$!
at_exit _kill_wait "$victim" amptrace
wait_for "[[ \$(prog_ids | comm -13 $AMP_TMP/before - | wc -l) -gt 0 ]]" 30 || fail "no programs loaded"
prog_ids | comm -13 "$AMP_TMP/before" - >"$AMP_TMP/mine"
kill -9 "$victim"; wait "$victim" 2>/dev/null || true
wait_for "[[ -z \$(prog_ids | comm -12 $AMP_TMP/mine -) ]]" 10 ||
    fail "programs $(prog_ids | comm -12 "$AMP_TMP/mine" - | tr '\n' ' ')left after kill -9"
ok "kill -9: its $(wc -l <"$AMP_TMP/mine") programs are gone"
