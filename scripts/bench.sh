#!/usr/bin/env bash
# `make bench`: what tracing costs, measured in one run and printed against
# the targets of issues #7 and #18.  Root; makes and removes its own loop devices.
#
#   scripts/bench.sh [--quick] [--reps N] [--out DIR] [--only LIST]
#                    [--no-bpftrace] [--profile] [--soak-min N]
#
#   --quick         smaller workloads, 3 repetitions, bpftrace only in the
#                   per-program runs (~3-5 min, depending on the machine)
#   --reps N        measured runs per workload and mode (default 5; --quick 3)
#   --out DIR       results (default /tmp/amptrace-bench): report.txt, the
#                   raw samples it is computed from, bench.log
#   --only LIST     comma-separated phases: synth, loader, journald, soak
#                   (default all; --quick: all but soak)
#   --soak-min N    minutes of the soak (default 30); `--only soak
#                   --soak-min 3` is a short check of it
#   --no-bpftrace   skip the bpftrace side-by-side runs
#   --profile       also `perf record -a -g` amptrace's per-program runs:
#                   DIR/profile-*.txt (top symbols per process) and
#                   DIR/perf-*.data (perturbs those runs a little)
#   Sizes: J_N (entries per journald run), SYNTH_MIB, RATE_S (seconds per
#   loader rate), WRITE_BLOCK, MMAP_MARK, LINE may be set in the environment.
#
# Phases:
#   synth     bench_writer rewrites SYNTH_MIB in place through write()
#             (64 KiB calls) and through a shared mapping on a loop ext4:
#             MiB/s (and the median time of one write() call) untraced,
#             under `amptrace trace --preset write -c bench_writer`, under
#             the equivalent bpftrace program
#             (scripts/bench/bpftrace-equivalent.sh), and under empty
#             programs on the same tracepoints ("floor");
#   loader    a writer appending 100-byte lines, one write() each, at 10k/s
#             and 100k/s: the amptrace process's CPU (utime+stime from
#             /proc/PID/stat) and peak RSS (VmHWM), and the summary's losses;
#   soak      the exporter (amptrace-exporter.service's options: trace -q
#             --metrics --metrics-file) under an appender at SOAK_RATE
#             (10000) lines/s for --soak-min minutes: its RSS, CPU, entries
#             and losses every 10 s (DIR/soak.tsv); after a warm-up (a sixth
#             of the run, at most 5 min) RSS must stay within 10 %, and at
#             the end every line must be an entry, with no loss
#             (scripts/bench/soak_report.py);
#   journald  a standalone journald on a loop ext4 ingests J_N entries
#             through the native socket, the syslog socket and a stdout
#             stream: lines/s untraced, under `amptrace trace --preset
#             journald -c systemd-journal`, under bpftrace, and under empty
#             programs on the same tracepoints ("floor").
# Throughput runs alternate the modes (the order rotates each repetition)
# and report medians; a ratio is the median over repetitions of traced /
# untraced within the same repetition.  Per-program costs come from extra
# runs with kernel.bpf_stats_enabled=1 (restored at exit); the throughput
# runs are made with it off, because it adds two clock reads per program run.
# scripts/bench/report.py turns DIR's raw files into the report again.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib.sh"
HERE=$ROOT/scripts/bench
BW=${BENCH_WRITER:-$ROOT/build/tests/bench_writer}

quick=0 reps='' out=/tmp/amptrace-bench only='' use_bt=1 profile=0 soak_min=${SOAK_MIN:-30}
while (($#)); do
    case $1 in
        --quick) quick=1 ;;
        --reps) reps=${2:?--reps needs a number}; shift ;;
        --out) out=${2:?--out needs a directory}; shift ;;
        --only) only=${2:?--only needs a list}; shift ;;
        --no-bpftrace) use_bt=0 ;;
        --profile) profile=1 ;;
        --soak-min) soak_min=${2:?--soak-min needs minutes}; shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ -n $reps ]] || reps=$( ((quick)) && echo 3 || echo 5)
[[ -n $only ]] || only=$( ((quick)) && echo synth,loader,journald || echo synth,loader,journald,soak)
[[ $soak_min =~ ^[0-9]+$ ]] && ((soak_min >= 1)) || { echo "bench: --soak-min must be >= 1" >&2; exit 2; }
[[ $reps =~ ^[0-9]+$ ]] && ((reps >= 3)) || { echo "bench: --reps must be >= 3" >&2; exit 2; }
[[ $EUID -eq 0 ]] || { echo "bench: run as root (BPF, loop devices, journald)" >&2; exit 1; }
for x in "$AMPTRACE" "$BW"; do
    [[ -x $x ]] || { echo "bench: $x missing; run make" >&2; exit 1; }
done
command -v bpftool >/dev/null || { echo "bench: bpftool missing; run scripts/deps.sh" >&2; exit 1; }
if ((use_bt)) && ! command -v bpftrace >/dev/null; then
    echo "bench: bpftrace missing (scripts/deps.sh --bench installs it); skipping the comparison" >&2
    use_bt=0
fi
need_tracefs || { echo "bench: tracefs is not mounted and mounting it failed" >&2; exit 1; }
phase_on() { [[ ,$only, == *,$1,* ]]; }
if ((profile)) && ! command -v perf >/dev/null; then
    echo "bench: perf missing (scripts/deps.sh --bench installs linux-perf); no profiles" >&2
    profile=0
fi

if ((quick)); then
    J_N=${J_N:-10000} SYNTH_MIB=${SYNTH_MIB:-256} RATE_S=${RATE_S:-3}
else
    J_N=${J_N:-100000} SYNTH_MIB=${SYNTH_MIB:-1024} RATE_S=${RATE_S:-20}
fi
WRITE_BLOCK=${WRITE_BLOCK:-65536} MMAP_MARK=${MMAP_MARK:-256} LINE=${LINE:-100}
RATES=(10000 100000)
# MODES alternate in the throughput runs; TRACERS get the per-program and
# loader runs.  bpftrace needs ~5 s to compile and attach, so --quick keeps
# it out of the alternation and compares it on per-program BPF time only.
# The synth and journald runs (full mode) also alternate with "floor": empty
# bpftrace programs on the same tracepoints, i.e. what attaching anything
# there costs (any syscall tracepoint puts every syscall of the system on
# the slow path).
MODES=(untraced amptrace) TRACERS=(amptrace)
if ((use_bt)); then
    TRACERS+=(bpftrace)
    ((quick)) || MODES+=(bpftrace)
fi
FMODES=("${MODES[@]}")
((use_bt && !quick)) && FMODES+=(floor)

# Private copies: every run measures the same binaries, even if a rebuild
# replaces ./amptrace while the benchmark runs.
cp "$AMPTRACE" "$AMP_TMP/amptrace"; AMPTRACE=$AMP_TMP/amptrace
cp "$BW" "$AMP_TMP/bench_writer"; BW=$AMP_TMP/bench_writer

mkdir -p "$out"
rm -f "$out"/{samples,losses,loader,stats,soak,locks}.tsv "$out"/soak.env "$out"/report.txt "$out"/meta.env \
    "$out"/perf-*.data "$out"/profile-*.txt
: >"$out/samples.tsv"; : >"$out/losses.tsv"; : >"$out/loader.tsv"; : >"$out/stats.tsv"; : >"$out/locks.tsv"
LOG=$out/bench.log
: >"$LOG"
say() { printf '[bench %s] %s\n' "$(date +%T)" "$*" | tee -a "$LOG" >&2; }

# ---------------------------------------------------------------- context ---
dirty=clean
git -C "$ROOT" --no-optional-locks diff --quiet HEAD -- bpf user 2>/dev/null || dirty="local changes in bpf/ or user/"
cat >"$out/meta.env" <<EOF
date='$(date -u +%Y-%m-%dT%H:%M:%SZ)'
kernel='$(uname -r)'
cpus='$(nproc)'
mem='$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)'
commit='$(git -C "$ROOT" --no-optional-locks rev-parse --short HEAD 2>/dev/null || echo unknown) ($dirty)'
binary='$(sha256sum "$AMPTRACE" | cut -c1-12)'
journald='$(dpkg-query -W -f='${Version}' systemd 2>/dev/null || echo unknown)'
bpftrace='$( ((use_bt)) && bpftrace --version 2>/dev/null | awk '{print $2}' || echo none)'
mode='$( ((quick)) && echo quick || echo full)'
reps=$reps
j_n=$J_N
synth_mib=$SYNTH_MIB
write_block=$WRITE_BLOCK
mmap_mark=$MMAP_MARK
rate_s=$RATE_S
line=$LINE
load_start='$(cut -d' ' -f1-3 /proc/loadavg)'
EOF

# bpf_stats: off for throughput runs, on for the per-program runs.
stats_old=$(sysctl -n kernel.bpf_stats_enabled)
at_exit sysctl -q kernel.bpf_stats_enabled="$stats_old"
stats_on()  { sysctl -q kernel.bpf_stats_enabled=1; }
stats_off() { sysctl -q kernel.bpf_stats_enabled=0; }
stats_off

# ---------------------------------------------------------------- tracers ---
TPID='' TOUT='' NRUN=0
# tracer_start MODE PRESET COMM DISK TAG: amptrace or bpftrace, attached on return.
# Every run gets its own output files: reading "attached" from a previous
# run's file would send SIGINT before the tracer installs its handler, and
# a background job of a script ignores SIGINT until then.
tracer_start() {
    local mode=$1 preset=$2 comm=$3 disk=$4 tag=$5 t0=$SECONDS floor
    TPID='' TOUT=$AMP_TMP/run$((++NRUN)).$tag.$mode.out
    case $mode in
        untraced) return 0 ;;
        amptrace)
            "$AMPTRACE" trace --preset "$preset" -c "$comm" --dev "$disk" -j -q -o "$TOUT" \
                2>"$TOUT.err" </dev/null &
            TPID=$!
            at_exit _kill_wait "$TPID" amptrace
            wait_for "grep -qs 'tracing (' '$TOUT.err' || ! _alive $TPID" 60 || true
            ;;
        bpftrace|floor)
            # floor: empty programs on the busiest of the same tracepoints,
            # what a program costs here before it does anything (bpf_stats'
            # clock reads, the prologue), to read the per-event figures against.
            local prog=$AMP_TMP/equiv-$preset-$comm-$mode.bt
            [[ $mode == floor ]] && floor=floor || floor=''
            [[ -s $prog ]] || "$HERE/bpftrace-equivalent.sh" "$preset" "$comm" $floor >"$prog"
            BPFTRACE_MAP_KEYS_MAX=262144 bpftrace -B none -o "$TOUT" "$prog" \
                >/dev/null 2>"$TOUT.err" </dev/null &
            TPID=$!
            at_exit _kill_wait "$TPID" bpftrace
            # Attached once it prints "Attaching" and then sits in its poll loop.
            wait_for "{ grep -qs Attaching '$TOUT' && [[ \$(cat /proc/$TPID/wchan 2>/dev/null) == do_epoll_wait ]]; } || ! _alive $TPID" 120 || true
            ;;
    esac
    if ! _alive "$TPID"; then
        cat "$TOUT.err" >&2
        say "$mode did not start"
        return 1
    fi
    echo "$mode $tag: attached in $((SECONDS - t0)) s" >>"$LOG"
}

# tracer_stop: SIGINT, as a user would; amptrace then writes its summary.
# A tracer that takes over 3 minutes to stop is reported and killed.
tracer_stop() {
    [[ -n $TPID ]] || return 0
    local t0=$SECONDS rc=0
    kill -INT "$TPID"
    if ! wait_for "! _alive $TPID" 180; then
        say "tracer $TPID still running 180 s after SIGINT: killed (a finding, not noise)"
        kill -KILL "$TPID" 2>/dev/null
    fi
    wait "$TPID" 2>/dev/null || rc=$?
    ((rc == 0)) || say "tracer exited with status $rc (see $TOUT.err)"
    echo "tracer $TPID: stopped in $((SECONDS - t0)) s" >>"$LOG"
    TPID=''
}

# Losses of an amptrace run: "key value" for every non-zero counter.
amp_losses() {
    python3 - "$1" <<'PY'
import json, sys
try:
    s = json.loads(open(sys.argv[1]).read().splitlines()[-1])
except Exception:
    sys.exit(0)
for k, v in sorted(s.get("losses", {}).items()):
    if v:
        print(k, v)
print("entries", s.get("entries", 0))
PY
}

# amp_locks WORKLOAD: the locked map operations amptrace counted in its
# last run (its summary's counters) over the events of that run (stats.tsv):
# the folio owners that went to the overflow hash per dirty-folio event.
# (The tracer's lifetime is a little longer than the events' window.)
amp_locks() {
    python3 - "$TOUT" "$out/stats.tsv" "$1" >>"$out/locks.tsv" <<'PY'
import json, sys
try:
    s = json.loads(open(sys.argv[1]).read().splitlines()[-1])
except Exception:
    sys.exit(0)
ev = {}
for line in open(sys.argv[2]):
    t, wl, prog, cnt, ns = line.rstrip("\n").split("\t")
    if t == "amptrace" and wl == sys.argv[3]:
        ev[prog] = ev.get(prog, 0) + int(cnt)
folios = ev.get("on_dirty_folio", 0) + ev.get("on_dirty_page", 0)
over = s.get("counters", {}).get("pages_overflow", 0)
print(f"{sys.argv[3]}\toverflow-hash inserts / dirty-folio events\t{over}\t{folios}")
PY
}

# kv KEY LINE: the value of key=value in a bench_writer result line.
kv() { sed -nE "s/.*(^| )$1=([^ ]+).*/\\2/p" <<<"$2"; }

sample() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$out/samples.tsv"; }

record_losses() {   # PHASE WORKLOAD MODE REP
    [[ $3 == amptrace ]] || return 0
    local k v
    while read -r k v; do
        [[ -n $k ]] && printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$k" "$v" >>"$out/losses.tsv"
    done < <(amp_losses "$TOUT")
}

# order REP MODE...: the modes, rotated by REP, so no mode always runs first.
order() {
    local rep=$1 i n
    shift
    n=$#
    local -a m=("$@")
    for ((i = 0; i < n; i++)); do echo "${m[(i + rep) % n]}"; done
}

# ------------------------------------------------------------------ synth ---
SMNT=$AMP_TMP/synth
# -k: every run rewrites the same file in place (the warm-up creates it), so
# runs re-dirty clean cached folios and allocate no memory: on this VM, with
# free page reporting, fresh allocations made the figures swing by 5x.
synth_args() {
    case $1 in
        write) echo "write $SMNT/bench-write.dat -k -s $SYNTH_MIB -b $WRITE_BLOCK" ;;
        mmap)  echo "mmap $SMNT/bench-mmap.dat -k -s $SYNTH_MIB -m $MMAP_MARK" ;;
    esac
}

# sync -f: this filesystem only; a global sync would wait for other users' data.
synth_prepare() {
    rm -f "$SMNT"/rate.log
    sync -f "$SMNT"
}

# --profile: a system-wide perf record around amptrace's per-program runs.
PERFPID='' PERFTAG=''
profile_start() {   # TAG
    ((profile)) && [[ -n $TPID ]] || return 0
    PERFTAG=$1
    perf record -a -g -q -o "$out/perf-$PERFTAG.data" </dev/null >/dev/null 2>&1 &
    PERFPID=$!
    at_exit _kill_wait "$PERFPID" perf
    sleep 1
}
profile_stop() {   # WORKLOAD_DESCRIPTION
    [[ -n $PERFPID ]] || return 0
    kill -INT "$PERFPID"
    wait "$PERFPID" 2>/dev/null || true
    {
        echo "# $PERFTAG: tracer pid $TPID; workload: $1"
        echo "# samples per process (pid:comm), then per process and symbol"
        perf report -i "$out/perf-$PERFTAG.data" --no-children --sort pid -g none --stdio \
            --percent-limit 1 2>/dev/null | grep -E '^ +[0-9]'
        perf report -i "$out/perf-$PERFTAG.data" --no-children --sort pid,sym -g none --stdio \
            --percent-limit 0.3 2>/dev/null | grep -E '^ +[0-9]'
    } >"$out/profile-$PERFTAG.txt"
    PERFPID=''
}

# run_measured PHASE WORKLOAD MODE REP KIND CMD...: one run of CMD under MODE
# (the tracer is started and stopped around it); its result line goes to
# RES.  KIND: run (a sample), warmup (discarded), stats (per-program costs).
# Called in the main shell (never in $( )), so at_exit sees every tracer.
RES=''
run_measured() {
    local phase=$1 wl=$2 mode=$3 rep=$4 kind=$5 preset comm disk
    shift 5
    case $phase in
        journald) preset=journald comm=systemd-journal disk=$JLOOP ;;
        *)        preset=write comm=bench_writer disk=$SLOOP ;;
    esac
    tracer_start "$mode" "$preset" "$comm" "$disk" "$phase-$wl" || return 1
    # Other tracers on the machine (tests, other users) slow every mode.
    FOREIGN=$(python3 "$HERE/progstats.py" foreign "$TPID" 2>/dev/null || echo 0)
    if [[ $kind == stats && -n $TPID ]]; then
        python3 "$HERE/progstats.py" snap "$TPID" "$AMP_TMP/snap0"
        [[ $mode != amptrace ]] || profile_start "$phase-$wl"
    fi
    if ! RES=$("$@"); then
        profile_stop "$*"
        tracer_stop
        say "$phase $wl $mode: workload failed: $*"
        return 1
    fi
    profile_stop "$phase $wl (${*##*/})"
    if [[ $kind == stats && -n $TPID ]]; then
        python3 "$HERE/progstats.py" snap "$TPID" "$AMP_TMP/snap1"
        python3 "$HERE/progstats.py" diff "$AMP_TMP/snap0" "$AMP_TMP/snap1" "$mode" "$phase-$wl" >>"$out/stats.tsv"
    fi
    tracer_stop
    [[ $kind == stats && $mode == amptrace ]] && amp_locks "$phase-$wl"
    echo "$phase $wl $mode rep=$rep $kind: $RES" >>"$LOG"
    if [[ $kind == run ]]; then
        record_losses "$phase" "$wl" "$mode" "$rep"
        sample "$phase" "$wl" "$mode" "$rep" foreign_progs "$FOREIGN"
    fi
}

synth_run() {   # MODE WORKLOAD REP KIND
    synth_prepare
    # shellcheck disable=SC2046
    run_measured synth "$2" "$1" "$3" "$4" "$BW" $(synth_args "$2") || return 1
    if [[ $4 == run ]]; then
        sample synth "$2" "$1" "$3" dirty_mib_s "$(kv dirty_mib_s "$RES")"
        sample synth "$2" "$1" "$3" total_mib_s "$(kv total_mib_s "$RES")"
        # The writer's own CPU (user+sys, exact): where its BPF programs run.
        sample synth "$2" "$1" "$3" cpu_s "$(awk -v u="$(kv user_s "$RES")" -v s="$(kv sys_s "$RES")" 'BEGIN { print u + s }')"
        # write(): the median time of one call, steadier than MiB/s.
        local call
        call=$(kv call_ns_p50 "$RES")
        [[ -z $call ]] || sample synth "$2" "$1" "$3" call_ns_p50 "$call"
    fi
}

phase_synth() {
    local wl rep mode
    say "synth: ${SYNTH_MIB} MiB through write() ($WRITE_BLOCK-byte calls) and mmap, $reps reps x ${FMODES[*]}"
    for wl in write mmap; do
        synth_run untraced "$wl" 0 warmup
        say "  $wl warm-up: $(kv dirty_mib_s "$RES") MiB/s"
        for ((rep = 1; rep <= reps; rep++)); do
            for mode in $(order "$rep" "${FMODES[@]}"); do
                synth_run "$mode" "$wl" "$rep" run
                say "  $wl rep $rep $mode: $(kv dirty_mib_s "$RES") MiB/s dirtying, $(kv total_mib_s "$RES") with fsync"
            done
        done
    done
    say "synth: per-program costs (bpf_stats on, one run per tracer and workload)"
    stats_on
    for wl in write mmap; do
        for mode in "${TRACERS[@]}"; do
            [[ $mode == bpftrace && $wl == mmap ]] && ((quick)) && continue
            synth_run "$mode" "$wl" 0 stats
        done
    done
    if ((use_bt)); then synth_run floor write 0 stats; fi
    stats_off
}

# ----------------------------------------------------------------- loader ---

phase_loader() {
    local mode rate res c0 c1 hwm secs cpu ach drops entries
    local hz; hz=$(getconf CLK_TCK)
    say "loader: ${LINE}-byte appends, one write() each, at ${RATES[*]} per s for ${RATE_S} s (bpf_stats on)"
    stats_on
    # untraced: can the writer keep the rate at all on this machine now?
    local tracers=(untraced "${TRACERS[@]}")
    ((quick)) && tracers=(untraced amptrace)
    for mode in "${tracers[@]}"; do
        for rate in "${RATES[@]}"; do
            # bpftrace's loader costs nothing per entry: 10k/s shows its RSS.
            [[ $mode == bpftrace && $rate != "${RATES[0]}" ]] && continue
            synth_prepare
            tracer_start "$mode" write bench_writer "$SLOOP" "rate$rate" || return 1
            FOREIGN=$(python3 "$HERE/progstats.py" foreign "$TPID" 2>/dev/null || echo 0)
            c0=0 c1=0 hwm=0
            if [[ -n $TPID ]]; then
                sleep 1
                python3 "$HERE/progstats.py" snap "$TPID" "$AMP_TMP/snap0"
                [[ $mode != amptrace ]] || profile_start "rate-$rate"
                c0=$(cpu_ticks "$TPID")
            fi
            res=$("$BW" rate "$SMNT/rate.log" -r "$rate" -d "$RATE_S" -l "$LINE")
            if [[ -n $TPID ]]; then
                sleep 0.5   # let the loader catch up: its backlog is part of the cost
                profile_stop "bench_writer rate $rate/s"
                c1=$(cpu_ticks "$TPID")
                python3 "$HERE/progstats.py" snap "$TPID" "$AMP_TMP/snap1"
                python3 "$HERE/progstats.py" diff "$AMP_TMP/snap0" "$AMP_TMP/snap1" "$mode" "rate-$rate" >>"$out/stats.tsv"
                hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$TPID/status")
            fi
            tracer_stop
            echo "loader $mode $rate: $res" >>"$LOG"
            secs=$(kv seconds "$res"); ach=$(kv achieved_per_s "$res")
            # CPU-seconds the tracer used during the load (and its catch-up),
            # per second of load.
            cpu=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v s="$secs" 'BEGIN { printf "%.2f", 100 * c / hz / s }')
            drops=-; entries=-
            if [[ $mode == untraced ]]; then
                cpu=-
            elif [[ $mode == amptrace ]]; then
                drops=$(amp_losses "$TOUT" | awk '$1 != "entries" {printf "%s%s=%s", sep, $1, $2; sep=","}')
                entries=$(amp_losses "$TOUT" | awk '$1 == "entries" {print $2}')
                [[ -n $drops ]] || drops=none
            fi
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$rate" "$ach" "$secs" "$cpu" \
                "$hwm" "$entries" "$(kv lines "$res")" "$drops" "$FOREIGN" >>"$out/loader.tsv"
            say "  $mode at $rate/s (achieved $ach/s over $secs s): tracer CPU $cpu% of one core, peak RSS $((hwm / 1024)) MiB, entries $entries, losses $drops"
        done
    done
    stats_off
}

# ------------------------------------------------------------------- soak ---
# The exporter as amptrace-exporter.service runs it, for soak_min minutes.
# SIGTERM at the end, as systemctl stop sends; the textfile then holds the
# final counters.
SOAK_RATE=${SOAK_RATE:-10000}
# Losses of measurement, as report.py counts drops: a full map or ring,
# pages dirtied outside any entry, entries given up on.  pages_cancelled
# (a folio re-dirtied or dropped before its write-out: the next dirtier
# pays) is accounting, reported beside them.
SOAK_DROPS='amptrace_losses_total[{]kind="(ringbuf_drops|pages_untracked|entries_timed_out|late_records|[a-z_]*_full)"'
phase_soak() {
    local prom=$AMP_TMP/soak.prom url t0 wpid rss ticks entries losses lines warm
    # RSS grows while the ledger's first write-out window fills (a steady
    # writer never leaves the disk idle 6 s, so up to its 60 s cap): a
    # warm-up of 2 windows, or a sixth of a long run (at most 5 min), and
    # never more than half the run.
    warm=$((soak_min * 60 / 6)); ((warm >= 120)) || warm=120; ((warm <= 300)) || warm=300
    ((warm <= soak_min * 30)) || warm=$((soak_min * 30))
    rm -f "$SMNT"/rate.log
    sync -f "$SMNT"; _wait_quiet "$SMNT" 2 15
    say "soak: the exporter under ${SOAK_RATE} lines/s for $soak_min min (warm-up $warm s), a sample every 10 s"
    # The writer under a name of its own: the exporter selects by name, as
    # the unit does, and another run's bench_writer on this host must not
    # count as the soak's.
    cp "$BW" "$AMP_TMP/soak_writer"
    "$AMPTRACE" trace -q --preset write -c soak_writer --dev "$SLOOP" \
        --metrics 127.0.0.1:0 --metrics-file "$prom" >"$AMP_TMP/soak.out" 2>"$AMP_TMP/soak.err" </dev/null &
    TPID=$!
    at_exit _kill_wait "$TPID" amptrace
    wait_for "grep -qs 'tracing (' '$AMP_TMP/soak.err' || ! _alive $TPID" 60 || true
    _alive "$TPID" || { cat "$AMP_TMP/soak.err" >&2; say "soak: the exporter did not start"; TPID=''; return 1; }
    url=$(sed -n 's/^amptrace: metrics at \(http:[^ ]*\)$/\1/p' "$AMP_TMP/soak.err")
    "$AMP_TMP/soak_writer" rate "$SMNT/rate.log" -r "$SOAK_RATE" -d $((soak_min * 60)) -l "$LINE" >"$AMP_TMP/soak.res" &
    wpid=$!
    at_exit _kill_wait "$wpid" soak_writer
    t0=$SECONDS
    printf 'seconds\trss_kb\tcpu_ticks\tentries\tdrops\n' >"$out/soak.tsv"
    while :; do
        rss=$(awk '/^VmRSS/ {print $2}' "/proc/$TPID/status")
        ticks=$(cpu_ticks "$TPID")
        curl -s "$url" >"$AMP_TMP/soak.scrape" || true
        entries=$(metric_sum 'amptrace_entries_total[{].*comm="soak_writer"' "$AMP_TMP/soak.scrape")
        losses=$(metric_sum "$SOAK_DROPS" "$AMP_TMP/soak.scrape")
        printf '%s\t%s\t%s\t%s\t%s\n' $((SECONDS - t0)) "$rss" "$ticks" "$entries" "$losses" >>"$out/soak.tsv"
        (((SECONDS - t0) % 300 < 10)) && say "  soak $((SECONDS - t0)) s: RSS $((rss / 1024)) MiB, entries $entries, drops $losses"
        _alive "$wpid" || break
        sleep 10 & wait $!
    done
    wait "$wpid" || { say "soak: the writer failed"; return 1; }
    lines=$(kv lines "$(cat "$AMP_TMP/soak.res")")
    # The last lines' bills close after write-back and 6 s of disk idle.
    sync -f "$SMNT"
    soak_entries() { curl -s "$url" >"$AMP_TMP/soak.scrape" || true
                     metric_sum 'amptrace_entries_total[{].*comm="soak_writer"' "$AMP_TMP/soak.scrape"; }
    wait_for '(( $(soak_entries) >= lines ))' 90 || true
    kill -TERM "$TPID"
    wait_for "! _alive $TPID" 180 || { say "soak: exporter still running 180 s after SIGTERM: killed"; kill -KILL "$TPID"; }
    local rc=0; wait "$TPID" || rc=$?
    TPID=''
    cat >"$out/soak.env" <<ENV
rate=$SOAK_RATE
minutes=$soak_min
warmup_s=$warm
lines=$lines
writer='$(cat "$AMP_TMP/soak.res")'
exit_status=$rc
final_entries=$(metric_sum 'amptrace_entries_total[{].*comm="soak_writer"' "$prom")
final_drops=$(metric_sum "$SOAK_DROPS" "$prom")
final_losses='$(awk '/^amptrace_losses_total/ && $NF != 0 { sub(/.*kind="/, ""); sub(/"} /, "="); printf "%s%s", sep, $0; sep = "," }' "$prom")'
summary_losses='$(grep '^Losses:' "$AMP_TMP/soak.out")'
clk_tck=$(getconf CLK_TCK)
ENV
    say "soak: done; $lines lines, exporter exit $rc, $(grep '^Losses:' "$AMP_TMP/soak.out")"
}

# --------------------------------------------------------------- journald ---
JDIR=/var/log/journal

# A fresh active journal file for every run, nothing dirty underneath.
journal_fresh() {
    journalctl --rotate >/dev/null 2>&1 || true
    rm -f "$JDIR"/*/system@*.journal "$JDIR"/*/system@*.journal~
    sync -f "$JDIR"
    _wait_quiet "$JDIR" 1 10
}

# sched_ns PID: CPU time the task has run, in ns (exact, unlike ticks).
sched_ns() { cut -d' ' -f1 "/proc/$1/schedstat"; }

ingest_run() {   # MODE KIND REP RUNKIND (not journald_run: tests/lib.sh has one)
    local c0 c1
    journal_fresh
    c0=$(sched_ns "$JOURNALD_PID")
    run_measured journald "$2" "$1" "$3" "$4" "$BW" journal "$2" -n "$J_N" -l "$LINE" -j "$JDIR" || return 1
    c1=$(sched_ns "$JOURNALD_PID")
    if [[ $4 == run ]]; then
        sample journald "$2" "$1" "$3" lines_per_s "$(kv lines_per_s "$RES")"
        # journald's CPU per entry, in µs (includes the BPF programs run in
        # its context, and the tracer's start and stop around the run).
        sample journald "$2" "$1" "$3" cpu_us_per_line "$(awk -v c=$((c1 - c0)) -v n="$J_N" 'BEGIN { printf "%.3f", c / 1000 / n }')"
    fi
}

phase_journald() {
    local kind rep mode lockfd
    # One standalone journald at a time on this host: queue behind tests.
    exec {lockfd}>/run/lock/amptest-journald.lock
    flock -n "$lockfd" || say "journald: waiting for another test's journald (lock)"
    exec {lockfd}>&-
    _journald_lock
    if pgrep -x systemd-journal >/dev/null; then
        say "journald: skipped, a systemd-journald is already running"
        return 0
    fi
    make_loopfs ext4 16384 "$JDIR"   # sparse; journald's size caps stay far away
    JLOOP=$LOOPNAME
    start_journald
    say "journald: $J_N entries per run through native, syslog and stream, $reps reps x ${FMODES[*]}"
    for kind in native syslog stream; do
        ingest_run untraced "$kind" 0 warmup
        say "  $kind warm-up: $(kv lines_per_s "$RES") lines/s"
        for ((rep = 1; rep <= reps; rep++)); do
            for mode in $(order "$rep" "${FMODES[@]}"); do
                ingest_run "$mode" "$kind" "$rep" run
                say "  $kind rep $rep $mode: $(kv lines_per_s "$RES") lines/s"
            done
        done
    done
    local kinds=(native syslog stream)
    ((quick && !profile)) && kinds=(native)
    say "journald: per-program costs (bpf_stats on, ${kinds[*]})"
    stats_on
    for kind in "${kinds[@]}"; do
        for mode in "${TRACERS[@]}"; do
            # bpftrace's per-program figures: native is enough (and saves time).
            [[ $mode == bpftrace && $kind != native ]] && continue
            ingest_run "$mode" "$kind" 0 stats
        done
    done
    stats_off
}

# ------------------------------------------------------------------- main ---
start=$SECONDS
say "amptrace bench ($( ((quick)) && echo quick || echo full)): results in $out"
if phase_on synth || phase_on loader || phase_on soak; then
    make_loopfs ext4 4096 "$SMNT"
    SLOOP=$LOOPNAME
    sync; _wait_quiet "$SMNT" 2 15
    phase_on synth && phase_synth
    phase_on loader && phase_loader
fi
phase_on journald && phase_journald
# Last: it fills the synthetic writer's disk with soak_min minutes of lines.
phase_on soak && phase_soak
echo "load_end='$(cut -d' ' -f1-3 /proc/loadavg)'" >>"$out/meta.env"
echo "elapsed_s=$((SECONDS - start))" >>"$out/meta.env"
: >"$out/report.txt"
if phase_on synth || phase_on loader || phase_on journald; then
    python3 "$HERE/report.py" "$out" | tee "$out/report.txt"
fi
if phase_on soak; then
    python3 "$HERE/soak_report.py" "$out" | tee -a "$out/report.txt"
fi
