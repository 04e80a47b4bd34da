# SPDX-License-Identifier: GPL-2.0
"""The command line: options, the checks on them, and main(): set up the
scratch folder, run the compare, always unwind, then write the outputs."""
import argparse
import json
import os
import signal
import sys
import tempfile

from . import catalog, stacks, util
from .devices import FILESYSTEMS, FS_MIN_MB, check_scratch
from .driver import Compare
from .page import render_html
from .paths import AMPTRACE
from .table import Screen, fit, header_text, row_text, trees_text
from .targets import TARGETS, text_line
from .util import CLEANUP, PROG, Interrupted, Refused, RunFailed, UsageError, install_signals, log, \
    rm_tree
from .workloads import Workload


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse_args(argv):
    p = Parser(
        prog="amptrace compare",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The same logging workload on several loop filesystems, storage "
                    "stacks and log targets, traced by amptrace; one row per (filesystem, "
                    "stack, target, workload).",
        epilog="""targets (-t, comma-separated):
  journald[@V][:Setting=value...]
                      a private journald (a namespace instance) of version V
                      (default: each of --journald), with journald.conf settings,
                      e.g. journald:Compress=no, journald@257:SyncIntervalSec=10s;
                      journald:Storage=volatile+rsyslog is the mitigation:
                      journald in memory, forwarding to a private rsyslog
  rsyslog             a private rsyslogd, one line per message in a file
  append              one O_APPEND write(2) per line
  append+fdatasync    the same, fdatasync(2) after each

workloads (-w, comma-separated or repeated):
  one                 one line
  burst[:N]           N lines back to back (default 10)
  trickle[:S:T[:W]]   one line every S s for T s (default 5:60), then W s (default 35)
                      of the kernel's own write-back before the final syncfs
  bulk[:N]            N lines as fast as the target takes them (default 100000);
                      also reports lines/s
  untar[:N]           no logger (target tree): tar -x of a generated source tree
                      of N files (default 5000), then sync; a row's unit is a file
  rmrf[:N]            rm -rf of that tree, then sync

stacks (--stack, comma-separated; layers from the disk up, joined by '+'):
  plain               the whole loop disk (the default)
  part                a partition (MBR, from 1 MiB), as installers make
  lvm                 dm-linear, what LVM makes of a volume
  crypt               dm-crypt aes-xts-plain64 (LUKS's data path; a fixed test key)
  raid1               md RAID1 of two loop disks (metadata 1.2, no bitmap)
  e.g. lvm+crypt (LUKS on LVM), crypt+lvm (LVM on LUKS), part+raid1.  A row's
  bytes are its disks' (both legs of a RAID1): what wears the device.  Needs
  sfdisk, dmsetup, mdadm and a kernel with device-mapper / md as the layers ask.

Each (filesystem, stack, target): a fresh mkfs on that stack's device, the
target started on it, then per workload: amptrace trace, the lines, syncfs,
the tracer's summary.  Needs root.  Leaves nothing behind, also on Ctrl-C.

examples:
  amptrace compare -f ext4,xfs -t journald,append -w one,burst:10
  amptrace compare --journald 252,257 -t journald,journald:Storage=volatile+rsyslog,rsyslog
  amptrace compare -f ext4,ext4nj,xfs,btrfs -w untar,rmrf
  amptrace compare -f ext4 --stack plain,lvm,crypt,raid1 -t journald,append
  amptrace compare -w bulk --json > bulk.json
  amptrace compare -w trickle:5:60 --html trickle.html
  amptrace compare --load bulk.json --html bulk.html""")
    p.add_argument("-f", "--fs", default=",".join(FILESYSTEMS),
                   help=f"filesystems, comma-separated (default: {','.join(FILESYSTEMS)})")
    p.add_argument("-t", "--targets", default=",".join(TARGETS),
                   help=f"targets, comma-separated (default: {','.join(TARGETS)})")
    p.add_argument("--journald", metavar="VERSIONS",
                   help="journald versions for the journald targets, comma-separated: "
                        "the host's, 257 (Debian 13's, in a chroot) or 252 (Debian 12's) "
                        "(default: the host's)")
    p.add_argument("-w", "--workload", action="append",
                   help="workload(s), see below (default: one,burst:10)")
    p.add_argument("--stack", default="plain",
                   help=f"storage stacks under each filesystem, comma-separated: "
                        f"{stacks.STACKS_HELP} (default: plain)")
    p.add_argument("--line-bytes", type=int, default=100,
                   help="bytes of a line's message, newline included (default 100)")
    p.add_argument("--fields", type=int, default=0,
                   help="extra fields per line: journald fields F1..FN, ' FN=value' in text "
                        "(default 0)")
    p.add_argument("--field-bytes", type=int, default=24,
                   help="bytes per extra field as text, ' FN=value' (default 24)")
    p.add_argument("--fs-size", type=int, default=1024,
                   help="loop filesystem size in MB (default 1024; xfs needs >= 300, "
                        "btrfs >= 114)")
    p.add_argument("--settle", type=float, default=6.0,
                   help="seconds without device writes before each window (default 6: "
                        "longer than ext4's 5 s journal commit)")
    p.add_argument("--scratch", help="folder for the images and traces (a fresh "
                                     "subfolder is made there; default: $TMPDIR)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document on stdout (the table goes to stderr)")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")
    p.add_argument("--load", metavar="JSON", help="render a saved --json document, run nothing")
    p.add_argument("--keep-scratch", action="store_true",
                   help="keep the traces and logs (images are always removed)")
    p.add_argument("--lock-timeout", type=float, default=900,
                   help="seconds to wait for another journald user (default 900)")
    p.add_argument("-v", "--verbose", action="store_true", help="log every step on stderr")
    a = p.parse_args(argv)
    a.filesystems = [x for x in a.fs.split(",") if x]
    a.targets = [x for x in a.targets.split(",") if x]
    a.workloads = [x for w in (a.workload or ["one,burst:10"]) for x in w.split(",") if x]
    for fs in a.filesystems:
        if fs not in FILESYSTEMS:
            raise UsageError(f"unknown filesystem '{fs}' (choose from {', '.join(FILESYSTEMS)})")
        if a.fs_size < FS_MIN_MB[fs]:
            raise UsageError(f"--fs-size {a.fs_size}: {fs} needs at least {FS_MIN_MB[fs]} MB")
    a.stacks = [x for x in a.stack.split(",") if x]
    for st in a.stacks:
        try:
            stacks.parse(st)
        except ValueError as e:
            raise UsageError(f"--stack: {e}")
    if not a.stacks or len(set(a.stacks)) != len(a.stacks):
        raise UsageError("--stack: one or more stacks, each once")
    a.journald_versions = [x for x in (a.journald or "").split(",") if x] or \
        catalog.default_versions()
    if any(not v.isdigit() for v in a.journald_versions) or \
       len(set(a.journald_versions)) != len(a.journald_versions):
        raise UsageError(f"--journald {a.journald}: versions like 252,257, each once")
    a.target_makers = catalog.expand(a.targets, a.journald_versions)
    if len(set(a.filesystems)) != len(a.filesystems):
        raise UsageError("a filesystem is listed twice")
    if not a.filesystems or not a.targets:
        raise UsageError("no filesystem or no target")
    if not 16 <= a.line_bytes <= 60000:
        raise UsageError("--line-bytes: 16 to 60000")
    if not 0 <= a.fields <= 64 or not 12 <= a.field_bytes <= 4096:
        raise UsageError("--fields: 0 to 64; --field-bytes: 12 to 4096")
    if a.settle < 0 or a.fs_size > 1 << 20:
        raise UsageError("--settle must be >= 0, --fs-size at most 1 TB")
    ws = [Workload(w) for w in a.workloads]       # validates
    if len({w.name for w in ws}) != len(ws):
        raise UsageError("a workload is listed twice")
    return a


def write_outputs(cfg, doc, table_out):
    if cfg.html:
        tmp = cfg.html + ".tmp"
        with open(tmp, "w") as f:
            f.write(render_html(doc))
        os.replace(tmp, cfg.html)
        print(f"{PROG}: wrote {cfg.html}", file=sys.stderr)
    if cfg.json:
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
        sys.stdout.flush()


def main(argv):
    install_signals()
    try:
        cfg = parse_args(argv)
    except UsageError as e:
        print(f"{PROG}: {e} (try --help)", file=sys.stderr)
        return 1
    util.VERBOSE = cfg.verbose
    table_out = sys.stderr if cfg.json else sys.stdout

    if cfg.load:
        try:
            with open(cfg.load) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{PROG}: --load {cfg.load}: {e}", file=sys.stderr)
            return 1
        if not cfg.json:
            fit(doc.get("results", []))
            print(header_text())
            for r in doc.get("results", []):
                print(row_text(r))
            for line in trees_text(doc.get("results", [])):
                print(line)
        write_outputs(cfg, doc, table_out)
        return 0

    if os.geteuid() != 0:
        print(f"{PROG}: needs root (loop devices, mounts, BPF)", file=sys.stderr)
        return 1
    for path, what in ((AMPTRACE, "amptrace binary"),):
        if not os.access(path, os.X_OK):
            print(f"{PROG}: {what} {path} not found (run make, or set AMPTRACE)",
                  file=sys.stderr)
            return 1

    cmp_ = Compare(cfg)
    rc = 0
    screen = None
    try:
        try:
            stacks.check_kernel(cfg.stacks)
            base = os.path.realpath(cfg.scratch or tempfile.gettempdir())
            if not os.path.isdir(base):
                raise Refused(f"scratch folder {base} does not exist")
            check_scratch(base)
            scratch = tempfile.mkdtemp(prefix="amptrace-compare.", dir=base)
            CLEANUP.push(f"rm -r {scratch}", _remove_scratch, scratch, cfg.keep_scratch)
            check_scratch(scratch)
            cmp_.scratch = scratch
            log(f"scratch folder {scratch}")
            title = (f"amptrace compare: {len(cfg.filesystems)} filesystems × "
                     + (f"{len(cfg.stacks)} stacks × " if cfg.stacks != ["plain"] else "") +
                     f"{len(cmp_.targets)} targets × {len(cmp_.workloads)} workloads; "
                     f"line {len(text_line(1, cfg))} B")
            screen = util.SCREEN = Screen(table_out, cmp_.rows, title)
            cmp_.run(screen)
        finally:
            CLEANUP.unwind()
    except Interrupted as e:
        cmp_.interrupted = str(e)
        rc = 128 + e.signum
    except Refused as e:
        print(f"{PROG}: refused: {e}", file=sys.stderr)
        return 1
    except RunFailed as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        rc = 1
    finally:
        if screen:
            screen.finish()
            util.SCREEN = None
    # Undo is done; signals now simply end us.
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
    if cmp_.interrupted:
        print(f"{PROG}: {cmp_.interrupted}: stopped; everything it set up is removed",
              file=sys.stderr)
    failed = [r for r in cmp_.rows if r["status"] == "failed"]
    if failed and rc == 0:
        rc = 1
        print(f"{PROG}: {len(failed)} of {len(cmp_.rows)} runs failed", file=sys.stderr)
    write_outputs(cfg, cmp_.document(), table_out)
    return rc


def _remove_scratch(path, keep):
    if not keep:
        rm_tree(path)
        log(f"removed {path}")
        return
    for n in os.listdir(path):            # images (and the tree's tar) always go
        if n.endswith((".img", ".tar")):
            os.unlink(os.path.join(path, n))
    print(f"{PROG}: traces and logs kept in {path}", file=sys.stderr)
