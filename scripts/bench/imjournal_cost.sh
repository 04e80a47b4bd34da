#!/usr/bin/env bash
# What naming imjournal's senders costs rsyslog (issue 36):
#
#   scripts/bench/imjournal_cost.sh [-n ENTRIES]
#
# journald 252 on a loop ext4, rsyslogd reading it with imjournal and
# writing each line to a file on another.  ENTRIES native entries (2,000)
# are sent 2 ms apart, once untraced and once under
# `amptrace trace -p RSYSLOG --preset write` (its uprobes on libsystemd
# trap in rsyslog: sd_journal_next, and each field it enumerates, twice).
# Prints rsyslogd's CPU (utime+stime, all threads) per 1,000 entries in
# each pass, and their ratio.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib.sh"
n=2000
while getopts n:h opt; do
    case $opt in
        n) n=$OPTARG ;;
        *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
need_root
command -v rsyslogd >/dev/null || skip "rsyslogd not installed"
# No rate limit, and room for a large file: no rotation.
AMP_JOURNALD=252 AMP_JOURNALD_CONF=$'RateLimitBurst=0\nSystemMaxUse=200M\nSystemMaxFileSize=128M' use_journald
make_loopfs ext4 256 "$JOURNAL_DIR"
start_journald
make_loopfs ext4 256 "$AMP_TMP/out"
start_rsyslog "$AMP_TMP/out/imjournal.log" journal
sleep 3     # imjournal at the journal's end
hz=$(getconf CLK_TCK)
log=$AMP_TMP/out/imjournal.log
lines() { if [[ -e $log ]]; then wc -l <"$log"; else echo 0; fi; }

# pass NAME: the entries, then rsyslog's ticks until its file has them all.
pass() {
    local before want c0 c1
    before=$(lines)
    want=$((before + n))
    c0=$(cpu_ticks "$RSYSLOG_PID")
    python3 - "$JOURNALD_SOCK" "$AMP_TAG" "$n" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.connect(sys.argv[1])
for i in range(int(sys.argv[3])):
    s.send(f"MESSAGE=a bench line\nSYSLOG_IDENTIFIER={sys.argv[2]}\n".encode())
    time.sleep(0.002)   # back to back, imjournal 8.2302 loses its place
PY
    wait_for "[[ \$(lines) -ge $want ]]" 120 || fail "rsyslog wrote $(($(lines) - before)) of $n lines"
    c1=$(cpu_ticks "$RSYSLOG_PID")
    echo "$1 $(((c1 - c0) * 1000000 / hz / n))"   # us of CPU per entry x 1000 / 1000
}
read -r _ off < <(pass untraced)
start_tracer -p "$RSYSLOG_PID" --preset write --dev "$LOOPNAME" -q
read -r _ on < <(pass traced)
stop_tracer
printf 'rsyslogd CPU per 1,000 entries (%d entries each): untraced %d ms, traced %d ms, ratio %s\n' \
    "$n" "$off" "$on" "$(python3 -c "print(f'{$on / max($off, 1):.2f}')")"
