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

    pid = expected[0]["pid"]
    mine = [e for e in entries if e["pid"] == pid and e["syscall"] == "pwrite64"]
    if len(mine) != len(expected):
        fail(f"{len(mine)} pwrite64 entries of the writer, expected {len(expected)}")
    failed = sum(e.get("failed_write_bytes", 0) for e in mine)
    data = sum(e["dev_bytes"]["data"] for e in mine)
    unsettled = [e["id"] for e in mine if not e["settled"]]
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


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "failed-writes":
        check_failed_writes(*args)
    else:
        sys.exit(f"fault_checks.py: unknown check {cmd}")
