#!/usr/bin/env bash
# amptrace explain on every filesystem: the real journald 252 traced on
# ext4, xfs, btrfs and btrfs with chattr +C (NOCOW journal files), then
# `amptrace explain`.  On each:
#  - the trace names the journal file by its full path and its st_dev
#    (on btrfs, the subvolume's device, not the superblock's), per entry
#    and in the summary;
#  - every journal page the traced entries dirtied lands on explain's field
#    and structure rows (they sum to those pages), none in "(other files)"
#    or "(unexplained)", and the field rows carry device bytes;
#  - on btrfs, the entries' btrfs_trees sum to their metadata, and explain
#    shows it on "(btrfs ... tree)" rows, none on "(fs metadata)".
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ -x /lib/systemd/systemd-journald ]] || skip "no /lib/systemd/systemd-journald"

if [[ -z ${T73_FS:-} ]]; then
    for fs in ext4 xfs btrfs btrfsC; do
        echo "== $fs"
        rc=0
        T73_FS=$fs bash "$0" || rc=$?
        ((rc == 77)) && skip "$fs: skipped"
        ((rc == 0)) || fail "$fs (exit $rc)"
    done
    exit 0
fi

use_journald
make_loopfs "$T73_FS" 320 "$JOURNAL_DIR"   # xfs needs >= 300 MB
start_journald
jf=$(journald_file)
attrs=$(lsattr "$jf" 2>/dev/null | cut -d' ' -f1) || attrs='-'
case $T73_FS in
    btrfsC) [[ $attrs == *C* ]] || fail "btrfs +C: $jf has attributes $attrs, no C" ;;
esac
_log "$T73_FS: $jf, st_dev $(stat -c '%Hd:%Ld' "$jf"), attributes $attrs"

marker="t73v$RANDOM$RANDOM"
start_tracer -c systemd-journal --dev "$LOOPNAME"
for i in 1 2 3 4; do
    # Written back first: each append finds its pages clean and pays.
    sync
    sleep 0.5
    send_journal_entry "explain fs test $marker $i" "AMPX_SEQ=$i" "AMPX_CONST=same$marker"
    sleep 0.3
done
sleep 2
sync
sleep 1
stop_tracer
kill -TERM "$JOURNALD_PID"
wait_for "! _alive $JOURNALD_PID" 10 || fail "journald did not stop"

"$AMPTRACE" explain -j -t "$TRACE_OUT" "$jf" >"$AMP_TMP/explain.json" || fail "explain -j failed"
"$AMPTRACE" explain -t "$TRACE_OUT" "$jf" | sed -n '/^Per field/,$p'

python3 - "$TRACE_OUT" "$AMP_TMP/explain.json" "$jf" "$(stat -c '%Hd:%Ld %i' "$jf")" "$T73_FS" <<'EOF'
import json, sys
trace, explain, jf, stat, fs = sys.argv[1:6]
dev, ino = stat.split()[0], int(stat.split()[1])
def fail(m): print(f"FAIL: {fs}: {m}", file=sys.stderr); sys.exit(1)
def ok(m): print(f"ok: {fs}: {m}")

lines = [json.loads(l) for l in open(trace)]
entries = [l for l in lines if l["type"] == "entry"]
summary = next(l for l in lines if l["type"] == "summary")
files = [f for f in summary["files"] if f["ino"] == ino and f["dev"] == dev]
if len(files) != 1:
    fail(f"summary lists {[(f['dev'], f['ino'], f['path']) for f in summary['files']]}, "
         f"not the journal file {dev} {ino} once")
if files[0]["path"] != jf:
    fail(f"summary names the journal file {files[0]['path']!r}, not {jf!r}")
runs = [r for e in entries for r in e["scatter"] if r["kind"] == "data"]
jruns = [r for r in runs if r["ino"] == ino and r["dev"] == dev]
others = [(r["dev"], r["ino"], r["path"]) for r in runs if r not in jruns]
if not jruns:
    fail(f"no journal page charged to any entry (data pages of {sorted(set(others))})")
if others:
    fail(f"data pages of other files than the journal charged: {sorted(set(others))}")
bad = {r["path"] for r in jruns if r["path"] != jf}
if bad:
    fail(f"entries name the journal file {bad}, not {jf!r}")
jpages = sum(r["npages"] for r in jruns)
ok(f"the trace names {jf} ({dev}) in the summary and in {len(jruns)} scatter runs "
   f"({jpages} pages)")

ex = [json.loads(l) for l in open(explain)]
summ = next(l for l in ex if l["type"] == "explain_summary")
rows = {r["owner"]: r for r in summ["fields"]}
not_journal = ("(other files)", "(unexplained)", "(not in scatter list)", "(fs metadata)",
               "(fs journal)", "(write-out window)")
for name in ("(other files)", "(unexplained)", "(not in scatter list)"):
    if name in rows and (rows[name]["pages"] > 0 or rows[name]["dev_bytes"] > 0):
        fail(f"{rows[name]['pages']} pages, {rows[name]['dev_bytes']} device bytes in {name}")
on_rows = sum(r["pages"] for n, r in rows.items() if n not in not_journal)
if abs(on_rows - jpages) > 0.01 * max(1, len(entries)):
    fail(f"field and structure rows hold {on_rows:.2f} pages, the journal's dirtied pages are {jpages}")
fields = {n: r for n, r in rows.items() if not n.startswith("(")}
paid = [n for n, r in fields.items() if r["pages"] > 0 and r["dev_bytes"] > 0]
if not paid:
    fail(f"no field row with pages and device bytes: {fields}")
if summ["journal_entries"] < 4:
    fail(f"explain matched {summ['journal_entries']} journal entries, the test sent 4")
ok(f"{jpages} journal pages on field and structure rows ({on_rows:.2f}), none in other files; "
   f"fields with device bytes: {', '.join(sorted(paid))}; "
   f"{summ['journal_entries']} journal entries matched")
if fs.startswith("btrfs"):
    # btrfs metadata by tree: the entries' btrfs_trees are all their
    # metadata (only btrfs is traced), and explain shows them as
    # (btrfs ... tree) rows, leaving nothing in (fs metadata).
    trees = sum(sum(e.get("btrfs_trees", {}).values()) for e in entries)
    meta = sum(e["dev_bytes"]["metadata"] for e in entries)
    if trees != meta or not trees:
        fail(f"entries' btrfs_trees sum to {trees}, their metadata is {meta}")
    brows = {n: r["dev_bytes"] for n, r in rows.items() if n.startswith("(btrfs ")}
    on_trees = sum(brows.values())
    if not on_trees or on_trees > trees + 1:
        fail(f"btrfs rows {brows} hold {on_trees:.0f} B, the entries' trees {trees}")
    fsm = rows.get("(fs metadata)", {}).get("dev_bytes", 0)
    if fsm > 0.5:
        fail(f"(fs metadata) holds {fsm} B on btrfs, beside the tree rows {brows}")
    ok(f"entries' btrfs trees = their metadata ({meta} B); explain rows {brows}")
EOF
