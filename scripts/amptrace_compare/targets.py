# SPDX-License-Identifier: GPL-2.0
"""The log targets: what a line is, and the loggers that take it
(journald in a private namespace, a private rsyslogd, the O_APPEND
writer), each started on a loop filesystem and drained to the last line."""
import contextlib
import fcntl
import os
import random
import re
import select
import shutil
import socket
import struct
import subprocess
import termios
import time

from .devices import block_dev_of, loop_behind
from .paths import APPEND_WRITER, JOURNALD
from .util import CLEANUP, RunFailed, rm_rf_if_there, rmdir_if_there, run, sleep, spawn, \
    stop_process, wait_for, wait_progress

# Shared with tests/lib.sh: one standalone journald user at a time on a host.
JOURNALD_LOCK = "/run/lock/amptest-journald.lock"
TAG = "amptrace-compare"            # syslog tag / SYSLOG_IDENTIFIER
TARGETS = ["journald", "rsyslog", "append", "append+fdatasync"]
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
        return re.sub(r"[^a-z0-9]+", "-", self.name)

    def trace_args(self):
        return ["-p", str(self.proc.pid), "--preset", self.preset]

    def check_mountpoint(self):
        pass

    def begin(self):
        """A window starts: count lines and bytes from here."""
        self.sent_lines = self.sent_bytes = 0
        if getattr(self, "logfile", None):
            self.base_size = os.path.getsize(self.logfile)

    def alive_or_fail(self):
        if self.proc.poll() is not None:
            raise RunFailed(f"{self.name} exited ({self.proc.returncode}); see {self.errlog}")


class JournaldTarget(Target):
    """A standalone systemd-journald in a private namespace: its storage is
    /var/log/journal/MACHINE_ID.NAMESPACE (our loop filesystem is mounted
    there), its sockets /run/systemd/journal.NAMESPACE/.  A namespace goes
    straight to persistent storage (no /run journal, no flush), and does not
    collide with a system journald.  Lines are native-protocol datagrams."""
    name = "journald"
    preset = "journald"
    needs_journald_lock = True

    def __init__(self, cfg, scratch):
        super().__init__(cfg, scratch)
        try:
            with open("/etc/machine-id") as f:
                self.machine_id = f.read().strip()
        except OSError:
            self.machine_id = "none"
        for _ in range(100):
            ns = "ampcmp" + "".join(random.choice("0123456789abcdef") for _ in range(8))
            if not os.path.lexists(f"/run/systemd/journal.{ns}") and \
               not os.path.lexists(f"/var/log/journal/{self.machine_id}.{ns}"):
                break
        self.ns = ns
        self.rundir = f"/run/systemd/journal.{ns}"
        self.sock_path = f"{self.rundir}/socket"
        self.sock = None

    def mountpoint(self, fs):
        return f"/var/log/journal/{self.machine_id}.{self.ns}"

    def prepare(self):
        if not os.access(JOURNALD, os.X_OK):
            raise RunFailed(f"{JOURNALD} not found")
        if not os.path.exists("/etc/machine-id"):
            raise RunFailed("no /etc/machine-id (journald needs one)")

    def check_mountpoint(self):
        """Under the journald lock: /var/log/journal must not be someone
        else's loop filesystem (a test's journald), we would write into it."""
        mp = "/var/log/journal"
        if os.path.ismount(mp):
            maj, mnr = block_dev_of(mp)
            loop = loop_behind(maj, mnr)
            if loop:
                raise RunFailed(f"{mp} is a loop filesystem ({loop}) that is not ours; "
                                "not mounting inside it")

    def start(self, mnt, fs):
        self.errlog = os.path.join(self.scratch, f"journald-{fs}.log")
        # Paths journald creates for a namespace; ours alone (unique name).
        for p in (self.rundir, f"/run/log/journal/{self.machine_id}.{self.ns}"):
            CLEANUP.push(f"rm -r {p}", rm_rf_if_there, p)
        for p in ("/run/log/journal", "/run/log"):
            if not os.path.exists(p):
                CLEANUP.push(f"rmdir {p}", rmdir_if_there, p)
        # journald@NS.conf.d: no rate limit (100,000 lines in a burst must all
        # land); everything else is journald's default.
        dropin = f"/run/systemd/journald@{self.ns}.conf.d"
        CLEANUP.push(f"rm -r {dropin}", rm_rf_if_there, dropin)
        os.makedirs(dropin)
        with open(os.path.join(dropin, "amptrace-compare.conf"), "w") as f:
            f.write("# amptrace compare: temporary, removed at exit\n"
                    "[Journal]\nRateLimitBurst=0\n")
        err = open(self.errlog, "wb")
        # The only argument is the namespace (journald reads argv[1] as one).
        self.proc = spawn([JOURNALD, self.ns], stdout=err, stderr=err)
        err.close()
        CLEANUP.push(f"stop journald {self.proc.pid}", stop_process, self.proc, "journald")
        ok = wait_for(lambda: self.proc.poll() is not None or (
            os.path.exists(self.sock_path) and
            any(n.endswith(".journal") for n in os.listdir(mnt))), 15)
        self.alive_or_fail()
        if not ok:
            raise RunFailed(f"journald: no socket/journal file within 15 s; see {self.errlog}")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        CLEANUP.push("close journald socket", self.sock.close)
        self.sock.connect(self.sock_path)

    def send(self, seq):
        body, fields = line_text(seq, self.cfg)
        msg = [f"MESSAGE={body}", "PRIORITY=6", f"SYSLOG_IDENTIFIER={TAG}"]
        msg += [f"{k}={v}" for k, v in fields]
        self.sock.send(("\n".join(msg) + "\n").encode())
        self.sent_lines += 1
        self.sent_bytes += len(text_line(seq, self.cfg))

    def flush(self):
        pass

    def drain(self, stall, prog):
        # A datagram stays charged to the sender's socket (SIOCOUTQ) until
        # journald has received it; then it is written at once.  journald
        # then arms a 250 ms timer (ftruncate, to wake readers): after_drain.
        def outq():
            return struct.unpack("i", fcntl.ioctl(self.sock.fileno(), termios.TIOCOUTQ,
                                                  struct.pack("i", 0)))[0]
        if not wait_progress(lambda: outq() == 0 or self.proc.poll() is not None, outq, stall,
                             lambda q: prog(f"journald has {q:,} bytes of datagrams to take")):
            raise RunFailed(f"journald took none of its datagrams for {stall:.0f} s")
        self.alive_or_fail()
        return time.monotonic()

    def after_drain(self):
        sleep(0.6)      # journald's 250 ms post-change timer, and a margin


class RsyslogTarget(Target):
    """A private rsyslogd (config and socket in the scratch folder) writing
    exactly one text line per message to a file on the loop filesystem."""
    name = "rsyslog"

    def prepare(self):
        self.bin = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"
        if not os.access(self.bin, os.X_OK):
            raise RunFailed("rsyslogd not installed")

    def start(self, mnt, fs):
        d = os.path.join(self.scratch, f"rsyslog-{fs}")
        os.mkdir(d)
        self.logfile = os.path.join(mnt, "amptrace-compare.log")
        self.sock_path = os.path.join(d, "sock")
        self.errlog = os.path.join(d, "rsyslogd.log")
        conf = os.path.join(d, "rsyslog.conf")
        # As tests/lib.sh start_rsyslog: only our tag, exactly "%msg%\n"; omfile's
        # defaults (4 KiB buffer, flushed at the end of each batch).
        with open(conf, "w") as f:
            f.write(f'''global(workDirectory="{d}")
module(load="imuxsock" SysSock.Use="off")
parser(name="amp.rfc3164" type="pmrfc3164" remove.msgFirstSpace="on")
template(name="amp.msgonly" type="string" string="%msg%\\n")
ruleset(name="amp" parser="amp.rfc3164") {{
    if $programname == "{TAG}" then
        action(type="omfile" file="{self.logfile}" template="amp.msgonly")
    stop
}}
input(type="imuxsock" Socket="{self.sock_path}" ruleset="amp" useSpecialParser="off"
      RateLimit.Interval="0")
''')
        run([self.bin, "-N1", "-f", conf])
        err = open(self.errlog, "wb")
        self.proc = spawn([self.bin, "-n", "-f", conf, "-i", os.path.join(d, "pid")],
                          stdout=err, stderr=err)
        err.close()
        CLEANUP.push(f"stop rsyslogd {self.proc.pid}", stop_process, self.proc, "rsyslogd")
        if not wait_for(lambda: os.path.exists(self.sock_path) or self.proc.poll() is not None, 15):
            raise RunFailed(f"rsyslogd: no socket within 15 s; see {self.errlog}")
        self.alive_or_fail()
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
        want = self.base_size + self.sent_bytes

        def size():
            try:
                return os.stat(self.logfile).st_size     # stat: no atime, no write
            except FileNotFoundError:
                return 0
        if not wait_progress(lambda: size() >= want or self.proc.poll() is not None, size, stall,
                             lambda n: prog(f"rsyslog wrote {n:,} of {want:,} bytes")):
            raise RunFailed(f"rsyslog stuck at {size()} of {want} bytes for {stall:.0f} s")
        self.alive_or_fail()
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


def make_target(name, cfg, scratch):
    if name == "journald":
        return JournaldTarget(cfg, scratch)
    if name == "rsyslog":
        return RsyslogTarget(cfg, scratch)
    return AppendTarget(cfg, scratch, fdatasync=name == "append+fdatasync")
