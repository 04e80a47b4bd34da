# SPDX-License-Identifier: GPL-2.0
"""Where the programs compare runs are.  The driver's folder (HERE) is
scripts/ in a build tree and PREFIX/lib/amptrace once installed (make
install, the .deb); this package sits in it."""
import os

HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
ROOT = os.path.dirname(HERE)
AMPTRACE = os.environ.get("AMPTRACE") or os.path.join(ROOT, "amptrace")
# Installed: the writer beside the driver in PREFIX/lib/amptrace; in a
# build tree: build/tests/append_writer.
APPEND_WRITER = os.environ.get("AMPTRACE_APPEND_WRITER") or next(
    (p for p in (os.path.join(HERE, "append_writer"),
                 os.path.join(ROOT, "build", "tests", "append_writer"))
     if os.access(p, os.X_OK)),
    os.path.join(ROOT, "build", "tests", "append_writer"))
APPEND_COMM = "amp-append"          # the writer's prctl(PR_SET_NAME)
JOURNALD = "/lib/systemd/systemd-journald"
