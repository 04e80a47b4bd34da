# SPDX-License-Identifier: GPL-2.0
"""The text table: one row per (filesystem, stack, target, workload), and the live
screen that redraws it on a terminal with a progress line under it."""
import os
import shutil
import time

from .btrfs_trees import trees_text
from .util import fs_text, fmt_bytes, fmt_int, fmt_pct, fmt_small


COLUMNS = [  # (header, width, key / function)
    ("FS", 7, fs_text),
    ("TARGET", 16, lambda r: r["target"]),
    ("WORKLOAD", 13, lambda r: r["workload"]),
    ("LINES", 7, lambda r: fmt_int(r.get("lines"))),
    ("LOGICAL", 8, lambda r: fmt_bytes(r.get("logical_bytes"))),
    ("DEVICE", 8, lambda r: fmt_bytes(r.get("device_bytes"))),
    ("B/LINE", 9, lambda r: fmt_int(r.get("bytes_per_line"))),
    ("IOS", 6, lambda r: fmt_int(r.get("write_ios"))),
    ("IOS/LINE", 8, lambda r: fmt_small(r.get("ios_per_line"))),
    ("AMP", 8, lambda r: "-" if r.get("amplification") is None else f"{r['amplification']:,.1f}x"),
    ("DATA", 5, lambda r: fmt_pct((r.get("class_share") or {}).get("data"))),
    ("FSJ", 5, lambda r: fmt_pct((r.get("class_share") or {}).get("journal"))),
    ("META", 5, lambda r: fmt_pct((r.get("class_share") or {}).get("metadata"))),
    ("OTHER", 5, lambda r: fmt_pct((r.get("class_share") or {}).get("other"))),
    ("COVER", 7, lambda r: "-" if r.get("coverage") is None else f"{100 * r['coverage']:.1f}%"),
    ("LINES/S", 8, lambda r: fmt_int(r.get("lines_per_s"))),
    ("TIME", 7, lambda r: "-" if r.get("elapsed_s") is None else f"{r['elapsed_s']:.2f}s"),
]


def fit(rows):
    """Widen the FS, TARGET and WORKLOAD columns to the longest name."""
    for i in range(3):
        h, w, c = COLUMNS[i]
        COLUMNS[i] = (h, max([w] + [len(c(r)) for r in rows]), c)


def row_text(r):
    if r.get("status") in ("pending", "running", "failed", "skipped"):
        head = [f"{c(r):<{w}}" if i < 3 else "" for i, (_, w, c) in enumerate(COLUMNS[:3])]
        tail = {"pending": "…", "running": "running",
                "skipped": "skipped: " + r.get("error", ""),
                "failed": "FAILED: " + r.get("error", "")}[r["status"]]
        return " ".join(head) + " " + tail
    cells = []
    for i, (_, w, c) in enumerate(COLUMNS):
        v = c(r)
        cells.append(f"{v:<{w}}" if i < 3 else f"{v:>{w}}")
    return " ".join(cells).rstrip()


def header_text():
    return " ".join(f"{h:<{w}}" if i < 3 else f"{h:>{w}}"
                    for i, (h, w, _) in enumerate(COLUMNS))


class Screen:
    """The live table.  On a terminal: every row from the start (pending
    ones marked), redrawn in place with a progress line under it.  Else:
    the header, then each row as its result arrives."""

    def __init__(self, out, rows, title):
        self.out, self.rows, self.title = out, rows, title
        self.tty = out.isatty() and os.environ.get("TERM") != "dumb"
        self.drawn = 0
        self.status = ""
        self.last = 0.0
        self.started = time.monotonic()
        fit(rows)
        if not self.tty:
            print(title, file=out)
            print(header_text(), file=out, flush=True)

    def lines(self):
        el = time.monotonic() - self.started
        width = shutil.get_terminal_size((160, 40)).columns
        out = [self.title, header_text()]
        out += [row_text(r) for r in self.rows]
        out.append(f"[{int(el) // 60:d}:{int(el) % 60:02d}] {self.status}")
        return [l[:width - 1] for l in out]

    def clear(self):
        if self.tty and self.drawn:
            self.out.write(f"\x1b[{self.drawn}F\x1b[J")
            self.drawn = 0
            self.out.flush()

    def redraw(self):
        if not self.tty:
            return
        self.clear()
        ls = self.lines()
        self.out.write("\n".join(ls) + "\n")
        self.out.flush()
        self.drawn = len(ls)
        self.last = time.monotonic()

    def progress(self, msg, force=False):
        if "cleaning up" in self.status:
            msg = self.status
        self.status = msg
        if self.tty and (force or time.monotonic() - self.last > 0.2):
            self.redraw()

    def row_done(self, r):
        if self.tty:
            self.redraw()
        else:
            print(row_text(r), file=self.out, flush=True)

    def finish(self):
        if self.tty:
            self.clear()
            ls = self.lines()[:-1]
            self.out.write("\n".join(ls) + "\n")
            self.out.flush()
        sub = trees_text(self.rows)
        if sub:
            print("\n".join(sub), file=self.out, flush=True)
