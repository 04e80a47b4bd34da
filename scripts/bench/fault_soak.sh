#!/usr/bin/env bash
# A soak with faults (issue 37): journald 252 traced as
# amptrace-exporter.service traces it (trace -q --metrics --metrics-file),
# a sender at RATE lines/s, and every EVERY seconds (the first after half
# of that) a fault, in turn:
#
#   stall    the tracer SIGSTOPped for 6 s (its ring fills: drops counted)
#   rotate   journalctl --rotate
#   vacuum   journalctl --vacuum-files=2: archived files deleted, their
#            dirty pages with them
#   restart  journald stopped and started again (the sender held
#            meanwhile, and journald's socket drained: no line in flight)
#   flakey   for 20 s the disk fails every write to a block its backing
#            file does not hold (the backing tmpfs filled, as in t63),
#            journald's pages written by a syncfs every 5 s
#
# What it checks, and prints, at the end (exit 1 if one fails):
#   - every line sent is an entry of the sender's, or a counted loss:
#     entries <= lines <= entries + ring drops (the one loss that takes
#     an entry's record; the others count pages, or entries that ended
#     unsettled, and are printed);
#   - the tracer's RSS after the warm-up (a sixth of the run, 2 to 5 min)
#     flat within 10 %: the median of the last fifth of its samples over
#     that of the first fifth (max/min printed: a fault's peak);
#   - the disk's classes, the failed class with them, equal its counter;
#   - SIGTERM ends the tracer with exit 0 and its summary's Losses line.
# Samples every 10 s in DIR/fault_soak.tsv, the faults in DIR/faults.tsv.
#
#   scripts/bench/fault_soak.sh [-m MINUTES] [-r PER_S] [-e EVERY_S]
#                               [-f FAULT,...] [-F FS] [-j] [-o DIR]
#
# FS: xfs (the default) or ext4.  xfs retries a failed metadata write
# until the window closes (its default for EIO) and lives on; ext4 aborts
# its journal at the first one, and from then on drops the dirty pages it
# cannot write, unseen: their entries end as entries_timed_out, and the
# rest of the run writes nothing.
# Defaults: 30 min, 1,000 lines/s, a fault every 180 s, all five, DIR
# /tmp/amptrace-fault-soak.  -j: every entry as JSON in DIR/entries.json
# (to look into one; the summary is then its last line).  `make
# soak-faults` runs it (SOAK_ARGS=...).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib.sh"
minutes=30 rate=1000 every=180 out=/tmp/amptrace-fault-soak
faults=(stall rotate vacuum restart flakey) json=0 fs=xfs
while getopts m:r:e:o:f:F:jh opt; do
    case $opt in
        m) minutes=$OPTARG ;; r) rate=$OPTARG ;; e) every=$OPTARG ;; o) out=$OPTARG ;;
        f) IFS=, read -r -a faults <<<"$OPTARG" ;;
        j) json=1 ;;
        F) fs=$OPTARG ;;
        *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
for v in minutes rate every; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "fault_soak: -${v:0:1} wants a positive integer" >&2; exit 2; }
done
report=(-q)
((json)) && report=(-j -o "$out/entries.json")
need_root
command -v curl >/dev/null || { echo "fault_soak: curl missing (scripts/deps.sh --bench)" >&2; exit 1; }
command -v fstrim >/dev/null || { echo "fault_soak: fstrim missing (util-linux)" >&2; exit 1; }
need_tracefs || { echo "fault_soak: tracefs is not mounted and mounting it failed" >&2; exit 1; }
AMP_JOURNALD=252
use_journald
mkdir -p "$out"
rm -f "$out"/{fault_soak.tsv,faults.tsv,result.txt}
say() { echo "[$(date +%T)] $*" | tee -a "$out/result.txt"; }

# The journal's disk: a loop filesystem whose image lies on a tmpfs of its own,
# big enough for every block of it plus room to fill (the flakey fault).
backing=$AMP_TMP/backing
mkdir -p "$backing"
mount -t tmpfs -o size=1400M amptrace-soak-backing "$backing"
at_exit _umount_robust "$backing"
# journald keeps 100 MiB of files (it rotates and deletes on its own too);
# no rate limit: every line sent is one it stores.
AMP_JOURNALD_CONF=$'RateLimitIntervalSec=0\nSystemMaxUse=100M\nSystemMaxFileSize=16M'
AMP_TMP=$backing make_loopfs "$fs" 1024 "$JOURNAL_DIR"
disk=$LOOPNAME
start_journald

prom=$AMP_TMP/soak.prom
cp "$AMPTRACE" "$AMP_TMP/amptrace"
"$AMP_TMP/amptrace" trace "${report[@]}" -c systemd-journal --dev "$disk" \
    --metrics 127.0.0.1:0 --metrics-file "$prom" >"$AMP_TMP/trace.out" 2>"$AMP_TMP/trace.err" </dev/null &
tpid=$!
at_exit _kill_wait "$tpid" amptrace
wait_for "grep -qs 'tracing (' '$AMP_TMP/trace.err' || ! _alive $tpid" 60 || true
_alive "$tpid" || { cat "$AMP_TMP/trace.err" >&2; echo "fault_soak: the tracer did not start" >&2; exit 1; }
url=$(sed -n 's/^amptrace: metrics at \(http:[^ ]*\)$/\1/p' "$AMP_TMP/trace.err")

count=$AMP_TMP/sent
python3 "$ROOT/scripts/bench/soak_sender.py" "$JOURNALD_SOCK" "$rate" "$count" &
spid=$!
at_exit _kill_wait "$spid" soak_sender

# journald's socket's queue: what it has yet to receive.
queued() { ss -xan 2>/dev/null | awk -v s="$JOURNALD_SOCK" '$5 == s { q += $3 } END { print q + 0 }'; }

fault_stall() {
    kill -STOP "$tpid"; sleep 6; kill -CONT "$tpid"
}
fault_rotate() { journald_run journalctl --rotate >/dev/null 2>&1; }
fault_vacuum() { journald_run journalctl --rotate >/dev/null 2>&1; journald_run journalctl --vacuum-files=2 >/dev/null 2>&1; }
fault_restart() {
    kill -STOP "$spid"
    wait_for '(( $(queued) == 0 ))' 30 || { say "restart: journald's socket did not drain"; return 1; }
    _kill_wait "$JOURNALD_PID" journald
    start_journald >/dev/null 2>&1 || { say "restart: journald did not start again"; kill -CONT "$spid"; return 1; }
    kill -CONT "$spid"
}
fault_flakey() {
    # Every free block a hole in the backing file, then no room for more:
    # writes to the blocks the filesystem allocates from here fail.
    fstrim "$JOURNAL_DIR" || { say "flakey: fstrim failed"; return 1; }
    dd if=/dev/zero of="$backing/fill" bs=1M 2>/dev/null || true
    # journald's pages would wait 30 s for the flusher: written inside the
    # window by a syncfs every 5 s (which reports the errors: expected).
    local i
    for i in 1 2 3 4; do sleep 5; sync -f "$JOURNAL_DIR" 2>/dev/null || true; done
    rm -f "$backing/fill"
}
for f in "${faults[@]}"; do
    declare -F "fault_$f" >/dev/null || { echo "fault_soak: no fault '$f' (stall, rotate, vacuum, restart, flakey)" >&2; exit 2; }
done

t0=$SECONDS end=$((minutes * 60)) next_fault=$((every / 2)) nf=0   # 30 min: each of the five twice
warm=$((end / 6)); ((warm >= 120)) || warm=120; ((warm <= 300)) || warm=300
((warm <= end / 2)) || warm=$((end / 2))
say "fault soak: journald 252 on $disk ($fs), $rate lines/s for $minutes min, a fault every $every s (${faults[*]}), warm-up $warm s"
printf 'seconds\trss_kb\tcpu_ticks\tentries\tlosses\tsent\tring_drops\ttimed_out\tpages_cancelled\n' >"$out/fault_soak.tsv"
printf 'seconds\tfault\tstatus\tkernel_errors\n' >"$out/faults.tsv"
SOAK_LOSSES='amptrace_losses_total[{]kind="[a-z_]*"'
SENDER_ENTRIES='amptrace_sender_entries_total[{]sender="amp-soak-snd"'
# The kernel's write-error lines after the dmesg line MARK (all of them if
# the ring has wrapped past it).
kernel_errors_since() {
    dmesg | awk -v m="$1" '/I\/O error|space allocation error/ { n++ }
                           $0 == m { found = 1; n = 0 } END { print n + 0 }'
}
sample() {
    local rss tk e l s d t c
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$tpid/status")
    tk=$(cpu_ticks "$tpid")
    curl -s "$url" >"$AMP_TMP/scrape" || true
    e=$(metric_sum "$SENDER_ENTRIES" "$AMP_TMP/scrape")
    l=$(metric_sum "$SOAK_LOSSES" "$AMP_TMP/scrape")
    d=$(metric_sum 'amptrace_losses_total[{]kind="ringbuf_drops"' "$AMP_TMP/scrape")
    t=$(metric_sum 'amptrace_losses_total[{]kind="entries_timed_out"' "$AMP_TMP/scrape")
    c=$(metric_sum 'amptrace_losses_total[{]kind="pages_cancelled"' "$AMP_TMP/scrape")
    s=$(sed -n 's/^sent=\([0-9]*\).*/\1/p' "$count" 2>/dev/null || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' $((SECONDS - t0)) "$rss" "$tk" "$e" "$l" "${s:-0}" "$d" "$t" "$c" \
        >>"$out/fault_soak.tsv"
}
while ((SECONDS - t0 < end)); do
    _alive "$tpid" || { say "the tracer died"; cat "$AMP_TMP/trace.err" >&2; exit 1; }
    _alive "$spid" || { say "the sender died"; exit 1; }
    sample
    if ((SECONDS - t0 >= next_fault)); then
        f=${faults[nf % ${#faults[@]}]} st=ok
        mark=$(dmesg | tail -n 1)
        "fault_$f" || st=failed
        kerr=$(kernel_errors_since "$mark")
        printf '%s\t%s\t%s\t%s\n' $((SECONDS - t0)) "$f" "$st" "$kerr" >>"$out/faults.tsv"
        say "  $((SECONDS - t0)) s: fault $f: $st (kernel write errors logged: $kerr)"
        nf=$((nf + 1)) next_fault=$((next_fault + every))
    fi
    sleep 10 & wait $!
done

# The end: the sender stops, journald's last lines settle (written back,
# then 6 s of idle disk), the tracer gets SIGTERM.  (journald's last
# receive stays open until its next syscall of the preset's, or the
# tracer's exit: one entry short until then.)
kill -TERM "$spid"; wait "$spid" || true
lines=$(sed -n 's/^sent=\([0-9]*\).*/\1/p' "$count") refused=$(sed -n 's/.*refused=\([0-9]*\).*/\1/p' "$count")
sync -f "$JOURNAL_DIR" 2>/dev/null || true
entries_now() { curl -s "$url" >"$AMP_TMP/scrape" || true; metric_sum "$SENDER_ENTRIES" "$AMP_TMP/scrape"; }
drops_now() { metric_sum 'amptrace_losses_total[{]kind="ringbuf_drops"' "$AMP_TMP/scrape"; }
wait_for '(( $(entries_now) + $(drops_now) + 1 >= lines ))' 180 || true
sample
kill -TERM "$tpid"
wait_for "! _alive $tpid" 180 || { say "the tracer still ran 180 s after SIGTERM: killed"; kill -KILL "$tpid"; }
rc=0; wait "$tpid" || rc=$?

entries=$(metric_sum "$SENDER_ENTRIES" "$prom")
# A receive whose sender had exited and was not kept is an entry all the
# same, in the bucket of that name (trace(8) SENDERS).
unnamed=$(metric_sum 'amptrace_sender_entries_total[{]sender="[(]exited unnamed[)]"' "$prom")
drops=$(metric_sum 'amptrace_losses_total[{]kind="ringbuf_drops"' "$prom")
classes=$(metric_sum "amptrace_device_written_bytes_total[{]device=\"$disk\"" "$prom")
counter=$(metric_sum "amptrace_device_stat_written_bytes_total[{]device=\"$disk\"" "$prom")
failed=$(metric_sum "amptrace_device_written_bytes_total[{]device=\"$disk\",class=\"failed\"" "$prom")
named=$(awk '/^amptrace_losses_total/ && $NF != 0 { sub(/.*kind="/, ""); sub(/"} /, "="); printf "%s%s", sep, $0; sep = ", " }' "$prom")
# RSS after the warm-up: its range, and its growth: the median of the last
# fifth of the samples over the median of the first fifth.  A fault holds
# entries meanwhile (a failing disk keeps their write-out window open:
# thousands, ~0.6 KiB each), and the heap gives them back after it
# (amp_heap_trim): a peak, which the medians pass over; a leak moves them.
rss=$(awk -v w="$warm" 'NR > 1 && $1 >= w { v[n++] = $2; if (n == 1 || $2 < lo) lo = $2; if ($2 > hi) hi = $2 }
    function median(a, b,   k, m, t, i, j) {
        m = 0; for (k = a; k < b; k++) t[m++] = v[k]
        for (i = 1; i < m; i++) for (j = i; j > 0 && t[j - 1] > t[j]; j--) { x = t[j]; t[j] = t[j - 1]; t[j - 1] = x }
        return m ? (m % 2 ? t[(m - 1) / 2] : (t[m / 2 - 1] + t[m / 2]) / 2) : 0 }
    END { if (n < 5) { print "0 0 0 0"; exit }
          f = int(n / 5); a = median(0, f); b = median(n - f, n)
          printf "%d %d %.3f %.3f\n", lo, hi, hi / lo, b / a }' "$out/fault_soak.tsv")
read -r rss_lo rss_hi rss_ratio rss_growth <<<"$rss"
cpu=$(awk -v hz="$(getconf CLK_TCK)" 'NR == 2 { t = $1; c = $3 } END { printf "%.2f", ($3 - c) / hz / ($1 - t) * 100 }' "$out/fault_soak.tsv")
say "lines sent $lines (refused $refused); the sender's entries $entries, (exited unnamed) $unnamed; ring drops $drops; counters: ${named:-none}"
say "tracer: exit $rc; RSS after warm-up $((rss_lo / 1024))-$((rss_hi / 1024)) MiB (max/min $rss_ratio, growth $rss_growth: last fifth's median over first fifth's); CPU $cpu % of a core"
say "$disk: classes $classes B (failed $failed) = counter $counter B?"
say "summary: $(grep '^Losses:' "$AMP_TMP/trace.out" || echo 'no Losses line')"
bad=0
((entries <= lines)) || { say "FAIL: more entries ($entries) than lines sent ($lines)"; bad=1; }
# A line's entry is lost only with its record (a full ring); the other
# counters lose pages or say how an entry ended.
((entries + unnamed + drops >= lines)) ||
    { say "FAIL: $((lines - entries - unnamed - drops)) lines neither an entry nor a ring drop"; bad=1; }
awk -v r="$rss_growth" 'BEGIN { exit !(r > 0 && r <= 1.10) }' || { say "FAIL: RSS not flat: it grew by $rss_growth"; bad=1; }
((classes == counter)) || { say "FAIL: classes $classes != counter $counter"; bad=1; }
((rc == 0)) || { say "FAIL: the tracer exited $rc"; bad=1; }
if [[ ${report[0]} == -q ]]; then
    grep -q '^Losses:' "$AMP_TMP/trace.out" || { say "FAIL: no Losses line in the summary"; bad=1; }
else
    tail -n 1 "$out/entries.json" | grep -q '"type":"summary"' || { say "FAIL: no summary in entries.json"; bad=1; }
fi
grep -c . "$out/faults.tsv" >/dev/null
((bad == 0)) && say "fault soak: passed" || say "fault soak: FAILED"
cp "$AMP_TMP/trace.out" "$AMP_TMP/trace.err" "$prom" "$out/" 2>/dev/null || true
exit "$bad"
