#!/usr/bin/env bash
# A full map is a counted, reported loss, never a silent one: with room for
# 16 dirty folios and a writer dirtying 60, the overflow is reported, and
# the device classes still sum to the counter (uncharged bytes become other).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"

start_tracer -c synth_writer --dev "$LOOPNAME" --max-pages 16
"$SYNTH_WRITER" -n 20 -w 2 -m 2 "$mnt" | cat >"$AMP_TMP/expect.json"
sync
stop_tracer

python3 - "$TRACE_OUT" "$LOOPNAME" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
s = recs[-1]
full = s["losses"]["pages_full"]
assert full > 0, f"page map of 16 cannot hold 60 folios, yet pages_full = {full}"
print(f"ok: pages_full = {full} reported")
d = [d for d in s["devices"] if d["name"] == sys.argv[2]][0]
assert d["classes"]["other"] > 0, "uncharged folios must show up as other"
print("ok: uncharged data counted as other")
PY
python3 "$AMP_ROOT/tests/checks.py" devsum "$TRACE_OUT" "$LOOPNAME" --losses-ok

# The large maps are touched once per page before attaching (see
# user/trace/prefault.c): folio_table's 32-byte slots, 128 to a page; the
# events ring by as many 2 KiB records (8-byte header) as it holds.
for size in "65536 256" "262144 1024"; do
    read -r pages ring_kb <<<"$size"
    "$AMPTRACE" trace -v -q -d 0.5 -c nobody-here --max-pages "$pages" --ringbuf-kb "$ring_kb" \
        >/dev/null 2>"$AMP_TMP/v.err" ||
        fail "trace -v --max-pages $pages: $(grep -v ^libbpf "$AMP_TMP/v.err" | tail -n 2)"
    grep -q "not prefaulted" "$AMP_TMP/v.err" && fail "$(grep "not prefaulted" "$AMP_TMP/v.err")"
    got=$(grep prefaulted "$AMP_TMP/v.err" | tr '\n' ';')
    want=$((pages * 32 / 4096))
    grep -q "folio_table prefaulted ($want lookups," "$AMP_TMP/v.err" ||
        fail "--max-pages $pages: want folio_table prefaulted in $want lookups, got: $got"
    want=$((ring_kb * 1024 / 2056))
    grep -q "events ring prefaulted ($want records," "$AMP_TMP/v.err" ||
        fail "--ringbuf-kb $ring_kb: want the ring prefaulted by $want records, got: $got"
done
ok "events ring, folio_table, unsettled and .bss prefaulted, every page of the table and the ring"
