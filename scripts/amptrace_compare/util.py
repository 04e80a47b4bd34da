# SPDX-License-Identifier: GPL-2.0
"""The ground floor: errors, log lines, the undo stack, signals, child
processes, waiting, and number formats.  Depends on nothing else here."""
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time


# ------------------------------------------------------------ messages ---

class UsageError(Exception):
    """Bad command line: one line, exit 1."""


class Refused(Exception):
    """A safety rule said no: one line, exit 1, nothing touched."""


class RunFailed(Exception):
    """One (filesystem, target) run failed; the compare goes on."""


class Interrupted(BaseException):
    """SIGINT/SIGTERM/SIGHUP: unwind everything, then exit 128+N."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


PROG = "amptrace compare"
# Set by the CLI: -v, and the live table (so log lines do not tear it).
VERBOSE = False
SCREEN = None
_T0 = time.monotonic()


def log(msg, always=False):
    if not (VERBOSE or always):
        return
    if SCREEN:
        SCREEN.clear()
    stamp = f"[{time.monotonic() - _T0:6.1f}] " if VERBOSE else ""
    print(f"{PROG}: {stamp}{msg}", file=sys.stderr, flush=True)
    if SCREEN:
        SCREEN.redraw()


# ------------------------------------------------------------- cleanup ---

class Cleanup:
    """A LIFO stack of undo steps.  Every step is pushed *before* the action
    it undoes, and checks what is there, so an interrupt between the two
    leaves nothing behind.  Signals that arrive while steps run are held and
    re-raised afterwards, so an undo is never cut in half."""

    def __init__(self):
        self.stack = []
        self.depth = 0          # > 0 while unwinding: signals are deferred
        self.pending = None

    def push(self, what, fn, *args):
        self.stack.append((what, fn, args))

    def mark(self):
        return len(self.stack)

    @contextlib.contextmanager
    def scope(self):
        m = self.mark()
        try:
            yield
        finally:
            self.unwind(m)

    def unwind(self, mark=0):
        self.depth += 1
        try:
            while len(self.stack) > mark:
                what, fn, args = self.stack.pop()
                try:
                    fn(*args)
                except Exception as e:          # one failed step never skips the rest
                    log(f"cleanup: {what}: {e}", always=True)
        finally:
            self.depth -= 1
        if self.depth == 0 and self.pending:
            signum, self.pending = self.pending, None
            raise Interrupted(signum)


CLEANUP = Cleanup()


def _on_signal(signum, frame):
    if CLEANUP.depth:
        if not CLEANUP.pending:
            log(f"{signal.Signals(signum).name}: still cleaning up, one moment", always=True)
        CLEANUP.pending = CLEANUP.pending or signum
        return
    if SCREEN and SCREEN.tty:
        SCREEN.status = f"{signal.Signals(signum).name}: stopping, cleaning up"
    else:
        log(f"{signal.Signals(signum).name}: stopping, cleaning up", always=True)
    raise Interrupted(signum)


def install_signals():
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)


# -------------------------------------------------------------- helpers ---

_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def _child_setup():
    # Own session: a terminal's Ctrl-C reaches only this driver, which stops
    # its children in order.  PDEATHSIG: if the driver is SIGKILLed, they go too.
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def spawn(argv, **kw):
    kw.setdefault("stdin", subprocess.DEVNULL)
    try:
        p = subprocess.Popen(argv, start_new_session=True, preexec_fn=_child_setup, **kw)
    except OSError as e:
        raise RunFailed(f"{argv[0]}: {e.strerror}")
    log(f"started {os.path.basename(argv[0])} pid {p.pid}")
    return p


def run(argv, timeout=120, check=True, input=None):
    """argv to its end; INPUT (text) on its stdin, else none."""
    try:
        r = subprocess.run(argv, input=input, stdin=None if input is not None else
                           subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise RunFailed(f"{argv[0]}: not installed")
    except subprocess.TimeoutExpired:
        raise RunFailed(f"{' '.join(argv)}: timed out after {timeout} s")
    if check and r.returncode != 0:
        msg = (r.stderr or r.stdout).strip().splitlines()
        raise RunFailed(f"{' '.join(argv)}: exit {r.returncode}: {msg[-1] if msg else ''}")
    return r


def sleep(seconds):
    time.sleep(max(0.0, seconds))
    if SCREEN:
        SCREEN.progress(SCREEN.status)      # keeps the clock ticking


def wait_for(cond, timeout, step=0.1):
    deadline = time.monotonic() + timeout
    while True:
        if cond():
            return True
        if time.monotonic() >= deadline:
            return False
        sleep(step)


def wait_progress(done, measure, stall_s, report=None):
    """Poll until done(); give up only when measure() has not changed for
    stall_s seconds (a slow target is fine, a stuck one is not)."""
    last, since = measure(), time.monotonic()
    while not done():
        sleep(0.05)
        cur = measure()
        if cur != last:
            last, since = cur, time.monotonic()
            if report:
                report(cur)
        elif time.monotonic() - since > stall_s:
            return False
    return True


def stop_process(proc, name, sig=signal.SIGTERM, timeout=10):
    """Signal, wait, SIGKILL if ignored, reap."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        log(f"{name} ({proc.pid}) ignored {signal.Signals(sig).name}; SIGKILL", always=True)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(10)
    log(f"stopped {name} pid {proc.pid}")


def syncfs(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _libc.syncfs(fd) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"syncfs {path}: {os.strerror(e)}")
    finally:
        os.close(fd)


def mkdir_tracked(path):
    """mkdir -p, registering an rmdir for each level it creates."""
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        p = os.path.dirname(p)
    for d in reversed(missing):
        CLEANUP.push(f"rmdir {d}", rmdir_if_there, d)
        os.mkdir(d)


def rmdir_if_there(d):
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(d)


def rm_tree(top):
    """rm -r that stays on TOP's filesystem: a mount point below it (a
    chroot's /sys or /proc whose unmount failed) is never entered; it is
    named, and the removal fails rather than reach into the host."""
    if not os.path.lexists(top):
        return
    dev = os.lstat(top).st_dev
    skipped, dirs_seen = [], []
    for d, dirs, files in os.walk(top):
        dirs_seen.append(d)
        for n in list(dirs):
            p = os.path.join(d, n)
            if os.path.islink(p):
                files.append(n)
                dirs.remove(n)
            elif os.lstat(p).st_dev != dev or os.path.ismount(p):
                skipped.append(p)
                dirs.remove(n)
        for n in files:
            os.unlink(os.path.join(d, n))
    for d in reversed(dirs_seen):
        if not any(s.startswith(d + "/") for s in skipped):
            os.rmdir(d)
    if skipped:
        raise OSError(f"left {', '.join(skipped)}: another filesystem is mounted there")


def rm_rf_if_there(p):
    if os.path.isdir(p) and not os.path.islink(p):
        rm_tree(p)
    elif os.path.lexists(p):
        os.unlink(p)


def fs_text(r):
    """A row's filesystem: ext4, or ext4/lvm+crypt on a storage stack
    (rows made before --stack have none)."""
    st = r.get("stack", "plain")
    return r["fs"] if st == "plain" else f"{r['fs']}/{st}"


def fmt_bytes(n):
    if n is None:
        return "-"
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if abs(n) >= div:
            return f"{n / div:.1f}{unit}"
    return str(int(n))


def fmt_int(n):
    return "-" if n is None else f"{int(round(n)):,}"


def fmt_small(x):
    """2 decimals, or 2 significant digits below 0.1 (bulk: 0.0041)."""
    if x is None:
        return "-"
    return f"{x:,.2f}" if x >= 0.1 or x == 0 else f"{x:.2g}"


def fmt_pct(x):
    return "-" if x is None else f"{100 * x:.0f}%"
