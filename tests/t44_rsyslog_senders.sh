#!/usr/bin/env bash
# Who pays behind rsyslog: each line rsyslogd writes is billed to the
# process that sent it, not to rsyslogd (bpf/relay.bpf.h links its writes
# to its receives' credentials; no payload is read).  Real rsyslogd on a
# loop ext4, --preset write; the senders are tests/line_sender.py's
# children, each line naming its sender's pid (the ground truth):
#   spaced:6   six senders, one line each, 0.5 s apart, that exit at once:
#              each a write of its own, named after its sender is gone;
#   burst:60   one sender, 60 lines back to back: batched writes;
#   mixed:40   two senders at once, no gap: writes holding both.
# Twice: rsyslog alone (its own socket, as /dev/log), and behind journald
# 252 (ForwardToSyslog=yes: journald hands rsyslog each line with its
# sender's credentials, while the sender lives).  tests/relay_checks.py:
# every write entry names its lines' sender (pid and comm), or "several"
# where its lines are several senders'; the per-sender rows add up to
# rsyslogd's bill; the disk's classes equal its counter; and the same
# senders from a record of the first pass (amptrace record, then report).
# Then a daemon that receives with no credentials and logs to a file: its
# writes stay its own.  Last, rsyslog reading the journal instead
# (imjournal, RHEL's and Fedora's input): no receive, each entry it reads
# names its line's sender (bpf/journal_reader.bpf.h), checked as above,
# also after rsyslogd restarts under `-c rsyslogd`.
# AMP_T44_PARTS="2 4": only those parts (2 to 5 need journald: 2 sets it up).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
command -v rsyslogd >/dev/null || skip "rsyslogd not installed"

# senders_pass KIND SOCKET LINGER LOGFILE BURST MIXED [RECORD]: the three
# phases, traced (and recorded to RECORD by `amptrace record` alongside).
# Senders amp-snd-1..6 are spaced, 7 the burst, 8 and 9 the mixed pair.
senders_pass() {
    local kind=$1 sock=$2 linger=$3 log=$4 burst=$5 mixed=$6 rec=${7:-} lines recorder=''
    lines=$((6 + ${burst#*:} + 2 * $(cut -d: -f2 <<<"$mixed")))
    if [[ -n $rec ]]; then
        "$AMPTRACE" record -o "$rec" -p "$RSYSLOG_PID" --preset write --dev "$LOOPNAME" \
            2>"$AMP_TMP/record.err" &
        recorder=$!
        at_exit _kill_wait "$recorder" recorder
        wait_for "grep -qs 'tracing (' $AMP_TMP/record.err || ! _alive $recorder" "$AMP_TRACER_WAIT" ||
            fail "recorder did not attach in $AMP_TRACER_WAIT s"
    fi
    start_tracer -p "$RSYSLOG_PID" --preset write --dev "$LOOPNAME"
    sync    # the empty log's inode: written before the lines (see t40)
    python3 "$AMP_ROOT/tests/line_sender.py" "$kind" "$sock" "$AMP_TAG" "$linger" \
        spaced:6 "$burst" "$mixed"
    wait_for "[[ \$(wc -l <$log) -ge $lines ]]" 20 ||
        fail "rsyslog wrote $(wc -l <"$log") of $lines lines"
    sync
    stop_tracer
    python3 "$AMP_ROOT/tests/relay_checks.py" "$TRACE_OUT" "$log" "$(stat -c %i "$log")" \
        --mixed amp-snd-8,amp-snd-9 ${RELAY_FIRST_ANY:-}
    python3 "$AMP_ROOT/tests/checks.py" devsum "$TRACE_OUT" "$LOOPNAME"
    [[ -n $recorder ]] || return 0
    kill -INT "$recorder"
    wait_for "! _alive $recorder" "$AMP_TRACER_WAIT" || fail "recorder ignored SIGINT"
    "$AMPTRACE" report "$rec" -j >"$AMP_TMP/report.json" ||
        fail "report -j of the record failed"
    echo "The same from the record (amptrace report -j):"
    python3 "$AMP_ROOT/tests/relay_checks.py" "$AMP_TMP/report.json" "$log" \
        "$(stat -c %i "$log")" --mixed amp-snd-8,amp-snd-9
}

parts=" ${AMP_T44_PARTS:-1 2 3 4 5} "
part() { [[ $parts == *" $1 "* ]]; }

# 1. rsyslog alone: senders write to its socket, as to /dev/log.
if part 1; then
    mnt=$AMP_TMP/mnt
    make_loopfs ext4 256 "$mnt"
    start_rsyslog "$mnt/alone.log"
    senders_pass syslog "$RSYSLOG_SOCK" 0 "$mnt/alone.log" burst:60 mixed:40 "$AMP_TMP/alone.amp"
    _kill_wait "$RSYSLOG_PID" rsyslogd
fi

# 2. Behind journald: senders write journald's native socket; journald
# stores the line (its own disk) and forwards it to rsyslog's socket
# /run/systemd/journal/syslog with the sender's credentials.  journald
# sends its own instead once the sender is gone (ESRCH), so the senders
# stay 3 s.  It forwards without waiting: a line that finds rsyslog's
# socket full is dropped ("Forwarding to syslog missed N messages").  A
# systemd host allows 512 datagrams queued (systemd's sysctl.d
# 50-default.conf); the kernel's default is 10: as systemd does, while
# rsyslog's socket is made (a socket keeps the value it was made with).
# Kernel audit off (journald 257's default turns it on; 252 ignores the
# key): with it on, imjournal also reads the audit records journald stores
# (the tracer's own program loads make some), rsyslog drops them (not
# $AMP_TAG's), and its next write is named "(several senders)", as
# trace(8) SENDERS says.
AMP_JOURNALD=252 AMP_JOURNALD_CONF=$'ForwardToSyslog=yes\nAudit=no' use_journald
make_loopfs ext4 256 "$JOURNAL_DIR"
start_journald
make_loopfs ext4 256 "$AMP_TMP/mnt2"
qlen=$(sysctl -n net.unix.max_dgram_qlen)
at_exit sysctl -qw "net.unix.max_dgram_qlen=$qlen"
sysctl -qw net.unix.max_dgram_qlen=512
start_rsyslog "$AMP_TMP/mnt2/forwarded.log" "$(dirname "$JOURNALD_SOCK")/syslog"
sysctl -qw "net.unix.max_dgram_qlen=$qlen"
! part 2 || senders_pass journal "$JOURNALD_SOCK" 3 "$AMP_TMP/mnt2/forwarded.log" burst:60 mixed:40
_kill_wait "$RSYSLOG_PID" rsyslogd

# 4. rsyslog reading the journal (imjournal): no receive; the _PID journald
# wrote into each entry it reads names the line's sender, who need not
# linger.  (Here, ahead of 3, which leaves the tracer's output its own.)
if part 4; then
    start_rsyslog "$AMP_TMP/mnt2/imjournal.log" journal
    # The first write also holds what imjournal read and rsyslog dropped
    # since it started (journald 257's kernel lines, in Debian 13's arm64
    # guest): relayed, by whoever (--first-any).
    RELAY_FIRST_ANY=--first-any \
        senders_pass journal "$JOURNALD_SOCK" 0 "$AMP_TMP/mnt2/imjournal.log" burst:60 mixed:40
    _kill_wait "$RSYSLOG_PID" rsyslogd
fi

# 5. The same rsyslogd restarted under `-c rsyslogd`: amptrace probes the
# new process too (it looks every 2 s), and names its lines' senders.
if part 5; then
    log=$AMP_TMP/mnt2/restarted.log
    start_rsyslog "$log" journal
    start_tracer -c rsyslogd --preset write --dev "$LOOPNAME"
    _kill_wait "$RSYSLOG_PID" rsyslogd
    start_rsyslog "$log" journal
    sleep 3
    python3 "$AMP_ROOT/tests/line_sender.py" journal "$JOURNALD_SOCK" "$AMP_TAG" 0 spaced:4
    wait_for "[[ \$(wc -l <$log) -ge 4 ]]" 20 || fail "rsyslog wrote $(wc -l <"$log") of 4 lines"
    sync
    stop_tracer
    # The new rsyslogd resumes at the old one's cursor: the entries it reads
    # and filters away before the first line (the kernel's, journald's) are
    # that line's write's too (--first-any: relayed, by whoever).
    python3 "$AMP_ROOT/tests/relay_checks.py" "$TRACE_OUT" "$log" "$(stat -c %i "$log")" --first-any
    _kill_wait "$RSYSLOG_PID" rsyslogd
fi
part 3 || exit 0

# 3. A writer that receives with no credentials (a daemon's requests, here
# a socket without SO_PASSCRED, read by recvmsg) and logs to a file: its
# writes stay its own.
python3 - "$AMP_TMP/mnt2/daemon.log" 5 "$AMP_TMP/daemon.go" >"$AMP_TMP/daemon.out" <<'PY' &
import os, socket, sys, time
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
print(os.getpid(), flush=True)
while not os.path.exists(sys.argv[3]):  # until the tracer is attached
    time.sleep(0.1)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for i in range(int(sys.argv[2])):
    b.send(b"request %d" % i)
    msg = a.recvmsg(100)[0]
    os.write(fd, b"served " + msg + b"\n")
    time.sleep(0.3)
PY
daemon=$!
at_exit _kill_wait "$daemon" daemon
wait_for "[[ -s $AMP_TMP/daemon.out ]]" 10 || fail "the daemon did not start"
start_tracer -p "$daemon" --preset write --dev "$LOOPNAME"
touch "$AMP_TMP/daemon.go"
wait "$daemon" || fail "the daemon failed"
sync
stop_tracer
python3 - "$TRACE_OUT" "$daemon" <<'PY'
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1]) if '"entry"' in l]
mine = [e for e in entries if e["pid"] == int(sys.argv[2]) and e.get("file")]
bad = [e["sender"] for e in mine if e["sender"].get("how") != "self" or "relayed_receives" in e["sender"]]
if len(mine) != 5 or bad:
    sys.exit(f"FAIL: {len(mine)} write entries of 5, relayed: {bad}")
print(f"ok: a daemon's 5 writes after receives with no credentials: its own (how self)")
PY
