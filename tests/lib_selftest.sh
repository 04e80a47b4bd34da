#!/bin/bash
# tests/lib_selftest.sh - exercise tests/lib.sh end to end (no tracer).
#
#   tests/lib_selftest.sh [WAIT_S]      (root; default WAIT_S=40)
#
# Env knobs:
#   SELFTEST_FAIL=1    fail right after the first make_loopfs, to show that
#                      cleanup still runs under set -e
#   SELFTEST_STRACE=1  strace rsyslogd while it writes the 3 lines
#
# Part 1: ext4 loop fs on journald's /var/log/journal (AMP_JOURNALD), standalone journald, ONE native
# entry, device bytes written over WAIT_S.  journald writes only via mmap,
# so nothing reaches the device until writeback (dirty_expire ~30 s); we
# print a 5 s timeline, then what a final sync adds.
# Part 2: private rsyslogd writing to a file on another ext4 loop fs; the
# file must contain exactly the 3 lines sent.
set -euo pipefail
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
need_root
WAIT=${1:-40}

t0=$SECONDS
use_journald
make_loopfs ext4 1024 "$JOURNAL_DIR"
if [[ ${SELFTEST_FAIL:-} == 1 ]]; then
    echo "SELFTEST_FAIL=1: failing now; the trap must still clean up"
    false
fi
start_journald
jfile=$(journald_file)
echo "journald: pid $JOURNALD_PID, file $jfile, setup took $((SECONDS - t0)) s"

w0=$(devstat_written_bytes "$LOOPNAME") i0=$(devstat_write_ios "$LOOPNAME")
send_journal_entry "lib_selftest: one native entry" AMP_SELFTEST=1
for ((t = 5; t <= WAIT; t += 5)); do
    sleep 5 & wait $!          # interruptible, so Ctrl-C/TERM act at once
    echo "  t=${t}s written_bytes=$(($(devstat_written_bytes "$LOOPNAME") - w0))" \
         "write_ios=$(($(devstat_write_ios "$LOOPNAME") - i0))"
done
w1=$(devstat_written_bytes "$LOOPNAME") i1=$(devstat_write_ios "$LOOPNAME")
sync
echo "journald 1 entry, ${WAIT}s: written_bytes=$((w1 - w0)) write_ios=$((i1 - i0))" \
     "(final sync added $(($(devstat_written_bytes "$LOOPNAME") - w1)) bytes)"
# Read back only after measuring (reading may dirty atime).
journald_run journalctl --file "$(journal_path "$jfile")" AMP_SELFTEST=1 -o cat --no-pager | grep -qx 'lib_selftest: one native entry' ||
    { echo "FAIL: entry not found in $jfile"; exit 1; }
echo "journald entry found in $jfile"

make_loopfs ext4 256 "$AMP_TMP/rsys"
logfile=$AMP_TMP/rsys/amp.log
start_rsyslog "$logfile"
if [[ ${SELFTEST_STRACE:-} == 1 ]]; then
    strace -f -e trace=write,writev,pwrite64,pwritev,pwritev2 -o "$AMP_TMP/strace.txt" \
        -p "$RSYSLOG_PID" 2>/dev/null &
    at_exit _kill_wait $! strace
    sleep 1                    # let strace attach to every thread
fi
w0=$(devstat_written_bytes "$LOOPNAME")
for i in 1 2 3; do send_rsyslog_line "hello $i"; sleep 0.3; done
wait_for "[[ \$(wc -l <'$logfile' 2>/dev/null || echo 0) -ge 3 ]]" 5 ||
    { echo "FAIL: $logfile has not got 3 lines"; exit 1; }
if [[ $(<"$logfile") != $'hello 1\nhello 2\nhello 3' ]] ||
   [[ $(stat -c %s "$logfile") != 24 ]]; then
    echo "FAIL: unexpected content:"; od -c "$logfile"; exit 1
fi
echo "rsyslog: $logfile holds exactly the 3 lines (24 bytes)"
if [[ ${SELFTEST_STRACE:-} == 1 ]]; then
    grep -E 'write.*hello' "$AMP_TMP/strace.txt" || true
fi
sync
echo "rsyslog 3 lines + sync: written_bytes=$(($(devstat_written_bytes "$LOOPNAME") - w0))"
echo "PASS (total $((SECONDS - t0)) s); cleanup follows"
