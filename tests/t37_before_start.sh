#!/usr/bin/env bash
# Pages dirtied before tracing started and written during it are their own
# class (before_start), not `other`, which means untraced writers since the
# start only.  Ground truth: dd dirties 32 pages of one file before the
# tracer starts and 32 of another after it, both untraced; after sync the
# device must have written exactly 32 pages as before_start and 32 as
# other, and the classes must sum to the device counter as amptrace read
# it and as this test reads /sys/block itself around the window.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
page=$(getconf PAGESIZE)
pages=32

dd if=/dev/urandom of="$mnt/early" bs="$page" count=$pages status=none
start_tracer -c amp-nobody --dev "$LOOPNAME"
c0=$(devstat_written_bytes "$LOOPNAME")
dd if=/dev/urandom of="$mnt/late" bs="$page" count=$pages status=none
sync
c1=$(devstat_written_bytes "$LOOPNAME")
stop_tracer

python3 - "$TRACE_OUT" "$LOOPNAME" $((pages * page)) $((c1 - c0)) <<'PY'
import json, sys
path, dev, want, counter = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = [json.loads(l) for l in open(path)][-1]
d = [d for d in s["devices"] if d["name"] == dev][0]
c = d["classes"]
assert c["before_start"] == want, f"before_start {c['before_start']} B, want {want} (the early file's pages): {c}"
print(f"ok: before_start = {want} B: the pages dirtied before the start")
assert c["other"] == want, f"other {c['other']} B, want {want} (the late file's pages): {c}"
print(f"ok: other = {want} B: the untraced writer's pages since the start")
assert c["data"] == 0, f"data {c['data']}: nothing was traced"
total = sum(c.values())
assert total == d["total"] == d["counter_bytes"], f"classes {total}, total {d['total']}, counter {d['counter_bytes']}"
print(f"ok: classes sum to amptrace's counter reading: {total} B")
assert total == counter, f"classes {total} B, this test's own /sys/block reading {counter} B"
print(f"ok: and to this test's own /sys/block/{dev}/stat reading: {counter} B")
PY
