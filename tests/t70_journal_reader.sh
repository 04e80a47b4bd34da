#!/usr/bin/env bash
# The journal reader (amptrace explain's views) on files the real journald
# wrote (AMP_JOURNALD: 252, the default, or 257), in both layouts: compact +
# keyed hash (Debian's default, 0x1c) and regular + Jenkins hash
# (SYSTEMD_JOURNAL_COMPACT=0 KEYED_HASH=0, 0x08).
#  - every entry that release's journalctl -o export shows, byte for byte
#    (--show-values),
#    including a zstd-compressed and a binary field;
#  - --check: every object, hash, bucket chain and entry item consistent;
#  - offsets: objects tile the file up to tail_object_offset, entry items
#    point at DATA objects of the right field, --range returns exactly the
#    objects overlapping a page;
#  - no payload without --show-values;
#  - cut and flipped copies: a one-line error naming the offset, never a
#    crash (exit 1, not a signal), including at the exact offset corrupted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

if [[ -z ${T70_LAYOUT:-} ]]; then
    # One process per layout: each gets its own loop fs, journald and cleanup.
    for layout in compact regular; do
        echo "== $layout layout"
        rc=0
        T70_LAYOUT=$layout bash "$0" || rc=$?
        ((rc == 77)) && skip "$layout: skipped"
        ((rc == 0)) || fail "$layout layout (exit $rc)"
    done
    exit 0
fi

case $T70_LAYOUT in
    compact) export SYSTEMD_JOURNAL_COMPACT=1 SYSTEMD_JOURNAL_KEYED_HASH=1; want_flags=28 ;;
    regular) export SYSTEMD_JOURNAL_COMPACT=0 SYSTEMD_JOURNAL_KEYED_HASH=0; want_flags=8 ;;
esac
use_journald
make_loopfs ext4 256 "$JOURNAL_DIR"
start_journald          # inherits the layout variables
unset SYSTEMD_JOURNAL_COMPACT SYSTEMD_JOURNAL_KEYED_HASH

marker="t70v$RANDOM$RANDOM"
for i in $(seq 1 12); do
    send_journal_entry "reader test $marker $i" "AMPX_SEQ=$i" "AMPX_CONST=same$marker" \
        "AMPX_MOD=$((i % 3))"
done
# > 512 bytes: stored zstd-compressed.  And a binary value (a newline and a
# control byte), which only the native protocol's length-prefixed form can
# carry and which journalctl exports in binary form.
send_journal_entry "long $marker $(printf 'x%.0s' $(seq 1 3000))" "AMPX_SEQ=big"
python3 - "$JOURNALD_SOCK" "$marker" <<'EOF'
import socket, struct, sys
sock, marker = sys.argv[1], sys.argv[2]
val = f"two\nlines\x01{marker}".encode()
msg = (f"MESSAGE=binary {marker}\nSYSLOG_IDENTIFIER=amptest\nAMPX_SEQ=bin\n".encode()
       + b"AMPX_BIN\n" + struct.pack("<Q", len(val)) + val + b"\n")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(msg, sock)
EOF
sleep 1
journald_run journalctl --sync >/dev/null 2>&1 || true
jf=$(journald_file)
# Stop journald so the file no longer changes under the comparisons.
kill -TERM "$JOURNALD_PID"
wait_for "! _alive $JOURNALD_PID" 10 || fail "journald did not stop"
ok "$T70_LAYOUT: journald wrote $jf"

A=$AMPTRACE
flags=$("$A" explain --header -j "$jf" | python3 -c 'import json,sys; print(json.load(sys.stdin)["incompatible_flags"])')
[[ $flags == "$want_flags" ]] || fail "incompatible_flags $flags, expected $want_flags"
ok "header: incompatible_flags $flags as expected for $T70_LAYOUT"

"$A" explain --check "$jf" >"$AMP_TMP/check" || fail "--check failed on journald's own file"
grep -q ' 1 compressed\| [2-9] compressed' "$AMP_TMP/check" || fail "no compressed DATA seen: $(cat "$AMP_TMP/check")"
ok "$(cat "$AMP_TMP/check")"

# Every entry, as journalctl exports it, byte for byte.
journald_run journalctl --file "$(journal_path "$jf")" -o export >"$AMP_TMP/ref.export"
"$A" explain --entries --show-values "$jf" >"$AMP_TMP/mine.export"
cmp "$AMP_TMP/ref.export" "$AMP_TMP/mine.export" || { diff "$AMP_TMP/ref.export" "$AMP_TMP/mine.export" | head -n 20 | cat -v >&2; false; } ||
    fail "export differs from journalctl's (diff $AMP_TMP/ref.export $AMP_TMP/mine.export)"
n=$(grep -c '^__CURSOR=' "$AMP_TMP/ref.export")
sent=$(grep -ac "^MESSAGE=.*$marker" "$AMP_TMP/mine.export")
((sent == 14)) || fail "found $sent of the 14 entries sent"
grep -aq '^AMPX_BIN$' "$AMP_TMP/mine.export" || fail "binary field not exported in binary form"
ok "all $n entries identical to journalctl -o export ($(stat -c %s "$AMP_TMP/ref.export") bytes), our 14 among them"

# Without --show-values: names and sizes, never the values.
"$A" explain --entries "$jf" >"$AMP_TMP/names"
"$A" explain --objects "$jf" >"$AMP_TMP/objects.txt"
"$A" explain --objects -j "$jf" >"$AMP_TMP/objects.json"
"$A" explain --entries -j "$jf" >"$AMP_TMP/entries.json"
if grep -aq "$marker" "$AMP_TMP/names" "$AMP_TMP/objects.txt" "$AMP_TMP/objects.json" "$AMP_TMP/entries.json"; then
    fail "a value was printed without --show-values"
fi
grep -q '^AMPX_SEQ: 2 bytes$' "$AMP_TMP/names" || fail "field sizes missing from --entries"
"$A" explain --entries -j --show-values "$jf" >"$AMP_TMP/entries_values.json"
grep -q "$marker" "$AMP_TMP/entries_values.json" || fail "--show-values printed no value"
ok "no payload printed without --show-values; --show-values prints them"

# Offsets: the object list tiles the file, entry items point at the right
# DATA objects, and --range returns exactly the objects on a page.
python3 - "$AMP_TMP" "$jf" "$A" "$marker" <<'EOF'
import json, subprocess, sys
tmp, jf, amptrace, marker = sys.argv[1:5]
def fail(m): print("FAIL:", m, file=sys.stderr); sys.exit(1)
hdr = json.loads(subprocess.check_output([amptrace, "explain", "--header", "-j", jf]))
objs = [json.loads(l) for l in open(f"{tmp}/objects.json")]
if len(objs) != hdr["n_objects"]:
    fail(f"{len(objs)} objects listed, header says {hdr['n_objects']}")
off = hdr["header_size"]
for o in objs:
    if o["offset"] != off:
        fail(f"object at {o['offset']}, expected {off}")
    off = o["offset"] + ((o["size"] + 7) & ~7)
if objs[-1]["offset"] != hdr["tail_object_offset"]:
    fail("last object is not the tail object")
by_off = {o["offset"]: o for o in objs}
print(f"ok: {len(objs)} objects tile [{hdr['header_size']}, tail {hdr['tail_object_offset']}]")
entries = [json.loads(l) for l in open(f"{tmp}/entries_values.json")]
if len(entries) != hdr["n_entries"]:
    fail(f"{len(entries)} entries, header says {hdr['n_entries']}")
items = 0
for e in entries:
    if by_off.get(e["offset"], {}).get("type") != "ENTRY":
        fail(f"entry offset {e['offset']} is not an ENTRY object")
    for f in e["fields"]:
        d = by_off.get(f["data"])
        if not d or d["type"] != "DATA" or d["owner"] != f["name"]:
            fail(f"entry {e['seqnum']}: field {f['name']} -> {d}")
        items += 1
print(f"ok: {len(entries)} entries, {items} items: each an ENTRY object whose items are "
      "DATA objects of the right field")
mine = [e for e in entries if any(f["name"] == "MESSAGE" and marker in str(f.get("value"))
                                  for f in e["fields"])]
seqs = sorted(next(f["value"] for f in e["fields"] if f["name"] == "AMPX_SEQ") for e in mine)
if len(mine) != 14:
    fail(f"found {len(mine)} of our 14 entries by value")
new = {next(f["value"] for f in e["fields"] if f["name"] == "AMPX_SEQ"):
       {f["name"]: f["new"] for f in e["fields"]} for e in mine}
if not (new["1"]["AMPX_CONST"] and not new["5"]["AMPX_CONST"] and new["5"]["AMPX_SEQ"]
        and not new["5"]["AMPX_MOD"]):
    fail(f"new/repeated values wrong: {new['1']} / {new['5']}")
print("ok: AMPX_SEQ new in every entry, AMPX_CONST and AMPX_MOD reused after their first")
known = next(e for e in mine if any(f["name"] == "AMPX_SEQ" and f["value"] == "7" for f in e["fields"]))
for page in {known["offset"] // 4096, known["fields"][0]["data"] // 4096}:
    a, b = page * 4096, page * 4096 + 4096
    got = [json.loads(l) for l in subprocess.check_output(
        [amptrace, "explain", "--range", f"{a}-{b}", "-j", jf]).decode().splitlines()]
    want = [o for o in objs if o["offset"] < b and o["offset"] + o["size"] > a]
    key = lambda o: (o["offset"], o["type"], o["size"], o["owner"])
    if [key(o) for o in got if o["type"] != "HEADER"] != [key(o) for o in want]:
        fail(f"--range page {page}: {[key(o) for o in got]} != {[key(o) for o in want]}")
    print(f"ok: --range of page {page}: the {len(want)} objects the walk puts there")
EOF

# Cut and flipped copies.
python3 - "$AMP_TMP" "$jf" "$A" <<'EOF'
import json, os, random, re, struct, subprocess, sys
tmp, jf, amptrace = sys.argv[1:4]
def fail(m): print("FAIL:", m, file=sys.stderr); sys.exit(1)
orig = open(jf, "rb").read()
hdr = json.loads(subprocess.check_output([amptrace, "explain", "--header", "-j", jf]))
objs = [json.loads(l) for l in open(f"{tmp}/objects.json")]
hs, tail = hdr["header_size"], hdr["tail_object_offset"]
first = lambda t: next(o for o in objs if o["type"] == t)
entry = [o for o in objs if o["type"] == "ENTRY"][len([o for o in objs if o["type"] == "ENTRY"]) // 2]
data = [o for o in objs if o["type"] == "DATA"][10]
array = first("ENTRY_ARRAY")
line_re = re.compile(r"^amptrace: \S+: .* at offset (\d+) \(0x[0-9a-f]+\)$")

def run(buf, args=("--check",)):
    path = f"{tmp}/bad.journal"
    open(path, "wb").write(buf)
    p = subprocess.run([amptrace, "explain", *args, path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    err = p.stderr.decode(errors="replace").strip()
    if p.returncode not in (0, 1):
        fail(f"exit {p.returncode} (crash?) on {args}: {err}")
    return p.returncode, err

def patch(off, b):
    buf = bytearray(orig)
    buf[off:off + len(b)] = b
    return bytes(buf)

cases = [
    ("cut inside the header", orig[:100], 100),
    ("cut inside the field hash table", orig[:hs + 100], None),
    ("cut inside the tail object", orig[:tail + 4], None),
    ("cut in the middle of the objects", orig[:entry["offset"] + 20], None),
    ("bad signature", patch(0, b"X"), 0),
    ("header_size 7", patch(88, struct.pack("<Q", 7)), 88),
    ("unknown incompatible flag", patch(12, struct.pack("<I", hdr["incompatible_flags"] | 0x80)), 12),
    ("tail_object_offset past the end", patch(136, struct.pack("<Q", len(orig) + 4096)), 136),
    ("DATA object type byte", patch(data["offset"], b"\x09"), data["offset"]),
    ("DATA object size huge", patch(data["offset"] + 8, struct.pack("<Q", 1 << 50)), data["offset"]),
    ("DATA object hash", patch(data["offset"] + 16, bytes([orig[data["offset"] + 16] ^ 1])), data["offset"]),
    ("ENTRY item misaligned", patch(entry["offset"] + 64, b"\x03"), None),
    ("ENTRY_ARRAY chain loops back", patch(array["offset"] + 16, struct.pack("<Q", array["offset"])), None),
]
for name, buf, want_off in cases:
    rc, err = run(buf)
    m = line_re.match(err)
    if rc != 1 or not m or "\n" in err:
        fail(f"{name}: exit {rc}, stderr {err!r}: expected one 'amptrace: FILE: ... at offset N' line")
    if want_off is not None and int(m.group(1)) != want_off:
        fail(f"{name}: error names offset {m.group(1)}, expected {want_off}: {err}")
    print(f"ok: {name}: {err.split(': ', 2)[2]}")

# Random damage: 300 copies with 1-8 flipped bytes, read every way.
rnd = random.Random(7070)
errors = 0
for i in range(300):
    buf = bytearray(orig[:tail + 4096] if rnd.random() < 0.5 else orig)
    for _ in range(rnd.randint(1, 8)):
        # aim at the object area mostly; the zero tail of the file is dull
        off = rnd.randrange(0, min(len(buf), tail + 512))
        buf[off] ^= 1 << rnd.randrange(8)
    for args in (("--check",), ("--entries", "--show-values"), ("--objects",)):
        rc, err = run(bytes(buf), args)
        if rc == 1:
            errors += 1
            if not line_re.match(err) and "only zstd" not in err:
                fail(f"random copy {i} {args}: unclear error {err!r}")
print(f"ok: 300 randomly flipped copies read 3 ways: {errors} clear errors naming an offset, no crash")
EOF
