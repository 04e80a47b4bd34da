# SPDX-License-Identifier: GPL-2.0
"""amptrace compare: one logging workload on several loop filesystems and
log targets, side by side (`amptrace compare --help`).

Modules, ground floor first (each imports only those above it):
  util       errors, log lines, the undo stack, signals, child processes
  paths      where amptrace, the writer and journald are
  devices    loop devices, filesystems, the safety checks, the /sys/block counter
  targets    what a line is, and the loggers that take it
  workloads  how many lines, and when
  tracer     one traced window and its summary, read into a result row
  table      the text table and the live screen
  page       the HTML page
  driver     the run: filesystems x targets x workloads
  cli        options and main()
Python 3 standard library only.
"""
