#!/usr/bin/env bash
# Faults of a dm layer (#37).  First, writes it fails: ext4 on dm-flakey
# over a loop disk.  One synthetic writer's pages are written; a second
# one dirties its pages, then the flakey table is reloaded to fail every
# write (error_writes), and syncfs writes them out.  No bio of them
# reaches the disk below, so no request completes with an error: dm's
# own counter counts the failed bios, and amptrace must put them in the dm
# row's class failed (its classes = its counter), none in the disk's, and
# settle the writer's entries with all their pages as failed bytes.  ext4
# aborts its journal at the first failed journal write: the tracer goes on
# and ends with its summary.
# dm-flakey is in the qemu guests (t95, t96); elsewhere the test skips.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
command -v dmsetup >/dev/null || skip "dmsetup not installed (apt-get install dmsetup)"

# dm_ext4 KIND ARGS DIR...: a 256 MiB loop disk under a dm device of that
# kind (table "0 SECTORS KIND LOOP 0 ARGS"), ext4 on it at
# $AMP_TMP/mnt-KIND with the DIRs made, written out and quiet; sets loop,
# sectors, name, dm and mnt.  Everything goes at exit, even on failure.
_dm_remove_left() { dmsetup info "$1" >/dev/null 2>&1 || return 0; _dm_remove "$1"; }
dm_ext4() {
    local kind=$1 args=$2 img=$AMP_TMP/$1.img
    shift 2
    truncate -s 256M "$img"
    at_exit rm -f "$img"
    loop=$(losetup -f --show "$img")
    at_exit losetup -d "$loop"
    sectors=$(blockdev --getsz "$loop")
    name=amp-$kind-$$
    DM_DISABLE_UDEV=1 dmsetup create --noudevsync "$name" \
        --table "0 $sectors $kind $loop 0${args:+ $args}" 2>/dev/null ||
        skip "no dm-$kind here (the qemu guests have it)"
    at_exit _dm_remove_left "$name"
    dm=$(blockdev_sysname "/dev/mapper/$name")
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "/dev/mapper/$name"
    mnt=$AMP_TMP/mnt-$kind
    _mkdir_tracked "$mnt"
    mount "/dev/mapper/$name" "$mnt"
    at_exit _umount_robust "$mnt"
    (cd "$mnt" && mkdir "$@")
    sync
    _wait_quiet "$mnt" 3 20
}

[[ -e /sys/module/dm_flakey ]] || modprobe dm_flakey 2>/dev/null || true
dm_ext4 flakey "3600 0" ok lost

TRACE_LAYERS="$dm ${loop##*/}" start_tracer -c synth_writer --dev "/dev/mapper/$name"
# Which program watches the bios' ends (names cut at 15 characters).
prog_ids_of "$TRACER_PID" >"$AMP_TMP/progs.mine"   # (no /dev/fd in the guests)
prog=$(while read -r id; do bpftool prog show id "$id"; done <"$AMP_TMP/progs.mine" |
       sed -nE 's/.* name (on_bio_failed[a-z_]*) .*/\1/p')
[[ $prog == on_bio_failed ]] || fail "the failed-bio program is '$prog', expected on_bio_failed"
# A first writer's pages written while the table still works, then a
# second's left dirty for the failing one.
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

# --- A device that stalls, turns to errors and goes away under the tracer
# (dm-linear over a loop disk): suspended for 3 s while a writer waits on
# it, then `dmsetup remove --force` while mounted (dm swaps in a table that
# fails all I/O; the removal itself waits for the unmount), then removed.
# The tracer goes on with the disk below it, says the device went away in
# one line, and its row keeps the counter as last read.
echo "--- a device stalled, failing, then removed"
dm_ext4 linear "" ok stall lost

TRACE_LAYERS="$dm ${loop##*/}" start_tracer -c synth_writer --dev "/dev/mapper/$name"
"$SYNTH_WRITER" -n 4 -w 2 -m 1 "$mnt/ok" | cat >"$AMP_TMP/expect-ok.json"
# The suspend freezes the filesystem (its pages written first); a writer
# then waits for the resume.
DM_DISABLE_UDEV=1 dmsetup suspend --noudevsync "$name"
("$SYNTH_WRITER" -n 4 -w 2 -m 1 "$mnt/stall" | cat >"$AMP_TMP/expect-stall.json") &
writer=$!
sleep 3
_alive "$writer" || fail "the writer did not wait for the suspended device"
_alive "$TRACER_PID" || fail "the tracer died while the device was suspended"
DM_DISABLE_UDEV=1 dmsetup resume --noudevsync "$name"
wait "$writer" || fail "the writer failed after the resume"
ok "suspended 3 s: the writer waited, the tracer went on"
# --force: the device is open, so dm fails all its I/O instead, and
# removes it at its last close.  Held open here, so that the test reads
# its counter last, after the unmount's writes.
exec 7<"/dev/mapper/$name"
_close_fd7() { exec 7<&-; }
at_exit _close_fd7   # (before the removal above, even on failure)
DM_DISABLE_UDEV=1 dmsetup remove --noudevsync --force "$name" 2>/dev/null || true
dm0=$(devstat_written_bytes "$dm") loop0=$(devstat_written_bytes "${loop##*/}")
ok "dmsetup remove --force on the mounted device: table now '$(dmsetup table "$name" | cut -d' ' -f3-)'"
# (The stalled writer's pages may have been written by the freeze of that
# table swap: they are checked as written or failed.)  A writer from here
# dirties pages no write of which can succeed.
"$SYNTH_WRITER" -n 8 -w 2 -m 1 "$mnt/lost" | cat >"$AMP_TMP/expect.json"
if sync -f "$mnt" 2>"$AMP_TMP/sync.err"; then
    fail "syncfs reported no error: the writes did not fail"
fi
_umount_robust "$mnt"
sleep 2	# the tracer's last reading of dm's counter: after the unmount's writes
dm1=$(devstat_written_bytes "$dm") loop1=$(devstat_written_bytes "${loop##*/}")
exec 7<&-
wait_for "[[ ! -e /sys/class/block/$dm ]]" 10 || _dm_remove "$name"
[[ ! -e /sys/class/block/$dm ]] || fail "$dm still there after dmsetup remove"
ok "$dm removed"
# The disk below goes on being traced: a direct write to it.
dd if=/dev/zero of="$loop" bs=64k count=4 seek=100 oflag=direct status=none
sleep 2
_alive "$TRACER_PID" || fail "the tracer died when $dm went away"
stop_tracer
grep "went away" "$AMP_TMP/tracer.err" >&2 || true
[[ $(grep -c "^amptrace: $dm went away while traced" "$AMP_TMP/tracer.err") == 1 ]] ||
    fail "the tracer did not say once that $dm went away: $(grep -v '^libbpf' "$AMP_TMP/tracer.err")"
python3 "$AMP_ROOT/tests/fault_checks.py" layer-failed "$TRACE_OUT" "$AMP_TMP/expect-ok.json" \
    "$AMP_TMP/expect.json" "$dm" "${loop##*/}" $((dm1 - dm0)) $((loop1 - loop0)) killed
python3 "$AMP_ROOT/tests/fault_checks.py" settled "$TRACE_OUT" "$AMP_TMP/expect-stall.json"
python3 "$AMP_ROOT/tests/fault_checks.py" gone "$TRACE_OUT" "$dm" $((dm1 - ${_TRACE_C0[$dm]})) \
    $((dm1 - ${_TRACE_C0_INNER[$dm]}))
python3 "$AMP_ROOT/tests/checks.py" devsum "$TRACE_OUT" "${loop##*/}"
