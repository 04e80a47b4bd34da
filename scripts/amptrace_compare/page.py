# SPDX-License-Identifier: GPL-2.0
"""The HTML page: self-contained (inline SVG, no script, nothing fetched),
rendered from the JSON document alone, so --load draws the same page.

Per filesystem (and storage stack): device bytes per line by class for
every target (each journald version and setting beside rsyslog and the
appends), the class split, lines/s for bulk, the rows, and a verdict
paragraph (verdict.py).  With several stacks, what each adds per line
against the whole disk.  Then the untar / rm -rf pair across
filesystems, with its own verdict."""
import html

from . import verdict
from .devices import FS_LABEL
from .table import COLUMNS
from .tracer import CLASSES
from .util import fmt_int, fmt_small


CLASS_COLORS = {"data": "#3b73b9", "journal": "#e8833a", "metadata": "#4aa55b",
                "other": "#9a9a9a"}


def _svg_bars(rows, value, label, title, stacked=None, pct=False, unit_fmt=fmt_int,
              group=lambda r: r["fs"]):
    """Horizontal bar chart as inline SVG.  stacked: list of (key, color)
    and value(r) returns a dict of key -> number.  A small gap between
    groups (filesystems, workloads)."""
    rows = [r for r in rows if r.get("status") == "ok"]
    if not rows:
        return ""
    lw = max(210, 8 + 7 * max(len(label(r)) for r in rows))
    bw, rh, pad, gap = 560, 22, 6, 8
    ys, y = [], 26
    for i, r in enumerate(rows):
        if i and group(r) != group(rows[i - 1]):
            y += gap
        ys.append(y)
        y += rh
    h = y + 10
    totals = [sum(value(r).values()) if stacked else value(r) or 0 for r in rows]
    vmax = 1.0 if pct else max(max(totals), 1)
    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{lw + bw + 120}" '
           f'height="{h}" role="img" aria-label="{html.escape(title)}">',
           f'<text x="0" y="14" class="ct">{html.escape(title)}</text>']
    for r, tot, y in zip(rows, totals, ys):
        out.append(f'<text x="{lw - 8}" y="{y + rh / 2 + 4}" text-anchor="end" class="lb">'
                   f'{html.escape(label(r))}</text>')
        if stacked:
            x = lw
            parts = value(r)
            for key, color in stacked:
                v = parts.get(key, 0)
                wpx = bw * (v / (tot if pct and tot else 1)) / vmax if v else 0
                if wpx > 0:
                    out.append(f'<rect x="{x:.1f}" y="{y + pad / 2}" width="{wpx:.1f}" '
                               f'height="{rh - pad}" fill="{color}"><title>{key}: '
                               f'{v / tot * 100 if tot else 0:.1f}% ({fmt_int(v)})</title></rect>')
                    x += wpx
            txt = "" if pct else unit_fmt(tot)
        else:
            wpx = bw * tot / vmax
            out.append(f'<rect x="{lw}" y="{y + pad / 2}" width="{max(wpx, 1):.1f}" '
                       f'height="{rh - pad}" fill="{CLASS_COLORS["data"]}"/>')
            txt = unit_fmt(tot)
            x = lw + max(wpx, 1)
        if txt:
            out.append(f'<text x="{x + 5:.1f}" y="{y + rh / 2 + 4}" class="vl">{txt}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _table(rows, cols, e):
    out = ['<table><thead><tr>' + "".join(f"<th>{e(h)}</th>" for h, _ in cols) +
           "</tr></thead><tbody>"]
    for r in rows:
        if r.get("status") != "ok":
            out.append(f'<tr class="bad"><td>{e(r["target"])}</td><td>{e(r["workload"])}</td>'
                       f'<td colspan="{len(cols) - 2}">{e(r.get("status", ""))}: '
                       f'{e(r.get("error", ""))}</td></tr>')
            continue
        out.append("<tr>" + "".join(f"<td>{e(c(r))}</td>" for _, c in cols) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _section(title, sub, rows, names, unit, verdict_text, e, across_fs=False):
    """One filesystem's line rows, or the tree's rows across filesystems."""
    stack = [(k, CLASS_COLORS[k]) for k, _ in CLASSES]
    what = (lambda r: r["fs"]) if across_fs else (lambda r: r["target"])
    parts = [f'<section><h2>{e(title)} <small>{e(sub)}</small></h2>']
    if verdict_text:
        parts.append(f'<p class="verdict">{e(verdict_text)}</p>')
    for wn in names:
        wrows = [r for r in rows if r["workload"] == wn]
        parts.append(_svg_bars(wrows, lambda r: {k: (r["classes"].get(k, 0) / r["lines"])
                                                 for k, _ in CLASSES},
                               what, f"{wn}: device bytes per {unit}, by class", stacked=stack))
    parts.append(_svg_bars(rows, lambda r: {k: r["classes"].get(k, 0) for k, _ in CLASSES},
                           lambda r: f"{what(r)} · {r['workload']}",
                           "Class split of the device bytes", stacked=stack, pct=True,
                           group=lambda r: r["workload"]))
    if any(r.get("lines_per_s") for r in rows):
        parts.append(_svg_bars([r for r in rows if r.get("lines_per_s")],
                               lambda r: r.get("lines_per_s") or 0,
                               lambda r: f"{what(r)} · {r['workload']}", "Lines per second",
                               group=lambda r: r["workload"]))
    drop = {"TARGET" if across_fs else "FS"}
    if not any(r.get("lines_per_s") for r in rows):
        drop.add("LINES/S")
    cols = [(h.replace("LINE", unit.upper()), c) for h, _, c in COLUMNS if h not in drop]
    cols.insert(8, (f"PAGES/{unit.upper()}", lambda r: fmt_small(r.get("pages_per_line"))))
    cols.append(("START-UP", lambda r: fmt_int(r.get("startup_bytes")) if r.get("audit")
                 else "-"))
    parts.append(_table(rows, cols, e))
    parts.append("</section>")
    return "\n".join(parts)


def _stacks_section(rows, names, e):
    """Each (filesystem, target) across the stacks: bytes per line by
    class, the disks' bytes (a RAID1's two legs both)."""
    stack = [(k, CLASS_COLORS[k]) for k, _ in CLASSES]
    parts = ['<section><h2>What the storage stack adds <small>the disks\' bytes per line '
             '(every leg of a RAID1): what wears the device</small></h2>']
    text = verdict.storage(rows, names)
    if text:
        parts.append(f'<p class="verdict">{e(text)}</p>')
    for wn in names:
        wrows = sorted((r for r in rows if r["workload"] == wn),
                       key=lambda r: (r["fs"], r["target"]))
        parts.append(_svg_bars(wrows, lambda r: {k: (r["classes"].get(k, 0) / r["lines"])
                                                 for k, _ in CLASSES},
                               lambda r: f"{r['fs']} · {r['target']} · "
                                         f"{verdict.stack_label(r.get('stack', 'plain'))}",
                               f"{wn}: device bytes per line, by class", stacked=stack,
                               group=lambda r: (r["fs"], r["target"])))
    parts.append("</section>")
    return "\n".join(parts)


def render_html(doc):
    cfg = doc.get("config", {})
    results = doc.get("results", [])
    e = html.escape
    wls = cfg.get("workloads", [])
    wl_desc = {w["name"]: w.get("description", "") for w in wls}
    file_names = [w["name"] for w in wls if w.get("unit") == "file"]
    line_names = [w["name"] for w in wls if w.get("unit") != "file"] or \
        sorted({r["workload"] for r in results if r["workload"] not in file_names})
    legend = " ".join(f'<span class="key"><i style="background:{CLASS_COLORS[k]}"></i>{e(n)}</span>'
                      for k, n in CLASSES)
    parts = [f'<p class="legend">{legend}</p>']
    fss = cfg.get("filesystems") or sorted({r["fs"] for r in results})
    specs = cfg.get("stacks") or sorted({r.get("stack", "plain") for r in results})
    for fs in fss:
        for st in specs:
            rows = [r for r in results if r.get("fs") == fs and r.get("stack", "plain") == st
                    and r["workload"] in line_names]
            if not rows:
                continue
            sub = "; ".join(f"{w}: {wl_desc.get(w, '')}" for w in line_names if wl_desc.get(w))
            title = FS_LABEL.get(fs, fs) + \
                (f" on {verdict.stack_label(st)}" if len(specs) > 1 else "")
            parts.append(_section(title, sub, rows, line_names, "line",
                                  verdict.filesystem(rows, line_names), e))
    if len(specs) > 1:
        parts.append(_stacks_section([r for r in results if r["workload"] in line_names],
                                     line_names, e))
    trows = [r for r in results if r["workload"] in file_names]
    if trows:
        sub = "; ".join(f"{w}: {wl_desc.get(w, '')}" for w in file_names)
        parts.append(_section("untar / rm -rf: a filesystem journal on metadata-heavy work",
                              sub, trows, file_names, "file",
                              verdict.files(trows, file_names), e, across_fs=True))
    stacks_note = "" if (cfg.get("stacks") or ["plain"]) == ["plain"] else \
        e("stacks: " + ", ".join(f"{s} = {verdict.stack_label(s)}" for s in cfg["stacks"]) +
          "; a row's bytes are its bottom disks' (a RAID1's two legs both)") + "<br>"
    host = doc.get("host", {})
    status = "complete" if doc.get("complete") else \
        f"INCOMPLETE ({doc.get('interrupted') or 'stopped early'})"
    versions = ", ".join(cfg.get("journald_versions") or [])
    jnote = "" if not any(r["target"].startswith("journald") for r in results) else f"""<br>
journald {e(versions)}: each a private namespace instance (journald@VERSION; another
release than the host's in a chroot on that Debian release's tree), with its settings
after the colon; Storage=volatile+rsyslog keeps the journal in memory and forwards every
line to a private rsyslog whose file is on the loop filesystem"""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>amptrace compare</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; background: #fff; }}
h1 {{ font-size: 22px; margin: 0 0 4px; }} h2 {{ font-size: 17px; margin: 28px 0 6px; }}
h2 small {{ font-weight: normal; color: #666; }}
.meta {{ color: #555; margin: 0 0 12px; }}
.verdict {{ max-width: 72em; background: #f4f6f8; padding: 8px 12px; border-left: 3px solid #3b73b9; }}
svg.chart {{ display: block; margin: 10px 0; }}
svg .ct {{ font: bold 13px system-ui, sans-serif; fill: #333; }}
svg .lb {{ font: 12px system-ui, sans-serif; fill: #333; }}
svg .vl {{ font: 11px system-ui, sans-serif; fill: #444; }}
.legend .key {{ margin-right: 16px; }}
.legend i {{ display: inline-block; width: 12px; height: 12px; margin-right: 5px;
             vertical-align: -1px; }}
table {{ border-collapse: collapse; font: 12px ui-monospace, monospace; }}
th, td {{ padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: right; }}
th:nth-child(-n+2), td:nth-child(-n+2) {{ text-align: left; }}
tr.bad td {{ color: #b00; text-align: left; }}
</style></head><body>
<h1>amptrace compare</h1>
<p class="meta">{e(doc.get("started", ""))} · {e(status)} · kernel {e(host.get("kernel", "?"))}
· {e(host.get("journald", ""))} · {e(host.get("rsyslog", ""))}<br>
filesystems: {e(", ".join(f"{f} = {FS_LABEL.get(f, f)}" for f in cfg.get("filesystems", [])))}<br>
{stacks_note}
line: {cfg.get("text_line_bytes", "?")} bytes as text ({cfg.get("fields", 0)} extra fields) ·
loop filesystems of {cfg.get("fs_size_mb", "?")} MB, fresh mkfs per target ·
device bytes are amptrace's classes, which sum to /sys/block/DEV/stat (COVER){jnote}</p>
{"".join(parts)}
<p class="meta">As amptrace classes the device's bytes: DATA file pages (of the logger's
entries, or of files), FSJ the filesystem journal (ext4's jbd2, xfs's log), META metadata
(block-device, directory and other non-file pages, REQ_META), OTHER the rest.
B/LINE = device bytes / lines (for untar and rm -rf: / files); AMP = device bytes / logical
bytes (the lines as text; the tree's file bytes); PAGES/LINE = file pages the logger dirtied
per line; COVER = classes / /sys/block counter; TIME = from the first line to the last
taken (untar, rm -rf: the command and its sync).
amptrace's own cost is in no row: where kernel audit was on (journald 257's default), its
program loads became audit records journald stored; those pages were written out before
the lines and taken off the row (START-UP, bytes).</p>
</body></html>
"""
