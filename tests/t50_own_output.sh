#!/usr/bin/env bash
# The tracer must not pollute what it measures: tracing every writer on a
# disk while writing its own report onto that disk, no entry, page or file
# of the report is charged; SIGTERM stops it with a summary.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"

out=$mnt/amptrace-report.json
"$AMPTRACE" trace --preset write --dev "$LOOPNAME" -j -o "$out" 2>"$AMP_TMP/err" &
tracer=$!
at_exit _kill_wait "$tracer" amptrace
wait_for "grep -q 'tracing (' $AMP_TMP/err" 30 || fail "tracer did not start: $(cat "$AMP_TMP/err")"
"$SYNTH_WRITER" -n 40 -w 1 -m 1 "$mnt" | cat >/dev/null
sync
kill -TERM "$tracer"
wait_for "! _alive $tracer" 30 || fail "amptrace ignored SIGTERM"
rc=0; wait "$tracer" || rc=$?
((rc == 0)) || fail "amptrace exited $rc on SIGTERM"
tail -n 1 "$out" | grep -q '"type":"summary"' || fail "no summary after SIGTERM"
ok "SIGTERM: exit 0 with a summary"

# The report file is (dev, inode): another disk's file may have the same
# inode number (any writer on the host is traced, e.g. a benchmark's log).
python3 - "$out" "$(stat -c %i "$out")" "$tracer" "$(stat -c '%Hd:%Ld' "$out")" <<'PY'
import json, sys
path, ino, tracer, dev = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
own = lambda f: f.get("ino") == ino and f.get("dev") == dev
recs = [json.loads(l) for l in open(path)]
entries = [r for r in recs if r["type"] == "entry"]
summary = recs[-1]
bad = [e["id"] for e in entries if e["pid"] == tracer
       or own(e.get("file", {}))
       or any(own(s) for s in e["scatter"])]
assert entries, "no entries at all: the synthetic writer was not traced"
assert not bad, f"entries charged with amptrace's own output: {bad}"
assert not [f for f in summary["files"] if own(f)], "own output in per-file summary"
assert not [p for p in summary["processes"] if p["pid"] == tracer], "amptrace in per-process summary"
print(f"ok: {len(entries)} entries, none from amptrace or on its report file (dev {dev}, ino {ino})")
PY
