#!/usr/bin/env bash
# A/B of amptrace builds on the synthetic writer: is a change faster?
#
#   scripts/bench/ab.sh [-n REPS] [-w write|mmap|recv] [-s MIB] [-b BYTES] [-f FS] [-c] BINARY...
#
# Each repetition runs bench_writer once untraced and once under each
# BINARY (`trace --preset write -c bench_writer`), in that order, on one
# loop filesystem (-f: ext4, the default, xfs or btrfs; not with -w recv),
# with kernel.bpf_stats_enabled=1, and prints per run the dirtying MiB/s,
# the median ns of one write() call (-w write) and each program's ns per
# run (run_time_ns / run_cnt).
# -w recv is journald's path instead: a process named ab_recv sends
# itself 100,000 datagrams of -b bytes (default 100) over a socket pair
# and receives each with recvmsg() and, as journald, the sender's
# credentials (SO_PASSCRED), traced with `--preset journald -c
# ab_recv`; it prints receives per second (Python's loop: its noise is
# large, read the programs' ns).
# Copy the binaries somewhere first (make replaces ./amptrace).  Noise
# between runs is 3-10 % on a VM: compare medians of several repetitions,
# and prefer the per-program ns, which vary less than the throughput.
# -b sets the write() size (65536): small ones are appends into pages
# already dirty, a logger's usual entry.  -f btrfs: a filesystem whose
# page cache keeps 4 KiB folios, so that one write() dirties many, all but
# the first in the same kernel entry.  A BINARY may be a wrapper script
# that adds trace options (`shift; exec amptrace trace --OPTION "$@"`).
# -c adds each program's run count (name=NS/COUNT): runs per write tell
# which costs scale with the data and which with the syscalls.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib.sh"
BW=${BENCH_WRITER:-$ROOT/build/tests/bench_writer}

reps=3 wl=write mib=1024 bs='' counts=0 fs=ext4
while getopts n:w:s:b:f:ch opt; do
    case $opt in
        n) reps=$OPTARG ;;
        w) wl=$OPTARG ;;
        s) mib=$OPTARG ;;
        b) bs=$OPTARG ;;
        f) fs=$OPTARG ;;
        c) counts=1 ;;
        *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
(($#)) || { echo "ab: name at least one amptrace binary" >&2; exit 2; }
[[ $wl == write || $wl == mmap || $wl == recv ]] || { echo "ab: -w write, mmap or recv" >&2; exit 2; }
[[ $fs == ext4 || $fs == xfs || $fs == btrfs ]] || { echo "ab: -f ext4, xfs or btrfs" >&2; exit 2; }
[[ -n $bs ]] || bs=$([[ $wl == recv ]] && echo 100 || echo 65536)
need_root
need_tracefs || { echo "ab: tracefs is not mounted and mounting it failed" >&2; exit 1; }
for b in "$@" "$BW"; do [[ -x $b ]] || { echo "ab: $b is not executable" >&2; exit 1; }; done

if [[ $wl == recv ]]; then
    # The receiver of -w recv: prints what bench_writer prints, the rate.
    cat >"$AMP_TMP/ab_recv.py" <<'PY'
import ctypes, socket, sys, time
ctypes.CDLL(None).prctl(15, b"ab_recv", 0, 0, 0)	# PR_SET_NAME
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
# As journald's sockets: the sender's credentials come with each datagram.
b.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
n, msg = 100000, b"x" * int(sys.argv[1])
t0 = time.monotonic()
for _ in range(n):
    a.send(msg)
    b.recvmsg(len(msg) + 1, socket.CMSG_SPACE(12))
print(f"recv_per_s={n / (time.monotonic() - t0):.0f}")
PY
    preset=(--preset journald -c ab_recv)
    run_workload() { python3 "$AMP_TMP/ab_recv.py" "$bs"; }
else
    MNT=$AMP_TMP/ab
    make_loopfs "$fs" $((mib * 2 + 1024)) "$MNT"
    case $wl in
        write) args=(write "$MNT/ab.dat" -k -s "$mib" -b "$bs") ;;
        mmap)  args=(mmap "$MNT/ab.dat" -k -s "$mib" -m 256) ;;
    esac
    preset=(--preset write -c bench_writer --dev "$LOOPDEV")
    run_workload() { "$BW" "${args[@]}"; }
    "$BW" "${args[@]}" >/dev/null	# warm-up: creates the file every run rewrites
fi
stats_old=$(sysctl -n kernel.bpf_stats_enabled)
at_exit sysctl -qw kernel.bpf_stats_enabled="$stats_old"
sysctl -qw kernel.bpf_stats_enabled=1

for ((rep = 1; rep <= reps; rep++)); do
    for b in untraced "$@"; do
        [[ $wl == recv ]] || sync -f "$MNT"
        tp='' costs=''
        if [[ $b != untraced ]]; then
            "$b" trace "${preset[@]}" -j -q -o "$AMP_TMP/ab.out" \
                2>"$AMP_TMP/ab.err" </dev/null &
            tp=$!
            at_exit _kill_wait "$tp" amptrace
            wait_for "grep -qs 'tracing (' '$AMP_TMP/ab.err' || ! _alive $tp" 60 || true
            _alive "$tp" || { cat "$AMP_TMP/ab.err" >&2; exit 1; }
            python3 "$ROOT/scripts/bench/progstats.py" snap "$tp" "$AMP_TMP/s0"
        fi
        res=$(run_workload)
        if [[ -n $tp ]]; then
            python3 "$ROOT/scripts/bench/progstats.py" snap "$tp" "$AMP_TMP/s1"
            costs=$(python3 "$ROOT/scripts/bench/progstats.py" diff "$AMP_TMP/s0" "$AMP_TMP/s1" ab "$wl" |
                awk -v c=$counts '$4 > 0 { printf " %s=%.0f", $3, $5 / $4; if (c) printf "/%d", $4 }')
            kill -INT "$tp"
            wait "$tp" || true
        fi
        echo "rep=$rep $b $(grep -Eo '(dirty_mib_s|call_ns_p50|recv_per_s)=[0-9.]*' <<<"$res" | tr "\n" " ")$costs"
    done
done
