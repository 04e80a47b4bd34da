#!/usr/bin/env bash
# amptrace compare --stack: the same 10 appended lines on ext4 over the
# whole disk, LVM, LUKS and md RAID1, each stack built by compare on its own
# loop disks and removed after.  Per row: its lines; classes = its disks'
# counters; every layer charged its own counter's bytes; the file's data
# pages the same on every stack, twice on RAID1 (both legs, and twice the md
# row's); the page's stacks section; nothing left: loop, dm and md devices,
# mounts, the scratch folder.  Needs device-mapper and md: the qemu guests
# have them (t95 runs this there); this host has neither and skips.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ -x $AMP_ROOT/build/tests/append_writer ]] || fail "build/tests/append_writer missing: run make"
command -v dmsetup >/dev/null || skip "dmsetup not installed (apt-get install dmsetup)"
command -v mdadm >/dev/null || skip "mdadm not installed (apt-get install mdadm)"
for m in dm_mod dm_crypt raid1; do
    [[ -e /sys/module/$m ]] || modprobe "$m" 2>/dev/null ||
        skip "no $m in this kernel (the qemu guests have it)"
done

# AMP_T43_FS, AMP_T43_STACKS, AMP_T43_TARGETS: a larger matrix (make
# test-stacks: ext4 and xfs, LUKS on LVM too, journald 252 beside append).
fss=${AMP_T43_FS:-ext4}
stacks=${AMP_T43_STACKS:-plain,lvm,crypt,raid1}
targets=${AMP_T43_TARGETS:-append}
size=128    # 1K-block ext4: the ten lines' file is two blocks
[[ $fss != *xfs* ]] || size=320
scratch=$AMP_TMP/scratch
mkdir "$scratch"
rc=0
"$AMPTRACE" compare -f "$fss" --stack "$stacks" -t "$targets" --journald 252 -w burst:10 \
    --fs-size $size --settle 3 --scratch "$scratch" --json --html "$AMP_TMP/stacks.html" -v \
    >"$AMP_TMP/compare.json" 2>"$AMP_TMP/compare.log" || rc=$?
grep -v '^amptrace compare: \(\[.*\] \)\?\(run\|started\|stopped\|unmounted\|detached\|removed\)' \
    "$AMP_TMP/compare.log" || true
((rc == 0)) || { tail -n 20 "$AMP_TMP/compare.log" >&2; fail "amptrace compare exited $rc"; }
ok "amptrace compare -f $fss --stack $stacks -t $targets exited 0"

targets=${targets//journald/journald@252}
python3 "$AMP_ROOT/tests/compare_checks.py" stacks "$AMP_TMP/compare.json" "$fss" "$stacks" \
    "$targets" burst:10 "$AMP_TMP/stacks.html"
python3 "$AMP_ROOT/tests/compare_checks.py" leftovers "$AMP_TMP/compare.log"
