#!/usr/bin/env bash
# One-minute demo: a standalone journald writing to a fresh loop ext4, ten
# entries two seconds apart, traced by amptrace until the kernel has written
# them back on its own (dirty_expire, ~30 s).  Leaves nothing behind.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/lib.sh"
[[ $EUID -eq 0 ]] || { echo "demo: run as root (it makes a loop device and starts journald)" >&2; exit 1; }
pgrep -x systemd-journal >/dev/null &&
    { echo "demo: a systemd-journald is already running; the demo needs its own" >&2; exit 1; }
fs=${1:-ext4}

echo "demo: $fs loop device on /var/log/journal, standalone journald..."
make_loopfs "$fs" 1024 /var/log/journal
start_journald
echo "demo: tracing journald for 55 s on $LOOPNAME; sending 10 entries, 2 s apart"
(
    sleep 2
    for i in $(seq 1 10); do
        send_journal_entry "amptrace demo line $i" DEMO_SEQ="$i"
        sleep 2
    done
) &
at_exit _kill_wait $! sender
"$AMPTRACE" trace -c systemd-journal --dev "$LOOPNAME" -d 55
