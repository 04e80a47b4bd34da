#!/usr/bin/env python3
"""Render scripts/bench.sh's raw results (DIR/*.tsv, DIR/meta.env) as the
figures table, the per-program costs and the targets of issues #7 and #18.

  report.py DIR

A ratio is traced/untraced throughput within one repetition (the modes of a
repetition run back to back, in rotating order); the reported ratio is the
median over repetitions, and "slower" is 1 - ratio.  The spread (min..max
over repetitions) shows how much of a figure is noise on a shared machine.
"""
import collections
import math
import shlex
import statistics
import sys

# Targets of issues #7 and #18.
T_JOURNALD = 3.0     # % slower, journald ingest (median)
T_SYNTH = 8.0        # % slower, synthetic dirtying
T_DIRTY_X = 3.0      # dirty-folio event: times the empty program's ns
T_LOADER_CPU = 2.0   # % of one core at 10k entries/s
T_RSS_MIB = 64       # loader peak RSS
DROP_KEYS = ("ringbuf_drops", "pages_untracked")   # plus every *_full


def is_drop(key):
    return key.endswith("_full") or key in DROP_KEYS


def read_tsv(path, ncols):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == ncols:
                    rows.append(parts)
    except FileNotFoundError:
        pass
    return rows


def read_meta(path):
    meta = {}
    try:
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k] = " ".join(shlex.split(v)) if v else ""
    except FileNotFoundError:
        pass
    return meta


def fnum(x, nd=0):
    return f"{x:,.{nd}f}"


class Throughput:
    """samples.tsv: phase workload mode rep metric value."""

    def __init__(self, rows):
        self.v = collections.defaultdict(dict)   # (phase, wl, metric, mode) -> {rep: value}
        for phase, wl, mode, rep, metric, value in rows:
            try:
                self.v[(phase, wl, metric, mode)][int(rep)] = float(value)
            except ValueError:
                pass

    def median(self, phase, wl, metric, mode):
        vals = list(self.v.get((phase, wl, metric, mode), {}).values())
        return statistics.median(vals) if vals else None

    def ratios(self, phase, wl, metric, mode):
        base = self.v.get((phase, wl, metric, "untraced"), {})
        other = self.v.get((phase, wl, metric, mode), {})
        return [other[r] / base[r] for r in sorted(base) if r in other and base[r] > 0]

    def slower(self, phase, wl, metric, mode, cost=False):
        """(median %, min %, max %, n) or None: for a throughput, % slower
        (1 - traced/untraced); for a cost (cost=True), % more
        (traced/untraced - 1)."""
        r = self.ratios(phase, wl, metric, mode)
        if not r:
            return None
        f = (lambda x: 100 * (x - 1)) if cost else (lambda x: 100 * (1 - x))
        s = [f(x) for x in r]
        return f(statistics.median(r)), min(s), max(s), len(r)

    def slower_values(self, phase, wl, metric, mode, cost=False):
        f = (lambda x: 100 * (x - 1)) if cost else (lambda x: 100 * (1 - x))
        return [f(x) for x in self.ratios(phase, wl, metric, mode)]

    def noise(self, phase, wl, metric):
        vals = list(self.v.get((phase, wl, metric, "untraced"), {}).values())
        if len(vals) < 2:
            return None
        return 100 * (max(vals) - min(vals)) / statistics.median(vals)


def median_ci(xs, coverage=0.9):
    """Distribution-free confidence interval of the median: the order
    statistics x(k), x(n+1-k) with the largest k whose coverage is still
    >= `coverage` (for n = 5: min..max, 94 %; below 5, min..max)."""
    xs = sorted(xs)
    n = len(xs)
    best = None
    for k in range(1, n // 2 + 1):
        tail = sum(math.comb(n, i) for i in range(k)) / 2 ** n
        if 1 - 2 * tail >= coverage:
            best = k
    if best is None:   # n < 5: min..max (n = 3: 75 %)
        return (xs[0], xs[-1]) if xs else None
    return xs[best - 1], xs[n - best]


def verdict(values, goal):
    """PASS / MISS when the median's 90 % interval is on one side of the
    goal, else 'unsure' with the side the median is on."""
    if not values:
        return None
    med = statistics.median(values)
    ci = median_ci(values)
    if ci and ci[1] <= goal:
        return "PASS"
    if ci and ci[0] > goal:
        return "MISS"
    return "unsure (median " + ("passes)" if med <= goal else "misses)")


def fmt_slow(s):
    if not s:
        return "n/a"
    med, lo, hi, _ = s
    return f"{med:+.1f}% ({lo:+.0f}..{hi:+.0f})"


def throughput_table(out, tp, phase, wls, metric, title, modes, cost=False, nd=0):
    word = "more" if cost else "slower"
    modes = [m for m in modes if any(k[0] == phase and k[3] == m for k in tp.v)]
    head = f"  {title:<26} {'untraced':>10}"
    for m in modes[1:]:
        head += f" {m:>10} {word + ' (min..max)':>23}"
    out.append(head + f" {'noise':>6}")
    for wl in wls:
        u = tp.median(phase, wl, metric, "untraced")
        if u is None:
            continue
        line = f"    {wl:<24} {fnum(u, nd):>10}"
        for m in modes[1:]:
            med = tp.median(phase, wl, metric, m)
            line += f" {fnum(med, nd) if med else 'n/a':>10} {fmt_slow(tp.slower(phase, wl, metric, m, cost)):>23}"
        n = tp.noise(phase, wl, metric)
        line += f" {('%.0f%%' % n) if n is not None else 'n/a':>6}"
        out.append(line)


def stats_tables(out, rows):
    """stats.tsv: tracer workload prog cnt ns."""
    data = collections.defaultdict(lambda: [0, 0])   # (tracer, prog, wl) -> [cnt, ns]
    wls, progs = [], collections.defaultdict(list)
    for tracer, wl, prog, cnt, ns in rows:
        d = data[(tracer, prog, wl)]
        d[0] += int(cnt)
        d[1] += int(ns)
        if wl not in wls:
            wls.append(wl)
        if prog not in progs[tracer]:
            progs[tracer].append(prog)
    if not rows:
        out.append("  (no per-program figures)")
        return data, wls
    for tracer in progs:
        tw = [w for w in wls if any((tracer, p, w) in data for p in progs[tracer])]
        out.append(f"  {tracer}: events / mean ns per event, per workload")
        out.append(f"  {'program':<22}" + "".join(f" {w:>22}" for w in tw) + f" {'total ms':>9}")
        for p in progs[tracer]:
            line = f"  {p:<22}"
            tot = 0
            for w in tw:
                cnt, ns = data.get((tracer, p, w), (0, 0))
                tot += ns
                line += f" {(fnum(cnt) + ' / ' + (fnum(ns / cnt) if cnt else '-')):>22}"
            out.append(line + f" {tot / 1e6:>9.1f}")
        line = f"  {'all programs, ms':<22}"
        for w in tw:
            ns = sum(data.get((tracer, p, w), (0, 0))[1] for p in progs[tracer])
            line += f" {ns / 1e6:>22.1f}"
        out.append(line)
        out.append("")
    return data, wls


# Programs by the tracepoint they run on, to set amptrace's beside the
# empty program's ("floor") and bpftrace's on the same event.
AMP_EVENTS = {
    "on_syscall_enter": "syscall enter", "on_syscall_enter_cast": "syscall enter",
    "on_sys_enter": "syscall enter",
    "on_syscall_exit": "syscall exit", "on_sys_exit": "syscall exit",
    "on_dirty_folio": "dirty folio", "on_dirty_page": "dirty folio",
    "on_rq_complete": "request complete", "on_rq_complete_cast": "request complete",
    "on_rq_complete_bounded": "request complete",  # (older builds' name)
    "on_bio_queue": "bio queue", "on_thread_exit": "thread exit",
    "on_jbd2_handle_start": "jbd2 handle start", "on_jbd2_start_commit": "jbd2 start commit",
    "on_jbd2_end_commit": "jbd2 end commit",
}
TP_EVENTS = {
    "writeback_dirty_folio": "dirty folio", "writeback_dirty_page": "dirty folio",
    "block_rq_complete": "request complete", "block_bio_queue": "bio queue",
    "sched_process_exit": "thread exit", "jbd2_handle_start": "jbd2 handle start",
    "jbd2_start_commit": "jbd2 start commit", "jbd2_end_commit": "jbd2 end commit",
}


def event_of(tracer, prog):
    if tracer == "amptrace":
        return AMP_EVENTS.get(prog)
    if not prog.startswith("tp:"):
        return None
    tps = prog[3:].split("+")
    if all(t.startswith("sys_enter_") for t in tps):
        return "syscall enter"
    if all(t.startswith("sys_exit_") for t in tps):
        return "syscall exit"
    evs = {TP_EVENTS.get(t) for t in tps}
    return evs.pop() if len(evs) == 1 else None


def per_event(rows):
    """(tracer, workload, event) -> [events, ns] from stats.tsv rows."""
    ev = collections.defaultdict(lambda: [0, 0])
    for tracer, wl, prog, cnt, ns in rows:
        e = event_of(tracer, prog)
        if e:
            d = ev[(tracer, wl, e)]
            d[0] += int(cnt)
            d[1] += int(ns)
    return ev


def floor_ns(ev, wl, e):
    """The empty program's ns per event: same workload, else any (its
    cost hardly depends on the workload)."""
    cnt, ns = ev.get(("floor", wl, e), (0, 0))
    if cnt >= 100:
        return ns / cnt, ""
    cands = [(c, n) for (t, w, x), (c, n) in ev.items() if t == "floor" and x == e and c >= 100]
    if cands:
        c, n = max(cands)
        return n / c, "*"
    return None, ""


def event_table(out, ev, wls):
    """amptrace's ns per event against the floor's and bpftrace's, same
    tracepoint, same workload."""
    out.append("3c. per event, same tracepoint: amptrace ns/event, x the empty program (floor),")
    out.append("    x bpftrace's program there ('*': floor measured under the write workload)")
    out.append(f"  {'workload':<18} {'event':<18} {'events':>10} {'amptrace':>9} {'floor':>7} "
               f"{'x floor':>8} {'bpftrace':>9} {'x bpftrace':>10}")
    for w in wls:
        for e in sorted({x for (t, ww, x) in ev if t == "amptrace" and ww == w}):
            cnt, ns = ev[("amptrace", w, e)]
            if cnt < 100:
                continue
            a = ns / cnt
            f, mark = floor_ns(ev, w, e)
            bc, bn = ev.get(("bpftrace", w, e), (0, 0))
            b = bn / bc if bc >= 100 else None
            out.append(f"  {w:<18} {e:<18} {fnum(cnt):>10} {fnum(a):>9} "
                       f"{(fnum(f) + mark) if f else '-':>7} {('%.1fx' % (a / f)) if f else '-':>8} "
                       f"{fnum(b) if b else '-':>9} {('%.2fx' % (a / b)) if b else '-':>10}")
    out.append("")


def main(d):
    meta = read_meta(f"{d}/meta.env")
    tp = Throughput(read_tsv(f"{d}/samples.tsv", 6))
    losses = read_tsv(f"{d}/losses.tsv", 6)
    loader = [r[:9] + [r[9] if len(r) > 9 else ""] for r in
              read_tsv(f"{d}/loader.tsv", 10) + read_tsv(f"{d}/loader.tsv", 9)]
    stats = read_tsv(f"{d}/stats.tsv", 5)
    modes = ["untraced", "amptrace"]
    if any(k[3] == "bpftrace" for k in tp.v) or any(r[0] == "bpftrace" for r in loader + stats):
        modes.append("bpftrace")
    if any(k[3] == "floor" for k in tp.v):
        modes.append("floor")
    out = []
    out.append(f"amptrace benchmark, {meta.get('date', '?')}: {meta.get('mode', '?')} mode, "
               f"{meta.get('reps', '?')} repetitions, {meta.get('elapsed_s', '?')} s")
    out.append(f"  kernel {meta.get('kernel', '?')}, {meta.get('cpus', '?')} CPUs, "
               f"{meta.get('mem', '?')}; journald {meta.get('journald', '?')}; "
               f"bpftrace {meta.get('bpftrace', '?')}")
    out.append(f"  amptrace {meta.get('commit', '?')}, binary sha256 {meta.get('binary', '?')}")
    out.append(f"  load average at start {meta.get('load_start', '?')}, at end "
               f"{meta.get('load_end', '?')} (other work on the machine shows up as noise)")
    foreign = [v for k, reps in tp.v.items() if k[2] == "foreign_progs" for v in reps.values()]
    foreign += [float(r[9]) for r in loader if r[9]]
    if foreign:
        busy = sum(1 for v in foreign if v > 0)
        out.append(f"  other tracers' BPF programs loaded during {busy} of {len(foreign)} runs "
                   f"(max {max(foreign):.0f}): they slow traced and untraced runs alike")
    out.append("")

    out.append("Medians over the repetitions; 'slower' = 1 - traced/untraced and 'more' =")
    out.append("traced/untraced - 1, taken within each repetition, median (min..max);")
    out.append("noise = range of the untraced runs / their median.")
    out.append("")
    out.append(f"1. journald ingest: {fnum(int(meta.get('j_n', 0) or 0))} entries of "
               f"{meta.get('line', '?')} bytes per run, until all are in the journal files")
    jw = ["native", "syslog", "stream"]
    if "floor" in modes:
        out.append("  (floor: empty bpftrace programs on the same tracepoints: what attaching")
        out.append("   anything there costs, mostly the raw syscall tracepoints' slow path)")
    throughput_table(out, tp, "journald", jw, "lines_per_s", "lines/s", modes)
    throughput_table(out, tp, "journald", jw, "cpu_us_per_line", "journald CPU us/line",
                     modes, cost=True, nd=2)
    out.append("")
    out.append(f"2. synthetic dirtying on a loop ext4: {meta.get('synth_mib', '?')} MiB rewritten "
               f"in place through write() ({meta.get('write_block', '?')}-byte calls) and through")
    out.append(f"   a shared mapping (a 1-byte write() every {meta.get('mmap_mark', '?')} pages "
               f"opens the entry the faults are charged to)")
    if "floor" in modes:
        out.append("  (floor: empty bpftrace programs on the same tracepoints; one write(): the")
        out.append("   writer's median time per call, steadier than MiB/s)")
    sw = ["write", "mmap"]
    throughput_table(out, tp, "synth", sw, "dirty_mib_s", "dirtying MiB/s", modes)
    throughput_table(out, tp, "synth", sw, "cpu_s", "writer CPU s", modes, cost=True, nd=3)
    throughput_table(out, tp, "synth", ["write"], "call_ns_p50", "one write(), median ns",
                     modes, cost=True)
    throughput_table(out, tp, "synth", sw, "total_mib_s", "with fsync MiB/s (no goal)", modes)
    out.append("")

    if losses:
        agg = collections.defaultdict(list)
        for phase, wl, mode, rep, k, v in losses:
            if k != "entries":
                agg[(phase, wl, k)].append(int(v))
        if agg:
            out.append("  amptrace losses in the throughput runs (median over runs that had any):")
            for (phase, wl, k), vs in sorted(agg.items()):
                out.append(f"    {phase} {wl}: {k} {fnum(statistics.median(vs))} "
                           f"({len(vs)} of the runs)")
            out.append("")

    out.append("3a. per-program cost (kernel.bpf_stats_enabled: run_cnt, run_time_ns / run_cnt),")
    out.append("    one run per workload with stats on; 'all programs' = BPF time the workload paid")
    data, wls = stats_tables(out, stats)
    ev = per_event(stats)
    if ev:
        event_table(out, ev, wls)
    locks = read_tsv(f"{d}/locks.tsv", 4)
    if locks:
        out.append("3d. locked map operations per dirty-folio event, counted by amptrace (the")
        out.append("    common path takes none: a folio's owner goes to a hash only when its")
        out.append("    table window is full; each finished entry also reserves ring space once)")
        for wl, key, num, den in locks:
            n, dd = int(num), int(den)
            out.append(f"  {wl:<18} {key:<44} {fnum(n):>10} / {fnum(dd):>10} = "
                       f"{(n / dd) if dd else 0:.4f}")
        out.append("")

    out.append(f"3b. tracer process under a rate-limited writer ({meta.get('line', '?')}-byte appends, "
               f"one write() each, --preset write, {meta.get('rate_s', '?')} s per rate)")
    out.append(f"  {'tracer':<9} {'target/s':>9} {'achieved/s':>11} {'entries':>9} {'CPU % core':>11} "
               f"{'peak RSS MiB':>13}  losses")
    for mode, rate, ach, secs, cpu, hwm, entries, lines, drops, _ in loader:
        rss = f"{int(hwm) / 1024:.1f}" if hwm.isdigit() and int(hwm) else "-"
        out.append(f"  {mode:<9} {fnum(int(rate)):>9} {fnum(float(ach or 0)):>11} {entries:>9} "
                   f"{cpu:>11} {rss:>13}  {drops}")
    out.append("  (untraced: the writer alone, to show the rate this machine can sustain now;")
    out.append("   CPU: the tracer process's utime+stime during the load and 0.5 s after it)")
    out.append("")

    # ------------------------------------------------------------ targets ---
    res = []

    def target(name, measured, goal, ok):
        if ok is None:
            ok = "n/a"
        elif ok is True or ok is False:
            ok = "PASS" if ok else "MISS"
        res.append((name, measured, goal, ok))

    # journald: the goal is on the median itself (issue #18).
    for wl in ["native", "syslog", "stream"]:
        s = tp.slower("journald", wl, "lines_per_s", "amptrace")
        target(f"journald ingest slower ({wl}), median", fmt_slow(s), f"<= {T_JOURNALD:.0f}%",
               None if not s else s[0] <= T_JOURNALD)
    for wl in ["write", "mmap"]:
        s = tp.slower("synth", wl, "dirty_mib_s", "amptrace")
        target(f"synthetic dirtying slower ({wl})", fmt_slow(s), f"<= {T_SYNTH:.0f}%",
               verdict(tp.slower_values("synth", wl, "dirty_mib_s", "amptrace"), T_SYNTH))

    # CPU proxies: journald and the writer are CPU-bound here, so their CPU
    # per unit of work moves with throughput, and it is far less disturbed
    # by other work on the machine than wall-clock time.
    for wl in ["native", "syslog", "stream"]:
        s = tp.slower("journald", wl, "cpu_us_per_line", "amptrace", cost=True)
        target(f"  proxy: journald CPU/entry more ({wl})", fmt_slow(s), f"<= {T_JOURNALD:.0f}%",
               verdict(tp.slower_values("journald", wl, "cpu_us_per_line", "amptrace", True),
                       T_JOURNALD))
    for wl in ["write", "mmap"]:
        s = tp.slower("synth", wl, "cpu_s", "amptrace", cost=True)
        target(f"  proxy: writer CPU more ({wl})", fmt_slow(s), f"<= {T_SYNTH:.0f}%",
               verdict(tp.slower_values("synth", wl, "cpu_s", "amptrace", True), T_SYNTH))
    s = tp.slower("synth", "write", "call_ns_p50", "amptrace", cost=True)
    if s:
        target("  proxy: one write() call more (median)", fmt_slow(s), f"<= {T_SYNTH:.0f}%",
               verdict(tp.slower_values("synth", "write", "call_ns_p50", "amptrace", True),
                       T_SYNTH))
    # What the tracepoints cost before any program does anything: the part
    # of a goal no program body can win back.
    for wl in ["write", "mmap"]:
        s = tp.slower("synth", wl, "dirty_mib_s", "floor")
        if s:
            target(f"  floor: empty programs slower ({wl})", fmt_slow(s), "(no goal)",
                   "-")

    per_wl = []
    for w in wls:
        cnt, ns = ev.get(("amptrace", w, "dirty folio"), (0, 0))
        f, _ = floor_ns(ev, w, "dirty folio")
        if cnt >= 100 and f:
            per_wl.append((ns / cnt / f, w, ns / cnt, f))
    if per_wl:
        worst = max(per_wl)
        target("dirty-folio event, x empty program (worst)",
               f"{worst[0]:.1f}x ({worst[1]}: {worst[2]:.0f} ns vs {worst[3]:.0f} ns)",
               f"<= {T_DIRTY_X:.0f}x", worst[0] <= T_DIRTY_X)
    else:
        target("dirty-folio event, x empty program", "n/a", f"<= {T_DIRTY_X:.0f}x", None)

    # Under ~10 s the entries map cannot fill (write-back takes 30 s) and the
    # loader's backlog stays small: a PASS there is only indicative.
    short = float(meta.get("rate_s", 0) or 0) < 10

    def loader_ok(ok):
        return "unsure (short run)" if short and ok is True else ok

    amp_loader = {int(r[1]): r for r in loader if r[0] == "amptrace"}
    base_loader = {int(r[1]): r for r in loader if r[0] == "untraced"}
    r10 = amp_loader.get(10000)
    target("loader CPU at 10k entries/s", f"{r10[4]}% of one core" if r10 else "n/a",
           f"<= {T_LOADER_CPU:.0f}%", None if not r10 else loader_ok(float(r10[4]) <= T_LOADER_CPU))
    r100 = amp_loader.get(100000)
    if r100:
        drops = [kv for kv in r100[8].split(",") if "=" in kv and is_drop(kv.split("=")[0])]
        ach = float(r100[2] or 0)
        ok = not drops
        note = ", ".join(drops) or "none"
        if ach < 0.9 * 100000:
            b = base_loader.get(100000)
            note += (f" at {ach / 1000:.0f}k/s reached (writer alone: "
                     f"{float(b[2]) / 1000:.0f}k/s)" if b else f" at {ach / 1000:.0f}k/s reached")
            if ok:
                ok = "unsure (rate not reached)"
        target("drops at 100k entries/s, default maps", note, "0", loader_ok(ok))
    else:
        target("drops at 100k entries/s, default maps", "n/a", "0", None)
    hwms = [int(r[5]) for r in amp_loader.values() if r[5].isdigit()]
    target("loader peak RSS", f"{max(hwms) / 1024:.1f} MiB" if hwms else "n/a",
           f"<= {T_RSS_MIB} MiB", None if not hwms else max(hwms) / 1024 <= T_RSS_MIB)

    if "bpftrace" in modes:
        worse = []
        n = 0
        for phase, wls_, metric in (("journald", ["native", "syslog", "stream"], "lines_per_s"),
                                    ("synth", ["write", "mmap"], "dirty_mib_s")):
            for wl in wls_:
                a = tp.slower(phase, wl, metric, "amptrace")
                b = tp.slower(phase, wl, metric, "bpftrace")
                if a and b:
                    n += 1
                    if a[0] > b[0]:
                        worse.append(f"{wl} {a[0]:+.1f}% vs {b[0]:+.1f}%")
        target("amptrace slower than bpftrace (workloads)",
               (f"{len(worse)} of {n}: " + "; ".join(worse)) if worse else f"0 of {n}",
               "0", None if not n else not worse)
        worse, n = [], 0
        for w in wls:
            a = sum(v[1] for k, v in data.items() if k[0] == "amptrace" and k[2] == w)
            b = sum(v[1] for k, v in data.items() if k[0] == "bpftrace" and k[2] == w)
            if a and b:
                n += 1
                if a > b:
                    worse.append(f"{w} {a / b:.1f}x")
        ratios = []
        for w in wls:
            a = sum(v[1] for k, v in data.items() if k[0] == "amptrace" and k[2] == w)
            b = sum(v[1] for k, v in data.items() if k[0] == "bpftrace" and k[2] == w)
            if a and b:
                ratios.append(f"{w} {a / b:.2f}x")
        target("amptrace BPF time > bpftrace's (workloads)",
               (f"{len(worse)} of {n}; " if n else "") + ", ".join(ratios),
               "0", None if not n else not worse)

    out.append("Targets (issues #7, #18).  Throughput verdicts: PASS/MISS when the 90 % confidence")
    out.append("interval of the median (order statistics over the repetitions) is on one side of")
    out.append("the goal; 'unsure' when the machine's noise straddles it: rerun on a quieter")
    out.append("machine or with more --reps.")
    out.append(f"  {'target':<44} {'measured':<52} {'goal':<9} result")
    for name, measured, goal, result in res:
        out.append(f"  {name:<44} {measured:<52} {goal:<9} {result}")
    npass = sum(1 for r in res if r[3] == "PASS")
    nmiss = sum(1 for r in res if r[3] == "MISS")
    nuns = sum(1 for r in res if r[3].startswith("unsure"))
    out.append(f"  {npass} pass, {nmiss} miss, {nuns} unsure, "
               f"{len(res) - npass - nmiss - nuns} not measured")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
