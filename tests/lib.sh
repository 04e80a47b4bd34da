# shellcheck shell=bash
# tests/lib.sh - helpers for amptrace test scripts.  Source it, don't run it:
#
#   set -euo pipefail
#   . "$(dirname "$0")/lib.sh"
#
# Everything that creates state (loop devices, mounts, daemons, dirs) registers
# its own undo with at_exit, so a test leaves nothing behind on success,
# failure (set -e) or Ctrl-C.  Rules that follow from how bash works:
#   * Call make_loopfs / start_* in the main shell, never inside $( ) or a
#     pipeline: a subshell gets its own copy of the cleanup list and globals.
#   * Don't install your own EXIT/INT/TERM trap; use at_exit instead.
#   * Long sleeps: use `sleep N & wait $!` so a TERM is handled promptly
#     (bash delays traps until a foreground command finishes).

[[ -n ${_AMPLIB_LOADED:-} ]] && return 0
_AMPLIB_LOADED=1

AMP_TAG=${AMP_TAG:-amptest}   # syslog tag / SYSLOG_IDENTIFIER used by senders
LOOPDEV='' LOOPNAME='' JOURNALD_PID='' RSYSLOG_PID='' RSYSLOG_SOCK=''

_log() { printf '[lib] %s\n' "$*" >&2; }

# ---------------------------------------------------------------- cleanup ---

_AT_EXIT=()   # stack of shell-quoted commands

# at_exit CMD [ARG...]: push a cleanup command, run LIFO at exit/INT/TERM.
at_exit() {
    local q
    printf -v q '%q ' "$@"
    _AT_EXIT+=("$q")
}

# Pop and run every command.  Each runs on the left of `||`, which also
# disables set -e inside it, so one failing step never skips the others.
# Popping before running makes this safe to re-enter (signal, then EXIT).
# NB for cleanup functions: a bare `return` inside a trap handler returns
# the status from *before* the trap (e.g. the set -e failure), so always
# write `return 0` / `return 1` explicitly.
_at_run() {
    local cmd
    while ((${#_AT_EXIT[@]})); do
        cmd=${_AT_EXIT[-1]}
        unset '_AT_EXIT[-1]'
        eval "$cmd" || _log "cleanup failed (rc=$?): $cmd"
    done
}

_at_exit_trap() { local rc=$?; _at_run; exit "$rc"; }
# On a signal: clean up, then exit with the conventional 128+N status
# (the EXIT trap runs again afterwards but finds the stack empty).
_at_sig_trap() { _log "caught SIG$1, cleaning up"; _at_run; exit $((128 + $2)); }

trap _at_exit_trap EXIT
trap '_at_sig_trap INT 2' INT
trap '_at_sig_trap TERM 15' TERM
trap '_at_sig_trap HUP 1' HUP

# One private scratch dir per test run; registered first, so removed last.
AMP_TMP=$(mktemp -d /tmp/amptest.XXXXXX)
at_exit rm -rf "$AMP_TMP"

# ------------------------------------------------------------ small utils ---

# skip MSG: exit with automake's "skipped" status.
skip() { echo "SKIP: $*" >&2; exit 77; }

need_root() { [[ $EUID -eq 0 ]] || skip "must run as root"; }

# Benchmarks: tracefs mounted for the run (unmounted at exit if we mounted
# it).  Without it amptrace falls back to the raw sys_enter/sys_exit, a
# program on every syscall of the machine, and bpftrace cannot attach:
# a benchmark would measure neither the default path nor the comparison.
need_tracefs() {
    mountpoint -q /sys/kernel/tracing && return 0
    mount -t tracefs nodev /sys/kernel/tracing || return 1
    at_exit umount /sys/kernel/tracing
}

# wait_for COND_CMD TIMEOUT_S: eval COND_CMD every 0.1 s until it succeeds.
# Returns 1 on timeout (so `wait_for ... || fail` works under set -e).
wait_for() {
    local cond=$1 deadline=$((SECONDS + ${2:-10}))
    until eval "$cond"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
}

# Kill a daemon and make sure it is gone.  kill -0 alone is not enough: an
# unreaped child is a zombie that still "exists", so also check its state.
_alive() { [[ -e /proc/$1 ]] && ! grep -q '^[^)]*) Z' "/proc/$1/stat" 2>/dev/null; }
_kill_wait() {
    local pid=$1 name=$2
    _alive "$pid" || { wait "$pid" 2>/dev/null; return 0; }
    kill -TERM "$pid" 2>/dev/null
    if ! wait_for "! _alive $pid" 5; then
        _log "$name ($pid) ignored SIGTERM, sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null
        wait_for "! _alive $pid" 5 || { _log "$name ($pid) will not die"; return 1; }
    fi
    wait "$pid" 2>/dev/null   # reap if it is our child; harmless otherwise
    return 0
}

# Remember what exists under DIR now, so cleanup can delete exactly what a
# daemon added later.  If DIR itself is missing, cleanup removes all of it.
_snapshot_dir() {   # DIR SNAPFILE
    if [[ -e $1 ]]; then find "$1" -mindepth 1 | sort >"$2"; else : >"$2.absent"; fi
}
_remove_new_entries() {   # DIR SNAPFILE
    if [[ -e $2.absent ]]; then rm -rf -- "$1"; return 0; fi
    [[ -e $1 ]] || return 0
    find "$1" -mindepth 1 | sort | comm -13 "$2" - | sort -r |
        while IFS= read -r p; do rm -rf -- "$p"; done
}

# --------------------------------------------------------------- loop fs ---

# mkdir -p DIR, registering an rmdir for each level it creates (deepest
# removed first; registered before any mount on DIR, so runs after umount).
_mkdir_tracked() {
    local d=$1 created=()
    while [[ ! -e $d ]]; do created=("$d" "${created[@]}"); d=$(dirname "$d"); done
    for d in "${created[@]}"; do mkdir "$d"; at_exit rmdir "$d"; done
}

# Unmount with retries: a daemon that just exited may still pin the fs for
# a moment.  Lazy unmount only as a last resort, and say so loudly.
_umount_robust() {
    local mp=$1
    for _ in 1 2 3 4 5; do
        mountpoint -q "$mp" || return 0
        sync
        umount "$mp" 2>/dev/null && return 0
        sleep 0.5
    done
    _log "umount $mp still busy after 5 tries; users: $(fuser -vm "$mp" 2>&1 | tr '\n' ' ')"
    umount -l "$mp" && _log "lazily unmounted $mp (loop device may stay busy)"
}

# nested_loopfs OUTER INNER MKFS_EXT4_OPTION...: an ext4 loop disk (64 MB,
# 4 KiB blocks) whose image lives on another loop fs mounted at OUTER,
# itself mounted at INNER.  Freezing OUTER holds the inner disk's write
# requests (loop's writes to its image wait for the thaw): write-out kept
# in flight on purpose (t22, t23).  Sets NESTED_DEV (/dev/loopN); at exit
# OUTER is thawed first, never left frozen.
# shellcheck disable=SC2034  # NESTED_DEV is for the caller
nested_loopfs() {
    local outer=$1 inner=$2 img
    shift 2
    make_loopfs ext4 256 "$outer"
    img=$outer/inner.img
    truncate -s 64M "$img"
    NESTED_DEV=$(losetup -f --show "$img")
    at_exit losetup -d "$NESTED_DEV"
    mkfs.ext4 -q -F -b 4096 "$@" "$NESTED_DEV"
    _mkdir_tracked "$inner"
    mount "$NESTED_DEV" "$inner"
    at_exit _umount_robust "$inner"
    at_exit _thaw_quiet "$outer"
}
_thaw_quiet() { fsfreeze -u "$1" 2>/dev/null || true; }

# make_loopfs FSTYPE SIZE_MB MOUNTPOINT
#   FSTYPE: ext4 | ext4nj (no journal) | xfs | xfsrmap (xfs with the reverse-map
#   btree, mkfs.xfs's default from xfsprogs 6.5) | btrfs | btrfsC (+C on root dir)
#   Sets LOOPDEV (/dev/loopN) and LOOPNAME (loopN).  Note mkfs minimums:
#   xfs needs >= 300 MB, btrfs >= ~114 MB.
_LOOP_SEQ=0
# shellcheck disable=SC2034  # LOOPDEV/LOOPNAME are for the caller
make_loopfs() {
    local fstype=$1 size=$2 mp=$3 img dev
    local -a mkfs
    # shellcheck disable=SC2054  # the commas are mke2fs -E syntax
    case $fstype in
        # Without lazy_*_init=0, ext4 zeroes its inode tables in a kernel
        # thread *after* mount (~16 MB per GB, seconds later) and pollutes
        # devstat.  On a loop device mkfs does it with cheap, sparse zeroout.
        ext4)        mkfs=(mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0) ;;
        ext4nj)      mkfs=(mkfs.ext4 -q -F -E lazy_itable_init=0 -O ^has_journal) ;;
        xfs)         mkfs=(mkfs.xfs -q -f) ;;
        xfsrmap)     mkfs=(mkfs.xfs -q -f -m rmapbt=1) ;;
        btrfs|btrfsC) mkfs=(mkfs.btrfs -q -f) ;;
        *) _log "make_loopfs: unknown fstype '$fstype'"; return 2 ;;
    esac
    [[ $mp != "$JOURNAL_DIR" ]] || _journald_lock
    if mountpoint -q "$mp"; then _log "make_loopfs: $mp is already a mount point"; return 1; fi

    img=$AMP_TMP/img$((_LOOP_SEQ++)).$fstype
    truncate -s "${size}M" "$img"             # sparse: costs no disk until written
    at_exit rm -f "$img"
    dev=$(losetup -f --show "$img")
    at_exit losetup -d "$dev"
    "${mkfs[@]}" "$dev" >"$img.mkfs.log" 2>&1 ||
        { cat "$img.mkfs.log" >&2; _log "make_loopfs: ${mkfs[*]} $dev failed"; return 1; }

    _mkdir_tracked "$mp"
    mount "$dev" "$mp"
    at_exit _umount_robust "$mp"
    [[ $fstype == btrfsC ]] && chattr +C "$mp"
    LOOPDEV=$dev LOOPNAME=${dev##*/}
    # Start every test from a clean, idle device: nothing of mkfs or mount
    # may be written while a tracer is counting.
    sync
    _wait_quiet "$mp" 3 20
    _log "make_loopfs: $fstype ${size}MB on $LOOPDEV mounted at $mp"
}

# make_stackfs STACK FSTYPE SIZE_MB MOUNTPOINT: FSTYPE (ext4, ext4nj: ext4
# without a journal, xfs, btrfs) on a loop disk through a stack of the
# kinds real hosts keep their logs on, STACK its layers from the disk up,
# joined by '+':
#   plain       none: the whole disk, for comparison
#   part        a partition (an MBR table by sfdisk, `losetup -P`); first
#   raid1       md RAID1 (mdadm, metadata 1.2, no bitmap) of two loop
#               disks, or of a partition of each ("part+raid1"); first
#   lvm         dm-linear over what is below (what LVM makes)
#   crypt       dm-crypt (aes-xts-plain64, a fixed test key) over it
#   crypt-nowq  the same with no_write_workqueue (writes submitted inline)
#   part        after raid1: a partition of the array (md100p1)
# e.g. "part", "lvm", "crypt", "lvm+crypt" (LUKS on LVM), "crypt+lvm" (LVM
# on LUKS).  With STACK_ON_DISK=/dev/DISK (a test disk, never a host's),
# "part" is on that disk instead of a loop device, and "part2" is the
# second partition of a Raspberry Pi's layout there.  Sets STACK_DISK (loopN;
# a RAID1's first leg's), STACK_DISKS (every bottom disk: a RAID1's legs),
# STACK_COPIES (the copies of each page written: 2 on RAID1), STACK_TOP
# (sysfs's name of the top: loopNp1, dm-N), STACK_TOP_PATH (/dev/loopNp1,
# /dev/mapper/NAME) and STACK_LAYERS (every device from the disks up: what
# start_tracer reads in TRACE_LAYERS).  Skips where the kernel cannot make
# the stack (this host: no partitions of a loop device, no device-mapper,
# no md; the qemu guests can).
_STACK_SEQ=0
# shellcheck disable=SC2034  # STACK_* are for the caller
make_stackfs() {
    local stack=$1 fstype=$2 size=$3 mp=$4 img dev cur sectors name layer key table leg md
    local -a mkfs layers parts legs=() disks=()
    # shellcheck disable=SC2054
    case $fstype in
        ext4) mkfs=(mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0) ;;
        ext4nj) mkfs=(mkfs.ext4 -q -F -E lazy_itable_init=0 -O ^has_journal) ;;
        xfs)  mkfs=(mkfs.xfs -q -f) ;;
        btrfs) mkfs=(mkfs.btrfs -q -f) ;;
        *) _log "make_stackfs: unknown fstype '$fstype'"; return 2 ;;
    esac
    [[ $mp != "${JOURNAL_DIR-}" ]] || _journald_lock
    img=$AMP_TMP/stack$((_STACK_SEQ++)).img
    truncate -s "${size}M" "$img"
    at_exit rm -f "$img"
    STACK_COPIES=1
    if [[ $stack == raid1 || $stack == raid1+* || $stack == part+raid1 || $stack == part+raid1+* ]]; then
        command -v mdadm >/dev/null || skip "mdadm not installed (apt-get install mdadm)"
        [[ -e /sys/module/raid1 ]] || modprobe raid1 2>/dev/null ||
            skip "no md RAID1 in this kernel (the qemu guests have it)"
        for leg in 0 1; do
            truncate -s "${size}M" "$img.$leg"
            at_exit rm -f "$img.$leg"
            if [[ $stack == part+* ]]; then
                _loop_partitioned "$img.$leg" fd   # Linux RAID
                dev=$_LOOP_DEV
                legs+=("${dev}p1") layers+=("${dev##*/}" "${dev##*/}p1")
            else
                dev=$(losetup -f --show "$img.$leg")
                at_exit losetup -d "$dev"
                legs+=("$dev") layers+=("${dev##*/}")
            fi
            disks+=("${dev##*/}")
        done
        for md in $(seq 100 127) ''; do [[ -e /sys/block/md$md ]] || break; done
        [[ -n $md ]] || { _log "make_stackfs: no free md number in 100-127"; return 1; }
        # No udev, no mdadm.conf, no resync: mdadm makes /dev/mdN itself.
        mdadm --create "/dev/md$md" --level=1 --raid-devices=2 --metadata=1.2 --run \
            --assume-clean --bitmap=none --homehost=amptest "${legs[@]}" >"$img.mdadm.log" 2>&1 ||
            { cat "$img.mdadm.log" >&2; skip "mdadm cannot make a RAID1 here (module raid1)"; }
        at_exit _md_stop "/dev/md$md"
        cur=/dev/md$md
        layers+=("md$md")
        dev=${disks[0]} STACK_COPIES=2
        stack=${stack#part+}; stack=${stack#raid1}; stack=${stack#+}
        [[ -n $stack ]] || stack=plain
    elif [[ -n ${STACK_ON_DISK-} ]]; then
        # A whole test disk of the qemu guest's (nvme0n1, mmcblk0), its
        # partition table written anew; "part2" as a Raspberry Pi's card:
        # a 64 MiB FAT partition, the filesystem on the second.
        dev=$STACK_ON_DISK
        if [[ $stack == part2 ]]; then
            printf 'label: dos\nstart=2048, size=131072, type=c\nstart=133120, size=%s, type=83\n' \
                $((size * 2048)) | sfdisk -q "$dev" >/dev/null
            wait_for "[[ -b ${dev}p2 ]]" 5 || skip "no second partition appeared on $dev"
            cur=${dev}p2
        else
            _one_partition "$dev" 83 $((size * 2048))
            _wait_partition "$dev"
            cur=${dev}p1
        fi
        layers=("${dev##*/}" "${cur##*/}")
        stack=${stack#part2}; stack=${stack#part}; stack=${stack#+}
    elif [[ $stack == part || $stack == part+* ]]; then
        _loop_partitioned "$img" 83
        dev=$_LOOP_DEV
        cur=${dev}p1
        layers=("${dev##*/}" "${cur##*/}")
        stack=${stack#part}; stack=${stack#+}
    else
        dev=$(losetup -f --show "$img")
        at_exit losetup -d "$dev"
        cur=$dev
        layers=("${dev##*/}")
    fi
    STACK_TOP_PATH=$cur
    [[ $stack != plain ]] || stack=''
    IFS=+ read -r -a parts <<<"$stack"
    for layer in "${parts[@]}"; do
        if [[ $layer == part ]]; then
            # A partition of the md array (md100p1): its table written on the
            # array, whose partitions the kernel scans as a disk's.
            _one_partition "$cur" 83
            _wait_partition "$cur"
            cur=${cur}p1
            STACK_TOP_PATH=$cur
            layers+=("${cur##*/}")
            continue
        fi
        command -v dmsetup >/dev/null || skip "dmsetup not installed (apt-get install dmsetup)"
        [[ -e /sys/module/dm_mod ]] || modprobe dm_mod 2>/dev/null ||
            skip "no device-mapper in this kernel (the qemu guests have it)"
        sectors=$(blockdev --getsz "$cur")
        name=amptest-$$-$_STACK_SEQ-$layer
        key=$(printf '%064d' 0 | tr 0 7)   # a test key: the bytes on disk are not the point
        case $layer in
            lvm)        table="0 $sectors linear $cur 0" ;;
            crypt)      table="0 $sectors crypt aes-xts-plain64 $key 0 $cur 0" ;;
            crypt-nowq) table="0 $sectors crypt aes-xts-plain64 $key 0 $cur 0 1 no_write_workqueue" ;;
            *) _log "make_stackfs: unknown layer '$layer'"; return 2 ;;
        esac
        # No udev here: dmsetup makes /dev/mapper/NAME itself.
        DM_DISABLE_UDEV=1 dmsetup create --noudevsync "$name" --table "$table" ||
            skip "dmsetup cannot make a $layer device here (modules: dm_mod, dm_crypt, xts)"
        at_exit _dm_remove "$name"
        cur=/dev/mapper/$name
        STACK_TOP_PATH=$cur
        layers+=("$(blockdev_sysname "$cur")")
    done
    "${mkfs[@]}" "$STACK_TOP_PATH" >"$img.mkfs.log" 2>&1 ||
        { cat "$img.mkfs.log" >&2; _log "make_stackfs: ${mkfs[*]} $STACK_TOP_PATH failed"; return 1; }
    _mkdir_tracked "$mp"
    mount "$STACK_TOP_PATH" "$mp"
    at_exit _umount_robust "$mp"
    STACK_DISK=${dev##*/} STACK_TOP=${layers[-1]}
    ((${#disks[@]})) || disks=("$STACK_DISK")
    STACK_DISKS="${disks[*]}"
    STACK_LAYERS="${layers[*]}"
    sync
    _wait_quiet "$mp" 3 20
    _log "make_stackfs: $fstype ${size}MB on $1: $STACK_TOP_PATH ($STACK_LAYERS), at $mp"
}

# _one_partition TARGET TYPE [SECTORS]: an MBR table of one partition of
# TYPE (83 Linux, fd Linux RAID) from sector 2048, SECTORS long or to the
# end, on TARGET (an image file or a block device).
_one_partition() {
    command -v sfdisk >/dev/null || skip "sfdisk not installed (apt-get install fdisk)"
    printf 'label: dos\nstart=2048, %stype=%s\n' "${3:+size=$3, }" "$2" | sfdisk -q "$1" >/dev/null
}

# _wait_partition DEV [WHY]: DEV's first partition (DEVp1) shows, or skip.
_wait_partition() {
    wait_for "[[ -b ${1}p1 ]]" 5 || skip "${2:-no partition appeared on $1}"
}

# _loop_partitioned IMG TYPE: _one_partition on IMG, IMG on a loop device
# with partitions (`losetup -P`), its name in _LOOP_DEV (a global: at_exit
# must run in the caller's shell).  Skips where the kernel shows no
# partition of a loop device.
_LOOP_DEV=''
_loop_partitioned() {
    _one_partition "$1" "$2"
    _LOOP_DEV=$(losetup -fP --show "$1")
    at_exit losetup -d "$_LOOP_DEV"
    _wait_partition "$_LOOP_DEV" \
        "this kernel shows no partition of a loop device ($_LOOP_DEV; the qemu guests do)"
}

# blockdev_sysname PATH: sysfs's name (dm-0, loop0p1) of a block special
# file, by its device number: /dev/mapper/NAME is a symlink under udev and
# a node of its own without.
blockdev_sysname() {
    local t maj min
    t=$(stat -L -c '%t %T' "$1" 2>/dev/null) || return 1
    read -r maj min <<<"$t"
    t=$(readlink -f "/sys/dev/block/$((16#$maj)):$((16#$min))") || return 1
    echo "${t##*/}"
}

# An md array, likewise; its legs' superblocks go with their images.
_md_stop() {
    local _
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        mdadm --stop "$1" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    mdadm --stop "$1"
}

# A dm device goes once nothing holds it; a just-unmounted one may still
# be busy for a moment.
_dm_remove() {
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do
        DM_DISABLE_UDEV=1 dmsetup remove --noudevsync "$1" 2>/dev/null && return 0
        sleep 0.5
    done
    DM_DISABLE_UDEV=1 dmsetup remove --noudevsync "$1"
}

# devstat_written_bytes DEV / devstat_write_ios DEV  (DEV like "loop3",
# "loop3p1", "dm-0").  /sys/class/block/DEV/stat (a partition's own, a dm
# device's own): field 5 = write I/Os completed, field 7 = sectors
# written (always 512-byte units, whatever the device's block size).
devstat_written_bytes() { local -a f; read -r -a f <"/sys/class/block/$1/stat"; echo $((f[6] * 512)); }
devstat_write_ios()     { local -a f; read -r -a f <"/sys/class/block/$1/stat"; echo "${f[4]}"; }
# cpu_ticks PID: the process's utime+stime, in clock ticks (its comm may
# hold spaces: the fields are counted after its closing parenthesis).
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
# metric_sum REGEX FILE: the sum of the Prometheus samples matching ^REGEX.
metric_sum() { awk -v re="^$1" '$0 ~ re { s += $NF } END { printf "%.0f\n", s }' "$2"; }

# prog_ids_of PID: the BPF programs a process holds, the prog_id of each of
# its fds (not bpftool's whole list: other tracers may load programs
# meanwhile).
prog_ids_of() { cat /proc/"$1"/fdinfo/* 2>/dev/null | sed -n 's/^prog_id:[[:space:]]*//p' | sort -u; }

# --------------------------------------------------------------- journald ---

# Which journald a journald test runs (AMP_JOURNALD):
#   252  the host's /lib/systemd/systemd-journald (Debian 12), the default;
#   257  Debian 13's, in a chroot on a debootstrap tree cached by
#        scripts/debian-rootfs.sh, under an overlay of the test's own (so the
#        cache never changes), with /proc, /sys (--rbind: 257 refuses to
#        start without it), /dev and a private /run;
#   forky  Debian 14's (testing), the same way: the newest journald Debian
#        has (`make test-journald-next`).
# use_journald sets JOURNALD_ROOT ('' for the host's), JOURNAL_DIR (the
# host path of its /var/log/journal: mount the test's loop fs there) and
# JOURNALD_SOCK; journald 257 also turns kernel audit on by default, so
# the audit state is put back as it was when the test ends.
# AMP_JOURNALD_CONF: lines for a journald.conf drop-in ([Journal] section),
# e.g. "Audit=no": in the chroot's /etc, or for the host's journald in
# /run/systemd/journald.conf.d (removed after; /etc is never touched).
AMP_JOURNALD=${AMP_JOURNALD:-252}
# journald 257 runs with these drop-in lines whenever AMP_JOURNALD_CONF is
# unset: none by default, so its own defaults, Audit=yes among them (kernel
# audit on: amptrace's program loads become audit records that journald
# stores, shown as amptrace's own cost).  AMP_JOURNALD_257_CONF=Audit=no in
# the environment runs every 257 test with audit off.
AMP_JOURNALD_257_CONF=${AMP_JOURNALD_257_CONF-}
JOURNALD_ROOT='' JOURNAL_DIR=/var/log/journal
JOURNALD_SOCK=/run/systemd/journal/socket
JOURNALD_VERSION=''

use_journald() {
    case $AMP_JOURNALD in
        252)
            [[ -x /lib/systemd/systemd-journald ]] || skip "no /lib/systemd/systemd-journald"
            JOURNALD_VERSION=$(dpkg-query -W -f '${Version}' systemd 2>/dev/null)
            JOURNALD_VERSION=${JOURNALD_VERSION%%[.-]*}
            ;;
        257)
            _journald_chroot trixie
            AMP_JOURNALD_CONF=${AMP_JOURNALD_CONF-$AMP_JOURNALD_257_CONF}
            ;;
        forky)
            _journald_chroot forky
            AMP_JOURNALD_CONF=${AMP_JOURNALD_CONF-$AMP_JOURNALD_257_CONF}
            ;;
        *) _log "use_journald: AMP_JOURNALD=$AMP_JOURNALD (want 252, 257 or forky)"; return 2 ;;
    esac
    _log "use_journald: journald $JOURNALD_VERSION${JOURNALD_ROOT:+ in chroot $JOURNALD_ROOT}${AMP_JOURNALD_CONF:+, journald.conf: $AMP_JOURNALD_CONF}"
}

# rootfs_overlay SUITE [PKG,...]: the cached Debian tree of SUITE (with
# those packages: scripts/debian-rootfs.sh) under an overlay of the test's
# own, mounted at $ROOTFS: the cache never changes, and nothing a test does
# there stays.  Skips where the tree can be neither had nor made.
ROOTFS=''
rootfs_overlay() {
    local suite=$1 pkgs=${2:-} lower rc=0 dir
    lower=$("$AMP_ROOT/scripts/debian-rootfs.sh" "$suite" "$pkgs") || rc=$?
    ((rc == 77)) && skip "Debian $suite: the Debian registry cannot be reached and no $suite tree is cached (scripts/debian-rootfs.sh)"
    ((rc == 0)) || { _log "rootfs_overlay: no $suite tree"; return 1; }
    dir=$(mktemp -d "$AMP_TMP/rootfs-$suite.XXXX")
    mkdir -p "$dir/root" "$dir/upper" "$dir/work"
    mount -t overlay "amptest-$suite" -o "lowerdir=$lower,upperdir=$dir/upper,workdir=$dir/work" "$dir/root"
    at_exit _umount_robust "$dir/root"
    ROOTFS=$dir/root
}

# rootfs_system ROOT: what a chroot's daemons and tools need: /proc, /sys
# (--rbind: journald 257 refuses to start without it), a private /dev with
# the usual nodes and /dev/log pointing at journald's syslog socket (the
# host's /dev is never touched), and a private /run.
rootfs_system() {
    local root=$1 node
    mount -t proc proc "$root/proc"
    at_exit umount -l "$root/proc"
    # rslave: unmounting the copies must never reach the host's own mounts.
    mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
    at_exit umount -R -l "$root/sys"
    mount -t tmpfs -o mode=0755,size=1m amptest-dev "$root/dev"
    at_exit _umount_robust "$root/dev"
    for node in null zero full random urandom kmsg tty; do
        cp -a "/dev/$node" "$root/dev/$node"
    done
    ln -s /run/systemd/journal/dev-log "$root/dev/log"
    ln -s /proc/self/fd "$root/dev/fd"
    mount -t tmpfs -o mode=0755,size=64m amptest-run "$root/run"
    at_exit _umount_robust "$root/run"
}

# The chroot for a Debian release's journald: SUITE.
_journald_chroot() {
    local suite=$1
    _journald_lock
    rootfs_overlay "$suite"
    rootfs_system "$ROOTFS"
    JOURNALD_ROOT=$ROOTFS JOURNAL_DIR=$ROOTFS/var/log/journal
    JOURNALD_SOCK=$ROOTFS/run/systemd/journal/socket
    # (Not `systemd-journald --version`: 257 takes no options, and starts.)
    JOURNALD_VERSION=$(chroot "$ROOTFS" dpkg-query -W -f '${Version}' systemd 2>/dev/null)
    JOURNALD_VERSION=${JOURNALD_VERSION%%[.-]*}
    [[ -n $JOURNALD_VERSION ]] || { _log "use_journald: no journald in the $suite tree"; return 1; }
}

# journald_run CMD ARGS...: a command of the journald's own release (its
# journalctl, logger), in its root; paths inside are the root's own
# (journal_path turns a host path into one).
journald_run() {
    if [[ -n $JOURNALD_ROOT ]]; then chroot "$JOURNALD_ROOT" "$@"; else "$@"; fi
}
journal_path() { echo "${1#"$JOURNALD_ROOT"}"; }

# start_journald: standalone journald persisting to whatever is mounted at
# $JOURNAL_DIR (use_journald first; make_loopfs there).  Never pass it
# arguments: journald 252 treats argv[1] as a *namespace* name (even
# "--version") and creates dirs for it.
# One standalone journald at a time on this host (one socket path, one
# /var/log/journal): tests that need it queue here; the lock goes with the
# test's process.  Idempotent.
_JOURNALD_LOCK_FD=''
_journald_lock() {
    [[ -n $_JOURNALD_LOCK_FD ]] && return 0
    mkdir -p /run/lock
    exec {_JOURNALD_LOCK_FD}>/run/lock/amptest-journald.lock
    flock -w 900 "$_JOURNALD_LOCK_FD" ||
        { _log "waited 900 s for another test's journald"; return 1; }
}

start_journald() {
    local wdir=${JOURNALD_ROOT}/run/systemd/journal runlog=${JOURNALD_ROOT}/run/log/journal
    [[ -n $JOURNALD_VERSION ]] || use_journald
    _journald_lock
    if pgrep -x systemd-journal >/dev/null; then   # comm is truncated to 15 chars
        _log "start_journald: a systemd-journald is already running:"
        pgrep -ax systemd-journal >&2
        return 1
    fi
    if ! mountpoint -q "$JOURNAL_DIR"; then
        _log "start_journald: warning: $JOURNAL_DIR is not a mount point"
        _mkdir_tracked "$JOURNAL_DIR"     # and remove what journald adds
        _snapshot_dir "$JOURNAL_DIR" "$AMP_TMP/snap.varlog"
        at_exit _remove_new_entries "$JOURNAL_DIR" "$AMP_TMP/snap.varlog"
    fi

    if [[ -z $JOURNALD_ROOT ]]; then
        # After `journalctl --flush`, journald deletes the runtime journal in
        # /run/log/journal, but refuses to delete on a non-tmpfs fs ("Attempted
        # to remove disk file system ... can't allow that"); the leftover file is
        # then reopened and ALL later entries go to /run, not /var/log/journal.
        # Where /run is not tmpfs (this VM), give it a private tmpfs.  (The
        # chroot's /run is a tmpfs of its own already.)
        _mkdir_tracked "$runlog"
        if [[ $(stat -f -c %T "$runlog") != tmpfs ]]; then
            mount -t tmpfs -o mode=0755,size=64m amptest-runlog "$runlog"
            at_exit _umount_robust "$runlog"
        fi
        # Settings: a drop-in under /run (the host's /etc is left alone).
        if [[ -n ${AMP_JOURNALD_CONF:-} ]]; then
            _mkdir_tracked /run/systemd/journald.conf.d
            printf '[Journal]\n%s\n' "$AMP_JOURNALD_CONF" \
                >/run/systemd/journald.conf.d/amptest.conf
            at_exit rm -f /run/systemd/journald.conf.d/amptest.conf
        fi
        # Register cleanup of the paths journald creates before starting it.
        _snapshot_dir "$wdir" "$AMP_TMP/snap.runjournal"
        _snapshot_dir "$runlog" "$AMP_TMP/snap.runlog"
        at_exit _remove_new_entries "$wdir" "$AMP_TMP/snap.runjournal"
        at_exit _remove_new_entries "$runlog" "$AMP_TMP/snap.runlog"
    else
        # journald 257 turns kernel audit on unless told otherwise: the
        # host's audit state comes back when the test ends (after journald
        # is gone: at_exit runs last-in first-out).
        local audit
        audit=$(python3 "$AMP_ROOT/tests/audit_state.py" get) &&
            at_exit python3 "$AMP_ROOT/tests/audit_state.py" set "$audit"
        if [[ -n ${AMP_JOURNALD_CONF:-} ]]; then
            mkdir -p "$JOURNALD_ROOT/etc/systemd/journald.conf.d"
            printf '[Journal]\n%s\n' "$AMP_JOURNALD_CONF" \
                >"$JOURNALD_ROOT/etc/systemd/journald.conf.d/amptest.conf"
        fi
    fi

    mkdir -p "$wdir"
    if [[ -n $JOURNALD_ROOT ]]; then
        chroot "$JOURNALD_ROOT" /usr/lib/systemd/systemd-journald </dev/null >"$AMP_TMP/journald.log" 2>&1 &
    else
        /lib/systemd/systemd-journald </dev/null >"$AMP_TMP/journald.log" 2>&1 &
    fi
    JOURNALD_PID=$!
    at_exit _kill_wait "$JOURNALD_PID" journald

    if ! wait_for "[[ -S $JOURNALD_SOCK && -S $wdir/io.systemd.journal ]]" 10; then
        _log "start_journald: $JOURNALD_SOCK did not appear within 10 s; journald log:"
        cat "$AMP_TMP/journald.log" >&2
        return 1
    fi
    # Move from the volatile /run/log/journal to persistent /var/log/journal.
    journald_run journalctl --flush >/dev/null 2>&1 ||
        { _log "start_journald: journalctl --flush failed"; return 1; }
    wait_for "compgen -G '$JOURNAL_DIR/*/system.journal' >/dev/null" 10 ||
        { _log "start_journald: no system.journal under $JOURNAL_DIR"; return 1; }
    # Settle, so the test counts none of the setup I/O.  After replying to
    # --flush journald still logs its own "Time spent on flushing..." entries;
    # those dirty the file's mtime, which ext4 commits up to 5 s later
    # (observed: 16 KB ~4 s after a bare sync).  So: grace, sync, then demand
    # 6 s (> one 5 s jbd2 commit interval) of no writes on the device.
    sleep 1
    sync
    _wait_quiet "$JOURNAL_DIR" 6 20
    # Quiet is not clean: pages journald dirtied meanwhile (its own notices)
    # wait for writeback, and would be written while a test traces.
    sync
    _log "start_journald: journald $JOURNALD_VERSION, pid $JOURNALD_PID, file $(journald_file)"
}

# Wait until the block device behind MOUNTPOINT has written nothing for
# QUIET_S seconds (max TIMEOUT_S).  No-op if it is not a mount point.
_wait_quiet() {
    local mp=$1 quiet=$2 deadline=$((SECONDS + $3)) dev last cur since=$SECONDS
    dev=$(findmnt -no SOURCE "$mp" 2>/dev/null) || return 0
    dev=$(blockdev_sysname "$dev") || return 0   # /dev/mapper/NAME -> dm-N
    [[ -r /sys/class/block/$dev/stat ]] || return 0
    last=$(devstat_written_bytes "$dev")
    while ((SECONDS - since < quiet && SECONDS < deadline)); do
        sleep 0.5
        cur=$(devstat_written_bytes "$dev")
        [[ $cur == "$last" ]] || { last=$cur; since=$SECONDS; }
    done
}

# journald_file: host path of the active persistent journal file.
journald_file() {
    local f
    for f in "$JOURNAL_DIR"/*/system.journal; do [[ -e $f ]] && { echo "$f"; return 0; }; done
    return 1
}

# send_journal_entry MESSAGE [FIELD=VALUE ...]: exactly one native entry =
# one datagram on $JOURNALD_SOCK (logger --journald -> sd_journal_sendv ->
# one sendmsg), by the logger of the journald's own release.  Values must
# not contain newlines.  PRIORITY=6 and SYSLOG_IDENTIFIER=$AMP_TAG are added
# unless given.
send_journal_entry() {
    local msg=$1; shift
    local -a extra=()
    [[ " $* " == *" PRIORITY="* ]] || extra+=(PRIORITY=6)
    [[ " $* " == *" SYSLOG_IDENTIFIER="* ]] || extra+=("SYSLOG_IDENTIFIER=$AMP_TAG")
    printf '%s\n' "MESSAGE=$msg" "$@" "${extra[@]}" | journald_run logger --journald
}

# journal_one_line MSG: one native entry as send_journal_entry sends it,
# its datagram's size in JOURNAL_DGRAM (MESSAGE, PRIORITY and
# SYSLOG_IDENTIFIER lines, each + "\n"), then its append written out.
# shellcheck disable=SC2034  # JOURNAL_DGRAM is for the caller
journal_one_line() {
    send_journal_entry "$1"
    JOURNAL_DGRAM=$(printf '%s\n' "MESSAGE=$1" PRIORITY=6 "SYSLOG_IDENTIFIER=$AMP_TAG" | wc -c)
    sleep 2     # journald appends, then its 250 ms ftruncate timer fires
    sync
    sleep 1
}

# ---------------------------------------------------------------- rsyslog ---

# start_rsyslog LOGFILE [SOCKET|journal]: private rsyslogd listening only on
# SOCKET ($AMP_TMP/rsyslog.sock by default; journald forwards to
# /run/systemd/journal/syslog), or reading the journal (imjournal, RHEL's
# input: the local journal from its end), writing exactly "<message>\n"
# per line to LOGFILE, and only for messages tagged $AMP_TAG (rsyslog's own
# start/stop notices are dropped).  Sets RSYSLOG_PID and RSYSLOG_SOCK.
start_rsyslog() {
    local logfile=$1 conf=$AMP_TMP/rsyslog.conf ready what
    if [[ ${2-} == journal ]]; then
        RSYSLOG_SOCK=''
        # imjournal: the local journal, from its end (a state file of its
        # own, so that a restart goes on where it was, as on a host).
        cat >"$conf" <<EOF
global(workDirectory="$AMP_TMP")
module(load="imjournal" StateFile="$AMP_TMP/imjournal.state" IgnorePreviousMessages="on")
template(name="amp.msgonly" type="string" string="%msg%\n")
if \$programname == "$AMP_TAG" then
    action(type="omfile" file="$logfile" template="amp.msgonly")
stop
EOF
        # Up once its journal reader is: the journal's files open.
        ready="ls -l /proc/\$RSYSLOG_PID/fd 2>/dev/null | grep -q '\\.journal'" what="the journal open"
    else
        RSYSLOG_SOCK=${2:-$AMP_TMP/rsyslog.sock}
        # The RFC3164 parser keeps the space after "tag:" in %msg%;
        # remove.msgFirstSpace drops exactly that one space (not any others).
        # Output goes through omfile's defaults: 4 KiB buffer, flushed at the end
        # of each batch, i.e. one write() per line when lines arrive spaced out.
        cat >"$conf" <<EOF
global(workDirectory="$AMP_TMP")
module(load="imuxsock" SysSock.Use="off")
parser(name="amp.rfc3164" type="pmrfc3164" remove.msgFirstSpace="on")
template(name="amp.msgonly" type="string" string="%msg%\n")
ruleset(name="amp" parser="amp.rfc3164") {
    if \$programname == "$AMP_TAG" then
        action(type="omfile" file="$logfile" template="amp.msgonly")
    stop
}
input(type="imuxsock" Socket="$RSYSLOG_SOCK" ruleset="amp" useSpecialParser="off")
EOF
        at_exit rm -f "$RSYSLOG_SOCK"
        ready="[[ -S $RSYSLOG_SOCK ]]" what=$RSYSLOG_SOCK
    fi
    rsyslogd -N1 -f "$conf" >"$AMP_TMP/rsyslog.check" 2>&1 ||
        { cat "$AMP_TMP/rsyslog.check" >&2; _log "start_rsyslog: bad config"; return 1; }
    # -n: stay in foreground, so $! is the daemon's pid.
    rsyslogd -n -f "$conf" -i "$AMP_TMP/rsyslog.pid" </dev/null >"$AMP_TMP/rsyslog.log" 2>&1 &
    RSYSLOG_PID=$!
    at_exit _kill_wait "$RSYSLOG_PID" rsyslogd
    if ! wait_for "$ready" 10; then
        _log "start_rsyslog: no $what within 10 s; rsyslogd log:"
        cat "$AMP_TMP/rsyslog.log" >&2
        return 1
    fi
    _log "start_rsyslog: pid $RSYSLOG_PID, ${RSYSLOG_SOCK:-imjournal} -> $logfile"
}

# send_rsyslog_line TEXT: one datagram to the private rsyslog socket.
send_rsyslog_line() {
    logger --socket-errors=on -u "$RSYSLOG_SOCK" -t "$AMP_TAG" -- "$1"
}

# ---------------------------------------------------------------- tracer ---

export AMP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AMPTRACE=${AMPTRACE:-$AMP_ROOT/amptrace}
SYNTH_WRITER=${SYNTH_WRITER:-$AMP_ROOT/build/tests/synth_writer}
TRACE_OUT='' TRACER_PID=''
# Seconds the tracer gets to attach, and to exit after SIGINT; the qemu
# guest raises it under TCG emulation.
AMP_TRACER_WAIT=${AMP_TRACER_WAIT:-30}

# start_tracer ARGS...: `amptrace trace -j ARGS` in the background, its JSON
# lines in $TRACE_OUT.  Returns once its programs are attached.  With
# --dev DISK, the test reads /sys/block/DISK/stat itself before the tracer
# starts and after it stops (outer), and once it said "tracing (" and
# before its SIGINT (inner): amptrace reads its own baseline before that
# line and its last reading after SIGINT, so its count lies between the
# two.  stop_tracer puts "DISK OUTER INNER" in the file $AMP_TRACE_COUNTER
# (exported), which checks.py compares with the classes.  (A btrfs commit
# or a write-back during the tracer's start falls between the two.)
#
# On a stack (partition, dm, md), --dev may name a layer by path or mount
# point: TRACE_LAYERS="loop0 loop0p1 dm-0" (set by the caller) names the
# devices the test reads, one "DEV OUTER INNER" line each.
start_tracer() {
    local a prev='' d
    TRACE_OUT=$AMP_TMP/trace.json
    TRACE_DEV=''
    for a in "$@"; do
        [[ $prev == --dev ]] && TRACE_DEV=$a
        [[ $a == --dev=* ]] && TRACE_DEV=${a#--dev=}
        prev=$a
    done
    export AMP_TRACE_COUNTER=$AMP_TMP/trace.counter
    rm -f "$AMP_TRACE_COUNTER"
    _TRACE_READ=()
    if [[ -n ${TRACE_LAYERS-} ]]; then
        read -r -a _TRACE_READ <<<"$TRACE_LAYERS"
    elif [[ -n $TRACE_DEV ]]; then
        _TRACE_READ=("$TRACE_DEV")
    fi
    declare -gA _TRACE_C0=() _TRACE_C0_INNER=()
    for d in "${_TRACE_READ[@]}"; do _TRACE_C0[$d]=$(devstat_written_bytes "$d"); done
    # Empty it here: the child's own 2> truncates only after the fork, and
    # a previous tracer's "tracing (" line would end the wait below at once.
    : >"$AMP_TMP/tracer.err"
    "$AMPTRACE" trace -j -o "$TRACE_OUT" "$@" 2>"$AMP_TMP/tracer.err" &
    TRACER_PID=$!
    at_exit _kill_wait "$TRACER_PID" amptrace
    wait_for "grep -q 'tracing (' $AMP_TMP/tracer.err || ! _alive $TRACER_PID" "$AMP_TRACER_WAIT" ||
        { _log "start_tracer: amptrace did not attach in $AMP_TRACER_WAIT s"; return 1; }
    _alive "$TRACER_PID" || { cat "$AMP_TMP/tracer.err" >&2; _log "start_tracer: amptrace died"; return 1; }
    for d in "${_TRACE_READ[@]}"; do _TRACE_C0_INNER[$d]=$(devstat_written_bytes "$d"); done
    _log "start_tracer: $(grep -m1 'tracing (' "$AMP_TMP/tracer.err")"
    # Kernel audit on: pages holding the audit records of the tracer's own
    # program loads are dirty, and an entry touching them would ride free.
    # Tests measure entries on clean pages: write those out first (their
    # bytes are charged to the tracer's own entries).
    if grep -q '^amptrace: kernel audit is on' "$AMP_TMP/tracer.err"; then
        _log "start_tracer: $(grep -m1 '^amptrace: kernel audit is on' "$AMP_TMP/tracer.err")"
        sync
    fi
}

# stop_tracer: Ctrl-C it, as a user would; fail unless it exits 0 with a summary.
stop_tracer() {
    local rc=0 d
    local -A c1_inner=()
    # (A device that went away meanwhile has no counter to read: t61.)
    for d in "${_TRACE_READ[@]}"; do
        [[ -e /sys/class/block/$d/stat ]] && c1_inner[$d]=$(devstat_written_bytes "$d")
    done
    kill -INT "$TRACER_PID"
    wait_for "! _alive $TRACER_PID" "$AMP_TRACER_WAIT" || { _log "stop_tracer: amptrace ignored SIGINT"; return 1; }
    wait "$TRACER_PID" || rc=$?
    ((rc == 0)) || { grep -v '^libbpf' "$AMP_TMP/tracer.err" >&2; _log "stop_tracer: exit $rc"; return 1; }
    for d in "${_TRACE_READ[@]}"; do
        [[ -n ${c1_inner[$d]-} && -e /sys/class/block/$d/stat ]] || continue
        echo "$d $(($(devstat_written_bytes "$d") - _TRACE_C0[$d])) $((c1_inner[$d] - _TRACE_C0_INNER[$d]))"
    done >"$AMP_TRACE_COUNTER"
    tail -n 1 "$TRACE_OUT" | grep -q '"type":"summary"' ||
        { _log "stop_tracer: no summary line"; return 1; }
}

# expect_error WHAT CMD...: CMD must exit 1 with exactly one "amptrace: ..."
# line on stderr (kept in $AMP_TMP/err).  bad CMD...: the same, named by
# CMD's arguments.
expect_error() {
    local what=$1 rc=0 lines; shift
    "$@" >"$AMP_TMP/out" 2>"$AMP_TMP/err" </dev/null || rc=$?
    lines=$(wc -l <"$AMP_TMP/err")
    [[ $rc == 1 ]] || fail "$what: exit $rc (want 1): $(cat "$AMP_TMP/err")"
    [[ $lines == 1 ]] || fail "$what: $lines lines on stderr (want 1): $(cat "$AMP_TMP/err")"
    grep -q '^amptrace: ' "$AMP_TMP/err" || fail "$what: message lacks 'amptrace:' prefix"
    ok "$what -> $(cat "$AMP_TMP/err")"
}
bad() { expect_error "${*:2}" "$@"; }

# ok MSG / fail MSG: one line per assertion in the test's log.
ok()   { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# Guest-kernel tests (t95, t96): skip where KVM is missing unless emulation
# was asked for.
qemu_need_accel() {
    [[ -z ${AMP_IN_QEMU-} ]] || skip "already inside the qemu guest"
    command -v qemu-system-x86_64 >/dev/null ||
        skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
    # KVM where a KVM guest really boots, else TCG (scripts/qemu-accel.sh
    # says which and why; tests/run.sh keeps the verdict for the run).
    local accel why
    IFS=$'\t' read -r accel why < <("$AMP_ROOT/scripts/qemu-accel.sh") ||
        fail "scripts/qemu-accel.sh could not choose an accelerator"
    export AMPTRACE_QEMU_ACCEL=$accel AMPTRACE_QEMU_ACCEL_WHY=$why
}

# qemu_core_tests WHAT [TEST...]: the core tests in the guest kernel the
# environment names (AMPTRACE_QEMU_KPKG ...), AMPTRACE_QEMU_TESTS or,
# emulated, the quick ones, and the TESTs after them (under KVM the core
# list has them all); ok/skip/fail with WHAT in the message.
qemu_core_tests() {
    local what=$1 rc=0
    local -a tests=()
    shift
    # Whole run, download and boot included: well inside 10 minutes under
    # KVM; emulated, t42's stacks alone take 6 (6.1) to 10 (5.15) minutes.
    if [[ ${AMPTRACE_QEMU_ACCEL:-kvm} == tcg ]]; then
        export AMPTRACE_QEMU_TIMEOUT=${AMPTRACE_QEMU_TIMEOUT:-1800}
    else
        export AMPTRACE_QEMU_TIMEOUT=${AMPTRACE_QEMU_TIMEOUT:-540}
    fi
    if [[ -n ${AMPTRACE_QEMU_TESTS-} ]]; then
        read -r -a tests <<<"$AMPTRACE_QEMU_TESTS"
    elif [[ ${AMPTRACE_QEMU_ACCEL:-kvm} == tcg ]]; then
        tests=(t10 t20 t24 t30 t31 t40 t44 t46 t50 t60)   # the fs matrix (t35, t36) takes long emulated
    fi
    # A list was chosen: the caller's own tests too (none twice).
    if ((${#tests[@]})); then
        local t
        for t in "$@"; do [[ " ${tests[*]} " == *" $t "* ]] || tests+=("$t"); done
    fi
    "$AMP_ROOT/scripts/qemu-kernel-test.sh" "${tests[@]}" || rc=$?
    case $rc in
        0) ok "core tests pass on $what" ;;
        77) exit 77 ;;
        *) fail "core tests on $what: exit $rc (logs: ${AMP_TEST_LOGS:-/tmp/amptrace-test-logs}/qemu-*)" ;;
    esac
}
