#!/usr/bin/env python3
"""BPF program run statistics of one process, for scripts/bench.sh.

  progstats.py snap PID FILE
      Save run_cnt/run_time_ns of the programs PID holds.  A process's
      programs are the prog_id lines of its fds' fdinfo (program and link
      fds), so other tracers running on the machine are never counted.
  progstats.py diff BEFORE AFTER TRACER WORKLOAD
      Print one TSV line per program, TRACER WORKLOAD NAME RUN_CNT
      RUN_TIME_NS, for what ran between the two snapshots.
  progstats.py foreign [PID]
      Print how many tracing programs (tp_btf, raw and perf tracepoints,
      kprobes) are loaded that PID does not hold: other tracers on the
      machine, which slow the untraced runs too.

The kernel only counts while kernel.bpf_stats_enabled=1 (bench.sh sets it).
"""
import glob
import json
import re
import subprocess
import sys


def prog_ids(pid):
    ids = set()
    for path in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            with open(path) as f:
                for line in f:
                    m = re.match(r"prog_id:\s+(\d+)", line)
                    if m:
                        ids.add(int(m.group(1)))
        except OSError:
            pass
    return ids


def attached_tracepoints():
    """prog id -> the perf tracepoints it is attached to (bpftrace's and
    the floor's programs are named after their probe, truncated; this
    says which tracepoint each one is, to set it beside amptrace's)."""
    tps = {}
    try:
        out = subprocess.check_output(["bpftool", "perf", "list", "-j"], stderr=subprocess.DEVNULL)
        for e in json.loads(out):
            if e.get("fd_type") == "tracepoint" and "prog_id" in e:
                tps.setdefault(e["prog_id"], set()).add(e.get("tracepoint", "?"))
    except (OSError, subprocess.CalledProcessError, ValueError):
        pass
    return tps


def snap(pid, out):
    ids = prog_ids(pid)
    progs = json.loads(subprocess.check_output(["bpftool", "prog", "show", "-j"]))
    tps = attached_tracepoints()
    rows = {}
    for p in progs:
        if p["id"] in ids:
            rows[p["id"]] = {
                "name": p.get("name", "?"),
                "tps": sorted(tps.get(p["id"], ())),
                "run_cnt": p.get("run_cnt", 0),
                "run_time_ns": p.get("run_time_ns", 0),
            }
    with open(out, "w") as f:
        json.dump(rows, f)
    if not rows:
        print(f"progstats: no BPF programs found for pid {pid}", file=sys.stderr)
        return 1
    return 0


def diff(before, after, tracer, workload):
    with open(before) as f:
        b = json.load(f)
    with open(after) as f:
        a = json.load(f)
    for pid, row in sorted(a.items(), key=lambda kv: kv[1]["name"]):
        old = b.get(pid, {"run_cnt": 0, "run_time_ns": 0})
        cnt = row["run_cnt"] - old["run_cnt"]
        ns = row["run_time_ns"] - old["run_time_ns"]
        # bpftrace's programs by their tracepoint (amptrace's keep their
        # names: one of them serves several tracepoints).
        name = row["name"]
        if tracer in ("bpftrace", "floor") and row.get("tps"):
            name = "tp:" + "+".join(row["tps"])
        print(f"{tracer}\t{workload}\t{name}\t{cnt}\t{ns}")
    return 0


TRACING_TYPES = {"tracing", "raw_tracepoint", "tracepoint", "kprobe", "perf_event"}


def foreign(pid):
    mine = prog_ids(pid) if pid else set()
    progs = json.loads(subprocess.check_output(["bpftool", "prog", "show", "-j"]))
    print(sum(1 for p in progs if p.get("type") in TRACING_TYPES and p["id"] not in mine))
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "snap":
        return snap(int(argv[2]), argv[3])
    if len(argv) == 6 and argv[1] == "diff":
        return diff(*argv[2:])
    if len(argv) in (2, 3) and argv[1] == "foreign":
        return foreign(int(argv[2]) if len(argv) == 3 and argv[2] else 0)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
