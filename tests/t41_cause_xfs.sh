#!/usr/bin/env bash
# t41_cause_xfs.sh: by cause on xfs (tests/fs_cause.sh says what is checked).
exec "$(dirname "$0")/fs_cause.sh" xfs
