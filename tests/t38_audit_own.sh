#!/usr/bin/env bash
# amptrace's own cost where kernel audit is on: journald 257 (Debian 13)
# with its default settings turns audit on, and then every BPF program
# amptrace loads is an audit record that journald stores.  One logger line
# on ext4, traced: what journald wrote for amptrace's start-up is charged to
# entries marked amptrace's own (never to the line's entry, never left as
# other), at least 90% of the device bytes are charged to entries, the rest
# is named (before_start, other), and the classes sum to the device counter
# as amptrace and as this test read it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

AMP_JOURNALD=257
use_journald
make_loopfs ext4 1024 "$JOURNAL_DIR"
start_journald     # journald 257's defaults: audit on
audit=$(python3 "$AMP_ROOT/tests/audit_state.py" get) || skip "cannot read the kernel's audit state"
[[ $audit == 1 ]] || skip "journald $JOURNALD_VERSION did not turn kernel audit on (state $audit): no CONFIG_AUDIT?"
ok "journald $JOURNALD_VERSION turned kernel audit on"

c0=$(devstat_written_bytes "$LOOPNAME")   # before: start_tracer writes the own pages out
start_tracer -c systemd-journal --dev "$LOOPNAME"
msg="amptrace audit test $$ $RANDOM"
journald_run logger -p info "$msg"
sleep 2
sync
sleep 1
c1=$(devstat_written_bytes "$LOOPNAME")
stop_tracer

python3 - "$TRACE_OUT" "$LOOPNAME" $((c1 - c0)) <<'PY'
import json, sys
path, dev, counter = sys.argv[1], sys.argv[2], int(sys.argv[3])
recs = [json.loads(l) for l in open(path)]
s = recs[-1]
entries = [r for r in recs if r["type"] == "entry"]
own = [e for e in entries if e["own"]]
users = [e for e in entries if not e["own"]]
bill = lambda es: sum(e["dev_bytes_total"] for e in es)
assert own and bill(own) > 0, f"no entry of amptrace's own with device bytes: {len(own)} entries"
print(f"ok: amptrace's own: {len(own)} entries, {bill(own)} device bytes "
      f"(journald storing the audit records of its program loads)")
line = [e for e in users if e["syscall"] == "recvmsg" and e["pages_dirtied"] > 0]
assert line, f"the logger line is not a user entry with pages: {[(e['syscall'], e['bytes'], e['own']) for e in entries]}"
print(f"ok: the logger line: {len(line)} user entry, {bill(line)} device bytes; users' entries in all: {bill(users)} B")
procs = s["processes"]
assert any(p["own"] for p in procs) and any(not p["own"] for p in procs), procs
own_row = sum(sum(p["dev_bytes"].values()) for p in procs if p["own"])
assert own_row == bill(own), f"own row {own_row} != own entries {bill(own)}"
print("ok: amptrace's own cost is a row of its own, apart from journald's")
d = [d for d in s["devices"] if d["name"] == dev][0]
c = d["classes"]
total = sum(c.values())
assert total == d["total"] == d["counter_bytes"] == counter, \
    f"classes {total}, amptrace's counter {d['counter_bytes']}, this test's {counter}"
print(f"ok: classes {c} sum to the device counter, {counter} B, as amptrace and this test read it")
assert bill(entries) == d["by_cause"] + d["by_window"], (bill(entries), d["by_cause"], d["by_window"])
assert d["charged_fraction"] >= 0.90, f"charged to entries {d['charged_fraction']:.1%} < 90%: {d}"
print(f"ok: {d['charged_fraction']:.1%} charged to entries ({d['cause_fraction']:.1%} by cause)")
rest = total - d["by_cause"] - d["by_window"]
assert rest == d["unattributed"] == c["other"] + c["before_start"], \
    f"unattributed {d['unattributed']} is not other {c['other']} + before_start {c['before_start']}"
print(f"ok: the rest, {rest} B, is named: before_start {c['before_start']}, other {c['other']}")
PY
