#!/usr/bin/env bash
# Ground truth from a synthetic writer on a dedicated loop ext4: every page
# it dirties (by pwrite and by shared mmap) is charged to the right entry,
# and the device classes sum to /sys/block/DEV/stat.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
sync; _wait_quiet "$mnt" 3 15

start_tracer -c synth_writer --dev "$LOOPNAME"
"$SYNTH_WRITER" -n 8 -w 2 -m 3 "$mnt" | cat >"$AMP_TMP/expect.json"
sync
stop_tracer

python3 "$AMP_ROOT/tests/checks.py" synth "$AMP_TMP/expect.json" "$TRACE_OUT" \
    "$LOOPNAME" "$(getconf PAGESIZE)"

# Nothing stays attached after the tracer exits.
if bpftool prog show 2>/dev/null | grep -qE 'on_sys_enter|on_dirty_folio|on_rq_complete'; then
    fail "BPF programs still loaded after amptrace exited"
fi
ok "no amptrace BPF program left loaded"
