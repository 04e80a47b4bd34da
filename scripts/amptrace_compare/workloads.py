# SPDX-License-Identifier: GPL-2.0
"""The workloads: how many lines, and when each is sent; or, for the
metadata-heavy pair (untar, rmrf), how many files."""
import time

from .util import UsageError, sleep


# The metadata-heavy pair: a generated source tree (tree.py) untarred
# onto the filesystem, or removed with rm -rf; a "line" is then a file.
FILE_KINDS = ("untar", "rmrf")


class Workload:
    """kind: one | burst | trickle | bulk (lines to a logger); untar |
    rmrf (files, no logger: the tree target)."""

    def __init__(self, spec):
        self.spec = spec
        parts = spec.split(":")
        kind, args = parts[0], parts[1:]
        try:
            nums = [float(a) for a in args]
        except ValueError:
            raise UsageError(f"workload '{spec}': numbers expected after ':'")
        self.kind = kind
        self.interval = self.duration = None
        self.writeback_wait = 0.0
        if kind == "one" and not args:
            self.lines = 1
        elif kind == "burst" and len(args) <= 1:
            self.lines = int(nums[0]) if nums else 10
        elif kind == "bulk" and len(args) <= 1:
            self.lines = int(nums[0]) if nums else 100_000
        elif kind in FILE_KINDS and len(args) <= 1:
            self.lines = int(nums[0]) if nums else 5000
            if self.lines > 1_000_000:
                raise UsageError(f"workload '{spec}': at most 1000000 files")
        elif kind == "trickle" and len(args) <= 3:
            self.interval = nums[0] if nums else 5.0
            self.duration = nums[1] if len(nums) > 1 else 60.0
            # Left to the kernel's own write-back, as a health check would be:
            # dirty_expire (30 s) + one flusher period (5 s), then syncfs.
            self.writeback_wait = nums[2] if len(nums) > 2 else 35.0
            if self.interval <= 0 or self.duration < self.interval:
                raise UsageError(f"workload '{spec}': want trickle:S:T with 0 < S <= T")
            self.lines = int(self.duration // self.interval)
        else:
            raise UsageError(f"unknown workload '{spec}' (one, burst[:N], "
                             "trickle[:S:T[:WAIT]], bulk[:N], untar[:N], rmrf[:N])")
        self.files = kind in FILE_KINDS
        if self.lines < 1:
            raise UsageError(f"workload '{spec}': at least one "
                             f"{'file' if self.files else 'line'}")
        if kind == "trickle":
            self.name = f"trickle:{self.interval:g}:{self.duration:g}"
        else:
            self.name = kind if kind == "one" else f"{kind}:{self.lines}"

    def describe(self):
        if self.kind == "trickle":
            return (f"one line every {self.interval:g} s for {self.duration:g} s, "
                    f"then {self.writeback_wait:g} s of kernel write-back")
        return {"one": "one line", "burst": f"a burst of {self.lines} lines",
                "bulk": f"{self.lines:,} lines as fast as the target takes them",
                "untar": f"tar -x of a generated source tree of {self.lines:,} files, then sync",
                "rmrf": f"rm -rf of that tree of {self.lines:,} files, then sync"}[self.kind]

    def as_json(self):
        return {"name": self.name, "kind": self.kind, "lines": self.lines,
                "unit": "file" if self.files else "line",
                "interval_s": self.interval, "duration_s": self.duration,
                "writeback_wait_s": self.writeback_wait, "description": self.describe()}

    def run(self, target, seq0, progress):
        """Send the lines; return (first send, all delivered) monotonic times."""
        if self.files:
            return target.run_files(self, progress)
        t0 = time.monotonic()
        if self.kind == "trickle":
            for i in range(self.lines):
                due = t0 + i * self.interval
                while time.monotonic() < due:
                    progress(f"line {i}/{self.lines}, next in {due - time.monotonic():.0f} s")
                    sleep(min(0.5, due - time.monotonic()))
                target.send(seq0 + i)
                target.flush()
            progress(f"line {self.lines}/{self.lines}")
        else:
            step = max(1, self.lines // 200)
            for i in range(self.lines):
                target.send(seq0 + i)
                if i % step == 0:
                    progress(f"sent {i + 1:,}/{self.lines:,}")
            target.flush()
        progress(f"waiting for {target.name} to take {self.lines:,} lines")
        t1 = target.drain(60, progress)
        return t0, t1
