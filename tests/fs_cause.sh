#!/usr/bin/env bash
# fs_cause.sh FS: the bill of one filesystem by cause (issue 17), for the
# synthetic writer, journald 252 logging one line, and SQLite made here
# (rollback journal and WAL, synchronous=FULL, autocommit INSERTs):
#  (a) the classes sum to this test's own /sys/block/DEV/stat reading;
#  (b) the entries carry by cause + by window: nothing counted twice;
#  (c) by cause >= the floor measured on 6.18 for FS and workload (a
#      regression fails; raise a floor as charging gets better).
# Run by t41_cause_ext4.sh and t41_cause_xfs.sh.  T41_WORKLOADS overrides
# the workloads ("synth journald rollback wal").
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
fs=$1
work=" ${T41_WORKLOADS:-synth journald rollback wal} "
inserts=60
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (scripts/deps.sh)"
AMP_JOURNALD=252
[[ $work != *" journald "* ]] || use_journald

check() {   # WHAT
    python3 - "$fs" "$1" "$TRACE_OUT" "$LOOPNAME" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["AMP_ROOT"] + "/tests")
from checks import check_charges
fs, what, path, dev = sys.argv[1:5]
# By cause, measured on 6.18 (ext4: 85, 95, 99.1-99.6, 97.4-99.4 %; xfs: 98.3-98.9, 99.8,
# 98.3-98.4, 99.4 %), less a few points for run-to-run spread.
floor = {("ext4", "synth"): 0.78, ("ext4", "journald"): 0.90,
         ("ext4", "rollback"): 0.95, ("ext4", "wal"): 0.95,
         ("xfs", "synth"): 0.95, ("xfs", "journald"): 0.90,
         ("xfs", "rollback"): 0.95, ("xfs", "wal"): 0.95}
tag = f"{fs}/{what}"
d, entries = check_charges(path, dev, tag, slack=0)
total = d["total"]
cf = d["cause_fraction"]
print(f"{tag}: cause_fraction {cf:.4f} ({d['by_cause']} of {total} B; by window {d['by_window']})")
assert cf >= floor[fs, what], f"{tag}: {cf:.1%} by cause, below the measured floor {floor[fs, what]:.0%}"
print(f"ok: {tag}: {cf:.1%} by cause >= floor {floor[fs, what]:.0%}")
PY
}

sqlite_run() {   # MODE DB
    { echo "PRAGMA synchronous=FULL;"
      for ((i = 1; i <= inserts; i++)); do
          echo "INSERT INTO t(v) VALUES('amptrace t41 line $i, a log line of some length');"
      done; } | sqlite3 "$2"
}

mnt=$AMP_TMP/mnt-$fs
if [[ $work == *" synth "* ]]; then
    make_loopfs "$fs" 512 "$mnt"
    start_tracer -v -c synth_writer --dev "$LOOPNAME"
    "$SYNTH_WRITER" -n 8 -w 2 -m 3 "$mnt" | cat >/dev/null
    sync
    stop_tracer
    check synth
    _umount_robust "$mnt"
fi

for mode in rollback wal; do
    [[ $work == *" $mode "* ]] || continue
    make_loopfs "$fs" 512 "$mnt"
    jm=DELETE; [[ $mode == wal ]] && jm=WAL
    # The table and the journal mode are made before tracing: the run is
    # the INSERTs only.
    sqlite3 "$mnt/t.db" "PRAGMA journal_mode=$jm; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);" >/dev/null
    sync
    start_tracer -v -c sqlite3 --preset write --dev "$LOOPNAME"
    sqlite_run "$jm" "$mnt/t.db"
    sync
    stop_tracer
    check "$mode"
    _umount_robust "$mnt"
done

if [[ $work == *" journald "* ]]; then
    make_loopfs "$fs" 512 "$JOURNAL_DIR"
    start_tracer -v -c systemd-journal --dev "$LOOPNAME"
    start_journald
    send_journal_entry "fs cause $fs one line" SEQ=1
    sleep 1
    sync
    stop_tracer
    check journald
    _kill_wait "$JOURNALD_PID" journald
    _umount_robust "$JOURNAL_DIR"
fi
