#!/usr/bin/env bash
# The loader under valgrind on a short real trace (entries, ledger, JSON and
# table output, summary): no memory error, nothing definitely lost.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
command -v valgrind >/dev/null || skip "valgrind not installed"

mnt=$AMP_TMP/mnt
make_loopfs ext4 256 "$mnt"
for fmt in -j ""; do
    log=$AMP_TMP/vg$fmt.log
    valgrind --suppressions="$AMP_ROOT/tests/valgrind.supp" --error-exitcode=9 \
        --leak-check=full --errors-for-leak-kinds=definite --log-file="$log" \
        "$AMPTRACE" trace -c synth_writer --dev "$LOOPNAME" $fmt -o "$AMP_TMP/out$fmt" 2>"$AMP_TMP/err" &
    vg=$!
    at_exit _kill_wait "$vg" valgrind
    wait_for "grep -q 'tracing (' $AMP_TMP/err" 120 || fail "amptrace under valgrind did not start"
    "$SYNTH_WRITER" -n 5 -w 1 -m 2 "$mnt" | cat >/dev/null
    sync
    sleep 1
    kill -INT "$vg"
    rc=0; wait "$vg" || rc=$?
    ((rc == 0)) || fail "valgrind exit $rc: $(grep -E 'ERROR SUMMARY|definitely' "$log")"
    grep -q "ERROR SUMMARY: 0 errors" "$log" || fail "$(grep 'ERROR SUMMARY' "$log")"
    [[ $(grep -c '"type":"entry"\|synth_writer' "$AMP_TMP/out$fmt") -ge 5 ]] || fail "no entries in output"
    ok "valgrind ${fmt:-(table)}: $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$log"), $(grep -o 'definitely lost: [0-9,]* bytes' "$log")"
done
