#!/usr/bin/env bash
# The window rule charges traced entries only with what was written for
# them: not with an untraced process's metadata on the same filesystem.
# A traced synthetic writer makes 2 small entries (2 pages each) while an
# untraced one, a shell, creates 400 files of one page in a directory of
# their own; then sync.  The untraced writer's inode, bitmap and directory
# blocks (dirtied by it, not by a traced entry) and its share of the fs
# journal's commits must not be on the traced entries' bills: each entry
# costs at most its pages plus 16 blocks, while the device writes far more,
# and the untraced bytes are named in the summary.  On ext4 without a
# journal (the untraced task dirties the metadata itself) and on ext4 (the
# metadata is logged by jbd2 in its handles).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
page=$(getconf PAGESIZE)

for fs in ext4nj ext4; do
    mnt=$AMP_TMP/mnt-$fs
    make_loopfs "$fs" 256 "$mnt"
    mkdir "$mnt/untraced"
    c0=$(devstat_written_bytes "$LOOPNAME")
    start_tracer -c synth_writer --dev "$LOOPNAME"
    (for i in $(seq 1 400); do head -c "$page" /dev/zero >"$mnt/untraced/f$i"; done) &
    bg=$!
    "$SYNTH_WRITER" -n 2 -w 2 -m 0 -g 200 "$mnt" | cat >"$AMP_TMP/expect.json"
    wait "$bg"
    sync
    sleep 1
    c1=$(devstat_written_bytes "$LOOPNAME")
    stop_tracer
    python3 - "$TRACE_OUT" "$LOOPNAME" "$page" $((c1 - c0)) "$fs" <<'PY'
import json, sys
path, dev, page, counter, fs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
recs = [json.loads(l) for l in open(path)]
s = recs[-1]
entries = [r for r in recs if r["type"] == "entry"]
d = [d for d in s["devices"] if d["name"] == dev][0]
total = sum(d["classes"].values())
print(f"{fs}: device {total} B {d['classes']}, by cause {d['by_cause']}, by window {d['by_window']}, "
      f"unattributed {d['unattributed']}; entries: "
      f"{[(e['id'], e['pages_dirtied'], e['dev_bytes']) for e in entries]}")
assert total == d["counter_bytes"] == counter, (total, d["counter_bytes"], counter)
assert total > 400 * page, f"the untraced writer wrote {total} B, expected > {400 * page}"
for e in entries:
    limit = (e["pages_dirtied"] + 16) * page
    assert e["dev_bytes_total"] <= limit, \
        f"entry {e['id']}: {e['dev_bytes_total']} B for {e['pages_dirtied']} pages (> {limit}): " \
        f"the untraced writer's metadata charged to it: {e['dev_bytes']}"
print(f"ok: {fs}: each traced entry costs at most its pages + 16 blocks")
c = d["classes"]
named = c["other"] + c["before_start"] + d["untraced_bytes"]
assert d["untraced_bytes"] > 0 and named == d["unattributed"], \
    f"unattributed {d['unattributed']} is not other + before_start + untraced ({named}): {d}"
print(f"ok: {fs}: the untraced writer's own: {c['other']} B of data and {d['untraced_bytes']} B of "
      f"metadata and journal, named (unattributed = other + before_start + untraced)")
PY
done
