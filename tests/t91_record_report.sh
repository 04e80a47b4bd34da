#!/usr/bin/env bash
# amptrace record / report:
#  0. bad arguments and non-records: one line, exit 1;
#  1. round trip: a synthetic-writer run recorded while `trace -j` traces it
#     live; `report FILE -j` prints the record's own summary exactly, its
#     entries carry the same pages and bytes as the live tracer's, and the
#     per-process totals are the sums of the entries;
#  2. kill -9 of a recorder that has written entries: report still reads it,
#     says it was truncated, prints every entry and a summary; a record cut
#     in the middle of a record (a write interrupted) reads the same way;
#  3. damage: a flipped payload byte and a damaged frame each give one error
#     line naming the offset of the damaged record, exit 1, nothing on stdout;
#  4. with the journal (journald on a loop ext4): `report --journal` explains
#     the recorded entries per log field, and its total is the entries' bill.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

bad "$AMPTRACE" record -c foo
bad "$AMPTRACE" record -o /nonexistent/dir/x.amp -c foo
[[ ! -e /nonexistent/dir/x.amp ]]
bad "$AMPTRACE" report
bad "$AMPTRACE" report /etc/hostname
bad "$AMPTRACE" report "$AMP_TMP/no-such.amp"
bad "$AMPTRACE" trace -s dev

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
sync; _wait_quiet "$mnt" 3 15

# A private copy of the writer under a name of its own, so that another
# test's synth_writer running meanwhile is not traced (-c) as ours.
writer=synth_$$
cp "$SYNTH_WRITER" "$AMP_TMP/$writer"

# start_bg NAME CMD...: run in the background (stderr in $AMP_TMP/NAME.err),
# wait until attached; sets BG_PID.
start_bg() {
    local name=$1; shift
    "$@" 2>"$AMP_TMP/$name.err" &
    BG_PID=$!
    at_exit _kill_wait "$BG_PID" "$name"
    wait_for "grep -qs 'tracing (' $AMP_TMP/$name.err || ! _alive $BG_PID" 30 ||
        fail "$name did not attach in 30 s"
    _alive "$BG_PID" || fail "$name died: $(cat "$AMP_TMP/$name.err")"
}

# entries_in FILE: entries the record holds so far (report --info).
entries_in() { "$AMPTRACE" report --info "$1" 2>/dev/null | sed -n 's/^entries: *//p'; }

# ---- 1. round trip --------------------------------------------------------
rec=$AMP_TMP/run.amp
start_bg record "$AMPTRACE" record -o "$rec" -j -c "$writer" --dev "$LOOPNAME" \
    >"$AMP_TMP/record.summary.json"
recorder=$BG_PID
start_tracer -c "$writer" --dev "$LOOPNAME"
"$AMP_TMP/$writer" -n 8 -w 2 -m 3 "$mnt" | cat >/dev/null
sync
wait_for "[[ \$(entries_in $rec) == 8 ]]" 30 || fail "record holds $(entries_in "$rec") entries, want 8"
kill -INT "$recorder"
wait_for "! _alive $recorder" 30 || fail "recorder ignored SIGINT"
rc=0; wait "$recorder" || rc=$?
((rc == 0)) || fail "recorder exited $rc: $(cat "$AMP_TMP/record.err")"
grep -q "recorded 8 entries to $rec" "$AMP_TMP/record.err" ||
    fail "recorder did not say what it wrote: $(cat "$AMP_TMP/record.err")"
wait_for "[[ \$(grep -c '\"type\":\"entry\"' $TRACE_OUT) -ge 8 ]]" 20 || true
stop_tracer
ok "recorded $(stat -c %s "$rec") bytes for 8 entries; live trace ran alongside"

"$AMPTRACE" report "$rec" -j >"$AMP_TMP/report.json" 2>"$AMP_TMP/report.err" ||
    fail "report -j failed: $(cat "$AMP_TMP/report.err")"
[[ ! -s $AMP_TMP/report.err ]] || fail "report of a complete record said: $(cat "$AMP_TMP/report.err")"
"$AMPTRACE" report "$rec" >"$AMP_TMP/report.txt" || fail "report (table) failed"
grep -q '^Summary: .* 8 entries' "$AMP_TMP/report.txt" || fail "table report: no summary line"
ok "table report: $(grep -c "$writer *pwrite64" "$AMP_TMP/report.txt") entry lines, summary"

python3 - "$AMP_TMP/report.json" "$AMP_TMP/record.summary.json" "$TRACE_OUT" "$writer" <<'PY'
import json, sys
writer = sys.argv[4]
rep = [json.loads(l) for l in open(sys.argv[1])]
live_summary = json.loads(open(sys.argv[2]).read())
live = [json.loads(l) for l in open(sys.argv[3])]
entries = [r for r in rep if r["type"] == "entry"]
summary = rep[-1]
assert summary["type"] == "summary", "report -j does not end with a summary"
assert summary == live_summary, \
    f"report's summary differs from the recorder's live one:\n{summary}\n{live_summary}"
print(f"ok: report summary == the recorder's live summary ({summary['entries']} entries, "
      f"{len(summary['files'])} files, {len(summary['devices'])} devices)")

# Per-process totals are the entries' sums.
p = summary["processes"][0]
for key, get in (("entries", lambda e: 1), ("bytes", lambda e: e["bytes"]),
                 ("pages_dirtied", lambda e: e["pages_dirtied"]), ("ios", lambda e: e["ios"])):
    got = sum(get(e) for e in entries)
    assert got == p[key], f"{key}: entries sum to {got}, summary says {p[key]}"
for k in ("data", "metadata", "journal", "window"):
    got = sum(e["dev_bytes"][k] for e in entries)
    assert got == p["dev_bytes"][k], f"dev_bytes.{k}: entries {got}, summary {p['dev_bytes'][k]}"
print(f"ok: per-process totals = sums of the {len(entries)} reported entries: {p['dev_bytes']}")

# The same syscalls, pages and data bytes as the tracer that ran alongside.
def key(e):
    pages = sorted((r["ino"], r["page"], r["npages"], r["kind"]) for r in e["scatter"])
    return (e["syscall"], e["bytes"], e["pages_dirtied"], e["dev_bytes"]["data"], tuple(pages))
mine = sorted(key(e) for e in entries)
theirs = sorted(key(e) for e in live if e["type"] == "entry" and e["comm"] == writer)
assert mine == theirs, f"recorded entries differ from live ones:\n{mine}\n{theirs}"
print(f"ok: {len(mine)} recorded entries = the live trace's (syscall, bytes, pages, data bytes, scatter)")
live_sum = live[-1]
d_rec = [d for d in summary["devices"]]
d_live = [d for d in live_sum["devices"]]
assert [(d["name"], d["classes"], d["counter_bytes"]) for d in d_rec] == \
       [(d["name"], d["classes"], d["counter_bytes"]) for d in d_live], (d_rec, d_live)
print(f"ok: device classes and counters = the live trace's: {d_rec[0]['classes']}")
PY

# ---- 2. kill -9 ----------------------------------------------------------
killed=$AMP_TMP/killed.amp
start_bg killed "$AMPTRACE" record -o "$killed" -c "$writer" --dev "$LOOPNAME"
killed_pid=$BG_PID
"$AMP_TMP/$writer" -n 6 -w 1 -m 2 "$mnt" | cat >/dev/null
sync
wait_for "[[ \$(entries_in $killed) == 6 ]]" 30 || fail "killed record holds $(entries_in "$killed"), want 6"
# More in flight when it dies: written, not yet settled.
"$AMP_TMP/$writer" -n 6 -w 1 -m 2 "$mnt" | cat >/dev/null
sleep 2.5   # past a checkpoint
kill -KILL "$killed_pid"
wait "$killed_pid" 2>/dev/null || true
rc=0
"$AMPTRACE" report "$killed" >"$AMP_TMP/killed.txt" 2>"$AMP_TMP/killed.err" || rc=$?
((rc == 0)) || fail "report of a killed record: exit $rc: $(cat "$AMP_TMP/killed.err")"
grep -q 'truncated' "$AMP_TMP/killed.err" || fail "report did not say the record is truncated"
n=$(grep -c "$writer *pwrite64" "$AMP_TMP/killed.txt")
((n >= 6)) || fail "report of the killed record shows $n entries, want >= 6"
grep -q '^Summary: ' "$AMP_TMP/killed.txt" || fail "no summary for the killed record"
grep -A2 '^Per device' "$AMP_TMP/killed.txt" | grep -q "^$LOOPNAME " ||
    fail "no device row from the checkpoint"
ok "kill -9: $n entries, summary from the last checkpoint; stderr: $(cat "$AMP_TMP/killed.err")"

# A write cut short: the complete record minus its last 10 bytes.
cut=$AMP_TMP/cut.amp
head -c $(($(stat -c %s "$rec") - 10)) "$rec" >"$cut"
rc=0
"$AMPTRACE" report -q "$cut" >"$AMP_TMP/cut.txt" 2>"$AMP_TMP/cut.err" || rc=$?
((rc == 0)) || fail "report of a cut record: exit $rc: $(cat "$AMP_TMP/cut.err")"
grep -Eq 'truncated at offset [0-9]+: partial record \([0-9]+ of [0-9]+ bytes\)' "$AMP_TMP/cut.err" ||
    fail "cut record: $(cat "$AMP_TMP/cut.err")"
grep -q '^Summary: .* 8 entries' "$AMP_TMP/cut.txt" || fail "cut record: not all 8 entries read"
ok "partial last record: $(cat "$AMP_TMP/cut.err")"

# ---- 3. damage -----------------------------------------------------------
# frames FILE: "offset type len" of every record after the 16-byte preamble.
frames() {
    python3 - "$1" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
off = 16
while off + 12 <= len(data):
    n, t = struct.unpack_from("<IH", data, off)
    print(off, t, n)
    off += 12 + n
PY
}
frames "$rec" >"$AMP_TMP/frames"
read -r ent_off _ ent_len < <(awk '$2 == 3' "$AMP_TMP/frames" | sed -n 3p)
[[ -n $ent_off ]] || fail "no third entry record in $rec"

expect_corrupt() {   # WHAT FILE OFFSET PATTERN
    local rc=0
    "$AMPTRACE" report "$2" >"$AMP_TMP/bad.out" 2>"$AMP_TMP/bad.err" || rc=$?
    ((rc == 1)) || fail "$1: exit $rc, want 1"
    [[ $(wc -l <"$AMP_TMP/bad.err") == 1 ]] || fail "$1: not one line: $(cat "$AMP_TMP/bad.err")"
    [[ ! -s $AMP_TMP/bad.out ]] || fail "$1: printed a report anyway"
    grep -q "corrupt record at offset $3: $4" "$AMP_TMP/bad.err" ||
        fail "$1: want 'offset $3: $4', got: $(cat "$AMP_TMP/bad.err")"
    ok "$1 -> $(cat "$AMP_TMP/bad.err")"
}
flip() {   # SRC DST BYTE_OFFSET
    python3 - "$@" <<'PY'
import sys
src, dst, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = bytearray(open(src, "rb").read())
data[at] ^= 0x5a
open(dst, "wb").write(data)
PY
}
flip "$rec" "$AMP_TMP/payload.amp" $((ent_off + 12 + ent_len / 2))
expect_corrupt "flipped payload byte" "$AMP_TMP/payload.amp" "$ent_off" "checksum mismatch"
flip "$rec" "$AMP_TMP/frame.amp" $((ent_off + 1))
expect_corrupt "damaged frame length" "$AMP_TMP/frame.amp" "$ent_off" "bad record frame"

# ---- 4. per field, with the journal -----------------------------------------
[[ -x /lib/systemd/systemd-journald ]] || { echo "note: no journald: --journal not exercised"; exit 0; }
use_journald
make_loopfs ext4 256 "$JOURNAL_DIR"
start_journald
jrec=$AMP_TMP/journald.amp
start_bg jrecord "$AMPTRACE" record -o "$jrec" -c systemd-journal --dev "$LOOPNAME" >/dev/null
jpid=$BG_PID
# The last one stays open (its thread has not moved on) until the next receive.
for i in 1 2 3 4 5 6; do send_journal_entry "amptrace t91 line $i" "T91_SEQ=$i"; sleep 0.2; done
sync
wait_for "(( \$(entries_in $jrec) >= 5 ))" 30 || fail "journald record holds $(entries_in "$jrec") entries"
kill -INT "$jpid"
wait_for "! _alive $jpid" 30 || fail "journald recorder ignored SIGINT"
"$AMPTRACE" report "$jrec" -j >"$AMP_TMP/jreport.json"
rc=0
"$AMPTRACE" report "$jrec" --journal "$(journald_file)" >"$AMP_TMP/fields.txt" 2>"$AMP_TMP/fields.err" || rc=$?
((rc == 0)) || fail "report --journal: exit $rc: $(tail -n 3 "$AMP_TMP/fields.err")"
python3 - "$AMP_TMP/jreport.json" "$AMP_TMP/fields.txt" <<'PY'
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1])][:-1]
bill = sum(e["dev_bytes_total"] for e in entries)
lines = open(sys.argv[2]).read().splitlines()
fields = {l.split()[0]: l.split() for l in lines if l and l.split()[0] in ("MESSAGE", "T91_SEQ", "TOTAL")}
assert "MESSAGE" in fields and "T91_SEQ" in fields, f"no per-field rows for MESSAGE, T91_SEQ: {lines[-25:]}"
total = [l for l in lines if l.startswith("Traced:")]
assert total and f"{bill} device bytes" in total[0], f"explain's total {total} != entries' bill {bill}"
print(f"ok: report --journal: per-field rows (MESSAGE, T91_SEQ...); {total[0]} = the entries' bill")
PY
