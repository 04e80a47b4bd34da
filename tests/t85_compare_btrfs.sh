#!/usr/bin/env bash
# amptrace compare's btrfs sub-table: a short compare of the O_APPEND
# writer on btrfs (-w burst:10; append+fdatasync is left out: btrfs
# cancels some of its pages, a loss compare's checks refuse).  Its JSON
# row carries btrfs_trees, which sum to its metadata class (no start-up
# to take off: kernel audit stays off); the table's sub-table lists the
# run, its TOTAL per line its metadata class over the lines; `--load` prints the same
# sub-table; nothing is left behind.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ -x $AMP_ROOT/build/tests/append_writer ]] || fail "build/tests/append_writer missing: run make"

scratch=$AMP_TMP/scratch
mkdir "$scratch"
rc=0
"$AMPTRACE" compare -f btrfs -t append -w burst:10 --settle 2 --scratch "$scratch" \
    --json -v >"$AMP_TMP/compare.json" 2>"$AMP_TMP/compare.log" || rc=$?
((rc == 0)) || { tail -n 20 "$AMP_TMP/compare.log" >&2; fail "amptrace compare exited $rc"; }
python3 "$AMP_ROOT/tests/compare_checks.py" results "$AMP_TMP/compare.json" btrfs append burst:10
"$AMPTRACE" compare --load "$AMP_TMP/compare.json" >"$AMP_TMP/load.txt" 2>&1 ||
    fail "--load failed: $(tail -n 3 "$AMP_TMP/load.txt")"
sed -n '/^btrfs metadata by tree/,$p' "$AMP_TMP/load.txt"

python3 - "$AMP_TMP/compare.json" "$AMP_TMP/compare.log" "$AMP_TMP/load.txt" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rows = {r["target"]: r for r in doc["results"] if r["fs"] == "btrfs"}
assert sorted(rows) == ["append"], list(rows)
text = {p: open(p).read().splitlines() for p in sys.argv[2:]}
for target, r in rows.items():
    assert r["status"] == "ok", r
    t = r.get("btrfs_trees") or {}
    meta = r["classes"]["metadata"]
    assert r["startup_bytes"] == 0, f"{target}: a start-up was taken off: {r['startup_bytes']}"
    assert t and sum(t.values()) == meta > 0, f"{target}: btrfs_trees {t} sum != metadata {meta}"
    print(f"ok: {target}: trees {t} sum to its metadata class {meta}")
    total = f"{round(meta / r['lines']):,}"
    for path, lines in text.items():
        head = [i for i, l in enumerate(lines) if l.startswith("btrfs metadata by tree")]
        assert head, f"{path}: no btrfs sub-table"
        row = [l for l in lines[head[0]:] if l.split()[:3] == ["btrfs", target, "burst:10"]]
        assert row and row[0].split()[-1] == total, \
            f"{path}: {target}: sub-table row {row}, TOTAL should be {total}"
        print(f"ok: {path}: {target}'s sub-table row, TOTAL {total} B/line")
PY
python3 "$AMP_ROOT/tests/compare_checks.py" leftovers "$AMP_TMP/compare.log"
