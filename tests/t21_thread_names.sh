#!/usr/bin/env bash
# -c names a process or one of its threads.  A writer process (its name
# set by the test) starts a thread that names itself apart, as journald
# 257's "journal-offline" and rsyslog's "rs:main Q:Reg" do, and writes N
# lines of known size from it: `-c PROCESS` must find the thread's N
# writes as entries (by the process's name), `-c THREAD` the same N (by
# its own), and a name that is neither none.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

make_loopfs ext4 256 "$AMP_TMP/mnt"
n=20 size=300
proc="ampproc$$"; proc=${proc:0:15}
thread="ampthr$$"; thread=${thread:0:15}

# PROC THREAD FILE: the main thread renames the process, then waits for
# its worker thread, which renames itself and appends n lines of size B.
writer() {
    python3 - "$1" "$2" "$3" "$n" "$size" <<'PY'
import ctypes, os, sys, threading, time
proc, thread, path, n, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NAME = 15
libc.prctl(PR_SET_NAME, proc.encode(), 0, 0, 0)
def work():
    libc.prctl(PR_SET_NAME, thread.encode(), 0, 0, 0)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for i in range(n):
        os.write(fd, b"x" * (size - 1) + b"\n")
        time.sleep(0.01)
    os.close(fd)
w = threading.Thread(target=work)
w.start()
w.join()
print(w.native_id)
PY
}

# NAME WANT: trace -c NAME around one writer; WANT of its thread's writes.
run_case() {
    local name=$1 want=$2 file="$AMP_TMP/mnt/log-$1" tid
    start_tracer -c "$name" --preset write --dev "$LOOPNAME"
    tid=$(writer "$proc" "$thread" "$file")
    sync
    stop_tracer
    python3 - "$TRACE_OUT" "$tid" "$want" "$size" "$name" <<'PY'
import json, sys
path, tid, want, size, name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
entries = [r for r in map(json.loads, open(path)) if r["type"] == "entry"]
writes = [e for e in entries if e["tid"] == tid and e["syscall"] == "write" and e["bytes"] == size]
assert len(writes) == want, f"-c {name}: {len(writes)} writes of the thread {tid}, want {want}: " \
    f"{sorted(set((e['tid'], e['comm'], e['syscall']) for e in entries))}"
print(f"ok: -c {name}: {len(writes)} of the thread's {size}-byte writes are entries (want {want})")
PY
}

run_case "$proc" "$n"      # the process's name: its renamed thread too
run_case "$thread" "$n"    # the thread's own name
run_case "ampnobody$$" 0   # neither: nothing
