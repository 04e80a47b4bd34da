# shellcheck shell=bash disable=SC2034  # QEMU_*, KVER...: results for the callers
# scripts/qemu-lib.sh - the host side shared by the qemu scripts
# (qemu-kernel-test.sh: the core tests on another kernel; qemu-systemd-host.sh:
# a Debian 13 guest with systemd as PID 1).  Source it; the caller defines
# say, skip (exit 77) and die.
#
#   qemu_need               qemu, a static busybox, setpriv; ACCEL_ARGS,
#                           QEMU_MACHINE, QEMU_CONSOLE
#   qemu_pick_accel         kvm or tcg for this run (ACCEL_VERDICT, ACCEL_WHY):
#                           KVM only if a KVM guest boots to a marker line
#   qemu_kernel [SUITE]     a Debian kernel package, fetched once into the
#                           cache: KPKG KDIR KVER MODDIR VMLINUZ
#   qemu_workdir            WORK, a fresh temp dir (and traps that remove it
#                           and stop qemu on any exit)
#   initramfs_modules DIR MOD...  copies MODs (and what they depend on) into
#                           an initramfs tree; QEMU_MODS: those to modprobe
#   qemu_run CONSOLE ARG... boots qemu (dies with this script), waits at
#                           most QEMU_TIMEOUT s: QEMU_RC, QEMU_TIMED_OUT,
#                           QEMU_ELAPSED, QEMU_SILENT;  qemu_report: how it ended
#
# Environment (as documented in the scripts): AMPTRACE_QEMU_ACCEL,
# AMPTRACE_QEMU_TCG_THREAD, AMPTRACE_QEMU_CACHE, AMPTRACE_QEMU_SILENT,
# AMPTRACE_QEMU_KVM_PROBE_TIMEOUT, AMPTRACE_QEMU_ACCEL_CACHE,
# AMPTRACE_QEMU_ACCEL_WHY (the reason for an AMPTRACE_QEMU_ACCEL a probe chose), AMPTRACE_QEMU_KPKG,
# AMPTRACE_QEMU_DEBS, AMPTRACE_QEMU_STREAM, AMPTRACE_DEBIAN_MIRROR.

QEMU_CACHE=${AMPTRACE_QEMU_CACHE:-/var/cache/amptrace-qemu}
# The guest's architecture, as Debian names it: amd64, or arm64
# (qemu-system-aarch64; scripts/qemu-arm64-test.sh, scripts/kernel-btf.sh).
QEMU_ARCH=${AMPTRACE_QEMU_ARCH:-amd64}
QEMU_TIMEOUT=${AMPTRACE_QEMU_TIMEOUT:-600}
WORK='' QEMU_PID='' TAIL_PID=''

# ------------------------------------------------------------ what we need ---
qemu_need() {
    if [[ $QEMU_ARCH == arm64 ]]; then
        QEMU=$(command -v qemu-system-aarch64) ||
            skip "qemu-system-aarch64 not installed (apt-get install qemu-system-arm)"
        QEMU_MACHINE=virt QEMU_CONSOLE=ttyAMA0
    else
        QEMU=$(command -v qemu-system-x86_64) ||
            skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
        QEMU_MACHINE=q35 QEMU_CONSOLE=ttyS0
    fi
    # The initramfs's busybox: the guest's architecture's (QEMU_BUSYBOX: an
    # arm64 tree's own).
    BUSYBOX=${QEMU_BUSYBOX:-/bin/busybox}
    if [[ ! -x $BUSYBOX ]] || ldd "$BUSYBOX" >/dev/null 2>&1; then
        skip "no static $BUSYBOX for the initramfs (apt-get install busybox-static)"
    fi
    command -v setpriv >/dev/null || skip "setpriv (util-linux) missing"
    if [[ $QEMU_ARCH == arm64 ]]; then
        # Another architecture: emulated, whatever KVM this host has.  Its
        # vCPUs each on a host thread (the single-thread setting is for an
        # x86 guest's jump-label patching, see below).
        ACCEL=tcg ACCEL_WHY="an arm64 guest on $(uname -m): emulated"
        say "accelerator: tcg ($ACCEL_WHY)"
        # shellcheck disable=SC2054  # the comma is qemu's option syntax
        ACCEL_ARGS=(-accel "tcg,thread=${AMPTRACE_QEMU_TCG_THREAD:-multi}" -cpu max)
        return 0
    fi
    qemu_pick_accel
    ACCEL=$ACCEL_VERDICT
    say "accelerator: $ACCEL ($ACCEL_WHY)"
    case $ACCEL in
        kvm)
            local kvmdev=${AMPTRACE_QEMU_KVM_DEV:-/dev/kvm}
            [[ -c $kvmdev ]] ||
                skip "$kvmdev not available (no hardware virtualisation here); AMPTRACE_QEMU_ACCEL=tcg runs the guest under emulation, 5-10x slower"
            [[ -r $kvmdev && -w $kvmdev ]] || skip "$kvmdev not readable and writable"
            ACCEL_ARGS=(-accel kvm -cpu host) ;;
        tcg)
            # One host thread for all vCPUs.  With thread=multi (qemu 7.2) a
            # guest hung now and then right after amptrace attached: both
            # vCPUs looping on the int3 of a finished jump-label patch in
            # syscall_trace_enter (their translated code never saw the patch
            # end), seen with AMPTRACE_QEMU_APPEND="loglevel=7
            # softlockup_all_cpu_backtrace=1".  Slower, but it finishes.
            # shellcheck disable=SC2054  # the comma is qemu's option syntax
            ACCEL_ARGS=(-accel "tcg,thread=${AMPTRACE_QEMU_TCG_THREAD:-single}" -cpu max) ;;
        *) die "AMPTRACE_QEMU_ACCEL must be kvm or tcg, not '$ACCEL'" ;;
    esac
}

# ------------------------------------------------------ which accelerator ---
# KVM only where a guest really runs under it.  /dev/kvm may open and still
# fail in two ways: qemu aborts at once (a nested guest: "failed to set MSR
# 0x10a"), or the VM starts and then never gets going (seen here: a 6.1
# guest printed nothing in 540 s at 100 % system CPU, where TCG boots the
# same kernel to its init in 6 s).  So the probe boots the tests' own
# kernel with a one-line initramfs and waits for that line on the console.
QEMU_PROBE_MARK=AMPTRACE-ACCEL-PROBE-OK

# qemu_kvm_boots VMLINUZ: true if VMLINUZ boots to the probe's marker under
# KVM within AMPTRACE_QEMU_KVM_PROBE_TIMEOUT s (20; TCG needs 6 here).
# QEMU_PROBE_WHY says what happened, in a few words.
qemu_kvm_boots() {
    local vmlinuz=$1 limit=${AMPTRACE_QEMU_KVM_PROBE_TIMEOUT:-20}
    local kvmdev=${AMPTRACE_QEMU_KVM_DEV:-/dev/kvm} qemu dir pid t0 rc=1
    QEMU_PROBE_WHY=''
    qemu=$(command -v qemu-system-x86_64) || { QEMU_PROBE_WHY="no qemu-system-x86_64"; return 1; }
    [[ -c $kvmdev ]] || { QEMU_PROBE_WHY="no $kvmdev"; return 1; }
    [[ -r $kvmdev && -w $kvmdev ]] || { QEMU_PROBE_WHY="$kvmdev not readable and writable"; return 1; }
    [[ -f $vmlinuz ]] || { QEMU_PROBE_WHY="no kernel to boot ($vmlinuz)"; return 1; }
    [[ -x /bin/busybox ]] || { QEMU_PROBE_WHY="no /bin/busybox for the probe's initramfs"; return 1; }
    dir=$(mktemp -d "${TMPDIR:-/tmp}/amptrace-kvm-probe.XXXXXX")
    mkdir -p "$dir/ird/bin" "$dir/ird/proc"
    cp /bin/busybox "$dir/ird/bin/busybox"
    printf '#!/bin/busybox sh\necho %s\n/bin/busybox mount -t proc proc /proc\n/bin/busybox echo o >/proc/sysrq-trigger\n/bin/busybox sleep 10\n' \
        "$QEMU_PROBE_MARK" >"$dir/ird/init"
    chmod +x "$dir/ird/init"
    (cd "$dir/ird" && find . | /bin/busybox cpio -o -H newc 2>/dev/null) >"$dir/initramfs.cpio"
    : >"$dir/console"
    t0=$SECONDS
    setpriv --pdeathsig KILL -- "$qemu" -nodefaults -no-user-config -machine q35 -accel kvm -cpu host \
        -m 256 -display none -monitor none -serial "file:$dir/console" -no-reboot \
        -kernel "$vmlinuz" -initrd "$dir/initramfs.cpio" \
        -append "console=ttyS0 rdinit=/init panic=-1 loglevel=1 mitigations=off" \
        </dev/null >"$dir/qemu.err" 2>&1 &
    pid=$!
    while :; do
        if grep -q "$QEMU_PROBE_MARK" "$dir/console" 2>/dev/null; then
            QEMU_PROBE_WHY="a KVM guest booted to its init in $((SECONDS - t0)) s"
            rc=0
            break
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            QEMU_PROBE_WHY="qemu/kvm ended before its guest printed: $(grep -m 1 . "$dir/qemu.err" 2>/dev/null || echo 'no message')"
            break
        fi
        if ((SECONDS - t0 >= limit)); then
            QEMU_PROBE_WHY="$kvmdev opens, but a KVM guest printed nothing in ${limit} s"
            break
        fi
        sleep 0.2
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rm -rf -- "$dir"
    return "$rc"
}

# qemu_pick_accel: ACCEL_VERDICT (kvm or tcg) and ACCEL_WHY for this run.
# AMPTRACE_QEMU_ACCEL=kvm or tcg decides; unset or auto, the probe does,
# once a run: its verdict is kept in AMPTRACE_QEMU_ACCEL_CACHE (a file,
# set by tests/run.sh and .ci/run) for every later guest of the run.
qemu_pick_accel() {
    local cache=${AMPTRACE_QEMU_ACCEL_CACHE-} rc=0
    case ${AMPTRACE_QEMU_ACCEL:-auto} in
        kvm|tcg) ACCEL_VERDICT=$AMPTRACE_QEMU_ACCEL
                 ACCEL_WHY=${AMPTRACE_QEMU_ACCEL_WHY:-AMPTRACE_QEMU_ACCEL=$AMPTRACE_QEMU_ACCEL}
                 return 0 ;;
        auto) ;;
        *) die "AMPTRACE_QEMU_ACCEL must be kvm, tcg or auto, not '$AMPTRACE_QEMU_ACCEL'" ;;
    esac
    if [[ -n $cache && -s $cache ]] && IFS=$'\t' read -r ACCEL_VERDICT ACCEL_WHY <"$cache" &&
       [[ $ACCEL_VERDICT == kvm || $ACCEL_VERDICT == tcg ]]; then
        ACCEL_WHY="$ACCEL_WHY (probed earlier in this run)"
        return 0
    fi
    if [[ -z ${VMLINUZ-} ]]; then
        # The probe boots the core tests' kernel (Debian 12's), fetched into
        # the cache as those tests would.
        qemu_kernel "" >/dev/null 2>&1 || rc=$?
    fi
    if ((rc == 0)) && qemu_kvm_boots "$VMLINUZ"; then
        ACCEL_VERDICT=kvm
    else
        ACCEL_VERDICT=tcg
        ((rc == 0)) || QEMU_PROBE_WHY="no kernel to probe KVM with"
    fi
    ACCEL_WHY=$QEMU_PROBE_WHY
    [[ -z $cache ]] || printf '%s\t%s\n' "$ACCEL_VERDICT" "$ACCEL_WHY" >"$cache"
    return 0
}

# --------------------------------------------------------- kernel package ---
# Debian's release number of a suite: its kernel packages are named
# linux-image-6.12.N+deb13-amd64 since Debian 13.
_deb_release() {
    case $1 in bookworm) echo 12 ;; trixie) echo 13 ;; forky) echo 14 ;; *) return 1 ;; esac
}

# The cache entries one kernel series may have, as a glob: older versions
# of KPKG's series are removed once a newer one is cached.
_kernel_series_glob() {
    case $1 in
        linux-image-*+deb[0-9]*-*) echo "${1%%[0-9]*}*+${1#*+}" ;;   # linux-image-*+deb13-amd64
        *) echo "${1%%.0-*}.0-*-${1##*-}" ;;                         # linux-image-6.1.0-*-amd64
    esac
}

# Newest cached kernel matching a glob.
_newest_cached() {
    local d
    for d in "$QEMU_CACHE"/$1/.ok; do [[ -e $d ]] && dirname "$d"; done | sort -V | tail -n 1
}

# apt-get/apt-cache options for another suite's package lists, kept in DIR
# (nothing of the host's apt state is read or changed).
_suite_apt_opts() {   # SUITE DIR
    local suite=$1 dir=$2 mirror=${AMPTRACE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
    local keyring=${QEMU_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
    mkdir -p "$dir"/{lists/partial,cache/archives/partial,parts}
    echo "deb [signed-by=$keyring] $mirror $suite main" >"$dir/sources.list"
    : >"$dir/status"
    SUITE_APT=(-o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=$dir/parts"
               -o "Dir::Etc::Preferences=$dir/none" -o "Dir::Etc::PreferencesParts=$dir/parts"
               -o "Dir::State::Lists=$dir/lists" -o "Dir::State::Status=$dir/status"
               -o "Dir::Cache=$dir/cache" -o APT::Sandbox::User=root -o Acquire::Languages=none
               -o APT::Default-Release= -o "APT::Architecture=$QEMU_ARCH"
               -o "APT::Architectures::=$QEMU_ARCH")
}

# The package linux-image-ARCH depends on, in SUITE's lists ('': the host's).
_resolve_kpkg() {   # SUITE
    local p
    if [[ -n $1 ]]; then
        apt-cache "${SUITE_APT[@]}" depends "linux-image-$QEMU_ARCH" 2>/dev/null |
            awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}'
        return 0
    fi
    # Debian 12's default kernel; else the newest 6.1 flavour amd64 package.
    p=$(apt-cache depends linux-image-amd64 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-6\.1\./ {print $2; exit}')
    [[ -n $p ]] || p=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' 2>/dev/null |
                       awk '{print $1}' | sort -V | tail -n 1)
    echo "$p"
}

# modules.dep of an unpacked kernel: kmod's depmod where there is one (its
# .bin indexes are what a guest's own modprobe reads), else busybox's (the
# text file busybox's modprobe reads in the initramfs is all the same).
_depmod() {   # ROOT KVER
    if command -v depmod >/dev/null; then
        depmod -b "$1" "$2"
    else
        busybox depmod -b "$1" "$2"
    fi
}

# qemu_kernel [SUITE]: the kernel of Debian SUITE (default: the host's
# Debian 12, a 6.1, or AMPTRACE_QEMU_KPKG / AMPTRACE_QEMU_DEBS), unpacked
# with its modules under $QEMU_CACHE/KPKG.  Another suite's lists are
# fetched (into a temp dir) only when none of its kernels is cached; to
# take a newer one, remove the cached one.  Sets KPKG KDIR KVER MODDIR
# VMLINUZ.  Returns 77 where no kernel can be had (the caller may try
# another), 1 on other failures.
qemu_kernel() {
    local lockfd rc=0
    mkdir -p "$QEMU_CACHE"
    exec {lockfd}>"$QEMU_CACHE/.lock"
    flock -w 900 "$lockfd" || { say "another run holds $QEMU_CACHE/.lock"; exec {lockfd}>&-; return 1; }
    _qemu_kernel "$@" || rc=$?
    exec {lockfd}>&-
    return "$rc"
}

_qemu_kernel() {
    local suite=${1-} glob kdir aptdir='' kpkg=${AMPTRACE_QEMU_KPKG-} deb d
    local -a debs=()
    # Another architecture's packages are not in the host's lists.
    [[ -n $suite || $QEMU_ARCH == amd64 ]] || suite=bookworm
    if [[ $suite == bookworm ]]; then
        glob="linux-image-6.1.0-*-$QEMU_ARCH"   # Debian 12 names no +deb12
        kpkg=''
    elif [[ -n $suite ]]; then
        glob="linux-image-*+deb$(_deb_release "$suite")-$QEMU_ARCH" ||
            { say "no Debian release number known for suite $suite"; return 1; }
        kpkg=''   # AMPTRACE_QEMU_KPKG names the default (Debian 12) kernel
    else
        glob='linux-image-6.1.0-*-amd64'
        [[ -z ${AMPTRACE_QEMU_DEBS-} ]] || read -r -a debs <<<"$AMPTRACE_QEMU_DEBS"
    fi

    if [[ -z $kpkg && -n $suite ]]; then
        kdir=$(_newest_cached "$glob")
        if [[ -n $kdir ]]; then
            kpkg=${kdir##*/}
        else
            aptdir=$(mktemp -d "$QEMU_CACHE/apt-$suite.XXXXXX")
            _suite_apt_opts "$suite" "$aptdir"
            say "fetching $suite's package lists"
            if apt-get "${SUITE_APT[@]}" update >"$aptdir/update.log" 2>&1; then
                kpkg=$(_resolve_kpkg "$suite")
            else
                tail -n 3 "$aptdir/update.log" >&2
            fi
            [[ -n $kpkg ]] || { rm -rf -- "$aptdir"; say "no $suite kernel to be had (linux-image-$QEMU_ARCH)"; return 77; }
        fi
    elif [[ -z $kpkg ]]; then
        kpkg=$(_resolve_kpkg '')
        if [[ -z $kpkg && -z $(_newest_cached "$glob") ]]; then
            say "no 6.1 kernel in the apt lists; apt-get update"
            apt-get update -qq >/dev/null 2>&1 || true
            kpkg=$(_resolve_kpkg '')
        fi
        if [[ -z $kpkg ]]; then
            kdir=$(_newest_cached "$glob")
            [[ -n $kdir ]] || { say "no Debian 12 6.1 kernel package found (apt-cache search linux-image-6.1)"; return 77; }
            kpkg=${kdir##*/}
            say "apt knows no 6.1 kernel; using cached $kpkg"
        fi
    fi
    KPKG=$kpkg
    KDIR=$QEMU_CACHE/$KPKG
    if [[ ! -e $KDIR/.ok ]]; then
        say "fetching $KPKG into $QEMU_CACHE"
        rm -rf -- "$KDIR" "$KDIR.tmp"
        mkdir -p "$KDIR.tmp"
        if ((${#debs[@]})); then
            for deb in "${debs[@]}"; do
                curl -fsS -m 600 -o "$KDIR.tmp/${deb##*/}" "$deb" 2>>"$KDIR.tmp/apt.log" ||
                    { tail -n 3 "$KDIR.tmp/apt.log" >&2; rm -rf -- "$KDIR.tmp"; say "cannot download $deb"; return 77; }
            done
        else
            if [[ -n $suite && -z $aptdir ]]; then
                aptdir=$(mktemp -d "$QEMU_CACHE/apt-$suite.XXXXXX")
                _suite_apt_opts "$suite" "$aptdir"
                apt-get "${SUITE_APT[@]}" update >"$aptdir/update.log" 2>&1 || true
            fi
            local -a opts=(-o APT::Sandbox::User=root)
            [[ -z $suite ]] || opts=("${SUITE_APT[@]}")
            (cd "$KDIR.tmp" && apt-get "${opts[@]}" download "$KPKG") >"$KDIR.tmp/apt.log" 2>&1 ||
                { tail -n 3 "$KDIR.tmp/apt.log" >&2; rm -rf -- "$KDIR.tmp" "${aptdir:-/nonexistent}";
                  say "cannot download $KPKG"; return 77; }
        fi
        for deb in "$KDIR.tmp"/*.deb; do
            dpkg-deb -x "$deb" "$KDIR.tmp/root" ||
                { rm -rf -- "$KDIR.tmp" "${aptdir:-/nonexistent}"; say "cannot unpack $deb"; return 1; }
        done
        rm -rf -- "$KDIR.tmp"/*.deb "$KDIR.tmp/root/usr/share"
        # Debian 13 puts modules under /usr/lib; the guests look in /lib.
        if [[ ! -d $KDIR.tmp/root/lib/modules && -d $KDIR.tmp/root/usr/lib/modules ]]; then
            mkdir -p "$KDIR.tmp/root/lib" && mv "$KDIR.tmp/root/usr/lib/modules" "$KDIR.tmp/root/lib/modules"
        fi
        local kver
        kver=$(ls "$KDIR.tmp/root/lib/modules")
        _depmod "$KDIR.tmp/root" "$kver" ||
            { rm -rf -- "$KDIR.tmp" "${aptdir:-/nonexistent}"; say "depmod failed"; return 1; }
        touch "$KDIR.tmp/.ok"
        mv "$KDIR.tmp" "$KDIR"
        # Older kernels of the same series are of no further use.
        for d in "$QEMU_CACHE"/$(_kernel_series_glob "$KPKG"); do
            [[ $d == "$KDIR" || ! -d $d ]] || rm -rf -- "$d"
        done
    fi
    [[ -z $aptdir ]] || rm -rf -- "$aptdir"
    KVER=$(ls "$KDIR/root/lib/modules")
    # Cached before kmod's depmod was here: add its indexes.
    if [[ ! -e $KDIR/root/lib/modules/$KVER/modules.dep.bin ]] && command -v depmod >/dev/null; then
        _depmod "$KDIR/root" "$KVER" || say "depmod $KVER failed: no modprobe in a systemd guest"
    fi
    MODDIR=$KDIR/root/lib/modules/$KVER
    VMLINUZ=$KDIR/root/boot/vmlinuz-$KVER
    [[ -f $VMLINUZ && -f $MODDIR/modules.dep ]] || { say "cached $KPKG is incomplete; remove $KDIR"; return 1; }
    return 0
}

# ------------------------------------------------------------- work dir ---
# shellcheck disable=SC2317  # run by the trap
_qemu_cleanup() {
    local rc=$?
    set +e   # every step runs, whatever failed before
    [[ -n $TAIL_PID ]] && kill "$TAIL_PID" 2>/dev/null
    if [[ -n $QEMU_PID ]] && kill -0 "$QEMU_PID" 2>/dev/null; then
        kill -TERM "$QEMU_PID" 2>/dev/null
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.5; done
        kill -KILL "$QEMU_PID" 2>/dev/null
    fi
    [[ -n $QEMU_PID ]] && wait "$QEMU_PID" 2>/dev/null
    [[ -n $WORK ]] && rm -rf -- "$WORK"
    exit "$rc"
}

# qemu_workdir: WORK, a fresh temp dir, removed (qemu stopped first) on
# any exit of the script.
qemu_workdir() {
    local d pid
    # Leftovers of a run that was SIGKILLed (its qemu died with it): remove.
    # A live owner keeps its dir, whatever its name (a script run as a
    # command is named after the script, not bash: two guests at once).
    for d in "${TMPDIR:-/tmp}"/amptrace-qemu.*; do
        [[ -f $d/owner ]] || continue
        read -r pid <"$d/owner" || continue
        [[ -e /proc/$pid ]] || rm -rf -- "$d"
    done
    trap _qemu_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/amptrace-qemu.XXXXXX")
    echo $$ >"$WORK/owner"
}

# ------------------------------------------------------------- initramfs ---
# mod_files NAME...: each module's file and its dependencies', from modules.dep.
mod_files() {
    local name
    for name in "$@"; do
        name=${name//-/_}
        awk -v n="$name" '{ f = $1; sub(/:$/, "", f); b = f; sub(/.*\//, "", b); sub(/\.ko.*$/, "", b);
                            gsub(/-/, "_", b); if (b == n) { print f; for (i = 2; i <= NF; i++) print $i; exit } }' \
            "$MODDIR/modules.dep"
    done | sort -u
}
# Modules built into this kernel (virtio_pci in Ubuntu's) need no loading.
_builtin() { grep -q "/${1//_/[_-]}\.ko" "$MODDIR/modules.builtin" 2>/dev/null; }

# initramfs_modules DIR MOD...: an initramfs tree's busybox, modules.dep and
# the MODs' files with their dependencies; QEMU_MODS = the MODs that are
# modules (not built in), for `modprobe` in the guest's init.
initramfs_modules() {
    local ird=$1 m f
    shift
    mkdir -p "$ird"/{bin,sbin,proc,sys,dev,newroot,"lib/modules/$KVER"}
    cp "$BUSYBOX" "$ird/bin/busybox"
    # busybox's modprobe reads no compressed module (Debian 13's are .ko.xz):
    # they go in uncompressed.
    sed -E 's/\.ko\.(xz|zst|gz)\b/.ko/g' "$MODDIR/modules.dep" >"$ird/lib/modules/$KVER/modules.dep"
    QEMU_MODS=()
    for m in "$@"; do
        if [[ -n $(mod_files "$m") ]]; then
            QEMU_MODS+=("$m")
        else
            _builtin "$m" || die "module $m not in $KPKG"
        fi
    done
    while read -r f; do
        [[ -n $f ]] || continue
        mkdir -p "$ird/lib/modules/$KVER/${f%/*}"
        case $f in
            *.ko.xz) xz -dc "$MODDIR/$f" >"$ird/lib/modules/$KVER/${f%.xz}" ;;
            *.ko.zst) zstd -qdc "$MODDIR/$f" >"$ird/lib/modules/$KVER/${f%.zst}" ;;
            *.ko.gz) gzip -dc "$MODDIR/$f" >"$ird/lib/modules/$KVER/${f%.gz}" ;;
            *) cp "$MODDIR/$f" "$ird/lib/modules/$KVER/$f" ;;
        esac || die "cannot copy module $f"
    done < <(mod_files "${QEMU_MODS[@]}")
}

# ------------------------------------------------------------------ boot ---
# qemu_run CONSOLE QEMU_ARG...: qemu with ACCEL_ARGS, the serial console
# into CONSOLE (streamed to stdout on a terminal or with
# AMPTRACE_QEMU_STREAM), qemu's own messages into $WORK/qemu.err.  Waits
# for it to power off, QEMU_TIMEOUT s at most (then stops it), and stops
# it early if the console is still empty after AMPTRACE_QEMU_SILENT s
# (default 60 under KVM, 240 under TCG): QEMU_SILENT is then that limit.
qemu_run() {
    local console=$1 t_start=$SECONDS
    shift
    : >"$console"
    # --pdeathsig: qemu dies with this script, even if it is SIGKILLed.
    setpriv --pdeathsig KILL -- "$QEMU" -nodefaults -no-user-config -machine "${QEMU_MACHINE:-q35}" "${ACCEL_ARGS[@]}" \
        -display none -monitor none -serial "file:$console" -no-reboot "$@" \
        </dev/null >"$WORK/qemu.err" 2>&1 &
    QEMU_PID=$!
    if [[ -t 1 || -n ${AMPTRACE_QEMU_STREAM-} ]]; then
        tail -n +1 -f --pid="$QEMU_PID" "$console" &
        TAIL_PID=$!
    fi
    QEMU_TIMED_OUT=0 QEMU_SILENT=0
    # A guest whose console stays empty this long never got going (the
    # init scripts print a line first thing): stop it now, not at the end
    # of QEMU_TIMEOUT.  TCG boots Debian's kernels to init in ~6 s here,
    # 3 guests at once in ~20 s; KVM in ~1 s.
    local silent_limit=${AMPTRACE_QEMU_SILENT:-}
    [[ -n $silent_limit ]] || { [[ $ACCEL == kvm ]] && silent_limit=60 || silent_limit=240; }
    while kill -0 "$QEMU_PID" 2>/dev/null; do
        if ((SECONDS - t_start >= QEMU_TIMEOUT)); then
            QEMU_TIMED_OUT=1
            kill -TERM "$QEMU_PID" 2>/dev/null
            break
        fi
        if ((SECONDS - t_start >= silent_limit)) && [[ ! -s $console ]]; then
            QEMU_SILENT=$silent_limit
            kill -TERM "$QEMU_PID" 2>/dev/null
            break
        fi
        sleep 1
    done
    QEMU_RC=0
    wait "$QEMU_PID" || QEMU_RC=$?
    QEMU_PID=''
    [[ -n $TAIL_PID ]] && { wait "$TAIL_PID" 2>/dev/null || true; TAIL_PID=''; }
    QEMU_ELAPSED=$((SECONDS - t_start))
    return 0
}

# qemu_report: what qemu said, why it ended (after the caller showed the
# console); skips where KVM could not be used.
qemu_report() {
    if [[ ${ACCEL:-} == kvm ]] && grep -qiE 'kvm.*(fail|error|not supported)|Could not access KVM' "$WORK/qemu.err"; then
        cat "$WORK/qemu.err" >&2
        skip "qemu could not use KVM"
    fi
    [[ -s $WORK/qemu.err ]] && { say "qemu said:"; sed 's/^/  /' "$WORK/qemu.err" >&2; }
    ((QEMU_TIMED_OUT)) && say "guest still running after ${QEMU_TIMEOUT}s: stopped it"
    if ((QEMU_SILENT)); then
        say "the guest printed nothing in ${QEMU_SILENT} s under qemu/$ACCEL: stopped it early ($ACCEL_WHY)"
        [[ $ACCEL != kvm ]] || say "KVM opens here but its guest does not run: AMPTRACE_QEMU_ACCEL=tcg (or auto) emulates it"
    fi
    ((QEMU_RC == 0 || QEMU_TIMED_OUT)) || say "qemu exited $QEMU_RC"
    return 0
}
