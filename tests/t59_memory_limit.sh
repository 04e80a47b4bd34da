#!/usr/bin/env bash
# The tracer in a memory cgroup with a low limit (#37).  The kernel
# charges amptrace's maps and its check of the programs to that cgroup:
# under a limit too low to load, amptrace must say so in one line and exit
# 1 (before the kernel would kill it); under one just above what it says
# it needs, it must load and trace the synthetic writer exactly, with no
# OOM kill.  cgroup v2 (memory.max) where its memory controller is on,
# else v1 (memory.limit_in_bytes); the cgroup is removed even on failure.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    root=/sys/fs/cgroup limit_file=memory.max peak_file=memory.peak
    if ! grep -qw memory /sys/fs/cgroup/cgroup.subtree_control; then
        echo +memory >/sys/fs/cgroup/cgroup.subtree_control
        at_exit sh -c 'echo -memory >/sys/fs/cgroup/cgroup.subtree_control'
    fi
elif [[ -d /sys/fs/cgroup/memory ]]; then
    root=/sys/fs/cgroup/memory limit_file=memory.limit_in_bytes peak_file=memory.max_usage_in_bytes
else
    skip "no memory cgroup controller (v2 or v1) here"
fi
cg=$root/amptrace-t59-$$
mkdir "$cg"
_cg_remove() {   # move anything left to the root, then remove it
    local p
    [[ -d $cg ]] || return 0
    while read -r p; do echo "$p" >"$root/cgroup.procs" 2>/dev/null || true; done <"$cg/cgroup.procs"
    rmdir "$cg"
}
at_exit _cg_remove
# amptrace run in that cgroup: this wrapper moves itself in, then execs it.
wrapper=$AMP_TMP/in-cgroup
printf '#!/bin/sh\necho $$ >%s/cgroup.procs && exec %s "$@"\n' "$cg" "$AMPTRACE" >"$wrapper"
chmod +x "$wrapper"
oom_kills() {
    if [[ -f $cg/memory.events ]]; then sed -n 's/^oom_kill //p' "$cg/memory.events"
    else sed -n 's/^oom_kill //p' "$cg/memory.oom_control"; fi
}

# --- too low: one line, exit 1, no kill
echo $((32 << 20)) >"$cg/$limit_file"
expect_error "32 MiB" "$wrapper" trace -c synth_writer -o /dev/null
grep -q "^amptrace: the memory cgroup $cg allows 32 MiB with [0-9]* in use, and loading needs about [0-9]* more" "$AMP_TMP/err" ||
    fail "32 MiB: not the memory line: $(cat "$AMP_TMP/err")"
[[ $(oom_kills) == 0 ]] || fail "32 MiB: the kernel killed amptrace ($(oom_kills) OOM kills)"
need=$(sed -n 's/.* loading needs about \([0-9]*\) more.*/\1/p' "$AMP_TMP/err")
used=$(sed -n 's/.* with \([0-9]*\) in use.*/\1/p' "$AMP_TMP/err")

# --- just above what it said it needs: it traces, exactly
limit=$((need + used + 24))
echo $((limit << 20)) >"$cg/$limit_file"
mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
AMPTRACE=$wrapper start_tracer -c synth_writer --dev "$LOOPNAME"
"$SYNTH_WRITER" -n 16 -w 2 -m 3 "$mnt" | cat >"$AMP_TMP/expect.json"
sync
stop_tracer
[[ $(oom_kills) == 0 ]] || fail "$limit MiB: the kernel killed in the cgroup ($(oom_kills) OOM kills)"
peak=$(cat "$cg/$peak_file" 2>/dev/null || echo 0)
ok "$limit MiB (amptrace said it needs $need): traced; the cgroup's peak $((peak >> 20)) MiB, no OOM kill"
python3 "$AMP_ROOT/tests/checks.py" synth "$AMP_TMP/expect.json" "$TRACE_OUT" \
    "$LOOPNAME" "$(getconf PAGESIZE)"
