#!/usr/bin/env python3
"""Who pays (t31, t97): each journald entry's sender (amptrace trace -j)
against the journal's own fields for the same records (journalctl -o
export).

usage: sender_checks.py TRACE.json EXPORT [--tag TAG] [--kmsg] [--metrics PROM]
                        [--units U1,U2,...]
The test's senders log MESSAGE="amptest UNIT N [TAG]" from that unit's
cgroup (a word without a dot: the unit amptest-WORD.service); --tag: only
the lines that end with TAG count; --kmsg: "amptest kernel N TAG" lines
written to /dev/kmsg are the kernel's.  --units: units that must have
sent lines.
"""
import argparse
import collections
import sys

from checks import fail, load_trace, ok

RECEIVES = {"recvmsg", "recvfrom", "recvmmsg", "read", "readv"}


def read_export(path):
    """Journal entries as dicts of their text fields."""
    entries, cur = [], {}
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        line = data[pos:nl]
        pos = nl + 1
        if not line:
            if cur:
                entries.append(cur)
            cur = {}
            continue
        if b"=" in line:
            k, v = line.split(b"=", 1)
            cur[k.decode()] = v.decode(errors="replace")
        else:   # binary field: name, then a 64-bit little-endian size
            size = int.from_bytes(data[pos:pos + 8], "little")
            cur[line.decode()] = data[pos + 8:pos + 8 + size].decode(errors="replace")
            pos += 8 + size + 1
    if cur:
        entries.append(cur)
    return entries


def check_metrics(prom, rows, cap):
    """The textfile's per-sender counters: at most cap labels and "other",
    summing to the summary's rows."""
    got, share = collections.Counter(), 0.0
    for line in open(prom):
        if line.startswith("amptrace_sender_entries_total{"):
            label = line.split('sender="', 1)[1].split('"}', 1)[0]
            got[label] += int(line.rsplit(None, 1)[1])
        elif line.startswith("amptrace_sender_io_share_total{"):
            share += float(line.rsplit(None, 1)[1])
    want = collections.Counter({r["sender"]: r["entries"] for r in rows})
    named = [k for k in got if k != "other"]
    if len(named) > cap or (len(want) > cap and "other" not in got):
        fail(f"metrics: {len(named)} sender labels and other={got.get('other')}, cap {cap}: {dict(got)}")
    if sum(got.values()) != sum(want.values()):
        fail(f"metrics: sender entries sum to {sum(got.values())}, the summary's to "
             f"{sum(want.values())}")
    for k in named:
        if got[k] != want[k]:
            fail(f"metrics: sender {k} has {got[k]} entries, the summary {want[k]}")
    ok(f"metrics: {len(named)} sender labels (cap {cap}) and other={got.get('other', 0)}, "
       f"{sum(got.values())} entries as in the summary")
    # Shared as bytes by the requests per byte of the last update before
    # each entry: no more than the disks' requests in all, some if any.
    want_ios = sum(r["io_share"] for r in rows)
    if not 0 < share <= 1.5 * want_ios + 1:
        fail(f"metrics: the senders' io_share sums to {share:.2f}, the summary's to {want_ios:.2f}")
    ok(f"metrics: the senders' io_share sums to {share:.2f} (the summary's: {want_ios:.2f})")


def unit_named(word):
    return word if "." in word else f"amptest-{word}.service"


def main(trace_path, export_path, tag, kmsg, prom, need_units):
    entries, summary = load_trace(trace_path)
    journal = read_export(export_path)
    ours = [j for j in journal if j.get("MESSAGE", "").startswith("amptest ")
            and (not tag or j["MESSAGE"].endswith(" " + tag))]
    kernel_lines = [j for j in ours if j.get("_TRANSPORT") == "kernel"]
    sent = [j for j in ours if j.get("_TRANSPORT") != "kernel"]
    if kmsg and not kernel_lines:
        fail("no line of this run's written to /dev/kmsg is in the journal")
    if not sent:
        fail("no amptest line in the journal")
    # pid -> the unit its lines say it is in (the test's ground truth)
    unit_of, lines_of, jfields = {}, collections.Counter(), {}
    for j in sent:
        pid = int(j["_PID"])
        unit = unit_named(j["MESSAGE"].split()[1])
        if unit_of.setdefault(pid, unit) != unit:
            fail(f"pid {pid} logged as {unit_of[pid]} and {unit}")
        lines_of[pid] += 1
        jfields[pid] = j

    recv = [e for e in entries if e["syscall"] in RECEIVES]
    missing = [e["id"] for e in recv if "sender" not in e]
    if missing:
        fail(f"receive entries without a sender: {missing[:10]}")
    by_pid = collections.defaultdict(list)
    for e in recv:
        if "pid" in e["sender"]:
            by_pid[e["sender"]["pid"]].append(e)

    units = collections.Counter()
    for pid, n in sorted(lines_of.items()):
        got = by_pid.get(pid, [])
        j = jfields[pid]
        # A datagram is one line; a stream's read may bring several, and
        # its first may be the stream's header alone (identifier, unit,
        # priority, ...).
        stream = j.get("_TRANSPORT") == "stdout"
        if (len(got) != n and not stream) or not 1 <= len(got) <= n + stream:
            fail(f"pid {pid} ({unit_of[pid]}, {j.get('_TRANSPORT')}): {n} journal entries, "
                 f"{len(got)} receive entries with it as sender")
        for e in got:
            s = e["sender"]
            if s.get("unit") != unit_of[pid]:
                fail(f"entry {e['id']}: sender {s}, want unit {unit_of[pid]}")
            if "_SYSTEMD_UNIT" in j and s.get("unit") != j["_SYSTEMD_UNIT"]:
                fail(f"entry {e['id']}: unit {s.get('unit')}, the journal's {j['_SYSTEMD_UNIT']}")
            # systemd's child writes a stream's header as "(sh)" before it
            # execs sh: that read dirties nothing and may be named so.
            header = (stream and e is min(got, key=lambda x: x["id"])
                      and not e.get("pages_dirtied")
                      and s.get("comm") == f"({j.get('_COMM')})")
            if header:
                ok(f"entry {e['id']}: pid {pid}'s stream header ({e['bytes']} B), "
                   f"sent as {s['comm']} before its exec")
            elif "_COMM" in j and s.get("comm") != j["_COMM"]:
                fail(f"entry {e['id']}: comm {s.get('comm')}, the journal's {j['_COMM']}")
            if s["how"] not in ("live", "exited"):
                fail(f"entry {e['id']}: sender not named: {s}")
        units[unit_of[pid]] += len(got)
        hows = collections.Counter(e["sender"]["how"] for e in got)
        ok(f"pid {pid} ({unit_of[pid]}, {j.get('_TRANSPORT')}): {n} lines in {len(got)} "
           f"entries, each with "
           f"its unit and comm ({dict(hows)}; journal: _COMM {j.get('_COMM', '-')}, "
           f"_SYSTEMD_UNIT {j.get('_SYSTEMD_UNIT', '-')})")
    for unit in need_units:
        if not units[unit]:
            fail(f"no entry of {unit} in the journal")

    if kmsg:
        k = [e for e in recv if e["sender"]["how"] == "kernel"]
        if len(k) < len(kernel_lines):
            fail(f"{len(kernel_lines)} kernel lines in the journal, {len(k)} entries "
                 f"sent by the kernel")
        ok(f"{len(kernel_lines)} /dev/kmsg lines: {len(k)} entries sent by the kernel")

    # The per-sender bill: every entry in one row, journald's bill in full.
    rows = summary.get("senders")
    if not rows:
        fail("summary has no senders table")
    procs = summary["processes"]
    for key in ("entries", "bytes", "dev_bytes_total"):
        got = sum(r[key] for r in rows)
        want = sum(p[key] if key != "dev_bytes_total" else sum(p["dev_bytes"].values())
                   for p in procs)
        if got != want:
            fail(f"senders' {key} sum to {got}, the processes' to {want}")
    ok(f"{len(rows)} sender rows add up to the processes' entries, bytes and device bytes")
    # The disks' requests shared as their bytes are: together no more than
    # the disks made, and as many as the charged part of their bytes.
    disks = [d for d in summary["devices"] if d.get("layer", "disk") == "disk"]
    ios, total = sum(d["ios"] for d in disks), sum(d["total"] for d in disks)
    shared = sum(r["io_share"] for r in rows)
    charged = sum(r["dev_bytes_total"] for r in rows)
    if total and abs(shared - ios * charged / total) > 0.01 * max(ios, 1):
        fail(f"io_share sums to {shared:.2f}, want {ios} requests x {charged}/{total} B")
    ok(f"io_share: {shared:.2f} of the disks' {ios} write requests, as {charged} of "
       f"their {total} B")
    dur = summary["duration_s"]
    for r in rows:
        print(f"  {r['sender']:<32} {r['entries']:>5} entries {r['bytes']:>7} B logged "
              f"{r['dev_bytes_total']:>9} B charged {r['io_share']:7.2f} of {r['ios']:>4} "
              f"requests it had pages in ({r['io_share_per_s']:.3f} IO/s over {dur:.0f} s)")
    for unit, n in sorted(units.items()):
        row = next((r for r in rows if r["sender"] == unit), None)
        if not row or row["entries"] != n:
            fail(f"{unit}: {n} entries, its row {row}")
    ok("each test unit's row counts its entries")
    if prom:
        check_metrics(prom, rows, 3)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("export")
    ap.add_argument("--tag", default="", help="only lines ending with this word")
    ap.add_argument("--kmsg", action="store_true", help="the kernel's lines must be there")
    ap.add_argument("--metrics", default="", help="a --metrics-file of 3 sender labels")
    ap.add_argument("--units", default="", help="units that must have sent lines")
    a = ap.parse_args()
    main(a.trace, a.export, a.tag, a.kmsg, a.metrics, [u for u in a.units.split(",") if u])
