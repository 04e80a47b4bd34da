#!/usr/bin/env python3
"""t69's checks: entry times against the journal's stamps across clock steps.

clock_checks.py TRACE_JSON REPORT_JSON EXPORT TAG: the trace's and the
record's summaries count 2 steps of about an hour; each line tagged TAG is
timed, in both, as journald stamped it (__REALTIME_TIMESTAMP, within 1 s)
on its receive entry (the one whose sender is the line's _PID).
"""
import datetime
import sys

from checks import fail, load_trace, ok
from sender_checks import read_export


def seconds(iso):
    return datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def main(trace_path, report_path, export_path, tag):
    lines = sorted((r for r in read_export(export_path)
                    if r.get("MESSAGE", "").endswith(tag)), key=lambda r: r["MESSAGE"])
    if [r["MESSAGE"].split()[2] for r in lines] != ["1", "2", "3"]:
        fail(f"the journal holds {[r['MESSAGE'] for r in lines]}, want lines 1 2 3")
    for name, path in (("trace", trace_path), ("record", report_path)):
        entries, summary = load_trace(path)
        clock = summary.get("clock") or fail(f"{name}: the summary has no clock")
        big = abs(clock.get("largest_step_s", 0))
        if clock.get("steps") != 2 or not 3598 <= big <= 3602:
            fail(f"{name}: clock {clock}, want 2 steps of about an hour")
        if not clock.get("boot_id") or "boot_to_mono_ns" not in clock:
            fail(f"{name}: the clock lacks the boot's identity: {clock}")
        for r in lines:
            pid = int(r["_PID"])
            mine = [e for e in entries if e.get("sender", {}).get("pid") == pid]
            if len(mine) != 1:
                fail(f"{name}: {len(mine)} entries sent by pid {pid} ({r['MESSAGE']})")
            got = seconds(mine[0]["time"])
            want = int(r["__REALTIME_TIMESTAMP"]) / 1e6
            if abs(got - want) > 1:
                fail(f"{name}: entry {mine[0]['id']} ({r['MESSAGE']}) at {mine[0]['time']}, "
                     f"journald stamped it {want - got:+.3f} s later")
        ok(f"{name}: 2 steps (largest {clock['largest_step_s']:+.1f} s); the 3 lines' entries "
           f"are timed as journald stamped them, across both steps")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
