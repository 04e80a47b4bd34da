#!/usr/bin/env bash
# ext4 without a journal: a block-device folio whose write-out is in flight
# and filed under a traced file's stand-in transaction (the flusher
# allocating file f's block dirtied f's inode-table block) is dirtied by
# an entry (a write to file g, whose inode is in the same block).  That
# write is f's stand-in's; the entry owns only the next one.  Before, the
# entry took the folio at once and was charged the stand-in's write, and
# the stand-in kept the folio for the entry's own write (swapped).
#
# Ground truth, deterministic: the traced disk is a loop device whose image
# lives on another loop fs; freezing that outer fs holds the inner disk's
# write requests (as t22).  The flusher, made to write at once
# (dirty_expire 10 ms), writes f (allocating its block) and then the block
# device's inode, both held; g's line is written meanwhile; after the thaw
# nothing writes the table block again before the tracer stops (the kernel
# defaults put back: 30 s expiry), so g's entry must show no metadata bytes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

outer=$AMP_TMP/outer inner=$AMP_TMP/inner
nested_loopfs "$outer" "$inner" -I 256 -O ^has_journal -E lazy_itable_init=0
dev=$NESTED_DEV
touch "$inner/f" "$inner/g"	# neighbours in the inode table
vm=/proc/sys/vm
expire=$(<$vm/dirty_expire_centisecs) every=$(<$vm/dirty_writeback_centisecs)
restore_vm() { echo "$expire" >$vm/dirty_expire_centisecs; echo "$every" >$vm/dirty_writeback_centisecs; return 0; }
at_exit restore_vm
name=${dev##*/}
sync
_wait_quiet "$inner" 2 15

inflight_writes() { local r w; read -r r w <"/sys/block/$name/inflight"; echo "$w"; }
append() { printf '%s\n' "$2" | "$AMP_ROOT/build/tests/append_writer" "$inner/$1"; }

start_tracer -c amp-append --dev "$name" --settle-timeout 60
append f first	# dirties f's data (delayed allocation) and the table block
# The table block out now, the first entry's: clean when the flusher
# allocates f's block.
python3 -c 'import os, sys; os.fsync(os.open(sys.argv[1], os.O_RDONLY))' "$dev"
fsfreeze -f "$outer"
echo 1 >$vm/dirty_expire_centisecs
echo 10 >$vm/dirty_writeback_centisecs
# f's data, then the block device's inode (its bitmaps and table block,
# filed under f's stand-in): two requests or more, held by the freeze.
wait_for '(( $(inflight_writes) >= 2 ))' 20 || fail "the flusher's writes are not in flight on $name"
sleep 0.5	# the rest of the block device's folios submitted
restore_vm
append g second	# the table block again, during its write-out
fsfreeze -u "$outer"
wait_for '(( $(inflight_writes) == 0 ))' 20 || fail "writes still in flight on $name after the thaw"
stop_tracer

python3 - "$TRACE_OUT" "$(getconf PAGESIZE)" <<'PY'
import json, sys
path, page = sys.argv[1], int(sys.argv[2])
recs = [json.loads(l) for l in open(path)]
ents = [r for r in recs if r["type"] == "entry" and r["pages_dirtied"]]
by = {}
for e in ents:
    by.setdefault(e["file"]["path"].rsplit("/", 1)[-1], []).append(e)
assert len(by.get("f", [])) == 1 and len(by.get("g", [])) == 1, \
    f"one dirtying entry per line wanted: {[(e['file']['path'], e['id']) for e in ents]}"
(ef,), (eg,) = by["f"], by["g"]
def bdev(e):
    return {r["page"] for r in e["scatter"] if r["path"].endswith("(block device)")}
common = bdev(ef) & bdev(eg)
assert common, f"the entries dirtied no common block-device folio: f {bdev(ef)}, g {bdev(eg)}"
print(f"ok: both lines dirtied the block device's page(s) {sorted(common)} (inode table)")
m = eg["dev_bytes"]["metadata"]
assert m == 0, \
    f"g's entry charged {m} B of metadata: the stand-in's in-flight write of the table block ({eg})"
print("ok: g's entry is charged nothing of the table block's write that was in flight")
assert ef["dev_bytes"]["metadata"] >= page, ef
print(f"ok: f's entry paid {ef['dev_bytes']['metadata']} B of metadata (its table block write "
      f"and its stand-in's)")
PY
