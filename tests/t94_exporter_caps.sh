#!/usr/bin/env bash
# The exporter service's command line, run with exactly the capabilities its
# unit keeps (CapabilityBoundingSet of scripts/dist/systemd/amptrace-exporter.service.in,
# everything else dropped with capsh, as root's uid like the unit):
#  1. the unit's default arguments equal the defaults file's;
#  2. it starts on the syscall tracepoints (tracefs readable without
#     CAP_DAC_*), its effective capabilities are exactly the unit's, and
#     it counts the synthetic writer's 8 entries in the textfile; SIGTERM
#     (systemctl stop) ends it with exit 0 and a summary without losses;
#  3. CAP_SYSLOG is what lets it find xfs's log completion in kallsyms
#     (where xfs is loaded): without it, -v says the log counts as metadata.
# The same unit under a booted systemd: scripts/exporter-check.sh.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
command -v capsh >/dev/null || skip "capsh not installed (libcap2-bin)"
unit=$AMP_ROOT/scripts/dist/systemd/amptrace-exporter.service.in
defaults=$AMP_ROOT/scripts/dist/default/amptrace-exporter

args=$(set +u; . "$defaults"; echo "$AMPTRACE_EXPORTER_ARGS")
[[ $(sed -n 's/^Environment="AMPTRACE_EXPORTER_ARGS=\(.*\)"$/\1/p' "$unit") == "$args" ]] ||
    fail "the unit's default AMPTRACE_EXPORTER_ARGS differ from $defaults"
ok "default arguments: $args"
keep=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z ' 'a-z\n' | sort | paste -sd,)
[[ -n $keep ]] || fail "no CapabilityBoundingSet in the unit"
all=$(capsh --print | sed -n 's/^Bounding set =//p')
drop=$(tr ',' '\n' <<<"$all" | grep -vxF -f <(tr ',' '\n' <<<"$keep") | paste -sd,)

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
writer=synth_$$
cp "$SYNTH_WRITER" "$AMP_TMP/$writer"
mkdir "$AMP_TMP/run"
prom=$AMP_TMP/run/amptrace.prom
# The defaults, pointed at this test: its writer, a free port, its folder.
read -ra argv <<<"$args"
for ((i = 0; i < ${#argv[@]}; i++)); do
    case ${argv[i]} in
        -c) argv[i + 1]=$writer ;;
        --metrics) argv[i + 1]=127.0.0.1:0 ;;
        --metrics-file) argv[i + 1]=$prom ;;
    esac
done
capsh --drop="$drop" -- -c 'exec "$0" trace "$@"' "$AMPTRACE" "${argv[@]}" --dev "$LOOPNAME" \
    >"$AMP_TMP/out" 2>"$AMP_TMP/err" &
pid=$!
at_exit _kill_wait "$pid" amptrace
wait_for "grep -q 'tracing (' $AMP_TMP/err || ! _alive $pid" 30 || fail "exporter did not start"
_alive "$pid" || fail "exporter died: $(cat "$AMP_TMP/err")"
grep -q 'tracing (.*syscall tracepoints)' "$AMP_TMP/err" || fail "not on the syscall tracepoints: $(grep 'tracing (' "$AMP_TMP/err")"
eff=$(capsh --decode="$(sed -n 's/^CapEff:\t//p' "/proc/$pid/status")" | sed 's/.*=//' | tr ',' '\n' | sort | paste -sd,)
[[ $eff == "$keep" ]] || fail "effective capabilities $eff, the unit keeps $keep"
ok "started on the syscall tracepoints with exactly $eff"

"$AMP_TMP/$writer" -n 8 -w 2 -m 3 "$mnt" | cat >/dev/null
sync
wait_for "grep -q '^amptrace_entries_total{pid=\"[0-9]*\",comm=\"$writer\"} 8$' $prom 2>/dev/null" 30 ||
    fail "textfile did not reach 8 entries: $(grep entries_total "$prom" 2>&1)"
kill -TERM "$pid"
wait_for "! _alive $pid" 30 || fail "exporter ignored SIGTERM"
rc=0; wait "$pid" || rc=$?
((rc == 0)) || fail "exporter exited $rc after SIGTERM: $(cat "$AMP_TMP/err")"
grep -q '^Losses: none' "$AMP_TMP/out" || fail "summary: $(grep -A3 '^Losses' "$AMP_TMP/out")"
grep -q '^amptrace_losses_total{kind="ringbuf_drops"} 0$' "$prom" || fail "textfile losses"
ok "8 entries of $writer in the textfile; SIGTERM: exit 0, summary, no losses"

if grep -qw xlog_bio_end_io /proc/kallsyms; then
    cap_run() { capsh --drop="$1" -- -c 'exec "$0" trace -v -d 0.5 --dev "$1" -c nobody-here' \
                    "$AMPTRACE" "$LOOPNAME" 2>"$AMP_TMP/v.err" >/dev/null || fail "amptrace -v: $(grep -v ^libbpf "$AMP_TMP/v.err")"; }
    cap_run "$drop"
    ! grep -q 'xlog_bio_end_io not in kallsyms' "$AMP_TMP/v.err" || fail "with the unit's capabilities, xfs log completion not found"
    cap_run "$drop,cap_syslog"
    grep -q 'xlog_bio_end_io not in kallsyms' "$AMP_TMP/v.err" || fail "without CAP_SYSLOG the xfs log completion was still found"
    ok "CAP_SYSLOG: xfs log completion found with it, not without"
else
    echo "note: xfs not loaded: CAP_SYSLOG's part (kallsyms) not exercised"
fi
