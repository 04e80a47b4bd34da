#!/usr/bin/env python3
"""The soak of scripts/bench.sh (DIR/soak.tsv, DIR/soak.env) as a report:
the exporter's RSS after its warm-up (flat: within 10 %), its CPU, and
entries and drops at the end against the lines written.

Every line is one write() and so one entry.  The writer's thread may have
two more (seen with trace -j): its result line, printed at the end to a
regular file (a write of ~120 bytes), and what it dirtied before its first
write (syscall "-").  So lines <= entries <= lines + 2.  Drops are the
losses of measurement (full maps or ring, pages outside entries, entries
given up on); the other loss counters are printed beside them.

  soak_report.py DIR
"""
import shlex
import sys

RSS_SPREAD = 10.0    # % between the smallest and largest RSS after warm-up


def main(d):
    env = {}
    with open(f"{d}/soak.env") as f:
        for line in f:
            k, v = line.rstrip("\n").split("=", 1)
            env[k] = " ".join(shlex.split(v)) if v else ""
    rows = []
    with open(f"{d}/soak.tsv") as f:
        next(f)
        for line in f:
            t, rss, ticks, entries, losses = (int(x) for x in line.split("\t"))
            rows.append((t, rss, ticks, entries, losses))
    warm, hz = int(env["warmup_s"]), int(env["clk_tck"])
    after = [r for r in rows if r[0] >= warm]
    out = [f"Soak: the exporter (trace -q --metrics --metrics-file) under {int(env['rate']):,} "
           f"lines/s for {env['minutes']} min, {len(rows)} samples; warm-up {warm} s",
           f"  writer: {env['writer']}"]
    res = []
    if len(after) >= 2:
        rss = [r[1] for r in after]
        lo, hi = min(rss), max(rss)
        spread = (hi - lo) / lo * 100
        dt = after[-1][0] - after[0][0]
        slope = (after[-1][1] - after[0][1]) / 1024 / (dt / 3600) if dt else 0
        cpu = (after[-1][2] - after[0][2]) / hz / dt * 100 if dt else 0
        out.append(f"  RSS after warm-up: {lo / 1024:.1f}..{hi / 1024:.1f} MiB (spread {spread:.1f} %), "
                   f"first to last {slope:+.1f} MiB/hour; at start {rows[0][1] / 1024:.1f} MiB")
        out.append(f"  exporter CPU after warm-up: {cpu:.2f} % of one core")
        res.append(("RSS flat after warm-up", f"spread {spread:.1f} %", f"<= {RSS_SPREAD:.0f} %",
                    "PASS" if spread <= RSS_SPREAD else "MISS"))
    else:
        res.append(("RSS flat after warm-up", "too few samples", f"<= {RSS_SPREAD:.0f} %", "-"))
    lines, entries, drops = int(env["lines"]), int(env["final_entries"]), int(env["final_drops"])
    out.append(f"  at the end: {lines:,} lines written, {entries:,} entries counted, drops {drops}; "
               f"non-zero loss counters: {env['final_losses'] or 'none'}; exit status {env['exit_status']}")
    ok = lines <= entries <= lines + 2 and drops == 0 and env["exit_status"] == "0"
    res.append(("no loss: every line an entry, no drop", f"{entries:,} of {lines:,}, drops {drops}",
                "all, 0", "PASS" if ok else "MISS"))
    out.append(f"  {'target':<48} {'measured':<36} {'goal':<9} result")
    for name, measured, goal, result in res:
        out.append(f"  {name:<48} {measured:<36} {goal:<9} {result}")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
