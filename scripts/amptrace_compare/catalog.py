# SPDX-License-Identifier: GPL-2.0
"""The target names -t takes, expanded into the targets that run: a
journald name once per --journald version (journald@VERSION[:Setting=value
...]), the others as they are; and `tree`, which the untar and rmrf
workloads bring in on their own."""
import functools

from . import journald
from .targets import TARGETS, TREE, AppendTarget, RsyslogTarget
from .tree import TreeTarget
from .util import UsageError


def default_versions():
    host = journald.host_version()
    return [host] if host else ["257"]


def expand(specs, versions):
    """-t names -> [(name, make(cfg, scratch) -> Target)], in order."""
    host = journald.host_version()
    out = []
    for spec in specs:
        if spec == "rsyslog":
            out.append((spec, RsyslogTarget))
        elif spec in ("append", "append+fdatasync"):
            out.append((spec, functools.partial(AppendTarget,
                                                fdatasync=spec == "append+fdatasync")))
        elif spec.split(":")[0].split("@")[0] == "journald":
            for name, ver, settings in journald.parse(spec, versions):
                journald.check_version(ver, host)
                out.append((name, functools.partial(journald.JournaldTarget, name=name,
                                                    version=ver, settings=settings)))
        elif spec == TREE:
            raise UsageError("target tree comes with the untar and rmrf workloads (-w untar)")
        else:
            raise UsageError(f"unknown target '{spec}' (choose from {', '.join(TARGETS)}; "
                             "journald as journald[@VERSION][:Setting=value...])")
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise UsageError("a target is listed twice")
    return out


def tree():
    return TREE, TreeTarget
