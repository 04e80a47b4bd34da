#!/usr/bin/env bash
# Fleet metrics, `amptrace trace --metrics ADDR:PORT --metrics-file PATH`:
#  0. bad addresses, an unwritable textfile, a port in use: one line, exit 1;
#  1. the endpoint serves the Prometheus text format to curl (promtool check
#     metrics passes) and OpenMetrics, ending in "# EOF", to a client asking
#     for it; other paths are 404, other methods 405;
#  2. a real Prometheus server (Debian's) scrapes it on loopback: the target
#     is up and the synthetic writer's entry counter reads 8;
#  3. at exit, the textfile (written atomically: no temporary left) passes
#     promtool and its counters equal the run's JSON summary.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
command -v promtool >/dev/null || skip "promtool not installed (Debian package prometheus)"
command -v curl >/dev/null || skip "curl not installed"

bad "$AMPTRACE" trace --metrics 127.0.0.1:99999
bad "$AMPTRACE" trace --metrics localhost:9464
bad "$AMPTRACE" trace --metrics ::1:9464
bad "$AMPTRACE" trace --metrics-file /nonexistent/dir/amptrace.prom
bad "$AMPTRACE" trace --metrics-file "$AMP_TMP/"
bad "$AMPTRACE" trace --metrics-senders many

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
sync; _wait_quiet "$mnt" 3 15

# A private copy of the writer under a name of its own, so that another
# test's synth_writer running meanwhile is not traced (-c) as ours.
writer=synth_$$
cp "$SYNTH_WRITER" "$AMP_TMP/$writer"

mkdir "$AMP_TMP/textfile"
prom=$AMP_TMP/textfile/amptrace.prom
start_tracer -c "$writer" --dev "$LOOPNAME" --metrics 127.0.0.1:0 --metrics-file "$prom"
url=$(sed -n 's/^amptrace: metrics at \(http:[^ ]*\)$/\1/p' "$AMP_TMP/tracer.err")
[[ $url == http://127.0.0.1:*/metrics ]] || fail "no metrics URL on stderr: $(cat "$AMP_TMP/tracer.err")"
hostport=${url#http://}
hostport=${hostport%/metrics}
ok "endpoint: $url"
bad "$AMPTRACE" trace -c "$writer" --metrics "$hostport"   # the port is taken

# ---- 2 (started early: Prometheus takes a few seconds to come up) ---------
have_prometheus=0
if command -v prometheus >/dev/null; then
    pport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    cat >"$AMP_TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: amptrace
    static_configs:
      - targets: ['$hostport']
EOF
    prometheus --config.file="$AMP_TMP/prometheus.yml" --storage.tsdb.path="$AMP_TMP/tsdb" \
        --web.listen-address="127.0.0.1:$pport" >"$AMP_TMP/prometheus.log" 2>&1 &
    prom_pid=$!
    at_exit _kill_wait "$prom_pid" prometheus
    have_prometheus=1
else
    echo "note: no prometheus binary: scrape by a real server not exercised"
fi

"$AMP_TMP/$writer" -n 8 -w 2 -m 3 "$mnt" | cat >/dev/null
sync
wait_for "curl -s $url | grep -q '^amptrace_entries_total{pid=\"[0-9]*\",comm=\"$writer\"} 8$'" 30 ||
    fail "entries counter did not reach 8: $(curl -s "$url" | grep entries_total)"
ok "$(curl -s "$url" | grep '^amptrace_entries_total')"
# Its sender is itself (a write), in no unit: its comm is the label.
# (Read whole first: grep -q stops reading, and curl's broken pipe would
# fail the pipeline.)
body=$(curl -s "$url")
grep -q "^amptrace_sender_entries_total{sender=\"$writer\"} 8$" <<<"$body" ||
    fail "no sender counter of 8 for $writer: $(grep sender_entries <<<"$body")"
ok "$(curl -s "$url" | grep '^amptrace_sender_entries_total')"

# ---- 1. formats ------------------------------------------------------------
curl -s -D "$AMP_TMP/text.hdr" "$url" >"$AMP_TMP/text.txt"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$AMP_TMP/text.hdr" || fail "text: $(cat "$AMP_TMP/text.hdr")"
promtool check metrics <"$AMP_TMP/text.txt" || fail "promtool check metrics rejected the endpoint's text"
ok "text format: $(grep -vc '^#' "$AMP_TMP/text.txt") samples, promtool check metrics passes"
curl -s -H 'Accept: application/openmetrics-text; version=1.0.0' -D "$AMP_TMP/om.hdr" "$url" >"$AMP_TMP/om.txt"
grep -qi '^Content-Type: application/openmetrics-text; version=1.0.0' "$AMP_TMP/om.hdr" ||
    fail "OpenMetrics: $(cat "$AMP_TMP/om.hdr")"
[[ $(tail -n 1 "$AMP_TMP/om.txt") == '# EOF' ]] || fail "OpenMetrics exposition does not end with # EOF"
grep -q '^# TYPE amptrace_entries counter$' "$AMP_TMP/om.txt" || fail "OpenMetrics: counter family named with _total"
ok "OpenMetrics: families without _total, ends with # EOF"
[[ $(curl -s -o /dev/null -w '%{http_code}' "${url%/metrics}/") == 404 ]] || fail "/ is not 404"
[[ $(curl -s -o /dev/null -w '%{http_code}' -X POST "$url") == 405 ]] || fail "POST is not 405"
ok "/ -> 404, POST -> 405"

if ((have_prometheus)); then
    papi=http://127.0.0.1:$pport/api/v1
    query() { curl -s "$papi/query" --data-urlencode "query=$1" |
              python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'; }
    wait_for "[[ \$(query 'amptrace_entries_total{comm=\"$writer\"}' 2>/dev/null) == 8 ]]" 60 ||
        fail "Prometheus did not scrape 8 entries: $(curl -s "$papi/targets"); $(tail -n 5 "$AMP_TMP/prometheus.log")"
    [[ $(query 'up{job="amptrace"}') == 1 ]] || fail "target not up: $(curl -s "$papi/targets")"
    ok "Prometheus 127.0.0.1:$pport scraped it: up=1, amptrace_entries_total{comm=\"$writer\"} = 8"
    # Prometheus asks for OpenMetrics first; its metadata then names the family.
    curl -s "$papi/metadata?metric=amptrace_entries" | grep -q '"type":"counter"' ||
        fail "Prometheus has no counter metadata for the OpenMetrics family amptrace_entries"
    ok "Prometheus read the OpenMetrics exposition (family amptrace_entries, counter)"
fi

# ---- 3. textfile -----------------------------------------------------------
[[ -s $prom ]] || fail "no textfile while running"
stop_tracer
ls "$AMP_TMP/textfile" >"$AMP_TMP/textfile.ls"
[[ $(cat "$AMP_TMP/textfile.ls") == amptrace.prom ]] || fail "textfile dir holds: $(cat "$AMP_TMP/textfile.ls")"
promtool check metrics <"$prom" || fail "promtool check metrics rejected $prom"
ok "textfile: promtool passes; nothing but amptrace.prom in its directory"
python3 - "$prom" "$TRACE_OUT" "$writer" "$LOOPNAME" <<'PY'
import json, re, sys
prom, trace, writer, dev = sys.argv[1:5]
samples = {}
for line in open(prom):
    if line.startswith("#"):
        continue
    m = re.match(r'(\w+)(?:\{(.*)\})? (\d+(?:\.\d+)?)$', line.strip())
    assert m, f"unparsable sample: {line!r}"
    labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
    # io_share counters are fractions; the rest whole numbers
    v = float(m.group(3)) if "." in m.group(3) else int(m.group(3))
    samples[(m.group(1), tuple(sorted(labels.items())))] = v
def get(name, **labels):
    return samples[(name, tuple(sorted((k, str(v)) for k, v in labels.items())))]
summary = [json.loads(l) for l in open(trace)][-1]
p = [p for p in summary["processes"] if p["comm"] == writer]
assert len(p) == 1, summary["processes"]
p = p[0]
lab = dict(pid=p["pid"], comm=writer)
checks = [("amptrace_entries_total", lab, p["entries"]),
          ("amptrace_syscall_bytes_total", lab, p["bytes"]),
          ("amptrace_pages_dirtied_total", lab, p["pages_dirtied"]),
          ("amptrace_ios_total", lab, p["ios"])]
for cls in ("data", "metadata", "journal", "window"):
    checks.append(("amptrace_charged_bytes_total", dict(lab, **{"class": cls}), p["dev_bytes"][cls]))
d = [d for d in summary["devices"] if d["name"] == dev][0]
for cls, v in d["classes"].items():
    checks.append(("amptrace_device_written_bytes_total", {"device": dev, "class": cls}, v))
checks.append(("amptrace_device_stat_written_bytes_total", {"device": dev}, d["counter_bytes"]))
checks.append(("amptrace_device_ios_total", {"device": dev}, d["ios"]))
for kind, v in summary["losses"].items():
    checks.append(("amptrace_losses_total", {"kind": kind}, v))
checks.append(("amptrace_clock_steps_total", {}, summary["clock"]["steps"]))
for name, labels, want in checks:
    got = get(name, **labels)
    assert got == want, f"{name}{labels} = {got}, the summary says {want}"
# Its part of the disks' requests (its journal shares' too): some, and no
# more than the disk made.
share = get("amptrace_io_share_total", **lab)
assert 0 < share <= d["ios"] + 0.5, f"amptrace_io_share_total = {share}, the disk's {d['ios']}"
print(f"ok: {len(checks)} textfile counters = the trace's summary "
      f"(entries {p['entries']}, charged {p['dev_bytes']}, {dev} classes {d['classes']})")
PY
