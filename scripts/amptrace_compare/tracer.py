# SPDX-License-Identifier: GPL-2.0
"""One measurement window: `amptrace trace` started and stopped around a
workload, and its summary read into a result row."""
import contextlib
import json
import os
import signal
import subprocess

from .paths import AMPTRACE
from .util import CLEANUP, RunFailed, log, spawn, stop_process, wait_for

# The device classes of amptrace's summary, in table order.
CLASSES = [("data", "data"), ("journal", "fs journal"), ("metadata", "metadata"),
           ("other", "other")]


class Tracer:
    def __init__(self, scratch, tag):
        self.out = os.path.join(scratch, f"trace-{tag}.json")
        self.err = os.path.join(scratch, f"trace-{tag}.err")
        self.proc = None

    def start(self, dev, args):
        argv = [AMPTRACE, "trace", "-j", "-q", "-o", self.out, "--dev", dev] + args
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


def result_from_summary(summary, devname, lines, logical):
    """Read the tracer's summary defensively: missing keys count as 0."""
    dev = next((d for d in summary.get("devices") or [] if d.get("name") == devname), {})
    raw = dev.get("classes") or {}
    classes = {k: int(_num(raw.get(k))) for k, _ in CLASSES}
    for k, v in raw.items():                # classes a newer tracer may add
        if k not in classes and isinstance(v, (int, float)):
            classes[k] = int(v)
    dev_bytes = sum(classes.values())
    counter = dev.get("counter_bytes")
    ios = dev.get("counter_ios", dev.get("ios"))
    losses = {k: v for k, v in (summary.get("losses") or {}).items() if _num(v)}
    entries = int(_num(summary.get("entries")))
    pages = sum(int(_num(p.get("pages_dirtied"))) for p in summary.get("processes") or [])
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
        "counter_ios": dev.get("counter_ios"),
        "tracer_ios": dev.get("ios"),
        "coverage": (dev_bytes / counter if counter else (1.0 if dev_bytes == 0 else None))
        if counter is not None else None,
        "charged_to_entries": dev.get("charged_to_entries"),
        "entries": entries,
        "pages_dirtied": pages,
        "pages_per_line": pages / lines if lines else None,
        "losses": losses,
        "device_seen": bool(dev),
    }
