#!/usr/bin/env bash
# A real systemd host under qemu: run a script in it as root, get its
# output and exit status back.
#
#   scripts/qemu-systemd-host.sh [-o DIR] SCRIPT [ARG...]      (root)
#
# The guest: Debian 13's own kernel (trixie's linux-image-amd64, a 6.12,
# fetched once into /var/cache/amptrace-qemu; Debian 12's 6.1 if it cannot
# be had), its root a Debian 13 debootstrap tree (scripts/debian-rootfs.sh,
# cached and never changed: the guest sees it read-only over 9p under a
# tmpfs overlay), systemd 257 as PID 1, journald as its service, cgroup v2
# with the io controller on (DefaultIOAccounting=yes) and the persistent
# journal (/var/log/journal) on a fresh ext4 of its own, a virtio disk.
# A busybox initramfs loads the disk and 9p modules and mounts these
# before it hands over to systemd (there is no udev).
#
# Once multi-user.target is reached, SCRIPT runs with bash as the oneshot
# service amp-guest.service (cgroup system.slice/amp-guest.service), its
# stdout and stderr to the serial console and $AMP_OUT/script.log, never
# to the journal (its lines would be journald's writes).  When it ends the
# guest powers off.  Its environment:
#   AMP_REPO          this checkout, read-only: ./amptrace built on the host
#                     runs there (the rootfs has its libraries)
#   AMPTRACE          $AMP_REPO/amptrace
#   AMP_OUT           a directory shared with the host (-o DIR, else a temp
#                     one whose files land in the logs)
#   AMP_JOURNAL_DEV   the journal's disk (vda)
# The guest has systemctl, journalctl, logger and modprobe (the kernel's
# modules are at /usr/lib/modules); /tmp is a tmpfs; no network.  To test
# a unit, SCRIPT would do e.g.
#     cp "$AMP_REPO/contrib/x.service" /etc/systemd/system/   # the root is writable
#     systemctl daemon-reload && systemctl start x.service
#     systemctl is-active --quiet x.service || exit 1
#
# Prints SCRIPT's output (streamed on a terminal or with
# AMPTRACE_QEMU_STREAM=1, else when the guest is off), then one line
# "qemu-systemd-host: ... exit N"; exits with SCRIPT's status, 1 if the
# guest never ran it to the end (the console's tail is printed), 77 (skip)
# where qemu, a kernel or the rootfs cannot be had.  Logs (console, script.log, files SCRIPT wrote to AMP_OUT)
# in ${AMP_TEST_LOGS:-/tmp/amptrace-test-logs}/qemu-systemd-host/ without -o.
#
# Environment:
#   AMPTRACE_QEMU_ACCEL, AMPTRACE_QEMU_TCG_THREAD, AMPTRACE_QEMU_CACHE,
#   AMPTRACE_QEMU_APPEND, AMPTRACE_QEMU_STREAM, AMPTRACE_QEMU_SILENT
#                           as for qemu-kernel-test.sh
#   AMPTRACE_QEMU_TIMEOUT   seconds for the whole guest run (default 540)
#   AMPTRACE_QEMU_MEM / AMPTRACE_QEMU_SMP   guest MiB (2048) / vCPUs (2)
#   AMPTRACE_SDHOST_PKGS    more Debian packages for the rootfs, comma-separated
#                           (another cached tree, made once)
#   AMPTRACE_SDHOST_JOURNALD_CONF  lines of a journald.conf drop-in
#                           ([Journal]) in force from boot, e.g. "Audit=no"
#   AMPTRACE_SDHOST_ENABLE  units to enable before systemd starts (`systemctl
#                           enable` in the guest's root by the initramfs), e.g.
#                           "systemd-journald-audit.socket" (upstream's preset
#                           enables it, Debian's does not)
#   AMPTRACE_SDHOST_DISK_MB size of the journal's disk (default 1024)
#   AMPTRACE_SDHOST_STACK   the journal's ext4 on layers over that disk,
#                           from the disk up, joined by '+': crypt (LUKS's
#                           dm-crypt, aes-xts-plain64, a test key), lvm (a
#                           dm-linear LV); e.g. crypt+lvm, LVM on LUKS (the
#                           encrypted installers' layout).  Made by the
#                           initramfs with the rootfs's dmsetup and mkfs
#                           (another cached tree, with dmsetup, e2fsprogs)
#
# Nothing stays on the host: qemu dies with this script, its images are in
# a temp dir; only the caches remain.
set -euo pipefail

say() { echo "qemu-systemd-host: $*" >&2; }
skip() { say "SKIP: $*"; exit 77; }
die() { say "error: $*"; exit 1; }

# What ./amptrace links against (ldd), in Debian 13's names, and kmod for
# modprobe.  Changing this list makes another cached tree.
ROOTFS_PKGS=libbpf1,libelf1t64,libjson-c5,libmicrohttpd12t64,zlib1g,kmod
# The root over 9p, the journal's disk.
ROOT_MODS=(virtio_pci virtio_blk 9pnet_virtio 9p overlay crc32c_intel crc32c_generic ext4)
STACK=${AMPTRACE_SDHOST_STACK-}
if [[ -n $STACK ]]; then
    [[ $STACK =~ ^(crypt|lvm)(\+(crypt|lvm))*$ ]] ||
        { echo "qemu-systemd-host: AMPTRACE_SDHOST_STACK=$STACK: layers are crypt and lvm, joined by +" >&2; exit 1; }
    ROOT_MODS+=(dm_mod dm_crypt xts)
    AMPTRACE_SDHOST_PKGS=${AMPTRACE_SDHOST_PKGS:+$AMPTRACE_SDHOST_PKGS,}dmsetup,e2fsprogs
fi

((EUID == 0)) || skip "must run as root (the caches, KVM)"
outdir=''
while getopts o: opt; do
    case $opt in
        o) outdir=$OPTARG ;;
        *) die "usage: qemu-systemd-host.sh [-o DIR] SCRIPT [ARG...]" ;;
    esac
done
shift $((OPTIND - 1))
(($# >= 1)) || die "usage: qemu-systemd-host.sh [-o DIR] SCRIPT [ARG...]"
script=$1
shift
[[ -f $script ]] || die "no script $script"
REPO=$(cd "$(dirname "$0")/.." && pwd)
export AMPTRACE_QEMU_TIMEOUT=${AMPTRACE_QEMU_TIMEOUT:-540}
# shellcheck source=scripts/qemu-lib.sh
. "$REPO/scripts/qemu-lib.sh"
qemu_need
[[ -x $REPO/amptrace ]] || make -s -C "$REPO" amptrace >&2 || die "make failed"

# ----------------------------------------------------------- rootfs, kernel ---
rc=0
tree=$("$REPO/scripts/debian-rootfs.sh" trixie "$ROOTFS_PKGS${AMPTRACE_SDHOST_PKGS:+,$AMPTRACE_SDHOST_PKGS}") || rc=$?
((rc == 0)) || { ((rc == 77)) && skip "no Debian 13 rootfs"; die "no Debian 13 rootfs"; }
# Its keyring signs trixie's lists even where the host's is older.
QEMU_KEYRING=$tree/usr/share/keyrings/debian-archive-keyring.gpg
rc=0
qemu_kernel trixie || rc=$?
if ((rc == 77)); then
    say "no Debian 13 kernel to be had: Debian 12's 6.1 instead"
    rc=0
    qemu_kernel "" || rc=$?
fi
((rc == 0)) || { ((rc == 77)) && skip "no kernel package to be had"; die "no kernel"; }

# ---------------------------------------------------------------- guest ---
qemu_workdir
ird=$WORK/initramfs
initramfs_modules "$ird" "${ROOT_MODS[@]}"
mkdir -p "$ird"/{lower,upper,amp/etc/systemd/system,amp/etc/systemd/system.conf.d,amp/etc/systemd/journald.conf.d}
cp "$script" "$ird/amp/script"
{
    printf 'AMP_REPO=/run/amp/repo\nAMPTRACE=/run/amp/repo/amptrace\nAMP_OUT=/run/amp/out\n'
    printf 'AMP_JOURNAL_DEV=vda\nAMP_JOURNAL_STACK=%q\nAMP_KVER=%q\n' "$STACK" "$KVER"
    printf 'AMP_ARGS=(%s)\n' "$(printf '%q ' "$@")"
} >"$ird/amp/env"
printf 'ROOT_MODS="%s"\nAMP_KVER=%s\nAMP_ENABLE="%s"\nAMP_STACK="%s"\n' "${QEMU_MODS[*]}" "$KVER" \
    "${AMPTRACE_SDHOST_ENABLE-}" "$STACK" >"$ird/amp.env"

# amp.target (the boot's goal, on the kernel command line) = multi-user.target,
# then amp-guest.service; the service powers the guest off when it ends.
etc=$ird/amp/etc/systemd
cat >"$etc/system/amp.target" <<'EOF'
[Unit]
Description=multi-user.target, then the script of qemu-systemd-host.sh
Requires=multi-user.target
After=multi-user.target
Wants=amp-guest.service
AllowIsolate=yes
EOF
cat >"$etc/system/amp-guest.service" <<'EOF'
[Unit]
Description=The script of qemu-systemd-host.sh
After=multi-user.target
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
ExecStart=/bin/bash /run/amp/guest-run
StandardInput=null
StandardOutput=tty
StandardError=inherit
TTYPath=/dev/console
TimeoutStartSec=infinity
EOF
# No login prompt on the console: it is the script's.
ln -s /dev/null "$etc/system/serial-getty@ttyS0.service"
printf '[Manager]\nDefaultIOAccounting=yes\n' >"$etc/system.conf.d/amp.conf"
{
    printf '[Journal]\nStorage=persistent\n'
    [[ -z ${AMPTRACE_SDHOST_JOURNALD_CONF-} ]] || printf '%s\n' "$AMPTRACE_SDHOST_JOURNALD_CONF"
} >"$etc/journald.conf.d/amp.conf"

cat >"$ird/amp/guest-run" <<'EOF'
# amp-guest.service: SCRIPT with its environment, output to the console
# and $AMP_OUT/script.log, its status to $AMP_OUT/rc.
# shellcheck disable=SC1091
. /run/amp/env
export AMP_REPO AMPTRACE AMP_OUT AMP_JOURNAL_DEV AMP_JOURNAL_STACK
cd /
echo "amp-guest: $(systemctl --version | head -n 1), kernel $(uname -r), up $(cut -d' ' -f1 /proc/uptime) s"
bash /run/amp/script "${AMP_ARGS[@]}" 2>&1 | tee "$AMP_OUT/script.log"
rc=${PIPESTATUS[0]}
echo "$rc" >"$AMP_OUT/rc"
echo "AMPTRACE-SDHOST-DONE rc=$rc"
EOF

cat >"$ird/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec >/dev/console 2>&1
# First thing on the console: the host stops a guest that stays silent.
echo "initramfs: init up at $(cut -d' ' -f1 /proc/uptime) s"
. /amp.env
fail() { echo "initramfs: $*"; echo o >/proc/sysrq-trigger; sleep 10; exit 1; }
for m in $ROOT_MODS; do modprobe "$m" || fail "modprobe $m failed"; done
o9p=trans=virtio,version=9p2000.L,msize=262144
# The Debian 13 tree read-only, a tmpfs on top of it for what the guest writes.
mount -t 9p -o ro,cache=loose,$o9p amproot /lower || fail "cannot mount the rootfs (9p)"
mount -t tmpfs -o mode=0755 upper /upper && mkdir /upper/u /upper/w
mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w rootfs /newroot ||
    fail "cannot mount the overlay root"
r=/newroot
cp -a /amp/etc/. $r/etc/
# /run, made here, is kept by systemd.
mount -t tmpfs -o mode=0755,nosuid,nodev run $r/run
mkdir -p $r/run/amp/out $r/run/amp/repo $r/usr/lib/modules/$AMP_KVER $r/var/log/journal
cp /amp/env /amp/guest-run /amp/script $r/run/amp/
mount -t 9p -o $o9p ampout $r/run/amp/out || fail "cannot mount the output dir (9p)"
mount -t 9p -o ro,cache=loose,$o9p amprepo $r/run/amp/repo || fail "cannot mount the checkout (9p)"
mount -t 9p -o ro,cache=loose,$o9p ampmods $r/usr/lib/modules/$AMP_KVER || fail "cannot mount the modules (9p)"
for d in dev proc sys; do mount --move /$d $r/$d; done
dev=/dev/vda
if [ -n "$AMP_STACK" ]; then
    # The layers, by the rootfs's own tools; no udev: dmsetup makes the
    # nodes.  Then the journal's ext4 on the top.
    key=$(printf '%064d' 0 | tr 0 7)
    for layer in $(echo "$AMP_STACK" | tr + ' '); do
        sectors=$(chroot $r blockdev --getsz $dev) || fail "blockdev --getsz $dev failed"
        case $layer in
            crypt) table="0 $sectors crypt aes-xts-plain64 $key 0 $dev 0" ;;
            lvm)   table="0 $sectors linear $dev 0" ;;
        esac
        chroot $r env DM_DISABLE_UDEV=1 dmsetup create --noudevsync amp-$layer --table "$table" ||
            fail "dmsetup create amp-$layer failed"
        dev=/dev/mapper/amp-$layer
    done
    chroot $r mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 $dev || fail "mkfs.ext4 $dev failed"
    echo "initramfs: the journal on $AMP_STACK: $dev"
fi
# By the root's own mount, so that the source reads as on a host ($dev).
chroot $r mount -t ext4 $dev /var/log/journal || fail "cannot mount the journal's disk ($dev)"
if [ -n "$AMP_ENABLE" ]; then
    chroot $r /usr/bin/systemctl enable --quiet $AMP_ENABLE || fail "systemctl enable $AMP_ENABLE failed"
fi
exec switch_root $r /usr/lib/systemd/systemd
EOF
chmod +x "$ird/init"
(cd "$ird" && find . | busybox cpio -o -H newc 2>/dev/null) >"$WORK/initramfs.cpio" ||
    die "cannot build the initramfs"

# The journal's disk: ext4 as mkfs makes it (the report's 1 GiB loop
# device), no lazy init to write in the background.
disk=$WORK/journal.img
truncate -s "${AMPTRACE_SDHOST_DISK_MB:-1024}M" "$disk"
if [[ -z $STACK ]]; then   # else the initramfs makes it on the top layer
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$disk" || die "mkfs.ext4 failed"
fi

if [[ -n $outdir ]]; then
    mkdir -p "$outdir"
    out=$(cd "$outdir" && pwd)
else
    out=$WORK/out
    mkdir -p "$out"
fi
rm -f -- "$out/rc" "$out/script.log"

# ------------------------------------------------------------------ boot ---
console=$WORK/console.log
say "booting $KPKG ($KVER) with Debian 13 ($tree) under qemu/$ACCEL, ${AMPTRACE_QEMU_SMP:-2} vCPUs, ${AMPTRACE_QEMU_MEM:-2048} MiB, timeout ${QEMU_TIMEOUT}s"
qemu_run "$console" -smp "${AMPTRACE_QEMU_SMP:-2}" -m "${AMPTRACE_QEMU_MEM:-2048}" \
    -kernel "$VMLINUZ" -initrd "$WORK/initramfs.cpio" \
    -append "console=ttyS0 rdinit=/init panic=-1 loglevel=4 mitigations=off systemd.unit=amp.target systemd.firstboot=off ${AMPTRACE_QEMU_APPEND-}" \
    -virtfs "local,path=$tree,mount_tag=amproot,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$REPO,mount_tag=amprepo,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$MODDIR,mount_tag=ampmods,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$out,mount_tag=ampout,security_model=none,multidevs=remap" \
    -drive "file=$disk,if=virtio,format=raw,cache=unsafe"

# ---------------------------------------------------------------- result ---
cp "$console" "$WORK/qemu.err" "$out"/
if [[ -z $outdir ]]; then
    logdir=${AMP_TEST_LOGS:-/tmp/amptrace-test-logs}/qemu-systemd-host
    rm -rf -- "$logdir"
    mkdir -p "$logdir"
    cp -r "$out"/. "$logdir"/
else
    logdir=$out
fi
if [[ -z ${AMPTRACE_QEMU_STREAM-} && ! -t 1 && -f $out/script.log ]]; then
    cat "$out/script.log"
fi
qemu_report
if [[ ! -f $out/rc ]]; then
    say "FAIL: the guest did not run the script to its end ($KVER, $ACCEL, ${QEMU_ELAPSED}s); logs in $logdir"
    tail -n 40 "$console" | tr -d '\r' >&2
    exit 1
fi
read -r src <"$out/rc"
say "guest $KVER ($ACCEL), ${QEMU_ELAPSED}s in qemu; script exit $src; logs in $logdir"
exit "$src"
