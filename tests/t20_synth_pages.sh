#!/usr/bin/env bash
# Ground truth from a synthetic writer on a dedicated loop ext4: every page
# it dirties (by pwrite and by shared mmap) is charged to the right entry,
# and the device classes sum to /sys/block/DEV/stat.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

loaded_ids() { bpftool prog show 2>/dev/null | sed -nE 's/^([0-9]+): .*/\1/p' | sort; }

# Both ways into the syscalls: the preset's own tracepoints, and the raw
# hook; and the request walk by probe reads, as on kernels before 6.2
# (t95, t96 run it there), forced here with AMPTRACE_NO_CAST.
# The walk by typed loads where the kernel can cast a raw pointer (the
# kfunc bpf_rdonly_cast, 6.2+; asked of kallsyms here, of BTF by
# amptrace), else by probe reads.
walk_default=on_rq_complete
grep -qw bpf_rdonly_cast /proc/kallsyms && walk_default=on_rq_complete_cast
for hook in default --raw-syscalls probe-reads; do
    args=(); [[ $hook == default || $hook == probe-reads ]] || args=("$hook")
    if [[ $hook == probe-reads ]]; then export AMPTRACE_NO_CAST=1; else unset AMPTRACE_NO_CAST; fi
    mnt=$AMP_TMP/mnt-${hook#--}
    make_loopfs ext4 256 "$mnt"
    start_tracer -c synth_writer --dev "$LOOPNAME" "${args[@]}"
    prog_ids_of "$TRACER_PID" >"$AMP_TMP/progs.mine"
    [[ -s $AMP_TMP/progs.mine ]] || fail "no amptrace BPF program visible while tracing"
    walk=$(while read -r id; do bpftool prog show id "$id"; done <"$AMP_TMP/progs.mine" |
           sed -nE 's/.* name (on_rq_complete[a-z_]*) .*/\1/p')
    want=$walk_default; [[ $hook == probe-reads ]] && want=on_rq_complete
    [[ $walk == "$want" ]] || fail "$hook: request walk program '$walk', expected $want"
    "$SYNTH_WRITER" -n 8 -w 2 -m 3 "$mnt" | cat >"$AMP_TMP/expect.json"
    sync
    stop_tracer

    _log "hook: $hook"
    python3 "$AMP_ROOT/tests/checks.py" synth "$AMP_TMP/expect.json" "$TRACE_OUT" \
        "$LOOPNAME" "$(getconf PAGESIZE)"

    # Nothing stays loaded after the tracer exits.  (The kernel frees
    # programs on syscall tracepoints after an RCU tasks-trace grace
    # period, since those became faultable: allow it a few seconds.)
    wait_for '[[ -z $(loaded_ids | comm -12 "$AMP_TMP/progs.mine" -) ]]' 10 || true
    left=$(loaded_ids | comm -12 "$AMP_TMP/progs.mine" -)
    [[ -z $left ]] || fail "BPF programs $left still loaded after amptrace exited"
    ok "$hook: $(wc -l <"$AMP_TMP/progs.mine") BPF programs loaded while tracing ($walk), none left after"
done
unset AMPTRACE_NO_CAST

# One file written and mapped by the same entries: the stores after each
# pwrite land in the file the thread keeps totals for, and each entry still
# counts once in it.
make_loopfs ext4 256 "$AMP_TMP/mnt-one-file"
start_tracer -c synth_writer --dev "$LOOPNAME"
"$SYNTH_WRITER" -n 8 -w 2 -m 3 -o "$AMP_TMP/mnt-one-file" | cat >"$AMP_TMP/expect.json"
sync
stop_tracer
_log "one file written and mapped (-o)"
python3 "$AMP_ROOT/tests/checks.py" synth "$AMP_TMP/expect.json" "$TRACE_OUT" \
    "$LOOPNAME" "$(getconf PAGESIZE)"

# Writers on several CPUs at once: 8 threads (-t 8), thread k pinned to CPU
# k mod the CPUs online (all 8 in a guest of 8 vCPUs, AMPTRACE_QEMU_SMP=8),
# each with files of its own: every thread's entries and pages exact.
make_loopfs ext4 256 "$AMP_TMP/mnt-threads"
start_tracer -c synth_writer --dev "$LOOPNAME"
"$SYNTH_WRITER" -n 8 -w 2 -m 3 -t 8 "$AMP_TMP/mnt-threads" | cat >"$AMP_TMP/expect.json"
sync
stop_tracer
_log "8 writer threads on $(nproc) CPUs (-t 8)"
python3 "$AMP_ROOT/tests/checks.py" synth "$AMP_TMP/expect.json" "$TRACE_OUT" \
    "$LOOPNAME" "$(getconf PAGESIZE)"
