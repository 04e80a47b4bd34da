#!/usr/bin/env bash
# amptrace compare --html: a short real compare renders a self-contained page
# (no scripts, no external assets) that headless Chromium draws: its
# screenshot is not blank and shows the bar colours of the charts.  The same
# page comes back from the saved --json (--load).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ -x /lib/systemd/systemd-journald ]] || skip "no /lib/systemd/systemd-journald"
[[ -x $AMP_ROOT/build/tests/append_writer ]] || fail "build/tests/append_writer missing: run make"

chromium=$(command -v chromium || true)
if [[ -z $chromium ]]; then
    _log "chromium missing; installing the Debian package"
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends \
        chromium >"$AMP_TMP/apt.log" 2>&1 || skip "chromium cannot be installed: $(tail -n 1 "$AMP_TMP/apt.log")"
    chromium=$(command -v chromium) || skip "chromium cannot be installed"
fi

scratch=$AMP_TMP/scratch
mkdir "$scratch"
page=$AMP_TMP/compare.html
rc=0
"$AMPTRACE" compare -f ext4 -t journald,append -w burst:10 --settle 3 --scratch "$scratch" \
    --json --html "$page" -v >"$AMP_TMP/compare.json" 2>"$AMP_TMP/compare.log" || rc=$?
((rc == 0)) || { tail -n 20 "$AMP_TMP/compare.log" >&2; fail "amptrace compare exited $rc"; }
python3 "$AMP_ROOT/tests/compare_checks.py" leftovers "$AMP_TMP/compare.log"

[[ -s $page ]] || fail "no $page"
# Self-contained: nothing to fetch (the SVG namespace is a name, not a fetch).
if grep -nE '<script|<link|<img|<iframe|src=|href=|url\(|@import' "$page"; then
    fail "$page refers to something outside itself"
fi
n=$(grep -c '<svg' "$page")
((n >= 2)) || fail "$page has $n charts, expected >= 2"
ok "$page: $(wc -c <"$page") bytes, $n inline SVG charts, no external references"

"$AMPTRACE" compare --load "$AMP_TMP/compare.json" --html "$AMP_TMP/again.html" >/dev/null 2>&1 ||
    fail "--load could not render the saved JSON"
cmp -s "$page" "$AMP_TMP/again.html" || fail "--load rendered a different page"
ok "--load renders the same page from the saved JSON"

shot=$AMP_TMP/shot.png
mkdir "$AMP_TMP/chrome-home"
HOME=$AMP_TMP/chrome-home timeout 120 "$chromium" --headless --no-sandbox --disable-gpu \
    --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --hide-scrollbars \
    --user-data-dir="$AMP_TMP/chrome-profile" --window-size=1280,1400 \
    --screenshot="$shot" "file://$page" >"$AMP_TMP/chromium.log" 2>&1 ||
    { tail -n 5 "$AMP_TMP/chromium.log" >&2; fail "chromium --screenshot failed"; }
[[ -s $shot ]] || fail "chromium wrote no screenshot"
# The data (blue) and fs-journal (orange) classes are on every ext4 bar.
python3 "$AMP_ROOT/tests/compare_checks.py" png "$shot" '#3b73b9' '#e8833a'
