#!/usr/bin/env bash
# The traced file is rotated under the tracer: journald archives
# system.journal and starts a new one; entries before and after are
# charged to the old and the new file, and the sums still hold.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

use_journald
make_loopfs ext4 512 "$JOURNAL_DIR"
start_journald
old_ino=$(stat -c %i "$(journald_file)")
start_tracer -c systemd-journal --dev "$LOOPNAME"
send_journal_entry "before rotation"
sleep 0.5
journald_run journalctl --rotate >/dev/null 2>&1 || fail "journalctl --rotate failed"
wait_for "[[ \$(stat -c %i $(journald_file)) != $old_ino ]]" 10 || fail "journal did not rotate"
new_ino=$(stat -c %i "$(journald_file)")
send_journal_entry "after rotation"
sleep 1; sync
stop_tracer
python3 - "$TRACE_OUT" "$old_ino" "$new_ino" <<'PY'
import json, sys
path, old, new = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
recs = [json.loads(l) for l in open(path)]
inos = lambda e: {s["ino"] for s in e["scatter"]}
rx = sorted((r for r in recs if r["type"] == "entry" and r["syscall"] == "recvmsg"),
            key=lambda e: e["id"])
assert any(old in inos(e) for e in rx), f"no entry on the old file {old}: {[inos(e) for e in rx]}"
assert new in inos(rx[-1]), f"last entry not on the new file {new}: {inos(rx[-1])}"
print(f"ok: entries on the archived file (ino {old}) and on the new one (ino {new})")
PY
python3 "$AMP_ROOT/tests/checks.py" devsum "$TRACE_OUT" "$LOOPNAME"
