#!/usr/bin/env python3
"""Checks of amptrace's traces under faults, against the kernel's own record
of what happened.

  fault_checks.py failed-writes TRACE EXPECT DEV IMG MNT
      The synthetic writer's pages (EXPECT, its JSON lines) on the
      filesystem at MNT, on loop disk DEV whose backing file IMG lies on a
      full tmpfs: a page whose block is a hole in IMG after the run never
      reached it (FIEMAP of each file for the block, SEEK_DATA on IMG for
      the hole).  amptrace must bill exactly those pages as failed writes,
      none of them as written, and settle every entry.

  fault_checks.py layer-failed TRACE EXPECT_OK EXPECT DM DISK FAILED_BYTES DISK_AFTER [KILLED]
      A dm device DM (dm-flakey) over disk DISK failed every write from a
      point on: FAILED_BYTES, its /sys/block counter from there to the
      end, reached DISK as DISK_AFTER bytes (0: none got through).  DM's
      class failed must be those bytes, DISK's none; the synthetic
      writer's entries (EXPECT), written out only after that point, must
      have all their pages as failed bytes and settle; those of the one
      written before (EXPECT_OK) all their pages as data, none failed.
      KILLED: the table killed the writes (dm's error target), which dm
      counts from 6.3 on only if it had begun them: DM's class failed and
      failed_uncounted together must hold at least the second writer's
      pages; without it, none may be uncounted.

  fault_checks.py settled TRACE EXPECT
      The synthetic writer's entries (EXPECT) all settled, each page of
      theirs billed once, as written or as failed.

  fault_checks.py gone TRACE DEV OUTER INNER
      DEV went away during the trace, its counter having moved OUTER bytes
      from before the tracer's start to its last value, INNER from the
      tracer's attach: its row says gone, and its classes sum to its
      counter as amptrace last read it, within those.
"""
import json
import os
import re
import subprocess
import sys

from checks import device, fail, ok, load_trace


def file_blocks(path):
    """{logical block: physical block} of path, from filefrag -e (4 KiB blocks)."""
    out = subprocess.run(["filefrag", "-e", "-b4096", path], capture_output=True,
                         text=True, check=True).stdout
    blocks = {}
    for m in re.finditer(r"^\s*\d+:\s*(\d+)\.\.\s*(\d+):\s*(\d+)\.\.\s*\d+:", out, re.M):
        lo, hi, phys = int(m[1]), int(m[2]), int(m[3])
        for i in range(hi - lo + 1):
            blocks[lo + i] = phys + i
    return blocks


def stored(img_fd, offset):
    """Does the backing file hold data at offset (tmpfs: per 4 KiB page)?"""
    try:
        return os.lseek(img_fd, offset, os.SEEK_DATA) == offset
    except OSError:		# ENXIO: no data at or after offset
        return False


def writer_entries(entries, expected):
    pid = expected[0]["pid"]
    mine = [e for e in entries if e["pid"] == pid and e["syscall"] == "pwrite64"]
    if len(mine) != len(expected):
        fail(f"{len(mine)} pwrite64 entries of the writer, expected {len(expected)}")
    return mine


def bill_of(mine):
    """The entries' data bytes, failed bytes and the ids of those unsettled."""
    return (sum(e["dev_bytes"]["data"] for e in mine),
            sum(e.get("failed_write_bytes", 0) for e in mine),
            [e["id"] for e in mine if not e["settled"]])


def check_failed_writes(trace_path, expect_path, dev, img, mnt):
    entries, summary = load_trace(trace_path)
    expected = [json.loads(l) for l in open(expect_path) if l.strip()]
    page = 4096
    inos = {}
    for name in ("synth-write.dat", "synth-mmap.dat"):
        path = os.path.join(mnt, name)
        inos[os.stat(path).st_ino] = file_blocks(path)
    img_fd = os.open(img, os.O_RDONLY)
    lost = kept = 0
    for x in expected:
        for ino, index in x["pages"]:
            phys = inos[ino].get(index)
            if phys is None:
                fail(f"ground truth: page {index} of inode {ino} has no block (FIEMAP)")
            if stored(img_fd, phys * page):
                kept += 1
            else:
                lost += 1
    os.close(img_fd)
    ok(f"ground truth: of the writer's {lost + kept} pages, {lost} never reached the "
       f"backing file (its blocks are holes), {kept} did")
    if kept:
        fail(f"scenario: {kept} pages reached the backing file: the test needs every "
             f"write of them to fail")

    mine = writer_entries(entries, expected)
    data, failed, unsettled = bill_of(mine)
    print(f"entries: {len(mine)}, failed_write_bytes {failed}, data {data}, "
          f"unsettled {unsettled}")
    if unsettled:
        fail(f"entries left unsettled: {unsettled}")
    if failed != lost * page:
        fail(f"entries' failed_write_bytes {failed}, expected {lost} pages = {lost * page}")
    if data:
        fail(f"entries billed {data} bytes of data as written; none was stored")
    ok(f"every entry settled; their {lost} failed pages billed as failed "
       f"({failed} bytes), none as written")
    d = device(summary, dev)
    if d["classes"].get("failed", 0) < lost * page:
        fail(f"{dev}: class failed {d['classes'].get('failed')} < the writer's "
             f"{lost * page} failed bytes")
    if summary.get("failed_write_bytes") != failed:
        fail(f"summary failed_write_bytes {summary.get('failed_write_bytes')} != {failed}")
    if summary.get("entries_with_failed_writes") != len(mine):
        fail(f"summary entries_with_failed_writes {summary.get('entries_with_failed_writes')}")
    ok(f"{dev}: class failed {d['classes']['failed']} (the writer's {lost * page} and "
       f"the rest of the failed requests); summary: {failed} bytes in {len(mine)} entries")


def check_layer_failed(trace_path, expect_ok_path, expect_path, dm, disk, failed_bytes,
                       disk_after, killed=None):
    entries, summary = load_trace(trace_path)
    expected_ok = [json.loads(l) for l in open(expect_ok_path) if l.strip()]
    expected = [json.loads(l) for l in open(expect_path) if l.strip()]
    failed_bytes, disk_after = int(failed_bytes), int(disk_after)
    if disk_after:
        fail(f"scenario: {disk_after} bytes reached {disk} after the writes began to fail")
    d, k = device(summary, dm), device(summary, disk)
    print(f"{dm}: classes {d['classes']} counter {d.get('counter_bytes')}")
    print(f"{disk}: classes {k['classes']} counter {k.get('counter_bytes')}")
    if d["classes"].get("failed", 0) != failed_bytes:
        fail(f"{dm}: class failed {d['classes'].get('failed')}, but its counter counted "
             f"{failed_bytes} bytes of writes since they began to fail")
    if k["classes"].get("failed", 0):
        fail(f"{disk}: class failed {k['classes']['failed']}: no request of it failed")
    ok(f"{dm}: class failed {failed_bytes} = its counter's bytes since the writes began "
       f"to fail (none reached {disk}); {disk}: none failed")
    mine = writer_entries(entries, expected)
    want = sum(len(x["pages"]) for x in expected) * 4096
    uncounted = d.get("failed_uncounted", 0)
    if killed and failed_bytes + uncounted < want:
        fail(f"{dm}: class failed {failed_bytes} and failed_uncounted {uncounted}: less than "
             f"the {want} bytes of the writer's pages its table killed")
    if not killed and uncounted:
        fail(f"{dm}: failed_uncounted {uncounted}, but its counter counts every failed write")
    if killed:
        ok(f"{dm}: the killed writes: {failed_bytes} counted (class failed), {uncounted} "
           f"not (failed_uncounted); the writer's {want} bytes among them")
    data, failed, unsettled = bill_of(mine)
    print(f"entries: {len(mine)}, failed_write_bytes {failed}, data {data}, unsettled {unsettled}")
    if unsettled:
        fail(f"entries left unsettled: {unsettled}")
    if failed != want or data:
        fail(f"entries: {failed} bytes failed and {data} written; want {want} failed, none written")
    ok(f"the writer's {len(mine)} entries settled with their {want} bytes as failed, none "
       f"as written")
    first = writer_entries(entries, expected_ok)
    want = sum(len(x["pages"]) for x in expected_ok) * 4096
    data, failed, unsettled = bill_of(first)
    if data != want or failed or unsettled:
        fail(f"the first writer's entries: {data} bytes written and {failed} failed; want "
             f"{want} written, none failed, all settled")
    if not d["classes"]["data"]:
        fail(f"{dm}: no data class: the first writer's pages did not count there")
    ok(f"the first writer's {len(first)} entries, written before: their {want} bytes as "
       f"data; {dm}'s data class {d['classes']['data']}")


def check_settled(trace_path, expect_path):
    entries, _ = load_trace(trace_path)
    expected = [json.loads(l) for l in open(expect_path) if l.strip()]
    mine = writer_entries(entries, expected)
    want = sum(len(x["pages"]) for x in expected) * 4096
    data, failed, unsettled = bill_of(mine)
    if data + failed != want or unsettled:
        fail(f"the writer's entries: {data} bytes written, {failed} failed, "
             f"{sum(e['settled'] for e in mine)} of {len(mine)} settled; want {want} in all")
    ok(f"the writer's {len(mine)} entries settled: {data} bytes written, {failed} failed "
       f"(its {want} bytes)")


def check_gone(trace_path, dev, outer, inner):
    _, summary = load_trace(trace_path)
    d = device(summary, dev)
    total = sum(d["classes"].values())
    outer, inner = int(outer), int(inner)
    if not d.get("gone"):
        fail(f"{dev}: the summary does not say it went away: {d}")
    if total != d.get("counter_bytes") or not inner <= total <= outer:
        fail(f"{dev}: classes {total}, counter {d.get('counter_bytes')}; its counter's "
             f"last value moved [{inner} inside, {outer} around] the tracer's run")
    ok(f"{dev}: gone; classes {total} = its counter as last read, within the test's "
       f"own readings [{inner}, {outer}]")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "failed-writes":
        check_failed_writes(*args)
    elif cmd == "settled":
        check_settled(*args)
    elif cmd == "gone":
        check_gone(*args)
    elif cmd == "layer-failed":
        check_layer_failed(*args)
    else:
        sys.exit(f"fault_checks.py: unknown check {cmd}")
