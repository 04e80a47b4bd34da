#!/usr/bin/env bash
# scripts/bench/one_line.sh - what one `logger -p info test` costs the disk,
# and how much of it amptrace explains, per filesystem and journald setting:
# the platform issue's method, the README's "one line" table.
#
#   scripts/bench/one_line.sh [--journald 252|257] [--fs LIST] [--conf LIST] [--wait S]
#
#   --journald V  journald 252 (the host's) or 257 (Debian 13, a chroot on the
#                 cached tree of scripts/debian-rootfs.sh); default 257
#   --fs LIST     comma-separated: ext4, ext4nj, xfs, btrfs, btrfsC (default ext4,xfs,btrfs)
#   --conf LIST   journald.conf lines per case, ';'-separated; "defaults" is
#                 none (257: audit on) (default "defaults;Audit=no")
#   --wait S      seconds left to the kernel's own write-back after the
#                 line (default 40: past the 30 s dirty expiry); no sync
#
# Each case is one process (tests/lib.sh cleans up per process): a fresh
# 1 GiB loop filesystem as the journal directory, a private journald, the
# tracer started, one line, the wait, the tracer stopped.  A row: the
# device's written bytes as this script reads /sys/block (and amptrace's
# classes, which must sum to it), amptrace's own entries' bill, the users',
# the fractions charged and charged by cause.  Needs root; no lock of its
# own: run it alone (or under the tests' flock).
set -euo pipefail

if [[ ${1:-} == --case ]]; then
    fs=$2 conf=$3 wait_s=$4
    . "$(dirname "$0")/../../tests/lib.sh"
    need_root
    [[ $conf == defaults ]] && AMP_JOURNALD_CONF='' || AMP_JOURNALD_CONF=${conf//,/$'\n'}
    use_journald
    make_loopfs "$fs" 1024 "$JOURNAL_DIR"
    start_journald
    c0=$(devstat_written_bytes "$LOOPNAME")
    start_tracer -c systemd-journal --dev "$LOOPNAME"
    journald_run logger -p info test
    sleep "$wait_s" & wait $!
    c1=$(devstat_written_bytes "$LOOPNAME")
    stop_tracer
    python3 - "$TRACE_OUT" "$LOOPNAME" $((c1 - c0)) "$JOURNALD_VERSION" "$fs" "$conf" <<'PY'
import json, sys
path, dev, counter, ver, fs, conf = sys.argv[1:7]
recs = [json.loads(l) for l in open(path)]
s = recs[-1]
es = [r for r in recs if r["type"] == "entry"]
own = sum(e["dev_bytes_total"] for e in es if e["own"])
users = sum(e["dev_bytes_total"] for e in es if not e["own"])
d = [d for d in s["devices"] if d["name"] == dev][0]
total = sum(d["classes"].values())
sums = "=" if total == int(counter) else f"!= classes {total:,}"
cls = " ".join(f"{k} {v:,}" for k, v in d["classes"].items() if v)
print(f"| {ver} | {fs} | {conf} | {int(counter):,} {sums} | {own:,} | {users:,} "
      f"| {d['charged_fraction']:.0%} | {d['cause_fraction']:.0%} | {cls} |", flush=True)
PY
    exit 0
fi

jver=257 fss=ext4,xfs,btrfs confs='defaults;Audit=no' wait_s=40
while (($#)); do
    case $1 in
        --journald) jver=${2:?}; shift ;;
        --fs) fss=${2:?}; shift ;;
        --conf) confs=${2:?}; shift ;;
        --wait) wait_s=${2:?}; shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "one_line: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ $wait_s =~ ^[0-9]+$ ]] || { echo "one_line: --wait wants seconds" >&2; exit 2; }

echo "| journald | fs | settings | device bytes (= classes) | amptrace's own | users' entries | charged | by cause | classes |"
echo "|---|---|---|---|---|---|---|---|---|"
IFS=';' read -r -a conf_list <<<"$confs"
IFS=',' read -r -a fs_list <<<"$fss"
rc=0
for fs in "${fs_list[@]}"; do
    for conf in "${conf_list[@]}"; do
        log=/tmp/one_line.$fs.${conf//[^A-Za-z0-9]/_}.log
        if AMP_JOURNALD=$jver "$0" --case "$fs" "$conf" "$wait_s" >"$log" 2>&1; then
            grep '^| ' "$log"
        else
            rc=1; echo "| $jver | $fs | $conf | failed: see $log | | | | | |"
        fi
    done
done
exit "$rc"
