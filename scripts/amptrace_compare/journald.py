# SPDX-License-Identifier: GPL-2.0
"""journald targets: journald@VERSION[:Setting=value...].

Every journald here is private: a namespace instance (`systemd-journald
NAMESPACE`, a random unused name) whose storage is
/var/log/journal/MACHINE_ID.NAMESPACE (the loop filesystem is mounted
there) and whose sockets are /run/systemd/journal.NAMESPACE/.  A namespace
goes straight to persistent storage (no /run journal, no flush), stores
only what is sent to it (no kernel messages), and leaves a system journald
alone.  The host's own version runs from /lib/systemd; another (257: Debian
13) runs in a chroot on that release's tree (rootfs.py), where every path
above is inside the chroot.  Its settings are a drop-in,
journald@NAMESPACE.conf.d, under that root's /run: the host's journald and
its configuration are never touched.  journald 257 turns kernel audit on
(its Audit= default), also as a namespace: the host's audit state is put
back once it is gone.

Storage=volatile+rsyslog is the report's mitigation: journald keeps its
journal in memory (Storage=volatile, a tmpfs) and forwards every line
(ForwardToSyslog=yes, to /run/systemd/journal.NAMESPACE/syslog) to a
private rsyslogd whose file is on the loop filesystem."""
import contextlib
import fcntl
import os
import random
import re
import socket
import struct
import subprocess
import termios
import time

from . import audit, rootfs
from .devices import block_dev_of, loop_behind
from .paths import JOURNALD
from .targets import TAG, Rsyslogd, Target, line_text, text_line
from .util import CLEANUP, RunFailed, UsageError, log, mkdir_tracked, rm_rf_if_there, \
    rmdir_if_there, run, sleep, spawn, stop_process, wait_for, wait_progress

# Shared with tests/lib.sh: one standalone journald user at a time on a host
# (also for kernel audit, which journald 257 turns on).
JOURNALD_LOCK = "/run/lock/amptest-journald.lock"
# journald.conf [Journal] settings a target may name (journald.conf(5), 257).
SETTINGS = {
    "Storage", "Compress", "Seal", "SplitMode", "SyncIntervalSec", "RateLimitIntervalSec",
    "RateLimitBurst", "SystemMaxUse", "SystemKeepFree", "SystemMaxFileSize",
    "SystemMaxFiles", "RuntimeMaxUse", "RuntimeKeepFree", "RuntimeMaxFileSize",
    "RuntimeMaxFiles", "MaxRetentionSec", "MaxFileSec", "ForwardToSyslog", "ForwardToKMsg",
    "ForwardToConsole", "ForwardToWall", "ForwardToSocket", "MaxLevelStore",
    "MaxLevelSyslog", "MaxLevelKMsg", "MaxLevelConsole", "MaxLevelWall", "MaxLevelSocket",
    "LineMax", "ReadKMsg", "Audit",
}
MITIGATION = ("Storage", "volatile+rsyslog")
VOLATILE = ("Storage", "volatile")


def host_version():
    """The host's journald major version, or None if it has none."""
    if not os.access(JOURNALD, os.X_OK):
        return None
    # Not `systemd-journald --version`: journald takes argv[1] as a namespace.
    with contextlib.suppress(Exception):
        v = subprocess.run(["journalctl", "--version"], capture_output=True, text=True,
                           timeout=5).stdout
        m = re.match(r"systemd (\d+)", v)
        if m:
            return m.group(1)
    return None


def parse(spec, versions):
    """journald[@V][:K=V...] -> [(name, version, settings)], one per
    version (VERSIONS, from --journald, unless the spec names one)."""
    head, *opts = spec.split(":")
    m = re.fullmatch(r"journald(?:@(\d+))?", head)
    if not m:
        raise UsageError(f"unknown target '{spec}'")
    settings = []
    for o in opts:
        k, eq, v = o.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z0-9._+%-]+", v):
            raise UsageError(f"target '{spec}': '{o}' is not Setting=value")
        if k not in SETTINGS:
            raise UsageError(f"target '{spec}': {k} is not a journald.conf setting "
                             f"({', '.join(sorted(SETTINGS))})")
        if v == MITIGATION[1] and k != MITIGATION[0]:
            raise UsageError(f"target '{spec}': volatile+rsyslog is a Storage= value")
        settings.append((k, v))
    if len({k for k, _ in settings}) != len(settings):
        raise UsageError(f"target '{spec}': a setting is given twice")
    out = []
    for ver in [m.group(1)] if m.group(1) else versions:
        name = f"journald@{ver}" + "".join(f":{k}={v}" for k, v in settings)
        out.append((name, ver, settings))
    return out


def check_version(ver, host):
    if ver != host and ver not in rootfs.SUITES:
        have = [f"{v} (the host's)" if v == host else f"{v} (Debian {rootfs.SUITES[v]}'s)"
                for v in sorted(set(rootfs.SUITES) | ({host} if host else set()))]
        raise UsageError(f"journald {ver}: choose from {', '.join(have)}")


class JournaldTarget(Target):
    needs_journald_lock = True

    def __init__(self, cfg, scratch, name, version, settings):
        super().__init__(cfg, scratch)
        self.name, self.version, self.settings = name, version, settings
        self.forward = MITIGATION in settings
        self.volatile = self.forward or VOLATILE in settings
        self.host = version == host_version()
        self.root = ""          # the chroot; "" for the host's journald
        self.sock = self.rsyslog = None
        self.fwd_bytes = 0

    @property
    def preset(self):
        # With forwarding, the device's writer is rsyslogd.
        return "write" if self.forward else "journald"

    def trace_args(self):
        proc = self.rsyslog.proc if self.forward else self.proc
        return ["-p", str(proc.pid), "--preset", self.preset]

    def prepare(self):
        if self.host:
            if not os.access(JOURNALD, os.X_OK):
                raise RunFailed(f"{JOURNALD} not found")
        if self.forward:
            Rsyslogd.find()

    def check_mountpoint(self):
        """Under the journald lock: the host's /var/log/journal must not be
        someone else's loop filesystem (a test's journald), we would write
        into it."""
        mp = "/var/log/journal"
        if self.host and not self.volatile and os.path.ismount(mp):
            loop = loop_behind(*block_dev_of(mp))
            if loop:
                raise RunFailed(f"{mp} is a loop filesystem ({loop}) that is not ours; "
                                "not mounting inside it")

    def setup(self):
        if not self.host:
            self.root = rootfs.chroot(self.scratch, self.version)
        try:
            with open(f"{self.root}/etc/machine-id") as f:
                self.machine_id = f.read().strip()
        except OSError:
            raise RunFailed(f"no {self.root}/etc/machine-id (journald needs one)")
        r = self.root
        for _ in range(100):
            ns = "ampcmp" + "".join(random.choice("0123456789abcdef") for _ in range(8))
            if not os.path.lexists(f"{r}/run/systemd/journal.{ns}") and \
               not os.path.lexists(f"{r}/var/log/journal/{self.machine_id}.{ns}"):
                break
        self.ns = ns
        self.rundir = f"{r}/run/systemd/journal.{ns}"
        self.sock_path = f"{self.rundir}/socket"
        self.storage = f"{r}/{'run/log' if self.volatile else 'var/log'}/journal/" \
            f"{self.machine_id}.{ns}"

    def reach(self, path):
        """A socket PATH inside journald's root, as the host reaches it: through
        /proc/PID/root for a chroot, so that its address stays short (an
        AF_UNIX path has 108 bytes; the scratch folder may be long)."""
        return f"/proc/{self.proc.pid}/root{path}" if self.root else path

    def mountpoint(self, fs):
        if self.forward:
            return super().mountpoint(fs)
        return f"{self.root}/var/log/journal/{self.machine_id}.{self.ns}"

    def start(self, mnt, fs):
        r = self.root
        self.errlog = os.path.join(self.scratch, f"{self.slug}-{fs}.log")
        # Paths journald creates for a namespace; ours alone (unique name).
        for p in (self.rundir, f"{r}/run/log/journal/{self.machine_id}.{self.ns}"):
            CLEANUP.push(f"rm -r {p}", rm_rf_if_there, p)
        for p in (f"{r}/run/log/journal", f"{r}/run/log"):
            if not os.path.exists(p):
                CLEANUP.push(f"rmdir {p}", rmdir_if_there, p)
        if self.volatile:
            # In memory means a tmpfs (the chroot's /run is one; this
            # host's /run may not be).
            mkdir_tracked(self.storage)
            CLEANUP.push(f"umount {self.storage}", _umount_if_mounted, self.storage)
            run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=64m", "amptrace-compare-journal",
                 self.storage])
        # journald@NS.conf.d: no rate limit (100,000 lines in a burst must all
        # land), then the target's settings; everything else is journald's
        # default.
        dropin = f"{r}/run/systemd/journald@{self.ns}.conf.d"
        CLEANUP.push(f"rm -r {dropin}", rm_rf_if_there, dropin)
        os.makedirs(dropin)
        lines = ["RateLimitBurst=0"] + [f"{k}={v}" for k, v in self.settings if
                                        (k, v) != MITIGATION]
        if self.forward:
            lines += ["Storage=volatile", "ForwardToSyslog=yes"]
        with open(os.path.join(dropin, "amptrace-compare.conf"), "w") as f:
            f.write("# amptrace compare: temporary, removed at exit\n[Journal]\n" +
                    "\n".join(lines) + "\n")
        # journald 257 turns kernel audit on: put the host's state back once
        # it is gone (undo runs last-in first-out).
        CLEANUP.push("put kernel audit back", audit.put_back, audit.get())
        err = open(self.errlog, "wb")
        # The only argument is the namespace (journald reads argv[1] as one).
        argv = [JOURNALD, self.ns] if self.host else \
            ["chroot", r, "/usr/lib/systemd/systemd-journald", self.ns]
        self.proc = spawn(argv, stdout=err, stderr=err)
        err.close()
        CLEANUP.push(f"stop journald {self.proc.pid}", stop_process, self.proc, "journald")
        ok = wait_for(lambda: self.proc.poll() is not None or (
            os.path.exists(self.sock_path) and os.path.isdir(self.storage) and
            any(n.endswith(".journal") for n in os.listdir(self.storage))), 15)
        self.alive_or_fail()
        if not ok:
            raise RunFailed(f"journald: no socket/journal file within 15 s; see {self.errlog}")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        CLEANUP.push("close journald socket", self.sock.close)
        self.sock.connect(self.reach(f"/run/systemd/journal.{self.ns}/socket"))
        log(f"journald {self.version} namespace {self.ns}: {self.storage}")
        if self.forward:
            self.rsyslog = Rsyslogd(self.scratch, f"{self.slug}-{fs}-rsyslog")
            self.rsyslog.start(os.path.join(mnt, "amptrace-compare.log"),
                               self.reach(f"/run/systemd/journal.{self.ns}/syslog"))
            # One warm-up line through journald creates the log file.
            self.send(0)
            self.drain(15, lambda msg: None)
            self.begin()

    def begin(self):
        super().begin()
        self.fwd_bytes = 0
        if self.forward:
            self.fwd_base = self.rsyslog.size()

    def send(self, seq):
        body, fields = line_text(seq, self.cfg)
        msg = [f"MESSAGE={body}", "PRIORITY=6", f"SYSLOG_IDENTIFIER={TAG}"]
        msg += [f"{k}={v}" for k, v in fields]
        self.sock.send(("\n".join(msg) + "\n").encode())
        self.sent_lines += 1
        self.sent_bytes += len(text_line(seq, self.cfg))
        self.fwd_bytes += len(body) + 1     # forwarded: the message alone

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
        if self.forward:
            self.rsyslog.wait_file(getattr(self, "fwd_base", 0) + self.fwd_bytes, stall, prog)
        return time.monotonic()

    def after_drain(self):
        sleep(0.6)      # journald's 250 ms post-change timer, and a margin


def _umount_if_mounted(path):
    if os.path.ismount(path):
        run(["umount", path], check=False)
