#!/usr/bin/env bash
# amptrace report --svg/--html: the scatter map of a recorded synthetic-writer
# run.  The SVG is well-formed and self-contained, has one mark per dirtied
# folio in the band of its file, and an appending writer draws a rising line
# (page offset grows with entry sequence); headless Chromium renders both the
# SVG and the HTML page to a screenshot that is not blank and shows the data
# colour.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n $chromium ]] || skip "chromium not installed (Debian package chromium)"

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
sync; _wait_quiet "$mnt" 3 15

# A private copy of the writer under a name of its own, so that another
# test's synth_writer running meanwhile is not traced (-c) as ours.
writer=synth_$$
cp "$SYNTH_WRITER" "$AMP_TMP/$writer"

rec=$AMP_TMP/run.amp
"$AMPTRACE" record -o "$rec" -c "$writer" --dev "$LOOPNAME" >/dev/null 2>"$AMP_TMP/record.err" &
recorder=$!
at_exit _kill_wait "$recorder" amptrace
wait_for "grep -qs 'tracing (' $AMP_TMP/record.err || ! _alive $recorder" 30 || fail "recorder did not start"
"$AMP_TMP/$writer" -n 12 -w 2 -m 3 "$mnt" | cat >/dev/null
sync
# An entry is recorded once its write-out window closes: 6 s after its
# disk went quiet, 60 s at most (ledger.c).  CI once saw fewer than 12
# after 30 s, while other tests ran on the host.
wait_for "[[ \$($AMPTRACE report --info $rec 2>/dev/null | sed -n 's/^entries: *//p') == 12 ]]" 75 ||
    fail "record has $($AMPTRACE report --info "$rec" 2>/dev/null | sed -n 's/^entries: *//p') of the writer's 12 entries after 75 s"
kill -INT "$recorder"
wait_for "! _alive $recorder" 30 || fail "recorder ignored SIGINT"

svg=$AMP_TMP/map.svg html=$AMP_TMP/map.html
"$AMPTRACE" report "$rec" --svg "$svg" --html "$html" 2>"$AMP_TMP/draw.err" ||
    fail "report --svg failed: $(cat "$AMP_TMP/draw.err")"
ok "$(cat "$AMP_TMP/draw.err")"
if grep -nE '<script|<image|<img|<link|href=|url\(|@import' "$svg" "$html"; then
    fail "the picture refers to something outside itself"
fi

python3 - "$svg" "$mnt" <<'PY'
import sys
import xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
# Bands are labelled by the files' full paths (the writer is gone by then).
W, M = f"{sys.argv[2]}/synth-write.dat", f"{sys.argv[2]}/synth-mmap.dat"
texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
for name in (W, M):
    assert name in texts, f"no band labelled {name}: {texts}"
bands = {}   # label -> (top, bottom) of its band rect, from the label just above it
rects = [r for r in root.iter("{http://www.w3.org/2000/svg}rect")]
for t in root.iter("{http://www.w3.org/2000/svg}text"):
    if t.text in (W, M):
        y = float(t.get("y"))
        band = min((r for r in rects if r.get("fill") == "#f4f5f7" and float(r.get("y")) > y),
                   key=lambda r: float(r.get("y")))
        bands[t.text] = (float(band.get("y")), float(band.get("y")) + float(band.get("height")))
data = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("fill") == "#3b73b9"][0]
marks = [(float(r.get("x")), float(r.get("y"))) for r in data]
def in_band(name):
    top, bottom = bands[name]
    return sorted((x, y) for x, y in marks if top <= y < bottom)
w, m = in_band(W), in_band(M)
# 12 entries: 12 two-page folios of synth-write.dat, 36 one-page folios of synth-mmap.dat,
# plus one bar per entry in the device-bytes strip below.
assert len(w) == 12 and len(m) == 36, f"marks: {len(w)} in synth-write.dat, {len(m)} in synth-mmap.dat"
ys = [y for _, y in w]
assert all(b < a for a, b in zip(ys, ys[1:])), f"appending writer does not draw a rising line: {w}"
xs = sorted({x for x, _ in m})
assert len(xs) == 12, f"mmap marks in {len(xs)} columns, want 12"
print(f"ok: {len(w)} + {len(m)} folio marks in their files' bands; synth-write.dat rises "
      f"monotonically from y={ys[0]:.0f} to y={ys[-1]:.0f}")
PY

shoot() {   # URL PNG
    local prof
    prof=$(mktemp -d "$AMP_TMP/chrome.XXXXXX")
    HOME=$prof timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --hide-scrollbars --user-data-dir="$prof/profile" \
        --window-size=1200,900 --screenshot="$2" "$1" >"$AMP_TMP/chromium.log" 2>&1 ||
        { tail -n 5 "$AMP_TMP/chromium.log" >&2; fail "chromium --screenshot $1 failed"; }
    [[ -s $2 ]] || fail "chromium wrote no screenshot for $1"
}
shoot "file://$svg" "$AMP_TMP/svg.png"
shoot "file://$html" "$AMP_TMP/html.png"
# The data colour (marks and bars) must be drawn, not just declared.
python3 "$AMP_ROOT/tests/compare_checks.py" png "$AMP_TMP/svg.png" '#3b73b9'
python3 "$AMP_ROOT/tests/compare_checks.py" png "$AMP_TMP/html.png" '#3b73b9'
