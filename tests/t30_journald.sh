#!/usr/bin/env bash
# Real journald (AMP_JOURNALD: 252, the default, or 257) on a loop ext4:
# one native entry is one entry with its datagram size, >= 5 scattered
# pages of the .journal file, and device bytes of the order DESIGN.md
# measured without a tracer.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

use_journald
make_loopfs ext4 1024 "$JOURNAL_DIR"
start_journald
journal=$(journald_file)
ino=$(stat -c %i "$journal")

# Both ways into the receive: recvmsg's own tracepoint, and the raw hook.
for hook in default --raw-syscalls; do
    args=(); [[ $hook == default ]] || args=("$hook")
    start_tracer -c systemd-journal --dev "$LOOPNAME" "${args[@]}"
    journal_one_line "amptrace test entry $$ $(date +%s%N)"
    stop_tracer

    _log "hook: $hook"
    python3 "$AMP_ROOT/tests/checks.py" journald "$TRACE_OUT" "$LOOPNAME" "$ino" "$JOURNAL_DGRAM" \
        "$(getconf PAGESIZE)"
done
