# SPDX-License-Identifier: GPL-2.0
"""amptrace compare: one logging workload on several loop filesystems,
storage stacks and log targets, side by side (`amptrace compare --help`, amptrace-compare(8)).

Modules, ground floor first (each imports only modules above it):
  util       errors, log lines, the undo stack, signals, child processes
  paths      where amptrace, the writer and journald are
  audit      kernel audit on or off (journald 257 turns it on)
  devices    loop devices, filesystems, the safety checks, the /sys/block counter
  stacks     --stack: partitions, LVM, LUKS, md RAID1 over the loop disks
  targets    what a line is, rsyslogd, the O_APPEND writer
  rootfs     another Debian release's root, for its journald (a chroot)
  journald   journald@VERSION[:settings] targets, Storage=volatile+rsyslog
  tree       the untar / rm -rf pair on a filesystem alone
  workloads  how many lines (or files), and when
  catalog    the -t names, expanded into targets
  btrfs_trees the btrfs sub-table: metadata by tree per line
  tracer     one traced window and its summary, read into a result row
  table      the text table and the live screen
  verdict    the verdict paragraphs, computed from the rows
  page       the HTML page
  driver     the run: filesystems x stacks x targets x workloads
  cli        options and main()
Python 3 standard library only.
"""
