# SPDX-License-Identifier: GPL-2.0
"""The btrfs sub-table: each btrfs run's metadata by tree, in bytes per
line (per file for untar and rmrf), from the summary's
devices[].btrfs_trees.  It answers "why does one line cost 250 KB on
btrfs": which trees its commits and fsyncs copied."""
from .util import fmt_int, fs_text

# (header, keys of devices[].btrfs_trees summed into the column)
TREES = [
    ("FS", ("fs",)), ("EXTENT", ("extent",)), ("CSUM", ("csum",)),
    ("FREESP", ("free_space",)), ("ROOT", ("root",)), ("LOG", ("log",)),
    ("CHUNK/DEV", ("chunk", "dev", "block_group")), ("SUPER", ("super",)),
    ("OTHER", ("other", "unknown")),
]


def trees_of(dev):
    """devices[] item -> {tree: bytes}, or None off btrfs."""
    t = dev.get("btrfs_trees")
    if not isinstance(t, dict):
        return None
    return {k: int(v) for k, v in t.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


def trees_text(rows):
    """Lines of the sub-table (none if no row has btrfs trees)."""
    rows = [r for r in rows if r.get("status", "ok") == "ok" and r.get("btrfs_trees")]
    if not rows:
        return []
    names = [f"{fs_text(r)} {r['target']} {r['workload']}" for r in rows]
    w = max(len(n) for n in names + ["RUN"])
    out = ["", "btrfs metadata by tree, bytes per line (amptrace's devices[].btrfs_trees):",
           f"{'RUN':<{w}} " + " ".join(f"{h:>9}" for h, _ in TREES) + f" {'TOTAL':>9}"]
    for n, r in zip(names, rows):
        t, lines = r["btrfs_trees"], r.get("lines") or 1
        cells = [sum(t.get(k, 0) for k in keys) / lines for _, keys in TREES]
        out.append(f"{n:<{w}} " + " ".join(f"{fmt_int(c):>9}" for c in cells)
                   + f" {fmt_int(sum(t.values()) / lines):>9}")
    return out
