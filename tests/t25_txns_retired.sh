#!/usr/bin/env bash
# A long trace forgets the transactions whose entries have all come: the
# ledger kept every commit it saw for the whole trace (384 B each, and a
# linear lookup per entry), so a tracer on a busy journal grew for as long
# as it ran.  Now a committed transaction is retired once no entry of it
# can still come (1.1 x the settle timeout + a write-out window's 60 s +
# 10 s: 72 s with --settle-timeout 2 on ext4), what nobody claimed of it
# going by window.
#
# Ground truth: the synthetic writer on a loop ext4, one entry a second for
# 100 s, each a page written and fsynced (a jbd2 commit each, its page on
# the disk within the 2-s settle timeout): every page charged to the
# entry that dirtied it, the classes = /sys/block's counter, the entries'
# bills = by cause + by window, by cause >= 95 %; and under -v the ledger
# says it retired transactions.  A build that keeps them all fails.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
ENTRIES=100

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
start_tracer -v -c synth_writer --dev "$LOOPNAME" --settle-timeout 2
"$SYNTH_WRITER" -n "$ENTRIES" -w 1 -m 0 -s -g 1000 "$mnt" | cat >"$AMP_TMP/expect.json"
sync
stop_tracer

python3 "$AMP_ROOT/tests/checks.py" synth "$AMP_TMP/expect.json" "$TRACE_OUT" \
    "$LOOPNAME" "$(getconf PAGESIZE)"
line=$(grep -m1 '^amptrace: ledger: ' "$AMP_TMP/tracer.err") ||
    fail "no ledger line under -v (amptrace: ledger: ...)"
ok "${line#amptrace: }"
[[ $line =~ ([0-9]+)\ transactions\ kept,\ ([0-9]+)\ retired ]] || fail "unreadable: $line"
kept=${BASH_REMATCH[1]} retired=${BASH_REMATCH[2]}
# 100 s of commits, one a second or more, each kept 72 s and looked at every
# 10 s: those of the first 20 s at least are gone (18-30 seen here).
((retired >= ENTRIES / 10)) ||
    fail "$retired transactions retired of $((kept + retired)) seen in $ENTRIES s: kept for good?"
ok "$retired transactions retired, $kept kept at the end"
python3 - "$TRACE_OUT" "$LOOPNAME" <<'PY'
import os, sys
sys.path.insert(0, os.environ["AMP_ROOT"] + "/tests")
from checks import check_charges, ok, fail
d, _ = check_charges(sys.argv[1], sys.argv[2], "ext4 synth, 100 s", slack=0)
cf = d["cause_fraction"]
# t41's ext4 synth floor is 97 % (fs_cause.sh); fsyncs and the writer's
# gaps put more of the journal's covering by window.
if cf < 0.95:
    fail(f"{cf:.1%} by cause: retired transactions' shares went by window?")
ok(f"{cf:.1%} by cause ({d['by_cause']} B; by window {d['by_window']} B)")
PY
