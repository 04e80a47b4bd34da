#!/usr/bin/env bash
# The Prometheus rules shipped for the exporter (scripts/dist/prometheus/
# amptrace.rules.yml), with promtool:
#  1. `promtool check rules` passes, and every metric they read is one that
#     user/sink/metrics.c exports;
#  2. `promtool test rules` over series written here, one sample a minute,
#     shaped like the exporter's (per pid and comm; a device's classes):
#     - a journald charged 400,000 B/s for 2,000 B/s logged: amplification
#       200, its classes' rates, the device's rates and amplification;
#     - rsyslogd at 1.2x, a quiet logger at 1000x but 10 KB/s, and a
#       bursty one at 200x for 10 minutes only;
#     - the alert is pending, not firing, at 14 m; at 20 m and 30 m it
#       fires for journald alone (over 100x for 15 m, over 256 KiB/s);
#     - a loss counter that moves fires AmptraceLosses, one that stays
#       at 0 does not;
#     - per sender: a unit's charged bytes (two classes), its write
#       requests and records per second.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || skip "promtool not installed (Debian package prometheus)"
rules=$AMP_ROOT/scripts/dist/prometheus/amptrace.rules.yml

promtool check rules "$rules" || fail "promtool check rules rejected $rules"
ok "promtool check rules passes"

for m in $(grep -o 'amptrace_[a-z_]*_total' "$rules" | sort -u); do
    grep -q "\"${m%_total}\"" "$AMP_ROOT/user/sink/metrics.c" ||
        fail "the rules read $m, which user/sink/metrics.c does not export"
done
ok "every metric the rules read is exported: $(grep -o 'amptrace_[a-z_]*_total' "$rules" | sort -u | paste -sd' ')"

# Counters per minute: bytes/s x 60.
L='instance="h1",job="amptrace"'
cat >"$AMP_TMP/test.yml" <<YAML
rule_files: [$rules]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'amptrace_syscall_bytes_total{$L,pid="100",comm="systemd-journal"}'
        values: '0+120000x40'
      - series: 'amptrace_charged_bytes_total{$L,pid="100",comm="systemd-journal",class="data"}'
        values: '0+18000000x40'
      - series: 'amptrace_charged_bytes_total{$L,pid="100",comm="systemd-journal",class="journal"}'
        values: '0+6000000x40'
      - series: 'amptrace_syscall_bytes_total{$L,pid="200",comm="rsyslogd"}'
        values: '0+6000000x40'
      - series: 'amptrace_charged_bytes_total{$L,pid="200",comm="rsyslogd",class="data"}'
        values: '0+7200000x40'
      - series: 'amptrace_syscall_bytes_total{$L,pid="300",comm="quietlog"}'
        values: '0+600x40'
      - series: 'amptrace_charged_bytes_total{$L,pid="300",comm="quietlog",class="data"}'
        values: '0+600000x40'
      - series: 'amptrace_syscall_bytes_total{$L,pid="400",comm="bursty"}'
        values: '0+120000x10 1200000+6000000x30'
      - series: 'amptrace_charged_bytes_total{$L,pid="400",comm="bursty",class="data"}'
        values: '0+24000000x10 240000000+6000000x30'
      - series: 'amptrace_device_written_bytes_total{$L,device="sda",class="data"}'
        values: '0+24000000x40'
      - series: 'amptrace_device_written_bytes_total{$L,device="sda",class="journal"}'
        values: '0+6000000x40'
      - series: 'amptrace_device_written_bytes_total{$L,device="sda",class="metadata"}'
        values: '0+600000x40'
      - series: 'amptrace_device_written_bytes_total{$L,device="sda",class="other"}'
        values: '0+60000000x40'
      - series: 'amptrace_sender_charged_bytes_total{$L,sender="chatty.service",class="data"}'
        values: '0+3000000x40'
      - series: 'amptrace_sender_charged_bytes_total{$L,sender="chatty.service",class="journal"}'
        values: '0+1200000x40'
      - series: 'amptrace_sender_ios_total{$L,sender="chatty.service"}'
        values: '0+540x40'
      - series: 'amptrace_sender_entries_total{$L,sender="chatty.service"}'
        values: '0+120x40'
      - series: 'amptrace_sender_io_share_total{$L,sender="chatty.service"}'
        values: '0+90x40'
      - series: 'amptrace_losses_total{$L,kind="ringbuf_drops"}'
        values: '0x20 5x20'
      - series: 'amptrace_losses_total{$L,kind="pages_full"}'
        values: '0x40'
    promql_expr_test:
      # round(): Prometheus 2.42's promtool compares floats exactly.
      - expr: round(instance_comm:amptrace_amplification:ratio_rate5m{comm=~"systemd-journal|rsyslogd|quietlog"}, 0.001)
        eval_time: 10m
        exp_samples:
          - labels: '{$L,comm="systemd-journal"}'
            value: 200
          - labels: '{$L,comm="rsyslogd"}'
            value: 1.2
          - labels: '{$L,comm="quietlog"}'
            value: 1000
      - expr: instance_comm_class:amptrace_charged_bytes:rate5m{comm="systemd-journal"}
        eval_time: 10m
        exp_samples:
          - labels: 'instance_comm_class:amptrace_charged_bytes:rate5m{$L,comm="systemd-journal",class="data"}'
            value: 300000
          - labels: 'instance_comm_class:amptrace_charged_bytes:rate5m{$L,comm="systemd-journal",class="journal"}'
            value: 100000
      - expr: round(instance_device_class:amptrace_device_written_bytes:rate5m, 0.001)
        eval_time: 10m
        exp_samples:
          - labels: '{$L,device="sda",class="data"}'
            value: 400000
          - labels: '{$L,device="sda",class="journal"}'
            value: 100000
          - labels: '{$L,device="sda",class="metadata"}'
            value: 10000
          - labels: '{$L,device="sda",class="other"}'
            value: 1000000
      # (400,000 + 100,000 + 10,000) B/s over 2,000 + 100,000 + 10 + 2,000 logged
      - expr: round(instance_device:amptrace_amplification:ratio_rate5m, 0.001)
        eval_time: 10m
        exp_samples:
          - labels: '{$L,device="sda"}'
            value: 4.903
      # 2 lines/s, 9 requests/s, 70,000 B/s charged
      - expr: instance_sender:amptrace_sender_charged_bytes:rate5m
        eval_time: 10m
        exp_samples:
          - labels: 'instance_sender:amptrace_sender_charged_bytes:rate5m{$L,sender="chatty.service"}'
            value: 70000
      - expr: instance_sender:amptrace_sender_ios:rate5m
        eval_time: 10m
        exp_samples:
          - labels: 'instance_sender:amptrace_sender_ios:rate5m{$L,sender="chatty.service"}'
            value: 9
      - expr: instance_sender:amptrace_sender_io_share:rate5m
        eval_time: 10m
        exp_samples:
          - labels: 'instance_sender:amptrace_sender_io_share:rate5m{$L,sender="chatty.service"}'
            value: 1.5
      - expr: instance_sender:amptrace_sender_entries:rate5m
        eval_time: 10m
        exp_samples:
          - labels: 'instance_sender:amptrace_sender_entries:rate5m{$L,sender="chatty.service"}'
            value: 2
    alert_rule_test:
      - alertname: AmptraceLoggerAmplificationHigh
        eval_time: 14m
        exp_alerts: []
      - alertname: AmptraceLoggerAmplificationHigh
        eval_time: 20m
        exp_alerts:
          - exp_labels: {instance: h1, job: amptrace, comm: systemd-journal, severity: warning}
            exp_annotations:
              summary: "systemd-journal on h1: each logged byte costs 200 bytes on disk"
              description: "Device bytes charged to systemd-journal's logging syscalls have been over 100 times the bytes it logged for 15 minutes (amptrace-trace(8), amptrace-compare(8))."
      - alertname: AmptraceLoggerAmplificationHigh
        eval_time: 30m
        exp_alerts:
          - exp_labels: {instance: h1, job: amptrace, comm: systemd-journal, severity: warning}
            exp_annotations:
              summary: "systemd-journal on h1: each logged byte costs 200 bytes on disk"
              description: "Device bytes charged to systemd-journal's logging syscalls have been over 100 times the bytes it logged for 15 minutes (amptrace-trace(8), amptrace-compare(8))."
      - alertname: AmptraceLosses
        eval_time: 10m
        exp_alerts: []
      - alertname: AmptraceLosses
        eval_time: 25m
        exp_alerts:
          - exp_labels: {instance: h1, job: amptrace, kind: ringbuf_drops, severity: info}
            exp_annotations:
              summary: "amptrace on h1 lost measurements (ringbuf_drops)"
YAML
promtool test rules "$AMP_TMP/test.yml" || fail "promtool test rules failed"
ok "promtool test rules: recording rules, the amplification alert (journald only, after 15 m) and the loss alert"
