#!/usr/bin/env bash
# Who pays: each journald entry names the process and the service that
# sent its record, as the journal itself does.  Real journald (AMP_JOURNALD:
# 252, the default, or 257) on a loop ext4, traced with -c systemd-journal;
# senders in cgroups named as systemd names services (made under the cgroup
# v2 mount and removed after):
#  - amptest-chatty.service: `logger --journald` started 6 times, one line
#    each: short-lived senders, gone before amptrace names them;
#  - amptest-steady.service: one python3 that stays, 4 native datagrams;
#  - amptest-burst.service: one `logger` sending 20 syslog lines (/dev/log);
#  - amptest-stream.service: a shell printing 3 lines to its stdout stream
#    (systemd-cat);
#  - amptest-brief.service: one logger line, then the process and its
#    cgroup are gone before amptrace names the entry;
#  - the kernel: 2 lines written to /dev/kmsg.
# Against the journal's own fields (journalctl -o export: _PID, _COMM,
# _SYSTEMD_UNIT, _TRANSPORT), tests/sender_checks.py: every sender pid has
# as many receive entries as the journal has entries of that _PID, each
# with the journal's comm and unit; the kernel's lines are the kernel's;
# the per-sender rows add up to journald's own rows; the metrics' sender
# counters (3 labels, then "other") add up to the same; explain's match
# of each traced entry to its journal entry agrees with its _PID.  Twice:
# through the syscalls' own tracepoints and through the raw hook.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

cg2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[[ -n $cg2 ]] || skip "no cgroup v2 mount: senders' units cannot be set up"
use_journald
make_loopfs ext4 1024 "$JOURNAL_DIR"
start_journald
journal=$(journald_file)

# A unit's cgroup goes with whatever is left in it.
_rm_unit() {
    [[ -d $1 ]] || return 0
    [[ ! -e $1/cgroup.kill ]] || echo 1 >"$1/cgroup.kill"
    xargs -r kill -9 <"$1/cgroup.procs" 2>/dev/null || true
    wait_for "[[ ! -s $1/cgroup.procs ]]" 10 || true
    rmdir "$1"
}
slice=$cg2/amptest-$$.slice
mkdir "$slice"
at_exit rmdir "$slice"
for u in chatty steady burst stream brief; do
    mkdir "$slice/amptest-$u.service"
    at_exit _rm_unit "$slice/amptest-$u.service"
done
# in_unit UNIT CMD...: CMD in that unit's cgroup (a fresh shell moves
# itself there, then becomes CMD).
in_unit() {
    local unit=$1; shift
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$slice/amptest-$unit.service" "$@"
}

# The journald's own release of a tool: in its root, if it has one.
own() { if [[ -n $JOURNALD_ROOT ]]; then echo chroot "$JOURNALD_ROOT"; fi; }

# One pass: the senders, traced through HOOK's syscall hooks; each line
# ends with the pass's tag.
senders_pass() {
    local hook=$1 tag=$$-$1 steady same other prom=$AMP_TMP/amptrace.prom
    local -a args=()
    [[ $hook == default ]] || args=("--$hook")
    # Metrics with a cap of 3 sender labels: the others are summed as "other".
    start_tracer -c systemd-journal --dev "$LOOPNAME" --metrics-file "$prom" --metrics-senders 3 \
        "${args[@]}"
    for i in 1 2 3 4 5 6; do
        # shellcheck disable=SC2046  # own's words
        printf 'MESSAGE=amptest chatty %s %s\nSYSLOG_IDENTIFIER=amptest\n' "$i" "$tag" |
            in_unit chatty $(own) logger --journald
    done
    # (sh itself, not in_unit's subshell, in the background: $! is python.)
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$slice/amptest-steady.service" \
        python3 - "$JOURNALD_SOCK" "$tag" <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for i in range(4):
    s.sendto(f"MESSAGE=amptest steady {i} {sys.argv[2]}\nSYSLOG_IDENTIFIER=amptest\n".encode(),
             sys.argv[1])
    time.sleep(0.2)
time.sleep(30)   # still alive when amptrace names it
EOF
    steady=$!
    at_exit _kill_wait "$steady" steady
    # A service that logs a line and is gone, its cgroup too, long before
    # amptrace names the line's entry (once its pages are written).
    mkdir -p "$slice/amptest-brief.service"
    # shellcheck disable=SC2046
    printf 'MESSAGE=amptest brief 1 %s\nSYSLOG_IDENTIFIER=amptest\n' "$tag" |
        in_unit brief $(own) logger --journald
    _rm_unit "$slice/amptest-brief.service"
    # shellcheck disable=SC2046
    seq 1 20 | sed "s/^/amptest burst /; s/\$/ $tag/" |
        in_unit burst $(own) logger -u /run/systemd/journal/dev-log -t amptest
    # shellcheck disable=SC2046
    in_unit stream $(own) systemd-cat -t amptest \
        sh -c 'for i in 1 2 3; do echo "amptest stream $i $0"; done' "$tag"
    # (The kernel's ring keeps earlier runs' lines, which journald reads at
    # its start: only this pass's tag counts.)
    echo "amptest kernel 1 $tag" >/dev/kmsg
    echo "amptest kernel 2 $tag" >/dev/kmsg
    sleep 2
    sync
    sleep 1
    stop_tracer
    _log "hook: $hook"

    journald_run journalctl --file "$(journal_path "$journal")" -o export >"$AMP_TMP/export" 2>/dev/null ||
        fail "journalctl -o export failed"
    python3 "$AMP_ROOT/tests/sender_checks.py" "$TRACE_OUT" "$AMP_TMP/export" --tag "$tag" --kmsg \
        --metrics "$prom" \
        --units amptest-chatty.service,amptest-steady.service,amptest-burst.service,amptest-stream.service,amptest-brief.service

    # explain matches the traced entries to the journal entries they wrote:
    # each matched journal entry's _PID is its traced entry's sender.
    "$AMPTRACE" explain -t "$TRACE_OUT" "$journal" >"$AMP_TMP/explain.txt" 2>"$AMP_TMP/explain.err" ||
        fail "explain failed: $(cat "$AMP_TMP/explain.err")"
    sed -n '/^Per sender/,$p' "$AMP_TMP/explain.txt"
    # (A here-string: the qemu guests have no /dev/fd for <(...).)
    read -r same other <<<"$(sed -n 's/^Senders: of the journal entries a receive brought with a _PID, \([0-9]*\) were sent by the traced entry.s sender, \([0-9]*\) by another process\.$/\1 \2/p' "$AMP_TMP/explain.txt")"
    [[ -n ${same-} ]] || fail "explain printed no Senders line"
    ((same >= 30 && other == 0)) ||
        fail "explain: $same journal entries' _PID is their traced entry's sender, $other another's"
    ok "explain ($hook): the $same matched journal entries with a _PID were each sent by their traced entry's sender"
}

# Both ways into the receive: the syscalls' own tracepoints, and the raw
# hook (kernels without them).
senders_pass default
senders_pass raw-syscalls
