#!/usr/bin/env bash
# A Debian root file system made by debootstrap from the Debian registry,
# cached between runs, for the tests that need another Debian release
# (journald 257 from Debian 13, a clean Debian 12 to install the .deb in).
#
#   scripts/debian-rootfs.sh SUITE [PACKAGE,...]   (root)
#
# Prints the cached tree's path: ${AMPTRACE_ROOTFS_CACHE:-/var/cache/amptrace-rootfs}/
# SUITE[-HASH], HASH naming the extra packages.  The tree is made once
# (minbase, plus systemd and the packages given) and never changed after:
# callers mount an overlay on it (rootfs_overlay in tests/lib.sh), so every
# run starts from the same bytes and nothing a run does stays.
# Exit 77 (skip) where debootstrap or the registry cannot be reached and
# nothing is cached; 1 on any other failure.
# AMPTRACE_ROOTFS_ARCH=arm64: another architecture's tree (SUITE-arm64, for
# the arm64 guest): its packages configure by running its programs, through
# qemu-user-static, registered with binfmt_misc for the build only.
set -euo pipefail

suite=${1:?usage: debian-rootfs.sh SUITE [PACKAGE,...]}
extra=${2:-}
cache=${AMPTRACE_ROOTFS_CACHE:-/var/cache/amptrace-rootfs}
mirror=${AMPTRACE_DEBIAN_MIRROR:-http://deb.debian.org/debian}

say() { echo "debian-rootfs: $*" >&2; }

arch=${AMPTRACE_ROOTFS_ARCH:-}
[[ $arch != "$(dpkg --print-architecture)" ]] || arch=''
name=$suite${arch:+-$arch}
[[ -z $extra ]] || name=$name-$(printf '%s' "$extra" | md5sum | cut -c1-8)
dir=$cache/$name
# A finished tree has this stamp; a half-made one (killed debootstrap) is
# made again.
stamp=$dir/.amptrace-rootfs-done

if [[ -e $stamp ]]; then
    echo "$dir"
    exit 0
fi
[[ $EUID -eq 0 ]] || { say "needs root"; exit 1; }
mkdir -p "$cache"
# One builder at a time: two tests may want the same tree at once.
exec {lock}>"$cache/.lock-$name"
flock -w 600 "$lock" || { say "waited 600 s for another build of $name"; exit 1; }
if [[ -e $stamp ]]; then
    echo "$dir"
    exit 0
fi
if ! command -v debootstrap >/dev/null; then
    if ! { apt-get install -y -qq --no-install-recommends debootstrap >/dev/null 2>&1 ||
           { apt-get update -qq >/dev/null 2>&1 &&
             apt-get install -y -qq --no-install-recommends debootstrap >/dev/null 2>&1; }; }; then
        say "SKIP: no debootstrap, and it cannot be installed"
        exit 77
    fi
fi
if ! curl -fsS -m 20 -o /dev/null "$mirror/dists/$suite/Release" 2>/dev/null &&
   ! wget -q -T 20 -O /dev/null "$mirror/dists/$suite/Release" 2>/dev/null; then
    say "SKIP: $mirror/dists/$suite/Release cannot be reached and no $suite tree is cached"
    exit 77
fi
foreign=()
if [[ -n $arch ]]; then
    [[ $arch == arm64 ]] || { say "AMPTRACE_ROOTFS_ARCH=$arch: only arm64"; exit 1; }
    conf=/usr/lib/binfmt.d/qemu-aarch64.conf
    [[ -r $conf ]] || { say "SKIP: no $conf (apt-get install qemu-user-static)"; exit 77; }
    binfmt=/proc/sys/fs/binfmt_misc
    mounted=0 registered=0
    undo_binfmt() {
        ((registered)) && echo -1 >"$binfmt/qemu-aarch64"
        ((mounted)) && umount "$binfmt"
        return 0
    }
    trap undo_binfmt EXIT
    if [[ ! -e $binfmt/register ]]; then
        mount -t binfmt_misc binfmt_misc "$binfmt" || { say "cannot mount binfmt_misc"; exit 1; }
        mounted=1
    fi
    if [[ ! -e $binfmt/qemu-aarch64 ]]; then
        grep -v '^#' "$conf" >"$binfmt/register" || { say "cannot register qemu-aarch64"; exit 1; }
        registered=1
    fi
    foreign=(--arch="$arch")
fi
rm -rf "$dir"
log=$cache/$name.debootstrap.log
include=systemd${extra:+,$extra}
say "making $dir (debootstrap --variant=minbase --include=$include $suite, ~1 min)"
# A suite newer than this debootstrap knows (Debian 14, forky) is made as
# sid is.
script=()
[[ -e /usr/share/debootstrap/scripts/$suite ]] || script=(/usr/share/debootstrap/scripts/sid)
if ! debootstrap "${foreign[@]}" --variant=minbase --include="$include" "$suite" "$dir" "$mirror" "${script[@]}" \
        >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -rf "$dir"
    say "debootstrap $suite failed (log: $log)"
    exit 1
fi
# Nothing of the build may stay mounted or running.
rm -rf "$dir/var/cache/apt/archives/"*.deb
touch "$stamp"
echo "$dir"
