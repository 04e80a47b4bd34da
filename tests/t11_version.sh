#!/usr/bin/env bash
# amptrace --version / version / -V:
#  1. the same lines for all three; the first `amptrace VERSION`, VERSION a
#     valid Debian version; one `key: value` line each after it;
#  2. the features agree with the kernel's BTF as bpftool dumps it
#     (bpf_loop, folio or page era) and with tracefs;
#  3. no bpf(2) and no perf_event_open(2) call at all (strace): with kernel
#     audit on, every program load would be an audit record;
#  4. as nobody with no capabilities: exit 0, what it could not read said
#     so (tracefs, kernel addresses), and that tracing needs privileges.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
command -v strace >/dev/null || skip "strace not installed"

"$AMPTRACE" --version >"$AMP_TMP/v1"
"$AMPTRACE" version >"$AMP_TMP/v2"
"$AMPTRACE" -V >"$AMP_TMP/v3"
cmp -s "$AMP_TMP/v1" "$AMP_TMP/v2" && cmp -s "$AMP_TMP/v1" "$AMP_TMP/v3" ||
    fail "--version, version and -V differ"
version=$(sed -n '1s/^amptrace //p' "$AMP_TMP/v1")
[[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || fail "not a Debian version: '$(head -1 "$AMP_TMP/v1")'"
dpkg --compare-versions "$version" gt 0 || fail "dpkg rejects version $version"
sed 1d "$AMP_TMP/v1" | grep -qvE '^[a-z0-9_ ]+: ' && fail "a line is not 'key: value': $(sed 1d "$AMP_TMP/v1" | grep -vE '^[a-z0-9_ ]+: ')"
ok "version $version; $(($(wc -l <"$AMP_TMP/v1") - 1)) key: value lines"
cat "$AMP_TMP/v1"

line() { sed -n "s/^$1: //p" "$AMP_TMP/v1"; }
[[ $(line libbpf) =~ ^[0-9]+\.[0-9]+ ]] || fail "libbpf line: $(line libbpf)"
[[ $(line kernel) == "$(uname -r) $(uname -m)" ]] || fail "kernel line: $(line kernel)"
bpftool btf dump file /sys/kernel/btf/vmlinux >"$AMP_TMP/btf.txt"
if grep -q "FUNC 'bpf_rdonly_cast'" "$AMP_TMP/btf.txt"; then want=yes; else want=no; fi
[[ $(line 'typed loads') == "$want"* ]] || fail "typed loads: $(line 'typed loads'), BTF says $want"
if grep -q "TYPEDEF 'btf_trace_writeback_dirty_folio'" "$AMP_TMP/btf.txt"; then want='folio era'; else want='page era'; fi
[[ $(line dirtying) == "$want"* ]] || fail "dirtying: $(line dirtying), BTF says $want"
if [[ -d /sys/kernel/tracing/events/syscalls ]]; then
    [[ $(line 'syscall tracepoints') == yes* ]] || fail "syscall tracepoints: $(line 'syscall tracepoints')"
fi
ok "typed loads, dirtying era and syscall tracepoints agree with bpftool's BTF dump and tracefs"

strace -f -qq -e trace=bpf,perf_event_open -o "$AMP_TMP/strace" "$AMPTRACE" --version >/dev/null
[[ ! -s $AMP_TMP/strace ]] || fail "--version made BPF or perf calls: $(head -3 "$AMP_TMP/strace")"
ok "no bpf(2) or perf_event_open(2) call (strace)"

capsh --drop=all --user=nobody -- -c "exec $AMPTRACE --version" >"$AMP_TMP/nobody" 2>&1 ||
    fail "--version as nobody failed: $(cat "$AMP_TMP/nobody")"
grep -q '^privileges: tracing needs CAP_BPF and CAP_PERFMON' "$AMP_TMP/nobody" ||
    fail "as nobody, no word on privileges: $(cat "$AMP_TMP/nobody")"
grep -q '^kallsyms addresses: hidden' "$AMP_TMP/nobody" || fail "as nobody, kallsyms addresses not said hidden"
if [[ -d /sys/kernel/tracing/events && $(stat -c %a /sys/kernel/tracing) == 700 ]]; then
    grep -q '^syscall tracepoints: unknown (tracefs is not readable without root)' "$AMP_TMP/nobody" ||
        fail "as nobody, tracefs not said unreadable: $(grep syscall "$AMP_TMP/nobody")"
fi
[[ $(grep -c . "$AMP_TMP/nobody") == $(grep -c . "$AMP_TMP/v1") ]] || fail "as nobody, lines missing"
ok "as nobody without capabilities: exit 0, unreadable parts and missing privileges said"
