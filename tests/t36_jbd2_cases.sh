#!/usr/bin/env bash
# jbd2 edge cases on ext4, each guarded by the sum check (nothing counted
# twice: entries' charges never exceed what the device wrote):
#  1. overlapping transactions: an fsync inside each entry makes its handles
#     span two transactions; both commits are charged to it;
#  2. commits that outlive the run: tracing stops right after journald
#     received its entries, before any commit or write-back; every entry is
#     still reported and the classes still sum to the device counter;
#  3. entries with no handle (xfs has no jbd2): covered by t35 on xfs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

sums() {   # TRACE WHAT: sum check and per-entry sanity
    python3 - "$1" "$LOOPNAME" "$2" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["AMP_ROOT"] + "/tests")
from checks import check_test_counter
path, dev, what = sys.argv[1:4]
recs = [json.loads(l) for l in open(path)]
s = recs[-1]
d = [d for d in s["devices"] if d["name"] == dev][0]
entries = [r for r in recs if r["type"] == "entry"]
assert abs(d["total"] - d["counter_bytes"]) <= 0.01 * max(d["counter_bytes"], 1), d
check_test_counter(dev, d["total"], what)
assert d["late_bytes"] == 0 and d["unwalked_bytes"] == 0, d
charged = sum(e["dev_bytes_total"] for e in entries)
assert charged == d["by_cause"] + d["by_window"] <= d["total"], (charged, d)
print(f"ok: {what}: {len(entries)} entries carry {charged} of {d['total']} device bytes "
      f"(counter {d['counter_bytes']}); by cause {d['by_cause']}, by window {d['by_window']}")
if what == "overlap":
    # Whether the stores after the fsync open a handle depends on mtime
    # granularity; the pwrite's and the fsync's commit always differ.
    multi = [e for e in entries if len(e["txns"]) >= 2]
    assert multi, \
        f"fsync inside entries: expected handles in 2 transactions, got {[e['txns'] for e in entries]}"
    j = sum(e["dev_bytes"]["journal"] for e in multi)
    assert j > 0, "no commit bytes charged to entries spanning two transactions"
    print(f"ok: {len(multi)} entries span 2+ transactions, {j} B of commits charged to them")
if what == "outlive":
    got = sorted(e["bytes"] for e in entries if e["syscall"] == "recvmsg")
    assert len(got) == 3, f"3 entries sent, reported: {got}"
    print(f"ok: all 3 entries reported although their pages/commits were not written: "
          f"settled={[e['settled'] for e in entries]}")
PY
}

mnt=$AMP_TMP/mnt
make_loopfs ext4 512 "$mnt"
start_tracer -c synth_writer --dev "$LOOPNAME"
"$SYNTH_WRITER" -s -g 20 -n 6 -w 1 -m 2 "$mnt" | cat >/dev/null
sync
stop_tracer
sums "$TRACE_OUT" overlap

use_journald
make_loopfs ext4 512 "$JOURNAL_DIR"
start_journald
start_tracer -c systemd-journal --dev "$LOOPNAME"
for i in 1 2 3; do send_journal_entry "outlive $i"; done
sleep 0.5
stop_tracer
sums "$TRACE_OUT" outlive
