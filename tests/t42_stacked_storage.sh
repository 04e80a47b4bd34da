#!/usr/bin/env bash
# The storage real hosts keep their logs on: a partition, dm-linear (what
# LVM makes), dm-crypt (LUKS; with and without its write workqueue), LUKS
# on LVM and LVM on LUKS (the two installers' layouts), LVM on a
# partition, with ext4 and xfs, --dev naming the stack as a user would
# (the top's /dev path, the bottom disk, a mount point, or nothing).  The synthetic writer's 10 pwrites of 4
# pages each, then sync:
#  1. every page charged to the entry that dirtied it, none twice, each
#     entry's data = its pages (the bottom disk's requests wrote them);
#  2. every layer's classes = its own /sys/class/block/DEV/stat counter
#     (amptrace's reading and the test's): a partition's and a dm
#     device's are the requests of the disk below that carried them;
#  3. the bottom disk's bytes >= 90 % by cause (the fs journal and
#     metadata included: jbd2's handles carry the partition's number).
# Needs a kernel that shows a loop disk's partitions and has
# device-mapper: the qemu guests (t95, t96); skips elsewhere.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ -x $SYNTH_WRITER ]] || skip "no synth_writer (make)"
page=$(getconf PAGESIZE)

# stack fs how: how --dev names it (top-path, disk, mount, none).
# AMP_T42_CASES="lvm part-xfs": only the cases so named (a prefix of
# STACK-FS-HOW).
run_case() {
    local stack=$1 fs=$2 how=$3 mnt=$AMP_TMP/mnt-$1-$2-$3 c want=${AMP_T42_CASES-}
    local -a dev=()
    if [[ -n $want ]]; then
        for c in $want; do [[ $stack-$fs-$how == "$c"* ]] && want=''; done
        [[ -z $want ]] || return 0
    fi
    # xfs needs 300 MB
    make_stackfs "$stack" "$fs" 320 "$mnt"
    case $how in
        top-path) dev=(--dev "$STACK_TOP_PATH") ;;
        disk)     dev=(--dev "$STACK_DISK") ;;
        mount)    dev=(--dev "$mnt") ;;
        none)     ;;
    esac
    TRACE_LAYERS=$STACK_LAYERS start_tracer --preset write -c synth_writer "${dev[@]}"
    "$SYNTH_WRITER" -n 10 -w 4 -m 0 "$mnt" | cat >"$AMP_TMP/expect.json"
    sync
    stop_tracer
    _log "case: $stack $fs, --dev ${dev[*]:1}"
    python3 "$AMP_ROOT/tests/checks.py" synth "$AMP_TMP/expect.json" "$TRACE_OUT" "$STACK_DISK" "$page"
    python3 "$AMP_ROOT/tests/checks.py" stack "$TRACE_OUT" "$STACK_DISK" "${STACK_LAYERS// /,}" 0.90
    ok "$stack $fs, --dev ${dev[*]:1}${dev[*]:+ }(${how}): pages exact, every layer's counter, by cause >= 90 %"
}

[[ -z ${AMP_T42_CASES-} ]] || run_case plain xfs disk   # asked for: the whole disk beside them
run_case part ext4 top-path
run_case part ext4 disk
run_case part xfs mount
run_case lvm ext4 top-path
run_case lvm xfs disk
run_case lvm ext4 none
run_case crypt ext4 top-path
run_case crypt xfs disk
run_case crypt-nowq ext4 mount
run_case lvm+crypt ext4 disk
run_case crypt+lvm xfs top-path
run_case part+lvm ext4 none
