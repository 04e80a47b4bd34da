#!/usr/bin/env bash
# A folio re-dirtied while its write-out is in flight (an append to a log's
# last folio during a flush or a sync) stays its owner's until that
# request completes; the new dirtier owns the next write-out.  Before, the
# owner was cancelled (pages_cancelled), the request was charged to the new
# dirtier, and the next write-out had no owner (class other): seen in the
# soak benchmark under concurrent syncs.
#
# Ground truth, deterministic: the traced disk is a loop device whose
# image lives on another loop fs; freezing that outer fs holds the inner
# disk's write request (loop's write to its image waits for the thaw), so
# the folio is under writeback exactly while the second line is appended.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

outer=$AMP_TMP/outer inner=$AMP_TMP/inner
nested_loopfs "$outer" "$inner" -E lazy_itable_init=0,lazy_journal_init=0
name=${NESTED_DEV##*/}
sync
_wait_quiet "$inner" 2 15

inflight_writes() { local r w; read -r r w <"/sys/block/$name/inflight"; echo "$w"; }

start_tracer -c amp-append --dev "$name" --settle-timeout 30
coproc W { exec "$AMP_ROOT/build/tests/append_writer" "$inner/log"; }
wpid=$W_PID	# bash unsets W_PID once the coprocess is gone
stop_writer() { kill "$wpid" 2>/dev/null || true; }
at_exit stop_writer
line() { printf '%s\n\n' "$1" >&"${W[1]}"; read -r ok n <&"${W[0]}"; [[ $ok == ok ]]; }

line first
fsfreeze -f "$outer"
sync -f "$inner/log" &
spid=$!
# The first line's folio is on its way (and under writeback) until the thaw.
wait_for '(( $(inflight_writes) > 0 ))' 20 || { _log "no write request in flight on $name"; exit 1; }
line second
fsfreeze -u "$outer"
wait "$spid"
sync -f "$inner/log"
exec {W[1]}>&-
wait "$wpid" || true
stop_tracer

python3 - "$TRACE_OUT" "$name" "$(getconf PAGESIZE)" <<'PY'
import json, sys
path, dev, page = sys.argv[1], sys.argv[2], int(sys.argv[3])
recs = [json.loads(l) for l in open(path)]
s = recs[-1]
ents = sorted((r for r in recs if r["type"] == "entry" and r["pages_dirtied"]), key=lambda e: e["id"])
lost = s["losses"]["pages_cancelled"]
assert lost == 0, f"pages_cancelled {lost}: the in-flight owner was dropped"
print("ok: no page cancelled")
d = [d for d in s["devices"] if d["name"] == dev][0]
c = d["classes"]
assert c["other"] == 0, f"class other {c['other']} B: a write-out without its owner: {c}"
print("ok: class other 0")
assert len(ents) == 2, f"{len(ents)} entries dirtied pages, want 2 (one per line): {ents}"
for e in ents:
    assert e["settled"] and e["folios_written"] == e["folios_dirtied"] == 1, e
    assert e["dev_bytes"]["data"] == page, f"entry {e['id']}: data {e['dev_bytes']['data']} B, want {page}"
print(f"ok: each line's entry paid one write-out of its folio ({page} B), both settled")
assert sum(c.values()) == d["total"] == d["counter_bytes"], d
print("ok: classes sum to the device counter")
PY
