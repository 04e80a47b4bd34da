#!/usr/bin/env bash
# t41_cause_ext4.sh: by cause on ext4 (tests/fs_cause.sh says what is checked).
exec "$(dirname "$0")/fs_cause.sh" ext4
