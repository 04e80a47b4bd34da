#!/usr/bin/env bash
# Folios deleted before their write-out (a log truncated by logrotate's
# copytruncate, a file removed while dirty): their entries must settle at
# once, each such folio counted in pages_cancelled, and none wait for the
# --settle-timeout sweep.  Before bpf/dropped.bpf.h every such entry
# waited and was reported as entries_timed_out.
#
# Ground truth: a writer (a copy of dd named amp-dropper) writes PAGES
# pages, one write() each, to each of two files on an idle loop ext4; one
# file is unlinked and the other truncated to 0 before the kernel's 30-s
# dirty expiry, so none of those pages is ever written (/sys/block's
# counter shows no data written).  Then the test waits past a 5-s settle
# timeout.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
PAGES=32

mnt=$AMP_TMP/mnt
make_loopfs ext4 128 "$mnt"
cp "$(command -v dd)" "$AMP_TMP/amp-dropper"

start_tracer -c amp-dropper --preset write --dev "$LOOPNAME" --settle-timeout 5
for f in deleted truncated; do
    "$AMP_TMP/amp-dropper" if=/dev/zero of="$mnt/$f" bs=4096 count=$PAGES status=none
done
rm -f "$mnt/deleted"
truncate -s 0 "$mnt/truncated"
ok "wrote $PAGES pages to each of two files, then deleted one and truncated the other"
sleep 8   # past the settle timeout, and a sweep (every second)
sync -f "$mnt"
stop_tracer

python3 - "$TRACE_OUT" "$LOOPNAME" "$PAGES" <<'PY'
import json, sys
path, dev, pages = sys.argv[1], sys.argv[2], int(sys.argv[3])
recs = [json.loads(l) for l in open(path)]
summary = recs[-1]
entries = [r for r in recs if r.get("type") == "entry" and r.get("comm") == "amp-dropper"]
writes = [e for e in entries if e.get("pages_dirtied")]
losses = summary["losses"]
print(f"entries {len(entries)}, {len(writes)} of them dirtying pages; losses {losses}")
assert len(writes) == 2 * pages, f"want {2 * pages} entries dirtying a page each, got {len(writes)}"
assert losses["entries_timed_out"] == 0, \
    f"{losses['entries_timed_out']} entries waited for the settle timeout: their deleted folios were not seen"
assert losses["pages_cancelled"] >= 2 * pages, \
    f"pages_cancelled {losses['pages_cancelled']} < the {2 * pages} folios dropped unwritten"
data = sum(e["dev_bytes"]["data"] for e in writes)
assert data == 0, f"{data} B of data charged for pages never written"
print(f"ok: {2 * pages} entries settled without a write, pages_cancelled {losses['pages_cancelled']}, none timed out")
PY
# pages_cancelled is this test's point (checked above), not a loss here.
python3 "$AMP_ROOT/tests/checks.py" devsum "$TRACE_OUT" "$LOOPNAME" --losses-ok
