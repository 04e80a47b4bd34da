#!/usr/bin/env python3
"""Who pays behind a relay (t44): each rsyslog write entry's sender against
the lines it wrote.  The lines are tests/line_sender.py's: each says
"sender=PID comm=NAME seq=N", the ground truth of who sent it (the test
reads the file; amptrace reads no payload).

usage: relay_checks.py TRACE.json LOGFILE INO [--mixed NAME,...] [--first-any]
The write entries on file INO, in order, cover the file byte for byte;
each holds the lines its bytes overlap.  An entry whose lines all come
from one sender names that sender: pid and comm (also once it exited);
one whose lines come from several names "several" or one of them.
--mixed senders (two at once, no gap) are named by order only roughly: in
a burst, rsyslog's write of a batch takes the receive of the next batch's
first line too (bpf/relay.bpf.h), so an entry of their lines may name
either of them, or "several"; how many are exact is printed.  Every other
sender must be named exactly.  The per-sender rows of the summary
hold each sender's entries (its lines', and those of rsyslog's other
files its lines made it write), and add up to rsyslog's own row.
"""
import argparse
import collections
import re

from checks import fail, load_trace, ok

LINE = re.compile(rb"sender=(\d+) comm=(\S+) seq=\d+")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("logfile")
    ap.add_argument("ino", type=int)
    ap.add_argument("--mixed", default="")
    # The first write of a relay that started reading the journal mid-way
    # (a restart) holds the lines it read and filtered away before it too:
    # it must be relayed, by whom is not known.
    ap.add_argument("--first-any", action="store_true")
    a = ap.parse_args()
    mixed = set(filter(None, a.mixed.split(",")))
    entries, summary = load_trace(a.trace)
    data = open(a.logfile, "rb").read()
    lines, start = [], 0          # (first byte, end, pid, comm)
    for m in re.finditer(rb"[^\n]*\n", data):
        g = LINE.fullmatch(m.group()[:-1])
        if not g:
            fail(f"line at byte {m.start()} is not line_sender.py's: {m.group()[:80]!r}")
        lines.append((m.start(), m.end(), int(g.group(1)), g.group(2).decode()))
    writes = sorted((e for e in entries if e.get("file", {}).get("ino") == a.ino),
                    key=lambda e: e["id"])
    if sum(e["bytes"] for e in writes) != len(data):
        fail(f"{len(writes)} write entries of {sum(e['bytes'] for e in writes)} B, "
             f"the file has {len(data)} B")
    comm_of = {pid: comm for _, _, pid, comm in lines}
    tally = collections.Counter()
    named = collections.Counter()
    pos = 0
    for e in writes:
        end = pos + e["bytes"]
        held = [(pid, comm) for b, x, pid, comm in lines if b < end and x > pos]
        pos = end
        pids = {pid for pid, _ in held}
        s = e.get("sender")
        if not s or "relayed_receives" not in s:
            fail(f"entry {e['id']} ({e['bytes']} B, lines of {sorted(pids)}): "
                 f"no relayed sender: {s}")
        if a.first_any and e is writes[0] and s.get("pid") not in pids:
            tally["first, relayed"] += 1
            named["(several senders)" if s["how"] == "several" else s.get("comm")] += 1
            continue
        if s["how"] == "several":
            if len(pids) == 1 and not {comm_of[p] for p in pids} <= mixed:
                fail(f"entry {e['id']}: one sender's lines ({held[0][1]}), named 'several'")
            tally["several" if len(pids) > 1 else "several (one sender's lines)"] += 1
            named["(several senders)"] += 1
            continue
        if s.get("pid") not in pids:
            if not {comm_of[p] for p in pids} | {s.get("comm")} <= mixed:
                fail(f"entry {e['id']} ({e['bytes']} B): lines of {sorted(pids)}, sender {s}")
            tally["another mixed sender"] += 1
            named[s["comm"]] += 1
            continue
        if s.get("comm") != comm_of[s["pid"]] or s["how"] not in ("live", "exited"):
            fail(f"entry {e['id']}: sender pid {s['pid']} named {s.get('comm')} "
                 f"({s['how']}), its lines say {comm_of[s['pid']]}")
        if len(pids) > 1 and not {comm_of[p] for p in pids} <= mixed:
            fail(f"entry {e['id']}: lines of {sorted(pids)}, named {s['comm']} alone")
        tally["exact" if len(pids) == 1 else "one of its lines' senders"] += 1
        named[s["comm"]] += 1
    ok(f"{len(lines)} lines in {len(writes)} write entries: " +
       ", ".join(f"{n} {k}" for k, n in sorted(tally.items())))
    senders = sorted(set(comm_of.values()))
    exact = [c for c in senders if c not in mixed]
    ok(f"senders named exactly: {', '.join(exact)}; mixed: {', '.join(sorted(mixed)) or '-'}")
    # rsyslog's other files (imjournal's state file, written every 10
    # entries read) are named by the lines read since, too: the rows hold
    # them.
    others = [e for e in entries if "relayed_receives" in e.get("sender", {})
              and e.get("file", {}).get("ino") != a.ino]
    for e in others:
        s = e["sender"]
        named["(several senders)" if s["how"] == "several" else s.get("comm")] += 1
    if others:
        ok(f"{len(others)} write entries on rsyslog's other files named as well")
    rows = {r["sender"]: r for r in summary["senders"]}
    for label, n in named.items():
        if rows.get(label, {}).get("entries") != n:
            fail(f"summary: sender row {label}: {rows.get(label)}, want {n} entries")
    procs = [p for p in summary["processes"] if not p.get("own")]
    total = sum(sum(p["dev_bytes"].values()) for p in procs)
    by_rows = sum(r["dev_bytes_total"] for r in summary["senders"])
    if by_rows != total:
        fail(f"summary: the sender rows bill {by_rows} B, rsyslog's processes {total} B")
    print(f"{'sender':24} {'lines':>6} {'entries':>8} {'bytes':>7} {'device B':>9} {'IO share':>9}")
    for r in sorted(summary["senders"], key=lambda r: r["sender"]):
        nl = sum(1 for *_, c in lines if c == r["sender"])
        print(f"{r['sender']:24} {nl:6} {r['entries']:8} {r['bytes']:7} "
              f"{r['dev_bytes_total']:9} {r['io_share']:9.2f}")
    ok(f"the {len(rows)} sender rows bill {by_rows} B, as rsyslog's processes do")


if __name__ == "__main__":
    main()
