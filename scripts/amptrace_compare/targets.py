# SPDX-License-Identifier: GPL-2.0
"""The log targets: what a line is, the target names (-t), and the loggers
that take a line (a private rsyslogd, the O_APPEND writer; journald is in
journald.py, the untar / rm -rf tree in tree.py), each started on a loop
filesystem and drained to the last line."""
import contextlib
import os
import re
import select
import shutil
import socket
import subprocess
import time

from .paths import APPEND_WRITER
from .util import CLEANUP, RunFailed, run, sleep, spawn, stop_process, wait_for, wait_progress

TAG = "amptrace-compare"            # syslog tag / SYSLOG_IDENTIFIER
TARGETS = ["journald", "rsyslog", "append", "append+fdatasync"]
# Not a logger: the filesystem alone, for the metadata workloads.
TREE = "tree"
FILLER = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod "
          "tempor incididunt ut labore et dolore magna aliqua ")


# -------------------------------------------------------------- targets ---

def line_text(seq, cfg):
    """The line as a text logger writes it (newline included).  Unique per
    line (its number), filler text after it, then the extra fields."""
    head = f"{TAG} line {seq:09d} "
    body_len = max(cfg.line_bytes - 1, len(head))
    body = (head + FILLER * (body_len // len(FILLER) + 1))[:body_len]
    return body, fields_of(seq, cfg)


def fields_of(seq, cfg):
    out = []
    for i in range(1, cfg.fields + 1):
        key = f"F{i}"
        vlen = max(cfg.field_bytes - len(key) - 2, 9)   # " key=value"
        out.append((key, (f"{seq:09d}" + "v" * vlen)[:vlen]))
    return out


def text_line(seq, cfg):
    body, fields = line_text(seq, cfg)
    return body + "".join(f" {k}={v}" for k, v in fields) + "\n"


class Target:
    name = ""
    preset = "write"
    needs_journald_lock = False

    def __init__(self, cfg, scratch):
        self.cfg, self.scratch = cfg, scratch
        self.proc = None
        self.sent_lines = 0
        self.sent_bytes = 0

    def mountpoint(self, fs):
        return os.path.join(self.scratch, f"mnt-{fs}-{self.slug}")

    @property
    def slug(self):
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")

    def trace_args(self):
        return ["-p", str(self.proc.pid), "--preset", self.preset]

    def check_mountpoint(self):
        pass

    def setup(self):
        """Under the journald lock, before the mount: what the mount point
        needs (journald's chroot)."""

    def before_window(self, w, prog):
        """Before the tracer starts (the tree's gated tar); True if the
        device was written meanwhile."""
        return False

    def begin(self):
        """A window starts: count lines and bytes from here."""
        self.sent_lines = self.sent_bytes = 0
        if getattr(self, "logfile", None):
            self.base_size = os.path.getsize(self.logfile)

    def alive_or_fail(self):
        if self.proc.poll() is not None:
            raise RunFailed(f"{self.name} exited ({self.proc.returncode}); see {self.errlog}")


class Rsyslogd:
    """A private rsyslogd (config and work folder in the scratch folder)
    reading one socket and writing exactly "%msg%\\n" of our tag's messages
    to a file on the loop filesystem; omfile's defaults (4 KiB buffer,
    flushed at the end of each batch), as tests/lib.sh start_rsyslog."""

    def __init__(self, scratch, name):
        self.dir = os.path.join(scratch, name)
        self.bin = self.find()
        self.proc = None
        self.errlog = os.path.join(self.dir, "rsyslogd.log")

    @staticmethod
    def find():
        path = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"
        if not os.access(path, os.X_OK):
            raise RunFailed("rsyslogd not installed")
        return path

    def start(self, logfile, sock_path):
        os.mkdir(self.dir)
        self.logfile = logfile
        conf = os.path.join(self.dir, "rsyslog.conf")
        with open(conf, "w") as f:
            f.write(f'''global(workDirectory="{self.dir}")
module(load="imuxsock" SysSock.Use="off")
parser(name="amp.rfc3164" type="pmrfc3164" remove.msgFirstSpace="on")
template(name="amp.msgonly" type="string" string="%msg%\\n")
ruleset(name="amp" parser="amp.rfc3164") {{
    if $programname == "{TAG}" then
        action(type="omfile" file="{logfile}" template="amp.msgonly")
    stop
}}
input(type="imuxsock" Socket="{sock_path}" ruleset="amp" useSpecialParser="off"
      RateLimit.Interval="0")
''')
        run([self.bin, "-N1", "-f", conf])
        err = open(self.errlog, "wb")
        self.proc = spawn([self.bin, "-n", "-f", conf, "-i", os.path.join(self.dir, "pid")],
                          stdout=err, stderr=err)
        err.close()
        CLEANUP.push(f"stop rsyslogd {self.proc.pid}", stop_process, self.proc, "rsyslogd")
        if not wait_for(lambda: os.path.exists(sock_path) or self.proc.poll() is not None, 15):
            raise RunFailed(f"rsyslogd: no socket within 15 s; see {self.errlog}")
        self.alive_or_fail()

    def alive_or_fail(self):
        if self.proc.poll() is not None:
            raise RunFailed(f"rsyslogd exited ({self.proc.returncode}); see {self.errlog}")

    def size(self):
        try:
            return os.stat(self.logfile).st_size     # stat: no atime, no write
        except FileNotFoundError:
            return 0

    def wait_file(self, want, stall, prog):
        """Until the file holds WANT bytes; stuck for STALL s is a failure."""
        if not wait_progress(lambda: self.size() >= want or self.proc.poll() is not None,
                             self.size, stall,
                             lambda n: prog(f"rsyslog wrote {n:,} of {want:,} bytes")):
            raise RunFailed(f"rsyslog stuck at {self.size()} of {want} bytes for {stall:.0f} s")
        self.alive_or_fail()


class RsyslogTarget(Target):
    """A private rsyslogd taking our lines on a socket in the scratch
    folder, one text line per message in a file on the loop filesystem."""
    name = "rsyslog"

    def prepare(self):
        Rsyslogd.find()

    def start(self, mnt, fs):
        d = self.daemon = Rsyslogd(self.scratch, f"rsyslog-{fs}")
        self.sock_path = os.path.join(d.dir, "sock")
        self.errlog = d.errlog
        d.start(os.path.join(mnt, "amptrace-compare.log"), self.sock_path)
        self.proc = d.proc
        self.logfile = d.logfile
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        CLEANUP.push("close rsyslog socket", self.sock.close)
        self.sock.connect(self.sock_path)
        # One warm-up line creates the log file: its creation is set-up, not
        # the cost of any measured line (journald's file exists beforehand too).
        self.send(0)
        self.base_size = 0
        self.drain(15, lambda msg: None)

    def send(self, seq):
        line = text_line(seq, self.cfg)
        stamp = time.strftime("%b %e %H:%M:%S")
        self.sock.send(f"<14>{stamp} {TAG}: {line[:-1]}".encode())
        self.sent_lines += 1
        self.sent_bytes += len(line)

    def flush(self):
        pass

    def drain(self, stall, prog):
        self.daemon.wait_file(self.base_size + self.sent_bytes, stall, prog)
        return time.monotonic()

    def after_drain(self):
        sleep(0.3)


class AppendTarget(Target):
    """tests/append_writer: O_APPEND, one write() per line (+ fdatasync)."""

    def __init__(self, cfg, scratch, fdatasync):
        super().__init__(cfg, scratch)
        self.fdatasync = fdatasync
        self.name = "append+fdatasync" if fdatasync else "append"
        self.acked = 0

    def prepare(self):
        if not os.access(APPEND_WRITER, os.X_OK):
            raise RunFailed(f"{APPEND_WRITER} missing (run make)")

    def start(self, mnt, fs):
        self.errlog = os.path.join(self.scratch, f"{self.slug}-{fs}.log")
        err = open(self.errlog, "wb")
        self.logfile = os.path.join(mnt, "append.log")
        argv = [APPEND_WRITER] + (["-s"] if self.fdatasync else []) + [self.logfile]
        self.proc = spawn(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        err.close()
        CLEANUP.push(f"stop append_writer {self.proc.pid}", self._stop)
        self.out = self.proc.stdout
        # One warm-up line, as for rsyslog: the file's creation and its first
        # block are set-up, not the cost of a measured line.
        self.send(0)
        self._ack(15)
        if self.acked != 1:
            raise RunFailed(f"append_writer wrote {self.acked} warm-up lines, not 1")

    def _stop(self):
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        stop_process(self.proc, "append_writer")

    def _ack(self, stall, prog=None):
        """Send the marker; its answer comes once every line before it is
        written (and synced).  Meanwhile the file's size shows progress."""
        try:
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.alive_or_fail()
        want = self.sent_bytes

        def size():
            try:
                return os.stat(self.logfile).st_size
            except FileNotFoundError:
                return 0
        base = getattr(self, "base_size", 0)
        ready = lambda: bool(select.select([self.out], [], [], 0)[0]) or \
            self.proc.poll() is not None
        wait_progress(ready, size, stall,
                      prog and (lambda n: prog(f"written {n - base:,} of {want:,} bytes")))
        line = self.out.readline().decode() if ready() else ""
        if not line.startswith("ok "):
            self.alive_or_fail()
            raise RunFailed(f"append_writer made no progress for {stall:.0f} s")
        self.acked = int(line.split()[1])

    def send(self, seq):
        line = text_line(seq, self.cfg)
        self.proc.stdin.write(line.encode())
        self.sent_lines += 1
        self.sent_bytes += len(line)

    def flush(self):
        self.proc.stdin.flush()

    def drain(self, stall, prog):
        want = self.acked + self.sent_lines
        self._ack(stall, prog)
        if self.acked != want:
            raise RunFailed(f"append_writer wrote {self.acked} lines, expected {want}")
        return time.monotonic()

    def after_drain(self):
        pass
