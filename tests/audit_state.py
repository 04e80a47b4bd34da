#!/usr/bin/env python3
"""Kernel audit on or off, read and set over the audit netlink socket.

    audit_state.py get        prints 0 (off), 1 (on) or 2 (locked)
    audit_state.py set N      sets it, prints the state after

journald 257 turns audit on when it starts (its Audit= default); the tests
that run it put the host's state back with this when they end.  No auditctl
needed (the auditd package is not a test dependency).
"""
import socket
import struct
import sys

NETLINK_AUDIT = 9
AUDIT_GET, AUDIT_SET = 1000, 1001
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2
AUDIT_STATUS_ENABLED = 0x1
STATUS = struct.Struct("=8I")   # mask, enabled, failure, pid, rate_limit, backlog_limit, lost, backlog


def request(sock, msg_type, payload=b""):
    hdr = struct.pack("=IHHII", 16 + len(payload), msg_type, NLM_F_REQUEST | NLM_F_ACK, 1, 0)
    sock.sendto(hdr + payload, (0, 0))


def status(sock):
    request(sock, AUDIT_GET)
    while True:
        data = sock.recv(65536)
        _, msg_type, _, _, _ = struct.unpack("=IHHII", data[:16])
        if msg_type == AUDIT_GET:
            return STATUS.unpack(data[16:16 + STATUS.size])[1]
        if msg_type == NLMSG_ERROR:
            err = struct.unpack("=i", data[16:20])[0]
            if err:
                raise OSError(-err, "audit netlink")


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[1] not in ("get", "set"):
        sys.exit("usage: audit_state.py get | set N")
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_AUDIT) as sock:
        sock.bind((0, 0))
        if sys.argv[1] == "set":
            want = STATUS.pack(AUDIT_STATUS_ENABLED, int(sys.argv[2]), 0, 0, 0, 0, 0, 0)
            request(sock, AUDIT_SET, want + bytes(32))   # struct audit_status is longer now
        print(status(sock))


if __name__ == "__main__":
    main()
