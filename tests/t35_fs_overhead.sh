#!/usr/bin/env bash
# Filesystem overhead charged to entries, on ext4, ext4 without a journal,
# xfs and btrfs, for the synthetic writer and for journald:
#  (a) the device classes sum to /sys/block/DEV/stat within 1%;
#  (b) >= 90% of the device bytes are charged to an entry, by cause or by
#      window, when only traced writers touch the filesystem;
#  (c) ext4 has a non-zero fs-journal class, ext4 without journal zero;
#  (d) the fraction charged by cause stays at least at the floor measured
#      for each filesystem and writer (a regression fails), and nothing is
#      late or unwalked (nothing else writes there).
# AMP_T35_FS (or FSLIST) overrides the filesystems, e.g. "ext4 xfs";
# AMP_T35_WRITERS (or T35_WRITERS) the writers ("synth journald");
# AMP_JOURNALD which journald (252 or 257).  The AMP_T35_ names reach a
# qemu guest's run (scripts/qemu-kernel-test.sh passes AMP_T<N>_*).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
writers=" ${AMP_T35_WRITERS:-${T35_WRITERS:-synth journald}} "
[[ $writers != *" journald "* ]] || use_journald

check() {   # FS WHAT TRACE
    # A kernel whose btrfs the btrfs programs do not fit (the tracer says
    # so in one line): btrfs metadata by window, held at that floor.
    local btrfs_window=0
    grep -q '^amptrace: btrfs programs do not load' "$AMP_TMP/tracer.err" && btrfs_window=1
    BTRFS_WINDOW=$btrfs_window python3 - "$@" "$LOOPNAME" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["AMP_ROOT"] + "/tests")
from checks import check_charges
fs, what, path, dev = sys.argv[1:5]
# By cause, measured on 6.18 (journald 252 and 257), less ~8 points: the
# floors to raise as charging by cause gets better.  btrfs: its tree blocks
# by cause (bpf/btrfs.bpf.h), 33%/25% before; xfs: its log by checkpoint;
# ext4nj: the block device's folios its writers dirty (77%/85% before),
# and those kernel threads dirty for a traced file, the flusher's
# allocation and the extent conversion (synth 86.5% before, 100% after in
# every run; journald 95-96.5%).  On 6.1 under qemu the synthetic writer's
# was 96% (extent-tree blocks dirtied under a nested handle) and, in 4 runs
# of 84 (and once in CI), 88.7-90.4% (the flusher's write of a file's
# metadata before its entries had settled): 100% in all 40 runs since.
floor = {("ext4", "synth"): 0.78, ("ext4", "journald"): 0.84, ("ext4nj", "synth"): 0.92,
         ("ext4nj", "journald"): 0.90, ("xfs", "synth"): 0.95, ("xfs", "journald"): 0.90,
         ("btrfs", "synth"): 0.92, ("btrfs", "journald"): 0.92}
if fs.startswith("btrfs") and os.environ.get("BTRFS_WINDOW") == "1":
    floor[fs, what] = {"synth": 0.33, "journald": 0.25}[what]
    print(f"note: {fs}/{what}: btrfs programs do not load on this kernel: "
          f"btrfs metadata by window, floor {floor[fs, what]:.0%}")
tag = f"{fs}/{what}"
d, entries = check_charges(path, dev, tag)
if fs == "xfs" and d["classes"]["metadata"]:
    # The AIL was pushed inside the trace (a `sync` on 5.15 under qemu
    # does; the log worker's 30-s push, where an emulated arm64 guest is
    # slow enough for it to fall inside): its write-back is held to t41's
    # journald-ail floor, measured there (82.6% on 5.15, 85.5% on 6.1,
    # 89.3-93.2% on 6.18; t35 under t96 once 88.2%, by window the log
    # worker's covering transactions).  The synthetic writer's, in the
    # arm64 guests: 82.6% on 6.12 (55,296 B of metadata), 92.7% on 6.1,
    # while the flusher's allocations at write-back, and their rolls on
    # rmapbt (Debian 13's mkfs.xfs), named no file; since, 99.9% there and
    # 99.2-99.3% in t41's synth-ail cases on 5.15, 6.1 and 6.18: held to 90%.
    floor[fs, what] = 0.90 if what == "synth" else 0.75
    print(f"note: {tag}: {d['classes']['metadata']} B of AIL write-back in the trace: "
          f"floor {floor[fs, what]:.0%}")
total, ctr = d["total"], d["counter_bytes"]
assert abs(total - ctr) <= 0.01 * ctr, f"{tag}: classes {d['classes']} sum {total} vs counter {ctr}"
print(f"ok: {tag}: classes {d['classes']} sum {total} = counter {ctr}")
for k in ("late_bytes", "unwalked_bytes"):
    assert d[k] == 0, f"{tag}: {k} = {d[k]}, nothing else writes here"
assert d["unattributed"] >= 0, f"{tag}: charged more than written: {d}"
assert d["charged_fraction"] >= 0.90, \
    f"{tag}: only {d['charged_fraction']:.1%} of {total} B charged to entries ({d})"
print(f"ok: {tag}: {d['charged_fraction']:.1%} charged to entries, {d['cause_fraction']:.1%} by cause")
assert d["cause_fraction"] >= floor[fs, what], \
    f"{tag}: {d['cause_fraction']:.1%} by cause, below the measured floor {floor[fs, what]:.0%}"
j = d["classes"]["journal"]
if fs == "ext4":
    assert j > 0, f"{tag}: ext4 wrote no journal bytes"
    jc = sum(e["dev_bytes"]["journal"] for e in entries)
    assert jc > 0, f"{tag}: no jbd2 commit bytes charged by cause"
    print(f"ok: {tag}: journal class {j} B, {jc} B of it charged by cause (jbd2 handles)")
if fs == "ext4nj":
    assert j == 0, f"{tag}: ext4 without journal shows journal bytes {j}"
    print(f"ok: {tag}: journal class 0")
    # Its inode table and bitmaps are the block device's own folios, dirtied
    # by the writer: owned by its entries (a device other than the fs's).
    bdev = [r for e in entries for r in e["scatter"]
            if r["kind"] == "metadata" and r["dev"] != d["dev"]]
    assert bdev, f"{tag}: no block-device metadata folio owned by an entry"
    print(f"ok: {tag}: {len(bdev)} block-device metadata folios owned by entries")
    # Named by the block device they are of: recognised by the kernel
    # side's note of bdevfs's own device, not by any major-0 device.
    names = {r["path"] for r in bdev}
    assert names == {f"/dev/{dev} (block device)"}, f"{tag}: block-device folios named {names}"
    print(f"ok: {tag}: named {names.pop()}")
PY
}

for fs in ${AMP_T35_FS:-${FSLIST:-ext4 ext4nj xfs btrfs}}; do
    size=512
    # --- synthetic writer on its own filesystem
    if [[ $writers == *" synth "* ]]; then
        mnt=$AMP_TMP/mnt-$fs
        make_loopfs "$fs" "$size" "$mnt"
        start_tracer -c synth_writer --dev "$LOOPNAME"
        "$SYNTH_WRITER" -n 8 -w 2 -m 3 "$mnt" | cat >/dev/null
        sync
        stop_tracer
        check "$fs" synth "$TRACE_OUT"
        _umount_robust "$mnt"
    fi
    [[ $writers == *" journald "* ]] || continue

    # --- journald with its /var/log/journal on its own filesystem
    # Traced from its start: pages journald dirties before a tracer looks
    # (kernel messages it stores, say) would be written as "other".
    make_loopfs "$fs" "$size" "$JOURNAL_DIR"
    start_tracer -c systemd-journal --dev "$LOOPNAME"
    start_journald
    for i in 1 2 3; do send_journal_entry "fs overhead $fs $i" SEQ="$i"; sleep 0.3; done
    sleep 1
    sync
    stop_tracer
    check "$fs" journald "$TRACE_OUT"
    _kill_wait "$JOURNALD_PID" journald
    _umount_robust "$JOURNAL_DIR"
done
