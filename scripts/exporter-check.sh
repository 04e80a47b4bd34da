#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# amptrace-exporter.service under a booted systemd, with amptrace installed
# (the .deb, or make install): the hook for a systemd guest or container.
#
#   scripts/exporter-check.sh [--keep]     (root, on the booted system)
#
# Starts the unit with its default options (journald, 127.0.0.1:9464,
# /run/amptrace-exporter/amptrace.prom), then checks:
#  1. it is active, serves /metrics, and its process runs with exactly the
#     unit's capabilities (CapEff = CapBnd = CAP_BPF, CAP_PERFMON,
#     CAP_SYSLOG) on the syscall tracepoints;
#  2. 20 lines sent with logger(1), flushed by journalctl --sync and sync,
#     are counted: amptrace_entries_total{comm="systemd-journal"} grows by
#     at least 20 in the textfile and the endpoint, with no loss;
#  3. systemctl stop: exit status 0, its summary in the unit's journal, and
#     no amptrace BPF program left loaded.
# Prints "ok: ..." lines and exits 0, or "FAIL: ..." and exits 1.  The
# unit is stopped again at the end unless --keep.
set -euo pipefail
unit=amptrace-exporter.service
url=http://127.0.0.1:9464/metrics
prom=/run/amptrace-exporter/amptrace.prom
keep=${1:-}
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; [[ $keep == --keep ]] || systemctl stop "$unit" 2>/dev/null; exit 1; }
wait_for() { local i; for ((i = 0; i < $2 * 10; i++)); do eval "$1" && return 0; sleep 0.1; done; return 1; }
entries() { sed -n 's/^amptrace_entries_total{pid="[0-9]*",comm="systemd-journal"} //p' "$@" | awk '{ s += $1 } END { print s + 0 }'; }

[[ $EUID -eq 0 ]] || { echo "exporter-check: needs root" >&2; exit 1; }
[[ -d /run/systemd/system ]] || { echo "exporter-check: not a booted systemd" >&2; exit 1; }
since=$(date '+%Y-%m-%d %H:%M:%S')
systemctl start "$unit" || fail "systemctl start: $(journalctl -u "$unit" -n 20 --no-pager)"
# The endpoint answers from the start; the programs are attached once the
# start line ("tracing (...)") is in the journal.
started() { journalctl -u "$unit" --since "$since" --no-pager -o cat | grep 'tracing ('; }
wait_for "started >/dev/null" 60 || fail "not tracing after 60 s: $(journalctl -u "$unit" -n 20 --no-pager)"
wait_for "curl -sf $url >/dev/null" 10 || fail "no $url: $(journalctl -u "$unit" -n 20 --no-pager)"
pid=$(systemctl show -P MainPID "$unit")
[[ $pid -gt 0 ]] || fail "no main pid"
caps() { capsh --decode="$(sed -n "s/^$1:\t//p" "/proc/$pid/status")" | sed 's/.*=//' | tr ',' '\n' | sort | paste -sd,; }
want=cap_bpf,cap_perfmon,cap_syslog
[[ $(caps CapEff) == "$want" && $(caps CapBnd) == "$want" ]] ||
    fail "capabilities: effective $(caps CapEff), bounding $(caps CapBnd), want $want"
started | grep -q 'syscall tracepoints)' || fail "not on the syscall tracepoints: $(started)"
ok "$unit active (pid $pid), $url answers, capabilities $want, syscall tracepoints"

before=$(curl -s "$url" | entries)
for i in $(seq 20); do logger -t amptrace-check "exporter check line $i"; done
journalctl --sync
sync
# An entry counts once its pages are written and its write-out window
# closed (6 s of disk idle, 60 s at most).
wait_for "(( \$(curl -s $url | entries) >= before + 20 ))" 90 ||
    fail "entries went from $before to $(curl -s "$url" | entries), want +20"
wait_for "(( \$(entries $prom) >= before + 20 ))" 5 || fail "textfile $prom: $(entries "$prom") entries"
if curl -s "$url" | grep '^amptrace_losses_total' | grep -qv ' 0$'; then
    fail "losses: $(curl -s "$url" | grep '^amptrace_losses_total' | grep -v ' 0$')"
fi
ok "20 logger lines counted: entries $before -> $(curl -s "$url" | entries), textfile too, no losses"

[[ $keep == --keep ]] && exit 0
since=$(date '+%Y-%m-%d %H:%M:%S')
systemctl stop "$unit"
[[ $(systemctl show -P ExecMainStatus "$unit") == 0 ]] || fail "exit status $(systemctl show -P ExecMainStatus "$unit")"
journalctl -u "$unit" --since "$since" --no-pager | grep -q 'Losses: none' ||
    fail "no summary with 'Losses: none' in the journal after stop"
if bpftool prog show 2>/dev/null | grep -qE 'name (on_syscall_enter|on_dirty_folio|on_rq_complete)'; then
    fail "BPF programs of amptrace still loaded after stop"
fi
ok "systemctl stop: exit 0, summary in the journal, nothing left loaded"
