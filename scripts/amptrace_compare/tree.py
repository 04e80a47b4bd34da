# SPDX-License-Identifier: GPL-2.0
"""The metadata-heavy pair on a filesystem alone (target `tree`): a
generated source tree untarred onto the loop filesystem (untar:N), and
removed with rm -rf (rmrf:N), each followed by a syncfs.  What a
filesystem journal costs on metadata-heavy work, journaled against not.

The tree is N files in N/16 directories two levels deep, sizes drawn from a
log-normal (median 3 KB, like source files; at most 512 KB), seeded by N so
every run and every filesystem gets the same bytes.  It is written once per
compare as an uncompressed tar in the scratch folder (one process, no
decompressor child), so tar is the only writer.  tar and rm start behind a
gate (`sh -c 'read go && exec ...'`), so the tracer follows their pid from
the first write."""
import contextlib
import io
import math
import os
import random
import shutil
import subprocess
import tarfile
import time

from .targets import TREE, Target
from .util import CLEANUP, RunFailed, log, spawn, stop_process, syncfs, wait_progress

PAGE = 4096
MTIME = 1_700_000_000            # fixed: the same archive bytes every run
_archives = {}


def archive(scratch, nfiles):
    """(path, bytes, pages) of the tree's tar in SCRATCH, made once."""
    key = (scratch, nfiles)
    if key in _archives:
        return _archives[key]
    rng = random.Random(nfiles)
    ndirs = max(1, nfiles // 16)
    top = max(1, round(math.sqrt(ndirs)))
    dirs = [f"tree-{nfiles}/d{i % top:02d}/s{i // top:02d}" for i in range(ndirs)]
    path = os.path.join(scratch, f"tree-{nfiles}.tar")
    total = pages = 0
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tf:
        made = set()
        for d in dirs:
            parts = d.split("/")
            for i in range(1, len(parts) + 1):
                p = "/".join(parts[:i])
                if p not in made:
                    made.add(p)
                    ti = tarfile.TarInfo(p)
                    ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, MTIME
                    tf.addfile(ti)
        for i in range(nfiles):
            size = min(int(rng.lognormvariate(math.log(3000), 1.2)), 512 << 10)
            ti = tarfile.TarInfo(f"{dirs[i % ndirs]}/f{i:06d}.c")
            ti.size, ti.mode, ti.mtime = size, 0o644, MTIME
            tf.addfile(ti, io.BytesIO(rng.randbytes(size)))
            total += size
            pages += -(-size // PAGE)
    log(f"tree of {nfiles} files in {len(made)} directories: {total:,} bytes, {pages:,} pages, "
        f"{path}")
    _archives[key] = (path, total, pages)
    return _archives[key]


class TreeTarget(Target):
    name = TREE

    def prepare(self):
        for tool in ("tar", "rm", "sh"):
            if not shutil.which(tool):
                raise RunFailed(f"{tool} not installed")

    def start(self, mnt, fs):
        self.mnt, self.fs = mnt, fs
        self.errlog = os.path.join(self.scratch, f"tree-{fs}.log")
        self.present = set()            # trees on the filesystem now
        self.gate = None

    def alive_or_fail(self):
        pass

    def before_window(self, w, prog):
        """Put the gated tar or rm in place; an rm -rf of a tree that is not
        there yet untars it first (unmeasured).  True if that wrote."""
        path, total, pages = archive(self.scratch, w.lines)
        tree = os.path.join(self.mnt, f"tree-{w.lines}")
        wrote = False
        if w.kind == "rmrf" and w.lines not in self.present:
            prog(f"untarring the tree of {w.lines:,} files to remove")
            self._run(["tar", "-xf", path, "-C", self.mnt])
            self.present.add(w.lines)
            syncfs(self.mnt)
            wrote = True
        if w.kind == "untar" and os.path.lexists(tree):
            raise RunFailed(f"{tree} is there already")
        argv = ["tar", "-xf", path, "-C", self.mnt] if w.kind == "untar" else \
            ["rm", "-rf", "--one-file-system", tree]
        self.files, self.bytes, self.pages = w.lines, total, pages
        err = open(self.errlog, "ab")
        self.gate = spawn(["sh", "-c", 'read go && exec "$@"', "amptrace-compare-gate"] + argv,
                          stdin=subprocess.PIPE, stdout=err, stderr=err)
        err.close()
        CLEANUP.push(f"stop {argv[0]} {self.gate.pid}", self._stop_gate, self.gate)
        self.proc = self.gate
        return wrote

    def _stop_gate(self, gate):
        with contextlib.suppress(OSError):
            gate.stdin.close()
        stop_process(gate, "gate")

    def _run(self, argv):
        err = open(self.errlog, "ab")
        p = spawn(argv, stdout=err, stderr=err)
        err.close()
        CLEANUP.push(f"stop {argv[0]} {p.pid}", stop_process, p, argv[0])
        if p.wait() != 0:
            raise RunFailed(f"{' '.join(argv)}: exit {p.returncode}; see {self.errlog}")

    def run_files(self, w, progress):
        """Open the gate, wait for tar or rm, then syncfs: the time of both."""
        gate = self.gate
        t0 = time.monotonic()
        gate.stdin.write(b"go\n")
        gate.stdin.close()

        def used():             # files, blocks, and the process's CPU time
            st = os.statvfs(self.mnt)
            try:
                with open(f"/proc/{gate.pid}/stat") as f:
                    cpu = f.read().rsplit(")", 1)[1].split()[11:13]
            except OSError:
                cpu = None
            return st.f_ffree, st.f_bfree, cpu
        verb = "untarring" if w.kind == "untar" else "removing"
        if not wait_progress(lambda: gate.poll() is not None, used, 120,
                             lambda _: progress(f"{verb} {w.lines:,} files")):
            raise RunFailed(f"{w.kind}: no progress for 120 s")
        if gate.returncode != 0:
            raise RunFailed(f"{w.kind}: exit {gate.returncode}; see {self.errlog}")
        if w.kind == "untar":
            self.present.add(w.lines)
        else:
            self.present.discard(w.lines)
        progress("syncfs")
        syncfs(self.mnt)
        t1 = time.monotonic()
        self.sent_lines, self.sent_bytes = self.files, self.bytes
        return t0, t1

    def drain(self, stall, prog):
        return time.monotonic()

    def flush(self):
        pass

    def after_drain(self):
        pass
