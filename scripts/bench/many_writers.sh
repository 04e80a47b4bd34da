#!/usr/bin/env bash
# The loader's CPU with many writers on many CPUs (issue 38):
#
#   scripts/bench/many_writers.sh [-w WRITERS] [-r PER_S_EACH] [-d SECONDS] [-l BYTES]
#
# WRITERS bench_writer processes (default 8), each on a CPU of its own
# (taskset, in turn) and appending -l-byte lines (100) at -r per second
# (12,500: 100,000 in all) for -d seconds (20) to its own file on one loop
# ext4, traced by `amptrace trace -c bench_writer -j -q`.  Prints the rate
# achieved in all, the entries amptrace reported, its losses, and its CPU
# (utime+stime over the load and a second's catch-up) in % of one core.
# Run it in a guest of 8 vCPUs: AMPTRACE_QEMU_SMP=8
# AMPTRACE_QEMU_CMD=scripts/bench/many_writers.sh scripts/qemu-kernel-test.sh t10
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib.sh"
BW=${BENCH_WRITER:-$ROOT/build/tests/bench_writer}
writers=8 rate=12500 secs=20 line=100
while getopts w:r:d:l:h opt; do
    case $opt in
        w) writers=$OPTARG ;; r) rate=$OPTARG ;; d) secs=$OPTARG ;; l) line=$OPTARG ;;
        *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
need_root
ncpu=$(nproc)
make_loopfs ext4 1024 "$AMP_TMP/mw"
# -q: the summary alone, as make bench measures the loader.
start_tracer -c bench_writer --dev "$LOOPNAME" -q
hz=$(getconf CLK_TCK)
c0=$(cpu_ticks "$TRACER_PID")
pids=()
for ((i = 0; i < writers; i++)); do
    taskset -c $((i % ncpu)) "$BW" rate "$AMP_TMP/mw/w$i.log" -r "$rate" -d "$secs" -l "$line" \
        >"$AMP_TMP/w$i.out" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
sleep 1
c1=$(cpu_ticks "$TRACER_PID")
sync
stop_tracer
achieved=$(cat "$AMP_TMP"/w*.out | sed -n 's/.*achieved_per_s=\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s}')
lines=$(cat "$AMP_TMP"/w*.out | sed -n 's/.* lines=\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s}')
python3 - "$TRACE_OUT" "$lines" "$achieved" "$writers" "$ncpu" "$(( (c1 - c0) ))" "$hz" "$secs" <<'PY'
import json, sys
trace, lines, achieved, writers, ncpu, ticks, hz, secs = sys.argv[1:]
summary = [json.loads(l) for l in open(trace) if '"summary"' in l][-1]
entries = summary["entries"]
losses = {k: v for k, v in summary.get("losses", {}).items() if v} if summary else {}
cpu = 100.0 * int(ticks) / int(hz) / (float(secs) + 1)
print(f"many_writers: {writers} writers on {ncpu} CPUs, {lines} lines ({achieved}/s achieved in all), "
      f"{entries} entries, losses {losses or 'none'}; loader CPU {cpu:.1f} % of one core")
PY
