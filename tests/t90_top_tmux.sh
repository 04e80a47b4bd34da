#!/usr/bin/env bash
# amptrace top:
#  1. on a terminal (tmux, a private server): the screen shows the device,
#     then the synthetic writer's row with its 8 entries and non-zero rates, and its
#     files; `s` changes the sort key, `b` the grouping (the writer's
#     comm, its unit: its cgroup's), `q` quits;
#  0. bad arguments: one line, exit 1;
#  2. not a terminal: time-stamped plain lines per interval, no escape
#     codes, stops by itself after COUNT intervals; the rates of the
#     synthetic writer's row add up to what it logged.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
command -v tmux >/dev/null || skip "tmux not installed"

bad "$AMPTRACE" top -s size
bad "$AMPTRACE" top 0
bad "$AMPTRACE" top 1 0
bad "$AMPTRACE" top 1 2 3
bad "$AMPTRACE" top -j
bad "$AMPTRACE" top --by size
bad "$AMPTRACE" trace --by unit

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
sync; _wait_quiet "$mnt" 3 15

# A private copy of the writer under a name of its own, so that another
# test's synth_writer running meanwhile is not traced (-c) as ours.
writer=synth_$$
cp "$SYNTH_WRITER" "$AMP_TMP/$writer"

# ---- 1. full screen in tmux -------------------------------------------------
sock=amptest-top-$$
tm() { tmux -L "$sock" "$@"; }
tm_cleanup() { tmux -L "$sock" kill-server 2>/dev/null || true; }   # gone once top quit
at_exit tm_cleanup
tm -f /dev/null new-session -d -s top -x 200 -y 50 \
    "TERM=xterm-256color $AMPTRACE top -c $writer --dev $LOOPNAME 1 2>$AMP_TMP/top.err"
pane() { tm capture-pane -p -t top 2>/dev/null; }
wait_for "pane | grep -q '^DEVICE'" 30 || fail "top did not draw: $(pane) $(cat "$AMP_TMP/top.err")"
pane | grep -q '^amptrace top .*every 1.0 s *by: pid *sort: dev' || fail "no title line: $(pane)"
ok "top draws: $(pane | head -n 1)"

"$AMP_TMP/$writer" -n 8 -w 2 -m 3 "$mnt" | cat >/dev/null
sync
# The entries' row shows up once their bill is complete (write-out + window,
# ~6 s); its rates are non-zero for exactly one interval: watch for it.
row_ok() {
    pane >"$AMP_TMP/screen"
    # PID COMM ENTRIES ENT/s LOG_B/s PAGES/s DATA/s META/s JRNL/s WIN/s DEV_B/s IOS/s AMP
    awk -v w="$writer" '$2 == w && $3 == 8 && $4 + 0 > 0 && $5 != "0" && $6 + 0 > 0 &&
         $7 != "0" && $11 != "0" && $12 + 0 > 0 { found = 1 } END { exit !found }' "$AMP_TMP/screen"
}
wait_for row_ok 40 || fail "no $writer row with 8 entries and non-zero rates: $(pane)"
ok "writer's row: $(grep "$writer" "$AMP_TMP/screen")"
# Files by their full paths, shown as top shows a long one: its end.
for f in synth-write.dat synth-mmap.dat; do
    p=$mnt/$f
    ((${#p} <= 23)) || p=..${p: -21}
    awk -v p="$p " 'index($0, p) == 1 { found = 1 } END { exit !found }' "$AMP_TMP/screen" ||
        fail "no per-file row '$p' for $mnt/$f"
done
grep -q "^$LOOPNAME " "$AMP_TMP/screen" || fail "no device row for $LOOPNAME"
ok "file rows: $(grep -c 'synth-[a-z]*\.dat ' "$AMP_TMP/screen"), device row for $LOOPNAME"
# Once the interval has passed, the row stays (totals) with zero rates.
wait_for "pane | awk '\$2 == \"$writer\" && \$3 == 8 && \$4 == \"0\" {f=1} END {exit !f}'" 5 ||
    fail "row did not fall back to zero rates: $(pane)"
ok "next interval: totals stay, rates back to 0"

tm send-keys -t top s
wait_for "pane | grep -q 'sort: entries'" 5 || fail "'s' did not change the sort key: $(pane | head -n 1)"
ok "key s: sort by entries"
# b: by comm (the same row, no pid), then by unit (the writer's cgroup's,
# /proc/PID/cgroup: none here, so its comm), then by file only.
tm send-keys -t top b
wait_for "pane | grep -q 'by: comm'" 5 || fail "'b' did not change the grouping: $(pane | head -n 1)"
pane | awk -v w="$writer" '$1 == "-" && $2 == w && $3 == 8 {f=1} END {exit !f}' ||
    fail "no comm row for $writer with 8 entries: $(pane)"
ok "key b: by comm: $(pane | grep -m 1 " $writer ")"
tm send-keys -t top b
wait_for "pane | grep -q 'by: unit'" 5 || fail "'b' did not change to unit: $(pane | head -n 1)"
unit=$(awk -F'::' '/^0::/ {print $2}' /proc/self/cgroup)
pane | grep -q '^UNIT ' || fail "no UNIT header: $(pane)"
ok "key b: by unit (this shell's cgroup: ${unit:-none}): $(pane | grep -A 1 '^UNIT ' | tail -n 1)"
tm send-keys -t top b
wait_for "pane | grep -q 'by: file'" 5 || fail "'b' did not change to file: $(pane | head -n 1)"
pane | grep -q '^UNIT \|^PID ' && fail "by file: a sender table is still shown: $(pane)"
ok "key b: by file: the files' table only"
tm send-keys -t top q
wait_for "! tm has-session -t top 2>/dev/null" 10 || fail "'q' did not quit top"
ok "key q: top exited"

# ---- 2. plain lines --------------------------------------------------------
"$AMPTRACE" top -c "$writer" --dev "$LOOPNAME" 1 14 >"$AMP_TMP/lines" 2>"$AMP_TMP/lines.err" &
top_pid=$!
at_exit _kill_wait "$top_pid" "amptrace top"
wait_for "grep -qs 'tracing (' $AMP_TMP/lines.err || ! _alive $top_pid" 30 || fail "top (lines) did not start"
"$AMP_TMP/$writer" -n 8 -w 2 -m 3 "$mnt" | cat >/dev/null
sync
wait_for "! _alive $top_pid" 40 || fail "top 1 14 did not stop after 14 intervals"
rc=0; wait "$top_pid" || rc=$?
((rc == 0)) || fail "top (lines) exited $rc: $(cat "$AMP_TMP/lines.err")"
if grep -q $'\033' "$AMP_TMP/lines"; then fail "escape codes in non-terminal output"; fi
n=$(grep -c '^[0-9][0-9]:[0-9][0-9]:[0-9][0-9] DEVICE' "$AMP_TMP/lines")
((n == 14)) || fail "$n intervals printed, want 14"
python3 - "$AMP_TMP/lines" "$writer" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.split()[2:3] == [sys.argv[2]]]
assert rows, "no line for the writer"
# TIME PID COMM ENTRIES ENT/s LOG_B/s PAGES/s ...: intervals are ~1 s, so the
# rates over all lines add up to the 8 entries, 8 x 8192 logged bytes, 40 pages.
assert int(rows[-1][3]) == 8, rows[-1]
for col, what, want in ((4, "entries", 8), (5, "logged bytes", 65536), (6, "pages", 40)):
    got = sum(float(r[col]) for r in rows)
    assert 0.8 * want <= got <= 1.2 * want, f"{what}/s add up to {got}, want ~{want}: {rows}"
print(f"ok: {len(rows)} active line(s), e.g. {' '.join(rows[0])}")
PY
ok "plain lines: $n intervals, time-stamped, no escape codes"
