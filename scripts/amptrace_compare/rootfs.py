# SPDX-License-Identifier: GPL-2.0
"""Another Debian release's journald, run in a chroot: the release's tree
(debootstrap, cached by scripts/debian-rootfs.sh) under an overlay of our
own, so the cache never changes, with /proc, /sys (--rbind: journald 257
refuses to start without it), a /dev of a few nodes and a private /run,
all in the scratch folder and all undone at the end.  As tests/lib.sh's
_journald_chroot does for the tests."""
import os
import re

from .paths import HERE
from .util import CLEANUP, RunFailed, log, rm_tree, rmdir_if_there, run

# journald major version -> the Debian release that ships it.
SUITES = {"252": "bookworm", "257": "trixie"}
CACHE = os.environ.get("AMPTRACE_ROOTFS_CACHE") or "/var/cache/amptrace-rootfs"
STAMP = ".amptrace-rootfs-done"     # a finished tree (scripts/debian-rootfs.sh)
DEV_NODES = ("null", "zero", "full", "random", "urandom", "kmsg", "tty")


def tree(suite):
    """The cached tree of SUITE; in a build tree scripts/debian-rootfs.sh
    makes it first if need be (debootstrap, about a minute)."""
    path = os.path.join(CACHE, suite)
    if os.path.exists(os.path.join(path, STAMP)):
        return path
    maker = os.path.join(HERE, "debian-rootfs.sh")
    if not os.access(maker, os.X_OK):
        raise RunFailed(f"no Debian {suite} tree in {CACHE}: make one with "
                        f"scripts/debian-rootfs.sh {suite} (from amptrace's source tree)")
    log(f"making the Debian {suite} tree: {maker} {suite}")
    r = run([maker, suite], timeout=1800, check=False)
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).strip().splitlines()
        raise RunFailed(f"debian-rootfs.sh {suite}: exit {r.returncode}: "
                        f"{msg[-1] if msg else ''}")
    return r.stdout.strip().splitlines()[-1]


def systemd_version(root):
    """Major version of the systemd package installed in ROOT, from dpkg's
    status file (no chroot needed)."""
    try:
        with open(os.path.join(root, "var/lib/dpkg/status")) as f:
            for para in f.read().split("\n\n"):
                if re.search(r"^Package: systemd$", para, re.M):
                    m = re.search(r"^Version: (\d+)", para, re.M)
                    return m.group(1) if m else None
    except OSError:
        return None
    return None


def _umount(path, *flags):
    if os.path.ismount(path):
        run(["umount", *flags, path], check=False)


def chroot(scratch, version):
    """Mount a fresh root for journald VERSION in SCRATCH; return its path.
    Every mount is registered for undo before it is made."""
    suite = SUITES[version]
    lower = tree(suite)
    have = systemd_version(lower)
    if have != version:
        raise RunFailed(f"the Debian {suite} tree {lower} has systemd {have}, not {version}")
    # One root per target run, fresh: its upper layer starts empty.
    base = os.path.join(scratch, f"r{version}")
    root, upper, work = (os.path.join(base, d) for d in ("root", "upper", "work"))
    for d in (base, root, upper, work):
        CLEANUP.push(f"rmdir {d}", rmdir_if_there, d)
        os.mkdir(d)
    for d in (upper, work):         # overlay leaves work/work behind
        CLEANUP.push(f"rm -r {d}", rm_tree, d)
    CLEANUP.push(f"umount {root}", _umount, root)
    run(["mount", "-t", "overlay", "amptrace-compare-root", "-o",
         f"lowerdir={lower},upperdir={upper},workdir={work}", root])
    CLEANUP.push(f"umount {root}/proc", _umount, f"{root}/proc", "-l")
    run(["mount", "-t", "proc", "proc", f"{root}/proc"])
    # rslave: unmounting the copies must never reach the host's own mounts.
    CLEANUP.push(f"umount -R {root}/sys", _umount, f"{root}/sys", "-R", "-l")
    run(["mount", "--rbind", "/sys", f"{root}/sys"])
    run(["mount", "--make-rslave", f"{root}/sys"])
    # A /dev of its own: a few nodes, and /dev/log pointing at journald's
    # socket in the private /run, never the host's /dev.
    CLEANUP.push(f"umount {root}/dev", _umount, f"{root}/dev")
    run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=1m", "amptrace-compare-dev",
         f"{root}/dev"])
    run(["cp", "-a"] + [f"/dev/{n}" for n in DEV_NODES] + [f"{root}/dev/"])
    os.symlink("/run/systemd/journal/dev-log", f"{root}/dev/log")
    os.symlink("/proc/self/fd", f"{root}/dev/fd")
    CLEANUP.push(f"umount {root}/run", _umount, f"{root}/run")
    run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=64m", "amptrace-compare-run",
         f"{root}/run"])
    log(f"journald {version} root (Debian {suite}) mounted at {root}")
    return root
