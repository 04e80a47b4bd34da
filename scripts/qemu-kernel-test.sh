#!/usr/bin/env bash
# Boot Debian 12's own kernel (6.1, from its linux-image package) under qemu
# and run the core tests there, with this machine's binaries.
#
#   scripts/qemu-kernel-test.sh [TEST...]      (root; default: the core tests)
#
# virtme-style: no disk image.  The guest boots the package's vmlinuz with a
# small busybox initramfs, mounts the host's root file system read-only over
# 9p under a tmpfs overlay (so ./amptrace, journald, rsyslogd, mkfs.*,
# python3 are the host's), loads the package's modules (loop, ext4, xfs,
# btrfs...) and runs tests/run.sh from the repo's path.  Loop devices,
# mounts and daemons all live and die inside the guest.
#
# Prints the guest's "N passed, N failed, N skipped" line last; exit 0 if
# no guest test failed, 1 if one did or no summary came back, 77 (skip) if
# there is no qemu or kernel package to be had.  Logs (console, one
# per guest test, `amptrace trace -v` load log) go to
# ${AMP_TEST_LOGS:-/tmp/amptrace-test-logs}/qemu-KVER/.
#
# Environment:
#   AMPTRACE_QEMU_ACCEL    auto (default): kvm where a KVM guest boots to a
#                          marker line in 20 s (qemu-lib.sh, qemu_pick_accel),
#                          else tcg | kvm | tcg: software emulation, 5-10x slower
#   AMPTRACE_QEMU_SILENT   stop a guest whose console is empty this many s
#                          after start (default 60 under KVM, 240 under TCG)
#   AMPTRACE_QEMU_TCG_THREAD  single (default) | multi: tcg's vCPU threads
#   AMPTRACE_QEMU_KPKG     kernel package (default: what Debian 12's
#                          linux-image-amd64 depends on, a 6.1 kernel)
#   AMPTRACE_QEMU_SUITE    another Debian release's kernel instead, e.g.
#                          trixie (Debian 13's 6.12)
#   AMPTRACE_QEMU_DEBS     .deb URLs to fetch for AMPTRACE_QEMU_KPKG instead
#                          of `apt-get download` (another distribution's
#                          kernel: image, modules, extra modules)
#   AMPTRACE_QEMU_CACHE    package cache (default /var/cache/amptrace-qemu)
#   AMPTRACE_QEMU_TIMEOUT  seconds for the whole guest run (default 600)
#   AMPTRACE_QEMU_MEM / AMPTRACE_QEMU_SMP   guest MiB (4096) / vCPUs (2)
#   AMPTRACE_QEMU_CMD      a shell command to run in the guest before the tests
#   AMP_T<N>_*             a test's own settings, passed on to the guest
#   AMPTRACE_QEMU_APPEND   more kernel arguments, e.g. to see a hang:
#                          "loglevel=7 softlockup_all_cpu_backtrace=1"
#   AMPTRACE, SYNTH_WRITER  passed on to the guest's tests (tests/lib.sh);
#                          must be on /, but not under /tmp or /run
#                          (the checkout itself may be under /tmp, not /run)
#
# The same file is the guest's PID 1 (`--guest`, run by the initramfs).
set -euo pipefail

CORE_TESTS=(t10_bad_input t20_synth_pages t30_journald t31_senders t40_rsyslog t50_own_output
            t60_map_full t35_fs_overhead t36_jbd2_cases t42_stacked_storage)
# An arm64 guest's tree (AMPTRACE_QEMU_ARCH=arm64): what its tests run, and
# amptrace's own libraries.
ARM64_PKGS=bpftool,xz-utils,rsyslog,python3,e2fsprogs,xfsprogs,btrfs-progs,util-linux,bsdutils,procps,kmod,iproute2,busybox-static,fdisk,libcap2-bin,sqlite3,libbpf1,libjson-c5,libmount1,zlib1g,dmsetup,mdadm,cryptsetup-bin,strace
# (libmicrohttpd12: named libmicrohttpd12t64 since Debian 13.)
# Modules the initramfs needs to reach the root (all =m in Debian's config),
# and those the tests need once there.
ROOT_MODS=(virtio_pci 9pnet_virtio 9p overlay)
TEST_MODS=(virtio_blk loop crc32c_intel crc32c_generic ext4 xfs btrfs dm_mod dm_crypt dm_flakey xts md_mod raid1
           nvme sdhci_pci mmc_block)

say() { echo "qemu-kernel-test: $*" >&2; }
skip() { say "SKIP: $*"; exit 77; }
die() { say "error: $*"; exit 1; }

# ============================================================== guest side ===

# Why the BPF object did not load: the failing program's poisoned CO-RE
# relocations (libbpf's log) and the verifier's last words.
load_failure() {
    local log=$1 prog insn relo
    prog=$(sed -n "s/^libbpf: prog '\([^']*\)': failed to load.*/\1/p" "$log" | head -n 1)
    insn=$(sed -n 's/^\([0-9][0-9]*\): <invalid CO-RE relocation>.*/\1/p' "$log" | head -n 1)
    if [[ -n $prog && -n $insn ]]; then
        # libbpf poisons every unresolved relocation; the verifier names the
        # one that is reachable.
        relo=$(sed -n "s/^libbpf: prog '$prog': relo #\([0-9]*\): substituting insn #$insn .*/\1/p" "$log" | head -n 1)
        echo "guest: program $prog does not load: insn $insn, CO-RE relocation #$relo unresolved:"
        grep -E "prog '$prog': relo #$relo: " "$log" | sed 's/^/    /'
    fi
    grep -E "^[0-9]+: <invalid|^amptrace:|failed to (load|find|attach)|BTF.*not found" "$log" | sed 's/^/    /'
}

# PID 1 on the overlay root.  Never returns: powers the VM off.
guest_main() {
    set +e   # a failed step is reported; PID 1 must reach the power-off
    # shellcheck disable=SC1091
    . /run/amp.env
    export PATH=$AMP_PATH HOME=/root LANG=C.UTF-8 TERM=dumb AMP_IN_QEMU=1
    # Emulated, loading and attaching the programs once took more than the
    # tests' 30 s (t35, btrfs/journald, 5.15 under TCG): wait longer there.
    [[ ${AMP_ACCEL-} != tcg ]] || export AMP_TRACER_WAIT=180
    local -a tests
    read -r -a tests <<<"$AMP_TESTS"
    # python3 as the host resolves it, without a shim (pyenv's cost seconds
    # a call here).
    if [[ -n $AMP_PYTHON ]]; then
        mkdir -p /run/amp-bin && ln -sf "$AMP_PYTHON" /run/amp-bin/python3
        PATH=/run/amp-bin:$PATH
    fi
    [[ -n $AMP_AMPTRACE ]] && export AMPTRACE=$AMP_AMPTRACE
    [[ -n $AMP_SYNTH ]] && export SYNTH_WRITER=$AMP_SYNTH
    local out=/run/amp-out rc=0 t0=$SECONDS
    exec </dev/null >/dev/console 2>&1

    mount -t devpts -o mode=0620,ptmxmode=0666 devpts /dev/pts 2>/dev/null || { mkdir -p /dev/pts; mount -t devpts devpts /dev/pts; }
    mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 shm /dev/shm
    mount -t cgroup2 cgroup2 /sys/fs/cgroup
    mount -t tracefs tracefs /sys/kernel/tracing
    mount -t debugfs debugfs /sys/kernel/debug
    mount -t bpf bpf /sys/fs/bpf
    mkdir -p "$out" && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 ampout "$out"
    # The package's modules, where modprobe (busybox: the host has no kmod)
    # and the kernel's request_module look for them.
    mkdir -p "/lib/modules/$AMP_KVER"
    mount --bind "$AMP_MODDIR" "/lib/modules/$AMP_KVER"
    ln -sf /bin/busybox /sbin/modprobe
    echo /sbin/modprobe >/proc/sys/kernel/modprobe
    local m
    for m in "${TEST_MODS[@]}"; do
        modprobe "$m" || echo "guest: modprobe $m failed"
    done
    # A checkout under /tmp (CI clones there) must stay visible once the
    # scratch disk is mounted over /tmp: keep it aside, move it back after.
    local repo_kept=''
    case $AMP_REPO in
        /tmp/*) repo_kept=/run/amp-repo   # --rbind: an arm64 guest's build binds too
                mkdir -p "$repo_kept" && mount --rbind "$AMP_REPO" "$repo_kept" ;;
    esac
    # /tmp (loop images) on ext4 on a virtio disk, as on a host: loop on
    # tmpfs behaves differently (no WRITE_ZEROES, no O_DIRECT).
    if mkfs.ext4 -q -F -L amp-scratch -N 65536 -J size=64 -E lazy_itable_init=0,lazy_journal_init=0 /dev/vda &&
       mount /dev/vda /tmp; then
        chmod 1777 /tmp
    else
        echo "guest: no scratch disk; /tmp stays tmpfs"
        mount -t tmpfs -o mode=1777 tmp /tmp
    fi
    if [[ -n $repo_kept ]]; then
        mkdir -p "$AMP_REPO" && mount --move "$repo_kept" "$AMP_REPO" ||
            echo "guest: cannot put $AMP_REPO back over the scratch /tmp"
    fi
    hostname amptrace-qemu
    ip link set lo up 2>/dev/null || true
    echo "guest: kernel $(uname -r), $(nproc) cpus, $(($(sed -n 's/MemTotal: *\([0-9]*\).*/\1/p' /proc/meminfo) / 1024)) MiB," \
         "BTF $(stat -c %s /sys/kernel/btf/vmlinux 2>/dev/null || echo none) bytes, modules: $(cut -d' ' -f1 /proc/modules | sort | tr '\n' ' ')"

    # Does the CO-RE object load here at all?  libbpf's and the verifier's
    # log, for the report.
    cd "$AMP_REPO"
    timeout 120 "${AMPTRACE:-./amptrace}" trace -v -q -d 1 >"$out/amptrace-v.log" 2>&1 || rc=$?
    echo "guest: amptrace trace -v -d 1: exit $rc ($(grep -c . "$out/amptrace-v.log") log lines)"
    ((rc == 0)) || load_failure "$out/amptrace-v.log"
    echo "guest: set up in $((SECONDS - t0)) s; running: ${tests[*]}"

    # What is running, every 15 s: the host shows it if the guest hangs.
    (while sleep 15; do
        { date; ps -eo pid,ppid,stat,etime,wchan:24,args; } >"$out/ps.tmp" 2>&1 && mv "$out/ps.tmp" "$out/ps.txt"
    done) &
    if [[ -n $AMP_CMD ]]; then
        echo "guest: running AMPTRACE_QEMU_CMD: $AMP_CMD"
        bash -c "$AMP_CMD" 2>&1 | tee "$out/cmd.out"
        echo "guest: AMPTRACE_QEMU_CMD exit ${PIPESTATUS[0]}"
    fi
    rc=0
    AMP_TEST_LOGS=$out/logs tests/run.sh "${tests[@]}" | tee "$out/run.out" || rc=$?
    echo "AMPTRACE-QEMU-DONE rc=$rc after $((SECONDS - t0)) s"
    sync
    umount "$out" 2>/dev/null || true
    echo o >/proc/sysrq-trigger
    sleep 10
    exit "$rc"   # PID 1 exiting panics; panic=-1 + -no-reboot ends qemu
}

if [[ ${1-} == --guest ]]; then
    guest_main
fi

# =============================================================== host side ===

((EUID == 0)) || skip "must run as root (apt-get download into the cache, KVM)"
REPO=$(cd "$(dirname "$0")/.." && pwd)
case $REPO in /run/*) die "the checkout must not be under /run (the guest gets a fresh one)" ;; esac
LOGROOT=${AMP_TEST_LOGS:-/tmp/amptrace-test-logs}
TESTS=("$@")
((${#TESTS[@]})) || TESTS=("${CORE_TESTS[@]}")

# ------------------------------------------------------------ what we need ---
# shellcheck source=scripts/qemu-lib.sh
. "$REPO/scripts/qemu-lib.sh"
if [[ $QEMU_ARCH == arm64 ]]; then
    # An arm64 guest (issue 38): its own userspace, a Debian tree made once
    # and cached (debootstrap --arch=arm64: scripts/debian-rootfs.sh), as /;
    # the checkout over 9p with the arm64 build (make ARCH=arm64) at its
    # usual paths (build/, ./amptrace).
    httpd=libmicrohttpd12
    [[ ${AMPTRACE_QEMU_SUITE:-bookworm} == bookworm ]] || httpd=libmicrohttpd12t64
    ROOTFS=$(AMPTRACE_ROOTFS_ARCH=arm64 "$REPO/scripts/debian-rootfs.sh" \
                 "${AMPTRACE_QEMU_SUITE:-bookworm}" "$ARM64_PKGS,$httpd") || {
        rc=$?
        ((rc == 77)) && skip "no arm64 Debian tree to be had"
        die "cannot make the arm64 Debian tree"
    }
    export QEMU_BUSYBOX=$ROOTFS/bin/busybox
fi
qemu_need
for i in "${!TESTS[@]}"; do   # run.sh takes file names: t10 -> t10_bad_input.sh
    t=${TESTS[i]##*/}; t=${t%.sh}
    m=("$REPO/tests/$t".sh)
    if [[ ! -f ${m[0]} ]]; then
        # t30 -> t30_journald.sh; its variants (t30_journald_257.sh) do not
        # count.  C order puts a test before its variants.
        m=()
        while IFS= read -r f; do
            ((${#m[@]})) && [[ $f == "${m[-1]%.sh}"_* ]] || m+=("$f")
        done < <(compgen -G "$REPO/tests/${t}_*.sh" | LC_ALL=C sort)
        ((${#m[@]})) || m=("$REPO/tests/$t.sh")
    fi
    if ((${#m[@]} != 1)) || [[ ! -f ${m[0]} ]]; then
        die "no single test tests/$t.sh or tests/${t}_*.sh"
    fi
    TESTS[i]=${m[0]##*/}
done
if [[ $QEMU_ARCH == arm64 ]]; then
    [[ -x $REPO/build-arm64/amptrace && -x $REPO/build-arm64/tests/synth_writer ]] ||
        make -s -C "$REPO" ARCH=arm64 all >&2 || die "make ARCH=arm64 failed (scripts/deps.sh --cross arm64)"
else
    [[ -x $REPO/amptrace && -x $REPO/build/tests/synth_writer ]] ||
        make -s -C "$REPO" all >&2 || die "make failed"
fi

# --------------------------------------------------------- kernel package ---
rc=0
qemu_kernel "${AMPTRACE_QEMU_SUITE-}" || rc=$?   # "": the default (Debian 12) kernel
((rc == 0)) || { ((rc == 77)) && skip "no kernel package to be had"; die "no kernel"; }
# The guest reads $MODDIR through the read-only 9p root: it must be on /'s
# file system tree, not under a path the guest mounts over.
case $MODDIR in /tmp/*|/run/*|/dev/*|/proc/*|/sys/*) die "AMPTRACE_QEMU_CACHE must not be under /tmp, /run, /dev, /proc or /sys" ;; esac

# ------------------------------------------------------------- initramfs ---
qemu_workdir
ird=$WORK/initramfs
mkdir -p "$ird"/{lower,upper}
initramfs_modules "$ird" "${ROOT_MODS[@]}"
ROOT_MODS=("${QEMU_MODS[@]}")

guest_moddir=$MODDIR guest_path=$PATH guest_python=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)
if [[ $QEMU_ARCH == arm64 ]]; then
    # Its own tree's programs; the kernel's modules over 9p.
    guest_moddir=/run/amp-mods guest_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    guest_python=''
fi
{
    printf 'AMP_REPO=%q\nAMP_KVER=%q\nAMP_MODDIR=%q\nAMP_PATH=%q\n' "$REPO" "$KVER" "$guest_moddir" "$guest_path"
    printf 'AMP_AMPTRACE=%q\nAMP_SYNTH=%q\n' "${AMPTRACE-}" "${SYNTH_WRITER-}"
    printf 'AMP_CMD=%q\nAMP_ACCEL=%q\nAMP_ARCH=%q\n' "${AMPTRACE_QEMU_CMD-}" "$ACCEL" "$QEMU_ARCH"
    printf 'AMP_PYTHON=%q\n' "$guest_python"
    # A test's own settings (AMP_T42_CASES...), as on the host.
    for v in $(compgen -v | grep -E '^AMP_T[0-9]+_' || true); do printf 'export %s=%q\n' "$v" "${!v}"; done
    printf 'AMP_TESTS="%s"\n' "${TESTS[*]}"   # names: no spaces, no quotes
    printf 'ROOT_MODS="%s"\n' "${ROOT_MODS[*]}"
} >"$ird/amp.env"

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
fail() { echo "initramfs: $*"; echo "AMPTRACE-QEMU-DONE rc=99"; echo o >/proc/sysrq-trigger; sleep 10; exit 1; }
for m in $ROOT_MODS; do modprobe "$m" || fail "modprobe $m failed"; done
# The host's / read-only, a tmpfs on top of it for whatever the tests write.
mount -t 9p -o ro,trans=virtio,version=9p2000.L,cache=loose,msize=262144 hostroot /lower ||
    fail "cannot mount the host root (9p)"
mount -t tmpfs -o mode=0755 upper /upper && mkdir /upper/u /upper/w
mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w rootfs /newroot ||
    fail "cannot mount the overlay root"
# A fresh /run (/tmp comes later, on a disk): none of the host's sockets, locks or files.
mount -t tmpfs -o mode=0755,size=512m run /newroot/run
cp /amp.env /newroot/run/amp.env
if [ "$AMP_ARCH" = arm64 ]; then
    # / is the arm64 tree: the checkout (writable as the host's is, on the
    # overlay's tmpfs), its arm64 build where the tests look, the modules.
    mkdir -p /repo /upper/r /upper/rw /newroot$AMP_REPO /newroot/run/amp-mods
    mount -t 9p -o ro,trans=virtio,version=9p2000.L,cache=loose,msize=262144 amprepo /repo &&
    mount -t overlay -o lowerdir=/repo,upperdir=/upper/r,workdir=/upper/rw repo /newroot$AMP_REPO ||
        fail "cannot mount the checkout"
    mkdir -p /newroot$AMP_REPO/build && touch /newroot$AMP_REPO/amptrace
    mount --bind /newroot$AMP_REPO/build-arm64 /newroot$AMP_REPO/build &&
    mount --bind /newroot$AMP_REPO/build-arm64/amptrace /newroot$AMP_REPO/amptrace ||
        fail "no arm64 build in the checkout"
    mount -t 9p -o ro,trans=virtio,version=9p2000.L,cache=loose,msize=262144 ampmods /newroot/run/amp-mods ||
        fail "cannot mount the modules"
fi
for d in dev proc sys; do mount --move /$d /newroot/$d; done
exec switch_root /newroot /bin/bash "$AMP_REPO/scripts/qemu-kernel-test.sh" --guest
EOF
chmod +x "$ird/init"
(cd "$ird" && find . | busybox cpio -o -H newc 2>/dev/null) >"$WORK/initramfs.cpio" ||
    die "cannot build the initramfs"

# ------------------------------------------------------------------- boot ---
out=$WORK/out
mkdir -p "$out"
console=$WORK/console.log
truncate -s 16G "$WORK/scratch.img"   # sparse; the guest's /tmp
# Two more disks as real hosts name theirs, for t42's partitions on them:
# an NVMe namespace (nvme0n1p1) and an SD card (mmcblk0p1, a Raspberry
# Pi's).  Each starts with a marker: t42 touches a disk only if it is
# there (never a real host's).
for d in nvme sd; do
    truncate -s 1G "$WORK/$d.img"
    printf 'AMPTRACE-TEST-DISK' | dd of="$WORK/$d.img" conv=notrunc status=none
done
root=/ arch_shares=()
if [[ $QEMU_ARCH == arm64 ]]; then
    root=$ROOTFS
    arch_shares=(-virtfs "local,path=$REPO,mount_tag=amprepo,security_model=none,readonly=on,multidevs=remap"
                 -virtfs "local,path=$MODDIR,mount_tag=ampmods,security_model=none,readonly=on,multidevs=remap")
fi
say "booting $KPKG ($KVER) under qemu/$ACCEL, ${AMPTRACE_QEMU_SMP:-2} vCPUs, ${AMPTRACE_QEMU_MEM:-4096} MiB, timeout ${QEMU_TIMEOUT}s; tests: ${TESTS[*]}"
qemu_run "$console" -smp "${AMPTRACE_QEMU_SMP:-2}" -m "${AMPTRACE_QEMU_MEM:-4096}" \
    -kernel "$VMLINUZ" -initrd "$WORK/initramfs.cpio" \
    -append "console=$QEMU_CONSOLE rdinit=/init panic=-1 loglevel=4 mitigations=off ${AMPTRACE_QEMU_APPEND-}" \
    -virtfs "local,path=$root,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
    "${arch_shares[@]}" \
    -virtfs "local,path=$out,mount_tag=ampout,security_model=none,multidevs=remap" \
    -drive "file=$WORK/scratch.img,if=virtio,format=raw,cache=unsafe,discard=unmap" \
    -drive "file=$WORK/nvme.img,if=none,id=ampnvme,format=raw,cache=unsafe" \
    -device nvme,serial=ampnvme,drive=ampnvme \
    -drive "file=$WORK/sd.img,if=none,id=ampsd,format=raw,cache=unsafe" \
    -device sdhci-pci -device sd-card,drive=ampsd
elapsed=$QEMU_ELAPSED

# ---------------------------------------------------------------- result ---
logdir=$LOGROOT/qemu-$KVER
rm -rf -- "$logdir"
mkdir -p "$logdir"
cp -r "$out"/. "$logdir"/ 2>/dev/null || true
cp "$console" "$WORK/qemu.err" "$logdir"/

if [[ -z ${AMPTRACE_QEMU_STREAM-} && ! -t 1 ]]; then
    # Not streamed: show the console now, less the kernel's boot chatter.
    grep -vE '^\[ *[0-9]+\.[0-9]+\] ' "$console" | tr -d '\r' || true
fi
qemu_report

summary=$(tr -d '\r' <"$console" | grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' | tail -n 1 || true)
say "guest $KVER ($ACCEL), ${elapsed}s in qemu; logs in $logdir"
if [[ -z $summary ]]; then
    say "FAIL: no test summary from the guest"
    tail -n 30 "$console" | tr -d '\r' >&2
    [[ -f $out/ps.txt ]] && { say "guest processes, last snapshot:"; cat "$out/ps.txt" >&2; }
    exit 1
fi
echo "$summary"
read -r npass _ nfail _ <<<"${summary//,/}"
((nfail == 0)) || exit 1
((npass > 0)) || skip "every guest test skipped"
exit 0
