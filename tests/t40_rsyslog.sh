#!/usr/bin/env bash
# Real rsyslog writing to a loop ext4, --preset write: each line it writes
# is one entry with that line's byte count, and the log file's pages, from
# its own growth, are each dirtied once and written whole.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
command -v rsyslogd >/dev/null || skip "rsyslogd not installed"

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
log=$mnt/test.log
start_rsyslog "$log"

start_tracer -p "$RSYSLOG_PID" --preset write --dev "$LOOPNAME"
# The empty log's inode, dirty since rsyslog created it: written now, so
# that its age does not count from before the tracer's start (which takes
# tens of seconds in an emulated guest): past dirty_expire (30 s) the
# flusher would write page 0 between two lines, and the next one would
# dirty it again.
sync
for i in 1 2 3 4 5; do
    send_rsyslog_line "line $i $(head -c $((i * 17)) /dev/zero | tr '\0' x)"
    sleep 0.4   # one batch, so one write(), per line
done
wait_for "[[ \$(wc -l <$log) -ge 5 ]]" 10 || fail "rsyslog wrote $(wc -l <"$log") of 5 lines"
sync
stop_tracer

python3 "$AMP_ROOT/tests/checks.py" rsyslog "$TRACE_OUT" "$log" "$(stat -c %i "$log")" \
    "$(getconf PAGESIZE)" "$(stat -f -c %S "$mnt")"
python3 "$AMP_ROOT/tests/checks.py" devsum "$TRACE_OUT" "$LOOPNAME"
