#!/usr/bin/env bash
# t71_explain with journald 257 (Debian 13, in a chroot; see use_journald).
AMP_JOURNALD=257 exec bash "$(dirname "$0")/t71_explain.sh"
