# SPDX-License-Identifier: GPL-2.0
"""One measurement window: `amptrace trace` started and stopped around a
workload, and its summary read into a result row.

Where kernel audit is on, the tracer's own program loads are audit records
that journald stores: pages amptrace reports as its own cost.  The window
then writes them out first (syncfs, quiet) and reads the tracer's device
counters at that point from its --metrics-file; the row's figures are the
summary's less that start-up, so a line's bill holds none of amptrace's
own."""
import contextlib
import json
import os
import re
import signal
import subprocess
import time

from .devices import devstat
from .btrfs_trees import trees_of
from .paths import AMPTRACE
from .util import CLEANUP, RunFailed, log, sleep, spawn, stop_process, wait_for

# The device classes of amptrace's summary, in table order.
CLASSES = [("data", "data"), ("journal", "fs journal"), ("metadata", "metadata"),
           ("other", "other")]


class Tracer:
    def __init__(self, scratch, tag):
        self.out = os.path.join(scratch, f"trace-{tag}.json")
        self.err = os.path.join(scratch, f"trace-{tag}.err")
        self.metrics = os.path.join(scratch, f"trace-{tag}.prom")
        self.proc = None

    def start(self, dev, args, metrics=False):
        argv = [AMPTRACE, "trace", "-j", "-q", "-o", self.out, "--dev", dev] + args
        if metrics:
            argv += ["--metrics-file", self.metrics]
        log("run " + " ".join(argv))
        err = open(self.err, "wb")
        self.proc = spawn(argv, stderr=err, stdout=subprocess.DEVNULL)
        err.close()
        CLEANUP.push(f"stop amptrace {self.proc.pid}", stop_process, self.proc, "amptrace",
                     signal.SIGINT, 30)

        def attached():
            with open(self.err, errors="replace") as f:
                return "tracing (" in f.read()
        ok = wait_for(lambda: self.proc.poll() is not None or attached(), 60)
        if self.proc.poll() is not None or not ok:
            raise RunFailed("amptrace trace did not start: " + self.errtail())

    def counters(self, dev):
        """The device's counters in the metrics file: (classes, stat bytes,
        the file's mtime), or None before its first write."""
        try:
            with open(self.metrics) as f:
                text = f.read()
            mtime = os.stat(self.metrics).st_mtime
        except OSError:
            return None
        q = re.escape(dev)
        classes = {k: int(v) for k, v in re.findall(
            rf'^amptrace_device_written_bytes_total{{device="{q}",class="(\w+)"}} (\d+)$',
            text, re.M)}
        stat = re.search(rf'^amptrace_device_stat_written_bytes_total{{device="{q}"}} (\d+)$',
                         text, re.M)
        return (classes, int(stat.group(1)) if stat else None, mtime) if classes else None

    def baseline(self, disks, quiet_since):
        """The tracer's counters of DISKS (summed) once they have been quiet
        since QUIET_SINCE (time.time()): a metrics file written after that,
        read between two equal /sys/block readings.  -> (classes, stat
        bytes, (bytes, ios) of /sys/block then)."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            c = devstat(disks)
            ms = [self.counters(d) for d in disks]
            if all(m and m[2] > quiet_since + 0.05 and m[1] is not None for m in ms) and \
                    devstat(disks) == c:
                classes = {}
                for m in ms:
                    for k, v in m[0].items():
                        classes[k] = classes.get(k, 0) + v
                return classes, sum(m[1] for m in ms), c
            sleep(0.2)
        raise RunFailed(f"no fresh device counters in {self.metrics} within 10 s")

    def errtail(self):
        with contextlib.suppress(OSError), open(self.err, errors="replace") as f:
            lines = [l for l in f.read().splitlines() if not l.startswith("libbpf")]
            return lines[-1] if lines else "(no message)"
        return "(no message)"

    def stop(self):
        """Ctrl-C it, as a user would, and return its summary record."""
        self.proc.send_signal(signal.SIGINT)
        try:
            rc = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            raise RunFailed("amptrace ignored SIGINT for 60 s")
        if rc != 0:
            raise RunFailed(f"amptrace exited {rc}: {self.errtail()}")
        summary = None
        with open(self.out) as f:
            for line in f:
                with contextlib.suppress(ValueError):
                    rec = json.loads(line)
                    if isinstance(rec, dict) and rec.get("type") == "summary":
                        summary = rec
        if summary is None:
            raise RunFailed(f"no summary record in {self.out}")
        return summary


def _num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else 0


def _total(devs, key):
    """The devices' KEY summed; None if there are none or one lacks it."""
    vals = [d.get(key) for d in devs]
    return sum(vals) if vals and None not in vals else None


def result_from_summary(summary, disks, lines, logical, base=None, ios=None):
    """Read the tracer's summary defensively: missing keys count as 0.
    DISKS: the bottom disks whose bytes are the bill (one, or a RAID1's
    legs: summed).  BASE: the start-up to take off (Tracer.baseline); IOS:
    the write I/Os of the lines' part, from /sys/block, when there is a
    start-up."""
    by_name = {d.get("name"): d for d in summary.get("devices") or []}
    devs = [by_name[n] for n in disks if n in by_name]
    classes = {k: 0 for k, _ in CLASSES}
    trees = None
    for dev in devs:
        for k, v in (dev.get("classes") or {}).items():   # and classes a newer tracer adds
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                classes[k] = classes.get(k, 0) + int(v)
        t = trees_of(dev)
        if t is not None:
            trees = trees or {}
            for k, v in t.items():
                trees[k] = trees.get(k, 0) + v
    counter, counter_ios = _total(devs, "counter_bytes"), _total(devs, "counter_ios")
    charged = _total(devs, "charged_to_entries")
    tracer_ios = sum(int(_num(dev.get("ios"))) for dev in devs)
    startup = 0
    if base:
        bclasses, bstat, _ = base
        for k, v in bclasses.items():
            classes[k] = classes.get(k, 0) - v
        startup = sum(bclasses.values())
        counter = counter - bstat if counter is not None else None
        counter_ios = ios
    if ios is None:
        ios = counter_ios if counter_ios is not None else tracer_ios
    dev_bytes = sum(classes.values())
    losses = {k: v for k, v in (summary.get("losses") or {}).items() if _num(v)}
    procs = summary.get("processes") or []
    own = [p for p in procs if p.get("own")]
    own_bytes = sum(int(_num(v)) for p in own for v in (p.get("dev_bytes") or {}).values())
    entries = int(_num(summary.get("entries"))) - sum(int(_num(p.get("entries"))) for p in own)
    pages = sum(int(_num(p.get("pages_dirtied"))) for p in procs if not p.get("own"))
    return {
        "lines": lines,
        "logical_bytes": logical,
        "device_bytes": dev_bytes,
        "bytes_per_line": dev_bytes / lines if lines else None,
        "write_ios": int(_num(ios)),
        "ios_per_line": _num(ios) / lines if lines else None,
        "amplification": dev_bytes / logical if logical else None,
        "classes": classes,
        "class_share": {k: (v / dev_bytes if dev_bytes else 0.0) for k, v in classes.items()},
        "counter_bytes": counter,
        "counter_ios": counter_ios,
        "tracer_ios": tracer_ios if devs else None,
        "coverage": (dev_bytes / counter if counter else (1.0 if dev_bytes == 0 else None))
        if counter is not None else None,
        "charged_to_entries": charged,
        "entries": entries,
        "pages_dirtied": pages,
        "pages_per_line": pages / lines if lines else None,
        # Taken off the figures above: what the device wrote before the
        # lines while amptrace started (kernel audit on), and amptrace's
        # own entries' bill (all of it in that start-up).
        "startup_bytes": startup,
        "own_bytes": own_bytes,
        "losses": losses,
        "device_seen": len(devs) == len(disks),
        # btrfs metadata by tree, as the tracer counted it (start-up
        # included: it is not in the metrics the baseline reads).
        "btrfs_trees": trees,
    }
