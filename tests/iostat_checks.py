#!/usr/bin/env python3
"""t97: amptrace beside the disk counter and journald's cgroup io.stat.

    iostat_checks.py [--assert CASE]... CASE=DIR...

Each DIR holds what tests/systemd_host_measure.sh wrote in one guest:
`counters` (key=value) and `trace.json` (amptrace trace -j).  Prints one
table row per case, then for each asserted case checks that amptrace's
bill for journald's cgroup (the data charged to its entries) agrees
with io.stat's wbytes within 5%, that amptrace's classes sum to its
counter and that counter lies between the disk's own readings inside and
around amptrace's window, and that it shows what io.stat cannot: the jbd2 commit bytes
(which io.stat gives to the root cgroup) charged to the logger's entry,
and that entry's pages.  Exit 1 on the first failed check.
"""
import json
import sys

# `logger -p info test` to /dev/log: "<14>Mmm dd hh:mm:ss root: test".
LOGGER_BYTES = 30
PAGE = 4096


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}")


def load(path):
    counters = {}
    with open(f"{path}/counters") as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            counters[k] = v
    entries, summary = [], None
    with open(f"{path}/trace.json") as f:
        for line in f:
            rec = json.loads(line)
            if rec["type"] == "entry":
                entries.append(rec)
            elif rec["type"] == "summary":
                summary = rec
    if summary is None:
        fail(f"{path}/trace.json: no summary")
    return counters, entries, summary


def figures(counters, entries, summary):
    procs = summary["processes"]
    # The disk's row (a stack's layers have rows of their own: "layer").
    disks = [d for d in summary["devices"] if "layer" not in d]
    dev = disks[0] if disks else None
    return {
        "disk": int(counters["disk_bytes"]),
        "disk_inner": int(counters["disk_inner_bytes"]),
        "iostat": int(counters["iostat_wbytes"]),
        "iostat_inner": int(counters["iostat_inner_wbytes"]),
        # Every entry of journald's, amptrace's own (the audit records of
        # its program loads, which journald wrote too) included.  Its data:
        # its files' pages, which cgroup writeback charges to journald's
        # cgroup.  Not the metadata amptrace charges to its entries by
        # cause (inode table, bitmaps, written back later by the flusher
        # or a jbd2 checkpoint): io.stat gives that to the root cgroup,
        # as it does the jbd2 commits.
        "bill": sum(p["dev_bytes"]["data"] for p in procs),
        "meta": sum(p["dev_bytes"]["metadata"] for p in procs),
        "own": sum(sum(p["dev_bytes"].values()) for p in procs if p.get("own")),
        "jbd2_entries": sum(p["dev_bytes"]["journal"] for p in procs),
        "window": sum(p["dev_bytes"]["window"] for p in procs),
        "dev": dev,
        "entries": len(entries),
        "audit": int(counters["bpf_audit_records"]) + int(counters["bpf_audit_kmsg"]),
    }


def pct(a, b):
    return 100.0 * (a - b) / b if b else float("inf")


def check(name, counters, entries, summary, f):
    dev = f["dev"]
    if dev is None:
        fail(f"{name}: amptrace saw no device")
    if f["iostat"] < PAGE:
        fail(f"{name}: io.stat wbytes {f['iostat']}: journald's cgroup wrote nothing")
    # io.stat read around amptrace's window (outer) and inside it (inner),
    # as the disk is below: with audit on, journald writes the records of
    # amptrace's loads while it starts, seconds under TCG, before its own
    # baseline.  amptrace's bill lies between, within 5%.
    diff = pct(f["bill"], f["iostat"])
    if not 0.95 * f["iostat_inner"] <= f["bill"] <= 1.05 * f["iostat"]:
        fail(f"{name}: amptrace's bill {f['bill']} B outside io.stat's "
             f"[{f['iostat_inner']} inside, {f['iostat']} around] B (5%)")
    ok(f"{name}: amptrace's bill for the cgroup {f['bill']} B within io.stat wbytes "
       f"[{f['iostat_inner']} inside, {f['iostat']} around amptrace's window] ({diff:+.1f}% of the latter)")
    total = sum(dev["classes"].values())
    if total != dev["total"] or abs(total - dev["counter_bytes"]) > 0.01 * dev["counter_bytes"]:
        fail(f"{name}: classes {dev['classes']} sum {total}, counter {dev['counter_bytes']}")
    # The test read the disk before amptrace started and after it stopped
    # (outer), and after it said "tracing" and before SIGINT (inner):
    # amptrace's own window lies between the two.
    if not f["disk_inner"] <= dev["counter_bytes"] <= f["disk"]:
        fail(f"{name}: amptrace's counter {dev['counter_bytes']} B outside the disk's "
             f"[{f['disk_inner']}, {f['disk']}] B (read inside / around amptrace's window)")
    ok(f"{name}: classes {dev['classes']} sum to the counter {dev['counter_bytes']} B, within the "
       f"disk's own [{f['disk_inner']}, {f['disk']}] B")
    # The journal's stack (AMPTRACE_SDHOST_STACK): each layer's classes =
    # its own counter.
    for d in summary["devices"]:
        if "layer" not in d:
            continue
        total = sum(d["classes"].values())
        if not d.get("walked", True) or abs(total - d.get("counter_bytes", -1)) > 0.01 * total:
            fail(f"{name}: {d['name']} ({d['layer']}): classes {d['classes']} sum {total}, "
                 f"its counter {d.get('counter_bytes')}, walked {d.get('walked')}")
        ok(f"{name}: {d['name']} ({d['layer']}): classes sum {total} = its own counter")
    lost = {k: v for k, v in summary["losses"].items() if v}
    if lost:
        fail(f"{name}: losses {lost}")
    # Kernel audit on: journald stores the audit records of amptrace's
    # program loads, and amptrace must show that as its own cost.  (The
    # logger line may then find some of its pages dirty already.)
    audit_on = name == "auditon"   # the case with journald's audit socket and defaults
    min_pages = 5
    if bool(f["audit"]) != audit_on:
        fail(f"{name}: {f['audit']} audit records of BPF loads, kernel audit meant to be "
             f"{'on' if audit_on else 'off'}")
    if f["audit"]:
        if f["own"] <= 0:
            fail(f"{name}: {f['audit']} audit records of amptrace's loads, no cost of its own shown")
        ok(f"{name}: {f['audit']} audit records of amptrace's program loads; their cost, "
           f"{f['own']} B, is amptrace's own (entries marked own)")
        min_pages = 1
    mine = [e for e in entries if e["syscall"].startswith("recv") and e["bytes"] == LOGGER_BYTES
            and not e.get("own")]
    if len(mine) != 1:
        fail(f"{name}: expected one {LOGGER_BYTES}-byte receive (the logger line), found "
             f"{[(e['id'], e['syscall'], e['bytes']) for e in entries]}")
    e = mine[0]
    pages = sorted(r["page"] + k for r in e["scatter"] for k in range(r["npages"]))
    if len(pages) < min_pages or not all(r["written"] for r in e["scatter"]):
        fail(f"{name}: the logger entry dirtied {pages}, written: "
             f"{[r['written'] for r in e['scatter']]}")
    ok(f"{name}: the logger line (entry {e['id']}, {e['syscall']} {e['bytes']} B) dirtied "
       f"{len(pages)} pages of {e['scatter'][0]['path']}, all written: {pages}")
    # What io.stat cannot show: the jbd2 commits go to the root cgroup.
    outside = f["disk"] - f["iostat"]
    if dev["classes"]["journal"] <= 0 or e["dev_bytes"]["journal"] <= 0:
        fail(f"{name}: no jbd2 commit bytes charged to the logger entry: {e['dev_bytes']}")
    if outside < dev["classes"]["journal"]:
        fail(f"{name}: io.stat leaves {outside} B outside journald's cgroup, "
             f"less than the {dev['classes']['journal']} B of jbd2 commits")
    ok(f"{name}: io.stat leaves {outside} B outside journald's cgroup (jbd2 commits "
       f"{dev['classes']['journal']} B, metadata {dev['classes']['metadata']} B); amptrace "
       f"charges the logger entry {e['dev_bytes']['journal']} B of jbd2 commits, "
       f"{e['dev_bytes']['window']} B by window")


def main():
    args = sys.argv[1:]
    asserted = set()
    while args and args[0] == "--assert":
        asserted.add(args[1])
        args = args[2:]
    cases = [a.split("=", 1) for a in args]
    if not cases or any(len(c) != 2 for c in cases):
        fail("usage: iostat_checks.py [--assert CASE]... CASE=DIR...")
    loaded = {}
    print(f"{'CASE':<10} {'AUDIT':<6} {'DISK':>8} {'IO.STAT':>8} {'AMPTRACE':>8} {'DIFF':>7} "
          f"{'META':>7} {'JBD2':>7} {'OTHER':>7} {'ENTRIES':>7} {'BPF_AUDIT':>9}")
    for name, path in cases:
        counters, entries, summary = load(path)
        f = figures(counters, entries, summary)
        loaded[name] = (counters, entries, summary, f)
        dev = f["dev"] or {"classes": {"journal": 0, "other": 0}}
        audit = "on" if f["audit"] else "off"   # kernel audit: records of our BPF loads
        print(f"{name:<10} {audit:<6} {f['disk']:>8} {f['iostat']:>8} {f['bill']:>8} "
              f"{pct(f['bill'], f['iostat']):>+6.1f}% {f['meta']:>7} {dev['classes']['journal']:>7} "
              f"{dev['classes']['other']:>7} {f['entries']:>7} {f['audit']:>9}")
    print("  DISK: /sys/block/DEV/stat written sectors x 512; IO.STAT: wbytes of "
          "system.slice/systemd-journald.service;")
    print("  AMPTRACE: data charged to journald's entries (its files' pages); META: metadata "
          "charged to them by cause, which io.stat gives to the root cgroup;")
    print("  JBD2, OTHER: amptrace's device classes; BPF_AUDIT: audit records of amptrace's own "
          "BPF loads")
    for name in sorted(asserted):
        if name not in loaded:
            fail(f"no case {name} to assert on")
        check(name, *loaded[name])


if __name__ == "__main__":
    main()
