# SPDX-License-Identifier: GPL-2.0
"""The storage under the filesystem (--stack): the whole loop disk, or the
layers real hosts keep their logs on, from the disk up: a partition, md
RAID1 (two loop disks), LVM (dm-linear), LUKS (dm-crypt).  A stack is
built bottom-up, each undo step registered before its action, and a device
is only ever removed after checking it is still the one we made."""
import os
import shutil

from .devices import MKFS, LoopDev
from .util import CLEANUP, Refused, RunFailed, log, run, sleep, wait_for

# Layers in the order they may be stacked, bottom first; a spec lists them
# from the disk up, joined by '+': "lvm", "crypt", "lvm+crypt" (LUKS on
# LVM), "crypt+lvm" (LVM on LUKS), "part+raid1", "raid1+lvm".
LAYERS = {"part": "partition", "raid1": "md RAID1", "lvm": "LVM", "crypt": "LUKS"}
STACKS_HELP = "plain, part, lvm, crypt, raid1, or layers joined by '+' from the disk up"
# Extra megabytes of image under the filesystem, so the top device still
# holds --fs-size: the partition table's first MiB; md's superblock and
# data offset (mdadm leaves up to 128 MiB on 1.2 metadata).
OVERHEAD_MB = {"part": 1, "raid1": 132}
# A fixed test key: what is measured is the bytes written, not their secrecy.
TEST_KEY = "7" * 64


def parse(spec):
    """'lvm+crypt' -> ['lvm', 'crypt']; 'plain' -> []; UsageError text on a
    bad spec (as a ValueError)."""
    if spec == "plain":
        return []
    layers = spec.split("+")
    for i, layer in enumerate(layers):
        if layer not in LAYERS:
            raise ValueError(f"unknown layer '{layer}' in stack '{spec}' ({STACKS_HELP})")
        if layer == "part" and i != 0:
            raise ValueError(f"stack '{spec}': a partition is of the disk, so first")
        if layer == "raid1" and layers[:i] not in ([], ["part"]):
            raise ValueError(f"stack '{spec}': md RAID1 is of disks or partitions, so "
                             "first or after part")
    if len(set(layers)) != len(layers):
        raise ValueError(f"stack '{spec}': a layer twice")
    return layers


def label(spec):
    """'lvm+crypt' -> 'LUKS on LVM'; 'plain' -> 'whole disk'."""
    layers = parse(spec)
    return " on ".join(LAYERS[x] for x in reversed(layers)) if layers else "whole disk"


def _module(name):
    if os.path.exists(f"/sys/module/{name}"):
        return True
    try:
        loaded = run(["modprobe", name], check=False).returncode == 0
    except RunFailed:                   # no modprobe: no modules either
        return False
    return loaded and os.path.exists(f"/sys/module/{name}")


def check_kernel(specs):
    """Refuse before anything is made where this machine cannot build a
    stack: the tools and the kernel's device-mapper and md."""
    layers = {x for s in specs for x in parse(s)}
    need = [("part", "sfdisk", "fdisk"), ("raid1", "mdadm", "mdadm"),
            ("lvm", "dmsetup", "dmsetup"), ("crypt", "dmsetup", "dmsetup")]
    for layer, tool, pkg in need:
        if layer in layers and not shutil.which(tool):
            raise Refused(f"--stack {layer}: {tool} not installed (apt-get install {pkg})")
    mods = [("lvm", "dm_mod", "device-mapper"), ("crypt", "dm_crypt", "dm-crypt"),
            ("raid1", "raid1", "md RAID1")]
    for layer, mod, what in mods:
        if layer in layers and not _module(mod):
            raise Refused(f"--stack {layer}: this kernel has no {what} (module {mod} "
                          "neither loaded nor loadable)")


def sysname(path):
    """sysfs's name of a block special file (dm-0, md100, loop3p1)."""
    st = os.stat(path)
    return os.path.basename(os.path.realpath(
        f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"))


def _dmsetup(*args):
    # No udev needed: dmsetup makes /dev/mapper/NAME itself.
    return run(["env", "DM_DISABLE_UDEV=1", "dmsetup", *args, "--noudevsync"], check=False)


class Stack:
    """FS's device: loop disks, then the layers SPEC names.  .dev is what
    mkfs and mount take, .name the top's sysfs name (what --dev traces:
    amptrace follows the whole stack from any of its devices), .disks the
    bottom disks (whose bytes a line's bill is in), .layers every device
    from the disks up, .copies the copies of each page the disks write."""
    _seq = 0

    def __init__(self, scratch, fs, spec, size_mb):
        self.fs, self.spec = fs, spec
        layers = parse(spec)
        size = size_mb + sum(OVERHEAD_MB.get(x, 0) for x in layers)
        part = "part" in layers
        legs = 2 if "raid1" in layers else 1
        tag = fs if spec == "plain" else f"{fs}-{spec.replace('+', '-')}"
        self.loops = [LoopDev(scratch, fs, size, img=tag if legs == 1 else f"{tag}.{i}",
                              part_type=("fd" if legs > 1 else "83") if part else None)
                      for i in range(legs)]
        self.disks = [lo.name for lo in self.loops]
        tops = []
        for lo in self.loops:
            top = lo.dev + "p1" if part else lo.dev
            if part and not wait_for(lambda t=top: os.path.exists(t), 5):
                raise RunFailed(f"this kernel shows no partition of a loop device "
                                f"({lo.name}: no {top} after losetup -P)")
            tops.append(top)
        self.layers = self.disks + ([os.path.basename(t) for t in tops] if part else [])
        self.copies = legs
        self.md = None
        cur = tops[0]
        if legs > 1:
            cur = self._raid1(tops)
        for layer in (x for x in layers if x in ("lvm", "crypt")):
            cur = self._dm(layer, cur)
        self.dev = cur
        self.name = sysname(cur)
        log(f"stack {spec} for {fs}: {self.dev} ({' '.join(self.layers)})")

    # ---------------------------------------------------------- md ---
    def _raid1(self, legs):
        md = next((f"md{n}" for n in range(100, 128) if not os.path.exists(f"/sys/block/md{n}")),
                  None)
        if md is None:
            raise RunFailed("no free md number in 100-127")
        CLEANUP.push(f"stop /dev/{md}", self._md_stop, md)
        # No resync (--assume-clean) and no bitmap: the legs start equal and
        # no background writes mix with the lines'.
        run(["mdadm", "--create", f"/dev/{md}", "--level=1", "--raid-devices=2",
             "--metadata=1.2", "--run", "--assume-clean", "--bitmap=none",
             "--homehost=amptrace", *legs], timeout=60)
        self.md = md
        self.layers.append(md)
        log(f"md device {md} made of {' '.join(legs)}")
        return f"/dev/{md}"

    def _md_ours(self, md):
        try:
            slaves = set(os.listdir(f"/sys/block/{md}/slaves"))
        except OSError:
            return False
        mine = {n for lo in self.loops for n in (lo.name, lo.name + "p1")}
        return bool(slaves) and slaves <= mine

    def _md_stop(self, md):
        if not self._md_ours(md):
            return
        for _ in range(10):
            if run(["mdadm", "--stop", f"/dev/{md}"], check=False).returncode == 0:
                log(f"stopped md device {md}")
                return
            sleep(0.5)
        log(f"mdadm --stop /dev/{md} failed 10 times; left", always=True)

    # ---------------------------------------------------------- dm ---
    def _dm(self, layer, below):
        Stack._seq += 1
        name = f"amptrace-cmp-{os.getpid()}-{Stack._seq}-{layer}"
        sectors = int(run(["blockdev", "--getsz", below]).stdout)
        table = {"lvm": f"0 {sectors} linear {below} 0",
                 "crypt": f"0 {sectors} crypt aes-xts-plain64 {TEST_KEY} 0 {below} 0"}[layer]
        CLEANUP.push(f"remove dm device {name}", self._dm_remove, name)
        r = _dmsetup("create", name, "--table", table)
        if r.returncode:
            raise RunFailed(f"dmsetup cannot make a {LAYERS[layer]} device here: "
                            f"{(r.stderr or r.stdout).strip()}")
        path = f"/dev/mapper/{name}"
        self.layers.append(sysname(path))
        log(f"dm device {name} made over {below}")
        return path

    def _dm_remove(self, name):
        # Our names carry our pid: never someone else's device.
        if _dmsetup("info", name).returncode:
            return
        for _ in range(10):
            if _dmsetup("remove", name).returncode == 0:
                log(f"removed dm device {name}")
                return
            sleep(0.5)
        log(f"dmsetup remove {name} failed 10 times; left", always=True)

    # ------------------------------------- what mount_fs asks of a device ---
    def verify(self):
        for lo in self.loops:
            lo.verify()
        if self.md and not self._md_ours(self.md):
            raise Refused(f"/dev/{self.md} is no longer made of our loop devices; not touching it")

    def mkfs(self):
        self.verify()
        run(MKFS[self.fs] + [self.dev], timeout=300)
        log(f"mkfs {self.fs} on {self.dev}")
