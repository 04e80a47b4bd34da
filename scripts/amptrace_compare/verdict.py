# SPDX-License-Identifier: GPL-2.0
"""The verdicts: one paragraph per filesystem, one for the untar / rm -rf
pair, and one for the storage stacks, computed from the rows alone (so
--load gives the same words).

Per line workload on a filesystem: persistent journald of each version
against the others; each journald setting against its version's defaults
(Storage=volatile+rsyslog, the mitigation, among them); rsyslog and the
plain appends against persistent journald; and the cheapest target.  Two
figures within SAME of each other are called the same: a few pages move
between runs."""
import re

from . import stacks

SAME = 1.10


def _bpl(r):
    return r.get("bytes_per_line") if r.get("status") == "ok" else None


def _n(x):
    return f"{x:,.0f}"


def _ratio(a, b):
    """'N.Nx fewer' / 'N.Nx more' / 'the same' for A against B."""
    if not a or not b:
        return None
    if b / a >= SAME:
        return f"{b / a:.1f}x fewer"
    if a / b >= SAME:
        return f"{a / b:.1f}x more"
    return "the same within 10%"


def _journald(name):
    """journald@V[:settings] -> (V, settings string) or None."""
    m = re.fullmatch(r"journald@(\d+)((?::[^:]+)*)", name)
    return (m.group(1), m.group(2)[1:]) if m else None


def line_workload(rows, wname, unit="line"):
    """Sentences for one line workload's rows on one filesystem."""
    by = {r["target"]: _bpl(r) for r in rows if _bpl(r)}
    if not by:
        return []
    base = {}                       # version -> persistent journald, defaults
    for t, v in by.items():
        j = _journald(t)
        if j and not j[1]:
            base[j[0]] = v
    out = []
    vs = sorted(base, key=int)
    if vs:
        out.append(f"persistent journald {vs[0]} writes {_n(base[vs[0]])} bytes per {unit}")
    for v in vs[1:]:
        out.append(f"journald {v}: {_ratio(base[v], base[vs[0]])} ({_n(base[v])})")
    for t, v in by.items():
        j = _journald(t)
        if not j or not j[1] or j[0] not in base:
            continue
        what = _ratio(v, base[j[0]])
        if what.startswith("the same"):
            out.append(f"{j[1]} on journald {j[0]}: {what} of its defaults ({_n(v)})")
        else:
            out.append(f"{j[1]}: {what} bytes per {unit} than persistent journald {j[0]} "
                       f"({_n(v)} vs {_n(base[j[0]])})")
    if base:
        worst_v = max(base, key=lambda k: base[k])
        for t in ("rsyslog", "append", "append+fdatasync"):
            if t in by:
                out.append(f"{t}: {_ratio(by[t], base[worst_v])} than journald {worst_v} "
                           f"({_n(by[t])})")
    low = min(by.values())
    best = [t for t, v in by.items() if v == low]
    names = ", ".join(best[:-1]) + " and " + best[-1] if len(best) > 1 else best[0]
    out.append(f"cheapest: {names} ({_n(low)} bytes per {unit})")
    return out


def filesystem(rows, workloads):
    """One paragraph for one filesystem's line rows."""
    parts = []
    for w in workloads:
        s = line_workload([r for r in rows if r["workload"] == w], w)
        if s:
            parts.append(f"{w}: " + "; ".join(s) + ".")
    return " ".join(parts)


def files(rows, workloads):
    """One paragraph for the untar / rm -rf rows of every filesystem."""
    parts = []
    for w in workloads:
        ok = {r["fs"]: r for r in rows if r["workload"] == w and r.get("status") == "ok"}
        if not ok:
            continue
        s = [f"{fs} {_n(r['bytes_per_line'])} bytes per file "
             f"({100 * (r.get('class_share') or {}).get('journal', 0):.0f}% fs journal, "
             f"{r.get('elapsed_s', 0):.2f} s)" for fs, r in ok.items()]
        if "ext4" in ok and "ext4nj" in ok:
            j, nj = ok["ext4"]["device_bytes"], ok["ext4nj"]["device_bytes"]
            if nj:
                s.append(f"ext4's journal: {j / nj:.2f}x the bytes of ext4 without one")
        best = min(ok, key=lambda k: ok[k]["device_bytes"])
        s.append(f"fewest bytes: {best}")
        parts.append(f"{w}: " + "; ".join(s) + ".")
    return " ".join(parts)


def stack_label(spec):
    try:
        return stacks.label(spec)
    except ValueError:
        return spec


def storage(rows, workloads):
    """One paragraph: per (filesystem, target, workload), each stack's
    bytes per line against the whole disk's (the first stack's without
    one), so what encryption or mirroring adds per line reads off it."""
    parts = []
    keys = []
    for r in rows:
        k = (r["fs"], r["target"], r["workload"])
        if k not in keys and r["workload"] in workloads:
            keys.append(k)
    for fs, t, w in keys:
        by = {r.get("stack", "plain"): _bpl(r) for r in rows
              if (r["fs"], r["target"], r["workload"]) == (fs, t, w) and _bpl(r)}
        if len(by) < 2:
            continue
        base = "plain" if "plain" in by else next(iter(by))
        s = [f"{stack_label(base)} {_n(by[base])} bytes per line"]
        s += [f"{stack_label(st)} {v / by[base]:.2f}x ({_n(v)})"
              for st, v in by.items() if st != base]
        parts.append(f"{fs} · {t} · {w}: " + "; ".join(s) + ".")
    return " ".join(parts)
