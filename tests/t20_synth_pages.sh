#!/usr/bin/env bash
# Ground truth from a synthetic writer on a dedicated loop ext4: every page
# it dirties (by pwrite and by shared mmap) is charged to the right entry,
# and the device classes sum to /sys/block/DEV/stat.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

loaded_ids() { bpftool prog show 2>/dev/null | sed -nE 's/^([0-9]+): .*/\1/p' | sort; }

# Both ways into the syscalls: the preset's own tracepoints, and the raw
# hook; and the request walk of kernels without bpf_loop (t96 runs it on
# one), forced here with AMPTRACE_NO_BPF_LOOP.
# Whether the kernel has bpf_loop, asked another way than amptrace asks
# (it reads BTF): bpftool's probe, read whole (a `| grep -q` would stop
# reading early and, under pipefail, fail on bpftool's SIGPIPE).
have_bpf_loop=0   # else (before 5.17) the bounded walk is the default
probe=$(bpftool feature probe kernel 2>/dev/null) || fail "bpftool feature probe kernel failed"
[[ $probe == *bpf_loop* ]] && have_bpf_loop=1
_log "kernel has bpf_loop: $have_bpf_loop"
# With bpf_loop, the walk by typed loads where the kernel can cast a raw
# pointer (the kfunc bpf_rdonly_cast, 6.2+; asked of kallsyms here, of BTF
# by amptrace), else by probe reads.
walk_loop=on_rq_complete
grep -qw bpf_rdonly_cast /proc/kallsyms && walk_loop=on_rq_complete_cast
for hook in default --raw-syscalls bounded-walk; do
    args=(); [[ $hook == default || $hook == bounded-walk ]] || args=("$hook")
    bounded=0; [[ $hook == bounded-walk ]] || ((!have_bpf_loop)) && bounded=1
    if ((bounded)); then export AMPTRACE_NO_BPF_LOOP=1; else unset AMPTRACE_NO_BPF_LOOP; fi
    mnt=$AMP_TMP/mnt-${hook#--}
    make_loopfs ext4 256 "$mnt"
    start_tracer -c synth_writer --dev "$LOOPNAME" "${args[@]}"
    prog_ids_of "$TRACER_PID" >"$AMP_TMP/progs.mine"
    [[ -s $AMP_TMP/progs.mine ]] || fail "no amptrace BPF program visible while tracing"
    # (The kernel keeps 15 characters of a name; bpftool shows BTF's whole
    # name where it can, so match on_rq_complete_bounded as a prefix.)
    walk=$(while read -r id; do bpftool prog show id "$id"; done <"$AMP_TMP/progs.mine" |
           sed -nE 's/.* name (on_rq_complete[a-z_]*) .*/\1/p')
    if ((bounded)); then
        [[ $walk == on_rq_complete_* ]] || fail "$hook: request walk program '$walk', expected on_rq_complete_bounded"
    else
        [[ $walk == "$walk_loop" ]] || fail "$hook: request walk program '$walk', expected $walk_loop"
    fi
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
unset AMPTRACE_NO_BPF_LOOP

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
