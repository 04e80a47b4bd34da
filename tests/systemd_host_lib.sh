# shellcheck shell=bash
# Sourced by the scripts that run inside scripts/qemu-systemd-host.sh's
# guest (systemd_host_measure.sh, systemd_host_senders.sh).

# amptrace_start OUT DEV CGROUP: `amptrace trace --preset journald --cgroup
# CGROUP --dev DEV -j` in the background, its JSON lines in OUT/trace.json
# and its stderr in OUT/trace.err, its pid in AMP_PID; returns once it says
# it is tracing (under TCG its start takes a while), 1 if it never did.
amptrace_start() {
    local out=$1 dev=$2 cg=$3
    "$AMPTRACE" trace --preset journald --cgroup "$cg" --dev "$dev" -j -o "$out/trace.json" \
        2>"$out/trace.err" &
    AMP_PID=$!
    for _ in $(seq 1 1500); do
        grep -q '^amptrace: tracing' "$out/trace.err" 2>/dev/null && break
        kill -0 "$AMP_PID" 2>/dev/null || break
        sleep 0.2
    done
    grep -q '^amptrace: tracing' "$out/trace.err" || { cat "$out/trace.err"; return 1; }
}
