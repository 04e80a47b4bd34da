#!/usr/bin/env python3
"""The fault soak's sender (fault_soak.sh): native journald datagrams at
RATE per second to SOCK, from a process named amp-soak-snd (its comm, the
sender amptrace names), until SIGTERM.  Each send blocks until journald's
socket takes it, so a line sent is a line journald will receive.  The
count of lines sent goes to COUNT_FILE every second and at the end (the
ground truth of the soak).  Stopped (SIGSTOP) and continued, it resumes at
RATE without catching up the stopped time.

usage: soak_sender.py SOCK RATE COUNT_FILE"""
import ctypes
import os
import signal
import socket
import sys
import time

PR_SET_NAME = 15
TICK = 0.01


def main():
    sock_path, rate, count_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    ctypes.CDLL(None).prctl(PR_SET_NAME, b"amp-soak-snd", 0, 0, 0)
    stop = False

    def on_term(_sig, _frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sent = refused = 0
    owed = 0.0
    last = next_save = time.monotonic()

    def save():
        tmp = count_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"sent={sent} refused={refused}\n")
        os.replace(tmp, count_file)

    while not stop:
        now = time.monotonic()
        # A stop (SIGSTOP) longer than a second is not made up for.
        owed += rate * min(now - last, 1.0)
        last = now
        while owed >= 1 and not stop:
            msg = f"MESSAGE=soak line {sent}\nPRIORITY=6\nSYSLOG_IDENTIFIER=amp-soak\n"
            try:
                s.sendto(msg.encode(), sock_path)
                sent += 1
            except (ConnectionRefusedError, FileNotFoundError):
                # journald is not there: not a line it received.
                refused += 1
                time.sleep(0.1)
                break
            owed -= 1
        if now >= next_save:
            save()
            next_save = now + 1
        time.sleep(TICK)
    save()


if __name__ == "__main__":
    main()
