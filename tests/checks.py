#!/usr/bin/env python3
"""Assertions on amptrace's JSON-lines output against ground truth.

Each subcommand prints one "ok:" line per check and exits 1 on the first
failure, saying what was expected and what was found.
"""
import json
import os
import sys


def load_trace(path):
    entries, summary = [], None
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec["type"] == "entry":
                entries.append(rec)
            elif rec["type"] == "summary":
                summary = rec
    if summary is None:
        fail(f"{path}: no summary record")
    return entries, summary


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}")


def device(summary, name):
    for d in summary["devices"]:
        if d["name"] == name:
            return d
    fail(f"device {name} not in summary: {[d['name'] for d in summary['devices']]}")


def charged_pages(entry):
    """(ino, page) of every page in the entry's scatter list, folios expanded."""
    pages = set()
    for run in entry["scatter"]:
        for k in range(run["npages"]):
            pages.add((run["ino"], run["page"] + k))
    return pages


def within(a, b, rel):
    return abs(a - b) <= rel * max(abs(b), 1)


def check_synth(expect_path, trace_path, dev, page_size, copies=1):
    """Every expected page charged to the right entry, none elsewhere;
    copies: the times each page is written (RAID1: once per leg, each leg
    a disk of its own: dev is one of them)."""
    expected = [json.loads(l) for l in open(expect_path) if l.strip()]
    entries, summary = load_trace(trace_path)
    pid = expected[0]["pid"]
    # (A btrfs sync's own metadata is an entry of the writer's with no
    # syscall, "-": btrfs.bpf.h.)  Several writer threads (-t): each its
    # own entries in its own order.
    tids = sorted({x["tid"] for x in expected})
    expected = sorted(expected, key=lambda x: (tids.index(x["tid"]), x["entry"]))
    mine = sorted((e for e in entries if e["pid"] == pid and e["syscall"] != "-"),
                  key=lambda e: (tids.index(e["tid"]) if e["tid"] in tids else -1, e["id"]))
    if len(mine) != len(expected):
        fail(f"{len(expected)} marker syscalls, {len(mine)} entries for pid {pid}")
    for t in tids:
        n_exp = sum(1 for x in expected if x["tid"] == t)
        n_got = sum(1 for e in mine if e["tid"] == t)
        if n_exp != n_got:
            fail(f"thread {t}: {n_exp} marker syscalls, {n_got} entries")
    ok(f"{len(mine)} entries for {len(expected)} marker syscalls" +
       (f", {len(tids)} threads, each its own" if len(tids) > 1 else ""))
    owner = {}
    for exp, got in zip(expected, mine):
        if got["bytes"] != exp["bytes"] or got["syscall"] != "pwrite64":
            fail(f"entry {exp['entry']}: {got['syscall']} {got['bytes']} B, "
                 f"expected pwrite64 {exp['bytes']} B")
        if got["scatter_dropped"]:
            fail(f"entry {exp['entry']}: scatter overflowed")
        want = {tuple(p) for p in exp["pages"]}
        have = charged_pages(got)
        if want != have:
            fail(f"entry {exp['entry']}: missing {sorted(want - have)}, "
                 f"extra {sorted(have - want)}")
        for p in have:
            if p in owner:
                fail(f"page {p} charged to entries {owner[p]} and {got['id']}")
            owner[p] = got["id"]
        if not got["settled"] or got["folios_written"] != got["folios_dirtied"]:
            fail(f"entry {exp['entry']}: {got['folios_written']}/{got['folios_dirtied']} "
                 f"folios written after sync (settled {got['settled']}, its runs "
                 f"{[(r['page'], r['npages'], r.get('written')) for r in got['scatter']]}, "
                 f"dev_bytes {got['dev_bytes']}; {describe_uncharged(summary, device(summary, dev))})")
    ok(f"all {len(owner)} pages charged to the entry that dirtied them, none twice")

    npages = sum(e["pages_dirtied"] for e in mine)
    data = sum(e["dev_bytes"]["data"] for e in mine)
    if not within(data, npages * page_size * copies, 0.01):
        fail(f"entries' data bytes {data} != {npages} pages x {page_size} x {copies} copies")
    ok(f"entries' data bytes {data} = {npages} dirtied pages x {page_size}"
       f"{f' x {copies} copies' if copies > 1 else ''}")
    d = device(summary, dev)
    if not within(d["classes"]["data"], npages * page_size, 0.01):
        fail(f"device data class {d['classes']['data']} != {npages} pages x {page_size}")
    ok(f"device data class {d['classes']['data']} = {npages} pages x {page_size}")
    check_synth_files(expected, summary, page_size, copies)
    check_devsum(summary, dev)


def check_synth_files(expected, summary, page_size, copies=1):
    """Per-file totals: each entry counted once per file it touched, its
    pwrite's bytes to the pwrite's file, every page and its write-out
    (each copy of it)."""
    want = {}
    for exp in expected:
        write_ino = exp["pages"][0][0]
        for ino in {p[0] for p in exp["pages"]}:
            w = want.setdefault(ino, {"entries": 0, "syscall_bytes": 0, "pages_dirtied": 0})
            w["entries"] += 1
        want[write_ino]["syscall_bytes"] += exp["bytes"]
        for ino, _ in exp["pages"]:
            want[ino]["pages_dirtied"] += 1
    for ino, w in want.items():
        w["dev_bytes"] = w["pages_dirtied"] * page_size * copies
        got = [f for f in summary["files"] if f["ino"] == ino]
        if len(got) != 1:
            fail(f"inode {ino}: {len(got)} rows in the per-file summary")
        have = {k: got[0][k] for k in w}
        if have != w:
            fail(f"inode {ino} ({got[0].get('path')}): per-file totals {have}, expected {w}")
        ok(f"{got[0].get('path')}: per-file totals {w}")


def test_counter(dev):
    """The device's written bytes as the test itself read /sys/block/DEV/stat
    (tests/lib.sh start_tracer, stop_tracer): (outer, inner), read around the
    tracer's run and inside its window, or None."""
    path = os.environ.get("AMP_TRACE_COUNTER")
    if not path or not os.path.exists(path):
        return None
    for line in open(path):
        name, outer, inner = line.split()
        if name == dev:
            return (int(outer), int(inner))
    return None


def check_test_counter(dev, total, what, slack=0.01):
    """total (the classes' sum) against the test's own /sys/block/DEV/stat
    readings: the tracer's window lies inside the outer pair and holds the
    inner one, so inner <= total <= outer (within slack, as a fraction)."""
    mine = test_counter(dev)
    if mine is None:
        fail(f"{what}: the test did not read /sys/block/{dev}/stat itself (start_tracer --dev)")
    outer, inner = mine
    if not inner * (1 - slack) <= total <= outer * (1 + slack):
        fail(f"{what}: classes sum {total} outside the test's own /sys/block/{dev}/stat "
             f"readings [{inner} inside, {outer} around the tracer's window]")
    ok(f"{what}: classes sum {total}, within the test's own /sys/block readings "
       f"[{inner} inside, {outer} around the run]")


def describe_uncharged(summary, d):
    """Where a device's bytes not by cause may come from, for a failing
    test's log: the summary's counters and losses, untraced and unwalked
    bytes, and the processes and files that carry device bytes."""
    lost = {k: v for k, v in summary.get("losses", {}).items() if v}
    counters = {k: v for k, v in summary.get("counters", {}).items() if v}
    procs = [(p["comm"], p["pid"], sum(p["dev_bytes"].values()))
             for p in summary.get("processes", []) if sum(p["dev_bytes"].values())]
    by_path = {}
    for f in summary.get("files", []):
        by_path[f["path"]] = by_path.get(f["path"], 0) + f["dev_bytes"]
    files = sorted(((b, p) for p, b in by_path.items() if b), reverse=True)[:6]
    # The tracer's own /sys/block reading beside what its programs saw
    # (the device's write count also holds requests with no bytes to walk,
    # such as empty flushes): which of the two readings a sum misses.
    own = (f"tracer's counter {d.get('counter_bytes')} B in {d.get('counter_ios')} writes, "
           f"{d.get('ios')} requests walked, difference {d.get('difference')} B")
    return (f"{own}, untraced {d.get('untraced_bytes')} B, unwalked {d.get('unwalked_bytes')} B, "
            f"late {d.get('late_bytes')} B, losses {lost or 'none'}, counters {counters or 'none'}, "
            f"processes {procs}, files {files}")


def check_charges(path, dev, what, slack=0.01):
    """A trace's device DEV: its classes within the test's own /sys/block
    readings, and what its entries carry = by cause + by window (nothing
    counted twice).  Returns (the device's summary, the entries)."""
    recs = [json.loads(line) for line in open(path)]
    d = device(recs[-1], dev)
    print(f"{what}: diagnostics: {describe_uncharged(recs[-1], d)}")
    check_test_counter(dev, d["total"], f"{what}: {d['classes']}", slack)
    entries = [r for r in recs if r["type"] == "entry"]
    charged = sum(e["dev_bytes_total"] for e in entries)
    if charged != d["by_cause"] + d["by_window"]:
        fail(f"{what}: entries carry {charged} B, the device says by cause {d['by_cause']} "
             f"+ by window {d['by_window']}")
    ok(f"{what}: entries carry {charged} B = by cause {d['by_cause']} + by window "
       f"{d['by_window']} (nothing counted twice)")
    return d, entries


def check_devsum(summary, dev, losses_ok=False):
    """The classes sum to the device's counter: amptrace's reading, and the
    test's own reading of /sys/block around the run."""
    d = device(summary, dev)
    total = sum(d["classes"].values())
    if "counter_bytes" not in d:
        fail(f"no /sys/block counter for {dev}")
    if not within(total, d["counter_bytes"], 0.01):
        fail(f"classes sum {total} vs /sys/block/{dev}/stat {d['counter_bytes']}")
    ok(f"{dev}: classes {d['classes']} sum {total} = counter {d['counter_bytes']} "
       f"(diff {d['difference']})")
    check_test_counter(dev, total, dev)
    lost = {k: v for k, v in summary["losses"].items() if v}
    if lost and not losses_ok:
        fail(f"losses reported: {lost}")
    ok(f"losses: {lost or 'none'}")


def check_stack(trace_path, bottoms, layers, min_cause):
    """A stacked device (partition, dm, md): every layer's row against its
    own counter (/sys/class/block/DEV/stat, amptrace's and the test's
    reading); a dm or md layer not walked, said so and never summed; the
    bottom disks' bytes (a RAID1's legs: each its own copy) by cause."""
    entries, summary = load_trace(trace_path)
    for name in layers:
        d = device(summary, name)
        layer = d.get("layer", "disk")
        total = sum(d["classes"].values())
        if layer in ("dm", "md") and not d.get("walked"):
            if "difference" in d or total:
                fail(f"{name}: a {layer} layer not walked, summed as if it were: classes "
                     f"{d['classes']}, difference {d.get('difference')}")
            if "counter_bytes" not in d:
                fail(f"{name}: no counter of its own")
            if os.environ.get("AMP_LAYERS_UNWALKED_OK") != "1":
                fail(f"{name}: {layer} layer not walked (counter {d['counter_bytes']} B)")
            ok(f"{name}: {layer} layer not walked, said so; its counter {d['counter_bytes']} B")
            continue
        if "counter_bytes" not in d:
            fail(f"no counter for {name}")
        if not within(total, d["counter_bytes"], 0.01):
            fail(f"{name} ({layer}): classes sum {total} vs its counter {d['counter_bytes']}")
        check_test_counter(name, total, f"{name} ({layer})")
        ok(f"{name} ({layer}): classes {d['classes']} sum {total} = its own counter "
           f"{d['counter_bytes']}")
    # Entries' bills are the bottom disks' bytes, once each: a layer's row
    # (whose bytes are the disks' too) adds nothing to them.
    charged = sum(e["dev_bytes_total"] for e in entries)
    bs = [device(summary, name) for name in bottoms]
    carried = sum(b["by_cause"] + b["by_window"] for b in bs)
    if charged != carried:
        fail(f"entries carry {charged} B, {'+'.join(bottoms)} say by cause + by window "
             f"{carried}: {[(b['name'], b['by_cause'], b['by_window']) for b in bs]}: "
             "a layer's bytes counted twice?")
    ok(f"entries carry {charged} B = {'+'.join(bottoms)}'s by cause + by window "
       "(nothing counted twice)")
    for b in bs:
        # A disk's bytes go to entries once: by cause and by window never
        # add up to more than it wrote (a RAID1 leg's window taking what
        # the other leg wrote did, 115 %).
        if b["by_cause"] + b["by_window"] > b["total"]:
            fail(f"{b['name']}: charged {b['by_cause']} by cause + {b['by_window']} by window "
                 f"> its {b['total']} B written")
        if b["cause_fraction"] < min_cause:
            fail(f"{b['name']}: {100 * b['cause_fraction']:.1f}% by cause, want >= "
                 f"{100 * min_cause:.0f}%: {describe_uncharged(summary, b)}")
        ok(f"{b['name']}: {100 * b['cause_fraction']:.1f}% by cause (>= {100 * min_cause:.0f}%), "
           f"{100 * b['charged_fraction']:.1f}% charged")


def check_journald(trace_path, dev, journal_ino, datagram_bytes, page_size, copies=1):
    entries, summary = load_trace(trace_path)
    sent = [e for e in entries if e["syscall"] in ("recvmsg", "recvmmsg", "recvfrom")
            and e["bytes"] == datagram_bytes]
    if len(sent) != 1:
        fail(f"expected one receive entry of {datagram_bytes} B, found "
             f"{[(e['id'], e['syscall'], e['bytes']) for e in entries]}")
    e = sent[0]
    ok(f"entry {e['id']}: {e['syscall']} {e['bytes']} B")
    pages = sorted(p for ino, p in charged_pages(e) if ino == journal_ino)
    if len(pages) < 5:
        fail(f"entry dirtied {len(pages)} pages of the journal file, expected >= 5: {pages}")
    gaps = sum(1 for a, b in zip(pages, pages[1:]) if b != a + 1)
    if gaps < 2:
        fail(f"journal pages {pages} are nearly contiguous; expected a scatter")
    ok(f"{len(pages)} journal pages in {gaps + 1} runs: {pages}")
    # Exact: the entry's data are its own pages, each written whole once
    # (once on each RAID1 leg).
    if e["dev_bytes"]["data"] != len(charged_pages(e)) * page_size * copies:
        fail(f"entry charged {e['dev_bytes']['data']} B of data for "
             f"{len(charged_pages(e))} written pages x {copies} copies")
    ok(f"entry charged {e['dev_bytes_total']} device bytes ({len(pages)} pages of data "
       f"exactly), amplification {e['amplification']:.0f}x")
    d = device(summary, dev)
    # The window's users (amptrace's own start-up cost apart): their data is
    # their pages, and the filesystem's overhead for one append is one jbd2
    # commit and a few metadata blocks, at most 16 blocks (measured: 3-7).
    users = [u for u in entries if not u.get("own")]
    user_pages = sum(len(charged_pages(u)) for u in users)
    user_data = sum(u["dev_bytes"]["data"] for u in users)
    user_bill = sum(u["dev_bytes_total"] for u in users)
    if user_data != user_pages * page_size * copies:
        fail(f"users' entries: {user_data} B of data for {user_pages} pages x {copies}")
    low, high = user_pages * page_size * copies, (user_pages + 16) * page_size * copies
    if not low <= user_bill <= high:
        fail(f"users' entries cost {user_bill} B for {user_pages} pages x {copies}: outside "
             f"[{low}, {high}]")
    own = sum(o["dev_bytes_total"] for o in entries if o.get("own"))
    ok(f"users' entries: {user_bill} B for {user_pages} pages"
       f"{f'; amptrace own {own} B' if own else ''}")
    for k in ("late_bytes", "unwalked_bytes"):
        if d[k]:
            fail(f"{k} = {d[k]}: nothing else writes on {dev}")
    check_devsum(summary, dev)


def check_rsyslog(trace_path, logfile, log_ino, page_size, block_size):
    entries, summary = load_trace(trace_path)
    lines = open(logfile, "rb").read().split(b"\n")[:-1]
    writes = sorted((e for e in entries if e.get("file", {}).get("ino") == log_ino),
                    key=lambda e: e["id"])
    if len(writes) != len(lines):
        fail(f"{len(lines)} lines in {logfile}, {len(writes)} write entries on it: "
             f"{[(e['syscall'], e['bytes']) for e in writes]}")
    for line, e in zip(lines, writes):
        if e["bytes"] != len(line) + 1:
            fail(f"line {line!r}: entry {e['id']} has {e['bytes']} B, expected {len(line) + 1}")
    ok(f"{len(lines)} lines -> {len(writes)} entries with matching byte counts "
       f"({[e['bytes'] for e in writes]})")
    # The log grew from nothing during the trace, with no write-back
    # between its lines: each of its pages was dirtied once, by the first
    # line that reached it, and its blocks in use were written once.
    size = os.path.getsize(logfile)
    want = list(range(-(-size // page_size)))
    got = sorted(p for e in writes for ino, p in charged_pages(e) if ino == log_ino)
    if got != want:
        fail(f"log file of {size} B: pages {want} expected, entries dirtied {got} "
             f"({[(e['id'], e['pages_dirtied']) for e in writes]})")
    data = sum(e["dev_bytes"]["data"] for e in writes)
    if data != -(-size // block_size) * block_size:
        fail(f"{data} B of data charged for the log file's {size} B in {block_size} B blocks")
    ok(f"log file of {size} B: its pages {want} dirtied once each, by entries "
       f"{[e['id'] for e in writes if e['pages_dirtied']]}, {data} B written")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "synth":
        check_synth(args[0], args[1], args[2], int(args[3]), int(args[4]) if args[4:] else 1)
    elif cmd == "devsum":
        check_devsum(load_trace(args[0])[1], args[1], losses_ok="--losses-ok" in args[2:])
    elif cmd == "stack":
        check_stack(args[0], args[1].split(","), args[2].split(","), float(args[3]))
    elif cmd == "journald":
        check_journald(args[0], args[1], int(args[2]), int(args[3]), int(args[4]),
                       int(args[5]) if args[5:] else 1)
    elif cmd == "rsyslog":
        check_rsyslog(args[0], args[1], int(args[2]), int(args[3]), int(args[4]))
    else:
        fail(f"unknown check {cmd}")
