# SPDX-License-Identifier: GPL-2.0
"""The loop devices and their filesystems: the filesystems compare knows,
the /sys/block counter, the safety checks (never touch a loop device it did
not attach, never write its scratch files through a traced device), and
mkfs / mount / umount."""
import contextlib
import os
import re
import time

from .util import CLEANUP, Refused, RunFailed, log, mkdir_tracked, rm_rf_if_there, run, sleep, \
    syncfs

FILESYSTEMS = ["ext4", "ext4nj", "xfs", "btrfs", "btrfsC"]
FS_LABEL = {"ext4": "ext4", "ext4nj": "ext4 (no journal)", "xfs": "xfs",
            "btrfs": "btrfs", "btrfsC": "btrfs +C (nodatacow)"}
FS_MIN_MB = {"xfs": 300, "btrfs": 114, "btrfsC": 114, "ext4": 16, "ext4nj": 16}
MKFS = {
    # As tests/lib.sh: without lazy_*_init=0 ext4 zeroes its inode tables in
    # a kernel thread after mount and pollutes the device counter.
    "ext4": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "ext4nj": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0", "-O", "^has_journal"],
    "xfs": ["mkfs.xfs", "-q", "-f"],
    "btrfs": ["mkfs.btrfs", "-q", "-f"],
    "btrfsC": ["mkfs.btrfs", "-q", "-f"],
}


def devstat(names):
    """(bytes written, write I/Os) from /sys/class/block/NAME/stat, summed
    over NAMES (one name, or a stack's bottom disks: a RAID1's legs)."""
    b = ios = 0
    for name in [names] if isinstance(names, str) else names:
        with open(f"/sys/class/block/{name}/stat") as f:
            v = f.read().split()
        b, ios = b + int(v[6]) * 512, ios + int(v[4])
    return b, ios


def wait_quiet(names, quiet_s, timeout_s):
    """Until the devices have written nothing for quiet_s seconds (or timeout)."""
    last = devstat(names)[0]
    since = start = time.monotonic()
    while time.monotonic() - since < quiet_s and time.monotonic() - start < timeout_s:
        sleep(0.25)
        cur = devstat(names)[0]
        if cur != last:
            last, since = cur, time.monotonic()
    return time.monotonic() - since >= quiet_s


# ----------------------------------------------------- safety checks ---

def block_dev_of(path):
    st = os.stat(path)
    return os.major(st.st_dev), os.minor(st.st_dev)


def loop_behind(maj, mnr, depth=0):
    """Name of a loop device at or under block device maj:mnr (dm, md,
    partitions followed), or None."""
    base = f"/sys/dev/block/{maj}:{mnr}"
    if not os.path.exists(base) or depth > 8:
        return None
    real = os.path.realpath(base)
    name = os.path.basename(real)
    if os.path.exists(os.path.join(real, "loop")):
        return name
    parent = os.path.dirname(real)          # a partition: its disk has loop/
    if os.path.exists(os.path.join(parent, "loop")):
        return os.path.basename(parent)
    slaves = os.path.join(real, "slaves")
    for s in sorted(os.listdir(slaves)) if os.path.isdir(slaves) else []:
        with open(os.path.join(slaves, s, "dev")) as f:
            smaj, smin = f.read().strip().split(":")
        hit = loop_behind(int(smaj), int(smin), depth + 1)
        if hit:
            return hit
    return None


def _unescape(field):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_of(path):
    """(mount point, source, 'maj:min') of the mount holding path, from
    /proc/self/mountinfo (the last of stacked mounts wins)."""
    best = ("/", "", "")
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            fields = left.split()
            mp = _unescape(fields[4])
            source = _unescape(right.split()[1])
            if (path == mp or path.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best[0]):
                best = (mp, source, fields[2])
    return best


def loop_under(path):
    """Name of the loop device a path's filesystem sits on, or None.  By the
    device number (partitions, dm and md followed down) and, for
    filesystems with anonymous device numbers (btrfs), by the mount source."""
    maj, mnr = block_dev_of(path)
    hit = loop_behind(maj, mnr)
    if hit:
        return hit
    mp, source, _ = mount_of(path)
    if source.startswith("/dev/") and os.path.exists(source):
        st = os.stat(source)
        if os.path.exists(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"):
            return loop_behind(os.major(st.st_rdev), os.minor(st.st_rdev))
    return None


def check_scratch(path):
    """Refuse a scratch folder on a loop device: that is where the traced
    devices live, and images or traces written there would be measured."""
    loop = loop_under(path)
    if loop:
        raise Refused(f"scratch folder {path} is on loop device {loop} (mounted at "
                      f"{mount_of(path)[0]}): it would write its images and traces through "
                      "a loop device like the ones it traces; use --scratch DIR on a "
                      "real disk")


def check_not_under(path, mountpoint):
    p, m = os.path.realpath(path), os.path.realpath(mountpoint)
    if p == m or p.startswith(m.rstrip("/") + "/"):
        raise Refused(f"scratch folder {path} is under {mountpoint}, where a traced loop "
                      "filesystem is mounted; choose another --scratch")


# ---------------------------------------------------------- loop device ---

class LoopDev:
    """One loop device on a sparse image in the scratch folder.  Every
    destructive step first re-checks that the device is still backed by our
    image, so it can never act on a loop device it did not attach."""

    def __init__(self, scratch, fs, size_mb, img=None, part_type=None):
        self.fs = fs
        self.img = os.path.join(scratch, f"{img or fs}.img")
        self.dev = self.name = None
        CLEANUP.push(f"rm {self.img}", rm_rf_if_there, self.img)
        with open(self.img, "xb") as f:
            f.truncate(size_mb << 20)       # sparse: costs no disk until written
        if part_type:
            # One partition from 1 MiB to the end, as installers make them.
            run(["sfdisk", "-q", self.img], input=f"label: dos\nstart=2048, type={part_type}\n")
        # Registered before losetup: if we are interrupted before its answer
        # arrives, the device is still found by its backing file.
        CLEANUP.push(f"detach loop of {self.img}", self.detach)
        self.dev = run(["losetup", "-f", "--show"] + (["-P"] if part_type else []) +
                       [self.img]).stdout.strip()
        self.name = os.path.basename(self.dev)
        self.verify()
        if loop_under(scratch) == self.name:
            raise Refused(f"scratch folder {scratch} is on the traced device {self.name}")
        log(f"{self.img} on {self.dev}")

    def _backing(self, name):
        try:
            with open(f"/sys/block/{name}/loop/backing_file") as f:
                return f.read().strip()
        except OSError:
            return None

    def verify(self):
        b = self._backing(self.name)
        if b is None or os.path.realpath(b) != os.path.realpath(self.img):
            raise Refused(f"{self.dev} is not backed by {self.img} (backing: {b}); "
                          "not touching it")

    def mkfs(self):
        self.verify()
        run(MKFS[self.fs] + [self.dev], timeout=300)
        log(f"mkfs {self.fs} on {self.dev}")

    def detach(self):
        r = run(["losetup", "-j", self.img], check=False)
        for line in r.stdout.splitlines():
            dev = line.split(":", 1)[0]
            name = os.path.basename(dev)
            b = self._backing(name)
            if b and os.path.realpath(b) == os.path.realpath(self.img):
                run(["losetup", "-d", dev], check=False)
                log(f"detached {dev}")


def umount_robust(mp):
    for _ in range(10):
        if not os.path.ismount(mp):
            return
        with contextlib.suppress(OSError):
            syncfs(mp)
        if run(["umount", mp], check=False).returncode == 0:
            log(f"unmounted {mp}")
            return
        sleep(0.5)
    users = run(["fuser", "-vm", mp], check=False)
    log(f"umount {mp} still busy after 10 tries ({users.stderr.strip()}); lazy unmount",
        always=True)
    run(["umount", "-l", mp], check=False)


def mount_fs(loop, mp):
    """mkfs (fresh for every target) and mount at mp; undo registered."""
    loop.mkfs()
    mkdir_tracked(mp)
    if os.path.ismount(mp):
        raise RunFailed(f"{mp} is already a mount point")
    CLEANUP.push(f"umount {mp}", umount_robust, mp)
    loop.verify()
    run(["mount", loop.dev, mp])
    if loop.fs == "btrfsC":
        run(["chattr", "+C", mp])
    log(f"{loop.fs} on {loop.dev} mounted at {mp}")
