#!/usr/bin/env python3
"""Assertions for the `amptrace compare` tests (t80-t84).

  compare_checks.py results JSON FS,.. TARGETS,.. WORKLOADS,..
      every (fs, target, workload) present and ok, with the expected line
      count; classes = /sys/block counter within 1% (the tracer's read and
      the driver's own); no losses; append costs far less per line than
      each journald on every filesystem.
  compare_checks.py stacks JSON FS,.. STACKS,.. TARGETS,.. WORKLOAD HTML
      per (filesystem, target): each stack's row ok with its lines; the
      row's classes = the sum of its bottom disks' counters (the tracer's
      read and the driver's own); each layer above the disks (partition,
      dm, md) charged its own counter's bytes; a RAID1 row has two disks
      and two copies, and its disks' data bytes are twice the md row's;
      for append, the file's data pages are the same on every stack (a
      RAID1's: twice them); no losses.  The page has the stacks section,
      each row's bytes per line on it.
  compare_checks.py mitigation JSON
      per journald version, Storage=volatile+rsyslog costs at most half of
      persistent journald per line, on every filesystem and workload; its
      device writer is rsyslogd (entries, pages); journald 257 ran in its
      chroot with kernel audit on, and amptrace's own start-up (written
      before the lines) was taken off its rows.
  compare_checks.py tree JSON
      untar: the data class is exactly the tree's file pages (its tar's
      member sizes rounded up to pages) on ext4, ext4 without journal and
      xfs; rm -rf writes no data; the fs journal class is > 0 on ext4 and
      xfs, 0 on ext4 without one (where rm -rf writes fewer bytes) and btrfs.
  compare_checks.py page HTML JSON
      the page has one section per filesystem, in order; in it, each
      workload's bytes-per-line chart has a bar for every (journald
      version, setting) target and for rsyslog and append, labelled with
      the row's bytes per line; its verdict paragraph states, per journald
      version, the mitigation's ratio to persistent journald and the
      figures it comes from, as this check computes them from the JSON.
  compare_checks.py host-state OUT / host-same OUT
      a snapshot of the host's journald and its configuration (journald
      processes with their start times; journald.conf files under /etc,
      /run and /usr/lib, by content and mtime; the names under /run/systemd
      starting with "journal"; every file under /var/log/journal and
      /run/log/journal, by size and mtime), then the same taken again and
      compared: nothing added, removed or changed.
  compare_checks.py leftovers LOG
      nothing the compare's -v log says it set up is still there: processes,
      loop devices on its images, mounts, journald namespace paths, the
      scratch folder.  Whatever is found is reported, then removed (so a
      failing test does not leave it on the machine), and the check fails.
  compare_checks.py png FILE
      a screenshot that is not blank: many colours, and the report's bar
      colours present in solid runs.

One "ok:" line per check; exit 1 at the first failure.
"""
import json
import os
import re
import struct
import subprocess
import sys
import time
import zlib
from html import escape as html_escape, unescape


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}")


def within(a, b, rel):
    return abs(a - b) <= rel * max(abs(b), 1)


# ------------------------------------------------------------- results ---

def check_results(path, fss, targets, workloads):
    doc = json.load(open(path))
    if doc.get("type") != "compare" or not doc.get("complete"):
        fail(f"{path}: not a complete compare document")
    res = {(r["fs"], r["target"], r["workload"]): r for r in doc["results"]
           if r.get("stack", "plain") == "plain"}
    want_lines = {"one": 1, "untar": 5000, "rmrf": 5000}
    for fs in fss:
        for t in targets:
            for w in workloads:
                r = res.get((fs, t, w))
                if r is None:
                    fail(f"no result for {fs}/{t}/{w}")
                if r["status"] != "ok":
                    fail(f"{fs}/{t}/{w}: {r['status']}: {r.get('error')}")
                n = want_lines.get(w) or int(w.split(":")[1])
                if r["lines"] != n:
                    fail(f"{fs}/{t}/{w}: {r['lines']} lines, expected {n}")
                dev, ctr, own = r["device_bytes"], r["counter_bytes"], r["window_counter_bytes"]
                if sum(r["classes"].values()) != dev:
                    fail(f"{fs}/{t}/{w}: classes {r['classes']} do not sum to {dev}")
                if ctr is None or not within(dev, ctr, 0.01):
                    fail(f"{fs}/{t}/{w}: classes sum {dev} vs tracer's counter {ctr}")
                if not within(dev, own, 0.01):
                    fail(f"{fs}/{t}/{w}: classes sum {dev} vs /sys/block counter "
                         f"around the window {own}")
                if not 0.99 <= r["coverage"] <= 1.01:
                    fail(f"{fs}/{t}/{w}: coverage {r['coverage']}")
                if r["losses"]:
                    fail(f"{fs}/{t}/{w}: tracer losses {r['losses']}")
                if dev <= 0 or r["write_ios"] <= 0:
                    fail(f"{fs}/{t}/{w}: device wrote {dev} B in {r['write_ios']} I/Os")
                ok(f"{fs:7} {t:17} {w:9} {r['lines']:3} lines: {dev:7} B = counter {ctr} "
                   f"(own read {own}), {r['bytes_per_line']:9.0f} B/line, "
                   f"{r['ios_per_line']:.2f} I/Os/line, split "
                   + " ".join(f"{k}={v}" for k, v in r["classes"].items()))
    journalds = [t for t in targets if re.fullmatch(r"journald@\d+", t)]
    if "append" in targets:
        for fs in fss:
            for w in workloads:
                for jt in journalds:
                    a = res[(fs, "append", w)]["bytes_per_line"]
                    j = res[(fs, jt, w)]["bytes_per_line"]
                    if not a * 2 <= j:
                        fail(f"{fs}/{w}: append {a:.0f} B/line is not far below {jt} "
                             f"{j:.0f} B/line (want at most half)")
                    ok(f"{fs}/{w}: append {a:.0f} B/line vs {jt} {j:.0f} B/line "
                       f"({j / a:.1f}x)")


def check_stacks(path, fss, specs, targets, workload, page):
    doc = json.load(open(path))
    if doc.get("type") != "compare" or not doc.get("complete") or doc.get("version") != 3:
        fail(f"{path}: not a complete version-3 compare document")
    if doc["config"].get("stacks") != specs:
        fail(f"config stacks {doc['config'].get('stacks')}, asked for {specs}")
    html = unescape(open(page).read())
    if "What the storage stack adds" not in html:
        fail(f"{page}: no stacks section")
    for fs in fss:
        for target in targets:
            check_stack_rows(doc, fs, specs, target, workload, html)
    ok(f"{page}: stacks section, every row's bytes per line")


def check_stack_rows(doc, fs, specs, target, workload, html):
    rows = {r.get("stack"): r for r in doc["results"]
            if (r["fs"], r["target"], r["workload"]) == (fs, target, workload)}
    n = int(workload.split(":")[1]) if ":" in workload else 1
    for st in specs:
        r = rows.get(st)
        if r is None or r["status"] != "ok":
            fail(f"{st}: {'no row' if r is None else r['status'] + ': ' + str(r.get('error'))}")
        if r["lines"] != n:
            fail(f"{st}: {r['lines']} lines, expected {n}")
        dev, ctr, own = r["device_bytes"], r["counter_bytes"], r["window_counter_bytes"]
        if ctr is None or not within(dev, ctr, 0.01) or not within(dev, own, 0.01):
            fail(f"{st}: classes {dev} B on {r['disks']} vs their counters {ctr} (tracer's) "
                 f"and {own} (own read)")
        if r["losses"]:
            fail(f"{st}: tracer losses {r['losses']}")
        want_disks = 2 if "raid1" in st.split("+") else 1
        if len(r["disks"]) != want_disks or r["copies"] != want_disks:
            fail(f"{st}: disks {r['disks']}, copies {r['copies']}; expected {want_disks}")
        kinds = {"part": "partition", "lvm": "dm", "crypt": "dm", "raid1": "md"}
        want_layers = sorted(kinds[x] for x in st.split("+") if x in kinds
                             for _ in range(want_disks if x == "part" else 1))
        got = sorted(x.get("layer") for x in r["layers"])
        if got != want_layers:
            fail(f"{st}: layers {got}, expected {want_layers}")
        for x in r["layers"]:
            if not x.get("walked") or x["counter_bytes"] is None or \
                    not within(x["bytes"], x["counter_bytes"], 0.01):
                fail(f"{st}: layer {x['name']} ({x['layer']}) charged {x['bytes']} B, its "
                     f"counter {x['counter_bytes']}, walked {x.get('walked')}")
        ok(f"{fs:5} {target:12} {st:12} {dev:7} B on {' '.join(r['disks'])} = counters {ctr} (own read {own}); "
           + "; ".join(f"{x['name']} ({x['layer']}) {x['bytes']} = {x['counter_bytes']}"
                       for x in r["layers"]))
        if want_disks == 2:
            md = next(x for x in r["layers"] if x["layer"] == "md")
            if r["classes"]["data"] != 2 * md["classes"].get("data", 0):
                fail(f"{st}: disks' data {r['classes']['data']} B is not twice the md "
                     f"row's {md['classes'].get('data')}")
            ok(f"{st}: the disks' data {r['classes']['data']} B = 2 x md's "
               f"{md['classes'].get('data')}")
    if "plain" in rows and target == "append":
        base = rows["plain"]["classes"]["data"]
        for st in specs:
            d = rows[st]["classes"]["data"]
            if d != rows[st]["copies"] * base:
                fail(f"{st}: data {d} B, the whole disk's {base} x {rows[st]['copies']} copies "
                     "expected (the same file pages)")
        ok(f"data bytes: {base} on the whole disk, " + ", ".join(
            f"{st} {rows[st]['classes']['data']}" for st in specs if st != "plain"))
    for st in specs:
        bpl = f"{rows[st]['bytes_per_line']:,.0f}"
        if bpl not in html:
            fail(f"{fs}/{st}/{target}: its {bpl} bytes per line not on the page")


def check_mitigation(path):
    doc = json.load(open(path))
    rows = [r for r in doc["results"] if r["status"] == "ok"]
    pairs = 0
    for r in rows:
        m = re.fullmatch(r"journald@(\d+):Storage=volatile\+rsyslog", r["target"])
        if not m:
            continue
        ver = m.group(1)
        p = next((x for x in rows if (x["fs"], x["target"], x["workload"]) ==
                  (r["fs"], f"journald@{ver}", r["workload"])), None)
        if p is None:
            fail(f"{r['fs']}/{r['workload']}: no persistent journald@{ver} row to compare")
        v, j = r["bytes_per_line"], p["bytes_per_line"]
        if not v * 2 <= j:
            fail(f"{r['fs']}/{r['workload']}: Storage=volatile+rsyslog {v:.0f} B/line is not "
                 f"far below persistent journald {ver} {j:.0f} B/line (want at most half)")
        if r["trace_preset"] != "write" or r["entries"] < 1 or r["pages_dirtied"] < 1:
            fail(f"{r['target']}: rsyslogd was not its traced writer: preset "
                 f"{r['trace_preset']}, {r['entries']} entries, {r['pages_dirtied']} pages")
        ok(f"{r['fs']}/{r['workload']}: journald {ver} Storage=volatile+rsyslog {v:.0f} B/line "
           f"vs persistent {j:.0f} B/line ({j / v:.1f}x fewer)")
        pairs += 1
    if not pairs:
        fail(f"{path}: no Storage=volatile+rsyslog rows")
    for r in rows:
        jd = r.get("journald") or {}
        if jd.get("version") == "257" and not jd.get("chroot"):
            fail(f"{r['target']}: journald 257 did not run in its chroot")
        if r["target"] == "journald@257":
            if not r["audit"] or r["startup_bytes"] <= 0 or r["own_bytes"] <= 0:
                fail(f"{r['target']}: audit {r['audit']}, start-up {r['startup_bytes']} B, "
                     f"own {r['own_bytes']} B: amptrace's own start-up was not taken off")
            ok(f"{r['fs']}/{r['workload']}: journald 257 (chroot, kernel audit on): "
               f"{r['startup_bytes']} B written while amptrace started (its own entries "
               f"{r['own_bytes']} B) are not in its {r['device_bytes']} B")


def check_tree(path):
    """The tree's file pages from its tar, made again with the driver's own
    generator (seeded by N): the members tar wrote, listed by tarfile."""
    import tarfile
    import tempfile
    sys.dont_write_bytecode = True
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "scripts"))
    from amptrace_compare import tree
    doc = json.load(open(path))
    rows = {(r["fs"], r["workload"]): r for r in doc["results"]}
    for (fs, w), r in sorted(rows.items()):
        if r["status"] != "ok":
            fail(f"{fs}/{w}: {r['status']}: {r.get('error')}")
        kind, n = w.split(":")
        cl = r["classes"]
        if kind == "untar" and fs in ("ext4", "ext4nj", "xfs"):     # btrfs inlines small files
            with tempfile.TemporaryDirectory() as d:
                tar, _, _ = tree.archive(d, int(n))
                with tarfile.open(tar) as tf:
                    sizes = [m.size for m in tf.getmembers() if m.isfile()]
            want = sum(-(-s // 4096) for s in sizes) * 4096
            if len(sizes) != int(n) or cl["data"] != want:
                fail(f"{fs}/{w}: data {cl['data']} B, the tree's {len(sizes)} files fill "
                     f"{want} B of pages")
            ok(f"{fs}/{w}: data {cl['data']} B = the {len(sizes)} files' pages (tar), "
               f"fs journal {cl['journal']} B, metadata {cl['metadata']} B, {r['elapsed_s']} s")
        elif kind == "untar":
            ok(f"{fs}/{w}: data {cl['data']} B, metadata {cl['metadata']} B (small files "
               "inline: no exact page count)")
        elif kind == "rmrf":
            if cl["data"] != 0:
                fail(f"{fs}/{w}: rm -rf wrote {cl['data']} B of data")
            ok(f"{fs}/{w}: no data, fs journal {cl['journal']} B, metadata {cl['metadata']} B")
        if (cl["journal"] > 0) != (fs in ("ext4", "xfs")):
            fail(f"{fs}/{w}: fs journal {cl['journal']} B")
    for w in {w for _, w in rows}:
        if w.startswith("rmrf") and ("ext4", w) in rows and ("ext4nj", w) in rows:
            j, nj = rows[("ext4", w)]["device_bytes"], rows[("ext4nj", w)]["device_bytes"]
            if not nj < j:
                fail(f"{w}: ext4 {j} B, without journal {nj} B: the journal cost nothing")
            ok(f"{w}: ext4 {j} B vs {nj} B without journal ({j / nj:.2f}x)")


# ---------------------------------------------------------------- page ---

def _chart(section, title):
    """(label, value text) pairs of the bar chart titled TITLE, in order."""
    m = re.search(r'<svg[^>]*aria-label="' + re.escape(html_escape(title)) + r'".*?</svg>',
                  section, re.S)
    if not m:
        return None
    texts = re.findall(r'class="(lb|vl)">([^<]*)</text>', m.group(0))
    out, label = [], None
    for kind, t in texts:
        if kind == "lb":
            label = unescape(t)
        elif label is not None:
            out.append((label, t))
            label = None
    return out


def check_page(html_path, json_path):
    doc = json.load(open(json_path))
    page = open(html_path).read()
    rows = [r for r in doc["results"] if r["status"] == "ok" and r.get("unit") != "file"]
    fss = [f for f in doc["config"]["filesystems"] if any(r["fs"] == f for r in rows)]
    sections = re.findall(r"<section>(.*?)</section>", page, re.S)
    if len(sections) < len(fss):
        fail(f"{html_path}: {len(sections)} sections for {len(fss)} filesystems")
    for fs, sec in zip(fss, sections):
        h2 = re.search(r"<h2>([^<]*) <small>", sec).group(1)
        if not h2.startswith(fs.replace("nj", "")) and not (fs == "btrfsC" and "+C" in h2):
            fail(f"{html_path}: section {h2!r} where {fs} was expected")
        frows = [r for r in rows if r["fs"] == fs]
        targets = {r["target"] for r in frows}
        need = {t for t in targets if t.startswith("journald@")} | \
            ({"rsyslog", "append"} & targets)
        if not any(":" in t for t in need) or not {"rsyslog", "append"} <= need:
            fail(f"{fs}: the run has no journald setting, rsyslog or append to show: {need}")
        for w in sorted({r["workload"] for r in frows}):
            bars = _chart(sec, f"{w}: device bytes per line, by class")
            if bars is None:
                fail(f"{fs}/{w}: no bytes-per-line chart")
            got = dict(bars)
            for r in frows:
                if r["workload"] != w or r["target"] not in need:
                    continue
                want = f"{round(r['bytes_per_line']):,}"
                if got.get(r["target"]) != want:
                    fail(f"{fs}/{w}: bar {r['target']} shows {got.get(r['target'])!r}, "
                         f"the row has {want} B/line")
            ok(f"{fs}/{w}: bars for {len(need)} targets with their bytes per line: "
               + ", ".join(f"{t} {got[t]}" for t in sorted(need)))
        m = re.search(r'<p class="verdict">([^<]*)</p>', sec)
        if not m:
            fail(f"{fs}: no verdict paragraph")
        text = unescape(m.group(1))
        said = 0
        for r in frows:
            v = re.fullmatch(r"journald@(\d+):Storage=volatile\+rsyslog", r["target"])
            if not v:
                continue
            p = next(x for x in frows if x["workload"] == r["workload"] and
                     x["target"] == f"journald@{v.group(1)}")
            vb, jb = r["bytes_per_line"], p["bytes_per_line"]
            want = (f"Storage=volatile+rsyslog: {jb / vb:.1f}x fewer bytes per line than "
                    f"persistent journald {v.group(1)} ({vb:,.0f} vs {jb:,.0f})")
            part = text.split(f"{r['workload']}: ", 1)
            if len(part) < 2 or want not in part[1].split(". ")[0]:
                fail(f"{fs}/{r['workload']}: the verdict does not say {want!r}: {text}")
            said += 1
        if not said:
            fail(f"{fs}: no Storage=volatile+rsyslog rows for the verdict")
        ok(f"{fs}: verdict states the mitigation's {said} ratios from the rows: {text[:160]}...")


# ---------------------------------------------------------------- host ---

def host_state():
    """The host's journald and its configuration, as comparable text."""
    import glob
    import hashlib
    st = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if _comm(pid) == "systemd-journal":
            try:
                start = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19]
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ")
                root = os.readlink(f"/proc/{pid}/root")
            except OSError:
                continue
            st.append(f"journald pid {pid} started {start} root {root}: {cmd.decode().strip()}")
    confs = set()
    for d in ("/etc/systemd", "/run/systemd", "/usr/lib/systemd", "/lib/systemd"):
        confs |= set(glob.glob(f"{d}/journald*.conf")) | \
            set(glob.glob(f"{d}/journald*.conf.d/*"))
    for c in sorted(confs):
        s = os.lstat(c)
        h = hashlib.sha256(open(c, "rb").read()).hexdigest() if os.path.isfile(c) else "-"
        st.append(f"conf {c} sha256 {h} mtime {s.st_mtime_ns}")
    if os.path.isdir("/run/systemd"):
        st += [f"run /run/systemd/{n}" for n in sorted(os.listdir("/run/systemd"))
               if n.startswith("journal")]
    for top in ("/var/log/journal", "/run/log/journal"):
        st.append(f"dir {top} {'there' if os.path.isdir(top) else 'absent'}")
        for d, dirs, files in os.walk(top):
            dirs.sort()
            for n in [*dirs, *sorted(files)]:
                p = os.path.join(d, n)
                s = os.lstat(p)
                st.append(f"file {p} size {s.st_size if n in files else '-'} "
                          f"mtime {s.st_mtime_ns if n in files else '-'}")
    return st


def check_host(cmd, out):
    if cmd == "host-state":
        st = host_state()
        with open(out, "w") as f:
            f.write("\n".join(st) + "\n")
        ok(f"host journald state: {sum(l.startswith('journald ') for l in st)} journalds, "
           f"{sum(l.startswith('conf ') for l in st)} config files, "
           f"{sum(l.startswith('file ') for l in st)} journal paths")
        return
    before = open(out).read().splitlines()
    after = host_state()
    gone = [l for l in before if l not in after]
    new = [l for l in after if l not in before]
    if gone or new:
        fail("the host's journald or its configuration changed: "
             + "; ".join([f"was: {l}" for l in gone] + [f"now: {l}" for l in new]))
    ok(f"host journald and its configuration as before ({len(after)} items)")


# ----------------------------------------------------------- leftovers ---

COMM = {"systemd-journald": "systemd-journal", "append_writer": "amp-append",
        "amptrace": "amptrace", "rsyslogd": "rsyslogd"}


def _comm(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    state = s.rsplit(")", 1)[1].split()[0]
    return None if state == "Z" else s[s.index("(") + 1:s.rindex(")")]


def _mounts():
    with open("/proc/self/mounts") as f:
        return [l.split()[1].replace("\\040", " ") for l in f]


def check_leftovers(logpath):
    log = open(logpath, errors="replace").read()
    left = []
    procs = re.findall(r"started (\S+) pid (\d+)", log)
    images = re.findall(r"(\S+\.img) on (/dev/loop\d+)", log)
    mps = re.findall(r"mounted at (\S+)", log)
    scratch = re.findall(r"scratch folder (\S+)$", log, re.M)
    mid = open("/etc/machine-id").read().strip()
    ns = sorted(set(re.findall(r"/var/log/journal/(\w+)\.(ampcmp\w+)", log)) |
                {(mid, n) for n in re.findall(r"journald \d+ namespace (ampcmp\w+)", log)})
    if not procs or not images or not scratch:
        fail(f"{logpath}: no 'started'/'.img on'/'scratch folder' lines (was -v given?)")

    for name, pid in procs:
        c = _comm(pid)
        if c is not None and c == COMM.get(name, name)[:15]:
            left.append(f"process {name} pid {pid}")
            subprocess.run(["kill", "-KILL", pid], check=False)
    # Any process still pointing into the scratch folder (config, log file).
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if any(s in cmd for s in scratch) or any(n in cmd for _, n in ns):
            if int(pid) != os.getpid() and _comm(pid) is not None:
                left.append(f"process {pid}: {cmd.strip()}")
                subprocess.run(["kill", "-KILL", pid], check=False)
    time.sleep(0.2)
    mounted = _mounts()
    for mp in mps:
        if mp in mounted:
            left.append(f"mount {mp}")
            subprocess.run(["umount", "-l", mp], check=False)
    # The chroots' overlay, /proc, /sys, /dev, /run; a volatile journal's tmpfs.
    for mp in sorted(mounted, reverse=True):
        if any(mp.startswith(s.rstrip("/") + "/") for s in scratch) or \
           any(f".{n}" in mp for _, n in ns):
            left.append(f"mount {mp}")
            subprocess.run(["umount", "-l", mp], check=False)
    for img, dev in images:
        r = subprocess.run(["losetup", "-j", img], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            d = line.split(":", 1)[0]
            left.append(f"loop device {d} on {img}")
            subprocess.run(["losetup", "-d", d], check=False)
    # --stack's dm and md devices (their names carry compare's pid).
    for name in re.findall(r"dm device (\S+) made over", log):
        if subprocess.run(["dmsetup", "info", name], capture_output=True).returncode == 0:
            left.append(f"dm device {name}")
            subprocess.run(["dmsetup", "remove", "--noudevsync", name], check=False)
    for md in re.findall(r"md device (md\d+) made of", log):
        if os.path.exists(f"/sys/block/{md}/md"):
            left.append(f"md device {md}")
            subprocess.run(["mdadm", "--stop", f"/dev/{md}"], check=False)
    for mid, n in ns:
        for p in (f"/run/systemd/journal.{n}", f"/run/systemd/journald@{n}.conf.d",
                  f"/var/log/journal/{mid}.{n}", f"/run/log/journal/{mid}.{n}"):
            if os.path.lexists(p):
                left.append(f"path {p}")
                subprocess.run(["rm", "-rf", "--one-file-system", p], check=False)
    for s in scratch:
        if os.path.lexists(s):
            left.append(f"scratch folder {s}")
            subprocess.run(["rm", "-rf", "--one-file-system", s], check=False)
    if left:
        fail("left behind (now removed): " + "; ".join(left))
    ok(f"nothing left: {len(procs)} processes gone, {len(images)} loop devices detached, "
       f"{len(set(mps))} mount points unmounted, journald namespaces "
       f"{sorted({n for _, n in ns})} removed, scratch {scratch[0]} removed")


# ----------------------------------------------------------------- png ---

def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path}: not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        fail(f"{path}: PNG type {ctype} depth {depth} interlace {interlace} not handled")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def check_png(path, colours):
    w, h, bpp, rows = read_png(path)
    counts = {}
    for row in rows:
        for x in range(0, len(row), bpp):
            px = row[x:x + 3]
            counts[px] = counts.get(px, 0) + 1
    if len(counts) < 8:
        fail(f"{path}: {w}x{h} with only {len(counts)} colours: blank")
    top = max(counts.values())
    if top > 0.995 * w * h:
        fail(f"{path}: {top / (w * h):.1%} of the pixels are one colour")
    ok(f"{path}: {w}x{h}, {len(counts)} colours, most common {top / (w * h):.0%}")
    for hexcol in colours:
        rgb = bytes.fromhex(hexcol.lstrip("#"))
        n = counts.get(rgb, 0)
        if n < 200:
            fail(f"{path}: bar colour {hexcol} in {n} pixels; the charts did not render")
        ok(f"bar colour {hexcol}: {n} pixels")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "results":
        check_results(args[0], args[1].split(","), args[2].split(","), args[3].split(","))
    elif cmd == "leftovers":
        check_leftovers(args[0])
    elif cmd == "png":
        check_png(args[0], args[1:])
    elif cmd == "stacks":
        check_stacks(args[0], args[1].split(","), args[2].split(","), args[3].split(","),
                     args[4], args[5])
    elif cmd == "mitigation":
        check_mitigation(args[0])
    elif cmd == "tree":
        check_tree(args[0])
    elif cmd == "page":
        check_page(args[0], args[1])
    elif cmd in ("host-state", "host-same"):
        check_host(cmd, args[0])
    else:
        fail(f"unknown check {cmd}")
