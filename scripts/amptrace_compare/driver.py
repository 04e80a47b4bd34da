# SPDX-License-Identifier: GPL-2.0
"""The run: per filesystem and storage stack one device (a loop disk, or
the layers --stack names over loop disks); per target a fresh mkfs, the
target started and left to go quiet; per workload one traced window.  Rows
fill in as windows close; the JSON document is built from them."""
import contextlib
import datetime
import fcntl
import os
import platform
import subprocess
import time

from . import audit, catalog
from . import stacks
from .devices import check_not_under, devstat, mount_fs, wait_quiet
from .journald import JOURNALD_LOCK
from .targets import text_line
from .tracer import Tracer, result_from_summary
from .util import CLEANUP, RunFailed, log, sleep, syncfs
from .workloads import Workload


class Compare:
    def __init__(self, cfg):
        self.cfg = cfg
        self.workloads = [Workload(w) for w in cfg.workloads]
        # (name, make, its workloads): loggers take the line workloads, the
        # tree the file workloads.
        lines = [w for w in self.workloads if not w.files]
        files = [w for w in self.workloads if w.files]
        self.targets = [(n, m, lines) for n, m in cfg.target_makers if lines]
        if files:
            self.targets.append(catalog.tree() + (files,))
        self.rows = []
        for w in self.workloads:
            for fs in cfg.filesystems:
                for st in cfg.stacks:
                    for t, _, ws in self.targets:
                        if w in ws:
                            self.rows.append({"fs": fs, "stack": st, "target": t,
                                              "workload": w.name, "status": "pending"})
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.t0 = time.monotonic()
        self.complete = False
        self.interrupted = None

    def row(self, dev, target, wname):
        return next(r for r in self.rows if (r["fs"], r["stack"], r["target"], r["workload"])
                    == (dev.fs, dev.spec, target, wname))

    def document(self):
        cfg = self.cfg
        return {
            "type": "compare",
            # 2: journald targets named journald@VERSION[:settings]; rows
            # with unit, audit, startup_bytes, own_bytes, journald{}.
            # 3: a row per storage stack too: stack, disks, copies, layers[].
            "version": 3,
            "complete": self.complete,
            "interrupted": self.interrupted,
            "started": self.started.isoformat(timespec="seconds"),
            "duration_s": round(time.monotonic() - self.t0, 1),
            "host": host_info(),
            "config": {
                "filesystems": cfg.filesystems, "stacks": cfg.stacks,
                "targets": [t for t, _, _ in self.targets],
                "journald_versions": cfg.journald_versions,
                "workloads": [w.as_json() for w in self.workloads],
                "line_bytes": cfg.line_bytes, "fields": cfg.fields,
                "field_bytes": cfg.field_bytes, "fs_size_mb": cfg.fs_size,
                "settle_s": cfg.settle,
                "text_line_bytes": len(text_line(1, cfg)),
            },
            "results": [r for r in self.rows if r["status"] not in ("pending", "running")],
        }

    def run(self, screen):
        cfg = self.cfg
        total = len(self.rows)
        done = 0
        for fs in cfg.filesystems:
            for spec in cfg.stacks:
                with CLEANUP.scope():
                    try:
                        dev = stacks.Stack(self.scratch, fs, spec, cfg.fs_size)
                    except RunFailed as e:
                        self.fail_rows(fs, spec, None, e, screen)
                        done += sum(len(ws) for _, _, ws in self.targets)
                        continue
                    for tname, make, workloads in self.targets:
                        try:
                            self.run_target(dev, tname, make, workloads, screen, done, total)
                        except RunFailed as e:
                            self.fail_rows(fs, spec, tname, e, screen)
                        done += len(workloads)
        self.complete = True

    def fail_rows(self, fs, spec, tname, e, screen):
        """The rows of (fs, spec[, target]) not yet done fail with E."""
        for r in self.rows:
            if (r["fs"], r["stack"]) == (fs, spec) and tname in (None, r["target"]) and \
                    r["status"] in ("pending", "running"):
                r.update(status="failed", error=str(e))
                screen.row_done(r)
        log(f"{fs}/{spec}{'/' + tname if tname else ''}: {e}", always=not screen.tty)

    def run_target(self, dev, tname, make, workloads, screen, done, total):
        cfg = self.cfg
        where = dev.fs if dev.spec == "plain" else f"{dev.fs} on {dev.spec}"
        target = make(cfg, self.scratch)
        with CLEANUP.scope():
            prog = lambda msg: screen.progress(f"{where} · {tname}: {msg}")
            target.prepare()
            if target.needs_journald_lock:
                self.journald_lock(prog)
            target.check_mountpoint()
            target.setup()
            mp = target.mountpoint(dev.fs)
            check_not_under(self.scratch, mp)
            prog("mkfs")
            mount_fs(dev, mp)
            prog(f"starting {tname}")
            target.start(mp, dev.fs)
            prog(f"waiting for {dev.name} to go quiet ({cfg.settle:g} s)")
            sleep(1)
            syncfs(mp)
            wait_quiet(dev.disks, cfg.settle, cfg.settle * 5)
            log(f"{dev.name} quiet")
            seq = 1
            for i, w in enumerate(workloads):
                r = self.row(dev, tname, w.name)
                r["status"] = "running"
                label = f"[{done + i + 1}/{total}] {where} · {tname} · {w.name}"
                wprog = lambda msg, label=label: screen.progress(f"{label}: {msg}")
                try:
                    res = self.window(dev, mp, target, w, seq, wprog)
                except RunFailed as e:
                    r.update(status="failed", error=str(e))
                    screen.row_done(r)
                    log(f"{label}: {e}", always=not screen.tty)
                    target.alive_or_fail()
                    continue
                finally:
                    seq += w.lines
                r.update(res)
                r["status"] = "ok"
                screen.row_done(r)
                if i + 1 < len(workloads):
                    # The window ended with a syncfs and a quiet second, so
                    # nothing is pending: a shorter quiet spell will do.
                    q = min(cfg.settle, 2.0)
                    wprog(f"waiting for {dev.name} to go quiet ({q:g} s)")
                    wait_quiet(dev.disks, q, cfg.settle * 5)
            prog(f"stopping {tname}")

    def window(self, dev, mp, target, w, seq, prog):
        spec = "" if dev.spec == "plain" else "-" + dev.spec.replace("+", "-")
        tag = f"{dev.fs}{spec}-{target.slug}-{w.name.replace(':', '-')}"
        with CLEANUP.scope():
            if target.before_window(w, prog):
                wait_quiet(dev.disks, 1.0, 30)
            tracer = Tracer(self.scratch, tag)
            prog("starting amptrace")
            # Kernel audit on (journald 257's default): amptrace's program
            # loads become records journald stores.  Write those out before
            # the lines, and take that start-up off the row (tracer.py).
            audit_on = audit.get() in (1, 2)
            tracer.start(dev.name, target.trace_args(), metrics=audit_on)
            base = None
            if audit_on:
                prog("writing out amptrace's start-up (kernel audit is on)")
                syncfs(mp)
                wait_quiet(dev.disks, 1.0, 10)
                base = tracer.baseline(dev.disks, time.time())
                log(f"kernel audit on: {sum(base[0].values())} bytes written while amptrace "
                    "started, taken off the row")
            target.begin()
            c0 = base[2] if base else devstat(dev.disks)
            log("tracer attached")
            t0, t1 = w.run(target, seq, prog)
            log(f"{target.name} took {target.sent_lines} {'files' if w.files else 'lines'}")
            target.after_drain()
            if w.writeback_wait:
                end = time.monotonic() + w.writeback_wait
                while time.monotonic() < end:
                    prog(f"kernel write-back ({end - time.monotonic():.0f} s left)")
                    sleep(min(0.5, end - time.monotonic()))
            prog("syncfs")
            syncfs(mp)
            log("syncfs done")
            wait_quiet(dev.disks, 0.6, 10)
            prog("stopping amptrace")
            summary = tracer.stop()
            log("tracer summary read")
            c1 = devstat(dev.disks)
        res = result_from_summary(summary, dev.disks, target.sent_lines, target.sent_bytes,
                                  base, c1[1] - c0[1] if base else None)
        res["window_counter_bytes"] = c1[0] - c0[0]     # our own read, a cross-check
        res["elapsed_s"] = round(t1 - t0, 3)
        res["lines_per_s"] = (target.sent_lines / (t1 - t0)) if w.kind == "bulk" and t1 > t0 \
            else None
        res["device"] = dev.name
        res["disks"] = dev.disks
        res["copies"] = dev.copies
        res["layers"] = layer_rows(summary, dev)
        res["trace_preset"] = target.preset
        res["unit"] = "file" if w.files else "line"
        res["audit"] = audit_on
        if getattr(target, "version", None):
            res["journald"] = {"version": target.version, "chroot": bool(target.root),
                               "settings": dict(target.settings)}
        if not res["device_seen"]:
            raise RunFailed(f"not every disk of {' '.join(dev.disks)} in the tracer's summary")
        return res

    def journald_lock(self, prog):
        """Hold the host's journald lock (shared with tests/lib.sh) while our
        journald runs; released when the target's scope unwinds."""
        os.makedirs(os.path.dirname(JOURNALD_LOCK), exist_ok=True)
        fd = os.open(JOURNALD_LOCK, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        CLEANUP.push("release journald lock", os.close, fd)
        deadline = time.monotonic() + self.cfg.lock_timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                log(f"holding {JOURNALD_LOCK}")
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RunFailed(f"another journald user held {JOURNALD_LOCK} for "
                                    f"{self.cfg.lock_timeout} s")
                prog(f"waiting for {JOURNALD_LOCK} (another journald user)")
                sleep(0.5)


def layer_rows(summary, dev):
    """The stack's devices above its disks, as the tracer's summary has
    them: each one's classes (what amptrace charged at that layer) beside
    its own /sys/class/block counter.  With kernel audit on they hold
    amptrace's start-up too (the row's figures do not)."""
    out = []
    for d in summary.get("devices") or []:
        if d.get("name") in dev.layers and d.get("name") not in dev.disks:
            classes = {k: v for k, v in (d.get("classes") or {}).items()
                       if isinstance(v, int)}
            out.append({"name": d["name"], "layer": d.get("layer"), "walked": d.get("walked"),
                        "classes": classes, "bytes": sum(classes.values()),
                        "counter_bytes": d.get("counter_bytes")})
    return out


def host_info():
    info = {"kernel": platform.release(), "machine": platform.machine()}
    # Not `systemd-journald --version`: journald takes argv[1] as a namespace.
    with contextlib.suppress(Exception):
        v = subprocess.run(["journalctl", "--version"], capture_output=True, text=True, timeout=5)
        info["journald"] = v.stdout.split("\n")[0].strip()
    with contextlib.suppress(Exception):
        v = subprocess.run(["rsyslogd", "-v"], capture_output=True, text=True, timeout=5)
        info["rsyslog"] = v.stdout.split("\n")[0].split(" compiled")[0].strip().rstrip(",")
    return info
