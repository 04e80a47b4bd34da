#!/usr/bin/env bash
# Writes a dm layer fails (#37): ext4 on dm-flakey over a loop disk.  One
# synthetic writer's pages are written; a second one dirties its pages,
# then the flakey table is reloaded to fail every write (error_writes),
# and syncfs writes them out.  No bio of
# them reaches the disk below, so no request completes with an error: dm's
# own counter counts the failed bios, and amptrace must put them in the dm
# row's class failed (its classes = its counter), none in the disk's, and
# settle the writer's entries with all their pages as failed bytes.  ext4
# aborts its journal at the first failed journal write: the tracer goes on
# and ends with its summary.  Twice: the walk by bpf_loop and, forced with
# AMPTRACE_NO_BPF_LOOP as on kernels before 5.17, the bounded one.
# dm-flakey is in the qemu guests (t95, t96); elsewhere the test skips.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
command -v dmsetup >/dev/null || skip "dmsetup not installed (apt-get install dmsetup)"

for case in bpf_loop bounded; do
    if [[ $case == bounded ]]; then export AMPTRACE_NO_BPF_LOOP=1; else unset AMPTRACE_NO_BPF_LOOP; fi
    echo "--- the walk: $case"
    img=$AMP_TMP/flakey$case.img
    truncate -s 256M "$img"
    at_exit rm -f "$img"
    loop=$(losetup -f --show "$img")
    at_exit losetup -d "$loop"
    sectors=$(blockdev --getsz "$loop")
    name=amp-flakey-$$-$case
    [[ -e /sys/module/dm_flakey ]] || modprobe dm_flakey 2>/dev/null || true
    DM_DISABLE_UDEV=1 dmsetup create --noudevsync "$name" --table "0 $sectors flakey $loop 0 3600 0" \
        2>/dev/null || skip "no dm-flakey here (the qemu guests have it)"
    at_exit _dm_remove "$name"
    dm=$(blockdev_sysname "/dev/mapper/$name")
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "/dev/mapper/$name"
    mnt=$AMP_TMP/mnt$case
    _mkdir_tracked "$mnt"
    mount "/dev/mapper/$name" "$mnt"
    at_exit _umount_robust "$mnt"
    sync
    _wait_quiet "$mnt" 3 20

    TRACE_LAYERS="$dm ${loop##*/}" start_tracer -c synth_writer --dev "/dev/mapper/$name"
    # Which program watches the bios' ends (names cut at 15 characters).
    prog_ids_of "$TRACER_PID" >"$AMP_TMP/progs.mine"   # (no /dev/fd in the guests)
    prog=$(while read -r id; do bpftool prog show id "$id"; done <"$AMP_TMP/progs.mine" |
           sed -nE 's/.* name (on_bio_failed[a-z_]*) .*/\1/p')
    want=on_bio_failed; [[ $case == bounded ]] && want='on_bio_failed_*'
    # shellcheck disable=SC2053  # a pattern for the bounded one
    [[ $prog == $want ]] || fail "$case: the failed-bio program is '$prog', expected $want"
    # A first writer's pages written while the table still works, then a
    # second's left dirty for the failing one.
    mkdir "$mnt/ok" "$mnt/lost"
    "$SYNTH_WRITER" -n 4 -w 2 -m 1 "$mnt/ok" | cat >"$AMP_TMP/expect-ok.json"
    sync -f "$mnt"
    "$SYNTH_WRITER" -n 8 -w 2 -m 1 "$mnt/lost" | cat >"$AMP_TMP/expect.json"
    # Fail every write from here: the new table without a flush or a freeze,
    # which would write the pages out first.
    DM_DISABLE_UDEV=1 dmsetup suspend --noudevsync --nolockfs --noflush "$name"
    DM_DISABLE_UDEV=1 dmsetup load --noudevsync "$name" \
        --table "0 $sectors flakey $loop 0 0 3600 1 error_writes"
    DM_DISABLE_UDEV=1 dmsetup resume --noudevsync --nolockfs --noflush "$name"
    dm0=$(devstat_written_bytes "$dm") loop0=$(devstat_written_bytes "${loop##*/}")
    ok "dm-flakey now fails every write ($(dmsetup table "$name" | cut -d' ' -f3-))"
    if sync -f "$mnt" 2>"$AMP_TMP/sync.err"; then
        fail "syncfs reported no error: the writes did not fail"
    fi
    ok "syncfs: $(head -1 "$AMP_TMP/sync.err")"
    sleep 2
    stop_tracer
    dm1=$(devstat_written_bytes "$dm") loop1=$(devstat_written_bytes "${loop##*/}")
    dmesg | grep -m2 -i 'aborting journal\|flakey' >&2 || true
    python3 "$AMP_ROOT/tests/fault_checks.py" layer-failed "$TRACE_OUT" "$AMP_TMP/expect-ok.json" "$AMP_TMP/expect.json" \
        "$dm" "${loop##*/}" $((dm1 - dm0)) $((loop1 - loop0))
    python3 "$AMP_ROOT/tests/checks.py" devsum "$TRACE_OUT" "$dm"
    python3 "$AMP_ROOT/tests/checks.py" devsum "$TRACE_OUT" "${loop##*/}"
done
