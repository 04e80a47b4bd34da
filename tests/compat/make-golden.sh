#!/usr/bin/env bash
# Make the golden files of t16_compat.sh (tests/compat/golden/).
#
#   make-golden.sh inputs   record a real run (root, the BPF lock): journald
#                           252 and an appending shell on a loop ext4
#   make-golden.sh outputs  what AMPTRACE prints for each case of cases.sh
#
# The outputs were made by a build of main without the move of user/ into
# folders: 54b7f66, then f6eff6a once its summary gained the untraced bytes
# (git archive COMMIT | tar -x; make amptrace).  Make them again only for an
# intended change of what amptrace prints, and say so in the commit.  The inputs' file paths are rewritten
# to plain names (system.journal, app.log) so that explain finds the journal
# file by name in whatever folder the test runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
gold=$here/golden

repath() {   # FILE: the record's PATH records, each path to its basename
    python3 - "$1" <<'PY'
import struct, sys, zlib
path = sys.argv[1]
data = open(path, "rb").read()
out, off = bytearray(data[:16]), 16
while off + 12 <= len(data):
    ln, typ, _chk, _crc = struct.unpack_from("<IHHI", data, off)
    payload, nxt = data[off + 12:off + 12 + ln], off + 12 + ln
    if typ == 2:                                   # PATH: u32 dev, u64 ino, str path
        dev, ino, n = struct.unpack_from("<IQH", payload)
        name = payload[14:14 + n].rsplit(b"/", 1)[-1]
        payload = struct.pack("<IQH", dev, ino, len(name)) + name
        ln = len(payload)
    chk = zlib.crc32(struct.pack("<IH", ln, typ)) & 0xffff
    out += struct.pack("<IHHI", ln, typ, chk, zlib.crc32(payload)) + payload
    off = nxt
open(path, "wb").write(out)
PY
}

inputs() {
    # shellcheck source=../lib.sh
    . "$here/../lib.sh"
    need_root
    use_journald
    make_loopfs ext4 256 "$JOURNAL_DIR"
    start_journald
    jf=$(journald_file)
    # A second logger: a shell appending lines to a file (write syscalls).
    mkfifo "$AMP_TMP/lines"
    bash -c 'exec >>"$1"; while read -r l; do echo "$l"; done' app "$JOURNAL_DIR/app.log" \
        <"$AMP_TMP/lines" &
    app=$!
    exec {lines}>"$AMP_TMP/lines"
    at_exit _kill_wait "$app" app
    "$AMPTRACE" record -o "$AMP_TMP/rec.amp" --preset all -p "$JOURNALD_PID" -p "$app" \
        --dev "$LOOPNAME" >/dev/null 2>"$AMP_TMP/rec.err" &
    rec=$!
    at_exit _kill_wait "$rec" recorder
    wait_for "grep -q 'tracing (' $AMP_TMP/rec.err" 30 || fail "recorder: $(cat "$AMP_TMP/rec.err")"
    for i in $(seq 1 10); do
        ((i != 6)) || { sync; sleep 1; }
        send_journal_entry "compat test $i" "COMPAT_SEQ=$i" "COMPAT_CONST=same"
        echo "app line $i" >&"$lines"
        sleep 0.3
    done
    sleep 1; sync; sleep 8
    kill -INT "$rec"
    wait "$rec" || fail "recorder exit $?"
    kill -TERM "$JOURNALD_PID"
    wait_for "! _alive $JOURNALD_PID" 10 || fail "journald did not stop"
    mkdir -p "$gold"
    cp "$AMP_TMP/rec.amp" "$gold/rec.amp"
    repath "$gold/rec.amp"
    cp --sparse=always "$jf" "$AMP_TMP/system.journal"
    gzip -9 -n -c "$AMP_TMP/system.journal" >"$gold/system.journal.gz"
    ok "inputs in $gold: $(ls -l "$gold" | tail -n +2 | awk '{print $5, $9}' | paste -sd' ')"
}

outputs() {
    local amp=${AMPTRACE:?AMPTRACE=path of the amptrace build to take the outputs from}
    local name args
    # shellcheck source=cases.sh
    . "$here/cases.sh"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    # The trace explain -t reads: this build's `report -j` (= `trace -j`).
    "$amp" report -j "$gold/rec.amp" >"$gold/trace.json"
    compat_inputs "$gold" "$work"
    mkdir "$work/expected"
    cd "$work"
    for c in "${COMPAT_CASES[@]}"; do
        read -r name args <<<"$c"
        # shellcheck disable=SC2086
        compat_run "$amp" "$name" $args >"expected/$name"
    done
    # One compressed file (3 MB of text, 0.2 MB packed), reproducible.
    tar -cf - --sort=name --owner=0 --group=0 --mtime=@0 expected | gzip -9n \
        >"$gold/expected.tar.gz"
    echo "${#COMPAT_CASES[@]} outputs of $amp in $gold/expected.tar.gz"
}

case ${1:-} in
    inputs) inputs ;;
    outputs) outputs ;;
    *) echo "usage: $0 inputs|outputs" >&2; exit 2 ;;
esac
