#!/usr/bin/env bash
# t35_fs_overhead's journald cases with journald 257 (Debian 13, in a
# chroot; see use_journald): class sums per filesystem.  The synthetic
# writer's cases do not depend on journald and run in t35 only.
AMP_JOURNALD=257 T35_WRITERS=journald exec bash "$(dirname "$0")/t35_fs_overhead.sh"
