#!/usr/bin/env python3
"""Kernel audit on or off, read and set over the audit netlink socket.

    audit_state.py get        prints 0 (off), 1 (on) or 2 (locked)
    audit_state.py set N      sets it, prints the state after

journald 257 turns audit on when it starts (its Audit= default); the tests
that run it put the host's state back with this when they end.  The netlink
code is compare's own (scripts/amptrace_compare/audit.py); no auditctl
needed (the auditd package is not a test dependency).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from amptrace_compare import audit  # noqa: E402


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[1] not in ("get", "set") \
            or (sys.argv[1] == "set") != (len(sys.argv) == 3):
        sys.exit("usage: audit_state.py get | set N")
    if sys.argv[1] == "set":
        print(audit.set_state(int(sys.argv[2])))
        return
    state = audit.get()
    if state is None:
        sys.exit("audit_state.py: the kernel's audit netlink socket cannot be read")
    print(state)


if __name__ == "__main__":
    main()
