#!/usr/bin/env bash
# A CPU taken offline and back while tracing (#37).  The synthetic writer,
# pinned to the last CPU, writes 24 times 200 ms apart; a second in, that
# CPU goes offline (the kernel moves the writer and the tracer off it;
# what the programs counted there stays in its per-CPU slots), and comes
# back a second later.  As on a quiet machine: every page the writer
# dirtied charged to its entry and written, the classes = the device
# counter, no loss.  The ring is shared, so nothing waits on the CPU that
# went.  Offlining a CPU disturbs whatever else runs, so it runs in the
# qemu guests (t95) or where AMP_ALLOW_CPU_OFFLINE=1 says it may; the CPU
# is put back even on failure.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[[ ${AMP_IN_QEMU-} == 1 || ${AMP_ALLOW_CPU_OFFLINE-} == 1 ]] ||
    skip "takes a CPU offline: runs in the qemu guests (t95), or with AMP_ALLOW_CPU_OFFLINE=1"
last=$(($(nproc --all) - 1))
online=/sys/devices/system/cpu/cpu$last/online
((last >= 1)) && [[ -w $online ]] || skip "no CPU that can go offline (cpu$last)"
[[ $(cat "$online") == 1 ]] || skip "cpu$last is offline already"
_cpu_back() { [[ $(cat "$online") == 1 ]] || echo 1 >"$online"; }
at_exit _cpu_back

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
start_tracer -c synth_writer --dev "$LOOPNAME"
# (Its report through a pipe, as in t20: a write to a file would be an
# entry of its own.)
(taskset -c "$last" "$SYNTH_WRITER" -n 24 -w 2 -m 3 -g 200 "$mnt" | cat >"$AMP_TMP/expect.json") &
writer=$!
at_exit _kill_wait "$writer" synth_writer
sleep 1
echo 0 >"$online"
_log "cpu$last offline; the writer now on CPUs $(taskset -pc "$(pgrep -x synth_writer | head -n 1)" 2>/dev/null | sed 's/.*: //')"
sleep 1
echo 1 >"$online"
_log "cpu$last online again"
rc=0; wait "$writer" || rc=$?
((rc == 0)) || fail "synth_writer exited $rc"
sync
stop_tracer

python3 "$AMP_ROOT/tests/checks.py" synth "$AMP_TMP/expect.json" "$TRACE_OUT" \
    "$LOOPNAME" "$(getconf PAGESIZE)"
ok "cpu$last went offline and back under the writer: every page charged and written, classes = counter, no loss"
