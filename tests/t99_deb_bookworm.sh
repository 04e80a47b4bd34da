#!/usr/bin/env bash
# The Debian package (`make deb`, scripts/build-deb.sh) in a clean Debian 12:
#  1. it builds, lintian-clean (build-deb.sh fails on any error or warning
#     not overridden with a reason), as amptrace_VERSION_ARCH.deb;
#  2. a bookworm tree made by debootstrap (scripts/debian-rootfs.sh, cached)
#     with only man-db and the packages the .deb Depends on, under an
#     overlay of this test's own: `dpkg -i` installs it (the Depends are
#     enough: every library resolves), `amptrace --version` runs there and
#     reads the kernel's BTF, `man amptrace` and `man amptrace-trace` render,
#     `amptrace compare --help` finds its driver, and systemd-analyze
#     verify passes the exporter unit;
#  3. `dpkg -r` leaves only the conffile /etc/default/amptrace-exporter;
#     `dpkg -P` leaves nothing: no path naming amptrace, /etc as before,
#     and no file that was not there before but dpkg's own records and logs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
for t in dpkg-buildpackage dh lintian; do
    command -v "$t" >/dev/null || skip "$t not installed (scripts/deps.sh --package)"
done

out=$AMP_TMP/out
"$AMP_ROOT/scripts/build-deb.sh" "$out" >"$AMP_TMP/build.out" 2>&1 ||
    fail "build-deb.sh: $(tail -20 "$AMP_TMP/build.out")"
deb=$(tail -n 1 "$AMP_TMP/build.out")
version=$(dpkg-deb -f "$deb" Version)
[[ $deb == "$out/amptrace_${version}_$(dpkg --print-architecture).deb" ]] || fail "package file name: $deb"
depends=$(dpkg-deb -f "$deb" Depends)
for p in libbpf1 libjson-c5 libmicrohttpd12 zlib1g python3; do
    [[ ,$depends, == *[,\ ]$p[,\ ]* ]] || fail "Depends lacks $p: $depends"
done
ok "built $(basename "$deb"), lintian clean (overrides: $(grep -c '^amptrace:' "$AMP_ROOT/scripts/debian/amptrace.lintian-overrides")); Depends: $depends"

# The tree: Debian 12 with man-db and exactly the Depends (names only).
names=$(tr ',' '\n' <<<"$depends" | sed 's/(.*)//; s/|.*//; s/ //g' | grep -v '^$' | sort -u | paste -sd,)
rootfs_overlay bookworm "man-db,$names"
root=$ROOTFS
rootfs_system "$root"   # a /run of its own too, as a booted system has (systemd-analyze writes there)
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
[[ $(in_root dpkg-query -W -f '${Version}' base-files) == 12* ]] || fail "not a Debian 12 tree"
# man-db would keep formatted copies in /var/cache/man, which outlive the
# package: the test's doing, not the package's.
echo NOCACHE >>"$root/etc/manpath.config"
# What the tree holds before: paths, and /etc's contents.
snap() { (cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./tmp \) -prune -o -print | sort); }
etcsum() { (cd "$root" && find etc -xdev -type f -print0 | sort -z | xargs -0 md5sum); }
snap >"$AMP_TMP/before"
etcsum >"$AMP_TMP/etc.before"

cp "$deb" "$root/tmp/"
in_root dpkg -i "/tmp/$(basename "$deb")" >"$AMP_TMP/dpkg-i.log" 2>&1 || fail "dpkg -i: $(tail "$AMP_TMP/dpkg-i.log")"
rm "$root/tmp/$(basename "$deb")"
[[ $(in_root dpkg-query -W -f '${Status}' amptrace) == "install ok installed" ]] || fail "dpkg says not installed"
! in_root ldd /usr/bin/amptrace | grep 'not found' || fail "libraries missing in a tree with the Depends only"
in_root amptrace --version >"$AMP_TMP/version" 2>&1 || fail "amptrace --version in the chroot: $(cat "$AMP_TMP/version")"
[[ $(head -1 "$AMP_TMP/version") == "amptrace $version" ]] || fail "chroot --version: $(head -1 "$AMP_TMP/version")"
grep -q '^btf: /sys/kernel/btf/vmlinux$' "$AMP_TMP/version" || fail "--version in the chroot did not read BTF: $(cat "$AMP_TMP/version")"
ok "dpkg -i in Debian 12; amptrace --version there: $(head -1 "$AMP_TMP/version"), $(grep '^dirtying' "$AMP_TMP/version")"
for p in amptrace amptrace-trace; do
    in_root env MANWIDTH=80 man -P cat "$p" >"$AMP_TMP/man.$p" 2>"$AMP_TMP/man.$p.err" ||
        fail "man $p in the chroot: $(cat "$AMP_TMP/man.$p.err")"
    [[ ! -s $AMP_TMP/man.$p.err ]] || fail "man $p warns: $(cat "$AMP_TMP/man.$p.err")"
done
grep -qE '^ *amptrace +- +charge +every +dirtied +page' "$AMP_TMP/man.amptrace" || fail "man amptrace: $(head -8 "$AMP_TMP/man.amptrace")"
grep -q 'amptrace_charged_bytes_total' "$AMP_TMP/man.amptrace-trace" || fail "man amptrace-trace lacks METRICS"
ok "man amptrace, man amptrace-trace render in the chroot ($(wc -l <"$AMP_TMP/man.amptrace") and $(wc -l <"$AMP_TMP/man.amptrace-trace") lines)"
in_root amptrace compare --help >/dev/null 2>&1 || fail "amptrace compare --help in the chroot"
in_root systemd-analyze verify /lib/systemd/system/amptrace-exporter.service >"$AMP_TMP/verify" 2>&1 ||
    fail "systemd-analyze verify in the chroot: $(cat "$AMP_TMP/verify")"
[[ ! -s $AMP_TMP/verify ]] || fail "systemd-analyze verify warns: $(cat "$AMP_TMP/verify")"
[[ -z $(in_root find /etc/systemd/system -name 'amptrace*') ]] || fail "the exporter was enabled on install"
ok "compare finds its driver; the unit verifies (documentation and binary found) and is not enabled"

in_root dpkg -r amptrace >"$AMP_TMP/dpkg-r.log" 2>&1 || fail "dpkg -r: $(tail "$AMP_TMP/dpkg-r.log")"
# Left for a purge: the conffile, dpkg's record of it, and
# deb-systemd-helper's memory of the unit's state.
left=$(snap | comm -13 "$AMP_TMP/before" - | grep amptrace |
       grep -vE '^\./var/lib/(dpkg/info/amptrace\.|systemd/deb-systemd-helper-)' | paste -sd' ')
[[ $left == ./etc/default/amptrace-exporter ]] || fail "after dpkg -r, not only the conffile: $left"
in_root dpkg -P amptrace >"$AMP_TMP/dpkg-p.log" 2>&1 || fail "dpkg -P: $(tail "$AMP_TMP/dpkg-p.log")"
snap >"$AMP_TMP/after"
left=$(comm -13 "$AMP_TMP/before" "$AMP_TMP/after" | grep -i amptrace | paste -sd' ') || true
[[ -z $left ]] || fail "after dpkg -P, paths naming amptrace: $left"
new=$(comm -13 "$AMP_TMP/before" "$AMP_TMP/after" |
      grep -vE '^\./var/(lib/dpkg|log|cache/man|cache/debconf)(/|$)' | paste -sd' ') || true
[[ -z $new ]] || fail "after dpkg -P, new files: $new"
gone=$(comm -23 "$AMP_TMP/before" "$AMP_TMP/after" | paste -sd' ') || true
[[ -z $gone ]] || fail "after dpkg -P, files of the tree are gone: $gone"
etcsum | diff "$AMP_TMP/etc.before" - >/dev/null || fail "/etc changed: $(etcsum | diff "$AMP_TMP/etc.before" - | head)"
ok "dpkg -r leaves only the conffile; dpkg -P leaves nothing (no amptrace path, /etc as before)"
