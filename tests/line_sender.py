#!/usr/bin/env python3
"""Log lines from processes whose pids the lines carry: the ground truth of
a relay's senders (t44).  Each sender is a child process named amp-snd-K
(its comm) that sends its lines as datagrams to SOCK, then stays LINGER
seconds (journald forwards a line with its sender's credentials only
while that sender lives) and exits.  Each line says "sender=PID
comm=amp-snd-K seq=N".

usage: line_sender.py syslog|journal SOCK TAG LINGER PHASE...
PHASE: spaced:N   N senders, one line each, 0.5 s apart
       burst:N    one sender, N lines back to back
       mixed:N[:MS]  two senders at once, N lines each, MS ms apart (0)
Phases are 1.5 s apart.  syslog: RFC 3164 datagrams (as to /dev/log);
journal: journald's native protocol."""
import ctypes
import os
import socket
import sys
import time

PR_SET_NAME = 15
kind, sock_path, tag, linger = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
phases = sys.argv[5:]
libc = ctypes.CDLL(None, use_errno=True)
next_sender = 0


def datagram(text):
    if kind == "syslog":
        return f"<13>{tag}[{os.getpid()}]: {text}".encode()
    return f"MESSAGE={text}\nPRIORITY=5\nSYSLOG_IDENTIFIER={tag}\n".encode()


def sender(lines, gap, start_barrier=None):
    """Fork a sender that sends `lines` lines gap seconds apart; its pid."""
    global next_sender
    next_sender += 1
    name = f"amp-snd-{next_sender}"
    pid = os.fork()
    if pid:
        return pid
    try:
        libc.prctl(PR_SET_NAME, name.encode(), 0, 0, 0)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.connect(sock_path)
        if start_barrier:
            os.read(start_barrier, 1)
        for n in range(lines):
            s.send(datagram(f"sender={os.getpid()} comm={name} seq={n}"))
            if gap:
                time.sleep(gap)
        time.sleep(linger)
    finally:
        os._exit(0)


children = []
for i, phase in enumerate(phases):
    if i:
        time.sleep(1.5)
    what, n, *gap = phase.split(":")
    n = int(n)
    if what == "spaced":
        for _ in range(n):
            children.append(sender(1, 0))
            time.sleep(0.5)
    elif what == "burst":
        children.append(sender(n, 0))
    elif what == "mixed":
        r, w = os.pipe()
        gap = float(gap[0]) / 1000 if gap else 0.0
        children += [sender(n, gap, r), sender(n, gap, r)]
        os.write(w, b"xx")
        os.close(r)
        os.close(w)
    else:
        sys.exit(f"line_sender.py: unknown phase {phase}")
for pid in children:
    os.waitpid(pid, 0)
