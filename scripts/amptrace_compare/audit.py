# SPDX-License-Identifier: GPL-2.0
"""Kernel audit on or off, over the audit netlink socket (no auditctl).

journald 257 turns audit on when it starts (its Audit= default), also as a
namespace instance; compare puts the host's state back once its journald is
gone.  While audit is on, amptrace's own program loads become audit records
that journald stores: a window then writes those out before its lines."""
import socket
import struct

NETLINK_AUDIT = 9
AUDIT_GET, AUDIT_SET = 1000, 1001
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2
AUDIT_STATUS_ENABLED = 0x1
# struct audit_status: mask, enabled, failure, pid, rate_limit,
# backlog_limit, lost, backlog (the kernel's is longer now; it takes this).
STATUS = struct.Struct("=8I")


def _request(sock, msg_type, payload=b""):
    hdr = struct.pack("=IHHII", 16 + len(payload), msg_type, NLM_F_REQUEST | NLM_F_ACK, 1, 0)
    sock.sendto(hdr + payload, (0, 0))


def _status(sock):
    _request(sock, AUDIT_GET)
    while True:
        data = sock.recv(65536)
        msg_type = struct.unpack("=IHHII", data[:16])[1]
        if msg_type == AUDIT_GET:
            return STATUS.unpack(data[16:16 + STATUS.size])[1]
        if msg_type == NLMSG_ERROR:
            err = struct.unpack("=i", data[16:20])[0]
            if err:
                raise OSError(-err, "audit netlink")


def _open():
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_AUDIT)
    sock.bind((0, 0))
    return sock


def get():
    """0 off, 1 on, 2 locked on; None where the kernel has no audit."""
    try:
        with _open() as sock:
            return _status(sock)
    except OSError:
        return None


def set_state(state):
    """Set audit to STATE (0 off, 1 on); returns the state after."""
    with _open() as sock:
        _request(sock, AUDIT_SET, STATUS.pack(AUDIT_STATUS_ENABLED, state, 0, 0, 0, 0, 0, 0)
                 + bytes(32))
        return _status(sock)


def put_back(state):
    """Set audit to STATE again if it changed (a locked state cannot)."""
    if state is None or get() in (state, None):
        return
    set_state(state)
